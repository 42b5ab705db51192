//! Name references: after renames (prefix, suffix, content hash), fields that name another
//! object are updated to its new name, as kustomize's name reference transformer does.

use serde_json::Value;

use super::fieldspec::{pod_spec_paths, visit_path, FieldSpec};
use super::resmap::{ResMap, Resource};
use crate::resource::{is_cluster_scoped, str_at};

/// A field in some referrer kinds that names an object of `referral` kind.
struct Reference {
    referral: &'static str,
    spec: FieldSpec,
    /// Only entries whose sibling `kind` equals the referral (roleRef, subjects, scaleTargetRef).
    kind_checked: bool,
}

const fn of(
    referral: &'static str,
    kind: &'static str,
    path: &'static str,
    kind_checked: bool,
) -> Reference {
    Reference {
        referral,
        spec: FieldSpec::of(kind, path, false),
        kind_checked,
    }
}

/// Reference fields inside a pod spec, relative to it.
const POD_REFERENCES: [(&str, &str); 16] = [
    ("ConfigMap", "volumes[]/configMap/name"),
    (
        "ConfigMap",
        "containers[]/env[]/valueFrom/configMapKeyRef/name",
    ),
    (
        "ConfigMap",
        "initContainers[]/env[]/valueFrom/configMapKeyRef/name",
    ),
    ("ConfigMap", "containers[]/envFrom[]/configMapRef/name"),
    ("ConfigMap", "initContainers[]/envFrom[]/configMapRef/name"),
    ("ConfigMap", "volumes[]/projected/sources[]/configMap/name"),
    ("Secret", "volumes[]/secret/secretName"),
    ("Secret", "containers[]/env[]/valueFrom/secretKeyRef/name"),
    (
        "Secret",
        "initContainers[]/env[]/valueFrom/secretKeyRef/name",
    ),
    ("Secret", "containers[]/envFrom[]/secretRef/name"),
    ("Secret", "initContainers[]/envFrom[]/secretRef/name"),
    ("Secret", "imagePullSecrets[]/name"),
    ("Secret", "volumes[]/projected/sources[]/secret/name"),
    ("ServiceAccount", "serviceAccountName"),
    (
        "PersistentVolumeClaim",
        "volumes[]/persistentVolumeClaim/claimName",
    ),
    ("PriorityClass", "priorityClassName"),
];

const OTHER_REFERENCES: [Reference; 17] = [
    of("Secret", "ServiceAccount", "imagePullSecrets[]/name", false),
    of("Secret", "ServiceAccount", "secrets[]/name", false),
    of("Secret", "Ingress", "spec/tls[]/secretName", false),
    of(
        "Service",
        "Ingress",
        "spec/rules[]/http/paths[]/backend/service/name",
        false,
    ),
    of(
        "Service",
        "Ingress",
        "spec/defaultBackend/service/name",
        false,
    ),
    of(
        "Service",
        "Ingress",
        "spec/rules[]/http/paths[]/backend/serviceName",
        false,
    ),
    of("Service", "StatefulSet", "spec/serviceName", false),
    of("Service", "APIService", "spec/service/name", false),
    of("ServiceAccount", "RoleBinding", "subjects[]", true),
    of("ServiceAccount", "ClusterRoleBinding", "subjects[]", true),
    of("Role", "RoleBinding", "roleRef", true),
    of("ClusterRole", "RoleBinding", "roleRef", true),
    of("ClusterRole", "ClusterRoleBinding", "roleRef", true),
    of(
        "StorageClass",
        "PersistentVolumeClaim",
        "spec/storageClassName",
        false,
    ),
    of(
        "StorageClass",
        "StatefulSet",
        "spec/volumeClaimTemplates[]/spec/storageClassName",
        false,
    ),
    of(
        "Deployment",
        "HorizontalPodAutoscaler",
        "spec/scaleTargetRef",
        true,
    ),
    of(
        "StatefulSet",
        "HorizontalPodAutoscaler",
        "spec/scaleTargetRef",
        true,
    ),
];

/// Updates every reference to a renamed object.
pub fn fix_references(resources: &mut ResMap) {
    let snapshot: Vec<Candidate> = resources.items.iter().map(Candidate::of).collect();
    for (index, referrer) in resources.items.iter_mut().enumerate() {
        let kind = referrer.kind().to_string();
        let namespace = str_at(&referrer.value, &["metadata", "namespace"]).to_string();
        let layers = referrer.layers.clone();
        let rename = |referral: &str, name: &str| -> Option<String> {
            best_candidate(&snapshot, index, referral, name, &namespace, &layers)
        };
        if let Some(pod_path) = pod_spec_paths(&kind) {
            visit_path(&mut referrer.value, pod_path, false, &mut |pod| {
                for (referral, field) in POD_REFERENCES {
                    visit_path(pod, field, false, &mut |slot| {
                        rename_string(slot, |name| rename(referral, name));
                    });
                }
            });
        }
        for reference in OTHER_REFERENCES.iter().filter(|r| r.spec.applies_to(&kind)) {
            reference.spec.visit(&mut referrer.value, &mut |slot| {
                if reference.kind_checked {
                    if str_at(slot, &["kind"]) != reference.referral {
                        return;
                    }
                    let own_namespace = str_at(slot, &["namespace"]).to_string();
                    if let Some(name_slot) = slot.get_mut("name") {
                        rename_string(name_slot, |name| {
                            if own_namespace.is_empty() {
                                rename(reference.referral, name)
                            } else {
                                best_candidate(
                                    &snapshot,
                                    index,
                                    reference.referral,
                                    name,
                                    &own_namespace,
                                    &layers,
                                )
                            }
                        });
                    }
                } else {
                    rename_string(slot, |name| rename(reference.referral, name));
                }
            });
        }
    }
}

fn rename_string(slot: &mut Value, rename: impl Fn(&str) -> Option<String>) {
    if let Some(current) = slot.as_str() {
        if let Some(new) = rename(current) {
            *slot = Value::String(new);
        }
    }
}

/// What name references need of a possible referral, read once per build.
struct Candidate {
    kind: String,
    namespace: String,
    name: String,
    names: Vec<String>,
    layers: Vec<usize>,
}

impl Candidate {
    fn of(resource: &Resource) -> Self {
        Self {
            kind: resource.kind().to_string(),
            namespace: str_at(&resource.value, &["metadata", "namespace"]).to_string(),
            name: str_at(&resource.value, &["metadata", "name"]).to_string(),
            names: resource.names.iter().map(|(_, n)| n.clone()).collect(),
            layers: resource.layers.clone(),
        }
    }
}

/// The new name of the object of `kind` once called `name`, seen from the referrer.
fn best_candidate(
    resources: &[Candidate],
    referrer: usize,
    kind: &str,
    name: &str,
    namespace: &str,
    layers: &[usize],
) -> Option<String> {
    let candidates = resources.iter().enumerate().filter(|(i, r)| {
        *i != referrer
            && r.kind == kind
            && r.names.iter().any(|n| n == name)
            && (is_cluster_scoped(kind) || namespace.is_empty() || r.namespace == namespace)
    });
    let shared = |r: &Candidate| r.layers.iter().filter(|l| layers.contains(l)).count();
    let (_, best) = candidates.max_by_key(|(_, r)| shared(r))?;
    (best.name != name).then(|| best.name.clone())
}
