//! Loading a chart: `Chart.yaml` (v1 and v2), `values.yaml`, `values.schema.json`,
//! `templates/`, `crds/`, other files for `.Files`, and subcharts under `charts/` as
//! directories or `.tgz` archives; `.helmignore` is honoured.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::goyaml::{parse_documents_as, Shape};
use crate::error::{Error, ErrorKind, Result};

/// Files beyond this size are refused (Helm's own limit for a chart archive is similar).
pub const MAX_CHART_BYTES: u64 = 100 * 1024 * 1024;

/// A `dependencies` entry of Chart.yaml (or requirements.yaml for v1 charts).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Dependency {
    /// The chart name.
    pub name: String,
    /// A version or range.
    #[serde(default)]
    pub version: String,
    /// The repository it comes from.
    #[serde(default)]
    pub repository: String,
    /// Values paths that enable it, comma separated; the first that exists decides.
    #[serde(default)]
    pub condition: String,
    /// Tags that enable it.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Another name to install it under.
    #[serde(default)]
    pub alias: String,
    /// Values to import from the subchart into the parent.
    #[serde(default, rename = "import-values")]
    pub import_values: Vec<Json>,
    /// Whether tags and conditions left it enabled (set while values are computed).
    #[serde(default)]
    pub enabled: bool,
}

impl Chart {
    /// Whether its templates (or a subchart's) may read the cluster they are installed
    /// into, with `lookup` or `.Capabilities`: a conservative look at their text.
    pub fn reads_cluster(&self) -> bool {
        self.templates
            .iter()
            .any(|(_, text)| text.contains("lookup") || text.contains(".Capabilities"))
            || self.subcharts.iter().any(Chart::reads_cluster)
    }

    /// Whether a template of the chart or a subchart resolves host names
    /// (`getHostByName`), a text search as [`Chart::reads_cluster`].
    pub fn resolves_hosts(&self) -> bool {
        self.templates
            .iter()
            .any(|(_, text)| text.contains("getHostByName"))
            || self.subcharts.iter().any(Chart::resolves_hosts)
    }
}

impl Dependency {
    /// The name the subchart is installed under.
    pub fn effective_name(&self) -> &str {
        if self.alias.is_empty() {
            &self.name
        } else {
            &self.alias
        }
    }
}

/// A loaded chart (serialisable, so that a fetched chart can travel to where it renders).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Chart {
    /// Chart.yaml as written.
    pub metadata: Json,
    /// The chart name.
    pub name: String,
    /// Declared dependencies.
    pub dependencies: Vec<Dependency>,
    /// values.yaml (an empty map when absent).
    pub values: Json,
    /// values.schema.json, if any.
    pub schema: Option<Json>,
    /// Templates by path relative to the chart (`templates/deployment.yaml`).
    pub templates: Vec<(String, String)>,
    /// CRDs by path (`crds/x.yaml`).
    pub crds: Vec<(String, String)>,
    /// Every other file, for `.Files`.
    pub files: Vec<(String, Vec<u8>)>,
    /// Subcharts found in `charts/`.
    pub subcharts: Vec<Chart>,
}

impl Chart {
    /// Loads a chart from a directory or a `.tgz` file, as `helm template PATH` does:
    /// `.helmignore` applied, subcharts in `charts/` (directories and archives) loaded
    /// with it, symbolic links skipped.
    pub fn load(path: &Path) -> Result<Chart> {
        read_path(path)
    }

    /// Loads a chart from its files, each named by its path inside the chart
    /// (`Chart.yaml`, `templates/app.yaml`), as a program that embeds a chart holds them;
    /// `shown` names it in errors.
    pub fn from_files(shown: &str, files: Vec<(String, Vec<u8>)>) -> Result<Chart> {
        let total: u64 = files.iter().map(|(_, bytes)| bytes.len() as u64).sum();
        let mut budget = MAX_CHART_BYTES.checked_sub(total).ok_or_else(|| {
            chart_error(
                shown,
                format!("the chart is larger than {MAX_CHART_BYTES} bytes"),
            )
        })?;
        from_entries(shown, files, &mut budget)
    }

    /// Loads a chart from the bytes of a `.tgz` archive whose entries sit under one top
    /// directory, as a chart repository serves it; `shown` names it in errors.
    pub fn from_archive(shown: &str, bytes: &[u8]) -> Result<Chart> {
        read_archive(shown, bytes)
    }
}

#[derive(Deserialize)]
struct Requirements {
    #[serde(default)]
    dependencies: Vec<Dependency>,
}

fn chart_error(path: &str, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Chart, path, message)
}

fn read_path(path: &Path) -> Result<Chart> {
    if path.is_dir() {
        let mut entries = Vec::new();
        let mut total = 0;
        read_dir(path, path, &mut entries, &mut total)?;
        let mut budget = MAX_CHART_BYTES.saturating_sub(total);
        from_entries(&path.display().to_string(), entries, &mut budget)
    } else {
        let bytes = std::fs::read(path)
            .map_err(|e| chart_error(&path.display().to_string(), e.to_string()).caused_by(e))?;
        read_archive(&path.display().to_string(), &bytes)
    }
}

/// Reads every file under `dir`; `total` counts the bytes of the whole chart.
fn read_dir(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(String, Vec<u8>)>,
    total: &mut u64,
) -> Result<()> {
    let shown = dir.display().to_string();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| chart_error(&shown, e.to_string()).caused_by(e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        let meta = std::fs::symlink_metadata(&entry)
            .map_err(|e| chart_error(&shown, e.to_string()).caused_by(e))?;
        if meta.file_type().is_symlink() {
            continue;
        }
        if meta.is_dir() {
            read_dir(root, &entry, out, total)?;
            continue;
        }
        *total += meta.len();
        if *total > MAX_CHART_BYTES {
            return Err(chart_error(
                &shown,
                format!("the chart is larger than {MAX_CHART_BYTES} bytes"),
            ));
        }
        let relative = entry
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        let bytes = std::fs::read(&entry)
            .map_err(|e| chart_error(&entry.display().to_string(), e.to_string()).caused_by(e))?;
        out.push((relative, bytes));
    }
    Ok(())
}

fn read_archive(shown: &str, bytes: &[u8]) -> Result<Chart> {
    let mut budget = MAX_CHART_BYTES;
    from_archive_within(shown, bytes, &mut budget)
}

/// Unpacks a chart archive whose files, with those of the archives inside it, may hold
/// at most `budget` bytes (what remains is left in it): a small archive that unpacks to
/// gigabytes, or nests such archives, is refused rather than unpacked.
fn from_archive_within(shown: &str, bytes: &[u8], budget: &mut u64) -> Result<Chart> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut entries = Vec::new();
    let entries_iter = archive
        .entries()
        .map_err(|e| chart_error(shown, format!("not a chart archive: {e}")))?;
    for entry in entries_iter {
        let entry = entry.map_err(|e| chart_error(shown, format!("reading the archive: {e}")))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry
            .path()
            .map_err(|e| chart_error(shown, e.to_string()))?
            .to_string_lossy()
            .replace('\\', "/");
        if path.split('/').any(|part| part == "..") || path.starts_with('/') {
            return Err(chart_error(
                shown,
                format!("archive entry {path} leaves the chart"),
            ));
        }
        *budget = budget.checked_sub(entry.size()).ok_or_else(|| {
            chart_error(
                shown,
                format!("the chart unpacks to more than {MAX_CHART_BYTES} bytes"),
            )
        })?;
        let Some((_, inside)) = path.split_once('/') else {
            continue;
        };
        let mut data = Vec::new();
        entry
            .take(MAX_CHART_BYTES)
            .read_to_end(&mut data)
            .map_err(|e| chart_error(shown, e.to_string()))?;
        entries.push((inside.to_string(), data));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    from_entries(shown, entries, budget)
}

fn text(shown: &str, path: &str, bytes: &[u8]) -> Result<String> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| chart_error(&format!("{shown}/{path}"), "the file is not UTF-8"))
}

/// The shape of a dependency entry in Chart.yaml or requirements.yaml.
const DEPENDENCY: Shape = Shape::Struct(&[
    ("name", Shape::Str),
    ("version", Shape::Str),
    ("repository", Shape::Str),
    ("condition", Shape::Str),
    ("tags", Shape::Each(&Shape::Str)),
    ("alias", Shape::Str),
]);

/// The shape of Chart.yaml: Helm's `chart.Metadata`, whose string fields take scalars as
/// strings.
const METADATA: Shape = Shape::Struct(&[
    ("name", Shape::Str),
    ("home", Shape::Str),
    ("sources", Shape::Each(&Shape::Str)),
    ("version", Shape::Str),
    ("description", Shape::Str),
    ("keywords", Shape::Each(&Shape::Str)),
    (
        "maintainers",
        Shape::Each(&Shape::Struct(&[
            ("name", Shape::Str),
            ("email", Shape::Str),
            ("url", Shape::Str),
        ])),
    ),
    ("icon", Shape::Str),
    ("apiVersion", Shape::Str),
    ("condition", Shape::Str),
    ("tags", Shape::Str),
    ("appVersion", Shape::Str),
    ("annotations", Shape::Each(&Shape::Str)),
    ("kubeVersion", Shape::Str),
    ("dependencies", Shape::Each(&DEPENDENCY)),
    ("type", Shape::Str),
]);

/// A YAML file of the chart as Helm reads it (`sigs.k8s.io/yaml` into `shape`); an empty
/// file is an empty map.
fn yaml(shown: &str, path: &str, bytes: &[u8], shape: Shape) -> Result<Json> {
    let text = text(shown, path, bytes)?;
    let value = parse_documents_as(&text, shape)
        .map_err(|e| {
            chart_error(&format!("{shown}/{path}"), e.to_string())
                .at_line(e.line)
                .caused_by(e)
        })?
        .into_iter()
        .next()
        .unwrap_or(Json::Null);
    Ok(if value.is_null() {
        Json::Object(Default::default())
    } else {
        value
    })
}

/// Builds a chart from its files (paths relative to the chart directory).
fn from_entries(shown: &str, entries: Vec<(String, Vec<u8>)>, budget: &mut u64) -> Result<Chart> {
    let ignore = entries
        .iter()
        .find(|(p, _)| p == ".helmignore")
        .and_then(|(_, b)| helmignore(&String::from_utf8_lossy(b)));
    let ignored = |path: &str| {
        ignore
            .as_ref()
            .is_some_and(|matcher| matcher.matched_path_or_any_parents(path, false).is_ignore())
    };
    let mut metadata = None;
    let mut values = Json::Object(Default::default());
    let mut schema = None;
    let mut requirements = Vec::new();
    let mut templates = Vec::new();
    let mut crds = Vec::new();
    let mut files = Vec::new();
    let mut subchart_entries: std::collections::BTreeMap<String, Vec<(String, Vec<u8>)>> =
        Default::default();
    let mut subcharts = Vec::new();
    for (path, bytes) in entries {
        if ignored(&path) {
            continue;
        }
        match path.as_str() {
            "Chart.yaml" => metadata = Some(yaml(shown, &path, &bytes, METADATA)?),
            "values.yaml" => values = yaml(shown, &path, &bytes, Shape::Any)?,
            "values.schema.json" => {
                let text = text(shown, &path, &bytes)?;
                schema = Some(serde_json::from_str(&text).map_err(|e| {
                    let line = e.line();
                    chart_error(&format!("{shown}/{path}"), e.to_string())
                        .at_line(line)
                        .caused_by(e)
                })?);
            }
            "requirements.yaml" => {
                let parsed = yaml(
                    shown,
                    &path,
                    &bytes,
                    Shape::Struct(&[("dependencies", Shape::Each(&DEPENDENCY))]),
                )?;
                let parsed: Requirements = serde_json::from_value(parsed).map_err(|e| {
                    chart_error(
                        &format!("{shown}/{path}"),
                        format!("field `dependencies`: {e}"),
                    )
                })?;
                requirements = parsed.dependencies;
            }
            p if p.starts_with("templates/") => {
                templates.push((path.clone(), text(shown, &path, &bytes)?))
            }
            p if p.starts_with("crds/") => {
                // Helm keeps the chart's CRDs among its files too (`.Files.Get "crds/x"`).
                crds.push((path.clone(), text(shown, &path, &bytes)?));
                files.push((path, bytes));
            }
            p if p.starts_with("charts/") => {
                let inner = &p["charts/".len()..];
                match inner.split_once('/') {
                    Some((dir, rest)) => subchart_entries
                        .entry(dir.to_string())
                        .or_default()
                        .push((rest.to_string(), bytes)),
                    None if inner.ends_with(".tgz") || inner.ends_with(".tar.gz") => {
                        let shown = format!("{shown}/{path}");
                        subcharts.push(from_archive_within(&shown, &bytes, budget)?);
                    }
                    None => files.push((path, bytes)),
                }
            }
            _ => files.push((path, bytes)),
        }
    }
    for (dir, entries) in subchart_entries {
        if entries.iter().any(|(p, _)| p == "Chart.yaml") {
            let shown = format!("{shown}/charts/{dir}");
            subcharts.push(from_entries(&shown, entries, budget)?);
        }
    }
    let metadata = metadata.ok_or_else(|| chart_error(shown, "Chart.yaml file is missing"))?;
    let name = metadata
        .get("name")
        .and_then(Json::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            chart_error(
                &format!("{shown}/Chart.yaml"),
                "field `name`: validation: chart.metadata.name is required",
            )
        })?
        .to_string();
    let mut dependencies: Vec<Dependency> = match metadata.get("dependencies") {
        Some(list) => serde_json::from_value(list.clone()).map_err(|e| {
            chart_error(
                &format!("{shown}/Chart.yaml"),
                format!("field `dependencies`: {e}"),
            )
        })?,
        None => Vec::new(),
    };
    dependencies.extend(requirements);
    Ok(Chart {
        metadata,
        name,
        dependencies,
        values,
        schema,
        templates,
        crds,
        files,
        subcharts,
    })
}

/// The matcher of `.helmignore` rules (globs per line, `#` comments, `dir/`).
fn helmignore(rules: &str) -> Option<ignore::gitignore::Gitignore> {
    let mut builder = ignore::gitignore::GitignoreBuilder::new("");
    for line in rules.lines() {
        // A malformed rule is skipped, as Helm skips it.
        let _ = builder.add_line(None, line);
    }
    builder.build().ok()
}
