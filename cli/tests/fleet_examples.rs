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
