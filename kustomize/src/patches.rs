//! `patches`, `patchesStrategicMerge` and `patchesJson6902`, and target selection.

use regex::Regex;
use serde_json::Value;

use super::location::Location;
use super::merge;
use super::openapi::{self, MergeKeys, Schema};
use super::resmap::{ResMap, Resource};
use super::types::{PatchEntry, Selector};
use super::written::{self, Written};
use fleet_files::str_at;
use fleet_files::yaml;
use fleet_files::{Error, Result};
use fleet_objects::selector::LabelRequirements;
use fleet_objects::split_api_version;

/// A parsed patch.
pub(crate) enum Patch {
    /// Strategic merge patch documents, with what their text said.
    Strategic(Vec<(Value, Written)>),
    /// RFC 6902 operations.
    Json6902(json_patch::Patch),
}

/// Where a patch was written, and how custom resources merge.
pub(crate) struct PatchSource<'a> {
    /// The kustomization naming the patch.
    pub location: Location<'a>,
    /// The field holding the patch (`patches[2]`).
    pub field: String,
    /// Merge keys of custom resources from the kustomization's `openapi:` schema.
    pub schema: Option<&'a Schema>,
}

impl<'a> PatchSource<'a> {
    pub(crate) fn error(&self, message: impl Into<String>) -> Error {
        self.location.error(&self.field, message)
    }

    /// Reads the text of a patch given inline or by path.
    pub(crate) fn text(&self, entry: &PatchEntry) -> Result<(String, String)> {
        match (&entry.path, &entry.patch) {
            (Some(_), Some(_)) => Err(self.error("set either `path` or `patch`, not both")),
            (None, None) => Err(self.error("a patch needs `path` or `patch`")),
            (None, Some(inline)) => Ok((inline.clone(), self.location.shown())),
            (Some(path), None) => self.location.read(path),
        }
    }

    /// Parses patch text: a YAML list is JSON 6902, mappings are strategic merge.
    pub(crate) fn parse(&self, text: &str, file: &str) -> Result<Patch> {
        // Bounds on nesting and on what aliases expand to, which the read below lacks.
        yaml::parse_any_documents(text, file)?;
        let first: Value = match serde_yaml_ng::Deserializer::from_str(text).next() {
            Some(doc) => {
                serde::Deserialize::deserialize(doc).map_err(|e| yaml::yaml_error(file, e))?
            }
            None => Value::Null,
        };
        if first.is_array() {
            // kustomize turns a JSON 6902 patch's YAML into JSON as sigs.k8s.io/yaml does,
            // with YAML 1.1's scalars: `y` and `on` are true, `0755` is 493.
            let first = fleet_helm::yaml::parse_documents(text)
                .map_err(|e| self.error(format!("invalid JSON 6902 patch in {file}: {e}")))?
                .into_iter()
                .next()
                .unwrap_or_default();
            let operations: json_patch::Patch = serde_json::from_value(first)
                .map_err(|e| self.error(format!("invalid JSON 6902 patch in {file}: {e}")))?;
            return Ok(Patch::Json6902(operations));
        }
        let documents = written::documents(text, file)?;
        if documents.is_empty() {
            return Err(self.error(format!("patch in {file} is empty")));
        }
        Ok(Patch::Strategic(documents))
    }

    /// Which lists of an object merge item by item: as the kustomization's schema says
    /// for the kinds it describes, as kustomize's built-in schema says for the others.
    fn merge_keys(&self, api_version: &str, kind: &str) -> Option<&'a MergeKeys> {
        let (group, version) = split_api_version(api_version);
        self.schema
            .and_then(|s| s.keys(group, version, kind))
            .or_else(|| openapi::builtin(api_version, kind))
    }
}

/// What a patch may change besides fields: kustomize keeps the name and kind unless told.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Allow {
    /// `options.allowNameChange`.
    pub name: bool,
    /// `options.allowKindChange`.
    pub kind: bool,
}

/// Applies JSON 6902 operations as kustomize's JSON patch library does: all or nothing,
/// and a `replace` of a member missing from an existing object adds it.
fn apply_json6902(
    value: &mut Value,
    operations: &[json_patch::PatchOperation],
) -> std::result::Result<(), json_patch::PatchError> {
    use json_patch::{AddOperation, PatchOperation};
    let mut patched = value.clone();
    for (index, operation) in operations.iter().enumerate() {
        let operation = match operation {
            PatchOperation::Replace(replace)
                if replaces_missing_member(&patched, &replace.path) =>
            {
                PatchOperation::Add(AddOperation {
                    path: replace.path.clone(),
                    value: replace.value.clone(),
                })
            }
            other => other.clone(),
        };
        json_patch::patch(&mut patched, std::slice::from_ref(&operation)).map_err(|mut e| {
            e.operation = index;
            e
        })?;
    }
    *value = patched;
    Ok(())
}

/// Whether `path` names a member that its parent, an existing object, lacks.
fn replaces_missing_member(document: &Value, path: &json_patch::jsonptr::Pointer) -> bool {
    let Some((parent, member)) = path.split_back() else {
        return false;
    };
    matches!(parent.resolve(document), Ok(Value::Object(map)) if !map.contains_key(member.decoded().as_ref()))
}

/// Applies a patch to the resources its target selects or, for a strategic merge patch
/// without target, to the one resource its own id names (any name it had). A target
/// matching nothing is accepted, as kustomize accepts it.
pub(crate) fn apply(
    resources: &mut ResMap,
    patch: &Patch,
    target: Option<&Selector>,
    allow: Allow,
    from_patches_strategic_merge: bool,
    source: &PatchSource<'_>,
) -> Result<()> {
    let options = Options {
        allow,
        metadata_as_text: target.is_some() || from_patches_strategic_merge,
    };
    match (patch, target) {
        (Patch::Json6902(_), None) => Err(source.error("a JSON 6902 patch needs a `target`")),
        (Patch::Json6902(operations), Some(selector)) => {
            for index in Matcher::new(selector, source)?.select(resources) {
                let resource = &mut resources.items[index];
                resource.store_previous_id();
                apply_json6902(&mut resource.value, operations).map_err(|e| {
                    source.error(format!(
                        "cannot apply JSON 6902 patch to {}: {e}",
                        kustomize_id(&resource.value)
                    ))
                })?;
                resource.remember_name();
            }
            Ok(())
        }
        (Patch::Strategic(documents), Some(selector)) => {
            if documents.len() > 1 {
                return Err(source.error(
                    "several strategic merge patches in one entry cannot share a `target`",
                ));
            }
            let indexes = Matcher::new(selector, source)?.select(resources);
            for document in documents {
                for &index in &indexes {
                    strategic(resources, index, document, options, source)?;
                }
            }
            remove_deleted(resources);
            Ok(())
        }
        (Patch::Strategic(documents), None) => {
            for document in documents {
                let id = kustomize_id(&document.0);
                let index = find_by_id(resources, &document.0).ok_or_else(|| {
                    source.error(format!(
                        "no matches for Id {id}; failed to find unique target for patch {id}"
                    ))
                })?;
                strategic(resources, index, document, options, source)?;
            }
            remove_deleted(resources);
            Ok(())
        }
    }
}

/// How one strategic merge document is applied.
#[derive(Debug, Clone, Copy)]
struct Options {
    allow: Allow,
    /// kustomize hands the patch's own `metadata.labels` and `metadata.annotations` on as
    /// the text they were written as when the patch goes through its resource map
    /// (`patchesStrategicMerge`, and `patches` with a `target`).
    metadata_as_text: bool,
}

/// Applies one strategic merge document; `$patch: delete` (or a patch leaving nothing)
/// removes the resource. The name, kind and namespace stay unless allowed to change.
fn strategic(
    resources: &mut ResMap,
    index: usize,
    (document, written): &(Value, Written),
    options: Options,
    source: &PatchSource<'_>,
) -> Result<()> {
    let resource = &mut resources.items[index];
    if document.get("$patch").and_then(Value::as_str) == Some("delete") {
        resource.value = Value::Null;
        return Ok(());
    }
    let allow = options.allow;
    let kind = resource.value.get("kind").cloned();
    let name = resource.value.pointer("/metadata/name").cloned();
    let namespace = resource.value.pointer("/metadata/namespace").cloned();
    let api_version = str_at(&resource.value, &["apiVersion"]).to_string();
    if allow.name || allow.kind {
        resource.store_previous_id();
    }
    let keys = source.merge_keys(&api_version, resource.kind());
    let id = kustomize_id(&resource.value);
    let mut target = std::mem::take(&mut resource.value);
    let object_written = resource.written.get();
    written::mark_bare(&mut target, &object_written.bare);
    let merged = match options.metadata_as_text {
        true => merge::merge(target, &with_metadata_as_text(document, written), keys),
        false => merge::merge(target, document, keys),
    };
    resource.value = merged
        .map_err(|e| source.error(format!("cannot apply the patch to {id}: {e}")))?
        .unwrap_or_default();
    let object_written = resource.written.get();
    object_written.bare = written::unmark_bare(&mut resource.value);
    object_written.took_annotations_from(written);
    if resource.value.as_object().is_none_or(|m| m.is_empty()) {
        resource.value = Value::Null;
        return Ok(());
    }
    if !allow.kind {
        restore(&mut resource.value, "/kind", kind);
    }
    if !allow.name {
        restore(&mut resource.value, "/metadata/name", name);
    }
    restore(&mut resource.value, "/metadata/namespace", namespace);
    if allow.name || allow.kind {
        resource.remember_name();
    }
    Ok(())
}

/// The patch with its own labels and annotations as text: each value is the text it was
/// written as (so a null there sets `""` or `"null"` instead of deleting), and a null or
/// empty map of them is left out, leaving the object's alone.
fn with_metadata_as_text(document: &Value, written: &Written) -> Value {
    let mut patch = document.clone();
    let Some(Value::Object(metadata)) = patch.get_mut("metadata") else {
        return patch;
    };
    for (field, texts) in [
        ("labels", &written.labels),
        ("annotations", &written.annotations),
    ] {
        match metadata.get_mut(field) {
            Some(Value::Object(map)) if !map.is_empty() => {
                for (key, value) in map.iter_mut() {
                    *value = Value::String(written::text_of(texts, key, value));
                }
            }
            Some(_) => {
                metadata.shift_remove(field);
            }
            None => {}
        }
    }
    patch
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
        (None, Some(original)) => {
            if let Some(text) = original.as_str() {
                let field = pointer.rsplit('/').next().unwrap_or_default();
                if pointer.starts_with("/metadata/") {
                    fleet_files::set_metadata(value, field, text);
                } else if let Some(map) = value.as_object_mut() {
                    map.insert(field.to_string(), original.clone());
                }
            }
        }
        (None, None) => {}
    }
}

fn remove_deleted(resources: &mut ResMap) {
    resources.items.retain(|r| !r.value.is_null());
}

/// Finds the one resource a target-less patch names: same group, version and kind, and
/// a name and namespace (unset meaning `default`) it had.
fn find_by_id(resources: &ResMap, patch: &Value) -> Option<usize> {
    let effective = |ns: &str| if ns.is_empty() { "default" } else { ns }.to_string();
    let api_version = str_at(patch, &["apiVersion"]);
    let kind = str_at(patch, &["kind"]);
    let name = str_at(patch, &["metadata", "name"]);
    let namespace = effective(str_at(patch, &["metadata", "namespace"]));
    let mut matches = resources.items.iter().enumerate().filter(|(_, r)| {
        str_at(&r.value, &["apiVersion"]) == api_version
            && r.kind() == kind
            && r.names
                .iter()
                .any(|(ns, n)| n == name && effective(ns) == namespace)
    });
    let (first, _) = matches.next()?;
    matches.next().is_none().then_some(first)
}

/// An object's id as kustomize prints it: `Kind.version.group/name.namespace`.
pub(crate) fn kustomize_id(object: &Value) -> String {
    let (group, version) = split_api_version(str_at(object, &["apiVersion"]));
    let or = |text: &str, empty: &str| {
        if text.is_empty() {
            empty.to_string()
        } else {
            text.to_string()
        }
    };
    format!(
        "{}.{}.{}/{}.{}",
        str_at(object, &["kind"]),
        or(version, "[noVer]"),
        or(group, "[noGrp]"),
        str_at(object, &["metadata", "name"]),
        or(str_at(object, &["metadata", "namespace"]), "[noNs]")
    )
}

/// A compiled selector.
pub(crate) struct Matcher {
    group: Option<Regex>,
    version: Option<Regex>,
    kind: Option<Regex>,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: Option<LabelRequirements>,
    annotations: Option<LabelRequirements>,
}

impl Matcher {
    /// Compiles the group, version, kind, name and namespace patterns (anchored regular
    /// expressions, an empty one matching anything) and the label selectors.
    pub(crate) fn new(selector: &Selector, source: &PatchSource<'_>) -> Result<Self> {
        let anchored = |pattern: &Option<String>| -> Result<Option<Regex>> {
            pattern
                .as_ref()
                .filter(|p| !p.is_empty())
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
            group: anchored(&selector.group)?,
            version: anchored(&selector.version)?,
            kind: anchored(&selector.kind)?,
            name: anchored(&selector.name)?,
            namespace: anchored(&selector.namespace)?,
            labels: requirements(&selector.label_selector)?,
            annotations: requirements(&selector.annotation_selector)?,
        })
    }

    /// Indexes of the matching resources.
    pub(crate) fn select(&self, resources: &ResMap) -> Vec<usize> {
        resources
            .items
            .iter()
            .enumerate()
            .filter(|(_, r)| self.matches(r))
            .map(|(i, _)| i)
            .collect()
    }

    /// Whether a resource matches: its original or current name and namespace (unset
    /// meaning `default`), its group, version and kind, and its labels and annotations.
    pub(crate) fn matches(&self, resource: &Resource) -> bool {
        let object = &resource.value;
        let (group, version) = split_api_version(str_at(object, &["apiVersion"]));
        let matching =
            |pattern: &Option<Regex>, have: &str| pattern.as_ref().is_none_or(|r| r.is_match(have));
        let (original_namespace, original_name) = resource
            .names
            .first()
            .map(|(ns, n)| (ns.as_str(), n.as_str()))
            .unwrap_or_default();
        let effective = |ns: &'_ str| {
            if ns.is_empty() {
                "default".to_string()
            } else {
                ns.to_string()
            }
        };
        let namespace_matches = |r: &Regex| {
            r.is_match(&effective(original_namespace))
                || r.is_match(&effective(str_at(object, &["metadata", "namespace"])))
        };
        let name_matches = |r: &Regex| {
            r.is_match(original_name) || r.is_match(str_at(object, &["metadata", "name"]))
        };
        matching(&self.group, group)
            && matching(&self.version, version)
            && matching(&self.kind, str_at(object, &["kind"]))
            && self.name.as_ref().is_none_or(name_matches)
            && self.namespace.as_ref().is_none_or(namespace_matches)
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
