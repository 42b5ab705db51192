//! The engine against Helm 4.3.1 on every case of the shared Helm corpus
//! (`../shared/real/helm-corpus`): the output of each MANIFEST.tsv case byte for byte (the
//! lines its `.ndlines` file lists masked, as they hold random passwords and keys), and
//! each ERRORS.tsv case failing with Helm's message. The expected texts were printed by
//! real Helm; nothing here was produced by our code.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::helm_template;
use fleet_helm::{Options, ValueOptions};
use fleet_testkit::{corpus_rows as rows, shared_real};

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

/// `helm template rel CHART [-f VALUES] [FLAGS] --namespace default`, rendered by the
/// library: standard output, or standard error on failure.
fn render(row: &BTreeMap<String, String>) -> Result<String, String> {
    let mut values = ValueOptions::default();
    if row["values"] != "-" {
        values.value_files.push(corpus().join(&row["values"]));
    }
    let mut options = Options {
        release_name: "rel".into(),
        ..Options::default()
    };
    let flags = row.get("flags").filter(|f| *f != "-");
    let mut flags = flags.into_iter().flat_map(|f| f.split_whitespace());
    while let Some(flag) = flags.next() {
        match flag {
            "--include-crds" => options.include_crds = true,
            "--api-versions" => options.api_versions.extend(flags.next().map(String::from)),
            "--kube-version" => options.kube_version = flags.next().unwrap_or_default().into(),
            other => panic!("a flag the corpus test does not know: {other}"),
        }
    }
    helm_template(&corpus().join(&row["chart_dir"]), &values, &options)
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
    let text = std::fs::read_to_string(chart_dir.join("Chart.yaml")).expect("Chart.yaml");
    let chart = fleet_helm::yaml::parse_documents(&text)
        .expect("Chart.yaml parses")
        .remove(0);
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
            let refusal =
                "Error: an error occurred while checking for chart dependencies. You may \
                need to run 'helm dependency build' to fetch missing dependencies: found in \
                Chart.yaml, but missing in charts/ directory: kube-state-metrics, \
                prometheus-node-exporter, grafana, prometheus-windows-exporter\n";
            eprintln!("{id}: not compared ({reason})");
            return (output.as_ref().err().map(String::as_str) != Some(refusal))
                .then(|| format!("{id}: not refused as Helm refuses it: {output:?}"));
        }
    }
    let ours = match output {
        Ok(text) => text,
        Err(stderr) => return Some(format!("{id}: failed: {stderr}")),
    };
    let expected_path = corpus().join(&row["expected"]);
    let helm = std::fs::read_to_string(&expected_path).expect("expected output");
    let ndlines = expected_path.with_extension("ndlines");
    let (ours, helm) = (masked(&ours, &ndlines), masked(&helm, &ndlines));
    (ours != helm).then(|| format!("{id}: {}", first_difference(&ours, &helm)))
}

/// Checks one ERRORS.tsv case: a failure with Helm's standard error, byte for byte.
fn check_failure(row: &BTreeMap<String, String>) -> Option<String> {
    let output = render(row);
    let expected =
        std::fs::read_to_string(corpus().join(&row["expected_stderr"])).expect("expected stderr");
    (output.as_ref().err() != Some(&expected)).then(|| {
        format!(
            "{} (must fail): {output:?}, Helm's standard error {expected:?}",
            row["name"]
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
