//! Strategic merge patch, with the merge keys of built-in Kubernetes kinds.
//!
//! Maps merge recursively, `null` deletes a key, lists of built-in kinds merge by their merge
//! key (containers by `name`, volumeMounts by `mountPath`...), other lists are replaced.
//! The directives `$patch: replace|delete`, `$retainKeys`, `$deleteFromPrimitiveList/...` and
//! `$setElementOrder/...` are honoured or dropped as the API server does.

use serde_json::{Map, Value};

/// How lists are merged: with built-in merge keys, or always replaced (custom resources).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListMerge {
    /// Use the merge keys of built-in kinds.
    BuiltIn,
    /// Replace lists wholesale.
    Replace,
}

impl ListMerge {
    /// Built-in merge keys apply to the core API groups only.
    pub fn for_api_version(api_version: &str) -> Self {
        let group = crate::split_api_version(api_version).0;
        let builtin = group.is_empty()
            || !group.contains('.')
            || group.ends_with(".k8s.io") && !group.ends_with(".x-k8s.io");
        if builtin {
            ListMerge::BuiltIn
        } else {
            ListMerge::Replace
        }
    }
}

/// Applies `patch` to `target` in place.
pub fn merge(target: &mut Value, patch: &Value, lists: ListMerge) {
    merge_at(target, patch, lists);
}

fn merge_at(target: &mut Value, patch: &Value, lists: ListMerge) {
    let Value::Object(patch_map) = patch else {
        *target = strip_directives(patch);
        return;
    };
    if patch_map.get("$patch").and_then(Value::as_str) == Some("replace") {
        *target = strip_directives(patch);
        return;
    }
    if !target.is_object() {
        *target = strip_directives(patch);
        return;
    }
    let Some(target_map) = target.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(keep)) = patch_map.get("$retainKeys") {
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        target_map.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (key, value) in patch_map {
        if key.starts_with("$setElementOrder/") || key == "$retainKeys" || key == "$patch" {
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(existing)), Value::Array(remove)) =
                (target_map.get_mut(field), value)
            {
                existing.retain(|item| !remove.contains(item));
            }
            continue;
        }
        match value {
            Value::Null => {
                target_map.remove(key);
            }
            Value::Object(inner)
                if inner.get("$patch").and_then(Value::as_str) == Some("delete") =>
            {
                target_map.remove(key);
            }
            Value::Object(_) => match target_map.get_mut(key) {
                Some(existing) if existing.is_object() => {
                    merge_at(existing, value, lists);
                }
                _ => {
                    target_map.insert(key.clone(), strip_directives(value));
                }
            },
            Value::Array(items) => {
                let merged = match target_map.get_mut(key) {
                    Some(Value::Array(existing)) => {
                        merge_list(key, existing, items, lists);
                        None
                    }
                    _ => Some(Value::Array(
                        items
                            .iter()
                            .filter(|i| !is_directive_item(i))
                            .map(strip_directives)
                            .collect(),
                    )),
                };
                if let Some(new) = merged {
                    target_map.insert(key.clone(), new);
                }
            }
            scalar => {
                target_map.insert(key.clone(), scalar.clone());
            }
        }
    }
}

/// The merge key of a list field of a built-in kind, judged by its name and items.
pub fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    let has = |key: &str| items.iter().any(|i| i.get(key).is_some());
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "resourceClaims" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "volumeDevices" => Some("devicePath"),
        "hostAliases" => Some("ip"),
        "conditions" => Some("type"),
        "topologySpreadConstraints" => Some("topologyKey"),
        "ownerReferences" => Some("uid"),
        "ports" if has("containerPort") => Some("containerPort"),
        "ports" => Some("port"),
        _ => DECLARED
            .iter()
            .find(|(name, key)| *name == field && has(key))
            .map(|(_, key)| *key),
    }
}

/// The other list fields kube-apiserver 1.37's OpenAPI document gives a merge key
/// (`x-kubernetes-patch-merge-key`; `hub/tests/merge_keys.rs` holds the table to it),
/// merged so when their items carry the key: a field of the same name elsewhere without
/// one (Endpoints' `addresses`) is replaced as before.
const DECLARED: [(&str, &str); 19] = [
    ("addresses", "type"),
    ("allocatedResourcesStatus", "name"),
    ("drivers", "name"),
    ("evictionResponders", "name"),
    ("healthConditions", "status"),
    ("hostIPs", "ip"),
    ("mapping", "name"),
    ("matchConditions", "name"),
    ("nodeAllocatableResourceClaimStatuses", "resourceClaimName"),
    ("overhead", "name"),
    ("podIPs", "ip"),
    ("reservedFor", "uid"),
    ("resourceClaimStatuses", "name"),
    ("schedulingGates", "name"),
    ("secrets", "name"),
    ("storageHealth", "name"),
    ("variables", "name"),
    ("webhooks", "name"),
    ("x-kubernetes-validations", "rule"),
];

/// Primitive lists that the API server merges as sets.
pub fn is_set_list(field: &str) -> bool {
    field == "finalizers"
}

fn merge_list(field: &str, existing: &mut Vec<Value>, patch: &[Value], lists: ListMerge) {
    if lists == ListMerge::Replace {
        *existing = patch.iter().map(strip_directives).collect();
        return;
    }
    if patch
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *existing = patch
            .iter()
            .filter(|i| !is_directive_item(i))
            .map(strip_directives)
            .collect();
        return;
    }
    if is_set_list(field) {
        for item in patch {
            if !existing.contains(item) {
                existing.push(item.clone());
            }
        }
        return;
    }
    let objects = patch.iter().all(Value::is_object) && existing.iter().all(Value::is_object);
    let key = merge_key(field, patch);
    let Some(key) = key.filter(|_| objects) else {
        *existing = patch.iter().map(strip_directives).collect();
        return;
    };
    let mut remaining: Vec<Option<Value>> =
        std::mem::take(existing).into_iter().map(Some).collect();
    let mut from_patch = Vec::new();
    for item in patch {
        let Some(id) = item.get(key) else {
            from_patch.push(strip_directives(item));
            continue;
        };
        let position = remaining
            .iter()
            .position(|e| e.as_ref().is_some_and(|e| e.get(key) == Some(id)));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(index), true) => remaining[index] = None,
            (None, true) => {}
            (Some(index), false) => {
                if let Some(slot) = remaining[index].as_mut() {
                    merge_at(slot, item, lists);
                }
            }
            (None, false) => from_patch.push(strip_directives(item)),
        }
    }
    let kept = remaining.into_iter().flatten();
    *existing = kept.chain(from_patch).collect();
}

fn is_directive_item(item: &Value) -> bool {
    item.as_object()
        .is_some_and(|m| m.len() == 1 && m.contains_key("$patch"))
}

/// A copy of a patch value without `$`-directives, as stored when there is nothing to merge.
pub fn strip_directives(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                if k.starts_with('$') || v.is_null() {
                    continue;
                }
                out.insert(k.clone(), strip_directives(v));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merges_containers_by_name_and_replaces_args() {
        let mut target = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1", "args": ["x", "y"]},
            {"name": "b", "image": "b:1"}
        ]}});
        let patch = json!({"spec": {"containers": [
            {"name": "b", "image": "b:2"},
            {"name": "c", "image": "c:1"},
            {"name": "a", "args": ["z"]}
        ]}});
        merge(&mut target, &patch, ListMerge::BuiltIn);
        assert_eq!(
            target,
            json!({"spec": {"containers": [
                {"name": "a", "image": "a:1", "args": ["z"]},
                {"name": "b", "image": "b:2"},
                {"name": "c", "image": "c:1"}
            ]}})
        );
    }

    #[test]
    fn null_deletes_and_patch_delete_removes_list_items() {
        let mut target = json!({"a": 1, "b": 2, "env": [{"name": "X"}, {"name": "Y"}]});
        let patch = json!({"a": null, "env": [{"name": "X", "$patch": "delete"}]});
        merge(&mut target, &patch, ListMerge::BuiltIn);
        assert_eq!(target, json!({"b": 2, "env": [{"name": "Y"}]}));
    }

    #[test]
    fn replace_directive_and_custom_resources_replace() {
        let mut target = json!({"m": {"a": 1, "b": 2}, "l": [{"name": "a", "v": 1}]});
        let patch = json!({"m": {"$patch": "replace", "c": 3}, "l": [{"name": "a"}]});
        merge(&mut target, &patch, ListMerge::Replace);
        assert_eq!(target, json!({"m": {"c": 3}, "l": [{"name": "a"}]}));
    }

    #[test]
    fn service_ports_merge_by_port() {
        let mut target = json!({"ports": [{"port": 80, "name": "http"}]});
        let patch = json!({"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]});
        merge(&mut target, &patch, ListMerge::BuiltIn);
        assert_eq!(
            target,
            json!({"ports": [{"port": 80, "name": "http", "targetPort": 8080}, {"port": 443}]})
        );
    }

    #[test]
    fn groups_decide_list_merging() {
        assert_eq!(ListMerge::for_api_version("apps/v1"), ListMerge::BuiltIn);
        assert_eq!(ListMerge::for_api_version("v1"), ListMerge::BuiltIn);
        assert_eq!(
            ListMerge::for_api_version("networking.k8s.io/v1"),
            ListMerge::BuiltIn
        );
        assert_eq!(
            ListMerge::for_api_version("cert-manager.io/v1"),
            ListMerge::Replace
        );
    }
}
