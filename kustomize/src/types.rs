//! The kustomization.yaml schema (kustomize v5's fields).
//!
//! Every struct denies unknown fields, so a misspelt or unknown field is an error naming
//! it instead of being skipped.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// A `kustomization.yaml` (kind `Kustomization` or `Component`).
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Kustomization {
    /// `kustomize.config.k8s.io/v1beta1` or `v1alpha1` for components.
    #[expect(
        dead_code,
        reason = "accepted as kustomize accepts it; nothing reads it"
    )]
    #[serde(default)]
    pub api_version: Option<String>,
    /// `Kustomization` (default) or `Component`.
    #[serde(default)]
    pub kind: Option<String>,
    /// Ignored metadata.
    #[expect(
        dead_code,
        reason = "accepted as kustomize accepts it; nothing reads it"
    )]
    #[serde(default)]
    pub metadata: Option<Value>,
    /// Files, directories and nested kustomizations.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub resources: Vec<String>,
    /// Deprecated synonym of resources.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub bases: Vec<String>,
    /// Components applied to this kustomization's resources.
    #[serde(default, deserialize_with = "null_as_empty")]
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
    #[serde(default, deserialize_with = "string_map")]
    pub common_labels: BTreeMap<String, String>,
    /// Labels with per-entry selector behaviour.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub labels: Vec<LabelEntry>,
    /// Annotations added to objects and templates.
    #[serde(default, deserialize_with = "string_map")]
    pub common_annotations: BTreeMap<String, String>,
    /// Image rewrites.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub images: Vec<ImageEntry>,
    /// The deprecated spelling of `images`, appended to them as kustomize does.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub image_tags: Vec<ImageEntry>,
    /// Replica counts.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub replicas: Vec<ReplicaEntry>,
    /// Patches (strategic merge or JSON 6902), optionally with a target selector.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub patches: Vec<PatchEntry>,
    /// Strategic merge patches: file paths or inline YAML.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub patches_strategic_merge: Vec<String>,
    /// JSON 6902 patches with their target.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub patches_json6902: Vec<PatchEntry>,
    /// ConfigMap generators.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub config_map_generator: Vec<GeneratorArgs>,
    /// Secret generators.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub secret_generator: Vec<GeneratorArgs>,
    /// Options for every generator here.
    #[serde(default)]
    pub generator_options: Option<GeneratorOptions>,
    /// Transformer plugin configurations (files, kustomization directories or inline
    /// YAML), run after the fields above.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub transformers: Vec<String>,
    /// Generator plugin configurations, run after the built-in generators.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub generators: Vec<String>,
    /// Validator plugin configurations, run last.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub validators: Vec<String>,
    /// Output order.
    #[serde(default)]
    pub sort_options: Option<SortOptions>,
    /// Variables (`$(NAME)` in the fields varReference lists).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub vars: Vec<Var>,
    /// Copies of one field's value into others.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub replacements: Vec<ReplacementEntry>,
    /// Files of transformer configuration (field specs, name references).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub configurations: Vec<String>,
    /// CustomResourceDefinition files whose schemas declare name references.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub crds: Vec<String>,
    /// A schema file for strategic merge patches of custom resources.
    #[serde(default)]
    pub openapi: Option<OpenApi>,
    /// Helm charts rendered into resources (kustomize's `--enable-helm`).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub helm_charts: Vec<HelmChart>,
    /// Defaults for `helmCharts`.
    #[serde(default)]
    pub helm_globals: Option<HelmGlobals>,
    /// Annotations and labels kustomize may add about the build (the top kustomization's
    /// count): `managedByLabel` is honoured; origin and transformer annotations are not
    /// written yet.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub build_metadata: Vec<String>,
}

/// One `vars:` entry.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Var {
    /// The name used in `$(NAME)`.
    pub name: String,
    /// The object the value comes from.
    pub objref: ObjRef,
    /// The field of it (default `metadata.name`).
    #[serde(default)]
    pub fieldref: Option<FieldRef>,
}

/// An object a var names.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ObjRef {
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Name.
    #[serde(default)]
    pub name: String,
    /// `group/version`.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Group.
    #[serde(default)]
    pub group: Option<String>,
    /// Version.
    #[serde(default)]
    pub version: Option<String>,
    /// Namespace.
    #[serde(default)]
    pub namespace: Option<String>,
}

/// The field a var reads.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct FieldRef {
    /// Dotted path, `metadata.name` by default. Kustomize reads YAML as Go's JSON
    /// decoder does, which matches field names regardless of case; `fieldpath` is the
    /// spelling older examples use.
    #[serde(default, alias = "fieldpath")]
    pub field_path: Option<String>,
}

/// One `replacements:` entry: inline, or a file of them.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReplacementEntry {
    /// A file holding one replacement or a list of them.
    #[serde(default)]
    pub path: Option<String>,
    /// Where the value comes from.
    #[serde(default)]
    pub source: Option<ReplacementSource>,
    /// Where it goes.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub targets: Vec<ReplacementTarget>,
}

/// The source of a replacement.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReplacementSource {
    /// Group.
    #[serde(default)]
    pub group: Option<String>,
    /// Version.
    #[serde(default)]
    pub version: Option<String>,
    /// Kind.
    #[serde(default)]
    pub kind: Option<String>,
    /// Name.
    #[serde(default)]
    pub name: Option<String>,
    /// Namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Dotted path of the value (default `metadata.name`).
    #[serde(default)]
    pub field_path: Option<String>,
    /// Part of the value to take.
    #[serde(default)]
    pub options: Option<ReplacementOptions>,
}

/// Where a replacement writes.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReplacementTarget {
    /// Objects written to.
    #[serde(default)]
    pub select: Option<Selector>,
    /// Objects left alone.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub reject: Vec<Selector>,
    /// Dotted paths in them.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub field_paths: Vec<String>,
    /// Part of the field to replace, and creation.
    #[serde(default)]
    pub options: Option<ReplacementOptions>,
}

/// `delimiter`, `index` and `create`.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReplacementOptions {
    /// Split the value at this.
    #[serde(default)]
    pub delimiter: Option<String>,
    /// The part (after splitting) meant.
    #[serde(default)]
    pub index: Option<i64>,
    /// Create missing fields.
    #[serde(default)]
    pub create: bool,
}

/// `openapi:`.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct OpenApi {
    /// A JSON or YAML schema file.
    #[serde(default)]
    pub path: Option<String>,
    /// A built-in Kubernetes schema version (accepted, the built-in merge keys are used).
    #[expect(
        dead_code,
        reason = "accepted as kustomize accepts it; nothing reads it"
    )]
    #[serde(default)]
    pub version: Option<String>,
}

/// One `helmCharts:` entry.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct HelmChart {
    /// Chart name.
    pub name: String,
    /// Chart repository URL.
    #[serde(default)]
    pub repo: Option<String>,
    /// Chart version.
    #[serde(default)]
    pub version: Option<String>,
    /// Release name.
    #[serde(default)]
    pub release_name: Option<String>,
    /// Release namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Values given inline.
    #[serde(default)]
    pub values_inline: Option<Value>,
    /// Values file replacing the chart's values.yaml.
    #[serde(default)]
    pub values_file: Option<String>,
    /// More values files.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub additional_values_files: Vec<String>,
    /// How inline values combine with the file's: `override` (default), `replace` or `merge`.
    #[serde(default)]
    pub values_merge: Option<String>,
    /// Print the chart's CRDs too.
    #[serde(default, rename = "includeCRDs")]
    pub include_crds: bool,
    /// Extra API versions.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub api_versions: Vec<String>,
    /// The Kubernetes version the templates see.
    #[serde(default)]
    pub kube_version: Option<String>,
    /// Leave out test hooks.
    #[serde(default)]
    pub skip_tests: bool,
    /// Leave out hooks altogether.
    #[serde(default)]
    pub skip_hooks: bool,
    /// Extra arguments to `helm template` (not supported beyond these fields).
    #[expect(
        dead_code,
        reason = "accepted as kustomize accepts it; nothing reads it"
    )]
    #[serde(default, deserialize_with = "null_as_empty")]
    pub extra_args: Vec<String>,
    /// Name template (unused: releaseName names the release).
    #[expect(
        dead_code,
        reason = "accepted as kustomize accepts it; nothing reads it"
    )]
    #[serde(default)]
    pub name_template: Option<String>,
}

/// `helmGlobals:`.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct HelmGlobals {
    /// Where charts are (default `charts`, relative to the kustomization).
    #[serde(default)]
    pub chart_home: Option<String>,
    /// Helm's configuration directory (unused).
    #[serde(default)]
    pub config_home: Option<String>,
}

/// One entry of `labels:`.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct LabelEntry {
    /// The labels.
    #[serde(default, deserialize_with = "string_map")]
    pub pairs: BTreeMap<String, String>,
    /// More places to put them.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub fields: Vec<super::config::FieldSpec>,
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
pub(crate) struct ImageEntry {
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
pub(crate) struct ReplicaEntry {
    /// Workload name.
    pub name: String,
    /// Replica count.
    pub count: i64,
}

/// One entry of `patches:` or `patchesJson6902:`.
#[derive(Deserialize, Debug, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PatchEntry {
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
pub(crate) struct PatchOptions {
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
pub(crate) struct Selector {
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
pub(crate) struct GeneratorArgs {
    /// Name of the generated object.
    pub name: String,
    /// Namespace of the generated object.
    #[serde(default)]
    pub namespace: Option<String>,
    /// `create` (default), `merge` or `replace`.
    #[serde(default)]
    pub behavior: Option<String>,
    /// `key=path` or `path` entries.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub files: Vec<String>,
    /// `key=value` entries.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub literals: Vec<String>,
    /// Env files of `KEY=value` lines.
    #[serde(default, deserialize_with = "null_as_empty")]
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
pub(crate) struct GeneratorOptions {
    /// Labels added to generated objects.
    #[serde(default, deserialize_with = "string_map")]
    pub labels: BTreeMap<String, String>,
    /// Annotations added to generated objects.
    #[serde(default, deserialize_with = "string_map")]
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
pub(crate) struct SortOptions {
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
pub(crate) struct LegacySortOptions {
    /// Kinds emitted first, in this order.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub order_first: Vec<String>,
    /// Kinds emitted last, in this order.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub order_last: Vec<String>,
}

/// A map of strings, scalars of other types written as YAML writes them (`51`, `true`).
pub(crate) fn string_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    let map = Option::<BTreeMap<String, Value>>::deserialize(d)?.unwrap_or_default();
    Ok(map
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s,
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (k, text)
        })
        .collect())
}

fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(match value {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    })
}

/// A list that may be written null (`vars: ~`), read as empty, as kustomize reads it.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    use serde::Deserialize;
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}
