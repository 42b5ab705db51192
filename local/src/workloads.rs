//! A workload simulator for member clusters that have no kubelet and no controllers (what
//! kwok does for a real API server): after a delay, it gives Deployments, StatefulSets,
//! ReplicaSets and DaemonSets the status of a finished rollout, runs Jobs to completion,
//! and moves Pods to `Running` (or `Succeeded`, when they are not restarted). An object
//! annotated [`FAIL_ANNOTATION`]` = "true"` fails instead: its replicas never become ready,
//! its Job fails with `BackoffLimitExceeded`, its Pod ends `Failed`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

/// Annotation that makes the simulator fail a workload.
pub const FAIL_ANNOTATION: &str = "simulate.fleet-rs.io/fail";

/// The field manager of the simulator's status writes.
const FIELD_MANAGER: &str = "fleet-workload-simulator";

/// The kinds the simulator drives: `(group, version, kind, plural)`.
const KINDS: [(&str, &str, &str, &str); 6] = [
    ("apps", "v1", "Deployment", "deployments"),
    ("apps", "v1", "StatefulSet", "statefulsets"),
    ("apps", "v1", "ReplicaSet", "replicasets"),
    ("apps", "v1", "DaemonSet", "daemonsets"),
    ("batch", "v1", "Job", "jobs"),
    ("", "v1", "Pod", "pods"),
];

/// Runs the simulator against the cluster `client` reaches, each status written `delay`
/// after the object changed, until `stop` resolves.
pub async fn simulate(
    client: kube::Client,
    delay: Duration,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let pending: Arc<Mutex<HashSet<String>>> = Arc::default();
    let watches = KINDS.map(|(group, version, kind, plural)| {
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        watch_kind(client.clone(), resource, delay, pending.clone())
    });
    tokio::select! {
        _ = futures::future::join_all(watches) => {}
        _ = stop => {}
    }
}

async fn watch_kind(
    client: kube::Client,
    resource: ApiResource,
    delay: Duration,
    pending: Arc<Mutex<HashSet<String>>>,
) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let mut events = watcher(api, watcher::Config::default()).boxed().fuse();
    while let Some(event) = events.next().await {
        let object = match event {
            Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => object,
            Ok(_) => continue,
            Err(error) => {
                tracing::debug!(%error, kind = %resource.kind, "simulator watch");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let Ok(value) = serde_json::to_value(&object) else {
            continue;
        };
        let Some(status) = simulated_status(&resource.kind, &value) else {
            continue;
        };
        let key = format!(
            "{}/{}/{}",
            object.uid().unwrap_or_default(),
            object.metadata.generation.unwrap_or(0),
            status
        );
        let newly = pending.lock().map(|mut p| p.insert(key)).unwrap_or(false);
        if !newly {
            continue;
        }
        let api: Api<DynamicObject> = match object.namespace() {
            Some(namespace) => Api::namespaced_with(client.clone(), &namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let name = object.name_any();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let patch = json!({ "status": status });
            if let Err(error) = api
                .patch_status(
                    &name,
                    &fleet_objects::client::patch_params(FIELD_MANAGER),
                    &Patch::Merge(&patch),
                )
                .await
            {
                tracing::debug!(%error, %name, "simulated status not written");
            }
        });
    }
}

fn int(object: &Value, pointer: &str) -> Option<i64> {
    object.pointer(pointer).and_then(Value::as_i64)
}

fn failing(object: &Value) -> bool {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(FAIL_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true")
}

fn has_condition(object: &Value, kind: &str) -> bool {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}

/// The status a cluster's controllers would give `object` in the end, or `None` when it
/// already has it (or is not something the simulator drives).
fn simulated_status(kind: &str, object: &Value) -> Option<Value> {
    let generation = int(object, "/metadata/generation").unwrap_or(1);
    let fail = failing(object);
    let now = jiff::Timestamp::now().to_string();
    let wanted = match kind {
        "Deployment" | "StatefulSet" | "ReplicaSet" => {
            let replicas = int(object, "/spec/replicas").unwrap_or(1);
            let ready = if fail { 0 } else { replicas };
            let mut status = json!({
                "observedGeneration": generation,
                "replicas": replicas,
                "updatedReplicas": replicas,
                "readyReplicas": ready,
                "availableReplicas": ready,
            });
            if kind == "StatefulSet" {
                status["currentReplicas"] = json!(replicas);
            }
            status
        }
        "DaemonSet" => {
            let ready = if fail { 0 } else { 1 };
            json!({
                "observedGeneration": generation,
                "desiredNumberScheduled": 1,
                "currentNumberScheduled": 1,
                "updatedNumberScheduled": 1,
                "numberReady": ready,
                "numberAvailable": ready,
                "numberMisscheduled": 0,
            })
        }
        "Job" => {
            if has_condition(object, "Complete") || has_condition(object, "Failed") {
                return None;
            }
            let (counter, count, conditions) = if fail {
                let backoff = int(object, "/spec/backoffLimit").unwrap_or(6);
                let condition = |kind: &str| json!({"type": kind, "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit", "lastTransitionTime": now});
                (
                    "failed",
                    backoff + 1,
                    json!([condition("FailureTarget"), condition("Failed")]),
                )
            } else {
                let completions = int(object, "/spec/completions").unwrap_or(1);
                let condition = |kind: &str| json!({"type": kind, "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastTransitionTime": now});
                (
                    "succeeded",
                    completions,
                    json!([condition("SuccessCriteriaMet"), condition("Complete")]),
                )
            };
            let mut status = json!({"startTime": now, "conditions": conditions});
            status[counter] = json!(count);
            if !fail {
                status["completionTime"] = json!(now);
            }
            return Some(status);
        }
        "Pod" => {
            let phase = object.pointer("/status/phase").and_then(Value::as_str);
            if matches!(phase, Some("Running" | "Succeeded" | "Failed")) {
                return None;
            }
            let restarts = object
                .pointer("/spec/restartPolicy")
                .and_then(Value::as_str);
            let phase = match (fail, restarts) {
                (true, _) => "Failed",
                (false, Some("Never" | "OnFailure")) => "Succeeded",
                (false, _) => "Running",
            };
            let ready = if phase == "Running" { "True" } else { "False" };
            return Some(json!({
                "phase": phase,
                "startTime": now,
                "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": now}],
            }));
        }
        _ => return None,
    };
    let current = object.get("status").cloned().unwrap_or(Value::Null);
    let reached = wanted
        .as_object()
        .into_iter()
        .flatten()
        .all(|(key, value)| current.get(key) == Some(value));
    (!reached).then_some(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_rolls_out_once_per_generation() {
        let fresh = json!({"metadata": {"generation": 2}, "spec": {"replicas": 3}});
        let status = simulated_status("Deployment", &fresh).expect("a status to write");
        assert_eq!(status["readyReplicas"], 3);
        assert_eq!(status["observedGeneration"], 2);
        let done =
            json!({"metadata": {"generation": 2}, "spec": {"replicas": 3}, "status": status});
        assert_eq!(simulated_status("Deployment", &done), None);
        let failing = json!({"metadata": {"generation": 1, "annotations": {FAIL_ANNOTATION: "true"}}, "spec": {}});
        assert_eq!(
            simulated_status("Deployment", &failing).expect("status")["readyReplicas"],
            0
        );
    }

    #[test]
    fn jobs_complete_or_fail_and_pods_end_by_restart_policy() {
        let job = json!({"metadata": {}, "spec": {}});
        let status = simulated_status("Job", &job).expect("status");
        assert_eq!(status["succeeded"], 1);
        let done = json!({"metadata": {}, "status": status});
        assert_eq!(simulated_status("Job", &done), None);
        let failing = json!({"metadata": {"annotations": {FAIL_ANNOTATION: "true"}}, "spec": {"backoffLimit": 0}});
        let status = simulated_status("Job", &failing).expect("status");
        assert_eq!(status["failed"], 1);
        assert_eq!(status["conditions"][1]["type"], "Failed");
        let pod = json!({"metadata": {}, "spec": {"restartPolicy": "Never"}});
        assert_eq!(
            simulated_status("Pod", &pod).expect("status")["phase"],
            "Succeeded"
        );
        let server = json!({"metadata": {}, "spec": {}});
        assert_eq!(
            simulated_status("Pod", &server).expect("status")["phase"],
            "Running"
        );
    }
}
