//! `fleet helm template` prints what real Helm printed for the same chart and values.

mod common;

use common::{fleet, fleet_ok, workspace};

#[test]
fn helm_template_prints_the_golden_of_real_helm() {
    let root = workspace();
    let chart = root.join("testdata/charts/subcharts-globals");
    let printed = fleet_ok(&["helm", "template", "suite", &chart.to_string_lossy()]);
    let golden =
        std::fs::read_to_string(root.join("testdata/charts/goldens/subcharts-globals.yaml"))
            .expect("golden");
    assert_eq!(printed, golden);
}

#[test]
fn values_files_and_set_apply_in_helm_order() {
    let root = workspace();
    let chart = root.join("testdata/charts/library-consumer");
    let dir = tempfile::tempdir().expect("temp dir");
    let values = dir.path().join("values.yaml");
    std::fs::write(&values, "replicas: 5\nimage:\n  tag: from-file\n").expect("values");
    let printed = fleet_ok(&[
        "helm",
        "template",
        &chart.to_string_lossy(),
        "--release-name",
        "shop",
        "-f",
        &values.to_string_lossy(),
        "--set",
        "image.tag=from-set",
    ]);
    assert!(printed.contains("  replicas: 5\n"), "{printed}");
    assert!(
        printed.contains("image: \"registry.example.com/shop/api:from-set\""),
        "{printed}"
    );
}

#[test]
fn a_broken_template_exits_one_with_helms_words() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("templates")).expect("dirs");
    std::fs::write(
        dir.path().join("Chart.yaml"),
        "apiVersion: v2\nname: broken\nversion: 1.0.0\n",
    )
    .expect("chart");
    std::fs::write(dir.path().join("templates/cm.yaml"), "{{ if .Values.x }}\n").expect("template");
    let output = fleet(&["helm", "template", &dir.path().to_string_lossy()]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("parse error at (broken/templates/cm.yaml:2): unexpected EOF"),
        "{stderr}"
    );
}

/// A server of the chart `metrics` 0.2.0, as a Helm repository and an OCI registry.
fn metrics_server() -> fleet_testkit::ChartServer {
    let archive =
        std::fs::read(workspace().join("testdata/charts/v1-requirements/charts/metrics-0.2.0.tgz"))
            .expect("archive");
    fleet_testkit::ChartServer::start("metrics", "0.2.0", archive).expect("server")
}

/// `fleet test` of a bundle holding only `fleet_yaml`, with its own chart cache: the
/// objects printed, and how many archives the cache kept.
fn fleet_test_of(fleet_yaml: &str) -> (String, usize) {
    let repo = tempfile::tempdir().expect("repo");
    std::fs::write(repo.path().join("fleet.yaml"), fleet_yaml).expect("fleet.yaml");
    let cache = tempfile::tempdir().expect("cache");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(["test", &repo.path().to_string_lossy()])
        .env("FLEET_CHART_CACHE", cache.path())
        .output()
        .expect("fleet runs");
    assert!(
        output.status.success(),
        "{fleet_yaml}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let cached = std::fs::read_dir(cache.path()).expect("cache dir").count();
    (String::from_utf8_lossy(&output.stdout).into_owned(), cached)
}

#[test]
fn fleet_test_fetches_a_chart_from_a_helm_repository() {
    let server = metrics_server();
    let (stdout, cached) = fleet_test_of(&format!(
        "namespace: monitoring\nhelm:\n  repo: {}\n  chart: metrics\n  version: \"~0.2\"\n  releaseName: edge\n  values:\n    interval: 15s\n",
        server.url
    ));
    assert!(stdout.contains("name: edge-metrics"), "{stdout}");
    assert!(stdout.contains("scrape-interval: 15s"), "{stdout}");
    assert!(stdout.contains("namespace: monitoring"), "{stdout}");
    assert_eq!(cached, 1, "the archive is kept by digest");
}

/// Fleet names an OCI chart by its `helm.repo` (e2e/assets/helm/repo/oci-with-auth-chart,
/// "the full oci:// URL (including chart name) goes in repo"), or by `helm.chart`, whose
/// reference may pin the tag.
#[test]
fn fleet_test_fetches_an_oci_chart_named_by_its_repo_or_its_chart() {
    let server = metrics_server();
    let oci = format!("oci://{}/charts/metrics", server.host);
    for helm in [
        format!("repo: {oci}\n  version: 0.2.0"),
        format!("chart: {oci}\n  version: 0.2.0"),
        format!("chart: {oci}:0.2.0"),
    ] {
        let (stdout, _) = fleet_test_of(&format!(
            "namespace: monitoring\nhelm:\n  {helm}\n  releaseName: edge\n"
        ));
        assert!(stdout.contains("name: edge-metrics"), "{helm}\n{stdout}");
    }
}
