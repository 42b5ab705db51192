//! The text layouts of `fleet bundlediff`, as Rancher Fleet prints them: one deployment
//! (`--bundle-deployment`), or the deployments grouped by Bundle.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{field, DeploymentDiff};

/// The rule under a heading: 66 heavy horizontal lines.
fn rule() -> String {
    "\u{2501}".repeat(66)
}

/// One deployment: its name and Bundle, then its resources.
pub(super) fn single(diffs: &[DeploymentDiff]) -> String {
    let mut out = String::new();
    for (index, diff) in diffs.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "BundleDeployment: {}/{}\n",
            diff.namespace, diff.bundle_deployment_name
        ));
        if !diff.bundle_name.is_empty() {
            out.push_str(&format!("Bundle: {}\n", diff.bundle_name));
        }
        out.push_str(&rule());
        out.push('\n');
        if !diff.modified().is_empty() {
            out.push_str("\nModified Resources:\n");
            for entry in diff.modified() {
                out.push('\n');
                modified(&mut out, entry, "  ");
            }
        }
        if !diff.non_ready_resources.is_empty() {
            out.push_str("\nNon-Ready Resources:\n");
            for entry in &diff.non_ready_resources {
                out.push('\n');
                non_ready(&mut out, entry, "  ");
            }
        }
    }
    out
}

/// Every deployment, under its Bundle (`(unknown)` without the label), Bundles in name
/// order.
pub(super) fn grouped(diffs: &[DeploymentDiff]) -> String {
    let mut groups: BTreeMap<&str, Vec<&DeploymentDiff>> = BTreeMap::new();
    for diff in diffs {
        let bundle = match diff.bundle_name.as_str() {
            "" => "(unknown)",
            name => name,
        };
        groups.entry(bundle).or_default().push(diff);
    }
    let mut out = String::new();
    for (index, (bundle, members)) in groups.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "Bundle: {bundle}\nBundleDeployments with diffs: {}\n{}\n",
            members.len(),
            rule()
        ));
        for diff in members {
            out.push_str(&format!(
                "\n  BundleDeployment: {}/{}\n",
                diff.namespace, diff.bundle_deployment_name
            ));
            if !diff.modified().is_empty() {
                out.push_str(&format!(
                    "  Modified Resources ({}):\n",
                    diff.modified().len()
                ));
                for entry in diff.modified() {
                    modified(&mut out, entry, "    ");
                }
            }
            if !diff.non_ready_resources.is_empty() {
                out.push_str(&format!(
                    "  Non-Ready Resources ({}):\n",
                    diff.non_ready_resources.len()
                ));
                for entry in &diff.non_ready_resources {
                    non_ready(&mut out, entry, "    ");
                }
            }
        }
    }
    out
}

/// `Kind.apiVersion namespace/name`, or without the namespace for a cluster-wide object.
fn resource_id(entry: &Value) -> String {
    let (namespace, name) = (field(entry, "namespace"), field(entry, "name"));
    let object = match namespace {
        "" => name.to_string(),
        namespace => format!("{namespace}/{name}"),
    };
    format!(
        "{}.{} {object}",
        field(entry, "kind"),
        field(entry, "apiVersion")
    )
}

/// One `modifiedStatus` entry: what differs, and the patch of a modified object.
fn modified(out: &mut String, entry: &Value, indent: &str) {
    out.push_str(&format!("{indent}Resource: {}\n", resource_id(entry)));
    let flag = |name: &str| entry.get(name).and_then(Value::as_bool).unwrap_or(false);
    let patch = field(entry, "patch");
    let status = if flag("missing") && flag("exist") {
        "Resource exists but is not owned by Fleet"
    } else if flag("missing") {
        "Resource is missing (should be created)"
    } else if flag("delete") {
        "Extra resource (should be deleted)"
    } else if !patch.is_empty() {
        "Modified"
    } else {
        return;
    };
    out.push_str(&format!("{indent}Status: {status}\n"));
    if status != "Modified" {
        return;
    }
    out.push_str(&format!("{indent}Patch:\n"));
    let pretty = serde_json::from_str::<Value>(patch)
        .ok()
        .and_then(|value| serde_json::to_string_pretty(&sorted(value)).ok())
        .unwrap_or_else(|| patch.to_string());
    for line in pretty.lines() {
        out.push_str(&format!("{indent}  {line}\n"));
    }
}

/// One `nonReadyStatus` entry, with its summary when it has a state.
fn non_ready(out: &mut String, entry: &Value, indent: &str) {
    out.push_str(&format!(
        "{indent}Resource: {}\n{indent}Status: Not Ready\n",
        resource_id(entry)
    ));
    let summary = &entry["summary"];
    if !field(summary, "state").is_empty() {
        out.push_str(&format!("{indent}Summary: {}\n", summary_text(summary)));
    }
}

/// A resource summary as Fleet words it: its state when it is neither progressing nor in
/// error; else those marks (`[progressing,error]`, and `error]` alone, as Fleet writes it)
/// and the messages.
fn summary_text(summary: &Value) -> String {
    let flag = |name: &str| summary.get(name).and_then(Value::as_bool).unwrap_or(false);
    let (transitioning, error) = (flag("transitioning"), flag("error"));
    if !transitioning && !error {
        return field(summary, "state").to_string();
    }
    let mut text = match (transitioning, error) {
        (true, true) => "[progressing,error]",
        (true, false) => "[progressing]",
        _ => "error]",
    }
    .to_string();
    let messages: Vec<&str> = summary
        .get("message")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !messages.is_empty() {
        text.push(' ');
        text.push_str(&messages.join(", "));
    }
    text
}

/// `value` with every map's keys in order, as Go prints a decoded JSON value.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let ordered: BTreeMap<String, Value> =
                map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            Value::Object(ordered.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}
