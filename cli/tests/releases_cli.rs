//! `fleet releases` lists the release records agents keep on BundleDeployments.

use fleet_api::BundleDeployment;
use fleet_testkit::FleetHub;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releases_are_listed_per_cluster() {
    let hub = FleetHub::start(&[]).await;
    let api: Api<BundleDeployment> = Api::namespaced(hub.client.clone(), "fleet-local");
    let deployment: BundleDeployment = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
        "metadata": {"name": "demo-app", "namespace": "fleet-local", "labels": {
            "fleet.cattle.io/cluster": "dev", "fleet.cattle.io/cluster-namespace": "fleet-default"}},
        "spec": {"deploymentID": "s-0123456789abcdef:aa"},
    }))
    .expect("deployment");
    api.create(&PostParams::default(), &deployment)
        .await
        .expect("create");
    let status = json!({"status": {
        "release": "app/demo-app:3",
        "appliedDeploymentID": "s-0123456789abcdef:aa",
        "display": {"state": "Ready"},
    }});
    api.patch_status("demo-app", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("status");
    let kubeconfig = hub.kubeconfig("local");
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_fleet"))
            .args(["releases", "--kubeconfig"])
            .arg(kubeconfig)
            .output()
            .expect("fleet runs")
    })
    .await
    .expect("task");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        vec![
            vec![
                "CLUSTER",
                "NAMESPACE",
                "NAME",
                "REVISION",
                "STATUS",
                "DEPLOYMENT"
            ],
            vec![
                "fleet-default/dev",
                "app",
                "demo-app",
                "3",
                "Ready",
                "s-0123456789ab"
            ],
        ]
    );
}
