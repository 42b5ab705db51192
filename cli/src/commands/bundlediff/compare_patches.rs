//! `fleet bundlediff --fleet-yaml`: the `diff.comparePatches` of a fleet.yaml that ignores
//! the changes a deployment reports, merged with those its Bundle already has, as Rancher
//! Fleet prints them.

use anyhow::{bail, Context as _, Result};
use fleet_api::labels::BUNDLE_NAMESPACE_LABEL;
use fleet_api::{Bundle, BundleDeployment, ComparePatch, Operation};
use kube::Api;
use serde_json::{Map, Value};

use super::{field, BundleDiffArgs, DeploymentDiff, DEFAULT_NAMESPACE};

/// The `diff:` snippet for the one deployment of `diffs`, or `None` when none of its
/// changes is a patch (nothing to ignore).
pub(super) async fn fleet_yaml(
    client: &kube::Client,
    args: &BundleDiffArgs,
    diffs: &[DeploymentDiff],
) -> Result<Option<String>> {
    let [diff] = diffs else {
        bail!(
            "failed to find bundle deployment {}",
            args.bundle_deployment.clone().unwrap_or_default()
        );
    };
    if diff.bundle_name.is_empty() {
        bail!(
            "failed to find bundle deployment {}",
            diff.bundle_deployment_name
        );
    }
    let found: Vec<ComparePatch> = diff.modified().iter().filter_map(compare_patch).collect();
    if found.is_empty() {
        return Ok(None);
    }
    let deployment = Api::<BundleDeployment>::namespaced(client.clone(), &diff.namespace)
        .get(&diff.bundle_deployment_name)
        .await
        .with_context(|| {
            format!(
                "failed to get BundleDeployment {}/{}",
                diff.namespace, diff.bundle_deployment_name
            )
        })?;
    let labelled = deployment
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(BUNDLE_NAMESPACE_LABEL));
    let bundle_namespace = match labelled.map(String::as_str) {
        Some(namespace) if !namespace.is_empty() => namespace,
        _ if !args.namespace.is_empty() => args.namespace.as_str(),
        _ => DEFAULT_NAMESPACE,
    };
    let bundle = Api::<Bundle>::namespaced(client.clone(), bundle_namespace)
        .get(&diff.bundle_name)
        .await
        .with_context(|| {
            format!(
                "failed to get Bundle {bundle_namespace}/{}",
                diff.bundle_name
            )
        })?;
    let existing = bundle
        .spec
        .options
        .diff
        .map(|diff| diff.compare_patches)
        .unwrap_or_default();
    let merged = merge(existing, found);
    let listed = serde_yaml_ng::to_string(&serde_json::json!({
        "comparePatches": merged.iter().map(ordered).collect::<Vec<_>>(),
    }))?;
    let mut out = String::from("diff:\n");
    for line in listed.lines().filter(|line| !line.is_empty()) {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    Ok(Some(out))
}

/// The compare patch ignoring what the `modifiedStatus` entry's merge patch changes: a
/// `remove` of every path it sets; `None` without a patch, or with one that is not a JSON
/// object.
fn compare_patch(entry: &Value) -> Option<ComparePatch> {
    let patch: Map<String, Value> = match serde_json::from_str(field(entry, "patch")) {
        Ok(patch) => patch,
        Err(error) => {
            if !field(entry, "patch").is_empty() {
                tracing::warn!(resource = %identity_of(entry), %error, "failed to parse patch, skipping resource");
            }
            return None;
        }
    };
    let mut operations = Vec::new();
    removals(&patch, "", &mut operations);
    if operations.is_empty() {
        return None;
    }
    let text = |name: &str| Some(field(entry, name).to_string()).filter(|v| !v.is_empty());
    Some(ComparePatch {
        api_version: text("apiVersion"),
        kind: text("kind"),
        name: text("name"),
        namespace: text("namespace"),
        operations,
        json_pointers: Vec::new(),
    })
}

/// A `remove` for each leaf the merge patch `patch` sets under `prefix`, keys in order,
/// depth first; an empty map is removed as a whole.
fn removals(patch: &Map<String, Value>, prefix: &str, out: &mut Vec<Operation>) {
    let mut keys: Vec<&String> = patch.keys().collect();
    keys.sort();
    for key in keys {
        let path = format!("{prefix}/{}", key.replace('~', "~0").replace('/', "~1"));
        match &patch[key] {
            Value::Object(inner) if !inner.is_empty() => removals(inner, &path, out),
            _ => out.push(Operation {
                op: "remove".into(),
                path,
                value: None,
            }),
        }
    }
}

/// `apiVersion|kind|namespace|name`: what one compare patch is about.
fn identity(patch: &ComparePatch) -> String {
    let part = |value: &Option<String>| value.clone().unwrap_or_default();
    format!(
        "{}|{}|{}|{}",
        part(&patch.api_version),
        part(&patch.kind),
        part(&patch.namespace),
        part(&patch.name)
    )
}

/// The identity of a `modifiedStatus` entry, for messages.
fn identity_of(entry: &Value) -> String {
    ["apiVersion", "kind", "namespace", "name"]
        .map(|name| field(entry, name))
        .join("|")
}

/// The Bundle's compare patches with the `found` ones added: the operations of one object
/// joined (each once), every object once, in order of identity.
fn merge(existing: Vec<ComparePatch>, found: Vec<ComparePatch>) -> Vec<ComparePatch> {
    let mut merged = existing;
    for patch in found {
        match merged
            .iter_mut()
            .find(|known| identity(known) == identity(&patch))
        {
            Some(known) => {
                for operation in patch.operations {
                    if !known.operations.contains(&operation) {
                        known.operations.push(operation);
                    }
                }
            }
            None => merged.push(patch),
        }
    }
    merged.sort_by_key(identity);
    merged
}

/// A compare patch as Fleet prints it: keys in alphabetical order, empty ones left out.
fn ordered(patch: &ComparePatch) -> Value {
    let text = |value: &Option<String>| value.clone().map(Value::String);
    let operations: Vec<Value> = patch
        .operations
        .iter()
        .map(|operation| {
            let fields = [
                ("op", Some(Value::String(operation.op.clone()))),
                ("path", Some(Value::String(operation.path.clone()))),
                ("value", text(&operation.value)),
            ];
            object(fields)
        })
        .collect();
    object([
        ("apiVersion", text(&patch.api_version)),
        (
            "jsonPointers",
            (!patch.json_pointers.is_empty()).then(|| serde_json::json!(patch.json_pointers)),
        ),
        ("kind", text(&patch.kind)),
        ("name", text(&patch.name)),
        ("namespace", text(&patch.namespace)),
        (
            "operations",
            (!operations.is_empty()).then_some(Value::Array(operations)),
        ),
    ])
}

/// A JSON object of the fields that have a value, in the order given.
fn object<const N: usize>(fields: [(&str, Option<Value>); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(key, value)| Some((key.to_string(), value?)))
            .collect(),
    )
}
