//! `crds:`: files of OpenAPI definitions (a map from type name to schema) whose
//! properties declare, through `x-kubernetes-*` extensions, which fields of a custom kind
//! name other objects (`x-kubernetes-object-ref-kind` and `-api-version`), hold labels
//! to extend (`x-kubernetes-label-selector`), annotations (`x-kubernetes-annotation`) or
//! names to prefix (`x-kubernetes-identity`), as kustomize reads them.

use serde_json::{Map, Value};

use super::config::{FieldSpec, NameBackRef, TransformerConfig};
use fleet_files::yaml;
use fleet_files::Result;

/// How deep `$ref`s are followed.
const MAX_DEPTH: usize = 32;

/// The configuration a CRD definitions file declares.
pub(crate) fn references(text: &str, shown: &str) -> Result<TransformerConfig> {
    let definitions = yaml::parse_any_documents(text, shown)?
        .into_iter()
        .next()
        .and_then(|d| d.as_object().cloned())
        .unwrap_or_default();
    let mut config = TransformerConfig::default();
    for (name, definition) in &definitions {
        let properties = definition.get("properties").and_then(Value::as_object);
        let is_kind = properties.is_some_and(|p| {
            ["kind", "apiVersion", "metadata"]
                .iter()
                .all(|k| p.contains_key(*k))
        });
        if !is_kind {
            continue;
        }
        // The kind is the last dotted part of the type name.
        let kind = name.rsplit('.').next().unwrap_or(name);
        collect(&definitions, name, kind, &mut Vec::new(), &mut config, 0);
    }
    Ok(config)
}

fn collect(
    definitions: &Map<String, Value>,
    type_name: &str,
    kind: &str,
    path: &mut Vec<String>,
    config: &mut TransformerConfig,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(properties) = definitions
        .get(type_name)
        .and_then(|d| d.get("properties"))
        .and_then(Value::as_object)
    else {
        return;
    };
    for (property_name, property) in properties {
        path.push(property_name.clone());
        let spec = |path: &[String]| FieldSpec {
            kind: kind.to_string(),
            path: path.join("/"),
            ..FieldSpec::default()
        };
        let extension = |key: &str| property.get(key).and_then(Value::as_str);
        if extension("x-kubernetes-annotation").is_some() {
            config.common_annotations.push(spec(path));
        }
        if extension("x-kubernetes-label-selector").is_some() {
            config.common_labels.push(spec(path));
        }
        if extension("x-kubernetes-identity").is_some() {
            config.name_prefix.push(spec(path));
        }
        if let (Some(version), Some(referral)) = (
            extension("x-kubernetes-object-ref-api-version"),
            extension("x-kubernetes-object-ref-kind"),
        ) {
            let name_key = extension("x-kubernetes-object-ref-name-key").unwrap_or("name");
            let mut field = path.clone();
            field.push(name_key.to_string());
            config.merge(TransformerConfig {
                name_reference: vec![NameBackRef {
                    kind: referral.to_string(),
                    version: version.to_string(),
                    group: String::new(),
                    field_specs: vec![spec(&field)],
                }],
                ..TransformerConfig::default()
            });
        }
        if let Some(reference) = property.get("$ref").and_then(Value::as_str) {
            let target = reference
                .strip_prefix("#/definitions/")
                .unwrap_or(reference);
            collect(definitions, target, kind, path, config, depth + 1);
        }
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_refs_become_name_references() {
        let text = r#"{
          "example.com/v1.MyKind": {"properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {},
            "spec": {"$ref": "example.com/v1.MyKindSpec"}}},
          "example.com/v1.MyKindSpec": {"properties": {
            "secretRef": {"x-kubernetes-object-ref-api-version": "v1", "x-kubernetes-object-ref-kind": "Secret"},
            "selector": {"x-kubernetes-label-selector": ""}}}
        }"#;
        let config = references(text, "crd.json").expect("parses");
        let secret = config
            .name_reference
            .iter()
            .find(|r| r.kind == "Secret")
            .expect("a Secret reference");
        assert_eq!(secret.field_specs[0].path, "spec/secretRef/name");
        assert_eq!(secret.field_specs[0].kind, "MyKind");
        assert_eq!(config.common_labels[0].path, "spec/selector");
    }
}
