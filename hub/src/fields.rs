//! Field sets in the `FieldsV1` form of `metadata.managedFields`: which leaf fields an
//! object sets, keyed as Kubernetes keys them (`f:name`, `k:{"name":"web"}`, `v:"x"`, `.`).

use std::collections::BTreeSet;

use fleet_objects::smp;
use serde_json::{Map, Value};

/// One path of path elements, e.g. `["f:spec", "f:replicas"]`.
pub(crate) type FieldPath = Vec<String>;

/// How lists are keyed: by field-name rules for built-in kinds, atomic for custom ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lists {
    /// Built-in kinds: merge keys by field name (`containers` by `name`...).
    BuiltIn,
    /// Custom resources: every list is atomic.
    Atomic,
}

/// A set of leaf paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet(pub BTreeSet<FieldPath>);

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
    pub(crate) fn of(object: &Value, lists: Lists) -> Self {
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
    pub(crate) fn from_v1(tree: &Value) -> Self {
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

    /// The `fieldsV1` tree. The paths are sorted, so those under one element follow each
    /// other: each node is made once, from the run of paths under it.
    pub(crate) fn to_v1(&self) -> Value {
        let paths: Vec<&[String]> = self.0.iter().map(Vec::as_slice).collect();
        Value::Object(subtree(&paths, 0))
    }

    /// Whether nothing is in the set.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether [`FieldSet::from_v1`] of `tree` holds `path`, found by walking the tree
/// rather than making the set: an entry of `managedFields` is asked about a few paths on
/// most writes, and only changed on some.
pub(crate) fn v1_holds(tree: &Value, path: &[String]) -> bool {
    let mut node = tree;
    for key in path {
        match node.as_object().and_then(|children| children.get(key)) {
            Some(child) => node = child,
            None => return false,
        }
    }
    // A leaf: the set holds the paths of nodes without children.
    !path.is_empty() && node.as_object().is_none_or(|children| children.is_empty())
}

/// The node at `depth` of `paths`, which share their first `depth` elements.
fn subtree(paths: &[&[String]], depth: usize) -> Map<String, Value> {
    let mut node = Map::new();
    let mut rest = paths;
    while let Some((first, tail)) = rest.split_first() {
        let Some(element) = first.get(depth) else {
            // A path that ends here: the node itself.
            rest = tail;
            continue;
        };
        let run = rest
            .iter()
            .take_while(|path| path.get(depth) == Some(element))
            .count();
        let (under, after) = rest.split_at(run);
        node.insert(element.clone(), Value::Object(subtree(under, depth + 1)));
        rest = after;
    }
    node
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

/// What a write changed, in [`FieldSet::of`]'s paths: the leaf paths of the new object
/// whose value differs from the old one's, and the leaf paths the old object set that the
/// new one does not. The same as comparing the two objects' field sets, without walking
/// the members the two share (a status write leaves the spec alone, and the reverse).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    /// Set by the new object, to another value than the old one's.
    pub changed: BTreeSet<FieldPath>,
    /// Set by the old object, not by the new one.
    pub removed: BTreeSet<FieldPath>,
}

impl Changes {
    /// The changes from `old` to `new`.
    pub(crate) fn between(old: &Value, new: &Value, lists: Lists) -> Self {
        let mut diff = Diff {
            lists,
            changes: Self::default(),
        };
        let empty = Map::new();
        let skip_top = |key: &str| key == "apiVersion" || key == "kind" || key == "metadata";
        diff.members(
            map_of(Some(old), &empty),
            map_of(Some(new), &empty),
            &[],
            &skip_top,
        );
        let skip_identity = |key: &str| IDENTITY.contains(&key);
        diff.members(
            map_of(old.get("metadata"), &empty),
            map_of(new.get("metadata"), &empty),
            &["f:metadata".to_string()],
            &skip_identity,
        );
        diff.changes
    }

    /// The changes from `old` to `new` of one top-level member, `key`, when a write
    /// changes no other (`None`: the member is absent).
    pub(crate) fn of_member(
        key: &str,
        old: Option<&Value>,
        new: Option<&Value>,
        lists: Lists,
    ) -> Self {
        let mut diff = Diff {
            lists,
            changes: Self::default(),
        };
        match (old, new) {
            (_, Some(new)) => diff.member(key, old, new, &[]),
            (Some(old), None) => {
                let path = child_path(&[], key);
                walk(old, path, lists, key, &mut diff.changes.removed);
            }
            (None, None) => {}
        }
        diff.changes
    }
}

/// A walk of two objects together, gathering [`Changes`].
struct Diff {
    lists: Lists,
    changes: Changes,
}

impl Diff {
    /// The members of two maps at `prefix`, but those `skip` names.
    fn members(
        &mut self,
        old: &Map<String, Value>,
        new: &Map<String, Value>,
        prefix: &[String],
        skip: &dyn Fn(&str) -> bool,
    ) {
        for (key, value, counterpart) in crate::json::zip_members(new, old, skip) {
            self.member(key, counterpart, value, prefix);
        }
        for (key, value) in old.iter().filter(|(key, _)| !skip(key)) {
            if !new.contains_key(key) {
                let path = child_path(prefix, key);
                walk(value, path, self.lists, key, &mut self.changes.removed);
            }
        }
    }

    /// One member, `key`, at `prefix`: nothing when both objects hold the same value;
    /// the members of two maps one by one; otherwise the field sets of the two values.
    fn member(&mut self, key: &str, old: Option<&Value>, new: &Value, prefix: &[String]) {
        if old.is_some_and(|old| crate::json::equal(old, new)) {
            return;
        }
        match (old, new) {
            (Some(Value::Object(old)), Value::Object(new))
                if !old.is_empty() && !new.is_empty() =>
            {
                self.members(old, new, &child_path(prefix, key), &|_| false);
            }
            _ => {
                let path = child_path(prefix, key);
                let mut new_paths = BTreeSet::new();
                walk(new, path.clone(), self.lists, key, &mut new_paths);
                let mut old_paths = BTreeSet::new();
                if let Some(old) = old {
                    walk(old, path, self.lists, key, &mut old_paths);
                }
                // Each path leads to the member first: the rest is read from the two values.
                let depth = prefix.len() + 1;
                for path in &new_paths {
                    let rest = path.get(depth..).unwrap_or_default();
                    let before = old.and_then(|old| value_at(old, rest));
                    if !crate::json::options_equal(before, value_at(new, rest)) {
                        self.changes.changed.insert(path.clone());
                    }
                }
                let removed = old_paths.difference(&new_paths).cloned();
                self.changes.removed.extend(removed);
            }
        }
    }
}

/// The members of `value` when it is a map, else none.
fn map_of<'a>(value: Option<&'a Value>, empty: &'a Map<String, Value>) -> &'a Map<String, Value> {
    value.and_then(Value::as_object).unwrap_or(empty)
}

fn child_path(prefix: &[String], key: &str) -> FieldPath {
    let mut path = prefix.to_vec();
    path.push(format!("f:{key}"));
    path
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
pub(crate) fn value_at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
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
pub(crate) fn remove_at(object: &mut Value, path: &[String]) {
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
    use serde_json::json;

    #[test]
    fn a_tree_holds_exactly_the_paths_its_set_holds() {
        let tree = json!({"f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}}},
            "f:data": {}});
        let set = FieldSet::from_v1(&tree);
        let path = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<FieldPath>();
        let asked = [
            path(&["f:metadata", "f:labels", "f:app"]),
            path(&["f:spec", "f:replicas"]),
            path(&["f:spec", "f:containers", "k:{\"name\":\"web\"}", "."]),
            path(&["f:data"]),
            // Not leaves, too deep, or absent.
            path(&["f:spec"]),
            path(&["f:spec", "f:containers", "k:{\"name\":\"web\"}"]),
            path(&["f:data", "f:key"]),
            path(&["f:status"]),
            path(&[]),
        ];
        for path in &asked {
            assert_eq!(v1_holds(&tree, path), set.0.contains(path), "{path:?}");
        }
        assert_eq!(asked.iter().filter(|p| v1_holds(&tree, p)).count(), 4);
    }

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

    /// What [`Changes::between`] must equal: both objects' whole field sets, compared.
    fn compared_sets(old: &Value, new: &Value, lists: Lists) -> Changes {
        let (old_set, new_set) = (FieldSet::of(old, lists), FieldSet::of(new, lists));
        Changes {
            changed: (new_set.0.iter())
                .filter(|p| value_at(old, p) != value_at(new, p))
                .cloned()
                .collect(),
            removed: old_set.0.difference(&new_set.0).cloned().collect(),
        }
    }

    /// Every node of `value` (maps' members and lists' items), as JSON pointers.
    fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    let pointer = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                    out.push(pointer.clone());
                    pointers(child, pointer, out);
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    let pointer = format!("{at}/{index}");
                    out.push(pointer.clone());
                    pointers(child, pointer, out);
                }
            }
            _ => {}
        }
    }

    /// `object` with one node changed, as `choice` picks (a deterministic sequence).
    fn mutated(object: &Value, choice: &mut u64) -> Value {
        let mut next = || {
            *choice = choice
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (*choice >> 33) as usize
        };
        let mut all = Vec::new();
        pointers(object, String::new(), &mut all);
        let mut copy = object.clone();
        let pointer = &all[next() % all.len()];
        let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        let replacements = [
            json!("changed"),
            json!(7),
            json!({}),
            json!([]),
            json!({"name": "web", "image": "other"}),
            json!(["a", "c"]),
            json!({"fresh": {"deep": true}}),
        ];
        let replacement = replacements[next() % replacements.len()].clone();
        match next() % 3 {
            0 => {
                if let Some(node) = copy.pointer_mut(pointer) {
                    *node = replacement;
                }
            }
            1 => match copy.pointer_mut(parent) {
                Some(Value::Object(map)) => {
                    map.shift_remove(last);
                }
                Some(Value::Array(items)) => {
                    if let Ok(index) = last.parse::<usize>() {
                        items.remove(index);
                    }
                }
                _ => {}
            },
            _ => match copy.pointer_mut(parent) {
                Some(Value::Object(map)) => {
                    map.insert(format!("added{}", next() % 3), replacement);
                }
                Some(Value::Array(items)) => items.push(replacement),
                _ => {}
            },
        }
        copy
    }

    #[test]
    fn changes_are_what_comparing_whole_field_sets_gives() {
        let base = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "app", "labels": {"app": "web", "tier": "a"},
                "annotations": {"note": "x"}, "finalizers": ["a", "b"],
                "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"replicas": 2, "paused": false, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [
                        {"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]},
                        {"name": "side", "image": "busybox", "args": ["a", "b"]}],
                        "volumes": []}}},
            "data": {"k": "v", "empty": {}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "replicas": 2}});
        let mut choice = 42;
        let mut compared = 0;
        for round in 0..400 {
            let old = mutated(&base, &mut choice);
            let mut new = mutated(&old, &mut choice);
            if round % 3 == 0 {
                new = mutated(&new, &mut choice);
            }
            for lists in [Lists::BuiltIn, Lists::Atomic] {
                let set = FieldSet::of(&new, lists);
                assert_eq!(FieldSet::from_v1(&set.to_v1()), set, "{new}");
                for (a, b) in [(&old, &new), (&new, &old), (&base, &new)] {
                    assert_eq!(
                        Changes::between(a, b, lists),
                        compared_sets(a, b, lists),
                        "from {a}\nto {b}"
                    );
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 2400);
        let not_objects = [
            json!(null),
            json!([1]),
            json!({"metadata": "text", "spec": 1}),
        ];
        for a in &not_objects {
            for b in not_objects.iter().chain([&base]) {
                assert_eq!(
                    Changes::between(a, b, Lists::BuiltIn),
                    compared_sets(a, b, Lists::BuiltIn)
                );
            }
        }
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
