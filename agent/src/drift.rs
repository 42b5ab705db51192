//! Drift: the fields a bundle sets whose live value differs. Only what the bundle sets is
//! compared, so defaults and fields the server fills in are never drift; `status` is not
//! compared, nor metadata other than labels and annotations; `diff.comparePatches` masks
//! more (JSON pointers, and `remove` operations).
//!
//! The API server stores what it is given in its own form, and that is not drift: a
//! quantity may be rewritten (`cpu: 1` is stored as `"1"`, `1024Mi` as `1Gi`), an empty
//! value dropped (`args: []`, `nodeSelector: {}`, `hostNetwork: false`), a Secret's
//! `stringData` moved into `data`. What this comparison cannot know (a custom resource's
//! field pruned by its schema, say) the agent asks the server with a dry-run apply before
//! calling it drift ([`settled_paths`]).

use base64::Engine;
use fleet_api::ComparePatch;
use fleet_objects::quantity;
use serde_json::Value;

/// JSON pointers of the fields of `desired` that `live` does not hold, ignoring the ones
/// the matching compare patches mask.
pub fn drifted_paths(desired: &Value, live: &Value, masks: &[ComparePatch]) -> Vec<String> {
    let ignored = ignored_pointers(desired, masks);
    let mut out = Vec::new();
    let is_secret = desired.get("kind").and_then(Value::as_str) == Some("Secret")
        && desired.get("apiVersion").and_then(Value::as_str) == Some("v1");
    if let Some(fields) = desired.as_object() {
        for (key, value) in fields {
            match key.as_str() {
                "apiVersion" | "kind" | "status" => {}
                "metadata" => {
                    for part in ["labels", "annotations"] {
                        if let Some(wanted) = value.get(part) {
                            let pointer = format!("/metadata/{part}");
                            compare(wanted, live.pointer(&pointer), &pointer, &ignored, &mut out);
                        }
                    }
                }
                // The server keeps a Secret's stringData in data, base64-encoded.
                "stringData" if is_secret => {
                    compare_string_data(value, live.get("data"), &ignored, &mut out)
                }
                _ => {
                    let pointer = format!("/{}", escape(key));
                    compare(value, live.get(key), &pointer, &ignored, &mut out);
                }
            }
        }
    }
    out
}

/// Of the `paths` found drifted, those where `would_apply` (what a dry-run apply of the
/// desired object returned) differs from `live`: at the others the server already holds
/// what applying would write, in its own form.
pub fn settled_paths(paths: Vec<String>, would_apply: &Value, live: &Value) -> Vec<String> {
    paths
        .into_iter()
        .filter(|path| would_apply.pointer(path) != live.pointer(path))
        .collect()
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn masked(pointer: &str, ignored: &[String]) -> bool {
    ignored
        .iter()
        .any(|i| pointer == i || pointer.starts_with(&format!("{i}/")))
}

fn compare(
    wanted: &Value,
    live: Option<&Value>,
    pointer: &str,
    ignored: &[String],
    out: &mut Vec<String>,
) {
    if masked(pointer, ignored) {
        return;
    }
    match (wanted, live) {
        (Value::Object(fields), Some(Value::Object(_))) => {
            for (key, value) in fields {
                let child = format!("{pointer}/{}", escape(key));
                compare(value, live.and_then(|l| l.get(key)), &child, ignored, out);
            }
        }
        (wanted, live) if holds(wanted, live) => {}
        _ => out.push(pointer.to_string()),
    }
}

/// Compares a Secret's `stringData` with the `data` the server keeps it in.
fn compare_string_data(
    wanted: &Value,
    data: Option<&Value>,
    ignored: &[String],
    out: &mut Vec<String>,
) {
    let Some(fields) = wanted.as_object() else {
        return;
    };
    for (key, value) in fields {
        let pointer = format!("/stringData/{}", escape(key));
        if masked(&pointer, ignored) {
            return;
        }
        let decoded = data
            .and_then(|d| d.get(key))
            .and_then(Value::as_str)
            .and_then(|text| base64::engine::general_purpose::STANDARD.decode(text).ok());
        if decoded.as_deref() != value.as_str().map(str::as_bytes) {
            out.push(pointer);
        }
    }
}

/// Whether `live` holds `wanted` as the API server stores it: numbers by value, quantities
/// by value, empty values as absent, list items with whatever the server added to them.
fn holds(wanted: &Value, live: Option<&Value>) -> bool {
    let Some(live) = live else {
        return is_empty(wanted);
    };
    match (wanted, live) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Object(w), Value::Object(l)) => w.iter().all(|(k, v)| holds(v, l.get(k))),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| holds(p, Some(q)))
        }
        (Value::Array(x), Value::Null) => x.is_empty(),
        (Value::String(_) | Value::Number(_), Value::String(stored)) => {
            wanted == live || same_quantity(wanted, stored)
        }
        _ => wanted == live,
    }
}

/// What the API server drops when a field is `omitempty`: null, false, zero, `""`, and
/// empty lists and maps (and maps of nothing but those).
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.values().all(is_empty),
    }
}

/// Whether `stored` is what the API server writes for the quantity `wanted` (a string or
/// a number).
fn same_quantity(wanted: &Value, stored: &str) -> bool {
    let text = match wanted {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return false,
    };
    quantity::canonical(&text).is_some_and(|canonical| canonical == stored)
}

/// The pointers the compare patches that match `desired` mask.
fn ignored_pointers(desired: &Value, masks: &[ComparePatch]) -> Vec<String> {
    let text = |pointer: &str| desired.pointer(pointer).and_then(Value::as_str);
    let applies = |mask: &ComparePatch| {
        let matches = |want: &Option<String>, got: Option<&str>| {
            want.as_deref().is_none_or(|w| Some(w) == got)
        };
        matches(&mask.kind, text("/kind"))
            && matches(&mask.api_version, text("/apiVersion"))
            && matches(&mask.name, text("/metadata/name"))
            && matches(&mask.namespace, text("/metadata/namespace"))
    };
    masks
        .iter()
        .filter(|m| applies(m))
        .flat_map(|m| {
            m.json_pointers.iter().cloned().chain(
                m.operations
                    .iter()
                    .filter(|o| o.op == "remove")
                    .map(|o| o.path.clone()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_fields_the_bundle_sets_count() {
        let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"app": "a"}}, "data": {"mode": "dev", "n": 1}});
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "uid": "x", "resourceVersion": "9", "labels": {"app": "a", "extra": "y"}},
            "data": {"mode": "dev", "n": 1.0, "added": "by someone"}});
        assert!(drifted_paths(&desired, &live, &[]).is_empty());
        let edited =
            json!({"metadata": {"labels": {"app": "b"}}, "data": {"mode": "prod", "n": 1}});
        assert_eq!(
            drifted_paths(&desired, &edited, &[]),
            vec!["/metadata/labels/app", "/data/mode"]
        );
        let mask = ComparePatch {
            kind: Some("ConfigMap".into()),
            json_pointers: vec!["/data/mode".into()],
            ..ComparePatch::default()
        };
        assert_eq!(
            drifted_paths(&desired, &edited, &[mask]),
            vec!["/metadata/labels/app"]
        );
    }

    #[test]
    fn the_servers_own_forms_are_not_drift() {
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "annotations": {}},
            "spec": {"template": {"metadata": {"annotations": {}}, "spec": {
                "nodeSelector": {}, "hostNetwork": false,
                "containers": [{"name": "web", "args": [], "env": [],
                    "resources": {"requests": {"cpu": 0.5, "memory": "1024Mi"}, "limits": {"cpu": 1}}}]}}}});
        let stored = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"template": {"metadata": {}, "spec": {
                "containers": [{"name": "web", "imagePullPolicy": "Always",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1"}}}]}}}});
        assert!(drifted_paths(&desired, &stored, &[]).is_empty());
        let mut edited = stored.clone();
        edited["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] =
            json!("2");
        assert_eq!(
            drifted_paths(&desired, &edited, &[]),
            vec!["/spec/template/spec/containers"]
        );
    }

    #[test]
    fn a_secrets_string_data_is_compared_with_its_data() {
        let desired =
            json!({"apiVersion": "v1", "kind": "Secret", "stringData": {"user": "admin"}});
        let stored = json!({"apiVersion": "v1", "kind": "Secret", "data": {"user": "YWRtaW4="}});
        assert!(drifted_paths(&desired, &stored, &[]).is_empty());
        let changed = json!({"data": {"user": "cm9vdA=="}});
        assert_eq!(
            drifted_paths(&desired, &changed, &[]),
            vec!["/stringData/user"]
        );
    }

    #[test]
    fn paths_where_a_dry_run_would_write_what_is_there_are_settled() {
        let live = json!({"spec": {"size": 3, "pruned": null}});
        let would_apply = json!({"spec": {"size": 3}});
        let paths = vec!["/spec/unknownField".to_string(), "/spec/size".to_string()];
        assert!(settled_paths(paths, &would_apply, &live).is_empty());
        let drifted = json!({"spec": {"size": 4}});
        assert_eq!(
            settled_paths(vec!["/spec/size".to_string()], &would_apply, &drifted),
            vec!["/spec/size"]
        );
    }

    #[test]
    fn list_items_may_gain_server_defaults() {
        let desired = json!({"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}});
        let live = json!({"spec": {"containers": [{"name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent"}]}});
        assert!(drifted_paths(&desired, &live, &[]).is_empty());
        let changed = json!({"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}});
        assert_eq!(
            drifted_paths(&desired, &changed, &[]),
            vec!["/spec/containers"]
        );
    }
}

/// A JSON merge patch (RFC 7386) that would bring the desired object to what `live` holds
/// at the drifted `paths` (JSON pointers): their live values, `null` where live has none.
/// Reported, as a string, in a modified resource's `patch`, as Fleet reports it.
pub fn live_patch(live: &Value, paths: &[String]) -> Value {
    let mut patch = Value::Object(serde_json::Map::new());
    for path in paths {
        let segments: Vec<String> = path
            .split('/')
            .skip(1)
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect();
        let Some((last, parents)) = segments.split_last() else {
            continue;
        };
        let value = live.pointer(path).cloned().unwrap_or(Value::Null);
        insert_at(&mut patch, parents, last, value);
    }
    patch
}

/// Sets `value` at `parents`/`last` in `object`, making the objects on the way; a
/// non-object in the way leaves it unset.
fn insert_at(object: &mut Value, parents: &[String], last: &str, value: Value) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    match parents.split_first() {
        None => {
            map.insert(last.to_string(), value);
        }
        Some((first, rest)) => {
            let child = map
                .entry(first.clone())
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            insert_at(child, rest, last, value);
        }
    }
}

#[cfg(test)]
mod patch_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_patch_holds_the_live_values_of_the_drifted_paths() {
        let live = json!({"data": {"mode": "slow", "a/b": "x"}, "spec": {"replicas": 3}});
        let paths = [
            "/data/mode".to_string(),
            "/data/a~1b".to_string(),
            "/data/gone".to_string(),
        ];
        assert_eq!(
            live_patch(&live, &paths),
            json!({"data": {"mode": "slow", "a/b": "x", "gone": null}})
        );
    }
}
