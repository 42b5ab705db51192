//! The charts of `deploy/` installed on real clusters: rendered by real Helm 4 (with their
//! defaults, and the agent's with narrow RBAC), applied with kubectl to a management
//! cluster and two members (kube-apiserver, kube-controller-manager and etcd), and each
//! Deployment then run as its Pod would run: the chart's arguments and environment, its
//! service account's token, its volumes, and a read-only root filesystem, so that a write
//! anywhere its chart declares no volume fails. A GitRepo then reaches both members,
//! including a bundle the agent renders itself (into its `/tmp`).

mod common;

use std::path::Path;
use std::time::Duration;

use common::workspace;
use fleet_testkit::{
    free_port, real_tool, GitDaemon, Kubectl, PodProcess, RealCluster, RealControlPlane, TestRepo,
};
use serde_json::Value;

const NAMESPACE: &str = "cattle-fleet-system";
const WAIT: Duration = Duration::from_secs(120);
/// What the image sets (deploy/Dockerfile).
const IMAGE_ENV: [(&str, &str); 1] = [("HOME", "/tmp")];

/// `helm template` of a chart of `deploy/charts/` with real Helm 4.
fn template(chart: &str, release: &str, values: &[String], files: &[String]) -> String {
    let mut helm = std::process::Command::new(real_tool("helm4"));
    helm.args(["template", release])
        .arg(workspace().join("deploy/charts").join(chart))
        .args(["-n", NAMESPACE]);
    for value in values {
        helm.args(["--set", value]);
    }
    for file in files {
        helm.args(["--set-file", file]);
    }
    let output = helm.output().expect("helm runs");
    assert!(
        output.status.success(),
        "helm template {chart}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// The documents of a rendered chart.
fn documents(text: &str) -> Vec<Value> {
    text.split("\n---")
        .filter_map(|doc| serde_yaml_ng::from_str::<Value>(doc).ok())
        .filter(|doc| doc.is_object())
        .collect()
}

async fn apply(kubectl: &Kubectl, manifests: &str) {
    kubectl
        .run_with(&["apply", "-f", "-"], manifests)
        .await
        .success();
}

/// Runs every Deployment of `manifests` in `cluster` as its Pod.
async fn run_deployments(manifests: &str, cluster: &RealCluster, dir: &Path) -> Vec<PodProcess> {
    let mut pods = Vec::new();
    for deployment in documents(manifests)
        .iter()
        .filter(|doc| doc["kind"] == "Deployment")
    {
        pods.push(
            PodProcess::start(
                deployment,
                Path::new(env!("CARGO_BIN_EXE_fleet")),
                &IMAGE_ENV,
                cluster,
                dir,
            )
            .await,
        );
    }
    pods
}

/// The Pods of a test, whose logs are printed if it fails.
struct Pods(Vec<PodProcess>);

impl Drop for Pods {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for pod in &self.0 {
                eprintln!("--- pod\n{}", pod.logs());
            }
        }
    }
}

const CAPABILITIES_TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: capabilities
data:
  apps: {{ if .Capabilities.APIVersions.Has "apps/v1" }}"served"{{ else }}"missing"{{ end }}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_charts_run_on_real_clusters_with_their_own_accounts_and_volumes() {
    let plane = RealControlPlane::start(&["management", "wide", "narrow"]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let management = plane.cluster("management");
    let admin = management.kubectl();
    admin
        .run(&[
            "apply",
            "-f",
            &workspace().join("deploy/crds").display().to_string(),
        ])
        .await
        .success();
    for namespace in [NAMESPACE, "fleet-default"] {
        admin
            .run(&["create", "namespace", namespace])
            .await
            .success();
    }
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, management.ca_pem()).expect("CA");
    let controllers = template(
        "fleet-rs",
        "fleet",
        &[
            format!("apiServerURL={}", management.url()),
            format!("controller.metricsPort={}", free_port()),
            format!("gitjob.metricsPort={}", free_port()),
            format!("gitjob.webhook.port={}", free_port()),
            // The Git server of this test is on loopback, as the pods' host.
            "gitjob.allowLocalSources=true".into(),
        ],
        &[format!("apiServerCA={}", ca.display())],
    );
    apply(&admin, &controllers).await;
    let mut pods = Pods(run_deployments(&controllers, management, dir.path()).await);

    // A registration token for agents, made by the CLI for the address members reach.
    let token = common::fleet_ok(&[
        "token",
        "create",
        "--kubeconfig",
        &management.kubeconfig().display().to_string(),
        "--ttl",
        "1h",
        "--api-server-url",
        management.url(),
        "--api-server-ca",
        &ca.display().to_string(),
    ]);
    let token_secret = |namespace: &str| {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "fleet-token", "namespace": namespace},
            "stringData": {"kubeconfig": token},
        })
        .to_string()
    };
    let narrow_rules = "rbac.rules[0].apiGroups[0]=,rbac.rules[0].resources[0]=configmaps,\
        rbac.rules[0].verbs={get,list,watch,create,update,patch,delete}";
    for (member, extra) in [("wide", None), ("narrow", Some(narrow_rules))] {
        let cluster = plane.cluster(member);
        let kubectl = cluster.kubectl();
        kubectl
            .run(&["create", "namespace", NAMESPACE])
            .await
            .success();
        apply(&kubectl, &token_secret(NAMESPACE)).await;
        let mut values = vec![
            "registration.tokenSecret=fleet-token".to_string(),
            format!("registration.clusterName={member}"),
            format!("registration.labels.rbac={member}"),
            format!("healthPort={}", free_port()),
            "resyncSeconds=5".into(),
        ];
        if let Some(rules) = extra {
            values.push("rbac.clusterAdmin=false".into());
            values.push(rules.to_string());
        }
        let agent = template("fleet-rs-agent", "fleet-agent", &values, &[]);
        apply(&kubectl, &agent).await;
        pods.0
            .extend(run_deployments(&agent, cluster, dir.path()).await);
    }

    let repos = dir.path().join("repos");
    let repo = TestRepo::in_dir(&repos, "app");
    repo.write("plain/fleet.yaml", "defaultNamespace: shop\n")
        .write(
            "plain/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: chart-installed\n",
        )
        .write("caps/Chart.yaml", "apiVersion: v2\nname: caps\nversion: 0.1.0\n")
        .write("caps/templates/cm.yaml", CAPABILITIES_TEMPLATE)
        .write("caps/fleet.yaml", "defaultNamespace: shop\n");
    repo.commit("first");
    let daemon = GitDaemon::start(&repos);
    let gitrepo = format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: shop\n  namespace: fleet-default\nspec:\n  repo: {}\n  branch: main\n  pollingInterval: 1s\n  paths: [plain, caps]\n  targets:\n  - clusterSelector: {{}}\n",
        daemon.url("app")
    );
    apply(&admin, &gitrepo).await;
    let arrived = || async {
        for member in ["wide", "narrow"] {
            let kubectl = plane.cluster(member).kubectl();
            for (name, key, value) in [
                ("settings", "mode", "chart-installed"),
                ("capabilities", "apps", "served"),
            ] {
                let path = format!("jsonpath={{.data.{key}}}");
                let args = ["get", "configmap", name, "-n", "shop", "-o", &path];
                if kubectl.run(&args).await.stdout != value {
                    return false;
                }
            }
        }
        let path = "jsonpath={.status.display.readyBundleDeployments}";
        let args = ["get", "gitrepo", "shop", "-n", "fleet-default", "-o", path];
        admin.run(&args).await.stdout == "4/4"
    };
    let started = std::time::Instant::now();
    let mut done = false;
    while !done && started.elapsed() < WAIT && !pods.0.iter_mut().any(PodProcess::exited) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        done = arrived().await;
    }
    assert!(
        done,
        "the GitRepo did not reach the members with the charts as installed"
    );
    for pod in &pods.0 {
        let logs = pod.logs();
        assert!(
            !logs.contains("Read-only file system"),
            "a write outside the chart's volumes:\n{logs}"
        );
    }
}

/// The two commands of Fleet's quick start, on real clusters: `fleet install manager |
/// kubectl apply -f -` on the management cluster; `fleet install agent-token > token` and
/// `kubectl apply -f token` on a member, whose agent then registers; a GitRepo reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_commands_install_the_manager_and_register_a_member() {
    let plane = RealControlPlane::start(&["management", "member"]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let management = plane.cluster("management");
    let admin = management.kubectl();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, management.ca_pem()).expect("CA");
    let ca = ca.display().to_string();
    let manager = common::fleet_ok(&[
        "install",
        "manager",
        "--set",
        &format!("apiServerURL={}", management.url()),
        "--set-file",
        &format!("apiServerCA={ca}"),
        "--set",
        &format!("controller.metricsPort={}", free_port()),
        "--set",
        &format!("gitjob.metricsPort={}", free_port()),
        "--set",
        &format!("gitjob.webhook.port={}", free_port()),
        // The Git server of this test is on loopback, as the pods' host.
        "--set",
        "gitjob.allowLocalSources=true",
    ]);
    apply(&admin, &manager).await;
    let mut pods = Pods(run_deployments(&manager, management, dir.path()).await);

    let management_kubeconfig = management.kubeconfig().display().to_string();
    let url = management.url().to_string();
    let health = format!("healthPort={}", free_port());
    let token = tokio::task::spawn_blocking(move || {
        common::fleet_ok(&[
            "install",
            "agent-token",
            "--kubeconfig",
            &management_kubeconfig,
            "--ttl",
            "1h",
            "--api-server-url",
            &url,
            "--api-server-ca",
            &ca,
            "--cluster-name",
            "member",
            "--label",
            "env=test",
            "--set",
            &health,
            "--set",
            "resyncSeconds=5",
        ])
    })
    .await
    .expect("fleet install agent-token");
    let member = plane.cluster("member");
    apply(&member.kubectl(), &token).await;
    pods.0
        .extend(run_deployments(&token, member, dir.path()).await);

    let repos = dir.path().join("repos");
    let repo = TestRepo::in_dir(&repos, "app");
    repo.write(
        "plain/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  mode: two-commands\n",
    );
    repo.commit("first");
    let daemon = GitDaemon::start(&repos);
    let gitrepo = format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: quick\n  namespace: fleet-default\nspec:\n  repo: {}\n  branch: main\n  pollingInterval: 1s\n  paths: [plain]\n  targets:\n  - clusterSelector: {{matchLabels: {{env: test}}}}\n",
        daemon.url("app")
    );
    apply(&admin, &gitrepo).await;
    let member_kubectl = member.kubectl();
    let path = "jsonpath={.data.mode}";
    let args = ["get", "configmap", "settings", "-n", "default", "-o", path];
    let started = std::time::Instant::now();
    let mut arrived = false;
    while !arrived && started.elapsed() < WAIT && !pods.0.iter_mut().any(PodProcess::exited) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        arrived = member_kubectl.run(&args).await.stdout == "two-commands";
    }
    assert!(
        arrived,
        "the GitRepo did not reach the member installed by `fleet install`"
    );
    let cluster = admin
        .run(&[
            "get",
            "clusters.fleet.cattle.io",
            "member",
            "-n",
            "fleet-default",
            "-o",
            "json",
        ])
        .await
        .success()
        .json();
    assert_eq!(cluster["metadata"]["labels"]["env"], "test", "{cluster}");
}
