//! `fleet helm template` against Helm 4.3.1 on every case of the shared Helm corpus
//! (`../shared/real/helm-corpus`): the output of each MANIFEST.tsv case byte for byte (the
//! lines its `.ndlines` file lists masked, as they hold random passwords and keys), and
//! each ERRORS.tsv case failing with Helm's message. The expected texts were printed by
//! real Helm; nothing here was produced by our code.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{shared_real, tsv_rows as rows};

/// Cases that cannot be compared on this checkout, with the reason. Each is still held
/// to what real Helm does with the same files.
const EXCEPTIONS: &[(&str, &str)] = &[(
    "kube-prometheus-stack",
    "the corpus copy lacks the .tgz dependencies its Chart.yaml names (kube-state-metrics, \
     prometheus-node-exporter, grafana, prometheus-windows-exporter): real Helm 4.3.1 \
     refuses the chart on this checkout, and so must we, with the same words",
)];

fn corpus() -> PathBuf {
    shared_real().join("helm-corpus")
}

/// `fleet helm template rel CHART [-f VALUES] [FLAGS] --namespace default`, run where the
/// corpus's paths are relative to.
fn render(row: &BTreeMap<String, String>) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fleet"));
    command
        .current_dir(corpus())
        .args(["helm", "template", "rel", &row["chart_dir"]]);
    if row["values"] != "-" {
        command.args(["-f", &row["values"]]);
    }
    if let Some(flags) = row.get("flags").filter(|f| *f != "-") {
        command.args(flags.split_whitespace());
    }
    command.args(["--namespace", "default"]);
    command.output().expect("fleet runs")
}

/// `text` with the 1-based lines listed in `ndlines` (if it exists) replaced.
fn masked(text: &str, ndlines: &Path) -> String {
    let Ok(listed) = std::fs::read_to_string(ndlines) else {
        return text.to_string();
    };
    let masked: Vec<usize> = listed
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    text.split('\n')
        .enumerate()
        .map(|(i, line)| {
            if masked.contains(&(i + 1)) {
                "<MASKED>"
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where two texts first differ, for the failure report.
fn first_difference(ours: &str, helm: &str) -> String {
    let (ours_lines, helm_lines): (Vec<&str>, Vec<&str>) =
        (ours.split('\n').collect(), helm.split('\n').collect());
    let at = ours_lines
        .iter()
        .zip(&helm_lines)
        .position(|(a, b)| a != b)
        .unwrap_or(ours_lines.len().min(helm_lines.len()));
    format!(
        "line {}: ours {:?}, Helm {:?} ({} lines against {})",
        at + 1,
        ours_lines.get(at).unwrap_or(&"<end>"),
        helm_lines.get(at).unwrap_or(&"<end>"),
        ours_lines.len(),
        helm_lines.len()
    )
}

/// The case's id: its expected file's name without `.yaml`.
fn case_id(expected: &str) -> String {
    Path::new(expected)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether every dependency the chart's Chart.yaml names is vendored under `charts/`.
fn dependencies_present(chart_dir: &Path) -> bool {
    let chart: serde_json::Value = fleet_renderer::yaml::parse_one(
        &std::fs::read_to_string(chart_dir.join("Chart.yaml")).expect("Chart.yaml"),
        "Chart.yaml",
    )
    .expect("Chart.yaml parses");
    let names: Vec<&str> = chart["dependencies"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["name"].as_str())
        .collect();
    let vendored: Vec<String> = std::fs::read_dir(chart_dir.join("charts"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.iter().all(|name| {
        vendored
            .iter()
            .any(|v| v == name || v.starts_with(&format!("{name}-")))
    })
}

/// Checks one MANIFEST.tsv case; the complaint if it fails.
fn check_render(row: &BTreeMap<String, String>) -> Option<String> {
    let id = case_id(&row["expected"]);
    let output = render(row);
    let exception = EXCEPTIONS.iter().find(|(name, _)| row["name"] == *name);
    if let Some((_, reason)) = exception {
        if !dependencies_present(&corpus().join(&row["chart_dir"])) {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let refusal =
                "Error: an error occurred while checking for chart dependencies. You may \
                need to run 'helm dependency build' to fetch missing dependencies: found in \
                Chart.yaml, but missing in charts/ directory: kube-state-metrics, \
                prometheus-node-exporter, grafana, prometheus-windows-exporter\n";
            eprintln!("{id}: not compared ({reason})");
            return (output.status.code() != Some(1) || stderr != refusal)
                .then(|| format!("{id}: not refused as Helm refuses it: {stderr}"));
        }
    }
    if !output.status.success() {
        return Some(format!(
            "{id}: failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let expected_path = corpus().join(&row["expected"]);
    let helm = std::fs::read_to_string(&expected_path).expect("expected output");
    let ours = String::from_utf8(output.stdout).expect("utf-8 output");
    let ndlines = expected_path.with_extension("ndlines");
    let (ours, helm) = (masked(&ours, &ndlines), masked(&helm, &ndlines));
    (ours != helm).then(|| format!("{id}: {}", first_difference(&ours, &helm)))
}

/// Checks one ERRORS.tsv case: exit 1 and Helm's standard error, byte for byte.
fn check_failure(row: &BTreeMap<String, String>) -> Option<String> {
    let output = render(row);
    let expected =
        std::fs::read_to_string(corpus().join(&row["expected_stderr"])).expect("expected stderr");
    let stderr = String::from_utf8_lossy(&output.stderr);
    (output.status.code() != Some(1) || stderr != expected).then(|| {
        format!(
            "{} (must fail): exit {:?}, stderr {stderr:?}, Helm's {expected:?}",
            row["name"],
            output.status.code()
        )
    })
}

#[test]
fn every_corpus_case_renders_as_helm_4_renders_it() {
    if !corpus().exists() {
        eprintln!("skipping: {} is not on this machine", corpus().display());
        return;
    }
    let renders = rows(&corpus().join("MANIFEST.tsv"));
    let failures_expected = rows(&corpus().join("ERRORS.tsv"));
    assert!(renders.len() >= 50, "{} render cases", renders.len());
    assert!(EXCEPTIONS.len() <= 2, "at most two exceptions");
    let complaints: Vec<String> = std::thread::scope(|scope| {
        let renders: Vec<_> = renders
            .iter()
            .map(|row| scope.spawn(|| check_render(row)))
            .collect();
        let failures: Vec<_> = failures_expected
            .iter()
            .map(|row| scope.spawn(|| check_failure(row)))
            .collect();
        renders
            .into_iter()
            .chain(failures)
            .filter_map(|handle| handle.join().expect("a case thread"))
            .collect()
    });
    assert!(
        complaints.is_empty(),
        "{} of {} cases differ from Helm 4.3.1:\n{}",
        complaints.len(),
        renders.len() + failures_expected.len(),
        complaints.join("\n")
    );
}
