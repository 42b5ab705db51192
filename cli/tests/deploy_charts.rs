//! The charts of `deploy/` as a cluster admin would install them: rendered by
//! `fleet helm template`, applied with kubectl to a hub, and the controllers then run with
//! nothing but the service accounts and RBAC the chart made. A GitRepo still reaches a
//! registered member, and the gitjob account is refused what it does not need.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{kubectl, spawn, spawn_logged, until, workspace};
use fleet_testkit::{free_port, wait_for_port, TestRepo};

const NAMESPACE: &str = "cattle-fleet-system";

fn template(chart: &str, release: &str, sets: &[String]) -> String {
    let mut args = vec![
        "helm".to_string(),
        "template".into(),
        release.into(),
        workspace().join(chart).display().to_string(),
        "-n".into(),
        NAMESPACE.into(),
    ];
    for set in sets {
        args.push("--set".into());
        args.push(set.clone());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::fleet_ok(&args)
}

fn apply(kubeconfig: &Path, manifests: &str) {
    let (ok, text) = kubectl(kubeconfig, &["apply", "-f", "-"], Some(manifests));
    assert!(ok, "kubectl apply failed: {text}");
}

/// A kubeconfig like `admin` but authenticated as service account `account`, whose token
/// comes from a service-account-token Secret the hub fills in.
fn kubeconfig_of(admin: &Path, account: &str, dir: &Path) -> PathBuf {
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {account}-token\n  namespace: {NAMESPACE}\n  annotations:\n    kubernetes.io/service-account.name: {account}\ntype: kubernetes.io/service-account-token\n"
    );
    apply(admin, &secret);
    let mut token = String::new();
    until("the service account token", Duration::from_secs(10), || {
        let (_, text) = kubectl(
            admin,
            &[
                "get",
                "secret",
                &format!("{account}-token"),
                "-n",
                NAMESPACE,
                "-o",
                "jsonpath={.data.token}",
            ],
            None,
        );
        token = text;
        !token.is_empty()
    });
    let token =
        String::from_utf8(base64_decode(&token).expect("base64 token")).expect("utf-8 token");
    let mut config: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(admin).expect("kubeconfig"))
            .expect("kubeconfig YAML");
    config["users"][0]["user"] = serde_yaml_ng::from_str(&format!("token: {token}")).expect("user");
    let path = dir.join(format!("{account}.kubeconfig"));
    std::fs::write(&path, serde_yaml_ng::to_string(&config).expect("YAML")).expect("write");
    path
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
}

#[test]
fn the_charts_install_and_their_least_privileges_suffice() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let hub_dir = dir.path().join("hub");
    let _hub = spawn(&[
        "hub",
        "--data",
        &hub_dir.display().to_string(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--cluster",
        "edge",
    ]);
    wait_for_port(port);
    let admin = hub_dir.join("local.kubeconfig");
    until("the hub", Duration::from_secs(30), || {
        kubectl(&admin, &["get", "namespaces"], None).0
    });
    common::apply_fleet_crds(&admin);
    for namespace in [NAMESPACE, "fleet-default"] {
        assert!(kubectl(&admin, &["create", "namespace", namespace], None).0);
    }

    // The controllers' chart, as kubectl sees it.
    let url = format!("https://127.0.0.1:{port}");
    apply(
        &admin,
        &template(
            "deploy/charts/fleet-rs",
            "fleet",
            &[format!("apiServerURL={url}")],
        ),
    );
    let (_, deployments) = kubectl(
        &admin,
        &["get", "deployments", "-n", NAMESPACE, "-o", "name"],
        None,
    );
    assert_eq!(
        deployments.lines().collect::<Vec<_>>(),
        [
            "deployment.apps/fleet-fleet-rs-controller",
            "deployment.apps/fleet-fleet-rs-gitjob"
        ]
    );

    // Run them as the chart's service accounts.
    let gitjob = kubeconfig_of(&admin, "fleet-fleet-rs-gitjob", dir.path());
    let controller = kubeconfig_of(&admin, "fleet-fleet-rs-controller", dir.path());
    let (ok, _) = kubectl(&gitjob, &["get", "clusters", "-A"], None);
    assert!(!ok, "gitjob's account may not read Clusters");
    let (ok, _) = kubectl(&gitjob, &["get", "secrets", "-A"], None);
    assert!(!ok, "gitjob's account may not list Secrets");
    let (ok, _) = kubectl(&controller, &["get", "gitrepos", "-A"], None);
    assert!(ok, "the controller's account reads GitRepos");
    let gitrepo_of = |name: &str| {
        format!("apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: {name}\n  namespace: fleet-default\nspec:\n  repo: https://example.invalid/{name}\n")
    };
    let (ok, _) = kubectl(
        &controller,
        &["create", "-f", "-"],
        Some(&gitrepo_of("nope")),
    );
    assert!(!ok, "the controller's account may not create GitRepos");
    let (ok, _) = kubectl(&gitjob, &["create", "-f", "-"], Some(&gitrepo_of("nope")));
    assert!(!ok, "gitjob's account may not create GitRepos");
    let logs = dir.path();
    let ca = dir.path().join("hub-ca.pem");
    let admin_config: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&admin).expect("kubeconfig"))
            .expect("kubeconfig YAML");
    let ca_data = admin_config["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .expect("the hub's CA");
    std::fs::write(&ca, base64_decode(ca_data).expect("base64 CA")).expect("CA file");
    let metrics_port = free_port();
    let metrics_listen = format!("127.0.0.1:{metrics_port}");
    let _controller = spawn_logged(
        &[
            "controller",
            "--metrics-listen",
            &metrics_listen,
            "--kubeconfig",
            &controller.display().to_string(),
            "--api-server-url",
            &url,
            "--api-server-ca",
            &ca.display().to_string(),
            "--data",
            &dir.path().join("controller").display().to_string(),
            // As the chart runs it: the Lease is claimed with the chart's RBAC.
            "--leader-elect",
            "--leader-election-namespace",
            NAMESPACE,
        ],
        &logs.join("controller.log"),
    );
    let _gitjob = spawn_logged(
        &[
            "gitjob",
            "--kubeconfig",
            &gitjob.display().to_string(),
            "--data",
            &dir.path().join("gitjob").display().to_string(),
            "--allow-local-sources",
            "--leader-elect",
            "--leader-election-namespace",
            NAMESPACE,
        ],
        &logs.join("gitjob.log"),
    );

    // The agent chart is accepted by the member; the agent itself runs as a process.
    let edge = hub_dir.join("edge.kubeconfig");
    assert!(kubectl(&edge, &["create", "namespace", NAMESPACE], None).0);
    apply(
        &edge,
        &template(
            "deploy/charts/fleet-rs-agent",
            "fleet-agent",
            &[
                "registration.tokenSecret=fleet-token".into(),
                "registration.clusterName=edge".into(),
                "registration.labels.env=prod".into(),
            ],
        ),
    );
    let token = common::fleet_ok(&[
        "token",
        "create",
        "--kubeconfig",
        &admin.display().to_string(),
    ]);
    let token_file = dir.path().join("token.kubeconfig");
    std::fs::write(&token_file, token).expect("token");
    let _agent = spawn_logged(
        &[
            "agent",
            "--register",
            &token_file.display().to_string(),
            "--cluster-name",
            "edge",
            "--label",
            "env=prod",
            "--kubeconfig",
            &edge.display().to_string(),
            "--agent-namespace",
            NAMESPACE,
        ],
        &logs.join("agent.log"),
    );

    let repo = TestRepo::new();
    repo.write("app/fleet.yaml", "defaultNamespace: shop\n").write(
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: chart-installed\n",
    );
    repo.commit("first");
    let gitrepo = format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: shop\n  namespace: fleet-default\nspec:\n  repo: {}\n  branch: main\n  pollingInterval: 1s\n  targets:\n  - clusterSelector:\n      matchLabels:\n        env: prod\n",
        repo.url()
    );
    apply(&admin, &gitrepo);
    let arrived = std::panic::catch_unwind(|| {
        until("the ConfigMap on edge", Duration::from_secs(60), || {
            kubectl(
                &edge,
                &[
                    "get",
                    "configmap",
                    "settings",
                    "-n",
                    "shop",
                    "-o",
                    "jsonpath={.data.mode}",
                ],
                None,
            )
            .1 == "chart-installed"
        });
        until("GitRepo status 1/1", Duration::from_secs(30), || {
            kubectl(
                &admin,
                &[
                    "get",
                    "gitrepo",
                    "shop",
                    "-n",
                    "fleet-default",
                    "-o",
                    "jsonpath={.status.display.readyBundleDeployments}",
                ],
                None,
            )
            .1 == "1/1"
        });
    });
    if arrived.is_err() {
        for log in ["controller.log", "gitjob.log", "agent.log"] {
            let text = std::fs::read_to_string(logs.join(log)).unwrap_or_default();
            eprintln!("--- {log}\n{text}");
        }
        panic!("the GitRepo did not reach the member with the chart's RBAC");
    }
    let metrics = ureq::get(&format!("http://{metrics_listen}/metrics"))
        .call()
        .expect("the controller serves /metrics")
        .body_mut()
        .read_to_string()
        .expect("text");
    let count = |controller: &str| -> u64 {
        let prefix = format!("fleet_controller_reconciles_total{{controller=\"{controller}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {prefix} in {metrics}"))
    };
    assert!(count("bundle") >= 1, "{metrics}");
    assert!(count("registration") >= 1, "{metrics}");
    // Fleet's state metrics, from the controller's caches: the deployment of the GitRepo's
    // bundle Ready (one series of seven at 1), its cluster counting the GitRepo ready.
    let series = |name: &str| -> Vec<&str> {
        let prefix = format!("{name}{{");
        metrics.lines().filter(|l| l.starts_with(&prefix)).collect()
    };
    let deployment = series("fleet_bundledeployment_state");
    let shop: Vec<&&str> = deployment
        .iter()
        .filter(|l| l.contains("repo=\"shop\""))
        .collect();
    assert_eq!(shop.len(), 7, "{metrics}");
    let on: Vec<&&&str> = shop.iter().filter(|l| l.ends_with(" 1")).collect();
    assert!(
        on.len() == 1 && on[0].ends_with("state=\"Ready\"} 1"),
        "{metrics}"
    );
    let ready_repos = series("fleet_cluster_ready_git_repos");
    assert!(ready_repos.iter().any(|l| l.ends_with(" 1")), "{metrics}");
}
