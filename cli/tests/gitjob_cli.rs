//! `fleet gitjob` as a user runs it: beside `fleet hub`, driven with kubectl, stopped with
//! SIGTERM.

mod common;

use std::time::Duration;

use common::{kubectl, spawn};

use fleet_testkit::{free_port, wait_for_port, TestRepo};

fn until(what: &str, check: impl FnMut() -> bool) {
    common::until(what, Duration::from_secs(30), check);
}

#[test]
fn gitjob_syncs_a_gitrepo_serves_metrics_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("temp dir");
    let hub_port = free_port();
    let _hub = spawn(&[
        "hub",
        "--data",
        &dir.path().join("hub").display().to_string(),
        "--listen",
        &format!("127.0.0.1:{hub_port}"),
    ]);
    let kubeconfig = dir.path().join("hub/local.kubeconfig");
    until("the hub", || {
        kubeconfig.is_file() && kubectl(&kubeconfig, &["get", "namespaces"], None).0
    });
    common::apply_fleet_crds(&kubeconfig);
    assert!(kubectl(&kubeconfig, &["create", "namespace", "fleet-local"], None).0);

    let repo = TestRepo::new();
    repo.write("app/fleet.yaml", "defaultNamespace: app\n")
        .write(
            "app/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
        );
    let head = repo.commit("first");
    let metrics_port = free_port();
    let mut gitjob = spawn(&[
        "gitjob",
        "--kubeconfig",
        &kubeconfig.display().to_string(),
        "--data",
        &dir.path().join("gitjob").display().to_string(),
        "--allow-local-sources",
        "--webhook-listen",
        &format!("127.0.0.1:{metrics_port}"),
    ]);
    let gitrepo = format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: demo\n  namespace: fleet-local\nspec:\n  repo: {}\n  branch: main\n",
        repo.url()
    );
    assert!(kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&gitrepo)).0);
    let label = "jsonpath={.metadata.labels.fleet\\.cattle\\.io/commit}";
    until("the Bundle at the commit", || {
        let (ok, text) = kubectl(
            &kubeconfig,
            &[
                "get",
                "bundle",
                "demo-app",
                "-n",
                "fleet-local",
                "-o",
                label,
            ],
            None,
        );
        ok && text == head
    });
    // The GitRepo's status is a write of its own, after the Bundle's.
    until("the GitRepo's status at the commit", || {
        let (ok, commit) = kubectl(
            &kubeconfig,
            &[
                "get",
                "gitrepo",
                "demo",
                "-n",
                "fleet-local",
                "-o",
                "jsonpath={.status.commit}",
            ],
            None,
        );
        ok && commit == head
    });

    wait_for_port(metrics_port);
    let metrics = ureq::get(&format!("http://127.0.0.1:{metrics_port}/metrics"))
        .call()
        .expect("metrics")
        .body_mut()
        .read_to_string()
        .expect("text");
    assert!(
        metrics.contains("fleet_gitjob_syncs_total 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("fleet_gitjob_fetches_total 1\n"),
        "{metrics}"
    );

    let status = gitjob.stop_with("TERM", Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
}
