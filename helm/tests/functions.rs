//! Template functions and Go template rules, one snippet at a time, rendered by the
//! library, against what real
//! Helm 4.3.1 printed for the same snippet (testdata/helm-functions: cases.yaml, and
//! expected.json made by make-expected.py with the real binary). Successful snippets are
//! compared by their text; failing ones by Helm's whole standard error.

mod common;

use std::path::Path;

use common::helm_template;
use fleet_helm::{Options, ValueOptions};
use fleet_testkit::workspace_root;
use serde_json::Value;

/// Writes the chart `t` that runs `case` (as make-expected.py writes it).
fn chart(dir: &Path, case: &Value, direct: bool) {
    let root = dir.join("t");
    std::fs::create_dir_all(root.join("templates")).expect("templates dir");
    std::fs::write(
        root.join("Chart.yaml"),
        "apiVersion: v2\nname: t\nversion: 0.1.0\nappVersion: \"1.2.3\"\n",
    )
    .expect("Chart.yaml");
    std::fs::write(
        root.join("values.yaml"),
        case["values"].as_str().unwrap_or_default(),
    )
    .expect("values.yaml");
    for (name, text) in case["files"].as_object().into_iter().flatten() {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("files dir");
        std::fs::write(path, text.as_str().unwrap_or_default()).expect("file");
    }
    let template = case["template"].as_str().expect("a template");
    if direct {
        std::fs::write(root.join("templates/case.yaml"), template).expect("template");
    } else {
        std::fs::write(root.join("templates/_case.tpl"), template).expect("template");
        std::fs::write(
            root.join("templates/case.yaml"),
            "v: {{ include \"t/templates/_case.tpl\" . | toJson }}\n",
        )
        .expect("wrapper");
    }
}

/// What `helm template rel t` gives for the case, rendered by the library:
/// `Ok(text)` or `Err(stderr)`.
fn ours(case: &Value, direct: bool) -> Result<String, String> {
    let dir = tempfile::tempdir().expect("temp dir");
    chart(dir.path(), case, direct);
    let options = Options {
        release_name: "rel".into(),
        ..Options::default()
    };
    let stdout = helm_template(&dir.path().join("t"), &ValueOptions::default(), &options)?;
    let (_, text) = stdout
        .split_once("# Source: t/templates/case.yaml\n")
        .ok_or_else(|| format!("no source line in {stdout:?}"))?;
    if direct {
        return Ok(text.to_string());
    }
    let json = text.strip_prefix("v: ").unwrap_or(text);
    serde_json::from_str::<String>(json.trim_end()).map_err(|e| format!("{e}: {text:?}"))
}

fn check(case: &Value, expected: &Value) -> Option<String> {
    let name = case["name"].as_str().unwrap_or("?");
    let direct = case["direct"].as_bool().unwrap_or(false);
    let (wanted, got) = match (&expected["output"], &expected["error"]) {
        (Value::String(output), _) => (Ok(output.clone()), ours(case, direct)),
        (_, Value::String(error)) => (Err(error.clone()), ours(case, true)),
        _ => return Some(format!("{name}: no expectation")),
    };
    (wanted != got).then(|| format!("{name}:\n  Helm {wanted:?}\n  ours {got:?}"))
}

#[test]
fn every_snippet_renders_or_fails_as_helm_4_does() {
    let dir = workspace_root().join("testdata/helm-functions");
    let cases: Vec<Value> = serde_yaml_ng::from_str(
        &std::fs::read_to_string(dir.join("cases.yaml")).expect("cases.yaml"),
    )
    .expect("cases parse");
    let expected: serde_json::Map<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected.json")).expect("expected.json"),
    )
    .expect("expected parses");
    assert!(cases.len() >= 120, "{} cases", cases.len());
    let complaints: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = cases
            .chunks(cases.len().div_ceil(4))
            .map(|chunk| {
                let expected = &expected;
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|case| {
                            let name = case["name"].as_str().unwrap_or_default();
                            check(case, expected.get(name).unwrap_or(&Value::Null))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a case thread"))
            .collect()
    });
    assert!(
        complaints.is_empty(),
        "{} of {} snippets differ from Helm 4.3.1:\n{}",
        complaints.len(),
        cases.len(),
        complaints.join("\n")
    );
}
