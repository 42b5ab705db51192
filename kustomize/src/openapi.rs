//! `openapi:`: a schema file telling strategic merge patches how to merge the lists of
//! custom resources (`x-kubernetes-patch-merge-key` and `x-kubernetes-patch-strategy`),
//! as kustomize reads it.

use serde_json::Value;

use fleet_objects::smp::KeyedLists;

/// The merge keys of each kind a schema describes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Schema {
    kinds: Vec<((String, String, String), KeyedLists)>,
}

/// How deep `$ref`s are followed (schemas refer to themselves).
const MAX_DEPTH: usize = 32;

impl Schema {
    /// Reads a schema document (`definitions` keyed by name, each kind's with
    /// `x-kubernetes-group-version-kind`).
    pub(crate) fn from_document(document: &Value) -> Self {
        let definitions = document
            .get("definitions")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut kinds = Vec::new();
        for definition in definitions.values() {
            let Some(Value::Array(gvks)) = definition.get("x-kubernetes-group-version-kind") else {
                continue;
            };
            let mut keys = KeyedLists::default();
            collect(document, definition, &mut Vec::new(), &mut keys, 0);
            for gvk in gvks {
                let text = |k: &str| {
                    gvk.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                kinds.push(((text("group"), text("version"), text("kind")), keys.clone()));
            }
        }
        Self { kinds }
    }

    /// The list merge keys of objects of a group, version and kind, when described.
    pub(crate) fn keys(&self, group: &str, version: &str, kind: &str) -> Option<&KeyedLists> {
        self.kinds
            .iter()
            .find(|((g, v, k), _)| g == group && v == version && k == kind)
            .map(|(_, keys)| keys)
    }
}

/// The definition a `$ref` (`#/definitions/x`) points at.
fn resolve<'d>(document: &'d Value, node: &'d Value) -> &'d Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(reference) => reference
            .strip_prefix("#/definitions/")
            .and_then(|name| document.get("definitions")?.get(name))
            .unwrap_or(node),
        None => node,
    }
}

fn collect(
    document: &Value,
    node: &Value,
    path: &mut Vec<String>,
    keys: &mut KeyedLists,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let node = resolve(document, node);
    if let Some(Value::Object(properties)) = node.get("properties") {
        for (name, property) in properties {
            let property = resolve(document, property);
            path.push(name.clone());
            let strategy = property
                .get("x-kubernetes-patch-strategy")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let (true, Some(key)) = (
                strategy.split(',').any(|s| s == "merge"),
                property
                    .get("x-kubernetes-patch-merge-key")
                    .and_then(Value::as_str),
            ) {
                keys.insert(path.join("/"), key);
            }
            if let Some(items) = property.get("items") {
                collect(document, items, path, keys, depth + 1);
            } else {
                collect(document, property, path, keys, depth + 1);
            }
            path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_keys_follow_refs_through_lists() {
        let document = json!({"definitions": {
            "v1.Mine": {
                "properties": {"spec": {"properties": {"pods": {"$ref": "#/definitions/Pod"}}}},
                "x-kubernetes-group-version-kind": [{"group": "ex.com", "version": "v1", "kind": "Mine"}]
            },
            "Pod": {"properties": {"containers": {
                "type": "array",
                "items": {"$ref": "#/definitions/Container"},
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge"
            }}},
            "Container": {"properties": {"ports": {
                "type": "array",
                "x-kubernetes-patch-merge-key": "containerPort",
                "x-kubernetes-patch-strategy": "merge"
            }}}
        }});
        let schema = Schema::from_document(&document);
        let keys = schema.keys("ex.com", "v1", "Mine").expect("described");
        let mut expected = KeyedLists::default();
        expected.insert("spec/pods/containers", "name");
        expected.insert("spec/pods/containers/ports", "containerPort");
        assert_eq!(keys, &expected);
        assert!(schema.keys("ex.com", "v1", "Other").is_none());
    }
}
