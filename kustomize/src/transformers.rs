//! The built-in transformers: namespace, name prefix/suffix, labels, annotations, images,
//! replicas, each writing where the transformer configuration's field specs say.

use std::collections::BTreeMap;

use serde_json::Value;

use super::config::{FieldSpec, TransformerConfig};
use super::resmap::{ResMap, Resource};
use super::types::{ImageEntry, ReplicaEntry};
use fleet_files::{is_cluster_scoped, str_at};
use fleet_files::{Error, Result};
use fleet_objects::split_api_version;

/// Sets the namespace of every namespaced resource, of role binding subjects named
/// `default`, and of the other fields the configuration lists (a Namespace object's own
/// name, API service and conversion webhook references).
/// With `unset_only` (a NamespaceTransformer's `unsetOnly`), fields already set stay.
pub(crate) fn set_namespace(
    resources: &mut ResMap,
    namespace: &str,
    specs: &[FieldSpec],
    unset_only: bool,
) {
    if namespace.is_empty() {
        return;
    }
    // kubectl kustomize v5.8.1 skips objects a Helm chart rendered (their namespace is
    // the release's).
    for resource in resources.items.iter_mut().filter(|r| !r.from_helm_chart) {
        resource.store_previous_id();
        set_resource_namespace(resource, namespace, specs, unset_only);
    }
}

/// [`set_namespace`] for one resource.
pub(crate) fn set_resource_namespace(
    resource: &mut Resource,
    namespace: &str,
    specs: &[FieldSpec],
    unset_only: bool,
) {
    let text = Value::String(namespace.to_string());
    let mut set = |slot: &mut Value| {
        if !unset_only
            || slot.is_null()
            || slot.as_str() == Some("")
            || slot.as_object().is_some_and(|m| m.is_empty())
        {
            *slot = text.clone();
        }
    };
    let kind = resource.kind().to_string();
    if !is_cluster_scoped(&kind) {
        metadata_spec("namespace").visit(&mut resource.value, &mut set);
    }
    let binding = matches!(kind.as_str(), "RoleBinding" | "ClusterRoleBinding");
    if binding {
        set_default_subject_namespaces(&mut resource.value, &mut set);
    }
    for spec in specs {
        let handled = spec.path == "metadata/namespace" || (binding && spec.path == "subjects");
        if !handled && spec.applies_to(&resource.value) {
            spec.visit(&mut resource.value, &mut set);
        }
    }
    resource.remember_name();
}

/// Role binding subjects named `default` (the default ServiceAccount) move with the
/// namespace.
fn set_default_subject_namespaces(binding: &mut Value, set: &mut dyn FnMut(&mut Value)) {
    let Some(Value::Array(subjects)) = binding.get_mut("subjects") else {
        return;
    };
    for subject in subjects {
        if str_at(subject, &["name"]) == "default" {
            if let Some(map) = subject.as_object_mut() {
                set(map.entry("namespace").or_insert(Value::Null));
            }
        }
    }
}

/// Which end of the name an affix goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Affix {
    /// `namePrefix`.
    Prefix,
    /// `nameSuffix`.
    Suffix,
}

/// Kinds whose names are never prefixed or suffixed: CRDs, API services and Namespaces.
fn keeps_name(resource: &Value) -> bool {
    let (group, _) = split_api_version(str_at(resource, &["apiVersion"]));
    match str_at(resource, &["kind"]) {
        "CustomResourceDefinition" | "Namespace" => true,
        "APIService" => group == "apiregistration.k8s.io",
        _ => false,
    }
}

/// Adds a prefix or suffix to every name and to the other fields `specs` lists, and
/// records it for name references.
pub(crate) fn add_name_affix(
    resources: &mut ResMap,
    affix: Affix,
    text: &str,
    specs: &[FieldSpec],
) {
    for resource in &mut resources.items {
        if keeps_name(&resource.value) {
            continue;
        }
        for spec in specs.iter() {
            if !spec.applies_to(&resource.value) {
                continue;
            }
            if spec.path == "metadata/name" && !text.is_empty() {
                resource.store_previous_id();
            }
            spec.visit(&mut resource.value, &mut |slot| {
                if let Some(current) = slot.as_str() {
                    let affixed = match affix {
                        Affix::Prefix => format!("{text}{current}"),
                        Affix::Suffix => format!("{current}{text}"),
                    };
                    *slot = Value::String(affixed);
                }
            });
            if spec.path == "metadata/name" {
                match affix {
                    Affix::Prefix => resource.prefixes.push(text.to_string()),
                    Affix::Suffix => resource.suffixes.push(text.to_string()),
                }
            }
        }
        resource.remember_name();
    }
}

/// The specs a `labels:` entry writes to: selectors and templates with
/// `includeSelectors`, templates with `includeTemplates`, metadata otherwise; plus its own
/// `fields`.
pub(crate) fn label_specs(
    selectors: bool,
    templates: bool,
    fields: &[FieldSpec],
    config: &TransformerConfig,
) -> Vec<FieldSpec> {
    let mut specs: Vec<FieldSpec> = fields.to_vec();
    let defaults: Vec<FieldSpec> = if selectors {
        config.common_labels.clone()
    } else if templates {
        let mut specs = vec![metadata_spec("labels")];
        specs.extend(config.template_labels.iter().cloned());
        specs
    } else {
        vec![metadata_spec("labels")]
    };
    for spec in defaults {
        if !specs.contains(&spec) {
            specs.push(spec);
        }
    }
    specs
}

/// `metadata/FIELD` of every object, created when missing.
fn metadata_spec(field: &str) -> FieldSpec {
    FieldSpec {
        path: format!("metadata/{field}"),
        create: true,
        ..FieldSpec::default()
    }
}

/// Writes `entries` into the map each spec reaches.
pub(crate) fn apply_map(
    resources: &mut ResMap,
    specs: &[FieldSpec],
    entries: &BTreeMap<String, String>,
) {
    for resource in &mut resources.items {
        for spec in specs.iter() {
            if !spec.applies_to(&resource.value) {
                continue;
            }
            spec.visit(&mut resource.value, &mut |target| {
                if let Some(map) = target.as_object_mut() {
                    for (k, v) in entries {
                        map.insert(k.clone(), Value::String(v.clone()));
                    }
                }
            });
        }
    }
}

/// Rewrites the images one `images:` entry names: in every `containers` and
/// `initContainers` list (CRDs excepted) and in the fields `specs` lists.
pub(crate) fn set_image(resources: &mut ResMap, entry: &ImageEntry, specs: &[FieldSpec]) {
    for resource in &mut resources.items {
        let mut update = |slot: &mut Value| {
            if let Some(new) = slot.as_str().and_then(|image| rewrite_image(image, entry)) {
                *slot = Value::String(new);
            }
        };
        if resource.kind() != "CustomResourceDefinition" {
            visit_container_images(&mut resource.value, &mut update);
        }
        for spec in specs.iter() {
            if !spec.applies_to(&resource.value) {
                continue;
            }
            spec.visit(&mut resource.value, &mut update);
        }
    }
}

/// Calls `f` on the `image` of every item of every `containers` or `initContainers` list.
fn visit_container_images(value: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                visit_container_images(child, f);
                if key == "containers" || key == "initContainers" {
                    for item in child.as_array_mut().into_iter().flatten() {
                        if let Some(image) = item.get_mut("image") {
                            f(image);
                        }
                    }
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| visit_container_images(item, f)),
        _ => {}
    }
}

/// Splits an image reference into name, tag and digest (a registry port is not a tag).
fn split_image(image: &str) -> (&str, Option<&str>, Option<&str>) {
    let offset = image.find('/').filter(|&i| i > 0).unwrap_or(0);
    let search = &image[offset..];
    let at = search.find('@').map(|i| i + offset);
    let colon = search.find(':').map(|i| i + offset);
    match (colon, at) {
        (None, None) => (image, None, None),
        (None, Some(at)) => (&image[..at], None, Some(&image[at + 1..])),
        (Some(colon), Some(at)) if at < colon => (&image[..at], None, Some(&image[at + 1..])),
        (Some(colon), Some(at)) => (
            &image[..colon],
            Some(&image[colon + 1..at]),
            Some(&image[at + 1..]),
        ),
        (Some(colon), None) => (&image[..colon], Some(&image[colon + 1..]), None),
    }
}

/// Whether an image is `name` with an optional tag and sha256 digest.
fn image_matches(image: &str, name: &str) -> bool {
    let Some(rest) = image.strip_prefix(name) else {
        return false;
    };
    let tag_chars = |s: &str| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '{' | '}' | '-'))
    };
    let (tag, digest) = match rest.find("@sha256:") {
        Some(i) => (&rest[..i], Some(&rest[i + "@sha256:".len()..])),
        None => (rest, None),
    };
    (tag.is_empty() || tag.strip_prefix(':').is_some_and(tag_chars)) && digest.is_none_or(tag_chars)
}

fn rewrite_image(image: &str, entry: &ImageEntry) -> Option<String> {
    if !image_matches(image, &entry.name) {
        return None;
    }
    let (name, mut tag, mut digest) = split_image(image);
    let new_tag = entry.new_tag.as_deref().filter(|t| !t.is_empty());
    let new_digest = entry.digest.as_deref().filter(|d| !d.is_empty());
    match (new_tag, new_digest) {
        (Some(t), Some(d)) => (tag, digest) = (Some(t), Some(d)),
        (Some(t), None) => (tag, digest) = (Some(t), None),
        (None, Some(d)) => (tag, digest) = (None, Some(d)),
        (None, None) => {}
    }
    let mut out = entry
        .new_name
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(name)
        .to_string();
    if let Some(tag) = tag.filter(|t| !t.is_empty()) {
        out.push(':');
        out.push_str(tag);
    }
    if let Some(digest) = digest.filter(|d| !d.is_empty()) {
        out.push('@');
        out.push_str(digest);
    }
    Some(out)
}

/// Sets the replica count of the workloads an entry names (by any name they had); an
/// entry naming no workload is an error, as in kustomize.
pub(crate) fn set_replicas(
    resources: &mut ResMap,
    entry: &ReplicaEntry,
    specs: &[FieldSpec],
    file: &str,
) -> Result<()> {
    let mut found = false;
    for spec in specs {
        for resource in &mut resources.items {
            if resource.was_named(&entry.name) && spec.applies_to(&resource.value) {
                found = true;
                spec.visit(&mut resource.value, &mut |slot| {
                    *slot = Value::from(entry.count)
                });
            }
        }
    }
    if !found {
        let kinds: Vec<&str> = specs.iter().map(|s| s.kind.as_str()).collect();
        return Err(Error::in_field(
            file,
            "replicas",
            format!(
                "resource with name {} does not match a config with the following kinds: {}",
                entry.name,
                kinds.join(", ")
            ),
        ));
    }
    Ok(())
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
        let entry = ImageEntry {
            name: "nginx".into(),
            new_name: Some("my/nginx".into()),
            new_tag: Some("2".into()),
            digest: None,
        };
        assert_eq!(rewrite_image("nginx:1", &entry), Some("my/nginx:2".into()));
        assert_eq!(
            rewrite_image("nginx@sha256:ab", &entry),
            Some("my/nginx:2".into())
        );
        assert_eq!(rewrite_image("nginxx:1", &entry), None);
        assert_eq!(rewrite_image("redis:1", &entry), None);
        let both = ImageEntry {
            name: "nginx".into(),
            new_tag: Some("2".into()),
            digest: Some("sha256:abc".into()),
            ..ImageEntry::default()
        };
        assert_eq!(
            rewrite_image("nginx:1", &both),
            Some("nginx:2@sha256:abc".into())
        );
    }
}
