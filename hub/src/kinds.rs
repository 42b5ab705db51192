//! What a few built-in kinds do on write, standing in for their controllers:
//! namespaces become Active and carry their name as a label, CRDs become Established, Secrets get their default type and
//! token Secrets a token.

use base64::Engine;
use serde_json::{json, Value};

use crate::registry::ResourceType;
use crate::stored::Stored;

/// Whether deleting an object of this kind answers with the object, not a Status: so
/// kube-apiserver does for pods, services and volumes, and clients decode the answer as one.
pub fn returns_deleted_object(resource: &ResourceType) -> bool {
    resource.group.is_empty()
        && matches!(
            resource.kind.as_str(),
            "Pod" | "Service" | "PersistentVolume" | "PersistentVolumeClaim"
        )
}

/// Whether the kind keeps `metadata.generation` (kinds with a spec and a status).
pub fn tracks_generation(resource: &ResourceType, version: &str) -> bool {
    resource.custom || resource.kind != "Namespace" && resource.has_status(version)
}

/// Fills in what the kind's controller would set on a new or changed object.
pub fn on_write(resource: &ResourceType, object: &mut Value) {
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Namespace") => {
            // Every namespace carries its name as a label, as Kubernetes sets it (so that
            // selectors, network policies among them, can pick namespaces by name).
            if let Some(name) = crate::meta::meta_str(object, "name").map(String::from) {
                if let Some(meta) = crate::meta::metadata_mut(object) {
                    let labels = meta.entry("labels").or_insert_with(|| json!({}));
                    if let Some(labels) = labels.as_object_mut() {
                        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
                    }
                }
            }
            let phase = if crate::meta::is_deleting(object) {
                "Terminating"
            } else {
                "Active"
            };
            object["status"] = json!({"phase": phase});
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => establish(object),
        ("", "Secret") => default_secret(object),
        _ => {}
    }
}

fn establish(crd: &mut Value) {
    let now = crate::meta::now();
    let condition = |kind: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": "True", "lastTransitionTime": now,
               "reason": reason, "message": message})
    };
    let stored: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|versions| {
            versions
                .iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    crd["status"] = json!({
        "acceptedNames": crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({})),
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "storedVersions": stored,
    });
}

/// The type of Secret that carries a service account token.
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";

/// Generates a random bearer token.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    if getrandom::fill(&mut bytes).is_err() {
        // Two v4 uuids come from the same source; this only runs if it failed once.
        bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn default_secret(secret: &mut Value) {
    fold_string_data(secret);
    if secret
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .is_empty()
    {
        secret["type"] = json!("Opaque");
    }
    if secret.get("type").and_then(Value::as_str) != Some(TOKEN_SECRET_TYPE) {
        return;
    }
    if secret.pointer("/data/token").is_some() {
        return;
    }
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let namespace = crate::meta::meta_str(secret, "namespace")
        .unwrap_or_default()
        .to_string();
    let data = secret
        .as_object_mut()
        .map(|m| m.entry("data").or_insert_with(|| json!({})));
    if let Some(Value::Object(data)) = data {
        data.insert("token".into(), json!(encode(&new_token())));
        data.insert("namespace".into(), json!(encode(&namespace)));
    }
}

/// Moves `stringData` into `data`, base64-encoded, as kube-apiserver does: a key in both
/// takes the `stringData` value, and `stringData` is never stored.
fn fold_string_data(secret: &mut Value) {
    let Some(Value::Object(strings)) = secret.as_object_mut().and_then(|m| m.remove("stringData"))
    else {
        return;
    };
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let data = secret.as_object_mut().map(|m| {
        let data = m.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        data
    });
    if let Some(Value::Object(data)) = data {
        for (key, value) in strings {
            data.insert(key, json!(encode(value.as_str().unwrap_or_default())));
        }
    }
}

/// [`token_of`] for a stored Secret, read only when its text names the token type.
pub fn stored_token_of(secret: &Stored) -> Option<(String, String, String)> {
    if !secret.mentions(TOKEN_SECRET_TYPE) {
        return None;
    }
    token_of(&secret.value().ok()?)
}

/// The token, namespace and service account of a token Secret, if it is one.
pub fn token_of(secret: &Value) -> Option<(String, String, String)> {
    if secret.get("type").and_then(Value::as_str) != Some(TOKEN_SECRET_TYPE) {
        return None;
    }
    let encoded = secret.pointer("/data/token")?.as_str()?;
    let token = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let account = secret
        .pointer("/metadata/annotations/kubernetes.io~1service-account.name")?
        .as_str()?;
    Some((
        String::from_utf8(token).ok()?,
        crate::meta::meta_str(secret, "namespace")?.to_string(),
        account.to_string(),
    ))
}
