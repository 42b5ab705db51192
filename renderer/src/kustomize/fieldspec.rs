//! Field specs: where in which kinds a transformer writes, as kustomize configures them.

use serde_json::{Map, Value};

/// A path (segments split by `/`, `x[]` meaning every item of list `x`) in objects of a kind.
#[derive(Debug, Clone, Copy)]
pub struct FieldSpec {
    /// Kind the spec applies to; `None` for every kind.
    pub kind: Option<&'static str>,
    /// Slash-separated path.
    pub path: &'static str,
    /// Create missing maps on the way.
    pub create: bool,
}

impl FieldSpec {
    /// A spec for every kind.
    pub const fn any(path: &'static str, create: bool) -> Self {
        Self {
            kind: None,
            path,
            create,
        }
    }

    /// A spec for one kind.
    pub const fn of(kind: &'static str, path: &'static str, create: bool) -> Self {
        Self {
            kind: Some(kind),
            path,
            create,
        }
    }

    /// Whether the spec applies to objects of `kind`.
    pub fn applies_to(&self, kind: &str) -> bool {
        self.kind.is_none_or(|k| k == kind)
    }

    /// Calls `f` on every value at the path, creating the last map when `create` is set.
    pub fn visit(&self, object: &mut Value, f: &mut dyn FnMut(&mut Value)) {
        visit_path(object, self.path, self.create, f);
    }
}

/// Calls `f` on every value at a slash-separated path (`x[]` for every item of list `x`).
pub fn visit_path(object: &mut Value, path: &str, create: bool, f: &mut dyn FnMut(&mut Value)) {
    visit(object, Some(path), create, f);
}

/// Walks the rest of a path segment by segment, without allocating.
fn visit(value: &mut Value, path: Option<&str>, create: bool, f: &mut dyn FnMut(&mut Value)) {
    let Some(path) = path else {
        f(value);
        return;
    };
    let (first, rest) = match path.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (path, None),
    };
    let Some(map) = value.as_object_mut() else {
        return;
    };
    if let Some(list_field) = first.strip_suffix("[]") {
        if let Some(Value::Array(items)) = map.get_mut(list_field) {
            for item in items {
                visit(item, rest, create, f);
            }
        }
        return;
    }
    if let Some(next) = map.get_mut(first).filter(|v| !v.is_null()) {
        visit(next, rest, create, f);
        return;
    }
    if create {
        map.insert(first.to_string(), Value::Object(Map::new()));
        if let Some(next) = map.get_mut(first) {
            visit(next, rest, create, f);
        }
    }
}

/// Paths of pod specs in the workload kinds.
pub fn pod_spec_paths(kind: &str) -> Option<&'static str> {
    match kind {
        "Pod" => Some("spec"),
        "Deployment"
        | "ReplicaSet"
        | "DaemonSet"
        | "StatefulSet"
        | "Job"
        | "ReplicationController" => Some("spec/template/spec"),
        "CronJob" => Some("spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}
