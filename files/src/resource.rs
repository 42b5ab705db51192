//! Identity and common accessors of a Kubernetes object held as JSON.

use std::fmt;

use fleet_objects::split_api_version;
use serde_json::{Map, Value};

/// Group, version, kind, namespace and name of an object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResId {
    /// API group (empty for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Namespace (empty when unset).
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ResId {
    /// Reads the identity of an object.
    pub fn of(object: &Value) -> Self {
        let api_version = str_at(object, &["apiVersion"]);
        let (group, version) = split_api_version(api_version);
        Self {
            group: group.to_string(),
            version: version.to_string(),
            kind: str_at(object, &["kind"]).to_string(),
            namespace: str_at(object, &["metadata", "namespace"]).to_string(),
            name: str_at(object, &["metadata", "name"]).to_string(),
        }
    }
}

impl fmt::Display for ResId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = if self.group.is_empty() { "" } else { "." };
        write!(f, "{}{}{}/{}", self.kind, group, self.group, self.name)?;
        if !self.namespace.is_empty() {
            write!(f, " in namespace {}", self.namespace)?;
        }
        Ok(())
    }
}

/// The string at a path of object keys, or "" when absent.
pub fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    let mut current = value;
    for key in path {
        match current.get(key) {
            Some(next) => current = next,
            None => return "",
        }
    }
    current.as_str().unwrap_or_default()
}

/// The object at a path, created (as empty objects) where missing. `None` when a
/// non-object value is in the way.
pub fn object_at<'a>(value: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut current = value;
    for key in path {
        let map = current.as_object_mut()?;
        current = map
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if current.is_null() {
            *current = Value::Object(Map::new());
        }
    }
    current.as_object_mut()
}

/// Sets `metadata.<field>` to a string.
pub fn set_metadata(object: &mut Value, field: &str, value: &str) {
    if let Some(metadata) = object_at(object, &["metadata"]) {
        metadata.insert(field.to_string(), Value::String(value.to_string()));
    }
}

/// Kinds that are not namespaced among the built-in Kubernetes kinds.
pub fn is_cluster_scoped(kind: &str) -> bool {
    matches!(
        kind,
        "Namespace"
            | "Node"
            | "PersistentVolume"
            | "ClusterRole"
            | "ClusterRoleBinding"
            | "CustomResourceDefinition"
            | "StorageClass"
            | "PriorityClass"
            | "PriorityLevelConfiguration"
            | "FlowSchema"
            | "MutatingWebhookConfiguration"
            | "ValidatingWebhookConfiguration"
            | "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding"
            | "APIService"
            | "CertificateSigningRequest"
            | "ComponentStatus"
            | "CSIDriver"
            | "CSINode"
            | "IngressClass"
            | "PodSecurityPolicy"
            | "RuntimeClass"
            | "VolumeAttachment"
            | "SelfSubjectAccessReview"
            | "SelfSubjectRulesReview"
            | "SubjectAccessReview"
            | "TokenReview"
    )
}

/// A copy of a value with every object's keys in sorted order.
pub fn sorted_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted_keys).collect()),
        other => other.clone(),
    }
}
