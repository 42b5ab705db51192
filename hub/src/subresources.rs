//! Subresources besides an object's own path: `status` (custom resources that enable it and
//! built-in kinds with a status), `scale` (what `kubectl scale` and autoscalers read and
//! write: Deployments, StatefulSets, ReplicaSets, ReplicationControllers) and a service
//! account's `token` (`kubectl create token`).

use serde_json::{json, Value};

use crate::call::Call;
use crate::registry::ResourceType;
use crate::status::{ApiError, ApiResult, Cause};
use crate::verbs::{self, PatchFailure, PatchKind};
use crate::Hub;

/// One subresource as discovery lists it: its name, the kind it speaks, and its verbs.
pub(crate) struct Subresource {
    /// `status`, `scale` or `token`.
    pub name: &'static str,
    /// `(group, version, kind)` of its bodies; `None` for the resource's own kind.
    pub kind: Option<(&'static str, &'static str, &'static str)>,
    /// The verbs it takes.
    pub verbs: &'static [&'static str],
}

fn has_scale(resource: &ResourceType) -> bool {
    matches!(
        (resource.group.as_str(), resource.kind.as_str()),
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet") | ("", "ReplicationController")
    )
}

/// The subresources of `resource` in `version`.
pub(crate) fn of(resource: &ResourceType, version: &str) -> Vec<Subresource> {
    let mut subresources = Vec::new();
    if resource.has_status(version) {
        subresources.push(Subresource {
            name: "status",
            kind: None,
            verbs: &["get", "patch", "update"],
        });
    }
    if has_scale(resource) {
        subresources.push(Subresource {
            name: "scale",
            kind: Some(("autoscaling", "v1", "Scale")),
            verbs: &["get", "patch", "update"],
        });
    }
    if resource.group.is_empty() && resource.kind == "ServiceAccount" {
        subresources.push(Subresource {
            name: "token",
            kind: Some(("authentication.k8s.io", "v1", "TokenRequest")),
            verbs: &["create"],
        });
    }
    subresources
}

/// Whether `resource` serves the subresource `name` in `version`.
pub(crate) fn served(resource: &ResourceType, version: &str, name: &str) -> bool {
    of(resource, version).iter().any(|s| s.name == name)
}

/// The `spec.selector` of a workload as a label selector string, as a Scale reports it.
fn selector_string(object: &Value) -> String {
    let Some(selector) = object.pointer("/spec/selector") else {
        return String::new();
    };
    let pairs = |labels: &Value| -> Vec<String> {
        labels
            .as_object()
            .map(|map| {
                map.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default()
    };
    // A ReplicationController's selector is a plain map of labels.
    if selector.get("matchLabels").is_none() && selector.get("matchExpressions").is_none() {
        return pairs(selector).join(",");
    }
    let mut parts = selector.get("matchLabels").map(pairs).unwrap_or_default();
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = |field: &str| {
            expression
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let values: Vec<&str> = expression
            .get("values")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let key = text("key");
        parts.push(match text("operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            _ => format!("!{key}"),
        });
    }
    parts.join(",")
}

/// The `autoscaling/v1` Scale of a workload.
fn scale_of(object: &Value) -> Value {
    let meta = |field: &str| crate::meta::meta_field(object, field).cloned();
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta("name"), "namespace": meta("namespace"), "uid": meta("uid"),
            "resourceVersion": meta("resourceVersion"),
            "creationTimestamp": meta("creationTimestamp"),
        },
        // Kubernetes defaults a workload's replicas to 1.
        "spec": {"replicas": object.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)},
        "status": {
            "replicas": object.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector_string(object),
        },
    })
}

fn parse(bytes: &[u8]) -> ApiResult<Value> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("error decoding: {e}")))
}

/// A `scale` call: `get` reads the Scale; `update` and `patch` change the Scale and write
/// its `spec.replicas` to the workload, guarded by the resourceVersion the Scale was read at.
pub(crate) async fn scale(
    hub: &Hub,
    call: &Call,
    verb: &str,
    patch_kind: Option<PatchKind>,
    bytes: &[u8],
) -> ApiResult<Value> {
    let workload = Call {
        subresource: None,
        ..call.clone()
    };
    let current = scale_of(&verbs::get(hub, &workload)?.value()?);
    let wanted = match (verb, patch_kind) {
        ("get", _) => return Ok(current),
        ("update", _) => parse(bytes)?,
        ("patch", Some(kind @ (PatchKind::Json | PatchKind::Merge | PatchKind::Strategic))) => {
            verbs::patched(&current, kind, &parse(bytes)?).map_err(|failure| match failure {
                PatchFailure::Unreadable(message) | PatchFailure::Inapplicable(message) => {
                    ApiError::bad_request(message)
                }
            })?
        }
        ("patch", _) => {
            return Err(ApiError::unsupported_media_type(
                "the scale subresource takes JSON, merge and strategic merge patches",
            ))
        }
        (other, _) => return Err(ApiError::method_not_allowed(other)),
    };
    let name = call.name.clone().unwrap_or_default();
    let replicas = wanted
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .filter(|n| (0..=i64::from(i32::MAX)).contains(n))
        .ok_or_else(|| {
            ApiError::invalid(
                "Scale",
                "autoscaling",
                &name,
                vec![Cause {
                    kind: "FieldValueInvalid".into(),
                    message: "must be greater than or equal to 0".into(),
                    field: "spec.replicas".into(),
                }],
            )
        })?;
    let mut change = json!({"spec": {"replicas": replicas}});
    let read_at = match verb {
        "update" => crate::meta::meta_field(&wanted, "resourceVersion"),
        _ => crate::meta::meta_field(&current, "resourceVersion"),
    };
    if let Some(version) = read_at.filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
        change["metadata"] = json!({"resourceVersion": version});
    }
    let body = serde_json::to_vec(&change).map_err(|e| ApiError::internal(e.to_string()))?;
    let written = verbs::patch(hub, &workload, PatchKind::Merge, &body).await?;
    Ok(scale_of(&written.object.value()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_print_as_label_selector_strings() {
        let deployment = json!({"spec": {"selector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "old", "operator": "DoesNotExist"}]}}});
        assert_eq!(selector_string(&deployment), "app=web,tier in (a,b),!old");
        let controller = json!({"spec": {"selector": {"app": "web"}}});
        assert_eq!(selector_string(&controller), "app=web");
        assert_eq!(selector_string(&json!({})), "");
    }
}
