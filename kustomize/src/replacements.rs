//! `replacements`: a value read from one object (all of a field, or a delimited part of
//! it) written into fields of the objects the targets select, as kustomize's replacement
//! transformer does.

use serde_json::Value;

use super::fieldpath::{self, Step};
use super::resmap::{ResMap, Resource};
use super::types::{ReplacementOptions, ReplacementSource, ReplacementTarget, Selector};
use fleet_files::str_at;
use fleet_files::{Error, Result};
use fleet_objects::selector::LabelRequirements;
use fleet_objects::split_api_version;

/// A replacement ready to run.
#[derive(Debug, Clone)]
pub(crate) struct Replacement {
    /// Where the value comes from.
    pub source: ReplacementSource,
    /// Where it goes.
    pub targets: Vec<ReplacementTarget>,
}

/// Whether `resource` (by any name and namespace it ever had) is one the exact selector
/// names: every field given must equal.
fn selected(resource: &Resource, selector: &Selector) -> Result<bool> {
    let (group, version) = split_api_version(str_at(&resource.value, &["apiVersion"]));
    let equal = |want: &Option<String>, have: &str| want.as_ref().is_none_or(|w| w == have);
    if !(equal(&selector.group, group)
        && equal(&selector.version, version)
        && equal(&selector.kind, resource.kind()))
    {
        return Ok(false);
    }
    let named = resource.names.iter().any(|(namespace, name)| {
        equal(&selector.name, name)
            && selector
                .namespace
                .as_ref()
                .is_none_or(|want| want == namespace || (want == "default" && namespace.is_empty()))
    });
    if !named {
        return Ok(false);
    }
    let requirement = |text: &Option<String>, field: &str| -> Result<bool> {
        match text {
            None => Ok(true),
            Some(text) => {
                let requirements = LabelRequirements::parse(text)
                    .map_err(|e| Error::in_file("replacements", e))?;
                Ok(requirements.matches(resource.value.pointer(field)))
            }
        }
    };
    Ok(requirement(&selector.label_selector, "/metadata/labels")?
        && requirement(&selector.annotation_selector, "/metadata/annotations")?)
}

fn source_selector(source: &ReplacementSource) -> Selector {
    Selector {
        group: source.group.clone(),
        version: source.version.clone(),
        kind: source.kind.clone(),
        name: source.name.clone(),
        namespace: source.namespace.clone(),
        ..Selector::default()
    }
}

/// The value a source names, refined by its delimiter and index.
fn source_value(resources: &ResMap, source: &ReplacementSource, file: &str) -> Result<Value> {
    let selector = source_selector(source);
    let mut matches = Vec::new();
    for resource in &resources.items {
        if selected(resource, &selector)? {
            matches.push(resource);
        }
    }
    let describe = || format!("{source:?}");
    let resource = match matches.as_slice() {
        [one] => *one,
        [] => {
            return Err(Error::in_field(
                file,
                "replacements",
                format!("nothing selected by {}", describe()),
            ))
        }
        _ => {
            return Err(Error::in_field(
                file,
                "replacements",
                format!("multiple matches for selector {}", describe()),
            ))
        }
    };
    let path = source.field_path.as_deref().unwrap_or("metadata.name");
    let value = fieldpath::get(&resource.value, &fieldpath::parse(path))
        .into_iter()
        .next()
        .cloned()
        .ok_or_else(|| {
            Error::in_field(
                file,
                "replacements",
                format!(
                    "fieldPath `{path}` is missing for replacement source {}",
                    resource.id()
                ),
            )
        })?;
    refine(value, source.options.as_ref(), file)
}

/// The delimited part of a source value, when options ask for one.
fn refine(value: Value, options: Option<&ReplacementOptions>, file: &str) -> Result<Value> {
    let Some(delimiter) = options.and_then(|o| o.delimiter.as_deref()) else {
        return Ok(value);
    };
    let text = fieldpath::scalar_text(&value).unwrap_or_default();
    let parts: Vec<&str> = text.split(delimiter).collect();
    let index = options.and_then(|o| o.index).unwrap_or(0);
    usize::try_from(index)
        .ok()
        .and_then(|i| parts.get(i))
        .map(|p| Value::String(p.to_string()))
        .ok_or_else(|| {
            Error::in_field(
                file,
                "replacements",
                format!("options.index {index} is out of bounds for value {text}"),
            )
        })
}

/// Writes `value` where a target's options say: the whole field, or one delimited part.
/// A scalar field keeps its type as kustomize keeps the YAML node's tag: a string stays a
/// string, and a number, boolean, null or newly created field reads the text as YAML does.
fn put(
    slot: &mut Value,
    value: &Value,
    options: Option<&ReplacementOptions>,
) -> std::result::Result<(), String> {
    let mut value = value.clone();
    if let Some(delimiter) = options
        .and_then(|o| o.delimiter.as_deref())
        .filter(|d| !d.is_empty())
    {
        if slot.is_object() || slot.is_array() {
            return Err("delimiter option can only be used with scalar nodes".into());
        }
        let current = fieldpath::scalar_text(slot).unwrap_or_default();
        let mut parts: Vec<String> = current.split(delimiter).map(String::from).collect();
        let new = fieldpath::scalar_text(&value).unwrap_or_default();
        let index = options.and_then(|o| o.index).unwrap_or(0);
        match usize::try_from(index) {
            Ok(i) if i < parts.len() => parts[i] = new,
            Ok(_) => parts.push(new),
            Err(_) => parts.insert(0, new),
        }
        value = Value::String(parts.join(delimiter));
    }
    let text = fieldpath::scalar_text(&value);
    *slot = match (&*slot, text) {
        (_, None) => value,
        (Value::String(_), Some(text)) => Value::String(text),
        (Value::Object(_) | Value::Array(_), Some(_)) => value,
        (_, Some(text)) => plain_scalar(&text),
    };
    Ok(())
}

/// What YAML reads an unquoted scalar as (`8080` a number, `true` a boolean).
fn plain_scalar(text: &str) -> Value {
    match serde_yaml_ng::from_str::<Value>(text) {
        Ok(value) if !value.is_object() && !value.is_array() => value,
        _ => Value::String(text.to_string()),
    }
}

/// Runs one replacement over the resources.
pub(crate) fn apply(resources: &mut ResMap, replacement: &Replacement, file: &str) -> Result<()> {
    let value = source_value(resources, &replacement.source, file)?;
    for target in &replacement.targets {
        let Some(select) = &target.select else {
            return Err(Error::in_field(
                file,
                "replacements",
                "a target needs `select`",
            ));
        };
        let paths: Vec<Vec<Step>> = if target.field_paths.is_empty() {
            vec![fieldpath::parse("metadata.name")]
        } else {
            target
                .field_paths
                .iter()
                .map(|p| fieldpath::parse(p))
                .collect()
        };
        let create = target.options.as_ref().is_some_and(|o| o.create);
        for resource in &mut resources.items {
            if !selected(resource, select)? {
                continue;
            }
            let mut rejected = false;
            for reject in &target.reject {
                rejected |= selected(resource, reject)?;
            }
            if rejected {
                continue;
            }
            for (steps, text) in paths.iter().zip(
                target
                    .field_paths
                    .iter()
                    .map(String::as_str)
                    .chain(std::iter::repeat("metadata.name")),
            ) {
                let mut failure = None;
                let reached =
                    fieldpath::visit_mut(&mut resource.value, steps, create, &mut |slot| {
                        if let Err(message) = put(slot, &value, target.options.as_ref()) {
                            failure = Some(message);
                        }
                    });
                if let Some(message) = failure {
                    return Err(Error::in_field(file, "replacements", message));
                }
                if reached == 0 {
                    return Err(Error::in_field(
                        file,
                        "replacements",
                        if create {
                            format!("unable to find or create field \"{text}\" in replacement target {}", resource.id())
                        } else {
                            format!(
                                "unable to find field \"{text}\" in replacement target {}",
                                resource.id()
                            )
                        },
                    ));
                }
            }
            resource.remember_name();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(values: Vec<Value>) -> ResMap {
        let mut resources = ResMap::default();
        for value in values {
            resources.items.push(Resource::new(value));
        }
        resources
    }

    #[test]
    fn copies_a_delimited_part_into_selected_targets() {
        let mut resources = map(vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "env"}, "data": {"image": "repo/app:1.2"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                   "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "repo/app:0.1"}]}}}}),
        ]);
        let replacement = Replacement {
            source: ReplacementSource {
                kind: Some("ConfigMap".into()),
                name: Some("env".into()),
                field_path: Some("data.image".into()),
                options: Some(ReplacementOptions {
                    delimiter: Some(":".into()),
                    index: Some(1),
                    create: false,
                }),
                ..ReplacementSource::default()
            },
            targets: vec![ReplacementTarget {
                select: Some(Selector {
                    kind: Some("Deployment".into()),
                    ..Selector::default()
                }),
                field_paths: vec!["spec.template.spec.containers.[name=app].image".into()],
                options: Some(ReplacementOptions {
                    delimiter: Some(":".into()),
                    index: Some(1),
                    create: false,
                }),
                ..ReplacementTarget::default()
            }],
        };
        apply(&mut resources, &replacement, "kustomization.yaml").expect("applies");
        assert_eq!(
            resources.items[1].value["spec"]["template"]["spec"]["containers"][0]["image"],
            "repo/app:1.2"
        );
    }
}
