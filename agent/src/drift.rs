//! Drift: the fields a bundle sets whose live value differs. Only what the bundle sets is
//! compared, so defaults and fields the server fills in are never drift; `status` is not
//! compared, nor metadata other than labels and annotations; `diff.comparePatches` masks
//! more (JSON pointers, and `remove` operations).

use fleet_api::ComparePatch;
use serde_json::Value;

/// JSON pointers of the fields of `desired` that `live` does not hold, ignoring the ones
/// the matching compare patches mask.
pub fn drifted_paths(desired: &Value, live: &Value, masks: &[ComparePatch]) -> Vec<String> {
    let ignored = ignored_pointers(desired, masks);
    let mut out = Vec::new();
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
                _ => {
                    let pointer = format!("/{}", escape(key));
                    compare(value, live.get(key), &pointer, &ignored, &mut out);
                }
            }
        }
    }
    out
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn compare(
    wanted: &Value,
    live: Option<&Value>,
    pointer: &str,
    ignored: &[String],
    out: &mut Vec<String>,
) {
    if ignored
        .iter()
        .any(|i| pointer == i || pointer.starts_with(&format!("{i}/")))
    {
        return;
    }
    match (wanted, live) {
        (Value::Object(fields), Some(Value::Object(_))) => {
            for (key, value) in fields {
                let child = format!("{pointer}/{}", escape(key));
                compare(value, live.and_then(|l| l.get(key)), &child, ignored, out);
            }
        }
        (wanted, Some(live)) if same(wanted, live) => {}
        _ => out.push(pointer.to_string()),
    }
}

/// Equal, with numbers compared by value (`1` and `1.0`) as the API server may rewrite them.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_subset(p, q))
        }
        _ => a == b,
    }
}

/// Whether `live` holds every field `wanted` sets (list items gain defaults on the server).
fn same_subset(wanted: &Value, live: &Value) -> bool {
    match (wanted, live) {
        (Value::Object(w), Value::Object(l)) => w
            .iter()
            .all(|(k, v)| l.get(k).is_some_and(|lv| same_subset(v, lv))),
        _ => same(wanted, live),
    }
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
