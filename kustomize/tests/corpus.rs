//! The engine against kubectl 1.37 (kustomize v5.8.1) on every root of the shared
//! Kustomize corpus (`../shared/real/kustomize-corpus`), built with kubectl's defaults. The expected texts in `expected/` (and
//! `expected-5.8.1-only/` for the roots only kustomize v5.8.1 builds) were printed by
//! kubectl; nothing here was produced by our code.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::kustomize_build;
use fleet_testkit::{corpus_rows, shared_real};

/// Roots that differ from kubectl's output, with the reason. Each is still built and its
/// output must differ only as explained (checked below).
const EXCEPTIONS: &[(&str, &str)] = &[
    (
        "kubeflow-istio-ambient-oauth2-proxy-gke",
        "kustomize drops fields written with an empty value (`key:` without `null` or `~`) \
         from an object a strategic merge patch touches, but keeps explicit nulls; our YAML \
         reader sees both as null, so two nodeAffinity fields of Istio's Helm-made \
         install.yaml stay as `null` where kubectl prints `nodeAffinity: {}`",
    ),
    (
        "kubeflow-example",
        "the same Istio install.yaml, twice, in the full Kubeflow tree (683 objects)",
    ),
];

fn corpus() -> PathBuf {
    shared_real().join("kustomize-corpus")
}

/// Every root with the file of its expected output.
fn cases() -> Vec<(String, String, PathBuf)> {
    let mut out = Vec::new();
    for (list, expected_dir) in [
        ("MANIFEST.tsv", "expected"),
        ("EXTRA-5.8.1-ONLY.tsv", "expected-5.8.1-only"),
    ] {
        for row in corpus_rows(&corpus().join(list)) {
            let expected = corpus()
                .join(expected_dir)
                .join(format!("{}.yaml", row["id"]));
            out.push((row["id"].clone(), row["root"].clone(), expected));
        }
    }
    out
}

fn build(root: &str) -> Result<String, fleet_kustomize::Error> {
    kustomize_build(&corpus().join(root))
}

/// The lines of `ours` and `kubectl` that differ, as `-`/`+` pairs, ignoring the
/// documented empty-value difference (`nodeAffinity:` with null fields against `{}`).
fn unexplained_differences(ours: &str, kubectl: &str) -> Vec<String> {
    let normalise = |text: &str| -> String {
        text.replace(
            "nodeAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution: null\n          requiredDuringSchedulingIgnoredDuringExecution: null\n",
            "nodeAffinity: {}\n",
        )
    };
    let (ours, kubectl) = (normalise(ours), normalise(kubectl));
    ours.lines()
        .zip(kubectl.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("-{a}\n+{b}"))
        .chain(
            (ours.lines().count() != kubectl.lines().count())
                .then(|| "different line counts".to_string()),
        )
        .take(10)
        .collect()
}

#[test]
fn every_corpus_root_builds_as_kubectl_prints_it() {
    let cases = cases();
    assert!(
        cases.len() >= 58,
        "the corpus has 58 roots, found {}",
        cases.len()
    );
    assert!(EXCEPTIONS.len() <= 2, "at most two exceptions");
    let exceptions: BTreeMap<&str, &str> = EXCEPTIONS.iter().copied().collect();
    let mut failures = Vec::new();
    let mut exact = 0;
    for (id, root, expected_file) in &cases {
        let expected = std::fs::read_to_string(expected_file)
            .unwrap_or_else(|e| panic!("{}: {e}", expected_file.display()));
        let ours = match build(root) {
            Ok(text) => text,
            Err(error) => {
                failures.push(format!("{id} ({root}): the build failed: {error}"));
                continue;
            }
        };
        match (ours == expected, exceptions.contains_key(id.as_str())) {
            (true, false) => exact += 1,
            (true, true) => failures.push(format!(
                "{id}: now byte-identical; remove it from EXCEPTIONS"
            )),
            (false, false) => failures.push(format!(
                "{id} ({root}): output differs from kubectl's:\n{}",
                unexplained_differences(&ours, &expected).join("\n")
            )),
            (false, true) => {
                let left = unexplained_differences(&ours, &expected);
                if !left.is_empty() {
                    failures.push(format!(
                        "{id}: differs beyond its listed exception:\n{}",
                        left.join("\n")
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{exact} of {} roots byte-identical; failures:\n{}",
        cases.len(),
        failures.join("\n\n")
    );
}
