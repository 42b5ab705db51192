//! `helmCharts` and the builtin `HelmChartInflationGenerator`, rendered by the Helm engine
//! inside a build, against the output of kubectl 1.37.1
//! (kustomize v5.8.1) with Helm 4.3.1 (`testdata/kustomize-helm/regenerate.sh` wrote each
//! `expected.yaml`).

mod common;

use common::kustomize_build;
use fleet_testkit::workspace_root;

#[test]
fn helm_chart_fixtures_build_as_kubectl_with_helm_prints_them() {
    let fixtures = workspace_root().join("testdata/kustomize-helm");
    let mut checked = 0;
    for case in ["local-chart", "chart-home", "generator-plugin"] {
        let dir = fixtures.join(case);
        let expected = std::fs::read_to_string(dir.join("expected.yaml")).expect("expected.yaml");
        let ours = kustomize_build(&dir).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(ours, expected, "{case}");
        checked += 1;
    }
    assert_eq!(checked, 3);
}

#[test]
fn a_chart_from_a_repository_is_refused_without_network_with_a_clear_message() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        "helmCharts:\n- name: podinfo\n  repo: https://stefanprodan.github.io/podinfo\n  version: 6.7.1\n",
    )
    .expect("write");
    let error = kustomize_build(dir.path())
        .expect_err("refused")
        .to_string();
    assert!(
        error.contains("kustomization.yaml: field `helmCharts`: chart `podinfo` 6.7.1 from https://stefanprodan.github.io/podinfo is not in the repository"),
        "{error}"
    );
}
