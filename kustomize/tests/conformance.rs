//! Conformance: every fixture in testdata/kustomize and every podinfo overlay in
//! ../shared/real must build to exactly what `kubectl kustomize` prints.

mod common;

use std::path::{Path, PathBuf};

use fleet_files::sorted_keys;
use fleet_kustomize::{self as kustomize, RepoRoot};

fn kubectl_output(dir: &Path) -> String {
    let output = common::kubectl_kustomize(dir);
    assert!(
        output.status.success(),
        "kubectl kustomize {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

fn ours(root: &Path, dir: &Path) -> String {
    let root = RepoRoot::new(root).expect("root");
    let resources =
        kustomize::build(&root, dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    resources
        .iter()
        .map(|r| fleet_helm::yaml::to_kubectl_yaml(&sorted_keys(r)))
        .collect::<Vec<_>>()
        .join("---\n")
}

#[test]
fn every_fixture_matches_kubectl_byte_for_byte() {
    let fixtures = fleet_testkit::workspace_root().join("testdata/kustomize");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 40,
        "at least 40 fixtures, found {}",
        dirs.len()
    );
    let mut failures = Vec::new();
    for dir in &dirs {
        let expected = kubectl_output(dir);
        let actual = ours(&fixtures, dir);
        if expected != actual {
            failures.push(format!(
                "{}\n--- kubectl\n{expected}\n--- fleet\n{actual}",
                dir.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture(s) differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn podinfo_overlays_match_kubectl() {
    let podinfo = fleet_testkit::workspace_root().join("../shared/real/podinfo-kustomize");
    if !podinfo.is_dir() {
        panic!(
            "{} is missing: the shared real-world inputs must be beside the project",
            podinfo.display()
        );
    }
    for overlay in [
        "overlays/dev",
        "overlays/staging",
        "overlays/production",
        "bases/database",
    ] {
        let dir = podinfo.join(overlay);
        assert_eq!(ours(&podinfo, &dir), kubectl_output(&dir), "{overlay}");
    }
}
