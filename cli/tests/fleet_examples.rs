//! `fleet test` on Rancher Fleet's public examples, checked against what each example's
//! README says Fleet deploys per environment.

mod common;

use common::{documents, fleet, fleet_ok, shared_real};
use serde_json::Value;

fn render(dir: &str, labels: &[&str]) -> Vec<Value> {
    let path = shared_real().join("fleet-examples").join(dir);
    let path = path.to_string_lossy().to_string();
    let mut args = vec!["test", path.as_str()];
    for label in labels {
        args.extend(["-l", label]);
    }
    documents(&fleet_ok(&args))
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
}

fn ids(docs: &[Value]) -> Vec<String> {
    docs.iter()
        .map(|d| {
            format!(
                "{}/{}",
                d["kind"].as_str().unwrap_or(""),
                d["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn multi_cluster_manifests_overlays_per_environment() {
    let dev = render("multi-cluster/manifests", &["env=dev"]);
    assert!(
        find(&dev, "Deployment", "redis-slave").is_none(),
        "noreplication removes the followers"
    );
    assert_eq!(
        find(&dev, "Service", "redis-slave").expect("svc")["spec"]["selector"]["role"],
        "master"
    );
    assert_eq!(
        find(&dev, "Deployment", "frontend").expect("fe")["spec"]["replicas"],
        1
    );

    let test = render("multi-cluster/manifests", &["env=test"]);
    assert_eq!(
        find(&test, "Deployment", "frontend").expect("fe")["spec"]["replicas"],
        3
    );
    assert_eq!(
        find(&test, "Service", "frontend").expect("svc")["spec"]["type"],
        "NodePort"
    );

    let prod = render("multi-cluster/manifests", &["env=prod"]);
    assert_eq!(
        find(&prod, "Deployment", "frontend").expect("fe")["spec"]["replicas"],
        3
    );
    assert_eq!(
        find(&prod, "Service", "frontend").expect("svc")["spec"]["type"],
        "LoadBalancer"
    );
    for doc in &prod {
        assert_eq!(doc["metadata"]["namespace"], "fleet-mc-manifest-example");
    }
    assert_eq!(
        ids(&prod),
        vec![
            "Service/frontend",
            "Service/redis-master",
            "Service/redis-slave",
            "Deployment/frontend",
            "Deployment/redis-master",
            "Deployment/redis-slave"
        ],
        "Helm install order, files in path order within a kind"
    );
}

#[test]
fn multi_cluster_kustomize_overlays_per_environment() {
    let dev = render("multi-cluster/kustomize", &["env=dev"]);
    assert_eq!(
        find(&dev, "Deployment", "redis-slave").expect("followers")["spec"]["replicas"],
        0
    );
    assert_eq!(
        find(&dev, "Service", "redis-slave").expect("svc")["spec"]["selector"]["role"],
        "master"
    );
    let test = render("multi-cluster/kustomize", &["env=test"]);
    assert_eq!(
        find(&test, "Deployment", "frontend").expect("fe")["spec"]["replicas"],
        3
    );
    let prod = render("multi-cluster/kustomize", &["env=prod"]);
    assert_eq!(
        find(&prod, "Service", "frontend").expect("svc")["spec"]["type"],
        "LoadBalancer"
    );
    assert!(prod
        .iter()
        .all(|d| d["metadata"]["namespace"] == "fleet-mc-kustomize-example"));
}

#[test]
fn single_cluster_examples_render() {
    let simple = render("simple", &[]);
    assert_eq!(simple.len(), 6);
    let manifests = render("single-cluster/manifests", &[]);
    assert_eq!(
        manifests.len(),
        6,
        "files in subdirectories belong to the bundle"
    );
    assert!(manifests
        .iter()
        .all(|d| d["metadata"]["namespace"] == "fleet-manifest-example"));
    let kustomize = render("single-cluster/kustomize", &[]);
    assert_eq!(
        find(&kustomize, "Deployment", "redis-slave").expect("followers")["spec"]["replicas"],
        0,
        "the dev overlay scales the followers to zero"
    );
    assert!(kustomize
        .iter()
        .all(|d| d["metadata"]["namespace"] == "fleet-kustomize-example"));
    let hardened = render("hardened", &[]);
    assert_eq!(hardened.len(), 6);
    assert!(hardened
        .iter()
        .all(|d| d["metadata"]["namespace"] == "hardened-fleet-deployments"));
}

#[test]
fn multi_cluster_helm_customizes_per_environment_as_its_readme_says() {
    // Dev: only the redis leader, no followers.
    let dev = render("multi-cluster/helm", &["env=dev"]);
    assert!(find(&dev, "Deployment", "redis-master").is_some());
    assert!(
        find(&dev, "Deployment", "redis-slave").is_none(),
        "{:?}",
        ids(&dev)
    );
    assert!(dev
        .iter()
        .all(|d| d["metadata"]["namespace"] == "fleet-mc-helm-example"));
    // Test: the frontend scaled to 3.
    let test = render("multi-cluster/helm", &["env=test"]);
    assert_eq!(
        find(&test, "Deployment", "frontend").expect("frontend")["spec"]["replicas"],
        3
    );
    assert_eq!(
        find(&test, "Service", "frontend").expect("svc")["spec"]["type"],
        "NodePort"
    );
    // Prod: 3 replicas and a LoadBalancer.
    let prod = render("multi-cluster/helm", &["env=prod"]);
    assert_eq!(
        find(&prod, "Deployment", "frontend").expect("frontend")["spec"]["replicas"],
        3
    );
    assert_eq!(
        find(&prod, "Service", "frontend").expect("svc")["spec"]["type"],
        "LoadBalancer"
    );
    assert!(
        find(&prod, "Deployment", "redis-slave").is_some(),
        "replication stays on"
    );
}

#[test]
fn single_cluster_helm_renders_with_its_values() {
    let docs = render("single-cluster/helm", &[]);
    assert_eq!(
        find(&docs, "Deployment", "frontend").expect("frontend")["spec"]["replicas"],
        2
    );
    assert!(docs
        .iter()
        .all(|d| d["metadata"]["namespace"] == "fleet-helm-example"));
}

#[test]
fn remote_charts_are_fetched_and_an_unreachable_host_is_named() {
    let path = shared_real().join("fleet-examples/multi-cluster/helm-external");
    let output = fleet(&["test", &path.to_string_lossy(), "-l", "env=dev"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("fetching Helm chart `https://github.com/rancher/fleet-examples/releases/download/example/guestbook-0.0.1.tgz`"),
        "{stderr}"
    );
}

#[test]
fn every_example_is_lint_clean_but_remote_charts() {
    let root = shared_real().join("fleet-examples");
    let output = fleet(&["lint", &root.to_string_lossy()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for line in stderr.lines().filter(|l| !l.starts_with("error:")) {
        assert!(
            line.contains("is a remote chart"),
            "only remote charts may fail offline: {line}"
        );
    }
}

/// Copies the tree `from` into `to`, leaving out files named `skip`.
fn copy_tree(from: &std::path::Path, to: &std::path::Path, skip: &str) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target, skip);
        } else if entry.file_name() != skip {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn run_tool(tool: &std::path::Path, args: &[&str]) -> String {
    let output = std::process::Command::new(tool)
        .args(args)
        .output()
        .expect("run tool");
    assert!(
        output.status.success(),
        "{} {args:?}: {}",
        tool.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

fn by_id(mut docs: Vec<Value>) -> Vec<Value> {
    docs.sort_by_key(|d| ids(std::slice::from_ref(d)));
    docs
}

#[test]
fn helm_kustomize_examples_run_the_chart_output_through_the_overlay_as_fleet_does() {
    // The examples name a remote chart; as the corpus README says, a copy of the guestbook
    // chart of `single-cluster/helm` goes inside the bundle instead. The judge is real
    // Helm 4 and kustomize: `helm template`, its output given to the overlay as
    // `fleet-manifests.yaml` first in `resources` (what Fleet's post-renderer does), then
    // `kubectl kustomize`, then the fleet.yaml's namespace on every object.
    let helm = fleet_testkit::real_tool("helm4");
    let kubectl = fleet_testkit::real_tool("kubectl137");
    let examples = shared_real().join("fleet-examples");
    let cases = [
        ("single-cluster/helm-kustomize", None, "overlays/dev"),
        (
            "multi-cluster/helm-kustomize",
            Some("env=dev"),
            "overlays/dev",
        ),
        (
            "multi-cluster/helm-kustomize",
            Some("env=test"),
            "overlays/test",
        ),
        (
            "multi-cluster/helm-kustomize",
            Some("env=prod"),
            "overlays/prod",
        ),
    ];
    for (example, label, overlay) in cases {
        let work = tempfile::tempdir().expect("tempdir");
        let bundle = work.path().join("bundle");
        copy_tree(&examples.join(example), &bundle, "");
        copy_tree(
            &examples.join("single-cluster/helm"),
            &bundle.join("chart"),
            "fleet.yaml",
        );
        let fleet_yaml = std::fs::read_to_string(bundle.join("fleet.yaml")).expect("fleet.yaml");
        let namespace = fleet_yaml
            .lines()
            .find_map(|l| l.strip_prefix("namespace: "))
            .expect("namespace")
            .to_string();
        let local = fleet_yaml.replace(
            "https://github.com/rancher/fleet-examples/releases/download/example/guestbook-0.0.1.tgz",
            "./chart",
        );
        assert_ne!(local, fleet_yaml, "{example}: the chart line is replaced");
        std::fs::write(bundle.join("fleet.yaml"), local).expect("write");
        let bundle_arg = bundle.to_string_lossy().to_string();
        let mut args = vec!["test", bundle_arg.as_str()];
        if let Some(label) = label {
            args.extend(["-l", label]);
        }
        let ours = by_id(documents(&fleet_ok(&args)));

        let chart_output = run_tool(
            &helm,
            &[
                "template",
                "test",
                &bundle.join("chart").to_string_lossy(),
                "--namespace",
                &namespace,
            ],
        );
        let judged = work.path().join("judged");
        copy_tree(&bundle.join(overlay), &judged, "");
        std::fs::write(judged.join("fleet-manifests.yaml"), chart_output).expect("write");
        let kustomization =
            std::fs::read_to_string(judged.join("kustomization.yaml")).expect("kustomization");
        std::fs::write(
            judged.join("kustomization.yaml"),
            format!("resources:\n- fleet-manifests.yaml\n{kustomization}"),
        )
        .expect("write");
        let mut expected = documents(&run_tool(
            &kubectl,
            &["kustomize", &judged.to_string_lossy()],
        ));
        for doc in &mut expected {
            doc["metadata"]["namespace"] = Value::from(namespace.as_str());
        }
        let expected = by_id(expected);
        assert_eq!(ids(&ours), ids(&expected), "{example} {label:?}");
        assert_eq!(ours, expected, "{example} {label:?}");
        if overlay == "overlays/dev" {
            let service = find(&ours, "Service", "redis-slave").expect("redis-slave service");
            assert_eq!(
                service["spec"]["selector"]["role"], "master",
                "the overlay's patch is applied"
            );
        }
    }
}
