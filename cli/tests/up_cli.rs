//! The README's demo, `fleet up`, run as a user runs it: from a directory holding nothing
//! of this repository, checked with kubectl against the hub it leaves behind, then run
//! again, given a commit, and stopped with Ctrl-C (SIGINT).

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{kubectl, spawn, until, Running};
use fleet_testkit::{free_port, git, wait_for_port};

/// The demo command the README gives, after the binary's path.
const README_DEMO: &str = "cargo run --release --bin fleet -- up";

fn get(kubeconfig: &Path, kind: &str, name: &str, namespace: &str, path: &str) -> String {
    let (ok, text) = kubectl(
        kubeconfig,
        &[
            "get",
            kind,
            name,
            "-n",
            namespace,
            "-o",
            &format!("jsonpath={{{path}}}"),
        ],
        None,
    );
    assert!(ok, "kubectl get {kind} {name} -n {namespace} failed");
    text
}

/// Asserts each member holds its own variant of the three bundles.
fn assert_variants(hub: &Path) {
    for cluster in ["dev", "prod"] {
        let member = hub.join(format!("{cluster}.kubeconfig"));
        let prod = cluster == "prod";
        assert_eq!(
            get(&member, "configmap", "hello", "demo-yaml", ".data.greeting"),
            "Hello from fleet-rs"
        );
        assert_eq!(
            get(
                &member,
                "serviceaccount",
                "hello",
                "demo-yaml",
                ".metadata.name"
            ),
            "hello"
        );
        assert_eq!(
            get(
                &member,
                "configmap",
                "frontend-settings",
                "demo-kustomize",
                ".data.logLevel"
            ),
            if prod { "warn" } else { "debug" },
            "{cluster}: the kustomize overlay of its env"
        );
        assert_eq!(
            get(
                &member,
                "service",
                "frontend",
                "demo-kustomize",
                ".spec.type"
            ),
            // The dev overlay sets no type: Kubernetes defaults it, as the hub does.
            if prod { "LoadBalancer" } else { "ClusterIP" }
        );
        assert_eq!(
            get(
                &member,
                "configmap",
                "greeter",
                "demo-helm",
                ".data.message"
            ),
            format!("Hello from {cluster}"),
            "{cluster}: the helm values of its env"
        );
        assert_eq!(
            get(
                &member,
                "configmap",
                "greeter",
                "demo-helm",
                ".data.replicas"
            ),
            if prod { "3" } else { "1" }
        );
        assert_eq!(
            get(&member, "configmap", "greeter", "demo-helm", ".data.color"),
            "blue"
        );
        let owner = get(
            &member,
            "configmap",
            "greeter",
            "demo-helm",
            ".metadata.annotations.meta\\.helm\\.sh/release-name",
        );
        assert!(
            owner.is_empty() || owner == "greeter",
            "release name {owner}"
        );
    }
}

#[test]
fn the_readme_demo_deploys_each_variant_survives_a_restart_and_stops_on_ctrl_c() {
    let readme = std::fs::read_to_string(common::workspace().join("README.md")).expect("README");
    assert!(
        readme.contains(README_DEMO),
        "the README gives `{README_DEMO}` as the demo command"
    );
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let data = elsewhere.path().join("demo-data");
    let data_arg = data.display().to_string();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");

    // 1. Non-interactive, from a directory holding nothing of this repository.
    let output = Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(["up", "--data", &data_arg, "--listen", &listen])
        .args(["--exit-when-ready", "--timeout", "120"])
        .current_dir(elsewhere.path())
        .output()
        .expect("fleet up runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "fleet up --exit-when-ready failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("all 3 bundles Ready on dev, prod and edge"),
        "{stdout}"
    );
    assert!(
        stdout.contains("get gitrepos,bundles,clusters -A"),
        "{stdout}"
    );
    assert!(stdout.contains("list -n demo-helm"), "{stdout}");
    assert!(stdout.contains(&format!(
        "Stopped. Data kept in {}",
        data.canonicalize().expect("data").display()
    )));

    // 2. What it left is a hub's data directory: serve it and look with kubectl.
    let hub = data.join("hub");
    let mut served = spawn(&[
        "hub",
        "--data",
        &hub.display().to_string(),
        "--listen",
        &listen,
        "--cluster",
        "dev",
        "--cluster",
        "prod",
        "--cluster",
        "edge",
    ]);
    wait_for_port(port);
    let local = hub.join("local.kubeconfig");
    until("the hub", Duration::from_secs(30), || {
        kubectl(&local, &["get", "namespaces"], None).0
    });
    assert_variants(&hub);
    // The Helm bundle is a release real Helm lists, and its Deployment was rolled out (by
    // the workload simulator: the members have no kubelet).
    let prod = hub.join("prod.kubeconfig");
    assert_eq!(
        get(
            &prod,
            "deployment",
            "greeter",
            "demo-helm",
            ".status.readyReplicas"
        ),
        "3"
    );
    let listed = fleet_testkit::helm(
        &fleet_testkit::real_tool("helm4"),
        &prod,
        &elsewhere.path().join("helm-home"),
        &["list", "-n", "demo-helm", "-o", "json"],
    );
    let listed: serde_json::Value = serde_json::from_str(&listed).expect("helm list JSON");
    assert_eq!(listed[0]["name"], "greeter", "{listed}");
    assert_eq!(listed[0]["status"], "deployed", "{listed}");
    assert_eq!(listed[0]["chart"], "greeter-0.1.0", "{listed}");
    assert_eq!(
        get(
            &local,
            "gitrepo",
            "demo",
            "fleet-default",
            ".status.display.readyBundleDeployments"
        ),
        "9/9"
    );
    // edge, deployed to through its kubeconfig by the controllers' process, no agent.
    let edge = hub.join("edge.kubeconfig");
    assert_eq!(
        get(&edge, "configmap", "hello", "demo-yaml", ".data.greeting"),
        "Hello from fleet-rs"
    );
    let (_, clusters) = kubectl(
        &local,
        &["get", "clusters", "-n", "fleet-default", "-o", "name"],
        None,
    );
    assert_eq!(
        clusters.lines().collect::<Vec<_>>(),
        [
            "cluster.fleet.cattle.io/dev",
            "cluster.fleet.cattle.io/edge",
            "cluster.fleet.cattle.io/prod"
        ]
    );
    // The statuses the controller was pacing were written before it stopped.
    for cluster in ["dev", "edge", "prod"] {
        assert_eq!(
            get(
                &local,
                "cluster",
                cluster,
                "fleet-default",
                ".status.display.readyBundles"
            ),
            "3/3",
            "{cluster}"
        );
    }
    assert!(served.stop_with("TERM", Duration::from_secs(10)).success());

    // 3. Run again on the same data; a commit rolls out; Ctrl-C stops it cleanly.
    let mut up = Running(
        Command::new(env!("CARGO_BIN_EXE_fleet"))
            .args(["up", "--data", &data_arg, "--listen", &listen])
            .current_dir(elsewhere.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("fleet up starts"),
    );
    let lines = BufReader::new(up.0.stdout.take().expect("stdout"));
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    // Up, and following the repository: its first "commit ...: n/6 deployments ready" line
    // comes once it knows what it has synced, so a commit made now is one to push.
    let mut seen = Vec::new();
    let mut is_up = false;
    loop {
        let line = receiver
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("fleet up did not say it is up:\n{}", seen.join("\n")));
        is_up |= line.starts_with("fleet-rs is up");
        let following = is_up && line.starts_with("commit ");
        seen.push(line);
        if following {
            break;
        }
    }
    let repo = data.join("repo");
    let fleet_yaml = repo.join("helm-chart/fleet.yaml");
    let text = std::fs::read_to_string(&fleet_yaml).expect("fleet.yaml");
    std::fs::write(&fleet_yaml, text.replace("color: blue", "color: green")).expect("edit");
    git(&repo, &["commit", "-qam", "Green"]);
    let head = git(&repo, &["rev-parse", "main"]);
    // Only a push sets webhookCommit: fleet up pushed the commit to gitjob's webhook.
    until("the push of the commit", Duration::from_secs(30), || {
        get(
            &local,
            "gitrepo",
            "demo",
            "fleet-default",
            ".status.webhookCommit",
        ) == head
    });
    until("the green commit on prod", Duration::from_secs(60), || {
        kubectl(
            &prod,
            &[
                "get",
                "configmap",
                "greeter",
                "-n",
                "demo-helm",
                "-o",
                "jsonpath={.data.color}",
            ],
            None,
        )
        .1 == "green"
    });
    let status = up.stop_with("INT", Duration::from_secs(15));
    assert!(status.success(), "fleet up after Ctrl-C: {status:?}");
    let rest: Vec<String> = receiver.try_iter().collect();
    assert!(
        rest.iter().any(|l| l.starts_with("Stopped. Data kept in")),
        "{rest:?}"
    );
}
