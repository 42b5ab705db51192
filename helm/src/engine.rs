//! Rendering a chart as `helm template` does: every template of the chart and its enabled
//! subcharts executed with its own values, the output split into manifests and hooks,
//! sorted in install order, and printed with `# Source:` comments.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde_json::Value as Json;

use super::chart::Chart;
use super::manifests::{self, Hook, Manifest};
use super::objects::{ApiVersions, HelmVersion, KubeVersion};
use super::template::exec::Cause;
use super::template::parse::Parsed;
use super::template::{Exec, ExecError, Func, ParseError, Templates, Value, World};
use super::{scope, sprig, template, values};
use crate::error::{Error, ErrorKind, Result};

/// What the release and the cluster look like to the templates.
#[derive(Debug, Clone)]
pub struct Options {
    /// `.Release.Name`.
    pub release_name: String,
    /// `.Release.Namespace`.
    pub namespace: String,
    /// `.Capabilities.KubeVersion.Version`, e.g. `v1.37.0` (Helm 4.3.1's default).
    pub kube_version: String,
    /// `.Capabilities.APIVersions`.
    pub api_versions: Vec<String>,
    /// Print the chart's `crds/` too (`helm template --include-crds`).
    pub include_crds: bool,
    /// Do not check values against `values.schema.json`.
    pub skip_schema_validation: bool,
    /// Draw random values (passwords, keys, certificates) from this seed rather than the
    /// operating system, so that a render repeats itself (tests).
    pub seed: Option<u64>,
    /// The time `now` reads, rather than the clock's.
    pub now: Option<jiff::Timestamp>,
    /// The cluster `lookup` asks; none finds nothing, as `helm template`.
    pub lookup: Option<ClusterLookup>,
    /// `getHostByName` resolves names (in `lookup`'s cluster); off, as in Helm, it gives
    /// the empty string.
    pub enable_dns: bool,
    /// How long the templates may run before the render stops with an error; none by
    /// default, as in Helm. A service rendering charts it does not trust sets one.
    pub time_limit: Option<std::time::Duration>,
    /// Stops the render with an error once set (from another thread), e.g. when what it
    /// renders for is gone.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// The cluster a render's `lookup` asks.
#[derive(Clone)]
pub struct ClusterLookup(pub Rc<dyn template::Lookup>);

impl std::fmt::Debug for ClusterLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterLookup")
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            release_name: "release-name".into(),
            namespace: "default".into(),
            kube_version: "v1.37.0".into(),
            api_versions: super::objects::default_api_versions(),
            include_crds: false,
            skip_schema_validation: false,
            seed: None,
            now: None,
            lookup: None,
            enable_dns: false,
            time_limit: None,
            cancel: None,
        }
    }
}

/// A file of a chart's `crds/` directory.
#[derive(Debug, Clone, PartialEq)]
pub struct CrdFile {
    /// `chart/crds/x.yaml`.
    pub path: String,
    /// Its text as written.
    pub text: String,
}

/// A rendered chart: Helm's release before install.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    /// CRD files of the chart and its dependencies, when asked for.
    pub crds: Vec<CrdFile>,
    /// Resources, in install order.
    pub manifests: Vec<Manifest>,
    /// Hook resources (`helm.sh/hook`), in install order.
    pub hooks: Vec<Hook>,
    /// The chart's `templates/NOTES.txt`, rendered (subcharts' notes are not, as Helm's
    /// default).
    pub notes: String,
}

impl Rendered {
    /// The text `helm template` prints: the release manifest (CRD files whole, then each
    /// resource), trimmed as Helm stores it, then the hooks (test hooks too, unless
    /// `skip_tests`).
    pub fn to_template_output(&self, skip_tests: bool) -> String {
        let crds = self.crds.iter().map(|c| (c.path.as_str(), c.text.as_str()));
        let manifests = (self.manifests.iter()).map(|m| (m.source.as_str(), m.content.as_str()));
        let hooks = (self.hooks.iter())
            .filter(|h| !(skip_tests && h.events.iter().any(|e| e.starts_with("test"))))
            .map(|h| (h.manifest.source.as_str(), h.manifest.content.as_str()));
        let all = crds.clone().chain(manifests.clone()).chain(hooks.clone());
        let capacity: usize = all
            .map(|(s, t)| ENTRY_HEAD.len() + s.len() + t.len() + 2)
            .sum();
        let mut out = String::with_capacity(capacity + 1);
        crds.chain(manifests).for_each(|e| push_entry(&mut out, e));
        // The release manifest is trimmed as Helm stores it (it starts with `---`).
        let kept = out.trim_end().len();
        out.truncate(kept);
        out.push('\n');
        hooks.for_each(|e| push_entry(&mut out, e));
        out
    }
}

/// Above this many bytes of template sources, they are parsed on every core.
const PARALLEL_PARSE_BYTES: usize = 64 * 1024;

/// Each template source (`(name, source, _)`) parsed as `templates` parses, in order; on
/// every core when there is much to parse.
fn parse_all(
    templates: &Templates,
    sources: &[(String, &String, bool)],
    funcs: &HashMap<&'static str, Func>,
) -> Vec<std::result::Result<Parsed, ParseError>> {
    let parse = |(name, source, _): &(String, &String, bool)| templates.parse(name, source, funcs);
    crate::parallel::map_in_order(
        sources,
        |(_, source, _)| source.len(),
        PARALLEL_PARSE_BYTES,
        parse,
        parse,
    )
}

/// What starts each file's text in `helm template`'s output, before its path.
const ENTRY_HEAD: &str = "---\n# Source: ";

/// Appends one file's text to `helm template`'s output.
fn push_entry(out: &mut String, (source, text): (&str, &str)) {
    for part in [ENTRY_HEAD, source, "\n", text, "\n"] {
        out.push_str(part);
    }
}

/// The text without the `<no value>` Go prints for a missing value, as Helm removes it;
/// the text itself when it has none (most do), not a copy.
fn without_no_value(text: String) -> String {
    const NO_VALUE: &str = "<no value>";
    match memchr::memmem::find(text.as_bytes(), NO_VALUE.as_bytes()) {
        Some(_) => text.replace(NO_VALUE, ""),
        None => text,
    }
}

/// The name `tpl` gives the text it executes, as Helm's root template is named.
const TPL_TEMPLATE: &str = "gotpl";

/// What Helm adds to sprig and Go's builtins, left out of [`sprig_functions`].
const HELM_ADDITIONS: [&str; 13] = [
    "toYaml",
    "mustToYaml",
    "toYamlPretty",
    "fromYaml",
    "fromYamlArray",
    "toToml",
    "mustToToml",
    "fromToml",
    "fromJsonArray",
    "required",
    "include",
    "tpl",
    "lookup",
];

/// The functions of a template that is not a chart's, as Fleet templates Helm values
/// (`${ }`): Go's builtins and sprig's, without what Helm adds (`toYaml`, `include`,
/// `lookup`, `required`…) or `getHostByName`, and with sprig's own `fromJson` (any JSON
/// value; nothing for text that is not JSON).
pub fn sprig_functions() -> HashMap<&'static str, Func> {
    let mut funcs = template::builtins::functions();
    funcs.extend(sprig::functions());
    for name in HELM_ADDITIONS.iter().chain(&["getHostByName"]) {
        funcs.remove(name);
    }
    funcs.insert("fromJson", |exec, args| {
        let parse = exec.functions().get("mustFromJson").copied();
        Ok(parse
            .and_then(|parse| parse(exec, args).ok())
            .unwrap_or(Value::Nil))
    });
    funcs
}

/// Every function a chart template can call.
pub fn functions() -> HashMap<&'static str, Func> {
    let mut funcs = template::builtins::functions();
    funcs.extend(sprig::functions());
    funcs.insert("include", |exec, args| match args.as_slice() {
        [Value::Str(name), data] => {
            if !exec.has_template(name) {
                exec.failure = Some(Cause::NoTemplate(name.to_string()));
                return Err(format!("no template {name:?}"));
            }
            exec.execute(name, data).map(Value::from).map_err(|e| {
                let message = e.to_string();
                exec.failure = Some(Cause::Include(e));
                message
            })
        }
        [other, _] => Err(format!(
            "wrong type for value; expected string; got {}",
            other.type_name()
        )),
        _ => Err(format!(
            "wrong number of args for include: want 2 got {}",
            args.len()
        )),
    });
    funcs.insert("tpl", |exec, args| match args.as_slice() {
        [Value::Str(text), data] => {
            // Helm parses the text as the root template of a copy of the chart's templates.
            let funcs = exec.functions();
            if let Err(e) = exec.added.add(TPL_TEMPLATE, text, funcs) {
                return Err(format!("cannot parse template {text:?}: {e}"));
            }
            match exec.execute(TPL_TEMPLATE, data) {
                Ok(output) => Ok(Value::from(without_no_value(output))),
                Err(e) => {
                    exec.failure = Some(Cause::Tpl {
                        user: e.user_message().map(String::from),
                    });
                    Err(format!(
                        "error during tpl function execution for {text:?}: {e}"
                    ))
                }
            }
        }
        [other, _] => Err(format!(
            "wrong type for value; expected string; got {}",
            other.type_name()
        )),
        _ => Err(format!(
            "wrong number of args for tpl: want 2 got {}",
            args.len()
        )),
    });
    funcs.insert("lookup", |exec, args| {
        let [api_version, kind, namespace, name] = args.as_slice() else {
            return Err(format!(
                "wrong number of args for lookup: want 4 got {}",
                args.len()
            ));
        };
        let text = |v: &Value| {
            v.as_str().map(str::to_string).ok_or_else(|| {
                format!(
                    "wrong type for value; expected string; got {}",
                    v.type_name()
                )
            })
        };
        // Offline (like `helm template`) nothing exists; in a member cluster, it is asked.
        let found = exec.world.lookup(
            &text(api_version)?,
            &text(kind)?,
            &text(namespace)?,
            &text(name)?,
        )?;
        Ok(Value::from_json(&found))
    });
    funcs
}

/// Helm's `CRDObjects`: the chart's own CRD files, then each dependency's, depth first.
fn crd_files(node: &values::Resolved<'_>, prefix: &str, out: &mut Vec<CrdFile>) {
    for (path, text) in &node.chart.crds {
        out.push(CrdFile {
            path: format!("{prefix}/{path}"),
            text: text.clone(),
        });
    }
    for dependency in &node.dependencies {
        crd_files(
            dependency,
            &format!("{prefix}/charts/{}", dependency.name),
            out,
        );
    }
}

/// Helm's `ValidateAgainstSchema`: each chart's schema against its section of the values,
/// as `name:` and the violations, the chart before its dependencies.
fn schema_report(node: &values::Resolved<'_>, values: &Json) -> String {
    let mut report = String::new();
    if let Some(schema) = &node.chart.schema {
        let found = super::schema::violations(values, schema);
        if !found.is_empty() {
            report.push_str(&format!("{}:\n{}\n", node.name, found.join("\n")));
        }
    }
    for dependency in &node.dependencies {
        let section = values.get(&dependency.name).cloned().unwrap_or(Json::Null);
        report.push_str(&schema_report(dependency, &section));
    }
    report
}

/// Helm's wording of a syntax error: `parse error at (FILE:LINE): MESSAGE`, the message
/// being the last `: `-separated part of Go's.
fn parse_error(error: ParseError) -> Error {
    let message = error
        .message
        .rsplit(": ")
        .next()
        .unwrap_or(&error.message)
        .to_string();
    Error::new(
        ErrorKind::Parse,
        error.name.clone(),
        format!("parse error at ({}:{}): {message}", error.name, error.line),
    )
    .at_line(error.line)
    .caused_by(error)
}

fn exec_error(error: ExecError) -> Error {
    Error::new(ErrorKind::Execute, error.file.clone(), error.helm_message())
        .at_line(error.pos.line)
        .caused_by(error)
}

/// Renders a chart with user values (already merged from files, `values` and `--set`).
pub fn render(chart: &Chart, user_values: &Json, options: &Options) -> Result<Rendered> {
    prepare(chart, user_values, options)?.render()
}

/// A chart whose values are computed and checked, ready to render: what Helm has before it
/// makes a release. Failing here is failing on the values; failing in
/// [`Prepared::render`] is failing on the templates (Helm then suggests `--debug`).
pub struct Prepared<'c> {
    chart: &'c Chart,
    root: values::Resolved<'c>,
    values: Json,
    warnings: Vec<String>,
    shared: scope::Shared,
    include_crds: bool,
    /// The randomness and clock every template of the render shares.
    world: Rc<World>,
}

/// Helm's `CheckDependencies`: every dependency Chart.yaml names is in `charts/`.
fn check_dependencies(chart: &Chart) -> Result<()> {
    let missing: Vec<&str> = chart
        .dependencies
        .iter()
        .filter(|required| !chart.subcharts.iter().any(|sub| sub.name == required.name))
        .map(|required| required.name.as_str())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::MissingDependencies,
        format!("{}/Chart.yaml", chart.name),
        format!(
            "an error occurred while checking for chart dependencies. You may need to run \
             'helm dependency build' to fetch missing dependencies: found in Chart.yaml, but \
             missing in charts/ directory: {}",
            missing.join(", ")
        ),
    ))
}

/// Refuses a chart whose `kubeVersion` range excludes `kube_version`, as Helm 4 does for
/// the chart it installs (its subcharts' ranges are not checked): a provider's suffix
/// (`v1.27.0-gke.1`) is left out of the comparison, and a range that does not parse
/// excludes every version.
fn check_kube_version(chart: &Chart, kube_version: &str) -> Result<()> {
    let Some(range) = chart.metadata.get("kubeVersion").and_then(Json::as_str) else {
        return Ok(());
    };
    if range.is_empty() {
        return Ok(());
    }
    let compatible = crate::sprig::semver::Version::parse(kube_version)
        .and_then(|version| crate::sprig::semver::satisfies(&version.release(), range))
        .unwrap_or(false);
    if compatible {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::KubeVersion,
        format!("{}/Chart.yaml", chart.name),
        format!(
            "chart requires kubeVersion: {range} which is incompatible with Kubernetes {kube_version}"
        ),
    ))
}

/// Computes `chart`'s values from `user_values` and checks them against its schemas.
pub fn prepare<'c>(
    chart: &'c Chart,
    user_values: &Json,
    options: &Options,
) -> Result<Prepared<'c>> {
    check_dependencies(chart)?;
    let values::Coalesced {
        root,
        values,
        warnings,
    } = values::resolve(chart, user_values).map_err(|e| {
        Error::new(ErrorKind::Values, chart.name.clone(), e.to_string()).caused_by(e)
    })?;
    if !options.skip_schema_validation {
        let report = schema_report(&root, &values);
        if !report.is_empty() {
            return Err(Error::new(
                ErrorKind::Schema,
                format!("{}/values.schema.json", chart.name),
                format!("values don't meet the specifications of the schema(s) in the following chart(s):\n{report}"),
            ));
        }
    }
    let kube_version = KubeVersion::parse(&options.kube_version)
        .map_err(|e| Error::new(ErrorKind::Options, chart.name.clone(), e))?;
    check_kube_version(chart, &kube_version.version)?;
    let shared = scope::Shared {
        release: Value::from(BTreeMap::from([
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
        ])),
        capabilities: Value::from(BTreeMap::from([
            (
                "KubeVersion".to_string(),
                Value::Object(Rc::new(kube_version)),
            ),
            (
                "APIVersions".to_string(),
                Value::Object(Rc::new(ApiVersions {
                    versions: options.api_versions.clone(),
                })),
            ),
            (
                "HelmVersion".to_string(),
                Value::Object(Rc::new(HelmVersion)),
            ),
        ])),
    };
    Ok(Prepared {
        chart,
        root,
        values,
        warnings,
        shared,
        include_crds: options.include_crds,
        world: Rc::new(
            match options.seed {
                Some(seed) => World::seeded(seed, options.now),
                None => World::from_entropy().stopped_at(options.now),
            }
            .looking_in(options.lookup.as_ref().map(|l| l.0.clone()))
            .resolving(options.enable_dns)
            .bounded(options.time_limit, options.cancel.clone()),
        ),
    })
}

impl Prepared<'_> {
    /// What Helm warns of while it computes the values (`warning: skipped value for
    /// web.image: Not a table.`), in its words and order; Helm's command logs each on
    /// standard error.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Renders every template of the chart and its enabled dependencies.
    pub fn render(&self) -> Result<Rendered> {
        let (chart, root) = (self.chart, &self.root);
        let mut all = Vec::new();
        scope::build(
            root,
            Value::from_json_floats(&self.values),
            root.name.clone(),
            true,
            &self.shared,
            &mut all,
        );

        // Helm parses the templates deepest path first (then in reverse order of name), so that
        // a parent's `define` replaces a subchart's of the same name.
        let mut sources: Vec<(String, &String, bool)> = Vec::new();
        for scope in &all {
            let library = scope
                .chart
                .metadata
                .get("type")
                .and_then(Json::as_str)
                .is_some_and(|t| t.eq_ignore_ascii_case("library"));
            for (path, source) in &scope.chart.templates {
                let base = path.rsplit('/').next().unwrap_or(path);
                if library && !base.starts_with('_') {
                    continue;
                }
                sources.push((format!("{}/{path}", scope.prefix), source, library));
            }
        }
        sources.sort_by(|a, b| {
            let depth = |p: &str| p.matches('/').count();
            (depth(&b.0), &b.0).cmp(&(depth(&a.0), &a.0))
        });
        let funcs = functions();
        let mut templates = Templates::default();
        let parsed = parse_all(&templates, &sources, &funcs);
        for ((name, ..), parsed) in sources.iter().zip(parsed) {
            templates.insert(name, parsed.map_err(parse_error)?);
        }

        // As Helm: the templates of one chart share one top-level context (`$`), so that
        // what one does to it (`set $ "Values" ...`) the next sees; they run in the order
        // Helm parsed them, deepest path first, then in reverse order of name.
        let contexts: Vec<Value> = all.iter().map(|scope| scope.data.clone()).collect();
        let mut runs: Vec<(String, usize, bool)> = Vec::new();
        for (index, scope) in all.iter().enumerate() {
            for (path, _) in &scope.chart.templates {
                let base = path.rsplit('/').next().unwrap_or(path);
                let notes = base == "NOTES.txt";
                if base.starts_with('_') || (notes && scope.prefix != root.name) {
                    continue;
                }
                let name = format!("{}/{path}", scope.prefix);
                if templates.has(&name) {
                    runs.push((name, index, notes));
                }
            }
        }
        runs.sort_by(|a, b| {
            let depth = |p: &str| p.matches('/').count();
            (depth(&b.0), &b.0).cmp(&(depth(&a.0), &a.0))
        });
        let mut rendered = Rendered::default();
        let mut pieces: Vec<(String, String)> = Vec::new();
        for (name, index, notes) in runs {
            let context = &contexts[index];
            if let Value::Map(top) = context {
                top.borrow_mut().insert(
                    "Template".to_string(),
                    Value::from(BTreeMap::from([
                        ("Name".to_string(), Value::from(name.as_str())),
                        (
                            "BasePath".to_string(),
                            Value::from(format!("{}/templates", all[index].prefix)),
                        ),
                    ])),
                );
            }
            let mut exec = Exec::new(&templates, &funcs).with_world(self.world.clone());
            let text = exec.execute(&name, context).map_err(|e| exec_error(*e))?;
            let text = without_no_value(text);
            if notes {
                rendered.notes = text;
            } else {
                pieces.push((name, text));
            }
        }
        if self.include_crds {
            crd_files(root, &root.name, &mut rendered.crds);
        }
        // Freeing a large chart's parsed templates takes a twentieth of its render: a
        // helper thread does it, off the render's path.
        std::thread::spawn(move || drop(templates));
        pieces.sort_by(|a, b| a.0.cmp(&b.0));
        let sorted = manifests::sort(&pieces)
            .map_err(|e| Error::new(ErrorKind::Manifest, chart.name.clone(), e))?;
        rendered.manifests = sorted.manifests;
        rendered.hooks = sorted.hooks;
        Ok(rendered)
    }
}
