//! Git to a member cluster: the hub with a management cluster (`local`) and a member
//! (`dev`), `git daemon`, gitjob, the targeting controller and dev's agent in one process;
//! what landed in dev is read with the real kubectl.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use fleet_api::{BundleDeployment, Cluster, GitRepo};
use fleet_gitjob::controller::{Gitjob, Settings};
use fleet_gitjob::metrics::Metrics;
use fleet_gitjob::testing::{client_for, eventually, FleetHub, GitDaemon, TestRepo};
use kube::api::PostParams;
use kube::Api;
use serde_json::{json, Value};

const NS: &str = "fleet-local";
const WAIT: Duration = Duration::from_secs(30);

/// `kubectl get ... -o json` against `kubeconfig`, or `None` if it failed.
fn kubectl_json(kubeconfig: &Path, cache: &Path, args: &[&str]) -> Option<Value> {
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .args(["-o", "json"])
        .output()
        .expect("kubectl runs");
    output
        .status
        .success()
        .then(|| serde_json::from_slice(&output.stdout).expect("JSON"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_reaches_the_member_cluster_and_a_removed_file_is_pruned() {
    let fleet = FleetHub::start(&["dev"]).await;
    let dir = &fleet.dir;
    let member: PathBuf = fleet.kubeconfig("dev");
    let hub = fleet.client.clone();
    let cluster: Cluster = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "dev", "namespace": NS, "labels": {"env": "dev"}},
        "spec": {},
    }))
    .expect("cluster");
    Api::<Cluster>::namespaced(hub.clone(), NS)
        .create(&PostParams::default(), &cluster)
        .await
        .expect("cluster");

    let repos = dir.path().join("repos");
    let repo = TestRepo::in_dir(&repos, "app");
    repo.write("app/fleet.yaml", "defaultNamespace: app\n")
        .write(
            "app/settings.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: dev\n",
        )
        .write(
            "app/web.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n",
        );
    repo.commit("first");
    let daemon = GitDaemon::start(&repos);

    let stops: Vec<tokio::sync::oneshot::Sender<()>> = {
        let mut stops = Vec::new();
        let mut stop_signal = || {
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            stops.push(stop);
            async move {
                let _ = stopped.await;
            }
        };
        let gitjob = Gitjob::new(
            hub.clone(),
            Settings::new(dir.path().join("gitjob")),
            std::sync::Arc::new(Metrics::default()),
        );
        tokio::spawn(gitjob.run(stop_signal()));
        let controller = fleet_controller::Context::new(hub.clone(), dir.path().join("controller"));
        tokio::spawn(fleet_controller::run(controller, stop_signal()));
        let agent = fleet_agent::Agent::new(
            hub.clone(),
            client_for(&member).await,
            "cluster-fleet-local-dev",
        );
        tokio::spawn(agent.run(stop_signal()));
        stops
    };
    let gitrepo: GitRepo = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
        "metadata": {"name": "demo", "namespace": NS},
        "spec": {
            "repo": daemon.url("app"),
            "branch": "main",
            "pollingInterval": "1s",
            "targets": [{"clusterSelector": {"matchLabels": {"env": "dev"}}}],
        },
    }))
    .expect("GitRepo");
    Api::<GitRepo>::namespaced(hub.clone(), NS)
        .create(&PostParams::default(), &gitrepo)
        .await
        .expect("GitRepo");

    let cache = dir.path().join("kubectl-cache");
    let settings = eventually("the ConfigMap in dev", WAIT, || async {
        kubectl_json(
            &member,
            &cache,
            &[
                "get",
                "configmap",
                "settings",
                "-n",
                "app",
                "--show-managed-fields",
            ],
        )
    })
    .await;
    assert_eq!(settings["data"]["mode"], "dev");
    assert_eq!(
        settings["metadata"]["labels"]["fleet.cattle.io/bundle-deployment"],
        "demo-app"
    );
    let managers: Vec<&str> = settings["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(managers, ["fleet-agent"]);
    let web = kubectl_json(&member, &cache, &["get", "deployment", "web", "-n", "app"])
        .expect("the Deployment in dev");
    assert_eq!(
        web["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );

    // Applied, but not ready: no controller runs pods on the hub.
    let deployments: Api<BundleDeployment> =
        Api::namespaced(hub.clone(), "cluster-fleet-local-dev");
    let status = eventually("the agent's report", WAIT, || async {
        let deployment = deployments.get("demo-app").await.ok()?;
        let status = deployment.status.clone()?;
        (status.applied_deployment_id == deployment.spec.deployment_id).then_some(status)
    })
    .await;
    assert!(!status.ready);
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!(
        ready.message.as_deref(),
        Some("Deployment app/web: rollout not observed yet")
    );
    let deployed = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Deployed")
        .expect("Deployed");
    assert_eq!(deployed.status, "True");
    assert_eq!(status.resources.len(), 2);

    // A file removed from Git is pruned from the cluster.
    repo.remove("app/settings.yaml");
    repo.commit("drop the ConfigMap");
    eventually("the ConfigMap pruned", WAIT, || async {
        kubectl_json(
            &member,
            &cache,
            &["get", "configmap", "settings", "-n", "app"],
        )
        .is_none()
        .then_some(())
    })
    .await;
    assert!(kubectl_json(&member, &cache, &["get", "deployment", "web", "-n", "app"]).is_some());
    for stop in stops {
        let _ = stop.send(());
    }
}
