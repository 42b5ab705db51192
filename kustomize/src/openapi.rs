//! Which lists a strategic merge patch merges item by item, and by which keys: from
//! kustomize's built-in Kubernetes schema, or from a kustomization's `openapi:` schema for
//! the kinds it describes.
//!
//! kustomize merges a list by its items only when the schema gives the list the `merge`
//! patch strategy; the keys are its `x-kubernetes-list-map-keys` if it has them, else its
//! `x-kubernetes-patch-merge-key`, else none (a list of scalars merged as a set, as
//! `finalizers`). Kinds no schema describes have no such lists: theirs are replaced.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde_json::Value;

/// The lists of one kind that merge item by item: path (map keys joined by `/`; list items
/// do not count) to merge keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MergeKeys {
    lists: HashMap<String, Vec<String>>,
}

impl MergeKeys {
    /// The merge keys of the list at `path`, when it merges item by item (no keys: its
    /// items are scalars, merged as a set).
    pub(crate) fn at(&self, path: &str) -> Option<&[String]> {
        self.lists.get(path).map(Vec::as_slice)
    }

    fn insert(&mut self, path: String, keys: Vec<String>) {
        self.lists.entry(path).or_insert(keys);
    }
}

/// The merge keys of every kind a schema describes, by group, version and kind.
#[derive(Debug, Clone, Default)]
pub(crate) struct Schema {
    kinds: HashMap<(String, String, String), MergeKeys>,
}

impl Schema {
    /// Reads a schema document: `definitions` keyed by name, each kind's with
    /// `x-kubernetes-group-version-kind`.
    pub(crate) fn from_document(document: &Value) -> Self {
        let mut kinds = HashMap::new();
        let Some(Value::Object(definitions)) = document.get("definitions") else {
            return Self { kinds };
        };
        for (name, definition) in definitions {
            let Some(Value::Array(gvks)) = definition.get("x-kubernetes-group-version-kind") else {
                continue;
            };
            let mut keys = MergeKeys::default();
            let mut on_path = HashSet::from([format!("#/definitions/{name}")]);
            collect(
                document,
                definition,
                &mut Vec::new(),
                &mut on_path,
                &mut keys,
            );
            for gvk in gvks {
                let text = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or_default();
                let id = (text("group"), text("version"), text("kind"));
                kinds.insert(
                    (id.0.to_string(), id.1.to_string(), id.2.to_string()),
                    keys.clone(),
                );
            }
        }
        Self { kinds }
    }

    /// The merge keys of objects of a group, version and kind, when described.
    pub(crate) fn keys(&self, group: &str, version: &str, kind: &str) -> Option<&MergeKeys> {
        self.kinds
            .get(&(group.to_string(), version.to_string(), kind.to_string()))
    }
}

/// The merge keys kustomize's own Kubernetes 1.21.2 schema gives a built-in kind.
pub(crate) fn builtin(api_version: &str, kind: &str) -> Option<&'static MergeKeys> {
    static TABLE: OnceLock<HashMap<(String, String), MergeKeys>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let mut table: HashMap<(String, String), MergeKeys> = HashMap::new();
            for line in BUILTIN.lines().filter(|l| !l.starts_with('#')) {
                let mut fields = line.split('\t');
                let (Some(api_version), Some(kind), Some(path), Some(keys)) =
                    (fields.next(), fields.next(), fields.next(), fields.next())
                else {
                    continue;
                };
                let keys = keys.split(',').filter(|k| !k.is_empty()).map(String::from);
                table
                    .entry((api_version.to_string(), kind.to_string()))
                    .or_default()
                    .insert(path.to_string(), keys.collect());
            }
            table
        })
        .get(&(api_version.to_string(), kind.to_string()))
}

/// `apiVersion`, `kind`, list path and merge keys, one list a line, written from
/// kustomize's schema by `tests::regenerate_builtin_merge_keys`.
const BUILTIN: &str = include_str!("builtin_merge_keys.tsv");

/// The definition a `$ref` (`#/definitions/x`) points at, and the reference.
fn resolve<'d>(document: &'d Value, node: &'d Value) -> (&'d Value, Option<&'d str>) {
    let reference = node.get("$ref").and_then(Value::as_str);
    let target = reference
        .and_then(|r| r.strip_prefix("#/definitions/"))
        .and_then(|name| document.get("definitions")?.get(name));
    (target.unwrap_or(node), reference)
}

/// Walks a definition's properties, recording lists that merge item by item. A `$ref`
/// already being walked is not walked again (schemas refer to themselves).
fn collect(
    document: &Value,
    node: &Value,
    path: &mut Vec<String>,
    on_path: &mut HashSet<String>,
    keys: &mut MergeKeys,
) {
    let Some(Value::Object(properties)) = node.get("properties") else {
        return;
    };
    for (name, property) in properties {
        let (property, own_reference) = resolve(document, property);
        path.push(name.clone());
        let is_list = property.get("type").and_then(Value::as_str) == Some("array");
        let merges = property
            .get("x-kubernetes-patch-strategy")
            .and_then(Value::as_str)
            .is_some_and(|s| s.split(',').any(|s| s == "merge"));
        if is_list && merges {
            keys.insert(path.join("/"), list_keys(property));
        }
        let (child, item_reference) = match property.get("items") {
            Some(items) => resolve(document, items),
            None => (property, None),
        };
        match own_reference.or(item_reference) {
            Some(reference) if on_path.contains(reference) => {}
            Some(reference) => {
                on_path.insert(reference.to_string());
                collect(document, child, path, on_path, keys);
                on_path.remove(reference);
            }
            None => collect(document, child, path, on_path, keys),
        }
        path.pop();
    }
}

/// A merging list's keys: its list-map keys, else its patch merge key, else none.
fn list_keys(property: &Value) -> Vec<String> {
    let strings = |value: &Value| -> Vec<String> {
        match value {
            Value::Array(items) => items
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            Value::String(key) => vec![key.clone()],
            _ => Vec::new(),
        }
    };
    property
        .get("x-kubernetes-list-map-keys")
        .or_else(|| property.get("x-kubernetes-patch-merge-key"))
        .map(strings)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_keys_follow_refs_through_lists_and_stop_at_cycles() {
        let document = json!({"definitions": {
            "v1.Mine": {
                "properties": {"spec": {"properties": {
                    "pods": {"$ref": "#/definitions/Pod"},
                    "finalizers": {"type": "array", "x-kubernetes-patch-strategy": "merge"}
                }}},
                "x-kubernetes-group-version-kind": [{"group": "ex.com", "version": "v1", "kind": "Mine"}]
            },
            "Pod": {"properties": {
                "containers": {
                    "type": "array",
                    "items": {"$ref": "#/definitions/Container"},
                    "x-kubernetes-patch-merge-key": "name",
                    "x-kubernetes-patch-strategy": "merge"
                },
                "replaced": {"type": "array", "x-kubernetes-patch-merge-key": "name"},
                "inner": {"$ref": "#/definitions/Pod"}
            }},
            "Container": {"properties": {"ports": {
                "type": "array",
                "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                "x-kubernetes-patch-merge-key": "containerPort",
                "x-kubernetes-patch-strategy": "merge"
            }}}
        }});
        let schema = Schema::from_document(&document);
        let keys = schema.keys("ex.com", "v1", "Mine").expect("described");
        let names = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(keys.at("spec/pods/containers"), Some(&names(&["name"])[..]));
        assert_eq!(
            keys.at("spec/pods/containers/ports"),
            Some(&names(&["containerPort", "protocol"])[..])
        );
        assert_eq!(keys.at("spec/finalizers"), Some(&[][..]));
        assert_eq!(keys.at("spec/pods/replaced"), None);
        assert_eq!(
            keys.at("spec/pods/inner/containers"),
            None,
            "cycle not walked"
        );
        assert!(schema.keys("ex.com", "v1", "Other").is_none());
    }

    #[test]
    fn kustomizes_own_schema_is_built_in() {
        let deployment = builtin("apps/v1", "Deployment").expect("a built-in kind");
        let names = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            deployment.at("spec/template/spec/containers/ports"),
            Some(&names(&["containerPort", "protocol"])[..])
        );
        assert_eq!(
            deployment.at("spec/template/spec/volumes"),
            Some(&names(&["name"])[..])
        );
        // Kubernetes 1.21 had no scheduling gates: kustomize replaces the list.
        assert_eq!(deployment.at("spec/template/spec/schedulingGates"), None);
        assert!(builtin("autoscaling/v2", "HorizontalPodAutoscaler").is_none());
    }

    /// Writes `builtin_merge_keys.tsv` from kustomize's schema:
    /// `FLEET_KUSTOMIZE_SCHEMA=…/kubernetes-openapi-union-v1.21.2.bundle-v1.json cargo test
    /// -p fleet-kustomize regenerate_builtin_merge_keys -- --ignored` (the file is
    /// gunzipped from `kyaml/openapi/kubernetesapi/data/` in kustomize's repository).
    #[test]
    #[ignore = "needs kustomize's schema, named by FLEET_KUSTOMIZE_SCHEMA"]
    fn regenerate_builtin_merge_keys() {
        let path = std::env::var("FLEET_KUSTOMIZE_SCHEMA").expect("FLEET_KUSTOMIZE_SCHEMA");
        let text = std::fs::read_to_string(path).expect("the schema");
        let document: Value = serde_json::from_str(&text).expect("JSON");
        let schema = Schema::from_document(&document);
        let mut lines = Vec::new();
        for ((group, version, kind), keys) in &schema.kinds {
            if kind.ends_with("List") {
                continue;
            }
            let api_version = match group.as_str() {
                "" => version.clone(),
                group => format!("{group}/{version}"),
            };
            for (path, keys) in &keys.lists {
                lines.push(format!("{api_version}\t{kind}\t{path}\t{}", keys.join(",")));
            }
        }
        lines.sort();
        let header = "# apiVersion, kind, list path, merge keys: the lists kustomize's Kubernetes \
                      1.21.2 schema merges item by item.\n# Written by \
                      openapi::tests::regenerate_builtin_merge_keys; do not edit.\n";
        let out =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/builtin_merge_keys.tsv");
        std::fs::write(out, header.to_string() + &lines.join("\n") + "\n").expect("written");
    }
}
