//! The builtin `ValueAddTransformer`: writes one value (by default the name of the
//! kustomization's directory) into chosen fields, or into a chosen position of the file
//! paths those fields hold.

use serde::Deserialize;
use serde_json::Value;

use super::fieldpath::{self, Step};
use super::patches::{Matcher, PatchSource};
use super::plugin_source::PluginSource;
use super::resmap::ResMap;
use super::transformers::set_resource_namespace;
use super::types::Selector;
use fleet_files::Result;

/// The path that means "the namespace", set as the namespace transformer sets it.
const NAMESPACE_PATH: &str = "metadata/namespace";

/// A configured `ValueAddTransformer`.
pub(crate) struct ValueAdd {
    value: String,
    targets: Vec<Target>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Config {
    #[serde(default)]
    value: String,
    #[serde(default)]
    targets: Vec<Target>,
    #[serde(default)]
    target_file_path: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TargetFile {
    #[serde(default)]
    targets: Vec<Target>,
}

/// Where the value goes.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Target {
    /// The resources (all when absent).
    #[serde(default)]
    selector: Option<Selector>,
    /// A slash-separated path; `\/` is a slash inside a key.
    #[serde(default)]
    field_path: String,
    /// When positive, the value is inserted as a path segment at this 1-based position
    /// of the file path the field holds.
    #[serde(default)]
    file_path_position: i64,
}

impl ValueAdd {
    /// Reads the configuration (`body` is the plugin object without its type and
    /// metadata); files it names are relative to the kustomization listing it.
    pub(crate) fn configure(body: &Value, source: &PluginSource<'_>) -> Result<Self> {
        let invalid = |e: serde_json::Error| {
            source.error(format!("invalid ValueAddTransformer configuration: {e}"))
        };
        let mut config: Config = serde_json::from_value(body.clone()).map_err(invalid)?;
        if let Some(path) = &config.target_file_path {
            let (text, shown) = source.location.read(path)?;
            let document = fleet_files::yaml::parse_any_documents(&text, &shown)?
                .into_iter()
                .next()
                .unwrap_or(Value::Null);
            let file: TargetFile = serde_json::from_value(document).map_err(invalid)?;
            config.targets.extend(file.targets);
        }
        if config.targets.is_empty() {
            return Err(source.error("must specify at least one target"));
        }
        for target in &config.targets {
            if target.field_path.is_empty() {
                return Err(source.error("fieldPath cannot be empty"));
            }
            if target.file_path_position < 0 {
                return Err(source.error(format!(
                    "value of FilePathPosition ({}) cannot be negative",
                    target.file_path_position
                )));
            }
        }
        let value = match config.value.trim() {
            "" => source
                .location
                .dir
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            value => value.to_string(),
        };
        Ok(Self {
            value,
            targets: config.targets,
        })
    }

    /// Writes the value into every target.
    pub(crate) fn apply(&self, resources: &mut ResMap, source: &PatchSource<'_>) -> Result<()> {
        for target in &self.targets {
            let indexes = match &target.selector {
                Some(selector) => Matcher::new(selector, source)?.select(resources),
                None => (0..resources.items.len()).collect(),
            };
            let steps = slash_path(&target.field_path);
            for index in indexes {
                let resource = &mut resources.items[index];
                if target.field_path == NAMESPACE_PATH {
                    set_resource_namespace(resource, &self.value, &[], false);
                    continue;
                }
                let mut failure = None;
                fieldpath::visit_mut(&mut resource.value, &steps, true, &mut |slot| {
                    let current = match &*slot {
                        Value::Null => String::new(),
                        Value::Object(_) | Value::Array(_) => {
                            failure = Some(format!(
                                "field `{}` holds a map or list, not a scalar",
                                target.field_path
                            ));
                            return;
                        }
                        scalar => fieldpath::scalar_text(scalar).unwrap_or_default(),
                    };
                    let position = usize::try_from(target.file_path_position).unwrap_or(0);
                    let new_value = if position > 0 {
                        insert_path_part(&current, position - 1, &self.value)
                    } else {
                        self.value.clone()
                    };
                    *slot = Value::String(new_value);
                });
                if let Some(message) = failure {
                    return Err(source.error(message));
                }
                resource.remember_name();
            }
        }
        Ok(())
    }
}

/// Splits `a/b\/c/[name=x]` into steps; a backslash before a slash keeps it in the key.
fn slash_path(path: &str) -> Vec<Step> {
    let mut keys: Vec<String> = Vec::new();
    for part in path.split('/') {
        match keys.last_mut() {
            Some(last) if last.ends_with('\\') => {
                last.pop();
                last.push('/');
                last.push_str(part);
            }
            _ => keys.push(part.to_string()),
        }
    }
    keys.into_iter()
        .map(
            |key| match key.strip_prefix('[').and_then(|k| k.strip_suffix(']')) {
                Some(inner) => match inner.split_once('=') {
                    Some((field, value)) => Step::Match(field.to_string(), value.to_string()),
                    None => Step::Key(key),
                },
                None => Step::Key(key),
            },
        )
        .collect()
}

/// Inserts `part` as the segment at `position` of a slash-separated path, past the end
/// when the path is shorter; a leading slash stays.
fn insert_path_part(path: &str, position: usize, part: &str) -> String {
    let absolute = path.starts_with('/');
    let mut segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    segments.insert(position.min(segments.len()), part);
    let joined = segments.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table in kustomize's valueadd filter documentation.
    #[test]
    fn inserts_path_parts_as_kustomize_documents() {
        let cases = [
            ("", 0, "PEACH"),
            ("/", 0, "/PEACH"),
            ("pie", 0, "PEACH/pie"),
            ("/pie", 0, "/PEACH/pie"),
            ("raw", 1, "raw/PEACH"),
            ("/raw", 1, "/raw/PEACH"),
            ("raw", 9998, "raw/PEACH"),
            ("a/nice/warm/pie", 3, "a/nice/warm/PEACH/pie"),
            ("/a/nice/warm/pie", 3, "/a/nice/warm/PEACH/pie"),
        ];
        for (path, position, want) in cases {
            assert_eq!(
                insert_path_part(path, position, "PEACH"),
                want,
                "{path} at {position}"
            );
        }
    }

    #[test]
    fn escaped_slashes_stay_in_keys() {
        assert_eq!(
            slash_path(r"metadata/annotations/example.com\/owner"),
            vec![
                Step::Key("metadata".into()),
                Step::Key("annotations".into()),
                Step::Key("example.com/owner".into())
            ]
        );
    }
}
