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
use super::provenance::{self, Origin, Trail};
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
    /// Whether origins and transformations are recorded (see [`provenance`]).
    tracking: bool,
    /// Where the build stands, for origins.
    trail: Trail,
}

/// A generator or transformer as a kustomization configures it: the steps it runs and
/// the origin it records.
struct Configured<T> {
    /// The origin it records, while [`Builder::tracking`].
    record: Option<Origin>,
    steps: Vec<T>,
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
            tracking: false,
            trail: Trail::default(),
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

    /// Runs `f` with the trail moved along `entry`.
    fn within<T>(&mut self, entry: &str, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let inner = self.trail.enter(entry);
        let outer = std::mem::replace(&mut self.trail, inner);
        let result = f(self);
        self.trail = outer;
        result
    }

    /// Resources read from the file `entry`, with their origin when it is tracked.
    fn read_from(&self, entry: &str, resources: Vec<Resource>) -> Vec<Resource> {
        if !self.tracking {
            return resources;
        }
        let origin = self.trail.file(entry).text();
        resources
            .into_iter()
            .map(|mut resource| {
                provenance::set_origin(&mut resource.value, &origin);
                resource
            })
            .collect()
    }

    /// The origin of a builtin generator or transformer of the kustomization `file`,
    /// while origins are tracked.
    fn builtin(&self, file: &Path, kind: &str) -> Option<Origin> {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        self.tracking.then(|| self.trail.builtin(&name, kind))
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
        if self.stack.is_empty() {
            // Only the kustomization being built decides; a base's setting counts for nothing.
            self.tracking = !kustomization.build_metadata.is_empty();
        }
        // A component built on its own is built as a kustomization, as kubectl builds it.
        if kustomization.kind.as_deref() == Some("Component") && !self.stack.is_empty() {
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
        let documents =
            |p: &super::Prepended| p.documents.iter().cloned().map(Resource::new).collect();
        if let Some(prepended) = prepended
            .as_ref()
            .filter(|p| !k.resources.contains(&p.file))
        {
            let resources = self.read_from(&prepended.file, documents(prepended));
            acc.resources.extend(resources, &prepended.file)?;
        }
        for (index, entry) in k.resources.iter().chain(&k.bases).enumerate() {
            let field = if index < k.resources.len() {
                "resources"
            } else {
                "bases"
            };
            match prepended.as_ref().filter(|p| &p.file == entry) {
                Some(prepended) => {
                    let resources = self.read_from(&prepended.file, documents(prepended));
                    acc.resources.extend(resources, &prepended.file)?
                }
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
            self.within(entry, |b| b.component(entry, &location, acc))?;
        }
        self.transform(k, &location, acc)?;
        if !k.validators.is_empty() {
            let configs = self.plugin_configs(&k.validators, &location, "validators")?;
            if let Some(config) = configs.first() {
                return Err(Error::in_file(
                    &config.shown,
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
                let (_, _, nested) = self.within(entry, |b| b.build_dir(&path))?;
                return acc.absorb(nested, &shown);
            }
            let text = self.root.read_to_string(&path)?;
            let documents = written::documents_read_later(text, entry)?;
            let resources = documents.into_iter().map(Resource::read).collect();
            return acc
                .resources
                .extend(self.read_from(entry, resources), entry);
        }
        let path = location.any_path(entry)?;
        if path.is_dir() {
            refuse_absolute_root(location, field, entry)?;
            let (_, _, nested) = self.within(entry, |b| b.build_dir(&path))?;
            return acc.absorb(nested, &shown);
        }
        let (text, shown_path) = location.read(entry)?;
        let documents = written::documents_read_later(text, &shown_path)?;
        let resources = documents.into_iter().map(Resource::read).collect();
        acc.resources
            .extend(self.read_from(entry, resources), &shown_path)
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
        for (kind, list) in [
            (GeneratorKind::ConfigMap, &k.config_map_generator),
            (GeneratorKind::Secret, &k.secret_generator),
        ] {
            let origin = self.builtin(location.file, kind.builtin_kind());
            let ctx = GeneratorContext {
                location: *location,
                defaults: k.generator_options.as_ref(),
                origin: origin.as_ref(),
            };
            for args in list {
                generators::generate(&ctx, kind, args, &mut acc.resources)?;
            }
        }
        let globals = k.helm_globals.clone().unwrap_or_default();
        let inherited = self.inherited_namespace();
        let helm_origin = self.builtin(location.file, "HelmChartInflationGenerator");
        for chart in &k.helm_charts {
            self.inflate(
                chart,
                &globals,
                location,
                &inherited,
                helm_origin.as_ref(),
                acc,
            )?;
        }
        for (plugin, origin) in self.plugins(&k.generators, location, "generators")? {
            match plugin {
                Plugin::Generate(Generate::Object(kind, args)) => {
                    let ctx = GeneratorContext {
                        location: *location,
                        defaults: None,
                        origin: origin.as_ref(),
                    };
                    generators::generate(&ctx, kind, &args, &mut acc.resources)?
                }
                Plugin::Generate(Generate::Helm(chart, globals)) => {
                    self.inflate(&chart, &globals, location, "default", origin.as_ref(), acc)?
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
        origin: Option<&Origin>,
        acc: &mut Accumulator,
    ) -> Result<()> {
        let objects =
            helm_charts::inflate(chart, globals, location, self.fetched, default_namespace)?;
        let origin = origin.map(Origin::text);
        let resources = objects.into_iter().map(|mut object| {
            if let Some(origin) = &origin {
                provenance::set_origin_if_absent(&mut object, origin);
            }
            Resource {
                from_helm_chart: true,
                ..Resource::new(object)
            }
        });
        acc.resources.extend(resources, &location.shown())
    }

    /// The transformers a kustomization's own fields configure, in kustomize's order.
    fn field_transformers(
        &self,
        k: &Kustomization,
        location: &Location<'_>,
        config: &TransformerConfig,
    ) -> Result<Vec<Configured<Transform>>> {
        let mut configured = Vec::new();
        let mut add = |kind: &str, steps: Vec<Transform>| {
            configured.push(Configured {
                record: self.builtin(location.file, kind),
                steps,
            })
        };
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
        // One transformer applies every patchesStrategicMerge entry.
        if !steps.is_empty() {
            add("PatchStrategicMergeTransformer", std::mem::take(&mut steps));
        }
        for (index, entry) in k.patches.iter().enumerate() {
            let field = format!("patches[{index}]");
            let patch_source = source(field.clone());
            let (text, origin) = patch_source.text(entry)?;
            let options = entry.options.clone().unwrap_or_default();
            let patch = Transform::Patch {
                patch: patch_source.parse(&text, &origin)?,
                target: entry.target.clone(),
                allow: Allow {
                    name: options.allow_name_change,
                    kind: options.allow_kind_change,
                },
                from_patches_strategic_merge: false,
                field,
            };
            add("PatchTransformer", vec![patch]);
        }
        if let Some(namespace) = k.namespace.as_deref().filter(|n| !n.is_empty()) {
            let step = Transform::Namespace {
                namespace: namespace.to_string(),
                specs: config.namespace.clone(),
                unset_only: false,
            };
            add("NamespaceTransformer", vec![step]);
        }
        for (affix, text, specs, kind) in [
            (
                Affix::Prefix,
                &k.name_prefix,
                &config.name_prefix,
                "PrefixTransformer",
            ),
            (
                Affix::Suffix,
                &k.name_suffix,
                &config.name_suffix,
                "SuffixTransformer",
            ),
        ] {
            if let Some(text) = text.as_deref().filter(|t| !t.is_empty()) {
                let step = Transform::Affix {
                    affix,
                    text: text.to_string(),
                    specs: specs.clone(),
                };
                add(kind, vec![step]);
            }
        }
        // One label transformer per `labels` entry, and one for `commonLabels` whenever
        // either is set.
        let entries = |entries: &std::collections::BTreeMap<String, String>, specs| {
            (!entries.is_empty())
                .then(|| Transform::Entries {
                    entries: entries.clone(),
                    specs,
                })
                .into_iter()
                .collect()
        };
        for entry in &k.labels {
            let specs = label_specs(
                entry.include_selectors,
                entry.include_templates,
                &entry.fields,
                config,
            );
            add("LabelTransformer", entries(&entry.pairs, specs));
        }
        if !k.labels.is_empty() || !k.common_labels.is_empty() {
            let specs = config.common_labels.clone();
            add("LabelTransformer", entries(&k.common_labels, specs));
        }
        if !k.common_annotations.is_empty() {
            let specs = config.common_annotations.clone();
            add(
                "AnnotationsTransformer",
                entries(&k.common_annotations, specs),
            );
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
            let step = Transform::Patch {
                patch,
                target: entry.target.clone(),
                allow: Allow::default(),
                from_patches_strategic_merge: false,
                field,
            };
            add("PatchJson6902Transformer", vec![step]);
        }
        for entry in &k.replicas {
            let step = Transform::Replicas {
                entry: entry.clone(),
                specs: config.replicas.clone(),
            };
            add("ReplicaCountTransformer", vec![step]);
        }
        for entry in &k.images {
            let step = Transform::Image {
                entry: entry.clone(),
                specs: config.images.clone(),
            };
            add("ImageTagTransformer", vec![step]);
        }
        if !k.replacements.is_empty() {
            let list = plugins::replacements_from(&k.replacements, location, "replacements")?;
            add(
                "ReplacementTransformer",
                vec![Transform::Replacements(list)],
            );
        }
        Ok(configured)
    }

    fn transform(
        &mut self,
        k: &Kustomization,
        location: &Location<'_>,
        acc: &mut Accumulator,
    ) -> Result<()> {
        let config = acc.config();
        let mut transformers = self.field_transformers(k, location, &config)?;
        for (plugin, record) in self.plugins(&k.transformers, location, "transformers")? {
            match plugin {
                Plugin::Transform(step) => transformers.push(Configured {
                    record,
                    steps: vec![step],
                }),
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
        for transformer in &transformers {
            for step in &transformer.steps {
                step.apply(&mut acc.resources, &source)?;
            }
            if let Some(record) = &transformer.record {
                provenance::note_transformer(&mut acc.resources.items, record)
                    .map_err(|e| location.error("buildMetadata", e))?;
            }
        }
        Ok(())
    }

    /// The builtin plugin runs `generators:` or `transformers:` entries configure, each
    /// with the origin it records while origins are tracked.
    fn plugins(
        &mut self,
        entries: &[String],
        location: &Location<'_>,
        field: &str,
    ) -> Result<Vec<(Plugin, Option<Origin>)>> {
        let mut out = Vec::new();
        for (index, config) in self
            .plugin_configs(entries, location, field)?
            .into_iter()
            .enumerate()
        {
            let source = PluginSource {
                location: *location,
                field: format!("{field}[{index}]"),
                shown: config.shown,
            };
            let record =
                (self.tracking).then(|| self.trail.plugin(&config.configured_in, &config.value));
            let runs = plugins::parse(&config.value, &source)?;
            out.extend(runs.into_iter().map(|run| (run, record.clone())));
        }
        Ok(out)
    }

    /// Plugin configurations: inline YAML, files, or the output of kustomization
    /// directories.
    fn plugin_configs(
        &mut self,
        entries: &[String],
        location: &Location<'_>,
        field: &str,
    ) -> Result<Vec<PluginConfig>> {
        // As kustomize: every inline configuration first, then those in files.
        let (mut out, mut from_files) = (Vec::new(), Vec::new());
        let file_name = location.file.file_name().unwrap_or_default();
        let kustomization_path = self.trail.path_of(&file_name.to_string_lossy());
        for (index, entry) in entries.iter().enumerate() {
            let inline_origin = format!("{} ({field}[{index}])", location.shown());
            if let Ok(documents) = yaml::parse_documents(entry, &inline_origin) {
                if !documents.is_empty() {
                    out.extend(documents.into_iter().map(|value| PluginConfig {
                        value,
                        shown: inline_origin.clone(),
                        configured_in: kustomization_path.clone(),
                    }));
                    continue;
                }
            }
            if remote::is_remote(entry) {
                return Err(remote::refused(&location.shown(), field, entry));
            }
            let path = location.any_path(entry)?;
            if path.is_dir() {
                refuse_absolute_root(location, field, entry)?;
                let (_, _, built) = self.within(entry, |b| b.build_dir(&path))?;
                let shown = self.root.display(&path);
                let dir_path = self.trail.path_of(entry);
                from_files.extend(built.resources.items.into_iter().map(|r| PluginConfig {
                    configured_in:
                        provenance::origin_path(&r.value).unwrap_or_else(|| dir_path.clone()),
                    value: r.value,
                    shown: shown.clone(),
                }));
                continue;
            }
            let (text, shown) = location.read(entry)?;
            let configured_in = self.trail.path_of(entry);
            from_files.extend(
                yaml::parse_documents(&text, &shown)?
                    .into_iter()
                    .map(|value| PluginConfig {
                        value,
                        shown: shown.clone(),
                        configured_in: configured_in.clone(),
                    }),
            );
        }
        out.extend(from_files);
        Ok(out)
    }
}

/// A plugin's configuration object and where it was written.
struct PluginConfig {
    value: Value,
    /// Its file (and field, when inline) for messages.
    shown: String,
    /// Its file from the top kustomization, for origins.
    configured_in: String,
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
