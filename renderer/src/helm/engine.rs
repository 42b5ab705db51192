//! Rendering a chart as `helm template` does: every template of the chart and its enabled
//! subcharts executed with its own values, the output split into manifests and hooks,
//! sorted in install order, and printed with `# Source:` comments.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde_json::Value as Json;

use super::chart::Chart;
use super::objects::{ApiVersions, Files};
use super::template::{Exec, ExecError, Func, ParseError, Templates, Value};
use super::{sprig, template, values};
use crate::error::{RenderError, Result};

/// What the release and the cluster look like to the templates.
#[derive(Debug, Clone)]
pub struct Options {
    /// `.Release.Name`.
    pub release_name: String,
    /// `.Release.Namespace`.
    pub namespace: String,
    /// `.Capabilities.KubeVersion.Version`, e.g. `v1.32.0`.
    pub kube_version: String,
    /// `.Capabilities.APIVersions`.
    pub api_versions: Vec<String>,
    /// Print the chart's `crds/` too (`helm template --include-crds`).
    pub include_crds: bool,
    /// Do not check values against `values.schema.json`.
    pub skip_schema_validation: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            release_name: "release-name".into(),
            namespace: "default".into(),
            kube_version: "v1.32.0".into(),
            api_versions: super::objects::default_api_versions(),
            include_crds: false,
            skip_schema_validation: false,
        }
    }
}

/// One rendered document and the template it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// `chart/templates/x.yaml`.
    pub source: String,
    /// The document's text as rendered.
    pub content: String,
    /// Its kind, for ordering.
    pub kind: String,
}

/// A rendered chart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    /// CRDs from `crds/`, when asked for.
    pub crds: Vec<Manifest>,
    /// Resources, in install order.
    pub manifests: Vec<Manifest>,
    /// Hook resources (`helm.sh/hook`), after the others.
    pub hooks: Vec<Manifest>,
}

impl Rendered {
    /// The text `helm template` prints: CRDs, then the release manifest (trimmed, as Helm
    /// stores it), then the hooks.
    pub fn to_template_output(&self) -> String {
        let entry = |m: &Manifest| format!("---\n# Source: {}\n{}\n", m.source, m.content);
        let mut out: String = self.crds.iter().map(entry).collect();
        let manifest: String = self.manifests.iter().map(entry).collect();
        let manifest = manifest.trim();
        if !manifest.is_empty() {
            out.push_str(manifest);
            out.push('\n');
        }
        out.extend(self.hooks.iter().map(entry));
        out
    }
}

/// Every function a chart template can call.
pub fn functions() -> HashMap<&'static str, Func> {
    let mut funcs = template::builtins::functions();
    funcs.extend(sprig::functions());
    funcs.insert("include", |exec, args| match args.as_slice() {
        [Value::Str(name), data] => {
            if !exec.has_template(name) {
                return Err(format!(
                    "template: no template {name:?} associated with template"
                ));
            }
            exec.execute(name, data)
                .map(Value::from)
                .map_err(|e| e.to_string())
        }
        _ => Err("include takes a template name and its data".into()),
    });
    funcs.insert("tpl", |exec, args| match args.as_slice() {
        [text, data] => {
            let source = sprig::strval(text);
            let name = format!("{}:tpl", exec.current_template());
            exec.added.add(&name, &source).map_err(|e| e.to_string())?;
            exec.execute(&name, data)
                .map(Value::from)
                .map_err(|e| e.to_string())
        }
        _ => Err("tpl takes a template string and its data".into()),
    });
    funcs.insert("lookup", |_, args| {
        if args.len() != 4 {
            return Err(format!(
                "wrong number of args for lookup: want 4 got {}",
                args.len()
            ));
        }
        // Offline, like `helm template`: nothing exists.
        Ok(Value::empty_map())
    });
    funcs
}

/// Helm's names for Chart.yaml fields in `.Chart`.
fn chart_object(metadata: &Json) -> Value {
    fn go_name(key: &str) -> String {
        match key {
            "apiVersion" => "APIVersion".into(),
            "url" => "URL".into(),
            other => {
                let mut chars = other.chars();
                chars
                    .next()
                    .map(|c| c.to_uppercase().chain(chars).collect())
                    .unwrap_or_default()
            }
        }
    }
    fn convert(value: &Json) -> Value {
        match value {
            Json::Object(map) => Value::from(
                map.iter()
                    .map(|(k, v)| (go_name(k), convert(v)))
                    .collect::<BTreeMap<_, _>>(),
            ),
            Json::Array(items) => Value::from(items.iter().map(convert).collect::<Vec<_>>()),
            other => Value::from_json(other),
        }
    }
    let chart = convert(metadata);
    if let Value::Map(map) = &chart {
        // Annotations keep their keys as written.
        if let Some(annotations) = metadata.get("annotations") {
            map.borrow_mut()
                .insert("Annotations".into(), Value::from_json(annotations));
        }
    }
    chart
}

struct Scope<'c> {
    chart: &'c Chart,
    /// The name it is installed under (a dependency's alias, or its own name).
    name: String,
    /// `chart` or `parent/charts/sub`.
    prefix: String,
    values: Json,
}

/// The charts to render: the chart and each enabled dependency (a chart used under two
/// aliases renders twice), each with its values.
fn scopes<'c>(
    chart: &'c Chart,
    name: String,
    prefix: String,
    values: Json,
    out: &mut Vec<Scope<'c>>,
) {
    for dependency in &chart.dependencies {
        let Some(sub) = chart.subcharts.iter().find(|s| s.name == dependency.name) else {
            continue;
        };
        if !values::enabled(dependency, &values) {
            continue;
        }
        let alias = dependency.effective_name().to_string();
        let sub_values = values.get(&alias).cloned().unwrap_or(Json::Null);
        scopes(
            sub,
            alias.clone(),
            format!("{prefix}/charts/{alias}"),
            sub_values,
            out,
        );
    }
    for sub in &chart.subcharts {
        if chart.dependencies.iter().any(|d| d.name == sub.name) {
            continue;
        }
        let sub_values = values.get(&sub.name).cloned().unwrap_or(Json::Null);
        scopes(
            sub,
            sub.name.clone(),
            format!("{prefix}/charts/{}", sub.name),
            sub_values,
            out,
        );
    }
    out.push(Scope {
        chart,
        name,
        prefix,
        values,
    });
}

/// Helm's wording of a syntax error: `parse error at (FILE:LINE): MESSAGE`.
fn parse_error(error: ParseError) -> RenderError {
    let message = format!(
        "parse error at ({}:{}): {}",
        error.name, error.line, error.message
    );
    RenderError::in_file(error.name.clone(), message).with_line(Some(error.line))
}

fn exec_error(error: Box<ExecError>) -> RenderError {
    let file = error.file.clone();
    let line = error.pos.line;
    let message = match &error.user_message {
        // Helm shows `required` and `fail` messages verbatim, with the place.
        Some(user) => format!(
            "execution error at ({}:{}:{}): {user}",
            error.file, error.pos.line, error.pos.col
        ),
        None => error.to_string(),
    };
    RenderError::in_file(file, message).with_line(Some(line))
}

/// The kind of a document and whether it is a hook. Read from the text: `kind:` at the
/// start of a line is the top-level kind (block scalars are indented), and a hook carries
/// a `helm.sh/hook` annotation; parsing the whole document for two fields costs more than
/// rendering it.
fn head(document: &str) -> (String, bool) {
    let mut kind = String::new();
    let mut hook = false;
    for line in document.lines() {
        if let Some(rest) = line.strip_prefix("kind:") {
            if kind.is_empty() {
                kind = rest.trim().trim_matches(['"', '\'']).to_string();
            }
        } else if line.trim_start().starts_with("helm.sh/hook:")
            || line.trim_start().starts_with("\"helm.sh/hook\":")
        {
            hook = true;
        }
    }
    (kind, hook)
}

/// Splits rendered text into documents as Helm 4 does: at lines that hold only `---`;
/// each document loses its leading whitespace and keeps the rest; blank ones are dropped.
fn split_documents(text: &str) -> Vec<String> {
    let mut documents = Vec::new();
    let mut current = String::new();
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            documents.push(std::mem::take(&mut current));
        } else {
            current.push_str(line);
        }
    }
    documents.push(current);
    documents
        .into_iter()
        .map(|d| d.trim_start().to_string())
        .filter(|d| !d.is_empty())
        .collect()
}

/// Renders a chart with user values (already merged from files, `values` and `--set`).
pub fn render(chart: &Chart, user_values: &Json, options: &Options) -> Result<Rendered> {
    let values = values::compute(chart, user_values);
    let mut all = Vec::new();
    scopes(
        chart,
        chart.name.clone(),
        chart.name.clone(),
        values,
        &mut all,
    );

    if !options.skip_schema_validation {
        let mut report = String::new();
        for scope in all.iter().rev() {
            if let Some(schema) = &scope.chart.schema {
                let found = super::schema::violations(&scope.values, schema);
                if !found.is_empty() {
                    report.push_str(&format!("{}:\n{}\n", scope.name, found.join("\n")));
                }
            }
        }
        if !report.is_empty() {
            return Err(RenderError::in_file(
                format!("{}/values.schema.json", chart.name),
                format!("values don't meet the specifications of the schema(s) in the following chart(s):\n{report}"),
            ));
        }
    }
    let mut templates = Templates::default();
    for scope in &all {
        for (path, source) in &scope.chart.templates {
            templates
                .add(&format!("{}/{path}", scope.prefix), source)
                .map_err(parse_error)?;
        }
    }
    let funcs = functions();
    let api_versions = Value::Object(Rc::new(ApiVersions {
        versions: options.api_versions.clone(),
    }));
    let version = options.kube_version.trim_start_matches('v').to_string();
    let mut parts = version.split('.');
    let (major, minor) = (
        parts.next().unwrap_or("1").to_string(),
        parts.next().unwrap_or("0").to_string(),
    );
    let kube_version = Value::from(BTreeMap::from([
        ("Version".to_string(), Value::from(format!("v{version}"))),
        ("GitVersion".to_string(), Value::from(format!("v{version}"))),
        ("Major".to_string(), Value::from(major)),
        ("Minor".to_string(), Value::from(minor)),
    ]));
    let capabilities = Value::from(BTreeMap::from([
        ("KubeVersion".to_string(), kube_version),
        ("APIVersions".to_string(), api_versions),
        (
            "HelmVersion".to_string(),
            Value::from(BTreeMap::from([(
                "Version".to_string(),
                Value::from("v3.16.0"),
            )])),
        ),
    ]));
    let release = Value::from(BTreeMap::from([
        (
            "Name".to_string(),
            Value::from(options.release_name.as_str()),
        ),
        (
            "Namespace".to_string(),
            Value::from(options.namespace.as_str()),
        ),
        ("IsInstall".to_string(), Value::Bool(true)),
        ("IsUpgrade".to_string(), Value::Bool(false)),
        ("Revision".to_string(), Value::Int(1)),
        ("Service".to_string(), Value::from("Helm")),
    ]));

    let mut rendered = Rendered::default();
    let mut pieces: Vec<(String, String)> = Vec::new();
    for scope in &all {
        let files = Value::Object(Rc::new(Files {
            files: Rc::new(scope.chart.files.clone()),
        }));
        let scope_values = Value::from_json_floats(&scope.values);
        let chart_value = chart_object(&scope.chart.metadata);
        if let Value::Map(map) = &chart_value {
            map.borrow_mut()
                .insert("Name".into(), Value::from(scope.name.as_str()));
        }
        let mut paths: Vec<&String> = scope.chart.templates.iter().map(|(p, _)| p).collect();
        paths.sort();
        for path in paths {
            let base = path.rsplit('/').next().unwrap_or(path);
            if base.starts_with('_') || base == "NOTES.txt" {
                continue;
            }
            let name = format!("{}/{path}", scope.prefix);
            let data = Value::from(BTreeMap::from([
                ("Values".to_string(), scope_values.clone()),
                ("Release".to_string(), release.clone()),
                ("Chart".to_string(), chart_value.clone()),
                ("Capabilities".to_string(), capabilities.clone()),
                ("Files".to_string(), files.clone()),
                (
                    "Template".to_string(),
                    Value::from(BTreeMap::from([
                        ("Name".to_string(), Value::from(name.as_str())),
                        (
                            "BasePath".to_string(),
                            Value::from(format!("{}/templates", scope.prefix)),
                        ),
                    ])),
                ),
            ]));
            let mut exec = Exec::new(&templates, &funcs);
            let text = exec.execute(&name, &data).map_err(exec_error)?;
            pieces.push((name, text.replace("<no value>", "")));
        }
        if options.include_crds {
            for (path, content) in &scope.chart.crds {
                for document in split_documents(content) {
                    rendered.crds.push(Manifest {
                        source: format!("{}/{path}", scope.prefix),
                        kind: head(&document).0,
                        content: document,
                    });
                }
            }
        }
    }
    pieces.sort_by(|a, b| a.0.cmp(&b.0));
    for (source, text) in pieces {
        for document in split_documents(&text) {
            let (kind, hook) = head(&document);
            let manifest = Manifest {
                source: source.clone(),
                kind,
                content: document,
            };
            if hook {
                rendered.hooks.push(manifest);
            } else {
                rendered.manifests.push(manifest);
            }
        }
    }
    rendered
        .manifests
        .sort_by_key(|m| crate::bundle::content::install_rank(&m.kind));
    Ok(rendered)
}
