//! `fleet diff`: uncommitted changes of a real Git working tree, rendered per cluster
//! (described by labels, or the Clusters of a hub) against the last commit.

mod common;

use std::process::{Command, Output};
use std::time::Duration;

use common::{kubectl, spawn, until};
use fleet_testkit::{free_port, wait_for_port, TestRepo};
use serde_json::Value;

fn diff(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleet"))
        .arg("diff")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("fleet runs")
}

fn changes(output: &Output) -> Vec<Value> {
    serde_json::from_slice::<Vec<Value>>(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn summary(list: &[Value]) -> Vec<String> {
    list.iter()
        .map(|c| {
            format!(
                "{} {} {} {}",
                c["cluster"].as_str().unwrap_or(""),
                c["bundle"].as_str().unwrap_or(""),
                c["change"].as_str().unwrap_or(""),
                c["object"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn repository() -> TestRepo {
    let repo = TestRepo::new();
    repo.write(
        "web/fleet.yaml",
        "defaultNamespace: web\ntargetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels:\n      env: prod\n  yaml:\n    overlays:\n    - prod\n",
    )
    .write(
        "web/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  replicas: \"1\"\n",
    )
    .write(
        "web/overlays/prod/settings_patch.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  replicas: \"3\"\n",
    )
    .write("jobs/fleet.yaml", "defaultNamespace: jobs\n")
    .write(
        "jobs/cron.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cron\ndata:\n  schedule: daily\n",
    );
    repo.commit("first");
    repo
}

#[test]
fn changes_are_shown_per_cluster_and_only_where_they_land() {
    let repo = repository();
    let dir = repo.path();
    let unchanged = diff(dir, &["-l", "env=prod", "--exit-code"]);
    assert!(unchanged.status.success(), "nothing changed yet");
    assert!(String::from_utf8_lossy(&unchanged.stdout).contains("no changes"));

    // Only prod's overlay changes; a new object and a removed one land everywhere.
    repo.write(
        "web/overlays/prod/settings_patch.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  replicas: \"5\"\n",
    )
    .write(
        "web/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n",
    )
    .remove("jobs/cron.yaml");
    let prod = diff(dir, &["-l", "env=prod", "-o", "json"]);
    assert!(prod.status.success());
    assert_eq!(
        summary(&changes(&prod)),
        [
            "local jobs removed ConfigMap cron",
            "local web changed ConfigMap settings",
            "local web added Service web",
        ]
    );
    let changed = &changes(&prod)[1]["diff"];
    let changed = changed.as_str().unwrap_or_default();
    assert!(
        changed.contains("-  replicas: '3'") && changed.contains("+  replicas: '5'"),
        "{changed}"
    );
    let dev = diff(dir, &["-l", "env=dev", "--exit-code", "-o", "json"]);
    assert_eq!(dev.status.code(), Some(1), "something changes for dev");
    assert_eq!(
        summary(&changes(&dev)),
        [
            "local jobs removed ConfigMap cron",
            "local web added Service web"
        ],
        "prod's overlay is not dev's business"
    );
    let only_web = diff(&dir.join("web"), &["-l", "env=dev", "-o", "json"]);
    assert_eq!(
        summary(&changes(&only_web)),
        ["local web added Service web"]
    );
    let text = String::from_utf8_lossy(&diff(dir, &["-l", "env=prod"]).stdout).into_owned();
    assert!(
        text.contains("cluster local (env=prod): 3 object(s) would change"),
        "{text}"
    );
    assert!(text.contains("    + Service web"), "{text}");

    // A broken fleet.yaml is named, and the exit code says so.
    repo.write("web/fleet.yaml", "defaultNamespace: [web\n");
    let broken = diff(dir, &["-l", "env=prod"]);
    assert_eq!(broken.status.code(), Some(2));
    let text = String::from_utf8_lossy(&broken.stdout);
    assert!(
        text.contains("! ") && text.contains("web/fleet.yaml"),
        "{text}"
    );
}

#[test]
fn the_clusters_of_a_hub_are_compared_with_their_own_labels() {
    let repo = repository();
    repo.write(
        "web/overlays/prod/settings_patch.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  replicas: \"5\"\n",
    );
    let hub_dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let _hub = spawn(&[
        "hub",
        "--data",
        &hub_dir.path().display().to_string(),
        "--listen",
        &format!("127.0.0.1:{port}"),
    ]);
    wait_for_port(port);
    let kubeconfig = hub_dir.path().join("local.kubeconfig");
    until("the hub", Duration::from_secs(30), || {
        kubectl(&kubeconfig, &["get", "namespaces"], None).0
    });
    common::apply_fleet_crds(&kubeconfig);
    let clusters = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fleet-default\n---\napiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: eu-1\n  namespace: fleet-default\n  labels:\n    env: prod\nspec: {}\n---\napiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: lab\n  namespace: fleet-default\n  labels:\n    env: dev\nspec: {}\n";
    assert!(kubectl(&kubeconfig, &["apply", "-f", "-"], Some(clusters)).0);
    let output = diff(
        repo.path(),
        &[
            "--kubeconfig",
            &kubeconfig.display().to_string(),
            "-o",
            "json",
        ],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        summary(&changes(&output)),
        ["eu-1 web changed ConfigMap settings"]
    );
}
