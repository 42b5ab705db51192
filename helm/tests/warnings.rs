//! The warnings Helm logs while it computes values (a user's table over a default that is
//! not one, a default table under a user's scalar...), each case run through real Helm
//! 4.3.1 and the library: the same lines, as Helm's logger writes them on standard error.

mod common;

use std::path::Path;
use std::process::Command;

use fleet_testkit::write_file;

use fleet_helm::{Chart, Options, ValueOptions};

/// Real Helm's standard error for `helm template rel CHART --set ...`, sorted (Helm walks
/// Go maps, whose order varies between runs).
fn helm_warnings(chart: &Path, sets: &[&str]) -> Vec<String> {
    let mut command = Command::new(fleet_testkit::real_tool("helm4"));
    command.args(["template", "rel"]).arg(chart);
    for set in sets {
        command.args(["--set", set]);
    }
    let output = command.output().expect("helm runs");
    assert!(output.status.success(), "helm failed: {output:?}");
    let mut lines: Vec<String> = String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    lines
}

/// The library's warnings for the same, written as Helm 4's logger writes them, sorted.
fn our_warnings(chart: &Path, sets: &[&str]) -> Vec<String> {
    let chart = Chart::load(chart).expect("chart loads");
    let values = ValueOptions {
        values: sets.iter().map(|s| s.to_string()).collect(),
        ..ValueOptions::default()
    }
    .merge()
    .expect("values");
    let prepared = fleet_helm::prepare(&chart, &values, &Options::default()).expect("prepared");
    let mut lines: Vec<String> = prepared
        .warnings()
        .iter()
        .map(|w| common::logged_warning(w))
        .collect();
    lines.sort();
    lines
}

#[test]
fn coalescing_warnings_are_helms() {
    let dir = tempfile::tempdir().expect("temp dir");
    let chart = dir.path().join("co");
    write_file(
        &chart.join("Chart.yaml"),
        "apiVersion: v2\nname: co\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: 0.1.0\n",
    );
    write_file(
        &chart.join("values.yaml"),
        "plain: text\nnumber:\n  inner: 1\ntable:\n  nested:\n    x: 1\n    y: [1, \"two\"]\nsub:\n  s: 1\n",
    );
    write_file(
        &chart.join("templates/cm.yaml"),
        "v: {{ .Values | toJson | quote }}\n",
    );
    write_file(
        &chart.join("charts/sub/Chart.yaml"),
        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
    );
    write_file(&chart.join("charts/sub/values.yaml"), "s: 1\nt:\n  u: 1\n");
    let cases: [&[&str]; 4] = [
        &["plain.k=v"],
        &["number.inner.deeper=1"],
        &["table.nested=str", "plain.k=v"],
        &["sub.t=flat", "sub.s.k=v"],
    ];
    let mut warned = 0;
    for sets in cases {
        let helm = helm_warnings(&chart, sets);
        warned += helm.len();
        assert_eq!(our_warnings(&chart, sets), helm, "--set {sets:?}");
    }
    assert!(warned >= 4, "the cases make Helm warn ({warned} lines)");
}
