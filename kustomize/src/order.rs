//! kustomize's legacy output order: by kind priority, then by group/version/kind, then by
//! namespace and name.

use super::resmap::Resource;
use super::types::LegacySortOptions;

const ORDER_FIRST: [&str; 22] = [
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];

const ORDER_LAST: [&str; 2] = [
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Sorts resources in the legacy order, with custom kind lists when given.
pub(crate) fn legacy_sort(resources: &mut [Resource], custom: Option<&LegacySortOptions>) {
    let (first, last): (Vec<&str>, Vec<&str>) = match custom {
        Some(c) if !c.order_first.is_empty() || !c.order_last.is_empty() => (
            c.order_first.iter().map(String::as_str).collect(),
            c.order_last.iter().map(String::as_str).collect(),
        ),
        _ => (ORDER_FIRST.to_vec(), ORDER_LAST.to_vec()),
    };
    let rank = |kind: &str| -> i64 {
        if let Some(i) = first.iter().position(|k| *k == kind) {
            return i as i64 - first.len() as i64;
        }
        if let Some(i) = last.iter().position(|k| *k == kind) {
            return i as i64 + 1;
        }
        0
    };
    resources.sort_by_cached_key(|r| {
        let id = r.id();
        (rank(&id.kind), gvk_string(&id), name_key(&id))
    });
}

fn gvk_string(id: &fleet_files::ResId) -> String {
    let or = |s: &str, empty: &str| {
        if s.is_empty() {
            empty.to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        "{}_{}_{}",
        or(&id.group, "~G"),
        or(&id.version, "~V"),
        or(&id.kind, "~K")
    )
}

/// Namespace and name as kustomize's legacy sort string joins them (`ns|name`, so
/// `kubeflow-system` sorts before `kubeflow`).
fn name_key(id: &fleet_files::ResId) -> String {
    let or = |s: &str, empty: &str| {
        if s.is_empty() {
            empty.to_string()
        } else {
            s.to_string()
        }
    };
    format!("{}|{}", or(&id.namespace, "~X"), or(&id.name, "~N"))
}
