//! The values a user gives `helm template` or `helm install`: values files, then the
//! `--set` family, merged as Helm's `values.Options.MergeValues` merges them.

use std::path::PathBuf;

use serde_json::{Map, Value as Json};

use crate::error::{Error, ErrorKind, Result};
use crate::strvals::{self, Kind};
use crate::{goyaml, values};

/// A user's values, as Helm's flags give them. [`ValueOptions::merge`] reads them in
/// Helm's order: each values file over the ones before, then `--set-json`, `--set`,
/// `--set-string`, `--set-file` and `--set-literal`.
#[derive(Debug, Clone, Default)]
pub struct ValueOptions {
    /// `-f`/`--values`: YAML files, later ones winning.
    pub value_files: Vec<PathBuf>,
    /// `--set-json`: `key=JSON`.
    pub json_values: Vec<String>,
    /// `--set`: `a.b=c,d[0]=e`, typed.
    pub values: Vec<String>,
    /// `--set-string`: as `--set`, always strings.
    pub string_values: Vec<String>,
    /// `--set-file`: `key=path`, the value being the file's contents.
    pub file_values: Vec<String>,
    /// `--set-literal`: `key=value`, the whole value one string.
    pub literal_values: Vec<String>,
}

impl ValueOptions {
    /// The merged values, or Helm's message for the first that does not read.
    pub fn merge(&self) -> Result<Json> {
        let mut user = Json::Object(Map::new());
        for file in &self.value_files {
            let shown = file.display().to_string();
            let text = std::fs::read_to_string(file).map_err(|e| {
                values_error(&shown, format!("open {shown}: {}", io_reason(&e))).caused_by(e)
            })?;
            let parsed = goyaml::parse_documents(&text)
                .map_err(|e| {
                    values_error(&shown, format!("failed to parse {shown}: {e}"))
                        .at_line(e.line)
                        .caused_by(e)
                })?
                .into_iter()
                .next()
                .unwrap_or_default();
            if !parsed.is_null() {
                values::merge_user(&mut user, &parsed);
            }
        }
        let Json::Object(map) = &mut user else {
            return Ok(user);
        };
        let passes: [(&[String], &str, Kind); 3] = [
            (&self.json_values, "--set-json", Kind::Json),
            (&self.values, "--set", Kind::Typed),
            (&self.string_values, "--set-string", Kind::String),
        ];
        for (items, flag, kind) in passes {
            for item in items {
                strvals::parse_into(item, map, kind).map_err(|e| flag_error(flag, e))?;
            }
        }
        let read = |path: &str| {
            std::fs::read_to_string(path).map_err(|e| format!("open {path}: {}", io_reason(&e)))
        };
        for item in &self.file_values {
            strvals::parse_file_into(item, map, &read).map_err(|e| flag_error("--set-file", e))?;
        }
        for item in &self.literal_values {
            strvals::parse_literal_into(item, map).map_err(|e| flag_error("--set-literal", e))?;
        }
        Ok(user)
    }
}

fn values_error(file: &str, message: String) -> Error {
    Error::new(ErrorKind::UserValues, file, message)
}

fn flag_error(flag: &str, reason: String) -> Error {
    values_error(flag, format!("failed parsing {flag} data: {reason}"))
}

/// Go's wording of the common I/O errors.
fn io_reason(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => error.to_string(),
    }
}
