//! `fleet install manager` and `fleet install agent-token` print what real Helm 4 renders
//! of `deploy/charts/` with the same values, after Fleet's CRDs (as `deploy/crds/` holds
//! them) and namespaces, or after a working registration token's Secret.

mod common;

use std::process::Command;

use common::{documents, fleet_ok, workspace};
use fleet_testkit::real_tool;
use serde_json::Value;

/// `helm template RELEASE deploy/charts/CHART -n cattle-fleet-system --set ...` with real
/// Helm 4, as documents.
fn real_helm(chart: &str, release: &str, set: &[&str]) -> Vec<Value> {
    let mut helm = Command::new(real_tool("helm4"));
    helm.args(["template", release])
        .arg(workspace().join("deploy/charts").join(chart))
        .args(["-n", "cattle-fleet-system"]);
    for value in set {
        helm.args(["--set", value]);
    }
    let output = helm.output().expect("helm runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    documents(&String::from_utf8(output.stdout).expect("UTF-8"))
}

#[test]
fn the_manager_is_fleets_crds_its_namespaces_and_the_chart_as_helm_renders_it() {
    let set = [
        "apiServerURL=https://fleet.example.com:6443",
        "gitjob.gitConcurrency=4",
    ];
    let printed = fleet_ok(&["install", "manager", "--set", set[0], "--set", set[1]]);
    let printed = documents(&printed);
    let count = std::fs::read_dir(workspace().join("deploy/crds"))
        .expect("deploy/crds")
        .count();
    let crds = &printed[..count];
    for crd in crds {
        assert_eq!(crd["kind"], "CustomResourceDefinition", "{crd}");
        let file = workspace().join("deploy/crds").join(format!(
            "{}.yaml",
            crd["spec"]["names"]["plural"].as_str().expect("plural")
        ));
        let kept = documents(&std::fs::read_to_string(&file).expect("CRD file"));
        assert_eq!(&kept[0], crd, "{}", file.display());
    }
    let namespaces: Vec<&str> = printed[crds.len()..crds.len() + 3]
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        namespaces,
        ["cattle-fleet-system", "fleet-default", "fleet-local"]
    );
    assert_eq!(
        printed[crds.len() + 3..],
        real_helm("fleet-rs", "fleet", &set)[..]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_token_is_a_registration_secret_and_the_agent_chart_as_helm_renders_it() {
    let hub = fleet_testkit::FleetHub::start(&[]).await;
    let address =
        fleet_controller::registration::HubAddress::from_kubeconfig(&hub.kubeconfig("local"))
            .expect("address");
    let controller = fleet_controller::Context::registering(
        hub.client.clone(),
        hub.dir().join("controller"),
        address,
    );
    tokio::spawn(fleet_controller::run(controller, std::future::pending()));
    let kubeconfig = hub.kubeconfig("local").display().to_string();
    let printed = tokio::task::spawn_blocking(move || {
        fleet_ok(&[
            "install",
            "agent-token",
            "--kubeconfig",
            &kubeconfig,
            "--ttl",
            "1h",
            "--cluster-name",
            "edge-7",
            "--label",
            "env=prod",
            "--label",
            "example.com/tier=edge",
            "--set",
            "resyncSeconds=60",
        ])
    })
    .await
    .expect("fleet runs");
    let printed = documents(&printed);
    assert_eq!(printed[0]["kind"], "Namespace");
    let secret = &printed[1];
    assert_eq!(secret["metadata"]["name"], "fleet-token");
    let token = secret["stringData"]["kubeconfig"]
        .as_str()
        .expect("kubeconfig");
    assert!(token.contains("token: "), "{token}");
    let tokens: kube::Api<fleet_api::ClusterRegistrationToken> =
        kube::Api::namespaced(hub.client.clone(), "fleet-default");
    let made = tokens.list(&Default::default()).await.expect("tokens");
    assert_eq!(
        made.items.len(),
        1,
        "one token made on the management cluster"
    );
    assert_eq!(
        printed[2..],
        real_helm(
            "fleet-rs-agent",
            "fleet-agent",
            &[
                "resyncSeconds=60",
                "registration.tokenSecret=fleet-token",
                "registration.clusterName=edge-7",
                "registration.labels.env=prod",
                "registration.labels.example\\.com/tier=edge",
            ],
        )[..]
    );
}
