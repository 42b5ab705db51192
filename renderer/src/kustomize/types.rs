//! The kustomization.yaml schema: the fields this engine supports, and nothing else.
//!
//! Every struct denies unknown fields, so an unsupported feature is an error naming the
//! field instead of being skipped.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// A `kustomization.yaml` (kind `Kustomization` or `Component`).
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Kustomization {
    /// `kustomize.config.k8s.io/v1beta1` or `v1alpha1` for components.
    #[serde(default)]
    pub api_version: Option<String>,
    /// `Kustomization` (default) or `Component`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Ignored metadata.
    #[serde(default)]
    pub metadata: Option<Value>,
    /// Files, directories and nested kustomizations.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Deprecated synonym of resources.
    #[serde(default)]
    pub bases: Vec<String>,
    /// Components applied to this kustomization's resources.
    #[serde(default)]
    pub components: Vec<String>,
    /// Namespace for every namespaced resource.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Prefix added to names.
    #[serde(default)]
    pub name_prefix: Option<String>,
    /// Suffix added to names.
    #[serde(default)]
    pub name_suffix: Option<String>,
    /// Labels added to objects and selectors.
    #[serde(default)]
    pub common_labels: BTreeMap<String, String>,
    /// Labels with per-entry selector behaviour.
    #[serde(default)]
    pub labels: Vec<LabelEntry>,
    /// Annotations added to objects and templates.
    #[serde(default)]
    pub common_annotations: BTreeMap<String, String>,
    /// Image rewrites.
    #[serde(default)]
    pub images: Vec<ImageEntry>,
    /// Replica counts.
    #[serde(default)]
    pub replicas: Vec<ReplicaEntry>,
    /// Patches (strategic merge or JSON 6902), optionally with a target selector.
    #[serde(default)]
    pub patches: Vec<PatchEntry>,
    /// Strategic merge patches: file paths or inline YAML.
    #[serde(default)]
    pub patches_strategic_merge: Vec<String>,
    /// JSON 6902 patches with their target.
    #[serde(default)]
    pub patches_json6902: Vec<PatchEntry>,
    /// ConfigMap generators.
    #[serde(default)]
    pub config_map_generator: Vec<GeneratorArgs>,
    /// Secret generators.
    #[serde(default)]
    pub secret_generator: Vec<GeneratorArgs>,
    /// Options for every generator here.
    #[serde(default)]
    pub generator_options: Option<GeneratorOptions>,
    /// Files of built-in transformer configurations, run after the fields above.
    #[serde(default)]
    pub transformers: Vec<String>,
    /// Output order.
    #[serde(default)]
    pub sort_options: Option<SortOptions>,
}

/// One entry of `labels:`.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelEntry {
    /// The labels.
    #[serde(default)]
    pub pairs: BTreeMap<String, String>,
    /// Also add to selectors (and templates).
    #[serde(default)]
    pub include_selectors: bool,
    /// Also add to pod templates.
    #[serde(default)]
    pub include_templates: bool,
}

/// One entry of `images:`.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageEntry {
    /// Image name to match (without tag or digest).
    pub name: String,
    /// Replacement name.
    #[serde(default)]
    pub new_name: Option<String>,
    /// Replacement tag.
    #[serde(default, deserialize_with = "string_or_number")]
    pub new_tag: Option<String>,
    /// Replacement digest.
    #[serde(default)]
    pub digest: Option<String>,
}

/// One entry of `replicas:`.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaEntry {
    /// Workload name.
    pub name: String,
    /// Replica count.
    pub count: i64,
}

/// One entry of `patches:` or `patchesJson6902:`.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchEntry {
    /// File holding the patch.
    #[serde(default)]
    pub path: Option<String>,
    /// Inline patch.
    #[serde(default)]
    pub patch: Option<String>,
    /// Resources the patch applies to.
    #[serde(default)]
    pub target: Option<Selector>,
    /// Patch options.
    #[serde(default)]
    pub options: Option<PatchOptions>,
}

/// Options of a patch.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchOptions {
    /// Let the patch change the name.
    #[serde(default)]
    pub allow_name_change: bool,
    /// Let the patch change the kind.
    #[serde(default)]
    pub allow_kind_change: bool,
}

/// A resource selector (`target:`); name and namespace are anchored regular expressions.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Selector {
    /// API group.
    #[serde(default)]
    pub group: Option<String>,
    /// API version.
    #[serde(default)]
    pub version: Option<String>,
    /// Kind.
    #[serde(default)]
    pub kind: Option<String>,
    /// Name pattern.
    #[serde(default)]
    pub name: Option<String>,
    /// Namespace pattern.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Label selector.
    #[serde(default)]
    pub label_selector: Option<String>,
    /// Annotation selector.
    #[serde(default)]
    pub annotation_selector: Option<String>,
}

/// Arguments of a ConfigMap or Secret generator.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GeneratorArgs {
    /// Name of the generated object.
    pub name: String,
    /// Namespace of the generated object.
    #[serde(default)]
    pub namespace: Option<String>,
    /// `create` (default), `merge` or `replace`.
    #[serde(default)]
    pub behavior: Option<String>,
    /// `key=path` or `path` entries.
    #[serde(default)]
    pub files: Vec<String>,
    /// `key=value` entries.
    #[serde(default)]
    pub literals: Vec<String>,
    /// Env files of `KEY=value` lines.
    #[serde(default)]
    pub envs: Vec<String>,
    /// Deprecated single env file.
    #[serde(default)]
    pub env: Option<String>,
    /// Secret type (default `Opaque`).
    #[serde(default, rename = "type")]
    pub type_: Option<String>,
    /// Per-generator options.
    #[serde(default)]
    pub options: Option<GeneratorOptions>,
}

/// Generator options.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GeneratorOptions {
    /// Labels added to generated objects.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Annotations added to generated objects.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// Do not append the content hash to the name.
    #[serde(default)]
    pub disable_name_suffix_hash: Option<bool>,
    /// Mark generated objects immutable.
    #[serde(default)]
    pub immutable: Option<bool>,
}

/// `sortOptions:`.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SortOptions {
    /// `legacy` (default) or `fifo`.
    #[serde(default)]
    pub order: Option<String>,
    /// Kind lists for the legacy order.
    #[serde(default)]
    pub legacy_sort_options: Option<LegacySortOptions>,
}

/// Custom kind orders for the legacy sort.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegacySortOptions {
    /// Kinds emitted first, in this order.
    #[serde(default)]
    pub order_first: Vec<String>,
    /// Kinds emitted last, in this order.
    #[serde(default)]
    pub order_last: Vec<String>,
}

fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(match value {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    })
}
