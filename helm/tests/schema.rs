//! Values that break a chart's `values.schema.json` are reported as Helm 4.3.1 reports
//! them: each case run through real Helm and the library, the same lines. Where Helm's
//! validator visits sibling properties in Go's random map order, the report is compared
//! as a set of top-level blocks (a line and the lines indented under it).

use std::path::Path;
use std::process::Command;

use fleet_helm::{Chart, Options};

/// A chart whose values and schema are the case's, in a fresh directory.
fn chart(dir: &Path, schema: &str, values: &str) -> std::path::PathBuf {
    let root = dir.join("sch");
    std::fs::create_dir_all(root.join("templates")).expect("dirs");
    std::fs::write(
        root.join("Chart.yaml"),
        "apiVersion: v2\nname: sch\nversion: 0.1.0\n",
    )
    .expect("chart");
    std::fs::write(root.join("values.yaml"), values).expect("values");
    std::fs::write(root.join("values.schema.json"), schema).expect("schema");
    std::fs::write(root.join("templates/cm.yaml"), "kind: ConfigMap\n").expect("template");
    root
}

/// Real Helm's report: its standard error without the `Error:` line and the chart's name.
fn helm_report(root: &Path, what: &str) -> Vec<String> {
    let output = Command::new(fleet_testkit::real_tool("helm4"))
        .args(["template", "r"])
        .arg(root)
        .output()
        .expect("helm runs");
    assert!(!output.status.success(), "{what}: Helm accepted the values");
    report_lines(&String::from_utf8_lossy(&output.stderr))
}

fn our_report(root: &Path) -> Vec<String> {
    let loaded = Chart::load(root).expect("loads");
    let error = fleet_helm::render(&loaded, &serde_json::json!({}), &Options::default())
        .expect_err("invalid values");
    report_lines(&error.to_string())
}

/// The `- at …` lines of a report.
fn report_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.trim_start().starts_with("- at "))
        .map(String::from)
        .collect()
}

/// The report as blocks (a top line and the lines under it), sorted.
fn blocks(lines: &[String]) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    for line in lines {
        match blocks.last_mut() {
            Some(block) if line.starts_with("  ") => {
                block.push('\n');
                block.push_str(line);
            }
            _ => blocks.push(line.clone()),
        }
    }
    blocks.sort();
    blocks
}

const CASES: &[(&str, &str, &str, bool)] = &[
    (
        "a required list, one failing property in a nested group, an extra property",
        r#"{"type": "object", "required": ["image", "zeta"], "additionalProperties": false,
            "properties": {"image": {"type": "string"}, "zeta": {},
              "nested": {"type": "object", "required": ["b"],
                "properties": {"a": {"type": "string"}, "b": {}}}}}"#,
        "nested: {a: 1}\ntypo: 1\n",
        true,
    ),
    (
        "one property failing two ways, lifted to the top",
        r#"{"properties": {"name": {"type": "string", "minLength": 5, "pattern": "^x\\d"}}}"#,
        "name: ab\n",
        true,
    ),
    (
        "numbers out of every bound",
        r#"{"properties": {"num": {"minimum": 5, "maximum": 1, "exclusiveMaximum": 3, "multipleOf": 2}}}"#,
        "num: 3\n",
        true,
    ),
    (
        "lists: too short, repeated, an item too big",
        r#"{"properties": {"l": {"type": "array", "minItems": 3, "uniqueItems": true,
            "items": {"maximum": 2}}}}"#,
        "l: [1, 1, 5, 1.5]\n",
        true,
    ),
    (
        "types, enums and constants",
        r#"{"properties": {"b": {"type": "boolean"}, "s": {"type": ["string", "null"]},
            "e": {"enum": ["fast", "safe", 3]}, "c": {"const": "only"}, "i": {"type": "integer"}}}"#,
        "b: 3\ns: [x]\ne: slow\nc: other\ni: 1.5\n",
        false,
    ),
    (
        "several properties failing several ways",
        r#"{"type": "object", "required": ["image"], "additionalProperties": false,
            "properties": {"replicas": {"type": "integer", "minimum": 1},
              "name": {"type": "string", "minLength": 5, "pattern": "^x"},
              "ports": {"type": "array", "minItems": 2, "items": {"type": "integer", "maximum": 100}},
              "nested": {"type": "object", "required": ["b"], "properties": {"a": {"type": "string"}}}}}"#,
        "replicas: 0\nname: ab\nports: [1000]\nnested: {a: 1}\ntypo: 1\n",
        false,
    ),
];

#[test]
fn schema_failures_are_reported_as_helm_reports_them() {
    for (what, schema, values, exact) in CASES {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = chart(dir.path(), schema, values);
        let (helm, ours) = (helm_report(&root, what), our_report(&root));
        assert!(!helm.is_empty(), "{what}: Helm reported nothing");
        if *exact {
            assert_eq!(ours, helm, "{what}");
        } else {
            assert_eq!(blocks(&ours), blocks(&helm), "{what}");
        }
    }
}
