//! The fleet on real Kubernetes: kube-apiserver, kube-controller-manager and etcd built from
//! the upstream modules (`.ci/real-k8s.sh`) for the management cluster and each member.
//! What the embedded hub lets pass, these judge: canonical quantities, dropped empty
//! fields, token Secrets filled later by the token controller, CRDs served only once
//! Established, owner references checked against RBAC.

mod real;

use fleet_testkit::{helm, real_tool};
use real::{state, RealFleet};
use serde_json::json;

/// A Deployment written as people write them: quantities the API server rewrites
/// (`cpu: 1` is stored as `"1"`, `0.5` as `500m`, `1024Mi` as `1Gi`) and empty fields it
/// drops (`args: []`, `nodeSelector: {}`, `annotations: {}`).
const WEB: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
      annotations: {}
    spec:
      nodeSelector: {}
      containers:
      - name: web
        image: nginx:1.27
        args: []
        env: []
        resources:
          requests: {cpu: 0.5, memory: 1024Mi}
          limits: {cpu: 1, memory: 2048Mi}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pulled_and_pushed_members_deploy_and_settle_ready() {
    let mut fleet = RealFleet::start(&["dev", "prod"]).await;
    fleet.join("dev", &["--label", "env=dev"]);
    fleet.push("prod", json!({"env": "prod"})).await;
    fleet
        .repo
        .write("app/fleet.yaml", "defaultNamespace: web\n")
        .write("app/web.yaml", WEB);
    fleet.repo.commit("app");
    fleet
        .gitrepo(
            "demo",
            json!({"paths": ["app"], "targets": [{"clusterSelector": {}}]}),
        )
        .await;

    for member in ["dev", "prod"] {
        let deployment = fleet
            .deployment_where(member, "demo-app", "Ready", |d| {
                state(d).as_deref() == Some("Ready")
            })
            .await;
        let status = deployment.status.expect("status");
        assert!(
            status.non_modified,
            "{member}: {:?}",
            status.modified_status
        );
        // Real controllers rolled the Deployment out on the fake node.
        let web = fleet
            .get(member, &["get", "deployment", "web", "-n", "web"])
            .expect("the Deployment");
        assert_eq!(web["status"]["availableReplicas"], 2, "{member}: {web}");
        assert_eq!(
            web["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "500m"
        );
    }
    // The release is Helm's: real Helm lists it.
    let listed = helm(
        &real_tool("helm4"),
        fleet.cluster("dev").kubeconfig(),
        &fleet.dir.path().join("helm"),
        &["list", "-n", "web", "-o", "json"],
    );
    let releases: serde_json::Value = serde_json::from_str(&listed).expect("helm's JSON");
    assert_eq!(releases[0]["name"], "demo-app", "{releases}");
    assert_eq!(releases[0]["status"], "deployed", "{releases}");

    // Drift on dev is reported, naming the field.
    fleet
        .kubectl("dev")
        .patch(
            "configmap settings -n web",
            "merge",
            r#"{"data":{"mode":"slow"}}"#,
        )
        .await
        .success();
    let modified = fleet
        .deployment_where("dev", "demo-app", "Modified", |d| {
            state(d).as_deref() == Some("Modified")
        })
        .await;
    let reported =
        serde_json::to_string(&modified.status.expect("status").modified_status).expect("JSON");
    assert!(reported.contains("/data/mode"), "{reported}");
    fleet.stop().await;
}
