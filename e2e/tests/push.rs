//! The push model on the hub: a Cluster with `spec.kubeConfigSecret` and no agent gets its
//! variant from the controllers' process, drift in it is corrected, its deployment reports
//! status; a Cluster with both a kubeconfig and a registered agent is refused and gets
//! nothing.

mod common;

use common::{Fleet, NS, WAIT};
use fleet_testkit::eventually;
use serde_json::json;

const FLEET_YAML: &str = "defaultNamespace: apps
correctDrift:
  enabled: true
targetCustomizations:
- name: edge
  clusterSelector: {matchLabels: {env: edge}}
  defaultNamespace: edge-apps
";

const CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  mode: fast
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pushed_cluster_gets_its_variant_without_an_agent_and_a_doubly_driven_one_nothing() {
    let fleet = Fleet::start_with_pushed(
        &[("dev", json!({"env": "dev"}))],
        &[
            ("edge", json!({"env": "edge"})),
            ("twice", json!({"env": "edge"})),
        ],
    )
    .await;
    // `twice` also has a registered agent (it reported a heartbeat).
    let hub = fleet.kubectl("local");
    let heartbeat = json!({"status": {"agent": {"lastSeen": "2026-12-03T00:00:00Z"}}});
    hub.patch(
        &format!("cluster twice -n {NS} --subresource=status"),
        "merge",
        &heartbeat.to_string(),
    )
    .await
    .success();
    fleet
        .repo
        .write("app/fleet.yaml", FLEET_YAML)
        .write("app/cm.yaml", CONFIG_MAP);
    fleet.repo.commit("app");
    fleet
        .gitrepo(json!({"paths": ["app"], "targets": [{"clusterSelector": {}}]}))
        .await;

    // edge gets its own variant, applied from the controllers' process: no agent runs there.
    eventually("the variant in edge", WAIT, || async {
        fleet.get("edge", &["get", "configmap", "app", "-n", "edge-apps"])
    })
    .await;
    eventually("the variant in dev", WAIT, || async {
        fleet.get("dev", &["get", "configmap", "app", "-n", "apps"])
    })
    .await;
    let deployment = eventually("edge's deployment reported Ready", WAIT, || async {
        let deployment = fleet.deployments("edge").get("demo-app").await.ok()?;
        deployment
            .status
            .as_ref()
            .is_some_and(|s| s.ready)
            .then_some(deployment)
    })
    .await;
    let options = deployment.spec.options.unwrap_or_default();
    assert_eq!(options.default_namespace.as_deref(), Some("edge-apps"));

    // Drift in edge is corrected by the same code an agent runs.
    fleet
        .kubectl("edge")
        .patch(
            "configmap app -n edge-apps",
            "merge",
            r#"{"data":{"mode":"slow"}}"#,
        )
        .await
        .success();
    eventually("the drift in edge corrected", WAIT, || async {
        let config_map = fleet.get("edge", &["get", "configmap", "app", "-n", "edge-apps"])?;
        (config_map["data"]["mode"] == "fast").then_some(())
    })
    .await;

    // `twice` is refused: a clear condition, no deployment, nothing in the cluster.
    let refused = eventually("twice refused", WAIT, || async {
        let cluster = fleet.get("local", &["get", "cluster", "twice", "-n", NS])?;
        let conditions = cluster["status"]["conditions"].as_array()?.clone();
        let ready = conditions.iter().find(|c| c["type"] == "Ready")?;
        (ready["reason"] == "DrivenTwice").then(|| ready.clone())
    })
    .await;
    assert_eq!(refused["status"], "False");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("spec.kubeConfigSecret") && message.contains("registered agent"),
        "{message}"
    );
    assert!(
        fleet
            .deployments("twice")
            .get_opt("demo-app")
            .await
            .expect("get")
            .is_none(),
        "no deployment for a doubly driven cluster"
    );
    assert!(fleet
        .get("twice", &["get", "configmap", "app", "-n", "edge-apps"])
        .is_none());
    fleet.stop().await;
}

/// A pushed cluster's rotated kubeconfig is used without touching its Cluster: once the
/// Secret holds another cluster's kubeconfig, the bundle's objects (missing there, and
/// corrected as drift) are written there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_kubeconfig_secret_is_used_without_touching_the_cluster() {
    // `spare` runs an agent but is targeted by nothing: only the pusher, through a
    // kubeconfig naming it, can put the bundle there.
    let fleet = Fleet::start_with_pushed(
        &[("spare", json!({"env": "spare"}))],
        &[("edge", json!({"env": "edge"}))],
    )
    .await;
    fleet
        .repo
        .write("app/fleet.yaml", "correctDrift:\n  enabled: true\n")
        .write("app/cm.yaml", CONFIG_MAP);
    fleet.repo.commit("app");
    fleet
        .gitrepo(json!({
            "paths": ["app"],
            "targets": [{"clusterSelector": {"matchLabels": {"env": "edge"}}}],
        }))
        .await;
    eventually("the bundle in edge", WAIT, || async {
        fleet.get("edge", &["get", "configmap", "app", "-n", "default"])
    })
    .await;
    let spare = std::fs::read_to_string(fleet.hub.kubeconfig("spare")).expect("kubeconfig");
    let secret = json!({"stringData": {"value": spare}});
    fleet
        .kubectl("local")
        .patch(
            &format!("secret edge-kubeconfig -n {NS}"),
            "merge",
            &secret.to_string(),
        )
        .await
        .success();
    eventually(
        "the bundle through the rotated kubeconfig",
        WAIT,
        || async { fleet.get("spare", &["get", "configmap", "app", "-n", "default"]) },
    )
    .await;
    fleet.stop().await;
}
