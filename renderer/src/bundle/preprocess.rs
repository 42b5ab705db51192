//! Fleet's preprocessing of a bundle's Helm values for one cluster, before the chart sees
//! them: `global.fleet.clusterLabels.NAME` strings replaced by the cluster's label, then the
//! whole values tree written as YAML and executed as one Go template between `${` and `}`
//! (keys too; the output read back as YAML, so `"${ .ClusterValues.port }"` becomes a
//! number), then each `helm.templateValues` entry executed on its own and put in place of
//! the top-level value of its name. The templates see `.ClusterName`, `.ClusterNamespace`,
//! `.ClusterLabels`, `.ClusterAnnotations` and `.ClusterValues` (`spec.templateValues`),
//! call sprig's functions (not Helm's), and fail on a missing key.

use std::collections::BTreeMap;

use fleet_api::BundleDeploymentOptions;
use fleet_helm::template::lex::Delims;
use fleet_helm::template::{Exec, Templates, Value as TemplateValue};
use serde_json::{Map, Value};

use super::target::ClusterInfo;

/// Fleet's `${ }` delimiters.
const FLEET_DELIMS: Delims = Delims {
    left: "${",
    right: "}",
};

/// The prefix of a value naming a cluster label.
const LABEL_REFERENCE: &str = "global.fleet.clusterLabels.";

/// How deep label references are looked for.
const MAX_LABEL_DEPTH: usize = 50;

/// Preprocesses `options.helm.values` for `cluster` as Fleet's controller does; the error
/// is Fleet's text. A cluster left without labels once Rancher's own are dropped gets its
/// values untouched, as in Fleet.
pub(super) fn preprocess_helm_values(
    options: &mut BundleDeploymentOptions,
    cluster: &ClusterInfo,
) -> Result<(), String> {
    let labels = exported(&cluster.labels, true);
    if labels.is_empty() {
        return Ok(());
    }
    let Some(helm) = options.helm.as_mut() else {
        return Ok(());
    };
    let mut values = helm.values.clone().unwrap_or_default();
    if helm.template_values.is_none() && values.is_empty() {
        return Ok(());
    }
    replace_label_references(&mut values, &labels, 0)?;
    if !helm.disable_pre_process.unwrap_or(false) {
        let context = context(cluster, &labels);
        values = template_values_tree(&values, &context)?;
        for (key, template) in helm.template_values.iter().flatten() {
            values.insert(key.clone(), template_one_value(template, &context)?);
        }
    }
    helm.values = Some(values);
    Ok(())
}

/// Labels or annotations as Fleet exports them to templates: without those naming
/// `cattle.io/` or starting `kubectl.kubernetes.io/`, then (labels only) with Fleet's and
/// Rancher's management labels put back.
fn exported(all: &BTreeMap<String, String>, labels: bool) -> BTreeMap<String, String> {
    let kept_back = |key: &str| {
        labels && (key.starts_with("fleet.cattle.io/") || key.starts_with("management.cattle.io/"))
    };
    (all.iter())
        .filter(|(key, _)| {
            kept_back(key)
                || !(key.contains("cattle.io/") || key.starts_with("kubectl.kubernetes.io/"))
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// Replaces each string value (of a map, or of a map in a list) that is exactly
/// `global.fleet.clusterLabels.NAME` by label NAME's value, or by `""` when the cluster has
/// no such label.
fn replace_label_references(
    values: &mut Map<String, Value>,
    labels: &BTreeMap<String, String>,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_LABEL_DEPTH {
        return Err(format!(
            "maximum recursion depth of {MAX_LABEL_DEPTH} exceeded for cluster label prefix processing, too many nested values"
        ));
    }
    for value in values.values_mut() {
        match value {
            Value::String(text) => {
                if let Some(label) = text.strip_prefix(LABEL_REFERENCE) {
                    *text = labels.get(label).cloned().unwrap_or_default();
                }
            }
            Value::Object(map) => replace_label_references(map, labels, depth + 1)?,
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(map) = item {
                        replace_label_references(map, labels, depth + 1)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// What the templates see.
fn context(cluster: &ClusterInfo, labels: &BTreeMap<String, String>) -> TemplateValue {
    let strings = |map: &BTreeMap<String, String>| {
        let json: Map<String, Value> = (map.iter())
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        Value::Object(json)
    };
    let data = serde_json::json!({
        "ClusterName": cluster.name,
        "ClusterNamespace": cluster.namespace,
        "ClusterLabels": strings(labels),
        "ClusterAnnotations": strings(&exported(&cluster.annotations, false)),
        "ClusterValues": Value::Object(cluster.template_values.clone()),
    });
    // Go reads the cluster's values as JSON into interfaces: every number is a float.
    TemplateValue::from_json_floats(&data)
}

/// Executes `source` as Fleet's values template.
fn execute(source: &str, context: &TemplateValue) -> Result<String, String> {
    let functions = fleet_helm::sprig_functions();
    let mut templates = Templates::with_options(FLEET_DELIMS, true);
    templates
        .add("values", source, &functions)
        .map_err(|e| format!("failed to parse helm values template: {e}"))?;
    Exec::new(&templates, &functions)
        .execute("values", context)
        .map_err(|e| format!("failed to render helm values template: {e}"))
}

/// The whole values tree, written as YAML, executed as one template and read back.
fn template_values_tree(
    values: &Map<String, Value>,
    context: &TemplateValue,
) -> Result<Map<String, Value>, String> {
    let text = fleet_helm::yaml::to_yaml(&TemplateValue::from_json_floats(&Value::Object(
        values.clone(),
    )));
    let rendered = execute(&format!("{text}\n"), context)?;
    match first_document(&rendered)? {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(format!(
            "failed to interpret rendered template as helm values: {other}"
        )),
    }
}

/// One `templateValues` entry, executed and read as YAML (any type).
fn template_one_value(template: &str, context: &TemplateValue) -> Result<Value, String> {
    first_document(&execute(template, context)?)
}

fn first_document(text: &str) -> Result<Value, String> {
    let documents = fleet_helm::yaml::parse_documents(text).map_err(|e| {
        format!("failed to interpret rendered template as helm values: {text}, {e}")
    })?;
    Ok(documents.into_iter().next().unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests;
