//! `buildMetadata: [originAnnotations, transformerAnnotations]`: where each object came
//! from and which transformers ran over it, written into its annotations as kustomize
//! writes them.
//!
//! Any non-empty `buildMetadata` in the kustomization being built turns tracking on for
//! the whole build (a base's setting counts for nothing). While it is on, objects read
//! from files carry their file, generated objects the generator that made them, and every
//! transformer that runs adds itself to the list of every object present, changed or not.
//! The annotations live on the objects during the build, where replacements can read
//! them; at the end each is removed unless its option is listed, on every build.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::remote::RemoteResource;
use super::resmap::Resource;

/// Where an object came from.
pub(crate) const ORIGIN: &str = "config.kubernetes.io/origin";
/// The transformers that ran over an object, in order.
pub(crate) const TRANSFORMATIONS: &str = "alpha.config.kubernetes.io/transformations";

/// One origin: a file, or the generator or transformer configured somewhere. Fields in
/// kustomize's order; empty ones are not written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Origin {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    repo: String,
    #[serde(default, rename = "ref", skip_serializing_if = "String::is_empty")]
    reference: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    configured_in: String,
    #[serde(default, skip_serializing_if = "ConfiguredBy::is_empty")]
    configured_by: ConfiguredBy,
}

/// The configuration object behind a generator or transformer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfiguredBy {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    namespace: String,
}

impl ConfiguredBy {
    fn is_empty(&self) -> bool {
        *self == ConfiguredBy::default()
    }
}

/// Where the build stands: the directory of the kustomization being read, as the paths
/// written in kustomizations join up from the top one, and the repository it came from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Trail {
    dir: String,
    repo: String,
    reference: String,
}

impl Trail {
    /// The trail after following `entry` (a directory or file a kustomization names).
    /// Every entry is first read as a repository URL, as kustomize reads it; inside a
    /// repository, paths start at its root.
    pub(crate) fn enter(&self, entry: &str) -> Trail {
        match RemoteResource::parse(entry) {
            Some(RemoteResource::Git {
                repo,
                path,
                reference,
            }) => Trail {
                dir: if path.is_empty() {
                    "notCloned".into()
                } else {
                    path
                },
                repo,
                reference: reference.unwrap_or_default(),
            },
            Some(RemoteResource::File { url }) => match split_file_url(&url) {
                Some((repo, path)) => Trail {
                    dir: path,
                    repo,
                    reference: String::new(),
                },
                None => self.joined(entry),
            },
            None => self.joined(entry),
        }
    }

    fn joined(&self, entry: &str) -> Trail {
        Trail {
            dir: go_join(&self.dir, entry),
            ..self.clone()
        }
    }

    /// The origin of an object read from the file `entry`.
    pub(crate) fn file(&self, entry: &str) -> Origin {
        let at = self.enter(entry);
        Origin {
            path: at.dir,
            repo: at.repo,
            reference: at.reference,
            ..Origin::default()
        }
    }

    /// The origin of a builtin generator or transformer (`kind`) a kustomization field of
    /// the kustomization file `file_name` configures.
    pub(crate) fn builtin(&self, file_name: &str, kind: &str) -> Origin {
        self.configured(&go_join(&self.dir, file_name), "builtin", kind, "", "")
    }

    /// The origin of a plugin configured by `config`, written in `configured_in`.
    pub(crate) fn plugin(&self, configured_in: &str, config: &Value) -> Origin {
        let text = |pointer: &str| config.pointer(pointer).and_then(Value::as_str);
        self.configured(
            configured_in,
            text("/apiVersion").unwrap_or_default(),
            text("/kind").unwrap_or_default(),
            text("/metadata/name").unwrap_or_default(),
            text("/metadata/namespace").unwrap_or_default(),
        )
    }

    /// The path of `entry` from the top kustomization (or the repository's root).
    pub(crate) fn path_of(&self, entry: &str) -> String {
        self.enter(entry).dir
    }

    fn configured(
        &self,
        configured_in: &str,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: &str,
    ) -> Origin {
        Origin {
            repo: self.repo.clone(),
            reference: self.reference.clone(),
            configured_in: configured_in.into(),
            configured_by: ConfiguredBy {
                api_version: api_version.into(),
                kind: kind.into(),
                name: name.into(),
                namespace: namespace.into(),
            },
            ..Origin::default()
        }
    }
}

/// kustomize reads a file URL with at least three path segments as a repository (the
/// first two segments) and a path inside it.
fn split_file_url(url: &str) -> Option<(String, String)> {
    let scheme_end = url.find("://")? + 3;
    let host_end = scheme_end + url[scheme_end..].find('/')?;
    let segments: Vec<&str> = url[host_end + 1..].splitn(3, '/').collect();
    match segments[..] {
        [first, second, rest] if !rest.is_empty() => Some((
            format!("{}/{first}/{second}", &url[..host_end]),
            rest.to_string(),
        )),
        _ => None,
    }
}

/// Go's `filepath.Join`: the non-empty parts joined by `/`, then cleaned lexically.
fn go_join(dir: &str, entry: &str) -> String {
    let joined = match (dir.is_empty(), entry.is_empty()) {
        (true, true) => return String::new(),
        (true, false) => entry.to_string(),
        (false, true) => dir.to_string(),
        (false, false) => format!("{dir}/{entry}"),
    };
    go_clean(&joined)
}

/// Go's `path.Clean`: no empty or `.` segments, `..` taken back where it can be.
fn go_clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            other => parts.push(other),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

/// The annotations of an object, created when asked to write.
fn annotations(object: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    let metadata = object.get_mut("metadata")?.as_object_mut()?;
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if !annotations.is_object() {
        *annotations = Value::Object(Default::default());
    }
    annotations.as_object_mut()
}

fn text_of(record: &impl Serialize) -> String {
    serde_json::to_value(record)
        .map(|value| fleet_helm::yaml::to_kyaml(&value))
        .unwrap_or_default()
}

impl Origin {
    /// The origin as its annotation holds it; written once, set on many objects.
    pub(crate) fn text(&self) -> String {
        text_of(self)
    }
}

/// The annotation `key` of an object, if it has it.
fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a Value> {
    object.pointer("/metadata/annotations")?.get(key)
}

/// Sets the object's origin (an [`Origin::text`]), replacing any it had (objects read
/// from files).
pub(crate) fn set_origin(object: &mut Value, origin: &str) {
    if let Some(annotations) = annotations(object) {
        annotations.insert(ORIGIN.into(), Value::String(origin.to_string()));
    }
}

/// Sets the object's origin unless it has one, readable or not (generated objects, whose
/// options may set annotations).
pub(crate) fn set_origin_if_absent(object: &mut Value, origin: &str) {
    if annotation(object, ORIGIN).is_none() {
        set_origin(object, origin);
    }
}

/// The file an object's origin names, if it has a readable one that names a file.
pub(crate) fn origin_path(object: &Value) -> Option<String> {
    let text = annotation(object, ORIGIN)?.as_str()?;
    let record: Origin = serde_yaml_ng::from_str(text).ok()?;
    (!record.path.is_empty()).then_some(record.path)
}

/// Records that the transformer `record` ran over every resource: its origin where a
/// resource has none, else the next entry of its transformations.
pub(crate) fn note_transformer(resources: &mut [Resource], record: &Origin) -> Result<(), String> {
    let record_text = record.text();
    for resource in resources {
        let object = &mut resource.value;
        let written = |key: &str| {
            annotation(object, key).map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
        };
        let (origin, transformations) = (written(ORIGIN), written(TRANSFORMATIONS));
        let Some(origin) = origin else {
            set_origin(object, &record_text);
            continue;
        };
        let unreadable = |key: &str, what: &str, e: serde_yaml_ng::Error| {
            format!(
                "the `{key}` annotation of {} is not {what}: {e}",
                resource_id(object)
            )
        };
        serde_yaml_ng::from_str::<Origin>(&origin)
            .map_err(|e| unreadable(ORIGIN, "an origin", e))?;
        let mut list: Vec<Origin> = match transformations {
            Some(text) => serde_yaml_ng::from_str::<Option<Vec<Origin>>>(&text)
                .map_err(|e| unreadable(TRANSFORMATIONS, "a list of origins", e))?
                .unwrap_or_default(),
            None => Vec::new(),
        };
        list.push(record.clone());
        if let Some(annotations) = annotations(object) {
            annotations.insert(TRANSFORMATIONS.into(), Value::String(text_of(&list)));
        }
    }
    Ok(())
}

fn resource_id(object: &Value) -> String {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    format!(
        "{} {}",
        text("/kind").unwrap_or("object"),
        text("/metadata/name").unwrap_or_default()
    )
}

/// Removes the annotations whose option `build_metadata` does not list, as kustomize does
/// at the end of every build.
pub(crate) fn strip_unlisted(object: &mut Value, build_metadata: &[String]) {
    let listed = |option: &str| build_metadata.iter().any(|b| b == option);
    let Some(Value::Object(annotations)) = object.pointer_mut("/metadata/annotations") else {
        return;
    };
    for (key, option) in [
        (ORIGIN, "originAnnotations"),
        (TRANSFORMATIONS, "transformerAnnotations"),
    ] {
        if !listed(option) {
            annotations.shift_remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_as_gos_filepath_join() {
        assert_eq!(go_join("", "cm.yaml"), "cm.yaml");
        assert_eq!(go_join("../base", "./inner/../sa.yaml"), "../base/sa.yaml");
        assert_eq!(go_join("", "/abs/x.yaml"), "/abs/x.yaml");
        assert_eq!(go_join("a", "../.."), "..");
        assert_eq!(go_join("", "http://h:1/y.yaml"), "http:/h:1/y.yaml");
    }

    #[test]
    fn entries_are_read_as_repositories_first() {
        let top = Trail::default();
        let repo = top.enter("file:///tmp/repo//app?ref=v1");
        assert_eq!(
            (
                repo.dir.as_str(),
                repo.repo.as_str(),
                repo.reference.as_str()
            ),
            ("app", "file:///tmp/repo", "v1")
        );
        assert_eq!(repo.file("cm.yaml").path, "app/cm.yaml");
        let file = top.file("http://127.0.0.1:18777/a/b/x.yaml");
        assert_eq!(
            (file.path.as_str(), file.repo.as_str()),
            ("x.yaml", "http://127.0.0.1:18777/a/b")
        );
        assert_eq!(
            top.file("http://127.0.0.1:18777/y.yaml").path,
            "http:/127.0.0.1:18777/y.yaml"
        );
    }
}
