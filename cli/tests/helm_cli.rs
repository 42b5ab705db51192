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
