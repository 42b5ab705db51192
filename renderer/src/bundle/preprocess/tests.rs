//! Fleet's own cases (`internal/cmd/controller/target/target_test.go`: TestProcessLabelValues,
//! TestProcessTemplateValues, TestDisablePreProcessFlag*, the e2e `status_test.go` chart with
//! template variables), restated, and cases read from Fleet's code.

use serde_json::{json, Value};

use super::*;

/// The cluster of TestProcessTemplateValues.
fn fleets_cluster() -> ClusterInfo {
    let strings = |pairs: &[(&str, &str)]| {
        (pairs.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    ClusterInfo {
        name: "my-cluster".into(),
        namespace: "dev-clusters".into(),
        labels: strings(&[
            ("name", "local"),
            ("envType", "dev"),
            (
                "really-long-label-name-with-many-many-characters-in-it",
                "foobar",
            ),
        ]),
        annotations: strings(&[("testAnnotation", "test")]),
        template_values: json!({
            "topLevel": "foo",
            "nested": {"secondTier": {"thirdTier": "bar"}},
            "items": ["one", "two"],
            "list": ["alpha", "beta", "omega"],
        })
        .as_object()
        .cloned()
        .unwrap_or_default(),
        ..ClusterInfo::default()
    }
}

/// `helm:` options read from fleet.yaml text, preprocessed for `cluster`.
fn preprocessed(helm: &str, cluster: &ClusterInfo) -> Result<Value, String> {
    let helm: fleet_api::HelmOptions =
        fleet_files::yaml::parse_one(helm, "fleet.yaml").expect("helm options");
    let mut options = BundleDeploymentOptions {
        helm: Some(Box::new(helm)),
        ..Default::default()
    };
    preprocess_helm_values(&mut options, cluster)?;
    Ok(Value::Object(
        options.helm.and_then(|h| h.values).unwrap_or_default(),
    ))
}

fn values(helm: &str) -> Value {
    preprocessed(helm, &fleets_cluster()).expect("preprocessed")
}

#[test]
fn label_references_are_replaced_in_maps_and_maps_in_lists() {
    let got = values(
        "values:\n  clusterName: global.fleet.clusterLabels.name\n  customStruct:\n  - name: global.fleet.clusterLabels.name\n    key1: value1\n  - element1: global.fleet.clusterLabels.envType\n  - element2: global.fleet.clusterLabels.name\n  plain: [global.fleet.clusterLabels.name]\n  missing: global.fleet.clusterLabels.nope\n",
    );
    assert_eq!(got["clusterName"], "local");
    assert_eq!(
        got["customStruct"][0],
        json!({"name": "local", "key1": "value1"})
    );
    assert_eq!(got["customStruct"][1]["element1"], "dev");
    assert_eq!(got["customStruct"][2]["element2"], "local");
    assert_eq!(
        got["plain"],
        json!(["global.fleet.clusterLabels.name"]),
        "strings in lists stay"
    );
    assert_eq!(got["missing"], "");
}

#[test]
fn the_values_tree_is_one_template_over_the_clusters_data() {
    let got = values(
        r#"values:
  clusterName: "${ .ClusterLabels.name }"
  fromAnnotation: "${ .ClusterAnnotations.testAnnotation }"
  clusterNamespace: "${ .ClusterNamespace }"
  fleetClusterName: "${ .ClusterName }"
  reallyLongClusterName: kubernets.io/cluster/${ index .ClusterLabels "really-long-label-name-with-many-many-characters-in-it" }
  missingLabel: ${ if hasKey .ClusterLabels "missing" }${ .ClusterLabels.missing }${ else }missing${ end}
  customStruct:
  - name: "${ .ClusterValues.topLevel }"
  - element2: "${ .ClusterValues.nested.secondTier.thirdTier }"
  - "element3_${ .ClusterLabels.envType }": "${ .ClusterLabels.name }"
  funcs:
    upper: "${ .ClusterValues.topLevel | upper }_test"
    join: '${ .ClusterValues.list | join "," }'
  list: ${ list 1 2 3 | toJson }
  helmStays: "{{ .Release.Name }}-${ .ClusterName }"
"#,
    );
    assert_eq!(got["clusterName"], "local");
    assert_eq!(got["fromAnnotation"], "test");
    assert_eq!(got["clusterNamespace"], "dev-clusters");
    assert_eq!(got["fleetClusterName"], "my-cluster");
    assert_eq!(got["reallyLongClusterName"], "kubernets.io/cluster/foobar");
    assert_eq!(got["missingLabel"], "missing");
    assert_eq!(got["customStruct"][0]["name"], "foo");
    assert_eq!(got["customStruct"][1]["element2"], "bar");
    assert_eq!(
        got["customStruct"][2],
        json!({"element3_dev": "local"}),
        "keys are templated"
    );
    assert_eq!(
        got["funcs"],
        json!({"upper": "FOO_test", "join": "alpha,beta,omega"})
    );
    assert_eq!(got["list"], json!([1, 2, 3]), "toJson gives a list");
    assert_eq!(got["helmStays"], "{{ .Release.Name }}-my-cluster");
}

#[test]
fn template_values_are_templated_one_by_one_and_replace_top_level_values() {
    let got = values(
        "values:\n  mapData: replaced\n  kept: 1\ntemplateValues:\n  mapData: |\n    ${- range $key := .ClusterValues.items }\n    \"${ $key }\":\n      nested: \"true\"\n    ${- end}\n  listData: |\n    ${- range $key := .ClusterValues.items }\n    - \"${ $key }\":\n      nested: \"true\"\n    ${- end}\n",
    );
    assert_eq!(
        got["mapData"],
        json!({"one": {"nested": "true"}, "two": {"nested": "true"}})
    );
    let list = got["listData"].as_array().expect("a list");
    assert_eq!(list.len(), 2);
    assert!(list.iter().all(|item| item["nested"] == "true"));
    assert_eq!(got["kept"], 1);
}

#[test]
fn results_are_read_back_as_yaml() {
    let mut cluster = fleets_cluster();
    cluster.template_values = json!({"port": 8080, "big": 1000000, "flag": "yes"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let got = preprocessed(
        "values:\n  port: \"${ .ClusterValues.port }\"\n  big: x-${ .ClusterValues.big }\n  flag: ${ .ClusterValues.flag }\n  nothing: ${ index .ClusterLabels \"nope\" }\n",
        &cluster,
    )
    .expect("preprocessed");
    assert_eq!(got["port"], 8080, "the quotes of fleet.yaml are gone");
    assert_eq!(got["big"], "x-1e+06", "Go prints the float it read");
    assert_eq!(got["flag"], true, "YAML 1.1");
    assert_eq!(got["nothing"], "<no value>");
}

#[test]
fn a_missing_key_or_helms_own_function_is_an_error() {
    let missing = preprocessed(
        "values:\n  templatedLabel: \"${ .ClusterLabels.foo }-foo\"\n",
        &fleets_cluster(),
    )
    .expect_err("no label foo");
    assert!(
        missing.starts_with("failed to render helm values template: template: values:1:33:"),
        "{missing}"
    );
    assert!(
        missing.contains("<.ClusterLabels.foo>: map has no entry for key \"foo\""),
        "{missing}"
    );
    let helm_only = preprocessed(
        "values:\n  a: ${ toYaml .ClusterValues }\n",
        &fleets_cluster(),
    )
    .expect_err("not sprig");
    assert!(
        helm_only.contains("function \"toYaml\" not defined"),
        "{helm_only}"
    );
    let dns = preprocessed(
        "values:\n  a: ${ getHostByName \"x\" }\n",
        &fleets_cluster(),
    )
    .expect_err("left out");
    assert!(dns.contains("\"getHostByName\" not defined"), "{dns}");
}

#[test]
fn disabled_preprocessing_leaves_templates_but_still_replaces_labels() {
    let mut cluster = fleets_cluster();
    cluster.name = "test-cluster".into();
    let helm = |flag: &str| {
        format!(
            "{flag}templateValues:\n  overridden: something_templated\nvalues:\n  clusterName: \"${{ .ClusterName }}\"\n  syntaxError: \"${{ non_existent_function }}\"\n  overridden: \"\"\n  label: global.fleet.clusterLabels.envType\n"
        )
    };
    let got = preprocessed(&helm("disablePreprocess: true\n"), &cluster).expect("untouched");
    assert_eq!(got["clusterName"], "${ .ClusterName }");
    assert_eq!(got["syntaxError"], "${ non_existent_function }");
    assert_eq!(got["label"], "dev");
    let enabled = helm("disablePreProcess: false\n")
        .replace("  syntaxError: \"${ non_existent_function }\"\n", "");
    let got = preprocessed(&enabled, &cluster).expect("templated");
    assert_eq!(got["clusterName"], "test-cluster");
    assert_eq!(
        got["overridden"], "something_templated",
        "templateValues win"
    );
}

#[test]
fn a_cluster_without_labels_of_its_own_is_left_alone() {
    let mut cluster = fleets_cluster();
    cluster.labels = [
        ("management.cattle.io/cluster-display-name", "x"),
        ("cattle.io/creator", "y"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let kept = preprocessed("values:\n  a: ${ .ClusterName }\n", &cluster).expect("ok");
    assert_eq!(kept["a"], "my-cluster", "Fleet's management labels count");
    cluster
        .labels
        .remove("management.cattle.io/cluster-display-name");
    let untouched = preprocessed("values:\n  a: ${ .ClusterName }\n", &cluster).expect("ok");
    assert_eq!(untouched["a"], "${ .ClusterName }");
}
