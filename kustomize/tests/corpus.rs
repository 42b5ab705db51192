//! The engine against kubectl 1.37 (kustomize v5.8.1) on every root of the shared
//! Kustomize corpus (`../shared/real/kustomize-corpus`), built with kubectl's defaults. The expected texts in `expected/` (and
//! `expected-5.8.1-only/` for the roots only kustomize v5.8.1 builds) were printed by
//! kubectl; nothing here was produced by our code.

mod common;

use std::path::PathBuf;

use common::kustomize_build;
use fleet_testkit::{corpus_rows, shared_real};

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

/// The first lines of `ours` and `kubectl` that differ, as `-`/`+` pairs.
fn differences(ours: &str, kubectl: &str) -> Vec<String> {
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
    let mut failures = Vec::new();
    let mut exact = 0;
    for (id, root, expected_file) in &cases {
        let expected = std::fs::read_to_string(expected_file)
            .unwrap_or_else(|e| panic!("{}: {e}", expected_file.display()));
        match build(root) {
            Ok(ours) if ours == expected => exact += 1,
            Ok(ours) => failures.push(format!(
                "{id} ({root}): output differs from kubectl's:\n{}",
                differences(&ours, &expected).join("\n")
            )),
            Err(error) => failures.push(format!("{id} ({root}): the build failed: {error}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{exact} of {} roots byte-identical; failures:\n{}",
        cases.len(),
        failures.join("\n\n")
    );
}
