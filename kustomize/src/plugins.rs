//! Builtin plugin configurations (`apiVersion: builtin`) named by `generators:` and
//! `transformers:`, read into the same steps a kustomization's own fields make. Exec and
//! KRM function plugins are refused: they run programs, which a renderer never does.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::config::FieldSpec;
use super::generators::GeneratorKind;
use super::location::Location;
use super::patches::{Allow, Patch};
use super::plugin_source::PluginSource;
use super::replacements::Replacement;
use super::steps::Transform;
use super::transformers::Affix;
use super::types::{
    string_map, GeneratorArgs, HelmChart, HelmGlobals, ImageEntry, PatchOptions, ReplacementEntry,
    ReplicaEntry, Selector,
};
use super::value_add::ValueAdd;
use fleet_files::str_at;
use fleet_files::{Error, Result};

/// A generator run configured by a plugin file.
pub(crate) enum Generate {
    /// `ConfigMapGenerator` or `SecretGenerator`.
    Object(GeneratorKind, Box<GeneratorArgs>),
    /// `HelmChartInflationGenerator`.
    Helm(Box<HelmChart>, HelmGlobals),
}

/// What one plugin configuration asks for.
pub(crate) enum Plugin {
    /// A transformer run.
    Transform(Transform),
    /// A generator run.
    Generate(Generate),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MapConfig {
    #[serde(default, deserialize_with = "string_map")]
    labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "string_map")]
    annotations: BTreeMap<String, String>,
    #[serde(default)]
    field_specs: Vec<FieldSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NamespaceConfig {
    #[serde(default)]
    field_specs: Vec<FieldSpec>,
    #[serde(default)]
    unset_only: bool,
    #[serde(default)]
    set_role_binding_subjects: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PatchConfig {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    patch: Option<String>,
    #[serde(default)]
    target: Option<Selector>,
    #[serde(default)]
    options: Option<PatchOptions>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StrategicMergeConfig {
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    patches: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Json6902Config {
    #[serde(default)]
    target: Option<Selector>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    json_op: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AffixConfig {
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    suffix: Option<String>,
    #[serde(default)]
    field_specs: Vec<FieldSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ImageConfig {
    image_tag: ImageEntry,
    #[serde(default)]
    field_specs: Vec<FieldSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReplicaConfig {
    replica: ReplicaEntry,
    #[serde(default)]
    field_specs: Vec<FieldSpec>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReplacementConfig {
    #[serde(default)]
    replacements: Vec<ReplacementEntry>,
}

/// Reads one plugin configuration.
pub(crate) fn parse(config: &Value, source: &PluginSource<'_>) -> Result<Vec<Plugin>> {
    let api_version = str_at(config, &["apiVersion"]);
    let kind = str_at(config, &["kind"]).to_string();
    if api_version != "builtin" {
        return Err(source.error(format!(
            "plugin {kind} ({api_version}) is not a kustomize builtin; exec and KRM function plugins are not run by fleet-rs"
        )));
    }
    let metadata = config.get("metadata").cloned().unwrap_or(Value::Null);
    let mut body: Map<String, Value> = config.as_object().cloned().unwrap_or_default();
    for key in ["apiVersion", "kind", "metadata"] {
        body.remove(key);
    }
    let body = Value::Object(body);
    let typed = |what: &str| {
        let what = what.to_string();
        move |e: serde_json::Error| source.error(format!("invalid {what} configuration: {e}"))
    };
    let transform = |t: Transform| Ok(vec![Plugin::Transform(t)]);
    match kind.as_str() {
        "LabelTransformer" | "AnnotationsTransformer" => {
            let c: MapConfig = decode(&body).map_err(typed(&kind))?;
            let entries = if kind == "LabelTransformer" {
                c.labels
            } else {
                c.annotations
            };
            transform(Transform::Entries {
                entries,
                specs: c.field_specs,
            })
        }
        "NamespaceTransformer" => {
            let c: NamespaceConfig = decode(&body).map_err(typed(&kind))?;
            if let Some(mode) = c
                .set_role_binding_subjects
                .as_deref()
                .filter(|m| *m != "defaultOnly")
            {
                return Err(source.error(format!(
                    "setRoleBindingSubjects `{mode}` is not supported (defaultOnly is)"
                )));
            }
            transform(Transform::Namespace {
                namespace: str_at(&metadata, &["namespace"]).to_string(),
                specs: c.field_specs,
                unset_only: c.unset_only,
            })
        }
        "PatchTransformer" => {
            let c: PatchConfig = decode(&body).map_err(typed(&kind))?;
            let patch_source = source.patch_source();
            let entry = super::types::PatchEntry {
                path: c.path,
                patch: c.patch,
                target: c.target.clone(),
                options: c.options.clone(),
            };
            let (text, origin) = patch_source.text(&entry)?;
            let options = c.options.unwrap_or_default();
            transform(Transform::Patch {
                patch: patch_source.parse(&text, &origin)?,
                target: c.target,
                allow: Allow {
                    name: options.allow_name_change,
                    kind: options.allow_kind_change,
                },
                from_patches_strategic_merge: false,
                field: source.field.clone(),
            })
        }
        "PatchStrategicMergeTransformer" => {
            let c: StrategicMergeConfig = decode(&body).map_err(typed(&kind))?;
            let patch_source = source.patch_source();
            let mut out = Vec::new();
            let mut texts = Vec::new();
            for path in &c.paths {
                texts.push(source.location.read(path)?);
            }
            if let Some(inline) = c.patches {
                texts.push((inline, source.shown.clone()));
            }
            for (text, origin) in texts {
                out.push(Plugin::Transform(Transform::Patch {
                    patch: patch_source.parse(&text, &origin)?,
                    target: None,
                    allow: Allow::default(),
                    from_patches_strategic_merge: true,
                    field: source.field.clone(),
                }));
            }
            Ok(out)
        }
        "PatchJson6902Transformer" => {
            let c: Json6902Config = decode(&body).map_err(typed(&kind))?;
            let patch_source = source.patch_source();
            let (text, origin) = match (c.path, c.json_op) {
                (Some(path), None) => source.location.read(&path)?,
                (None, Some(inline)) => (inline, source.shown.clone()),
                _ => return Err(source.error("set exactly one of `path` and `jsonOp`")),
            };
            let patch = patch_source.parse(&text, &origin)?;
            if !matches!(patch, Patch::Json6902(_)) {
                return Err(source.error("expected a list of JSON 6902 operations"));
            }
            transform(Transform::Patch {
                patch,
                target: c.target,
                allow: Allow::default(),
                from_patches_strategic_merge: false,
                field: source.field.clone(),
            })
        }
        "PrefixSuffixTransformer" | "PrefixTransformer" | "SuffixTransformer" => {
            let c: AffixConfig = decode(&body).map_err(typed(&kind))?;
            let mut out = Vec::new();
            for (affix, text) in [(Affix::Prefix, c.prefix), (Affix::Suffix, c.suffix)] {
                if let Some(text) = text {
                    out.push(Plugin::Transform(Transform::Affix {
                        affix,
                        text,
                        specs: c.field_specs.clone(),
                    }));
                }
            }
            Ok(out)
        }
        "ImageTagTransformer" => {
            let c: ImageConfig = decode(&body).map_err(typed(&kind))?;
            transform(Transform::Image {
                entry: c.image_tag,
                specs: c.field_specs,
            })
        }
        "ReplicaCountTransformer" => {
            let c: ReplicaConfig = decode(&body).map_err(typed(&kind))?;
            transform(Transform::Replicas {
                entry: c.replica,
                specs: c.field_specs,
            })
        }
        "ReplacementTransformer" => {
            let c: ReplacementConfig = decode(&body).map_err(typed(&kind))?;
            let list = replacements_from(&c.replacements, &source.location, &source.field)?;
            transform(Transform::Replacements(list))
        }
        "ValueAddTransformer" => {
            transform(Transform::ValueAdd(ValueAdd::configure(&body, source)?))
        }
        "ConfigMapGenerator" | "SecretGenerator" => {
            let mut args_value = body;
            if let Some(map) = args_value.as_object_mut() {
                map.insert(
                    "name".into(),
                    Value::String(str_at(&metadata, &["name"]).into()),
                );
                if let Some(ns) = metadata.get("namespace") {
                    map.insert("namespace".into(), ns.clone());
                }
            }
            let args: GeneratorArgs = decode(&args_value).map_err(typed(&kind))?;
            let generator = if kind == "ConfigMapGenerator" {
                GeneratorKind::ConfigMap
            } else {
                GeneratorKind::Secret
            };
            Ok(vec![Plugin::Generate(Generate::Object(
                generator,
                Box::new(args),
            ))])
        }
        "HelmChartInflationGenerator" => {
            let mut chart_value = body;
            let mut globals = HelmGlobals::default();
            if let Some(map) = chart_value.as_object_mut() {
                globals.chart_home = map
                    .remove("chartHome")
                    .and_then(|v| v.as_str().map(String::from));
                globals.config_home = map
                    .remove("configHome")
                    .and_then(|v| v.as_str().map(String::from));
            }
            let chart: HelmChart = decode(&chart_value).map_err(typed(&kind))?;
            Ok(vec![Plugin::Generate(Generate::Helm(
                Box::new(chart),
                globals,
            ))])
        }
        other => Err(source.error(format!(
            "builtin plugin kind `{other}` is not supported by the fleet-rs kustomize engine"
        ))),
    }
}

fn decode<T: DeserializeOwned>(value: &Value) -> std::result::Result<T, serde_json::Error> {
    serde_json::from_value(value.clone())
}

/// The replacements of a `replacements:` list: inline, or read from the files entries
/// name (each holding one replacement or a list of them).
pub(crate) fn replacements_from(
    entries: &[ReplacementEntry],
    location: &Location<'_>,
    field: &str,
) -> Result<Vec<Replacement>> {
    let mut out = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let field = format!("{field}[{index}]");
        match (&entry.path, &entry.source) {
            (Some(path), None) => {
                let (text, shown) = location.read(path)?;
                for document in fleet_files::yaml::parse_any_documents(&text, &shown)? {
                    let list = match document {
                        Value::Array(items) => items,
                        other => vec![other],
                    };
                    for item in list {
                        let entry: ReplacementEntry =
                            serde_json::from_value(item).map_err(|e| {
                                Error::in_file(&shown, format!("invalid replacement: {e}"))
                            })?;
                        out.extend(replacements_from(&[entry], location, &field)?);
                    }
                }
            }
            (None, Some(source)) => {
                if entry.targets.is_empty() {
                    return Err(location.error(
                        &field,
                        "replacements must specify a source and at least one target",
                    ));
                }
                out.push(Replacement {
                    source: source.clone(),
                    targets: entry.targets.clone(),
                });
            }
            _ => {
                return Err(location.error(
                    &field,
                    "a replacement has either `path` or `source` and `targets`",
                ))
            }
        }
    }
    Ok(out)
}
