//! Field sets in the `FieldsV1` form of `metadata.managedFields`: which leaf fields an
//! object sets, keyed as Kubernetes keys them (`f:name`, `k:{"name":"web"}`, `v:"x"`, `.`).

use std::collections::BTreeSet;

use fleet_objects::smp;
use serde_json::{json, Map, Value};

/// One path of path elements, e.g. `["f:spec", "f:replicas"]`.
pub type FieldPath = Vec<String>;

/// How lists are keyed: by field-name rules for built-in kinds, atomic for custom ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lists {
    /// Built-in kinds: merge keys by field name (`containers` by `name`...).
    BuiltIn,
    /// Custom resources: every list is atomic.
    Atomic,
}

/// A set of leaf paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet(pub BTreeSet<FieldPath>);

const IDENTITY: [&str; 9] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "deletionTimestamp",
    "selfLink",
];

impl FieldSet {
    /// The leaf fields an object sets, without apiVersion, kind and identity metadata.
    pub fn of(object: &Value, lists: Lists) -> Self {
        let mut set = BTreeSet::new();
        if let Some(map) = object.as_object() {
            for (key, value) in map {
                match key.as_str() {
                    "apiVersion" | "kind" => {}
                    "metadata" => {
                        let members = value.as_object().into_iter().flatten();
                        for (field, child) in
                            members.filter(|(f, _)| !IDENTITY.contains(&f.as_str()))
                        {
                            let path = vec!["f:metadata".into(), format!("f:{field}")];
                            walk(child, path, lists, field, &mut set);
                        }
                    }
                    _ => walk(value, vec![format!("f:{key}")], lists, key, &mut set),
                }
            }
        }
        Self(set)
    }

    /// Parses a `fieldsV1` tree.
    pub fn from_v1(tree: &Value) -> Self {
        let mut set = BTreeSet::new();
        fn visit(tree: &Value, path: &mut FieldPath, set: &mut BTreeSet<FieldPath>) {
            match tree.as_object() {
                Some(children) if !children.is_empty() => {
                    for (key, child) in children {
                        path.push(key.clone());
                        visit(child, path, set);
                        path.pop();
                    }
                }
                _ => {
                    if !path.is_empty() {
                        set.insert(path.clone());
                    }
                }
            }
        }
        visit(tree, &mut Vec::new(), &mut set);
        Self(set)
    }

    /// The `fieldsV1` tree.
    pub fn to_v1(&self) -> Value {
        let mut root = Map::new();
        for path in &self.0 {
            let mut node = &mut root;
            for element in path {
                let child = node.entry(element.clone()).or_insert_with(|| json!({}));
                match child.as_object_mut() {
                    Some(map) => node = map,
                    None => break,
                }
            }
        }
        Value::Object(root)
    }

    /// Whether nothing is in the set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn walk(value: &Value, path: FieldPath, lists: Lists, field: &str, set: &mut BTreeSet<FieldPath>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let mut next = path.clone();
                next.push(format!("f:{key}"));
                walk(child, next, lists, key, set);
            }
        }
        Value::Array(items) if !items.is_empty() => match list_kind(field, items, lists) {
            ListKind::Keyed(key) => {
                for item in items {
                    let mut item_path = path.clone();
                    item_path.push(item_key(item, key));
                    let mut marker = item_path.clone();
                    marker.push(".".into());
                    set.insert(marker);
                    walk(item, item_path, lists, "", set);
                }
            }
            ListKind::Set => {
                for item in items {
                    let mut next = path.clone();
                    next.push(format!("v:{item}"));
                    set.insert(next);
                }
            }
            ListKind::Atomic => {
                set.insert(path);
            }
        },
        _ => {
            set.insert(path);
        }
    }
}

enum ListKind {
    Keyed(&'static str),
    Set,
    Atomic,
}

fn list_kind(field: &str, items: &[Value], lists: Lists) -> ListKind {
    if smp::is_set_list(field) && items.iter().all(Value::is_string) {
        return ListKind::Set;
    }
    if lists == Lists::Atomic {
        return ListKind::Atomic;
    }
    match smp::merge_key(field, items) {
        Some(key) if items.iter().all(|i| i.get(key).is_some()) => ListKind::Keyed(key),
        _ => ListKind::Atomic,
    }
}

fn item_key(item: &Value, key: &str) -> String {
    let mut keyed = Map::new();
    keyed.insert(key.into(), item.get(key).cloned().unwrap_or(Value::Null));
    format!("k:{}", Value::Object(keyed))
}

/// Whether a list item matches a `k:` element.
fn item_matches(item: &Value, element: &str) -> bool {
    let Some(Ok(Value::Object(keys))) = element
        .strip_prefix("k:")
        .map(serde_json::from_str::<Value>)
    else {
        return false;
    };
    keys.iter().all(|(k, v)| item.get(k) == Some(v))
}

/// The value at a path, or `None` if the object does not set it.
pub fn value_at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut current = object;
    for element in path {
        if element == "." {
            return Some(current);
        }
        current = step(current, element)?;
    }
    Some(current)
}

fn step<'a>(value: &'a Value, element: &str) -> Option<&'a Value> {
    if let Some(field) = element.strip_prefix("f:") {
        return value.get(field);
    }
    let items = value.as_array()?;
    if let Some(literal) = element.strip_prefix("v:") {
        let wanted: Value = serde_json::from_str(literal).ok()?;
        return items.iter().find(|i| **i == wanted);
    }
    items.iter().find(|i| item_matches(i, element))
}

/// Removes the field or list item at a path; missing paths are ignored.
pub fn remove_at(object: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let (last, parents) = if last == "." {
        match parents.split_last() {
            Some(split) => split,
            None => return,
        }
    } else {
        (last, parents)
    };
    let mut current = object;
    for element in parents {
        let next = if let Some(field) = element.strip_prefix("f:") {
            current.get_mut(field)
        } else {
            current
                .as_array_mut()
                .and_then(|items| items.iter_mut().find(|i| item_matches(i, element)))
        };
        match next {
            Some(next) => current = next,
            None => return,
        }
    }
    if let Some(field) = last.strip_prefix("f:") {
        if let Some(map) = current.as_object_mut() {
            map.remove(field);
        }
    } else if let Some(items) = current.as_array_mut() {
        let literal = last
            .strip_prefix("v:")
            .and_then(|l| serde_json::from_str::<Value>(l).ok());
        items.retain(|i| match &literal {
            Some(wanted) => i != wanted,
            None => !item_matches(i, last),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_sets_key_containers_by_name_and_round_trip() {
        let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
        let set = FieldSet::of(&object, Lists::BuiltIn);
        let v1 = set.to_v1();
        assert_eq!(
            v1["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"],
            json!({".": {}, "f:image": {}, "f:name": {}})
        );
        assert_eq!(v1["f:metadata"], json!({"f:labels": {"f:app": {}}}));
        assert_eq!(FieldSet::from_v1(&v1), set);
        let image: FieldPath = [
            "f:spec",
            "f:template",
            "f:spec",
            "f:containers",
            "k:{\"name\":\"web\"}",
            "f:image",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(value_at(&object, &image), Some(&json!("nginx")));
        let mut edited = object.clone();
        remove_at(
            &mut edited,
            &image[..5]
                .iter()
                .cloned()
                .chain([".".to_string()])
                .collect::<Vec<_>>(),
        );
        assert_eq!(edited["spec"]["template"]["spec"]["containers"], json!([]));
    }

    #[test]
    fn finalizers_are_a_set_and_custom_lists_are_atomic() {
        let object =
            json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {"items": [{"name": "x"}]}});
        let set = FieldSet::of(&object, Lists::Atomic);
        let v1 = set.to_v1();
        assert_eq!(
            v1["f:metadata"]["f:finalizers"],
            json!({"v:\"a\"": {}, "v:\"b\"": {}})
        );
        assert_eq!(v1["f:spec"]["f:items"], json!({}));
    }
}
