//! The crates' layering, read from `cargo metadata`: every edge between workspace crates is
//! one that docs/architecture.md allows, the agent links no Git and no fetcher,
//! the renderer no network or Kubernetes client, and test support stays out of every
//! production crate. A forbidden edge that comes back fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// The workspace crates and the workspace crates each may depend on (normal and build
/// dependencies; dev-dependencies are the tests' business).
const ALLOWED: &[(&str, &[&str])] = &[
    ("fleet-api", &[]),
    ("fleet-objects", &["fleet-api"]),
    ("fleet-helm", &[]),
    ("fleet-files", &["fleet-objects"]),
    (
        "fleet-kustomize",
        &["fleet-objects", "fleet-files", "fleet-helm"],
    ),
    (
        "fleet-renderer",
        &[
            "fleet-api",
            "fleet-objects",
            "fleet-files",
            "fleet-helm",
            "fleet-kustomize",
        ],
    ),
    ("fleet-hub", &["fleet-objects"]),
    (
        "fleet-charts",
        &["fleet-api", "fleet-objects", "fleet-helm", "fleet-renderer"],
    ),
    (
        "fleet-gitjob",
        &[
            "fleet-api",
            "fleet-objects",
            "fleet-kustomize",
            "fleet-renderer",
            "fleet-charts",
        ],
    ),
    (
        "fleet-controller",
        &[
            "fleet-api",
            "fleet-objects",
            "fleet-renderer",
            "fleet-charts",
        ],
    ),
    (
        "fleet-agent",
        &["fleet-api", "fleet-objects", "fleet-helm", "fleet-renderer"],
    ),
    (
        "fleet-local",
        &[
            "fleet-hub",
            "fleet-objects",
            "fleet-gitjob",
            "fleet-controller",
            "fleet-agent",
        ],
    ),
    (
        "fleet-cli",
        &[
            "fleet-api",
            "fleet-objects",
            "fleet-files",
            "fleet-helm",
            "fleet-kustomize",
            "fleet-renderer",
            "fleet-hub",
            "fleet-charts",
            "fleet-gitjob",
            "fleet-controller",
            "fleet-agent",
            "fleet-local",
        ],
    ),
    (
        "fleet-testkit",
        &["fleet-api", "fleet-objects", "fleet-hub"],
    ),
    (
        "fleet-bench",
        &[
            "fleet-api",
            "fleet-objects",
            "fleet-renderer",
            "fleet-hub",
            "fleet-charts",
            "fleet-gitjob",
            "fleet-agent",
            "fleet-local",
            "fleet-testkit",
        ],
    ),
    ("fleet-e2e", &[]),
];

/// Crates that only tests and benchmarks may use.
const TEST_ONLY: &[&str] = &["fleet-testkit", "fleet-bench", "fleet-e2e"];

/// The workspace as its manifests declare it: each member's workspace dependencies
/// (normal and build, optional or not) and its features.
struct Workspace {
    deps: BTreeMap<String, BTreeSet<String>>,
    features: BTreeMap<String, BTreeSet<String>>,
}

fn cargo(args: &[&str]) -> Vec<u8> {
    let output = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

impl Workspace {
    fn read() -> Self {
        let metadata: Value =
            serde_json::from_slice(&cargo(&["metadata", "--format-version", "1", "--no-deps"]))
                .expect("metadata JSON");
        let packages = metadata["packages"].as_array().expect("packages");
        let members: BTreeSet<String> = packages.iter().map(|p| string(&p["name"])).collect();
        let mut deps = BTreeMap::new();
        let mut features = BTreeMap::new();
        for package in packages {
            let name = string(&package["name"]);
            let own: BTreeSet<String> = package["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"] != "dev")
                .map(|d| string(&d["name"]))
                .filter(|d| members.contains(d))
                .collect();
            deps.insert(name.clone(), own);
            let names = package["features"]
                .as_object()
                .map(|f| f.keys().cloned().collect())
                .unwrap_or_default();
            features.insert(name, names);
        }
        Self { deps, features }
    }

    fn members(&self) -> BTreeSet<String> {
        self.deps.keys().cloned().collect()
    }
}

/// Every package `crate_name` links (normal and build dependencies, with its own features
/// only), as `cargo tree -p` lists them.
fn reach(crate_name: &str) -> BTreeSet<String> {
    let tree = cargo(&[
        "tree",
        "-p",
        crate_name,
        "-e",
        "normal,build",
        "--prefix",
        "none",
        "--locked",
    ]);
    String::from_utf8_lossy(&tree)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != crate_name)
        .map(String::from)
        .collect()
}

fn string(value: &Value) -> String {
    value.as_str().expect("a string").to_string()
}

#[test]
fn workspace_edges_are_the_allowed_ones() {
    let workspace = Workspace::read();
    let allowed: BTreeMap<&str, BTreeSet<String>> = ALLOWED
        .iter()
        .map(|(name, deps)| (*name, deps.iter().map(|d| d.to_string()).collect()))
        .collect();
    let listed: BTreeSet<String> = allowed.keys().map(|k| k.to_string()).collect();
    assert_eq!(
        workspace.members(),
        listed,
        "every workspace crate is listed here and in docs/architecture.md"
    );
    let mut forbidden = Vec::new();
    for (member, deps) in &workspace.deps {
        for dep in deps {
            if !allowed[member.as_str()].contains(dep) {
                forbidden.push(format!("{member} -> {dep}"));
            }
        }
    }
    assert!(forbidden.is_empty(), "forbidden edges: {forbidden:?}");
}

/// The packages among `reached` named in `names` or starting with one of `prefixes`.
fn banned<'a>(reached: &'a BTreeSet<String>, names: &[&str], prefixes: &[&str]) -> Vec<&'a String> {
    reached
        .iter()
        .filter(|name| {
            names.contains(&name.as_str()) || prefixes.iter().any(|p| name.starts_with(p))
        })
        .collect()
}

#[test]
fn the_agent_links_no_git_and_fetches_nothing() {
    let reached = reach("fleet-agent");
    let found = banned(
        &reached,
        &[
            "fleet-gitjob",
            "fleet-controller",
            "fleet-charts",
            "fleet-hub",
            "ureq",
        ],
        &["gix", "curl", "git2", "openssl-sys"],
    );
    assert!(found.is_empty(), "fleet-agent reaches {found:?}");
}

#[test]
fn the_renderer_and_its_engines_stay_pure() {
    for pure in [
        "fleet-helm",
        "fleet-files",
        "fleet-kustomize",
        "fleet-renderer",
    ] {
        let reached = reach(pure);
        let found = banned(
            &reached,
            &[
                "kube-client",
                "kube-runtime",
                "tokio",
                "hyper",
                "ureq",
                "reqwest",
                "fleet-hub",
            ],
            &["gix", "curl"],
        );
        assert!(found.is_empty(), "{pure} reaches {found:?}");
    }
    let engine = reach("fleet-helm");
    let fleet: Vec<&String> = engine
        .iter()
        .filter(|name| name.starts_with("fleet-"))
        .collect();
    assert!(
        fleet.is_empty(),
        "the Helm engine knows nothing of Fleet: {fleet:?}"
    );
}

#[test]
fn test_support_stays_out_of_production_crates() {
    let workspace = Workspace::read();
    for member in workspace.members() {
        assert!(
            !workspace.features[&member].contains("test-support"),
            "{member} has a test-support feature"
        );
        if TEST_ONLY.contains(&member.as_str()) {
            continue;
        }
        let reached = reach(&member);
        let leaked: Vec<&&str> = TEST_ONLY.iter().filter(|t| reached.contains(**t)).collect();
        assert!(leaked.is_empty(), "{member} links {leaked:?}");
    }
}
