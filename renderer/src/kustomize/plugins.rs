//! The `transformers:` field: configurations of kustomize's built-in transformers
//! (`apiVersion: builtin`), with their own field specs.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::fieldspec::visit_path;
use super::patches::{self, PatchSource};
use super::resmap::ResMap;
use super::types::{PatchEntry, Selector};
use crate::error::{RenderError, Result};
use crate::root::RepoRoot;
use crate::yaml;
use fleet_objects::split_api_version;

/// A field spec as written in a transformer configuration.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConfiguredFieldSpec {
    #[serde(default)]
    group: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    path: String,
    #[serde(default)]
    create: bool,
}

impl ConfiguredFieldSpec {
    fn applies_to(&self, object: &Value) -> bool {
        let (group, version) = split_api_version(crate::resource::str_at(object, &["apiVersion"]));
        let kind = crate::resource::str_at(object, &["kind"]);
        let equal = |want: &Option<String>, have: &str| want.as_ref().is_none_or(|w| w == have);
        equal(&self.group, group) && equal(&self.version, version) && equal(&self.kind, kind)
    }
}

/// `LabelTransformer` and `AnnotationsTransformer`.
#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MapTransformer {
    #[serde(rename = "apiVersion")]
    _api_version: String,
    #[serde(rename = "kind")]
    _kind: String,
    #[serde(default, rename = "metadata")]
    _metadata: Option<Value>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(default)]
    field_specs: Vec<ConfiguredFieldSpec>,
}

/// `PatchTransformer`.
#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PatchTransformer {
    #[serde(rename = "apiVersion")]
    _api_version: String,
    #[serde(rename = "kind")]
    _kind: String,
    #[serde(default, rename = "metadata")]
    _metadata: Option<Value>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    patch: Option<String>,
    #[serde(default)]
    target: Option<Selector>,
}

/// Runs the transformer configurations listed in `transformers:`.
pub fn run(
    root: &RepoRoot,
    dir: &Path,
    file: &Path,
    entries: &[String],
    resources: &mut ResMap,
) -> Result<()> {
    for (index, entry) in entries.iter().enumerate() {
        let field = format!("transformers[{index}]");
        let path = root.resolve(dir, entry, file)?;
        if path.is_dir() {
            return Err(RenderError::in_field(
                root.display(file),
                &field,
                "transformer configurations from a kustomization directory are not supported",
            ));
        }
        let shown = root.display(&path);
        let text = root.read_to_string(&path)?;
        for config in yaml::parse_documents(&text, &shown)? {
            run_one(root, dir, file, &field, &shown, config, resources)?;
        }
    }
    Ok(())
}

fn run_one(
    root: &RepoRoot,
    dir: &Path,
    file: &Path,
    field: &str,
    shown: &str,
    config: Value,
    resources: &mut ResMap,
) -> Result<()> {
    let kind = crate::resource::str_at(&config, &["kind"]).to_string();
    let invalid =
        |e: serde_json::Error| RenderError::in_file(shown, format!("invalid {kind}: {e}"));
    match kind.as_str() {
        "LabelTransformer" | "AnnotationsTransformer" => {
            let t: MapTransformer = serde_json::from_value(config).map_err(invalid)?;
            let entries = if kind == "LabelTransformer" {
                &t.labels
            } else {
                &t.annotations
            };
            for resource in &mut resources.items {
                let specs: Vec<&ConfiguredFieldSpec> = t
                    .field_specs
                    .iter()
                    .filter(|s| s.applies_to(&resource.value))
                    .collect();
                for spec in specs {
                    visit_path(&mut resource.value, &spec.path, spec.create, &mut |slot| {
                        if let Some(map) = slot.as_object_mut() {
                            for (k, v) in entries {
                                map.insert(k.clone(), Value::String(v.clone()));
                            }
                        }
                    });
                }
            }
            Ok(())
        }
        "PatchTransformer" => {
            let t: PatchTransformer = serde_json::from_value(config).map_err(invalid)?;
            let source = PatchSource {
                root,
                dir,
                file,
                field: field.to_string(),
            };
            let entry = PatchEntry {
                path: t.path,
                patch: t.patch,
                target: t.target.clone(),
                options: None,
            };
            let (text, origin) = source.text(&entry)?;
            let patch = source.parse(&text, &origin)?;
            patches::apply(resources, &patch, t.target.as_ref(), &source)
        }
        other => Err(RenderError::in_file(
            shown,
            format!("transformer kind `{other}` is not supported by the fleet-rs kustomize engine"),
        )
        .with_field("kind")),
    }
}
