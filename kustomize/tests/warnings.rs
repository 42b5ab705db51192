//! kubectl's deprecation warnings (`bases`, `commonLabels`, `imageTags`,
//! `patchesJson6902`, `patchesStrategicMerge`, `vars`): the same lines, in the same order,
//! one set for each kustomization as it is read, a field set to null not warned of.

mod common;

use std::cell::RefCell;
use std::path::Path;

use fleet_kustomize::{self as kustomize, RepoRoot};
use fleet_testkit::write_file;

thread_local! {
    static TOLD: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn ours(dir: &Path) -> Vec<String> {
    TOLD.with_borrow_mut(Vec::clear);
    let root = RepoRoot::new(dir).expect("root");
    let options = kustomize::BuildOptions {
        on_warning: Some(|warning| TOLD.with_borrow_mut(|told| told.push(warning.to_string()))),
        ..Default::default()
    };
    kustomize::build_with(&root, &dir.join("top"), options).expect("builds");
    TOLD.with_borrow(Clone::clone)
}

#[test]
fn deprecated_fields_are_warned_of_as_kubectl_warns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cm = |name: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n");
    write_file(&dir.path().join("base/cm.yaml"), &cm("base"));
    write_file(
        &dir.path().join("base/kustomization.yaml"),
        "resources: [cm.yaml]\ncommonLabels: {a: b}\nimageTags: []\nvars: ~\n",
    );
    write_file(&dir.path().join("top/cm.yaml"), &cm("top"));
    write_file(
        &dir.path().join("top/patch.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: top\ndata:\n  x: y\n",
    );
    write_file(
        &dir.path().join("top/kustomization.yaml"),
        "bases: [../base]\nresources: [cm.yaml]\npatchesStrategicMerge: [patch.yaml]\nvars: []\npatchesJson6902: []\n",
    );
    let kubectl = common::kubectl_kustomize(&dir.path().join("top"));
    assert!(kubectl.status.success(), "kubectl: {kubectl:?}");
    let theirs: Vec<String> = String::from_utf8_lossy(&kubectl.stderr)
        .lines()
        .filter(|line| line.starts_with("# Warning"))
        .map(String::from)
        .collect();
    assert_eq!(theirs.len(), 6, "kubectl warned: {theirs:#?}");
    assert_eq!(ours(dir.path()), theirs);
}
