//! The fields of built-in kinds that Kubernetes refuses to change once an object exists:
//! a workload's selector, a Job's template, a StatefulSet's spec beyond the fields it lets
//! change, a PersistentVolumeClaim's spec, a Secret's type, an `immutable` ConfigMap's or
//! Secret's data, a Service's cluster IP. An update that changes one gets a 422 naming the
//! field, as from kube-apiserver, which is what `helm upgrade --force` and Fleet's `force`
//! exist for.

use serde_json::Value;

use crate::status::Cause;

/// The StatefulSet spec fields an update may change.
const STATEFULSET_MUTABLE: [&str; 6] = [
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

/// What makes the update of `old` to `new` (a `group`/`kind` built-in) invalid.
pub(crate) fn causes(group: &str, kind: &str, old: &Value, new: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let changed = |pointer: &str| old.pointer(pointer) != new.pointer(pointer);
    let mut immutable = |field: &str, pointer: &str| {
        if changed(pointer) {
            causes.push(invalid(field, new.pointer(pointer)));
        }
    };
    match (group, kind) {
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") => {
            immutable("spec.selector", "/spec/selector");
        }
        ("apps", "StatefulSet") => {
            let frozen = |spec: Option<&Value>| -> Value {
                let mut spec = spec.cloned().unwrap_or_default();
                if let Some(map) = spec.as_object_mut() {
                    map.retain(|key, _| !STATEFULSET_MUTABLE.contains(&key.as_str()));
                }
                spec
            };
            if frozen(old.get("spec")) != frozen(new.get("spec")) {
                causes.push(Cause {
                    kind: "FieldValueForbidden".into(),
                    message: format!(
                        "Forbidden: updates to statefulset spec for fields other than {} are forbidden",
                        quoted_list(&STATEFULSET_MUTABLE)
                    ),
                    field: "spec".into(),
                });
            }
        }
        ("batch", "Job") => {
            immutable("spec.selector", "/spec/selector");
            immutable("spec.template", "/spec/template");
            immutable("spec.completions", "/spec/completions");
        }
        ("", "PersistentVolumeClaim") => {
            let frozen = |spec: Option<&Value>| -> Value {
                let mut spec = spec.cloned().unwrap_or_default();
                if let Some(map) = spec.as_object_mut() {
                    map.remove("volumeAttributesClassName");
                    if let Some(resources) = map.get_mut("resources").and_then(Value::as_object_mut)
                    {
                        resources.remove("requests");
                    }
                }
                spec
            };
            if frozen(old.get("spec")) != frozen(new.get("spec")) {
                causes.push(Cause {
                    kind: "FieldValueForbidden".into(),
                    message: "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims".into(),
                    field: "spec".into(),
                });
            }
        }
        ("", "Secret" | "ConfigMap") => {
            if kind == "Secret" {
                immutable("type", "/type");
            }
            if old.get("immutable") == Some(&Value::Bool(true)) {
                for (field, pointer) in [
                    ("data", "/data"),
                    ("binaryData", "/binaryData"),
                    ("immutable", "/immutable"),
                ] {
                    if changed(pointer) {
                        causes.push(Cause {
                            kind: "FieldValueForbidden".into(),
                            message: "Forbidden: field is immutable when `immutable` is set".into(),
                            field: field.into(),
                        });
                    }
                }
            }
        }
        ("", "Service") => {
            let ip = |object: &Value| {
                object
                    .pointer("/spec/clusterIP")
                    .and_then(Value::as_str)
                    .filter(|ip| !ip.is_empty())
                    .map(String::from)
            };
            if let (Some(before), Some(after)) = (ip(old), ip(new)) {
                if before != after {
                    causes.push(invalid("spec.clusterIP", new.pointer("/spec/clusterIP")));
                }
            }
        }
        _ => {}
    }
    causes
}

/// `field` changed to `value`, which it may not.
fn invalid(field: &str, value: Option<&Value>) -> Cause {
    let shown = value.map_or_else(|| "null".to_string(), Value::to_string);
    Cause {
        kind: "FieldValueInvalid".into(),
        message: format!("Invalid value: {shown}: field is immutable"),
        field: field.into(),
    }
}

/// `'a', 'b' and 'c'`, as kube-apiserver lists fields.
fn quoted_list(fields: &[&str]) -> String {
    let quoted: Vec<String> = fields.iter().map(|f| format!("'{f}'")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_and_job_templates_are_fixed_but_replicas_are_not() {
        let deployment = |app: &str, replicas: i64| json!({"spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}}}});
        assert!(causes(
            "apps",
            "Deployment",
            &deployment("a", 1),
            &deployment("a", 3)
        )
        .is_empty());
        let found = causes(
            "apps",
            "Deployment",
            &deployment("a", 1),
            &deployment("b", 1),
        );
        assert_eq!(found[0].field, "spec.selector");
        let job = |image: &str| json!({"spec": {"template": {"spec": {"containers": [{"image": image}]}}}});
        assert_eq!(
            causes("batch", "Job", &job("a"), &job("b"))[0].field,
            "spec.template"
        );
    }

    #[test]
    fn statefulsets_change_only_the_fields_kubernetes_allows() {
        let set = |replicas: i64, service: &str| json!({"spec": {"replicas": replicas, "serviceName": service}});
        assert!(causes("apps", "StatefulSet", &set(1, "a"), &set(2, "a")).is_empty());
        let found = causes("apps", "StatefulSet", &set(1, "a"), &set(1, "b"));
        assert!(
            found[0].message.ends_with(
                "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
            ),
            "{}",
            found[0].message
        );
    }

    #[test]
    fn immutable_config_maps_keep_their_data() {
        let map =
            |value: &str, immutable: bool| json!({"immutable": immutable, "data": {"k": value}});
        assert!(causes("", "ConfigMap", &map("a", false), &map("b", false)).is_empty());
        assert!(causes("", "ConfigMap", &map("a", false), &map("b", true)).is_empty());
        let found = causes("", "ConfigMap", &map("a", true), &map("b", true));
        assert_eq!(found[0].field, "data");
        assert!(!causes("", "ConfigMap", &map("a", true), &map("a", false)).is_empty());
    }
}
