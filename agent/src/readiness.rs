//! Whether an applied object is ready, as Fleet's agent judges it: workloads by their
//! rollout counts, Jobs by completion, anything else by a `Ready` condition if it has one.

use std::collections::BTreeMap;

use serde_json::Value;

/// Whether `condition` has every field of `entry` with its value.
fn matches_entry(condition: &Value, entry: &BTreeMap<String, String>) -> bool {
    entry
        .iter()
        .all(|(key, value)| condition.get(key).and_then(Value::as_str) == Some(value))
}

fn int(object: &Value, pointer: &str) -> Option<i64> {
    object.pointer(pointer).and_then(Value::as_i64)
}

fn condition(object: &Value, kind: &str) -> Option<String> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        .and_then(|c| c.get("status").and_then(Value::as_str))
        .map(String::from)
}

/// `None` when `object` (as the cluster holds it) is ready, else why not. Conditions that
/// match an entry of `ignored` (every field of the entry equal) are not looked at, as
/// Fleet's `ignore.conditions`.
pub fn not_ready(object: &Value, ignored: &[BTreeMap<String, String>]) -> Option<String> {
    if !ignored.is_empty() {
        let mut object = object.clone();
        if let Some(conditions) = object
            .pointer_mut("/status/conditions")
            .and_then(Value::as_array_mut)
        {
            conditions.retain(|c| !ignored.iter().any(|entry| matches_entry(c, entry)));
        }
        return not_ready(&object, &[]);
    }
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let generation = int(object, "/metadata/generation").unwrap_or(0);
    let observed = int(object, "/status/observedGeneration").unwrap_or(0);
    match kind {
        "Deployment" | "StatefulSet" | "ReplicaSet" => {
            let wanted = int(object, "/spec/replicas").unwrap_or(1);
            let ready = int(object, "/status/readyReplicas").unwrap_or(0);
            let updated = int(object, "/status/updatedReplicas").unwrap_or(ready);
            if observed < generation {
                Some("rollout not observed yet".into())
            } else if ready < wanted || updated < wanted {
                Some(format!("{ready}/{wanted} replicas ready"))
            } else {
                None
            }
        }
        "DaemonSet" => {
            let wanted = int(object, "/status/desiredNumberScheduled").unwrap_or(0);
            let ready = int(object, "/status/numberReady").unwrap_or(0);
            (observed < generation || ready < wanted)
                .then(|| format!("{ready}/{wanted} pods ready"))
        }
        "Job" => {
            let complete = condition(object, "Complete").as_deref() == Some("True");
            let failed = condition(object, "Failed").as_deref() == Some("True");
            if failed {
                Some("job failed".into())
            } else if complete || int(object, "/status/succeeded").unwrap_or(0) > 0 {
                None
            } else {
                Some("job not complete".into())
            }
        }
        _ => match condition(object, "Ready").as_deref() {
            Some("True") | None => None,
            Some(status) => Some(format!("Ready condition is {status}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::not_ready;
    use serde_json::json;

    #[test]
    fn workloads_jobs_and_conditions() {
        let deployment = |ready: i64| {
            json!({"kind": "Deployment", "metadata": {"generation": 2}, "spec": {"replicas": 3},
                   "status": {"observedGeneration": 2, "readyReplicas": ready, "updatedReplicas": ready}})
        };
        assert_eq!(
            not_ready(&deployment(1), &[]).as_deref(),
            Some("1/3 replicas ready")
        );
        assert_eq!(not_ready(&deployment(3), &[]), None);
        let stale = json!({"kind": "Deployment", "metadata": {"generation": 3},
                           "status": {"observedGeneration": 2, "readyReplicas": 1}});
        assert!(not_ready(&stale, &[]).is_some());
        let job = json!({"kind": "Job", "status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(not_ready(&job, &[]), None);
        assert!(not_ready(&json!({"kind": "Job"}), &[]).is_some());
        assert_eq!(not_ready(&json!({"kind": "ConfigMap"}), &[]), None);
        let custom = json!({"kind": "Thing", "status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        assert_eq!(
            not_ready(&custom, &[]).as_deref(),
            Some("Ready condition is False")
        );
        let ignored = [std::collections::BTreeMap::from([
            ("type".to_string(), "Ready".to_string()),
            ("status".to_string(), "False".to_string()),
        ])];
        assert_eq!(not_ready(&custom, &ignored), None, "ignore.conditions");
    }
}
