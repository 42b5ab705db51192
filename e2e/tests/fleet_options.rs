//! fleet.yaml options the agent acts on, end to end: `namespaceLabels` and
//! `namespaceAnnotations` on the bundle's namespace, `ignore.conditions` for readiness,
//! `dependsOn[].acceptedStates`, and on removal CRDs kept unless `deleteCRDResources`,
//! as objects annotated `helm.sh/resource-policy: keep` are.

mod common;

use common::{Fleet, WAIT};
use fleet_testkit::eventually;
use serde_json::json;

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
";

/// A Widget whose status (no status subresource: it is applied with it) says not Ready.
fn widget(name: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nstatus:\n  conditions:\n  - type: Ready\n    status: \"False\"\n"
    )
}

const KEPT: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  annotations:
    helm.sh/resource-policy: keep
data:
  k: v
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_marks_ignored_conditions_accepted_states_and_what_removal_keeps() {
    let fleet = Fleet::start(&[("dev", json!({"env": "dev"}))]).await;
    fleet
        .repo
        .write(
            "crd/fleet.yaml",
            "defaultNamespace: widgets\nnamespaceLabels:\n  team: a\nnamespaceAnnotations:\n  owner: me\nignore:\n  conditions:\n  - type: Ready\n    status: \"False\"\n",
        )
        .write("crd/crd.yaml", CRD)
        .write("crd/widget.yaml", &widget("ignored"))
        .write("crd/kept.yaml", KEPT)
        .write(
            "slow/fleet.yaml",
            "defaultNamespace: widgets\ndependsOn:\n- name: demo-crd\n",
        )
        .write("slow/widget.yaml", &widget("not-ready"))
        .write(
            "after/fleet.yaml",
            "defaultNamespace: widgets\ndependsOn:\n- name: demo-slow\n  acceptedStates: [NotReady, Ready]\n",
        )
        .write(
            "after/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n",
        );
    fleet.repo.commit("options");
    fleet
        .gitrepo(json!({"paths": ["crd", "slow", "after"], "targets": [{"clusterSelector": {}}]}))
        .await;
    let deployments = fleet.deployments("dev");
    let state = |name: &'static str| {
        let deployments = deployments.clone();
        async move {
            let status = deployments.get(name).await.ok()?.status?;
            status.display?.state
        }
    };
    eventually("the CRD bundle Ready despite its Widget", WAIT, || async {
        (state("demo-crd").await.as_deref() == Some("Ready")).then_some(())
    })
    .await;
    eventually("the slow bundle NotReady", WAIT, || async {
        (state("demo-slow").await.as_deref() == Some("NotReady")).then_some(())
    })
    .await;
    // `after` accepts a NotReady dependency: it is deployed anyway.
    eventually("the bundle after it deployed", WAIT, || async {
        fleet.get("dev", &["get", "configmap", "after", "-n", "widgets"])
    })
    .await;
    let namespace = fleet
        .get("dev", &["get", "namespace", "widgets"])
        .expect("the namespace");
    assert_eq!(namespace["metadata"]["labels"]["team"], "a");
    assert_eq!(namespace["metadata"]["annotations"]["owner"], "me");

    fleet.delete_gitrepo().await;
    assert!(
        fleet
            .get("dev", &["get", "configmap", "after", "-n", "widgets"])
            .is_none(),
        "uninstalled"
    );
    assert!(
        fleet
            .get("dev", &["get", "crd", "widgets.example.com"])
            .is_some(),
        "a CRD stays without deleteCRDResources"
    );
    assert!(
        fleet
            .get("dev", &["get", "configmap", "kept", "-n", "widgets"])
            .is_some(),
        "helm.sh/resource-policy: keep"
    );
    fleet.stop().await;
}
