//! Detection of unknown fields by walking input against a type's JSON schema.
//!
//! serde silently drops unknown keys of structs that use `#[serde(flatten)]`, so strictness
//! is checked separately: the input is walked alongside the schema schemars derives.

use schemars::{JsonSchema, Schema};
use serde_json::Value;

/// Returns the paths (`a.b[2].c`) of every field in `input` that `T` does not define.
pub fn unknown_fields<T: JsonSchema>(input: &Value) -> Vec<String> {
    let root = schemars::schema_for!(T);
    let mut found = Vec::new();
    walk(&root, root.as_value(), input, "", &mut found);
    found
}

fn resolve<'a>(root: &'a Schema, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    for _ in 0..32 {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let pointer = reference.trim_start_matches('#');
        match root.as_value().pointer(pointer) {
            Some(target) => current = target,
            None => break,
        }
    }
    current
}

/// Sub-schemas to consider for a value: the schema itself plus its anyOf/oneOf/allOf parts.
fn alternatives<'a>(root: &'a Schema, schema: &'a Value) -> Vec<&'a Value> {
    let schema = resolve(root, schema);
    let mut out = vec![schema];
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(parts) = schema.get(key).and_then(Value::as_array) {
            for part in parts {
                out.extend(alternatives(root, part));
            }
        }
    }
    out
}

fn walk(root: &Schema, schema: &Value, input: &Value, path: &str, found: &mut Vec<String>) {
    let options = alternatives(root, schema);
    if options
        .iter()
        .any(|s| s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)))
    {
        return;
    }
    match input {
        Value::Object(map) => {
            let with_properties: Vec<&Value> = options
                .iter()
                .copied()
                .filter(|s| s.get("properties").is_some())
                .collect();
            let additional = options
                .iter()
                .find_map(|s| s.get("additionalProperties").filter(|a| a.is_object()));
            for (key, value) in map {
                let child = join(path, key);
                let property = with_properties
                    .iter()
                    .find_map(|s| s.get("properties").and_then(|p| p.get(key)));
                match (property, additional) {
                    (Some(p), _) => walk(root, p, value, &child, found),
                    (None, Some(a)) => walk(root, a, value, &child, found),
                    (None, None) if !with_properties.is_empty() => found.push(child),
                    (None, None) => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = options.iter().find_map(|s| s.get("items")) {
                for (index, item) in items.iter().enumerate() {
                    walk(root, item_schema, item, &format!("{path}[{index}]"), found);
                }
            }
        }
        _ => {}
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FleetYaml;
    use serde_json::json;

    #[test]
    fn finds_unknown_fields_at_every_depth() {
        let input = json!({
            "namespace": "x",
            "bogus": 1,
            "helm": {"values": {"anything": {"goes": true}}, "chartt": "typo"},
            "targetCustomizations": [
                {"name": "a", "clusterSelector": {"matchLabels": {"env": "dev"}, "matchLabel": {}}}
            ]
        });
        let mut unknown = unknown_fields::<FleetYaml>(&input);
        unknown.sort();
        assert_eq!(
            unknown,
            vec![
                "bogus",
                "helm.chartt",
                "targetCustomizations[0].clusterSelector.matchLabel"
            ]
        );
    }

    #[test]
    fn accepts_the_documented_fields() {
        let input = json!({
            "defaultNamespace": "d", "namespace": "n", "labels": {"a": "b"},
            "helm": {"chart": "c", "repo": "r", "version": "1", "releaseName": "x",
                     "values": {"k": 1}, "valuesFiles": ["v.yaml"], "takeOwnership": true,
                     "force": false, "atomic": true, "timeoutSeconds": 10,
                     "valuesFrom": [{"secretKeyRef": {"name": "s", "key": "k"}}]},
            "kustomize": {"dir": "overlays/dev"}, "yaml": {"overlays": ["a"]},
            "dependsOn": [{"name": "other"}, {"selector": {"matchLabels": {"a": "b"}}}],
            "diff": {"comparePatches": [{"kind": "Service", "jsonPointers": ["/spec"]}]},
            "rolloutStrategy": {"maxUnavailable": "10%", "partitions": [{"name": "p"}]},
            "keepResources": true, "paused": true,
            "ignore": {"conditions": [{"type": "Ready"}]},
            "overrideTargets": [{"clusterName": "local"}],
            "namespaceLabels": {"a": "b"}, "correctDrift": {"enabled": true}
        });
        assert_eq!(unknown_fields::<FleetYaml>(&input), Vec::<String>::new());
    }

    /// Fleet spells acronyms in capitals (`json:"disableDNS"`); camelCase would not.
    #[test]
    fn fields_with_acronyms_are_spelled_as_fleet_spells_them() {
        let fleet_yaml = json!({"deleteCRDResources": true,
            "helm": {"disableDNS": true, "disableDependencyUpdate": true}});
        assert_eq!(
            unknown_fields::<FleetYaml>(&fleet_yaml),
            Vec::<String>::new()
        );
        let parsed: FleetYaml = serde_json::from_value(fleet_yaml).expect("fleet.yaml");
        assert_eq!(parsed.options.delete_crd_resources, Some(true));
        assert_eq!(parsed.options.helm.and_then(|h| h.disable_dns), Some(true));
        let gitrepo: crate::GitRepoSpec = serde_json::from_value(json!({"repo": "r",
            "insecureSkipTLSVerify": true, "helmRepoURLRegex": "x"}))
        .expect("GitRepo spec");
        assert!(gitrepo.insecure_skip_tls_verify);
        let deployment: crate::BundleDeploymentSpec = serde_json::from_value(json!({
            "deploymentID": "s-1:a", "stagedDeploymentID": "s-2:b"}))
        .expect("BundleDeployment spec");
        assert_eq!(deployment.staged_deployment_id.as_deref(), Some("s-2:b"));
    }
}
