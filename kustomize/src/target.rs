//! Building one kustomization, in kustomize's order: resources (nested kustomizations
//! first built on their own), configurations and CRD references, generators, components,
//! transformers, validators, then its vars.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::config::TransformerConfig;
use super::crds;
use super::generators::{self, GeneratorContext, GeneratorKind};
use super::helm_charts;
use super::location::Location;
use super::openapi::Schema;
use super::patches::{Allow, Patch, PatchSource};
use super::plugin_source::PluginSource;
use super::plugins::{self, Generate, Plugin};
use super::resmap::{ResMap, Resource};
use super::steps::Transform;
use super::transformers::{label_specs, Affix};
use super::types::{HelmGlobals, Kustomization, Var};
use super::{remote, vars, written, KUSTOMIZATION_FILES};
use fleet_files::yaml;
use fleet_files::RepoRoot;
use fleet_files::{Error, Result};
use fleet_helm::FetchedCharts;

/// What a kustomization and everything it includes add up to.
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    /// The resources, in order.
    pub resources: ResMap,
    /// Transformer configuration beyond kustomize's defaults (`configurations:`, `crds:`).
    pub extra_config: TransformerConfig,
    /// Vars declared here and below.
    pub vars: Vec<Var>,
}

impl Accumulator {
    /// kustomize's default configuration with this accumulation's additions.
    pub(crate) fn config(&self) -> TransformerConfig {
        let mut config = super::defaults::transformer_config();
        config.merge(self.extra_config.clone());
        config
    }

    /// Takes in a nested kustomization's result.
    fn absorb(&mut self, other: Accumulator, file: &str) -> Result<()> {
        self.resources.append(other.resources, file)?;
        self.extra_config.merge(other.extra_config);
        vars::merge(&mut self.vars, &other.vars, file)
    }
}

/// Builds kustomizations below one repository root.
pub(crate) struct Builder<'r> {
    root: &'r RepoRoot,
    restrict: bool,
    fetched: &'r FetchedCharts,
    /// Kustomization directories being built, to detect cycles.
    stack: Vec<PathBuf>,
    /// The `openapi:` schema last declared (kustomize keeps it for the rest of the build).
    schema: Option<Schema>,
    /// The `namespace:` of each kustomization and component being built, outermost
    /// first (empty where none is set).
    namespaces: Vec<String>,
    /// Where remote resources were fetched to, if anywhere.
    remote_dir: Option<&'r Path>,
    /// Documents standing as a file of the top directory (see [`super::Prepended`]).
    prepended: Option<(PathBuf, super::Prepended)>,
    /// Told each warning (see [`super::BuildOptions::on_warning`]).
    pub(crate) on_warning: Option<fn(&str)>,
}

/// The fields kustomize 5 warns are deprecated, in the order it checks them, with what to
/// use instead.
const DEPRECATED: [(&str, &str); 6] = [
    ("bases", "'resources' instead."),
    ("commonLabels", "'labels' instead."),
    ("imageTags", "'images' instead."),
    ("patchesJson6902", "'patches' instead."),
    ("patchesStrategicMerge", "'patches' instead."),
    ("vars", "'replacements' instead. [EXPERIMENTAL]"),
];

impl<'r> Builder<'r> {
    /// A builder; `restrict` keeps plain files inside their kustomization's directory.
    pub(crate) fn new(
        root: &'r RepoRoot,
        restrict: bool,
        fetched: &'r FetchedCharts,
        remote_dir: Option<&'r Path>,
    ) -> Self {
        Self {
            root,
            restrict,
            fetched,
            stack: Vec::new(),
            schema: None,
            namespaces: Vec::new(),
            remote_dir,
            prepended: None,
            on_warning: None,
        }
    }

    /// Warns of each deprecated field `text` sets (to anything but null), as kustomize
    /// warns when it reads a kustomization.
    fn warn_of_deprecated_fields(&self, text: &str, shown: &str) {
        let Some(warn) = self.on_warning else {
            return;
        };
        let Ok(Value::Object(fields)) = yaml::parse_one::<Value>(text, shown) else {
            return;
        };
        for (field, instead) in DEPRECATED {
            if fields.get(field).is_some_and(|v| !v.is_null()) {
                warn(&format!(
                    "# Warning: '{field}' is deprecated. Please use {instead} Run 'kustomize edit fix' to update your Kustomization automatically."
                ));
            }
        }
    }

    /// Makes `documents` a file of the kustomization in `dir`, read first.
    pub(crate) fn prepend(&mut self, dir: &Path, documents: super::Prepended) {
        self.prepended = Some((dir.to_path_buf(), documents));
    }

    fn location<'a>(&self, dir: &'a Path, file: &'a Path) -> Location<'a>
    where
        'r: 'a,
    {
        Location {
            root: self.root,
            dir,
            file,
            restrict: self.restrict,
        }
    }

    /// Reads the kustomization file of `dir`.
    pub(crate) fn load(&self, dir: &Path) -> Result<(Kustomization, PathBuf)> {
        let file = super::kustomization_file(dir).ok_or_else(|| {
            Error::in_file(
                self.root.display(dir),
                format!("no {} here", KUSTOMIZATION_FILES.join(", ")),
            )
        })?;
        let text = self.root.read_to_string(&file)?;
        let shown = self.root.display(&file);
        self.warn_of_deprecated_fields(&text, &shown);
        // Read once with bounds on nesting and on what aliases expand to, which the typed
        // read below does not have.
        yaml::parse_value(&text, &shown)?;
        let kustomization: Kustomization = serde_yaml_ng::from_str(&text).map_err(|e| {
            let unknown = unknown_field(&e.to_string());
            let error = yaml::yaml_error(&shown, e);
            match unknown {
                Some(field) => Error::in_field(
                    &shown,
                    &field,
                    format!("field `{field}` is not a kustomization field kustomize v5 knows"),
                )
                .with_line(error.location.line),
                None => error,
            }
        })?;
        let mut kustomization = kustomization;
        let tags = std::mem::take(&mut kustomization.image_tags);
        kustomization.images.extend(tags);
        Ok((kustomization, file))
    }

    /// Builds the kustomization in `dir` on its own; returns it and what it adds up to.
    pub(crate) fn build_dir(
        &mut self,
        dir: &Path,
    ) -> Result<(Kustomization, PathBuf, Accumulator)> {
        if let Some(start) = self.stack.iter().position(|d| d == dir) {
            let chain: Vec<String> = self.stack[start..]
                .iter()
                .map(PathBuf::as_path)
                .chain(std::iter::once(dir))
                .map(|d| self.root.display(d))
                .collect();
            return Err(Error::in_file(
                self.root.display(dir),
                format!("cycle in resources: {}", chain.join(" -> ")),
            ));
        }
        let (kustomization, file) = self.load(dir)?;
        if kustomization.kind.as_deref() == Some("Component") {
            return Err(Error::in_file(
                self.root.display(&file),
                "a Component can only be used from `components`, not `resources`",
            ));
        }
        self.stack.push(dir.to_path_buf());
        let mut accumulator = Accumulator::default();
        let result = self.accumulate(&kustomization, dir, &file, &mut accumulator);
        self.stack.pop();
        result?;
        Ok((kustomization, file, accumulator))
    }

    /// Runs one kustomization (or component) into `acc`.
    fn accumulate(
        &mut self,
        k: &Kustomization,
        dir: &Path,
        file: &Path,
        acc: &mut Accumulator,
    ) -> Result<()> {
        self.namespaces
            .push(k.namespace.clone().unwrap_or_default());
        let result = self.accumulate_fields(k, dir, file, acc);
        self.namespaces.pop();
        result
    }

    /// The release namespace of a `helmCharts` entry that names none, as kubectl
    /// kustomize v5.8.1 picks it: the namespace of the nearest kustomization (this one or
    /// one that includes it) that sets one, else `default`.
    fn inherited_namespace(&self) -> String {
        self.namespaces
            .iter()
            .rev()
            .find(|ns| !ns.is_empty())
            .cloned()
            .unwrap_or_else(|| "default".into())
    }

    fn accumulate_fields(
        &mut self,
        k: &Kustomization,
        dir: &Path,
        file: &Path,
        acc: &mut Accumulator,
    ) -> Result<()> {
        let location = self.location(dir, file);
        if let Some(path) = k.openapi.as_ref().and_then(|o| o.path.as_deref()) {
            let (text, shown) = location.read(path)?;
            let document = yaml::parse_any_documents(&text, &shown)?
                .into_iter()
                .next()
                .unwrap_or(Value::Null);
            self.schema = Some(Schema::from_document(&document));
        }
        let prepended = match &self.prepended {
            Some((top, _)) if top == dir => self.prepended.take().map(|(_, p)| p),
            _ => None,
        };
        if let Some(prepended) = prepended
            .as_ref()
            .filter(|p| !k.resources.contains(&p.file))
        {
            acc.resources.extend(
                prepended.documents.iter().cloned().map(Resource::new),
                &prepended.file,
            )?;
        }
        for (index, entry) in k.resources.iter().chain(&k.bases).enumerate() {
            let field = if index < k.resources.len() {
                "resources"
            } else {
                "bases"
            };
            match prepended.as_ref().filter(|p| &p.file == entry) {
                Some(prepended) => acc.resources.extend(
                    prepended.documents.iter().cloned().map(Resource::new),
                    &prepended.file,
                )?,
                None => self.accumulate_resource(entry, &location, field, acc)?,
            }
        }
        for path in &k.configurations {
            let (text, shown) = location.read(path)?;
            let config: TransformerConfig = yaml::parse_one(&text, &shown)?;
            acc.extra_config.merge(config);
        }
        for path in &k.crds {
            let (text, shown) = location.read(path)?;
            acc.extra_config.merge(crds::references(&text, &shown)?);
        }
        self.generate(k, &location, acc)?;
        for entry in &k.components {
            self.component(entry, &location, acc)?;
        }
        self.transform(k, &location, acc)?;
        if !k.validators.is_empty() {
            let configs = self.plugin_configs(&k.validators, &location, "validators")?;
            if let Some((_, shown)) = configs.first() {
                return Err(Error::in_file(
                    shown,
                    "validator plugins are not run by fleet-rs (kustomize has no builtin validators)",
                ));
            }
        }
        vars::declare(
            &mut acc.vars,
            &k.vars,
            &mut acc.resources,
            &location.shown(),
        )
    }

    fn accumulate_resource(
        &mut self,
        entry: &str,
        location: &Location<'_>,
        field: &str,
        acc: &mut Accumulator,
    ) -> Result<()> {
        let shown = location.shown();
        if remote::is_remote(entry) {
            let path = remote::resolve(entry, self.remote_dir, &shown, field)?;
            if path.is_dir() {
                let (_, _, nested) = self.build_dir(&path)?;
                return acc.absorb(nested, &shown);
            }
            let text = self.root.read_to_string(&path)?;
            let documents = written::documents_read_later(text, entry)?;
            return acc
                .resources
                .extend(documents.into_iter().map(Resource::read), entry);
        }
        let path = location.any_path(entry)?;
        if path.is_dir() {
            refuse_absolute_root(location, field, entry)?;
            let (_, _, nested) = self.build_dir(&path)?;
            return acc.absorb(nested, &shown);
        }
        let (text, shown_path) = location.read(entry)?;
        let documents = written::documents_read_later(text, &shown_path)?;
        acc.resources
            .extend(documents.into_iter().map(Resource::read), &shown_path)
    }

    fn component(
        &mut self,
        entry: &str,
        location: &Location<'_>,
        acc: &mut Accumulator,
    ) -> Result<()> {
        let shown = location.shown();
        let dir = if remote::is_remote(entry) {
            remote::resolve(entry, self.remote_dir, &shown, "components")?
        } else {
            refuse_absolute_root(location, "components", entry)?;
            location.any_path(entry)?
        };
        let (component, file) = self.load(&dir)?;
        if component.kind.as_deref() != Some("Component") {
            return Err(location.error(
                "components",
                format!(
                    "expected kind 'Component' for path '{}' but got '{}'",
                    self.root.display(&dir),
                    component.kind.as_deref().unwrap_or("Kustomization")
                ),
            ));
        }
        self.accumulate(&component, &dir, &file, acc)
    }

    fn generate(
        &mut self,
        k: &Kustomization,
        location: &Location<'_>,
        acc: &mut Accumulator,
    ) -> Result<()> {
        let ctx = GeneratorContext {
            location: *location,
            defaults: k.generator_options.as_ref(),
        };
        for args in &k.config_map_generator {
            generators::generate(&ctx, GeneratorKind::ConfigMap, args, &mut acc.resources)?;
        }
        for args in &k.secret_generator {
            generators::generate(&ctx, GeneratorKind::Secret, args, &mut acc.resources)?;
        }
        let globals = k.helm_globals.clone().unwrap_or_default();
        let inherited = self.inherited_namespace();
        for chart in &k.helm_charts {
            self.inflate(chart, &globals, location, &inherited, acc)?;
        }
        let plugin_ctx = GeneratorContext {
            location: *location,
            defaults: None,
        };
        for plugin in self.plugins(&k.generators, location, "generators")? {
            match plugin {
                Plugin::Generate(Generate::Object(kind, args)) => {
                    generators::generate(&plugin_ctx, kind, &args, &mut acc.resources)?
                }
                Plugin::Generate(Generate::Helm(chart, globals)) => {
                    self.inflate(&chart, &globals, location, "default", acc)?
                }
                Plugin::Transform(_) => {
                    return Err(location.error(
                        "generators",
                        "a transformer configuration is listed under `generators`",
                    ))
                }
            }
        }
        Ok(())
    }

    fn inflate(
        &self,
        chart: &super::types::HelmChart,
        globals: &HelmGlobals,
        location: &Location<'_>,
        default_namespace: &str,
        acc: &mut Accumulator,
    ) -> Result<()> {
        let objects =
            helm_charts::inflate(chart, globals, location, self.fetched, default_namespace)?;
        let resources = objects.into_iter().map(|object| Resource {
            from_helm_chart: true,
            ..Resource::new(object)
        });
        acc.resources.extend(resources, &location.shown())
    }

    /// The steps a kustomization's own fields configure, in kustomize's order.
    fn field_steps(
        &self,
        k: &Kustomization,
        location: &Location<'_>,
        config: &TransformerConfig,
    ) -> Result<Vec<Transform>> {
        let mut steps = Vec::new();
        let source = |field: String| PatchSource {
            location: *location,
            field,
            schema: None,
        };
        for (index, entry) in k.patches_strategic_merge.iter().enumerate() {
            let field = format!("patchesStrategicMerge[{index}]");
            let looks_inline = entry.contains('\n') || entry.contains(": ");
            let (text, origin) = if looks_inline {
                (entry.clone(), location.shown())
            } else {
                location.read(entry)?
            };
            let patch = source(field.clone()).parse(&text, &origin)?;
            steps.push(Transform::Patch {
                patch,
                target: None,
                allow: Allow::default(),
                from_patches_strategic_merge: true,
                field,
            });
        }
        for (index, entry) in k.patches.iter().enumerate() {
            let field = format!("patches[{index}]");
            let patch_source = source(field.clone());
            let (text, origin) = patch_source.text(entry)?;
            let options = entry.options.clone().unwrap_or_default();
            steps.push(Transform::Patch {
                patch: patch_source.parse(&text, &origin)?,
                target: entry.target.clone(),
                allow: Allow {
                    name: options.allow_name_change,
                    kind: options.allow_kind_change,
                },
                from_patches_strategic_merge: false,
                field,
            });
        }
        if let Some(namespace) = k.namespace.as_deref().filter(|n| !n.is_empty()) {
            steps.push(Transform::Namespace {
                namespace: namespace.to_string(),
                specs: config.namespace.clone(),
                unset_only: false,
            });
        }
        for (affix, text, specs) in [
            (Affix::Prefix, &k.name_prefix, &config.name_prefix),
            (Affix::Suffix, &k.name_suffix, &config.name_suffix),
        ] {
            if let Some(text) = text.as_deref().filter(|t| !t.is_empty()) {
                steps.push(Transform::Affix {
                    affix,
                    text: text.to_string(),
                    specs: specs.clone(),
                });
            }
        }
        for entry in k.labels.iter().filter(|e| !e.pairs.is_empty()) {
            steps.push(Transform::Entries {
                entries: entry.pairs.clone(),
                specs: label_specs(
                    entry.include_selectors,
                    entry.include_templates,
                    &entry.fields,
                    config,
                ),
            });
        }
        for (entries, specs) in [
            (&k.common_labels, &config.common_labels),
            (&k.common_annotations, &config.common_annotations),
        ] {
            if !entries.is_empty() {
                steps.push(Transform::Entries {
                    entries: entries.clone(),
                    specs: specs.clone(),
                });
            }
        }
        for (index, entry) in k.patches_json6902.iter().enumerate() {
            let field = format!("patchesJson6902[{index}]");
            // kustomize's PatchJson6902Transformer takes one named object, never a selection.
            let named = (entry.target.as_ref())
                .and_then(|t| t.name.as_deref())
                .is_some_and(|n| !n.is_empty());
            if !named {
                return Err(location.error(
                    format!("{field}.target.name"),
                    "must specify the target name (patchesJson6902 patches one object)",
                ));
            }
            let patch_source = source(field.clone());
            let (text, origin) = patch_source.text(entry)?;
            let patch = patch_source.parse(&text, &origin)?;
            if !matches!(patch, Patch::Json6902(_)) {
                return Err(location.error(field, "expected a list of JSON 6902 operations"));
            }
            steps.push(Transform::Patch {
                patch,
                target: entry.target.clone(),
                allow: Allow::default(),
                from_patches_strategic_merge: false,
                field,
            });
        }
        for entry in &k.replicas {
            steps.push(Transform::Replicas {
                entry: entry.clone(),
                specs: config.replicas.clone(),
            });
        }
        for entry in &k.images {
            steps.push(Transform::Image {
                entry: entry.clone(),
                specs: config.images.clone(),
            });
        }
        if !k.replacements.is_empty() {
            let list = plugins::replacements_from(&k.replacements, location, "replacements")?;
            steps.push(Transform::Replacements(list));
        }
        Ok(steps)
    }

    fn transform(
        &mut self,
        k: &Kustomization,
        location: &Location<'_>,
        acc: &mut Accumulator,
    ) -> Result<()> {
        let config = acc.config();
        let mut steps = self.field_steps(k, location, &config)?;
        for plugin in self.plugins(&k.transformers, location, "transformers")? {
            match plugin {
                Plugin::Transform(step) => steps.push(step),
                Plugin::Generate(_) => {
                    return Err(location.error(
                        "transformers",
                        "a generator configuration is listed under `transformers`",
                    ))
                }
            }
        }
        let source = PatchSource {
            location: *location,
            field: String::new(),
            schema: self.schema.as_ref(),
        };
        for step in &steps {
            step.apply(&mut acc.resources, &source)?;
        }
        Ok(())
    }

    /// The builtin plugin runs `generators:` or `transformers:` entries configure.
    fn plugins(
        &mut self,
        entries: &[String],
        location: &Location<'_>,
        field: &str,
    ) -> Result<Vec<Plugin>> {
        let mut out = Vec::new();
        for (index, (config, shown)) in self
            .plugin_configs(entries, location, field)?
            .into_iter()
            .enumerate()
        {
            let source = PluginSource {
                location: *location,
                field: format!("{field}[{index}]"),
                shown,
            };
            out.extend(plugins::parse(&config, &source)?);
        }
        Ok(out)
    }

    /// Plugin configurations: inline YAML, files, or the output of kustomization
    /// directories; each with where it was written.
    fn plugin_configs(
        &mut self,
        entries: &[String],
        location: &Location<'_>,
        field: &str,
    ) -> Result<Vec<(Value, String)>> {
        // As kustomize: every inline configuration first, then those in files.
        let (mut out, mut from_files) = (Vec::new(), Vec::new());
        for (index, entry) in entries.iter().enumerate() {
            let inline_origin = format!("{} ({field}[{index}])", location.shown());
            if let Ok(documents) = yaml::parse_documents(entry, &inline_origin) {
                if !documents.is_empty() {
                    out.extend(documents.into_iter().map(|d| (d, inline_origin.clone())));
                    continue;
                }
            }
            if remote::is_remote(entry) {
                return Err(remote::refused(&location.shown(), field, entry));
            }
            let path = location.any_path(entry)?;
            if path.is_dir() {
                refuse_absolute_root(location, field, entry)?;
                let (_, _, built) = self.build_dir(&path)?;
                let shown = self.root.display(&path);
                from_files.extend(
                    built
                        .resources
                        .items
                        .into_iter()
                        .map(|r| (r.value, shown.clone())),
                );
                continue;
            }
            let (text, shown) = location.read(entry)?;
            from_files.extend(
                yaml::parse_documents(&text, &shown)?
                    .into_iter()
                    .map(|d| (d, shown.clone())),
            );
        }
        out.extend(from_files);
        Ok(out)
    }
}

/// Extracts the field name from serde's "unknown field `x`" message.
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.split("unknown field `").nth(1)?;
    Some(rest.split('`').next()?.to_string())
}

/// Refuses a kustomization directory named by an absolute path, as kustomize's loader
/// refuses any new root given that way (a file may be named so, inside the root).
fn refuse_absolute_root(location: &Location<'_>, field: &str, entry: &str) -> Result<()> {
    if Path::new(entry).is_absolute() {
        return Err(location.error(field, format!("new root '{entry}' cannot be absolute")));
    }
    Ok(())
}
