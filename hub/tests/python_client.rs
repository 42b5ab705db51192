//! The official Kubernetes Python client against the hub: `tests/python/client_e2e.py` makes
//! the calls of the client's own e2e suite (which its packages do not ship) through the
//! client `.ci/real-tools.sh` installs from PyPI (kubernetes 37.0.2). Every skip is listed
//! here with its reason, and no other is allowed.
//!
//! Before the fixes it drove, deleting a Pod or a Service failed to decode (the hub answered
//! a Status where the client expects the object) and namespaces lacked their
//! `kubernetes.io/metadata.name` label.

mod common;

use std::process::Command;

use fleet_testkit::{real_tool, TestHub};

/// The skipped cases, each needing what the hub does not have: a kubelet running pods.
const SKIPS: &[&str] = &[
    "TestAppsAndBatch.test_job_completes: the hub stores workloads and runs none (no kubelet): a Job never completes",
    "TestClient.test_exec_and_attach: the hub stores workloads and runs none (no kubelet): exec and attach need a running container",
    "TestClient.test_pod_logs: the hub stores workloads and runs none (no kubelet): logs need a running container",
    "TestClient.test_portforward: the hub stores workloads and runs none (no kubelet): port-forward needs a running container",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_client_passes_its_e2e_calls() {
    let hub = TestHub::start(&["local"]).await;
    run_the_calls(hub.kubeconfig("local")).await;
}

/// The same calls against a real kube-apiserver (with the same skips: its fake kubelet
/// runs no container), which the hub is held to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_calls_pass_on_kube_apiserver() {
    let plane = fleet_testkit::RealControlPlane::start(&["real"]).await;
    run_the_calls(plane.cluster("real").kubeconfig().to_path_buf()).await;
}

/// Runs `tests/python/client_e2e.py` against the cluster `kubeconfig` names; fails unless
/// every call passes but the listed skips.
async fn run_the_calls(kubeconfig: std::path::PathBuf) {
    let python = real_tool("python-client/bin/python");
    let script = common::workspace().join("hub/tests/python/client_e2e.py");
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .env("KUBECONFIG", kubeconfig)
            .output()
    })
    .await
    .unwrap_or_else(|e| panic!("task: {e}"))
    .unwrap_or_else(|e| panic!("python runs: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python client's calls failed:\n{stderr}\n{stdout}"
    );
    let skipped: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("SKIPPED __main__."))
        .collect();
    assert_eq!(skipped, SKIPS, "{stderr}");
    assert!(stderr.contains("Ran 18 tests"), "{stderr}");
}
