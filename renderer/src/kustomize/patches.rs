//! `patches`, `patchesStrategicMerge` and `patchesJson6902`, and target selection.

use std::path::Path;

use regex::Regex;
use serde_json::Value;

use super::resmap::ResMap;
use super::types::{PatchEntry, Selector};
use crate::error::{RenderError, Result};
use crate::resource::{str_at, ResId};
use crate::root::RepoRoot;
use crate::yaml;
use fleet_objects::selector::LabelRequirements;
use fleet_objects::smp::{self, ItemOrder, ListMerge};
use fleet_objects::split_api_version;

/// A parsed patch.
pub enum Patch {
    /// Strategic merge patch documents.
    Strategic(Vec<Value>),
    /// RFC 6902 operations.
    Json6902(json_patch::Patch),
}

/// Where a patch was written, for messages.
pub struct PatchSource<'a> {
    /// The repository root.
    pub root: &'a RepoRoot,
    /// The kustomization's directory.
    pub dir: &'a Path,
    /// The kustomization file.
    pub file: &'a Path,
    /// The field holding the patch (`patches[2]`).
    pub field: String,
}

impl PatchSource<'_> {
    fn error(&self, message: impl Into<String>) -> RenderError {
        RenderError::in_field(self.root.display(self.file), &self.field, message)
    }

    /// Reads the text of a patch given inline or by path.
    pub fn text(&self, entry: &PatchEntry) -> Result<(String, String)> {
        match (&entry.path, &entry.patch) {
            (Some(_), Some(_)) => Err(self.error("set either `path` or `patch`, not both")),
            (None, None) => Err(self.error("a patch needs `path` or `patch`")),
            (None, Some(inline)) => Ok((inline.clone(), self.root.display(self.file))),
            (Some(path), None) => {
                let resolved = self.root.resolve(self.dir, path, self.file)?;
                Ok((
                    self.root.read_to_string(&resolved)?,
                    self.root.display(&resolved),
                ))
            }
        }
    }

    /// Parses patch text: a YAML list is JSON 6902, mappings are strategic merge.
    pub fn parse(&self, text: &str, file: &str) -> Result<Patch> {
        let first: Value = match serde_yaml_ng::Deserializer::from_str(text).next() {
            Some(doc) => {
                serde::Deserialize::deserialize(doc).map_err(|e| yaml::yaml_error(file, &e))?
            }
            None => Value::Null,
        };
        if first.is_array() {
            let operations: json_patch::Patch = serde_json::from_value(first)
                .map_err(|e| self.error(format!("invalid JSON 6902 patch in {file}: {e}")))?;
            return Ok(Patch::Json6902(operations));
        }
        let documents = yaml::parse_documents(text, file)?;
        if documents.is_empty() {
            return Err(self.error(format!("patch in {file} is empty")));
        }
        Ok(Patch::Strategic(documents))
    }
}

/// Applies a patch to the resources its target selects (or, for a strategic merge patch
/// without target, to the resource its own kind and name name). Matching nothing is an error.
pub fn apply(
    resources: &mut ResMap,
    patch: &Patch,
    target: Option<&Selector>,
    source: &PatchSource<'_>,
) -> Result<()> {
    match (patch, target) {
        (Patch::Json6902(_), None) => Err(source.error("a JSON 6902 patch needs a `target`")),
        (Patch::Json6902(operations), Some(selector)) => {
            for index in select_targets(resources, selector, source)? {
                let resource = &mut resources.items[index];
                json_patch::patch(&mut resource.value, operations).map_err(|e| {
                    source.error(format!(
                        "cannot apply JSON 6902 patch to {}: {e}",
                        resource.id()
                    ))
                })?;
                resource.remember_name();
            }
            Ok(())
        }
        (Patch::Strategic(documents), Some(selector)) => {
            let indexes = select_targets(resources, selector, source)?;
            for document in documents {
                for &index in &indexes {
                    strategic(resources, index, document, true);
                }
            }
            remove_deleted(resources);
            Ok(())
        }
        (Patch::Strategic(documents), None) => {
            for document in documents {
                let id = ResId::of(document);
                let index = find_by_id(resources, &id).ok_or_else(|| {
                    source.error(format!("no resource matches the patch for {id}"))
                })?;
                strategic(resources, index, document, false);
            }
            remove_deleted(resources);
            Ok(())
        }
    }
}

/// The resources a patch target selects; selecting none is an error.
fn select_targets(
    resources: &ResMap,
    selector: &Selector,
    source: &PatchSource<'_>,
) -> Result<Vec<usize>> {
    let indexes = Matcher::new(selector, source)?.select(resources);
    if indexes.is_empty() {
        return Err(source.error(format!(
            "patch target {} matches no resource",
            describe(selector)
        )));
    }
    Ok(indexes)
}

/// Applies one strategic merge document; `$patch: delete` marks the resource for removal.
fn strategic(resources: &mut ResMap, index: usize, document: &Value, keep_identity: bool) {
    let resource = &mut resources.items[index];
    if document.get("$patch").and_then(Value::as_str) == Some("delete") {
        resource.value = Value::Null;
        return;
    }
    let lists = ListMerge::for_api_version(str_at(&resource.value, &["apiVersion"]));
    let identity = keep_identity.then(|| {
        (
            resource.value.get("apiVersion").cloned(),
            resource.value.get("kind").cloned(),
            resource.value.pointer("/metadata/name").cloned(),
            resource.value.pointer("/metadata/namespace").cloned(),
        )
    });
    smp::merge(&mut resource.value, document, lists, ItemOrder::PatchFirst);
    if let Some((api_version, kind, name, namespace)) = identity {
        restore(&mut resource.value, "/apiVersion", api_version);
        restore(&mut resource.value, "/kind", kind);
        restore(&mut resource.value, "/metadata/name", name);
        restore(&mut resource.value, "/metadata/namespace", namespace);
    }
}

fn restore(value: &mut Value, pointer: &str, original: Option<Value>) {
    match (value.pointer_mut(pointer), original) {
        (Some(slot), Some(original)) => *slot = original,
        (Some(_), None) => {
            let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
            if let Some(map) = value.pointer_mut(parent).and_then(Value::as_object_mut) {
                map.remove(key);
            }
        }
        _ => {}
    }
}

fn remove_deleted(resources: &mut ResMap) {
    resources.items.retain(|r| !r.value.is_null());
}

/// Finds the resource a target-less patch names: by kind, name (current or earlier) and
/// namespace when the patch gives one.
fn find_by_id(resources: &ResMap, id: &ResId) -> Option<usize> {
    let candidates: Vec<usize> = resources
        .items
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            let current = r.id();
            current.kind == id.kind
                && (id.group.is_empty() || current.group == id.group)
                && r.was_named(&id.name)
                && (id.namespace.is_empty()
                    || r.names.iter().any(|(ns, _)| *ns == id.namespace)
                    || current.namespace == id.namespace)
        })
        .map(|(i, _)| i)
        .collect();
    match candidates.as_slice() {
        [only] => Some(*only),
        _ => candidates
            .iter()
            .copied()
            .find(|&i| resources.items[i].id().name == id.name),
    }
}

fn describe(selector: &Selector) -> String {
    let parts: Vec<String> = [
        ("group", &selector.group),
        ("version", &selector.version),
        ("kind", &selector.kind),
        ("name", &selector.name),
        ("namespace", &selector.namespace),
        ("labelSelector", &selector.label_selector),
        ("annotationSelector", &selector.annotation_selector),
    ]
    .iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}")))
    .collect();
    format!("[{}]", parts.join(", "))
}

/// A compiled selector.
pub struct Matcher<'s> {
    selector: &'s Selector,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: Option<LabelRequirements>,
    annotations: Option<LabelRequirements>,
}

impl<'s> Matcher<'s> {
    /// Compiles the name and namespace patterns and the label selectors.
    pub fn new(selector: &'s Selector, source: &PatchSource<'_>) -> Result<Self> {
        let anchored = |pattern: &Option<String>| -> Result<Option<Regex>> {
            pattern
                .as_ref()
                .map(|p| {
                    Regex::new(&format!("^(?:{p})$"))
                        .map_err(|e| source.error(format!("invalid pattern `{p}`: {e}")))
                })
                .transpose()
        };
        let requirements = |text: &Option<String>| -> Result<Option<LabelRequirements>> {
            text.as_ref()
                .map(|t| LabelRequirements::parse(t).map_err(|e| source.error(e)))
                .transpose()
        };
        Ok(Self {
            selector,
            name: anchored(&selector.name)?,
            namespace: anchored(&selector.namespace)?,
            labels: requirements(&selector.label_selector)?,
            annotations: requirements(&selector.annotation_selector)?,
        })
    }

    /// Indexes of the matching resources.
    pub fn select(&self, resources: &ResMap) -> Vec<usize> {
        resources
            .items
            .iter()
            .enumerate()
            .filter(|(_, r)| self.matches(&r.value))
            .map(|(i, _)| i)
            .collect()
    }

    fn matches(&self, object: &Value) -> bool {
        let (group, version) = split_api_version(str_at(object, &["apiVersion"]));
        let equal = |want: &Option<String>, have: &str| want.as_ref().is_none_or(|w| w == have);
        equal(&self.selector.group, group)
            && equal(&self.selector.version, version)
            && equal(&self.selector.kind, str_at(object, &["kind"]))
            && self
                .name
                .as_ref()
                .is_none_or(|r| r.is_match(str_at(object, &["metadata", "name"])))
            && self
                .namespace
                .as_ref()
                .is_none_or(|r| r.is_match(str_at(object, &["metadata", "namespace"])))
            && self
                .labels
                .as_ref()
                .is_none_or(|l| l.matches(object.pointer("/metadata/labels")))
            && self
                .annotations
                .as_ref()
                .is_none_or(|l| l.matches(object.pointer("/metadata/annotations")))
    }
}
