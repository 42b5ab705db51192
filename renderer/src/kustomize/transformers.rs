//! The built-in transformers: namespace, name prefix/suffix, labels, annotations, images,
//! replicas.

use std::collections::BTreeMap;

use serde_json::Value;

use super::fieldspec::FieldSpec;
use super::resmap::ResMap;
use super::types::{ImageEntry, ReplicaEntry};
use crate::resource::{is_cluster_scoped, set_metadata, str_at};

/// Sets the namespace of every namespaced resource, and of ServiceAccount subjects of role
/// bindings that pointed at the resources' old namespace.
pub fn set_namespace(resources: &mut ResMap, namespace: &str) {
    for resource in &mut resources.items {
        let kind = resource.kind().to_string();
        if is_cluster_scoped(&kind) {
            if kind == "ClusterRoleBinding" {
                set_subject_namespaces(&mut resource.value, namespace);
            }
            continue;
        }
        set_metadata(&mut resource.value, "namespace", namespace);
        if kind == "RoleBinding" {
            set_subject_namespaces(&mut resource.value, namespace);
        }
        resource.remember_name();
    }
}

fn set_subject_namespaces(binding: &mut Value, namespace: &str) {
    let Some(Value::Array(subjects)) = binding.get_mut("subjects") else {
        return;
    };
    for subject in subjects {
        let is_service_account = str_at(subject, &["kind"]) == "ServiceAccount";
        let default_namespace = matches!(str_at(subject, &["namespace"]), "" | "default");
        if is_service_account && default_namespace {
            if let Some(map) = subject.as_object_mut() {
                map.insert("namespace".into(), Value::String(namespace.to_string()));
            }
        }
    }
}

/// Kinds whose names are never prefixed or suffixed.
fn keeps_name(kind: &str) -> bool {
    matches!(
        kind,
        "CustomResourceDefinition" | "APIService" | "Namespace"
    )
}

/// Adds a prefix and suffix to every name.
pub fn add_name_affixes(resources: &mut ResMap, prefix: &str, suffix: &str) {
    for resource in &mut resources.items {
        if keeps_name(resource.kind()) {
            continue;
        }
        let name = str_at(&resource.value, &["metadata", "name"]);
        let renamed = format!("{prefix}{name}{suffix}");
        set_metadata(&mut resource.value, "name", &renamed);
        resource.remember_name();
    }
}

/// Metadata of pod and job templates, where labels and annotations also go.
const TEMPLATE_METADATA: [FieldSpec; 8] = [
    FieldSpec::of("Deployment", "spec/template/metadata", true),
    FieldSpec::of("ReplicaSet", "spec/template/metadata", true),
    FieldSpec::of("DaemonSet", "spec/template/metadata", true),
    FieldSpec::of("StatefulSet", "spec/template/metadata", true),
    FieldSpec::of("ReplicationController", "spec/template/metadata", true),
    FieldSpec::of("Job", "spec/template/metadata", true),
    FieldSpec::of("CronJob", "spec/jobTemplate/metadata", true),
    FieldSpec::of("CronJob", "spec/jobTemplate/spec/template/metadata", true),
];

/// Label selectors inside pod affinity terms of workload templates.
const AFFINITY_SELECTORS: [&str; 4] = [
    "spec/template/spec/affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution[]/podAffinityTerm/labelSelector/matchLabels",
    "spec/template/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution[]/labelSelector/matchLabels",
    "spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution[]/podAffinityTerm/labelSelector/matchLabels",
    "spec/template/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution[]/labelSelector/matchLabels",
];

/// Metadata objects that get labels: every object's, and templates' when asked.
fn label_metadata_specs(templates: bool) -> Vec<FieldSpec> {
    let mut specs = vec![FieldSpec::any("metadata", true)];
    if templates {
        specs.extend(TEMPLATE_METADATA);
        specs.push(FieldSpec::of(
            "StatefulSet",
            "spec/volumeClaimTemplates[]/metadata",
            true,
        ));
    }
    specs
}

/// Label selectors that get labels when `includeSelectors` (or commonLabels) asks.
fn label_selector_specs() -> Vec<FieldSpec> {
    let mut specs = vec![
        FieldSpec::of("Service", "spec/selector", true),
        FieldSpec::of("ReplicationController", "spec/selector", true),
        FieldSpec::of("Deployment", "spec/selector/matchLabels", true),
        FieldSpec::of("ReplicaSet", "spec/selector/matchLabels", true),
        FieldSpec::of("DaemonSet", "spec/selector/matchLabels", true),
        FieldSpec::of("StatefulSet", "spec/selector/matchLabels", true),
        FieldSpec::of("Job", "spec/selector/matchLabels", false),
        FieldSpec::of(
            "CronJob",
            "spec/jobTemplate/spec/selector/matchLabels",
            false,
        ),
        FieldSpec::of("PodDisruptionBudget", "spec/selector/matchLabels", false),
        FieldSpec::of("NetworkPolicy", "spec/podSelector/matchLabels", false),
        FieldSpec::of(
            "NetworkPolicy",
            "spec/ingress[]/from[]/podSelector/matchLabels",
            false,
        ),
        FieldSpec::of(
            "NetworkPolicy",
            "spec/egress[]/to[]/podSelector/matchLabels",
            false,
        ),
    ];
    for kind in ["Deployment", "ReplicaSet", "DaemonSet", "StatefulSet"] {
        for path in AFFINITY_SELECTORS {
            specs.push(FieldSpec::of(kind, path, false));
        }
    }
    specs
}

/// Adds labels to metadata and, as asked, to selectors and templates.
pub fn add_labels(
    resources: &mut ResMap,
    labels: &BTreeMap<String, String>,
    selectors: bool,
    templates: bool,
) {
    if labels.is_empty() {
        return;
    }
    apply_map(
        resources,
        &label_metadata_specs(templates || selectors),
        Some("labels"),
        labels,
    );
    if selectors {
        apply_map(resources, &label_selector_specs(), None, labels);
    }
}

/// Adds annotations to metadata and pod templates.
pub fn add_annotations(resources: &mut ResMap, annotations: &BTreeMap<String, String>) {
    if annotations.is_empty() {
        return;
    }
    let mut specs = vec![FieldSpec::any("metadata", true)];
    specs.extend(TEMPLATE_METADATA);
    apply_map(resources, &specs, Some("annotations"), annotations);
}

/// Writes `entries` into the map each spec reaches, or into its `field` map when given
/// (created when missing).
fn apply_map(
    resources: &mut ResMap,
    specs: &[FieldSpec],
    field: Option<&str>,
    entries: &BTreeMap<String, String>,
) {
    for resource in &mut resources.items {
        let kind = resource.kind().to_string();
        for spec in specs.iter().filter(|s| s.applies_to(&kind)) {
            spec.visit(&mut resource.value, &mut |target| {
                let map = match field {
                    Some(field) => crate::resource::object_at(target, &[field]),
                    None => target.as_object_mut(),
                };
                if let Some(map) = map {
                    for (k, v) in entries {
                        map.insert(k.clone(), Value::String(v.clone()));
                    }
                }
            });
        }
    }
}

const IMAGE_SPECS: [FieldSpec; 8] = [
    FieldSpec::any("spec/containers[]/image", false),
    FieldSpec::any("spec/initContainers[]/image", false),
    FieldSpec::any("spec/template/spec/containers[]/image", false),
    FieldSpec::any("spec/template/spec/initContainers[]/image", false),
    FieldSpec::any(
        "spec/jobTemplate/spec/template/spec/containers[]/image",
        false,
    ),
    FieldSpec::any(
        "spec/jobTemplate/spec/template/spec/initContainers[]/image",
        false,
    ),
    FieldSpec::any("spec/ephemeralContainers[]/image", false),
    FieldSpec::any("spec/template/spec/ephemeralContainers[]/image", false),
];

/// Rewrites container images by name.
pub fn set_images(resources: &mut ResMap, images: &[ImageEntry]) {
    for resource in &mut resources.items {
        for spec in &IMAGE_SPECS {
            spec.visit(&mut resource.value, &mut |image| {
                if let Some(current) = image.as_str() {
                    if let Some(new) = rewrite_image(current, images) {
                        *image = Value::String(new);
                    }
                }
            });
        }
    }
}

/// Splits an image reference into name, tag and digest.
fn split_image(image: &str) -> (&str, Option<&str>, Option<&str>) {
    let (rest, digest) = match image.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (image, None),
    };
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    match rest[slash..].rfind(':') {
        Some(colon) => (
            &rest[..slash + colon],
            Some(&rest[slash + colon + 1..]),
            digest,
        ),
        None => (rest, None, digest),
    }
}

fn rewrite_image(image: &str, images: &[ImageEntry]) -> Option<String> {
    let (name, tag, digest) = split_image(image);
    let entry = images.iter().find(|e| e.name == name)?;
    let new_name = entry.new_name.as_deref().unwrap_or(name);
    let suffix = match (&entry.digest, &entry.new_tag) {
        (Some(d), _) => format!("@{d}"),
        (None, Some(t)) => format!(":{t}"),
        (None, None) => {
            let tag = tag.map(|t| format!(":{t}")).unwrap_or_default();
            let digest = digest.map(|d| format!("@{d}")).unwrap_or_default();
            format!("{tag}{digest}")
        }
    };
    Some(format!("{new_name}{suffix}"))
}

/// Sets replica counts of workloads by name.
pub fn set_replicas(resources: &mut ResMap, replicas: &[ReplicaEntry]) {
    for resource in &mut resources.items {
        let kind = resource.kind();
        if !matches!(
            kind,
            "Deployment" | "ReplicationController" | "ReplicaSet" | "StatefulSet"
        ) {
            continue;
        }
        let Some(entry) = replicas.iter().find(|r| resource.was_named(&r.name)) else {
            continue;
        };
        if let Some(spec) = crate::resource::object_at(&mut resource.value, &["spec"]) {
            spec.insert("replicas".into(), Value::from(entry.count));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_images_with_registry_ports() {
        assert_eq!(split_image("nginx"), ("nginx", None, None));
        assert_eq!(split_image("nginx:1.2"), ("nginx", Some("1.2"), None));
        assert_eq!(
            split_image("reg:5000/app:v1@sha256:ab"),
            ("reg:5000/app", Some("v1"), Some("sha256:ab"))
        );
        assert_eq!(split_image("reg:5000/app"), ("reg:5000/app", None, None));
    }

    #[test]
    fn rewrites_name_tag_and_digest() {
        let entries = vec![ImageEntry {
            name: "nginx".into(),
            new_name: Some("my/nginx".into()),
            new_tag: Some("2".into()),
            digest: None,
        }];
        assert_eq!(
            rewrite_image("nginx:1", &entries),
            Some("my/nginx:2".into())
        );
        assert_eq!(rewrite_image("redis:1", &entries), None);
    }
}
