//! `fleet status` against a hub holding GitRepos, Bundles and BundleDeployments in known
//! states: the tree at 80 columns equals a golden file (checked by hand), no line is wider,
//! colour only when asked, and `-o json|yaml` carry the same tree.

use std::path::Path;
use std::process::{Command, Output};

use fleet_testkit::FleetHub;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

/// Creates a Fleet object of `kind`, then sets its status.
async fn create(client: &kube::Client, kind: &str, plural: &str, object: Value, status: Value) {
    let resource = ApiResource {
        group: "fleet.cattle.io".into(),
        version: "v1alpha1".into(),
        api_version: "fleet.cattle.io/v1alpha1".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    let namespace = object["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
    let mut body = object;
    body["apiVersion"] = json!("fleet.cattle.io/v1alpha1");
    body["kind"] = json!(kind);
    let object: DynamicObject = serde_json::from_value(body).expect("object");
    api.create(&PostParams::default(), &object)
        .await
        .expect("create");
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": status})),
    )
    .await
    .expect("status");
}

fn condition(kind: &str, ok: bool, message: &str) -> Value {
    json!({"type": kind, "status": if ok {"True"} else {"False"}, "message": message})
}

/// A deployment of `bundle` to `cluster`: applied at `applied`, ready or not.
async fn deployment(
    client: &kube::Client,
    bundle: &str,
    cluster: &str,
    applied: &str,
    ready: bool,
    conditions: Value,
) {
    create(
        client,
        "BundleDeployment",
        "bundledeployments",
        json!({"metadata": {"name": bundle, "namespace": format!("cluster-fleet-default-{cluster}"),
            "labels": {"fleet.cattle.io/bundle-name": bundle,
                       "fleet.cattle.io/bundle-namespace": "fleet-default",
                       "fleet.cattle.io/cluster": cluster,
                       "fleet.cattle.io/cluster-namespace": "fleet-default"}},
               "spec": {"deploymentID": "s-1:v2"}}),
        json!({"appliedDeploymentID": applied, "ready": ready, "nonModified": true,
               "conditions": conditions}),
    )
    .await;
}

async fn populate(client: &kube::Client) {
    // fleet-default is there: the hub fixture installs Fleet's namespaces.
    let namespaces =
        ["dev", "prod-eu-west-1", "staging"].map(|c| format!("cluster-fleet-default-{c}"));
    for namespace in namespaces {
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let body: k8s_openapi::api::core::v1::Namespace =
            serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("namespace");
        api.create(&PostParams::default(), &body)
            .await
            .expect("namespace");
    }
    create(
        client,
        "GitRepo",
        "gitrepos",
        json!({"metadata": {"name": "apps", "namespace": "fleet-default"},
               "spec": {"repo": "https://example.invalid/apps", "branch": "main"}}),
        json!({"commit": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
               "display": {"state": "NotReady", "readyBundleDeployments": "4/6"},
               "conditions": [condition("Ready", false, "NotReady(2) [Bundle apps-frontend-with-a-rather-long-name; Bundle apps-helm]")]}),
    )
    .await;
    create(
        client,
        "GitRepo",
        "gitrepos",
        json!({"metadata": {"name": "infra", "namespace": "fleet-default"},
               "spec": {"repo": "https://example.invalid/infra", "branch": "main"}}),
        json!({"display": {"state": "Stalled"},
               "conditions": [condition("Stalled", true, "fetch: repository not found")]}),
    )
    .await;
    let bundle = |name: &str, state: &str, message: &str| {
        let labels = json!({"fleet.cattle.io/repo-name": "apps"});
        (
            json!({"metadata": {"name": name, "namespace": "fleet-default", "labels": labels},
                   "spec": {"resources": []}}),
            json!({"display": {"state": state},
                   "conditions": [condition("Ready", state == "Ready", message)]}),
        )
    };
    for (name, state, message) in [
        ("apps-config", "Ready", ""),
        (
            "apps-frontend-with-a-rather-long-name",
            "NotReady",
            "NotReady(1) [Cluster fleet-default/prod-eu-west-1]",
        ),
        (
            "apps-helm",
            "NotReady",
            "ErrApplied(1) [Cluster fleet-default/staging]",
        ),
    ] {
        let (object, status) = bundle(name, state, message);
        create(client, "Bundle", "bundles", object, status).await;
    }
    let ok = || {
        json!([
            condition("Deployed", true, ""),
            condition("Ready", true, "")
        ])
    };
    for (bundle, cluster) in [
        ("apps-config", "dev"),
        ("apps-config", "prod-eu-west-1"),
        ("apps-frontend-with-a-rather-long-name", "dev"),
        ("apps-helm", "dev"),
    ] {
        deployment(client, bundle, cluster, "s-1:v2", true, ok()).await;
    }
    deployment(
        client,
        "apps-frontend-with-a-rather-long-name",
        "prod-eu-west-1",
        "s-1:v2",
        false,
        json!([condition("Deployed", true, ""),
               condition("Ready", false, "Deployment frontend-with-a-rather-long-name: 1/3 replicas ready; Service frontend: no endpoints")]),
    )
    .await;
    deployment(
        client,
        "apps-helm",
        "staging",
        "s-1:v1",
        false,
        json!([condition(
            "Deployed",
            false,
            "ConfigMap greeter: namespace demo is terminating"
        )]),
    )
    .await;
}

fn status(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(["status", "--kubeconfig"])
        .arg(kubeconfig)
        .args(args)
        .env_remove("COLUMNS")
        .env_remove("NO_COLOR")
        .output()
        .expect("fleet runs")
}

fn text(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).expect("utf-8")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tree_fits_80_columns_and_equals_the_golden() {
    let hub = FleetHub::start(&[]).await;
    populate(&hub.client).await;
    let kubeconfig = hub.kubeconfig("local");
    let (plain, coloured, json_out, yaml_out) = tokio::task::spawn_blocking(move || {
        (
            text(&status(&kubeconfig, &[])),
            text(&status(&kubeconfig, &["--color", "always"])),
            text(&status(&kubeconfig, &["-o", "json"])),
            text(&status(&kubeconfig, &["-o", "yaml", "-n", "fleet-default"])),
        )
    })
    .await
    .expect("task");

    let golden_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/status-80.txt");
    if std::env::var_os("FLEET_WRITE_GOLDEN").is_some() {
        std::fs::write(&golden_path, &plain).expect("write golden");
    }
    let golden = std::fs::read_to_string(&golden_path).expect("golden");
    assert_eq!(
        plain,
        golden,
        "fleet status differs from {}",
        golden_path.display()
    );
    for line in plain.lines() {
        assert!(line.chars().count() <= 80, "wider than 80: {line}");
    }
    assert!(
        !plain.contains('\x1b'),
        "no colour when stdout is not a terminal"
    );
    assert!(coloured.contains("\x1b[32mReady\x1b[0m"), "{coloured}");
    assert!(coloured.contains("\x1b[31mErrApplied\x1b[0m"), "{coloured}");
    let stripped = coloured
        .replace("\x1b[32m", "")
        .replace("\x1b[31m", "")
        .replace("\x1b[33m", "")
        .replace("\x1b[0m", "");
    assert_eq!(stripped, plain, "colour changes nothing else");

    let tree: Value = serde_json::from_str(&json_out).expect("json");
    assert_eq!(tree["repos"][0]["name"], "apps");
    assert_eq!(
        tree["repos"][0]["bundles"][2]["clusters"][1]["state"],
        "ErrApplied"
    );
    assert_eq!(tree["repos"][1]["state"], "Stalled");
    let from_yaml: Value = serde_yaml_ng::from_str(&yaml_out).expect("yaml");
    assert_eq!(from_yaml, tree);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_one_gitrepo_again_when_it_changes_and_stops_on_ctrl_c() {
    use std::io::{BufRead, BufReader};
    let hub = FleetHub::start(&[]).await;
    populate(&hub.client).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(["status", "apps", "--watch", "--kubeconfig"])
        .arg(hub.kubeconfig("local"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("fleet runs");
    let lines = BufReader::new(child.stdout.take().expect("stdout"));
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let next_repo_line = || loop {
        let line = receiver
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("a tree");
        assert!(!line.contains("infra"), "only the named GitRepo: {line}");
        if line.starts_with("fleet-default/") {
            return line;
        }
    };
    let first = tokio::task::block_in_place(next_repo_line);
    assert!(first.contains("commit 4b825dc"), "{first}");
    let api: Api<DynamicObject> = Api::namespaced_with(
        hub.client.clone(),
        "fleet-default",
        &ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("fleet.cattle.io", "v1alpha1", "GitRepo"),
            "gitrepos",
        ),
    );
    api.patch_status(
        "apps",
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": {"commit": "0123456789abcdef"}})),
    )
    .await
    .expect("status");
    let second = tokio::task::block_in_place(next_repo_line);
    assert!(second.contains("commit 0123456"), "{second}");
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill")
        .success());
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("task")
        .expect("wait");
    assert!(status.success(), "{status:?}");
}
