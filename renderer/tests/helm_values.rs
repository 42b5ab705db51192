//! How a Helm bundle's values are put together, as Rancher Fleet puts them together
//! (restated from `internal/bundlereader/resources.go`, `generateValues`, Fleet v0.16):
//! each of `helm.valuesFiles` is merged over `helm.values`, later files winning, maps key
//! by key; a target customization's own `valuesFiles` are merged over its own `values` the
//! same way, and the result over the bundle's; `${ }` templating then works on all of it.

use std::collections::BTreeMap;
use std::path::Path;

use fleet_renderer::bundle::{self, ClusterInfo};
use fleet_renderer::RepoRoot;
use fleet_testkit::write_file;
use serde_json::Value;

/// The ConfigMap the bundle's chart renders for `cluster`: the values it saw.
fn rendered_values(root: &Path, cluster: &ClusterInfo) -> Value {
    let root = RepoRoot::new(root).expect("root");
    let bundles = bundle::discover(&root, &[]).expect("discovered");
    let found = bundles.first().expect("one bundle");
    let path = found.fleet_yaml.clone().expect("a fleet.yaml");
    let fleet = bundle::load_fleet_yaml(&root, &path, true)
        .expect("fleet.yaml")
        .spec;
    let sources = bundle::Sources {
        preprocess: true,
        ..Default::default()
    };
    let variant =
        bundle::render_with(&root, found, "values", &fleet, cluster, &sources).expect("renders");
    let config = variant
        .resources
        .iter()
        .find(|r| r["kind"] == "ConfigMap")
        .expect("the ConfigMap");
    serde_json::from_str(config["data"]["values"].as_str().expect("values")).expect("JSON")
}

#[test]
fn values_files_win_over_inline_values_and_a_customization_over_the_bundle() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    write_file(
        &root.join("chart/Chart.yaml"),
        "apiVersion: v2\nname: values\nversion: 0.1.0\n",
    );
    write_file(
        &root.join("chart/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seen\ndata:\n  values: {{ .Values | toJson | quote }}\n",
    );
    write_file(
        &root.join("fleet.yaml"),
        "helm:\n  chart: chart\n  values:\n    inline: bundle\n    shared: inline\n    nested: {a: inline, b: inline}\n    cluster: ${ .ClusterName }\n  valuesFiles: [one.yaml, two.yaml]\ntargetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels: {env: prod}\n  helm:\n    values:\n      custom: inline\n      shared: target-inline\n    valuesFiles: [prod.yaml]\n",
    );
    write_file(
        &root.join("one.yaml"),
        "shared: one\nnested: {a: one}\nfromOne: ${ .ClusterLabels.env }\n",
    );
    write_file(&root.join("two.yaml"), "shared: two\n");
    write_file(
        &root.join("prod.yaml"),
        "custom: prod-file\nnested: {b: prod}\n",
    );

    let dev = ClusterInfo {
        name: "dev-1".into(),
        namespace: "fleet-default".into(),
        labels: BTreeMap::from([("env".to_string(), "dev".to_string())]),
        ..ClusterInfo::default()
    };
    let values = rendered_values(root, &dev);
    assert_eq!(values["inline"], "bundle");
    assert_eq!(values["shared"], "two", "the last values file wins");
    assert_eq!(values["nested"]["a"], "one", "maps merge key by key");
    assert_eq!(values["nested"]["b"], "inline");
    assert_eq!(values["cluster"], "dev-1");
    assert_eq!(
        values["fromOne"], "dev",
        "templating works on values from files too"
    );
    assert!(values.get("custom").is_none());

    let prod = ClusterInfo {
        name: "prod-1".into(),
        labels: BTreeMap::from([("env".to_string(), "prod".to_string())]),
        ..dev
    };
    let values = rendered_values(root, &prod);
    assert_eq!(
        values["custom"], "prod-file",
        "the customization's file wins over its values"
    );
    assert_eq!(
        values["shared"], "target-inline",
        "the customization wins over the bundle"
    );
    assert_eq!(values["nested"]["a"], "one");
    assert_eq!(values["nested"]["b"], "prod");
}
