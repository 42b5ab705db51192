//! The targets `fleet apply` gives a Bundle, restated from Rancher Fleet v0.16's bundle
//! reader (`internal/bundlereader/read.go`): fleet.yaml's `targets` then its
//! `targetCustomizations`, those without a name named `target000`, `target001`... by
//! place (`setTargetNames`); `overrideTargets` when fleet.yaml has them, else the
//! `--targets-file` (`appendTargets`), each appended as a target and a restriction; and
//! a Bundle without any target gets `{name: default, clusterGroup: default}`.

mod common;

use std::path::Path;

use common::{documents, fleet_ok};
use fleet_testkit::write_file;
use serde_json::{json, Value};

/// The Bundle `fleet apply -o -` writes for the directory `dir` under `root`.
fn applied(root: &Path, dir: &str, extra: &[&str]) -> Value {
    let root_arg = root.to_string_lossy().into_owned();
    let mut args = vec!["apply", "--root", root_arg.as_str(), "-o", "-"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["repo", dir]);
    let bundles = documents(&fleet_ok(&args));
    assert_eq!(bundles.len(), 1, "one bundle");
    bundles.into_iter().next().expect("a bundle")
}

/// The targets without fleet-rs's `source` marker, as Fleet writes them.
fn targets(bundle: &Value) -> Vec<Value> {
    bundle["spec"]["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t.as_object_mut().map(|m| m.remove("source"));
            t
        })
        .collect()
}

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n";

#[test]
fn a_bundle_without_targets_goes_to_the_default_cluster_group() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_file(&dir.path().join("plain/cm.yaml"), CONFIG_MAP);
    let bundle = applied(dir.path(), "plain", &[]);
    assert_eq!(
        targets(&bundle),
        vec![json!({"name": "default", "clusterGroup": "default"})]
    );
    assert!(bundle["spec"].get("targetRestrictions").is_none());
}

#[test]
fn fleet_yaml_targets_and_customizations_are_named_by_place() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_file(&dir.path().join("app/cm.yaml"), CONFIG_MAP);
    write_file(
        &dir.path().join("app/fleet.yaml"),
        "targets:\n- clusterGroup: edge\ntargetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels: {env: prod}\n- clusterName: lab\n  namespace: lab\n",
    );
    let bundle = applied(dir.path(), "app", &[]);
    assert_eq!(
        targets(&bundle),
        vec![
            json!({"name": "target000", "clusterGroup": "edge"}),
            json!({"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}}),
            json!({"name": "target002", "clusterName": "lab", "namespace": "lab"}),
        ]
    );
}

#[test]
fn a_targets_file_is_appended_unless_fleet_yaml_overrides_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_file(&dir.path().join("app/cm.yaml"), CONFIG_MAP);
    write_file(&dir.path().join("app/fleet.yaml"), "namespace: app\n");
    write_file(&dir.path().join("over/cm.yaml"), CONFIG_MAP);
    write_file(
        &dir.path().join("over/fleet.yaml"),
        "overrideTargets:\n- name: only-lab\n  clusterName: lab\n",
    );
    let file = dir.path().join("targets.yaml");
    write_file(
        &file,
        "targets:\n- name: from-repo\n  clusterGroup: prod\ntargetRestrictions:\n- name: from-repo\n  clusterGroup: prod\n",
    );
    let file_arg = file.to_string_lossy().into_owned();
    let bundle = applied(dir.path(), "app", &["--targets-file", &file_arg]);
    assert_eq!(
        targets(&bundle),
        vec![json!({"name": "from-repo", "clusterGroup": "prod"})]
    );
    assert_eq!(
        bundle["spec"]["targetRestrictions"],
        json!([{"name": "from-repo", "clusterGroup": "prod"}])
    );
    let overridden = applied(dir.path(), "over", &["--targets-file", &file_arg]);
    assert_eq!(
        targets(&overridden),
        vec![json!({"name": "only-lab", "clusterName": "lab"})]
    );
    assert_eq!(
        overridden["spec"]["targetRestrictions"],
        json!([{"name": "only-lab", "clusterName": "lab"}])
    );
}
