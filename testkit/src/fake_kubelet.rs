//! What a kubelet does that the workload controllers wait for, for a real cluster that has
//! none: one Node, `fake-node`, that every Pod is bound to; each Pod then runs (ready at
//! once) or, when it is not restarted (a Job's), succeeds; a deleted Pod is removed at once,
//! as a kubelet confirms a deletion. The real deployment, replica-set and job controllers
//! turn that into their objects' status. A Pod annotated [`FAIL_ANNOTATION`]` = "true"`
//! fails instead (never ready, or `Failed` with exit code 1); one annotated
//! [`SLOW_STOP_ANNOTATION`]` = "true"` is removed only when its grace period is over.

use std::path::PathBuf;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

/// Annotation (on a Pod template) that makes the Pod fail.
pub const FAIL_ANNOTATION: &str = "simulate.fleet-rs.io/fail";

/// Annotation (on a Pod template) that makes the Pod take its whole grace period to stop,
/// as a container that does not handle SIGTERM does.
pub const SLOW_STOP_ANNOTATION: &str = "simulate.fleet-rs.io/slow-stop";

/// The Node every Pod runs on.
const NODE: &str = "fake-node";

/// The field manager of the fake kubelet's writes.
const FIELD_MANAGER: &str = "fake-kubelet";

/// A fake kubelet running on its own thread until dropped.
pub(crate) struct FakeKubelet {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeKubelet {
    /// Starts one for the cluster `kubeconfig` reaches, as its admin.
    pub(crate) fn start(kubeconfig: PathBuf) -> Self {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("fake-kubelet".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap_or_else(|e| panic!("fake kubelet runtime: {e}"));
                runtime.block_on(async move {
                    let client = crate::hub::client_for(&kubeconfig).await;
                    tokio::select! {
                        _ = run(client) => {}
                        _ = stopped => {}
                    }
                });
            })
            .unwrap_or_else(|e| panic!("fake kubelet thread: {e}"));
        Self {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for FakeKubelet {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn run(client: kube::Client) {
    register_node(&client).await;
    let pods: Api<Pod> = Api::all(client.clone());
    let mut events = watcher(pods, watcher::Config::default()).boxed().fuse();
    while let Some(event) = events.next().await {
        let pod = match event {
            Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => pod,
            Ok(_) => continue,
            Err(error) => {
                tracing::debug!(%error, "fake kubelet watch");
                continue;
            }
        };
        if let Err(error) = tend(&client, &pod).await {
            tracing::debug!(pod = %pod.name_any(), %error, "fake kubelet");
        }
    }
}

/// Creates the Node, Ready, with room for everything.
async fn register_node(client: &kube::Client) {
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux"}},
    }))
    .unwrap_or_else(|e| panic!("Node: {e}"));
    if let Err(error) = nodes.create(&PostParams::default(), &node).await {
        tracing::debug!(%error, "fake node");
    }
    let capacity = json!({"cpu": "64", "memory": "256Gi", "pods": "1000"});
    let status = json!({"status": {
        "capacity": capacity, "allocatable": capacity,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "fake kubelet", "lastHeartbeatTime": now(), "lastTransitionTime": now()}],
        "nodeInfo": {"kubeletVersion": "v1.37.2", "architecture": "amd64", "operatingSystem": "linux",
                     "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "", "osImage": "",
                     "containerRuntimeVersion": "", "kubeProxyVersion": ""},
    }});
    if let Err(error) = nodes
        .patch_status(NODE, &patch_params(), &Patch::Merge(&status))
        .await
    {
        tracing::debug!(%error, "fake node status");
    }
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    }
}

fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or_else(|_| jiff::Timestamp::now())
        .to_string()
}

/// Moves `pod` one step on: removed if deleted, bound if unscheduled, run if bound.
async fn tend(client: &kube::Client, pod: &Pod) -> Result<(), kube::Error> {
    let namespace = pod.namespace().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let name = pod.name_any();
    if let Some(deleted) = &pod.metadata.deletion_timestamp {
        // Once: the Pod may stay, with its finalizers, and come back in the watch.
        if pod.metadata.deletion_grace_period_seconds == Some(0) {
            return Ok(());
        }
        let slow = pod
            .annotations()
            .get(SLOW_STOP_ANNOTATION)
            .is_some_and(|v| v == "true");
        let wait = if slow {
            let left = k8s_openapi::jiff::Timestamp::now().duration_until(deleted.0);
            std::time::Duration::try_from(left).unwrap_or_default()
        } else {
            std::time::Duration::ZERO
        };
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let _ = pods
                .delete(&name, &DeleteParams::default().grace_period(0))
                .await;
        });
        return Ok(());
    }
    let spec = pod.spec.clone().unwrap_or_default();
    if spec.node_name.is_none() {
        let binding = json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": NODE},
        });
        pods.create_subresource::<Value, Value>("binding", &name, &PostParams::default(), &binding)
            .await?;
        return Ok(());
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.clone());
    if phase.as_deref().is_some_and(|p| p != "Pending") {
        return Ok(());
    }
    let failing = pod
        .annotations()
        .get(FAIL_ANNOTATION)
        .is_some_and(|v| v == "true");
    let restarted = spec.restart_policy.as_deref().unwrap_or("Always") == "Always";
    pods.patch_status(
        &name,
        &patch_params(),
        &Patch::Merge(&status(&spec, failing, restarted)),
    )
    .await?;
    Ok(())
}

/// The status a kubelet would report for a started Pod.
fn status(spec: &k8s_openapi::api::core::v1::PodSpec, failing: bool, restarted: bool) -> Value {
    let now = now();
    let finished = !restarted;
    let (phase, ready) = match (finished, failing) {
        (true, true) => ("Failed", false),
        (true, false) => ("Succeeded", false),
        (false, failing) => ("Running", !failing),
    };
    let state = if finished {
        json!({"terminated": {"exitCode": if failing { 1 } else { 0 },
               "reason": if failing { "Error" } else { "Completed" },
               "startedAt": now, "finishedAt": now}})
    } else {
        json!({"running": {"startedAt": now}})
    };
    let containers: Vec<Value> = spec
        .containers
        .iter()
        .map(|c| {
            json!({"name": c.name, "image": c.image, "imageID": "", "ready": ready,
                   "restartCount": 0, "started": !finished, "state": state})
        })
        .collect();
    let condition = |kind: &str, ok: bool| json!({"type": kind, "status": if ok { "True" } else { "False" }, "lastTransitionTime": now});
    json!({"status": {
        "phase": phase,
        "hostIP": "10.0.0.1",
        "podIP": "10.244.0.10",
        "startTime": now,
        "conditions": [
            condition("PodScheduled", true),
            condition("Initialized", true),
            condition("ContainersReady", ready),
            condition("Ready", ready),
        ],
        "containerStatuses": containers,
    }})
}
