//! `downstreamResources`: Secrets and ConfigMaps of a bundle's namespace that go to every
//! cluster it targets. The controller copies each into the cluster's namespace on the hub
//! (where the cluster's agent may read it; the hub never reaches into members), and the
//! agent recreates it in its cluster under its own name. This module is the naming and
//! the two conversions both sides share.

use fleet_api::labels::{BUNDLE_NAMESPACE_LABEL, BUNDLE_NAME_LABEL};
use fleet_api::DownstreamResource;
use serde_json::{json, Map, Value};

/// Label marking a copy on the hub, with the copied object's kind as its value.
pub const COPY_LABEL: &str = "fleet.cattle.io/downstream-resource";
/// Annotation of a copy naming the object it copies.
pub const SOURCE_NAME_ANNOTATION: &str = "fleet.cattle.io/downstream-resource-name";

/// Why a reference cannot be copied.
#[derive(Debug, PartialEq, Eq)]
pub struct UnsupportedKind(pub String);

impl std::fmt::Display for UnsupportedKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "downstreamResources: kind {:?} is not supported (Secret or ConfigMap)",
            self.0
        )
    }
}

impl std::error::Error for UnsupportedKind {}

/// The kinds a bundle may copy downstream.
pub const KINDS: [&str; 2] = ["Secret", "ConfigMap"];

/// The plural resource of a reference's kind (`secrets` or `configmaps`).
pub fn plural(reference: &DownstreamResource) -> Result<&'static str, UnsupportedKind> {
    plural_of(&reference.kind)
}

fn plural_of(kind: &str) -> Result<&'static str, UnsupportedKind> {
    match kind {
        "Secret" => Ok("secrets"),
        "ConfigMap" => Ok("configmaps"),
        other => Err(UnsupportedKind(other.to_string())),
    }
}

/// The API of `kind` (one of [`KINDS`]) in `namespace`, for reading, writing and pruning
/// copies whatever their kind.
#[cfg(feature = "client")]
pub fn api(
    client: &kube::Client,
    namespace: &str,
    kind: &str,
) -> Result<kube::Api<kube::api::DynamicObject>, UnsupportedKind> {
    let plural = plural_of(kind)?;
    let gvk = kube::api::GroupVersionKind::gvk("", "v1", kind);
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, plural);
    Ok(kube::Api::namespaced_with(
        client.clone(),
        namespace,
        &resource,
    ))
}

/// The name of the copy of `reference` that `bundle` deploys, in a cluster's namespace on
/// the hub: apart from every other bundle's copies and from the namespace's own objects.
pub fn copy_name(bundle: &str, reference: &DownstreamResource) -> String {
    format!(
        "{bundle}-{}-{}",
        reference.kind.to_ascii_lowercase(),
        reference.name
    )
}

/// The copy of `source` (a Secret or ConfigMap as JSON) that bundle `bundle` of
/// `bundle_namespace` places in `namespace`: its data, type and labels, under
/// [`copy_name`], labelled as a copy of that bundle.
pub fn copy_of(
    source: &Value,
    reference: &DownstreamResource,
    bundle: &str,
    bundle_namespace: &str,
    namespace: &str,
) -> Value {
    let mut labels = source
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    labels[BUNDLE_NAME_LABEL] = json!(bundle);
    labels[BUNDLE_NAMESPACE_LABEL] = json!(bundle_namespace);
    labels[COPY_LABEL] = json!(reference.kind);
    let mut copy = json!({
        "apiVersion": "v1",
        "kind": reference.kind,
        "metadata": {
            "name": copy_name(bundle, reference),
            "namespace": namespace,
            "labels": labels,
            "annotations": {SOURCE_NAME_ANNOTATION: reference.name},
        },
    });
    carry_payload(source, &mut copy);
    copy
}

/// The object the agent creates in its cluster from a hub `copy`: the source's name, data,
/// type and labels (less the copy's own marks), in `namespace`.
pub fn restored(copy: &Value, namespace: &str) -> Value {
    let name = copy
        .pointer(&format!(
            "/metadata/annotations/{}",
            SOURCE_NAME_ANNOTATION.replace('/', "~1")
        ))
        .cloned()
        .unwrap_or(Value::Null);
    let mut labels: Map<String, Value> = copy
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for mark in [BUNDLE_NAME_LABEL, BUNDLE_NAMESPACE_LABEL, COPY_LABEL] {
        labels.remove(mark);
    }
    let mut object = json!({
        "apiVersion": "v1",
        "kind": copy.get("kind").cloned().unwrap_or(Value::Null),
        "metadata": {"name": name, "namespace": namespace},
    });
    if !labels.is_empty() {
        object["metadata"]["labels"] = Value::Object(labels);
    }
    carry_payload(copy, &mut object);
    object
}

/// Copies what a Secret or ConfigMap holds (`data`, `binaryData`, `stringData`, `type`,
/// `immutable`) from `from` to `to`.
fn carry_payload(from: &Value, to: &mut Value) {
    for field in ["data", "binaryData", "stringData", "type", "immutable"] {
        if let Some(value) = from.get(field) {
            to[field] = value.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_round_trips_to_the_source_under_its_own_name() {
        let source = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "namespace": "fleet-local", "uid": "u1",
                         "resourceVersion": "9", "labels": {"app": "web"}},
            "type": "Opaque", "data": {"password": "czNjcjN0"},
        });
        let reference = DownstreamResource {
            kind: "Secret".into(),
            name: "db".into(),
        };
        let copy = copy_of(&source, &reference, "demo-app", "fleet-local", "cluster-x");
        assert_eq!(copy["metadata"]["name"], "demo-app-secret-db");
        assert_eq!(copy["metadata"]["labels"][COPY_LABEL], "Secret");
        assert!(copy["metadata"].get("uid").is_none());
        let restored = restored(&copy, "apps");
        assert_eq!(
            restored,
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "db", "namespace": "apps", "labels": {"app": "web"}},
                   "type": "Opaque", "data": {"password": "czNjcjN0"}})
        );
        let other = DownstreamResource {
            kind: "Pod".into(),
            name: "x".into(),
        };
        assert!(plural(&other).is_err());
    }
}
