//! The hub checks built-in kinds against their schemas on write, as kube-apiserver's
//! decoding does. Every built-in object that real projects deploy (the outputs of the
//! shared Helm and Kustomize corpora, printed by real Helm 4.3.1 and kubectl 1.37) passes
//! those checks, except two that a real API server refuses too (listed below, each checked
//! by reading the manifest).

mod common;

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// Objects of the corpora kube-apiserver would not take as they are, and why.
const REFUSED: &[(&str, &str, &str)] = &[
    // The 1Password chart puts `ports` under a container's securityContext: an unknown
    // field, refused by kubectl's default strict validation and dropped otherwise.
    (
        "gitops-catalog-1password-connect.yaml",
        "Deployment",
        "pruned spec.template.spec.containers[0].securityContext.ports",
    ),
    // A documentation example of a patch, whose Deployments have no selector.
    (
        "kustomize-md-patch-multiple-objects.yaml",
        "Deployment",
        "spec.selector: Required value",
    ),
];

fn corpus_objects() -> Vec<(String, Value)> {
    let root = common::workspace().join("../shared/real");
    let mut objects = Vec::new();
    for dir in ["helm-corpus/expected", "kustomize-corpus/expected"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
            let text = fleet_objects::yaml_octal::rewrite(&text);
            let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
            for document in serde_yaml_ng::Deserializer::from_str(&text) {
                let value = Value::deserialize(document)
                    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                if value.is_object() {
                    objects.push((name.clone().unwrap_or_default(), value));
                }
            }
        }
    }
    objects
}

#[test]
fn corpus_objects_of_built_in_kinds_pass_their_schemas() {
    let mut checked = BTreeMap::<String, usize>::new();
    let mut problems = Vec::new();
    for (file, mut object) in corpus_objects() {
        let api_version = object["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        let (group, _) = fleet_objects::split_api_version(&api_version);
        let Some(schema) = fleet_hub::builtin_schemas::schema(group, &kind) else {
            continue;
        };
        *checked.entry(kind.clone()).or_default() += 1;
        fleet_hub::verbs::strip_nulls(&mut object);
        let result = schema.prepare(&mut object);
        let mut found: Vec<String> = result
            .causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        found.extend(result.pruned.iter().map(|p| format!("pruned {p}")));
        for problem in found {
            problems.push((file.clone(), kind.clone(), problem));
        }
    }
    let total: usize = checked.values().sum();
    assert!(
        total > 2_000,
        "only {total} built-in objects were read: {checked:?}"
    );
    for (file, kind, reason) in REFUSED {
        assert!(
            problems
                .iter()
                .any(|(f, k, p)| f == file && k == kind && p == reason),
            "{file} {kind} should be refused with {reason:?}"
        );
    }
    let unexpected: Vec<String> = problems
        .iter()
        .filter(|(f, k, _)| !REFUSED.iter().any(|(file, kind, _)| f == file && k == kind))
        .map(|(f, k, p)| format!("{f} {k}: {p}"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "{} objects refused:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}
