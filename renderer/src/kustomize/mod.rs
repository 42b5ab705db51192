//! A native Kustomize engine that builds what `kubectl kustomize` builds.
//!
//! Supported: resources (files, directories, nested kustomizations), bases, components,
//! namespace, namePrefix/nameSuffix with name reference fix-up, commonLabels, labels,
//! commonAnnotations, images, replicas, patches, patchesStrategicMerge, patchesJson6902,
//! configMapGenerator, secretGenerator, generatorOptions, sortOptions and `transformers`
//! holding LabelTransformer, AnnotationsTransformer or PatchTransformer configurations. Any other field
//! is an error naming it.

mod fieldspec;
mod generators;
mod nameref;
mod order;
mod patches;
mod plugins;
mod resmap;
mod transformers;
pub mod types;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{RenderError, Result};
use crate::root::RepoRoot;
use crate::yaml;
use generators::{GeneratorContext, GeneratorKind};
use patches::{Patch, PatchSource};
use resmap::{ResMap, Resource};
use types::Kustomization;

/// File names that hold a kustomization, in the order kustomize looks for them.
pub const KUSTOMIZATION_FILES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Returns the kustomization file in `dir`, if there is one.
pub fn kustomization_file(dir: &Path) -> Option<PathBuf> {
    KUSTOMIZATION_FILES
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
}

/// Builds the kustomization in `dir` (inside `root`) into its output resources.
pub fn build(root: &RepoRoot, dir: &Path) -> Result<Vec<Value>> {
    let dir = root.resolve(root.path(), &dir.to_string_lossy(), root.path())?;
    let mut builder = Builder {
        root,
        stack: Vec::new(),
        layers: Vec::new(),
    };
    let (kustomization, mut resources) = builder.build_dir(&dir)?;
    finish(&mut resources);
    let order = kustomization
        .sort_options
        .as_ref()
        .and_then(|s| s.order.as_deref())
        .unwrap_or("legacy");
    match order {
        "legacy" => order::legacy_sort(
            &mut resources.items,
            kustomization
                .sort_options
                .as_ref()
                .and_then(|s| s.legacy_sort_options.as_ref()),
        ),
        "fifo" => {}
        other => {
            return Err(RenderError::in_field(
                root.display(&dir),
                "sortOptions.order",
                format!("unknown order `{other}` (legacy or fifo)"),
            ))
        }
    }
    Ok(resources.items.into_iter().map(|r| r.value).collect())
}

/// Steps kustomize runs once, after every level: content hashes, then name references.
fn finish(resources: &mut ResMap) {
    for resource in &mut resources.items {
        if resource.generated.as_ref().is_some_and(|g| g.hash_suffix) {
            let hash = generators::content_hash(&resource.value);
            let name = crate::resource::str_at(&resource.value, &["metadata", "name"]);
            let hashed = format!("{name}-{hash}");
            crate::resource::set_metadata(&mut resource.value, "name", &hashed);
            resource.remember_name();
        }
    }
    nameref::fix_references(resources);
}

struct Builder<'r> {
    root: &'r RepoRoot,
    /// Kustomization directories being built, to detect cycles.
    stack: Vec<PathBuf>,
    /// Every kustomization directory seen, indexed by layer id.
    layers: Vec<PathBuf>,
}

impl Builder<'_> {
    fn load(&self, dir: &Path) -> Result<(Kustomization, PathBuf)> {
        let file = kustomization_file(dir).ok_or_else(|| {
            RenderError::in_file(
                self.root.display(dir),
                "no kustomization.yaml, kustomization.yml or Kustomization here",
            )
        })?;
        let text = self.root.read_to_string(&file)?;
        let shown = self.root.display(&file);
        let kustomization: Kustomization = serde_yaml_ng::from_str(&text).map_err(|e| {
            let error = yaml::yaml_error(&shown, &e);
            match unsupported_field(&e.to_string()) {
                Some(field) => RenderError::in_field(
                    &shown,
                    &field,
                    format!("field `{field}` is not supported by the fleet-rs kustomize engine"),
                )
                .with_line(error.location.line),
                None => error,
            }
        })?;
        Ok((kustomization, file))
    }

    /// Builds one kustomization directory; returns the kustomization read and its output.
    fn build_dir(&mut self, dir: &Path) -> Result<(Kustomization, ResMap)> {
        if let Some(start) = self.stack.iter().position(|d| d == dir) {
            let chain: Vec<String> = self.stack[start..]
                .iter()
                .chain(std::iter::once(&dir.to_path_buf()))
                .map(|d| self.root.display(d))
                .collect();
            return Err(RenderError::in_file(
                self.root.display(dir),
                format!("cycle in resources: {}", chain.join(" -> ")),
            ));
        }
        let (kustomization, file) = self.load(dir)?;
        if kustomization.kind.as_deref() == Some("Component") {
            return Err(RenderError::in_file(
                self.root.display(&file),
                "a Component can only be used from `components`, not `resources`",
            ));
        }
        self.stack.push(dir.to_path_buf());
        let layer = self.layers.len();
        self.layers.push(dir.to_path_buf());
        let mut resources = ResMap::default();
        let result = self.apply(&kustomization, dir, &file, &mut resources);
        self.stack.pop();
        result?;
        for resource in &mut resources.items {
            resource.layers.push(layer);
        }
        Ok((kustomization, resources))
    }

    /// Runs one kustomization (or component) over `resources`: resources, components,
    /// generators, then transformers in kustomize's order.
    fn apply(
        &mut self,
        k: &Kustomization,
        dir: &Path,
        file: &Path,
        resources: &mut ResMap,
    ) -> Result<()> {
        let shown = self.root.display(file);
        for (index, entry) in k.resources.iter().chain(&k.bases).enumerate() {
            let field = if index < k.resources.len() {
                "resources"
            } else {
                "bases"
            };
            self.accumulate(entry, dir, file, field, resources)?;
        }
        for entry in &k.components {
            if is_remote(entry) {
                return Err(remote(&shown, "components", entry));
            }
            let component_dir = self.root.resolve(dir, entry, file)?;
            let (component, component_file) = self.load(&component_dir)?;
            if component.kind.as_deref() != Some("Component") {
                return Err(RenderError::in_field(
                    &shown,
                    "components",
                    format!("`{entry}` is not a kustomization of kind Component"),
                ));
            }
            self.apply(&component, &component_dir, &component_file, resources)?;
        }
        self.generate(k, dir, file, resources)?;
        self.transform(k, dir, file, resources)
    }

    fn accumulate(
        &mut self,
        entry: &str,
        dir: &Path,
        file: &Path,
        field: &str,
        resources: &mut ResMap,
    ) -> Result<()> {
        let shown = self.root.display(file);
        if is_remote(entry) {
            return Err(remote(&shown, field, entry));
        }
        let path = self.root.resolve(dir, entry, file)?;
        if path.is_dir() {
            let (_, nested) = self.build_dir(&path)?;
            return resources.append(nested, &shown);
        }
        let text = self.root.read_to_string(&path)?;
        let shown_path = self.root.display(&path);
        let documents = yaml::parse_documents(&text, &shown_path)?;
        resources.extend(documents.into_iter().map(Resource::new), &shown_path)
    }

    fn generate(
        &self,
        k: &Kustomization,
        dir: &Path,
        file: &Path,
        resources: &mut ResMap,
    ) -> Result<()> {
        let ctx = GeneratorContext {
            root: self.root,
            dir,
            file,
            defaults: k.generator_options.as_ref(),
        };
        for args in &k.config_map_generator {
            generators::generate(&ctx, GeneratorKind::ConfigMap, args, resources)?;
        }
        for args in &k.secret_generator {
            generators::generate(&ctx, GeneratorKind::Secret, args, resources)?;
        }
        Ok(())
    }

    fn transform(
        &self,
        k: &Kustomization,
        dir: &Path,
        file: &Path,
        resources: &mut ResMap,
    ) -> Result<()> {
        let source = |field: String| PatchSource {
            root: self.root,
            dir,
            file,
            field,
        };
        for (index, entry) in k.patches_strategic_merge.iter().enumerate() {
            let source = source(format!("patchesStrategicMerge[{index}]"));
            let looks_inline = entry.contains('\n') || entry.contains(": ");
            let (text, origin) = if looks_inline {
                (entry.clone(), self.root.display(file))
            } else {
                let path = self.root.resolve(dir, entry, file)?;
                (self.root.read_to_string(&path)?, self.root.display(&path))
            };
            let patch = source.parse(&text, &origin)?;
            patches::apply(resources, &patch, None, &source)?;
        }
        for (index, entry) in k.patches.iter().enumerate() {
            let source = source(format!("patches[{index}]"));
            let (text, origin) = source.text(entry)?;
            let patch = source.parse(&text, &origin)?;
            patches::apply(resources, &patch, entry.target.as_ref(), &source)?;
        }
        if let Some(namespace) = &k.namespace {
            transformers::set_namespace(resources, namespace);
        }
        let prefix = k.name_prefix.as_deref().unwrap_or_default();
        let suffix = k.name_suffix.as_deref().unwrap_or_default();
        if !prefix.is_empty() || !suffix.is_empty() {
            transformers::add_name_affixes(resources, prefix, suffix);
        }
        transformers::add_labels(resources, &k.common_labels, true, true);
        for entry in &k.labels {
            transformers::add_labels(
                resources,
                &entry.pairs,
                entry.include_selectors,
                entry.include_templates,
            );
        }
        transformers::add_annotations(resources, &k.common_annotations);
        for (index, entry) in k.patches_json6902.iter().enumerate() {
            let source = source(format!("patchesJson6902[{index}]"));
            let (text, origin) = source.text(entry)?;
            let patch = match source.parse(&text, &origin)? {
                Patch::Strategic(_) => {
                    return Err(RenderError::in_field(
                        self.root.display(file),
                        format!("patchesJson6902[{index}]"),
                        "expected a list of JSON 6902 operations",
                    ))
                }
                json => json,
            };
            patches::apply(resources, &patch, entry.target.as_ref(), &source)?;
        }
        transformers::set_replicas(resources, &k.replicas);
        transformers::set_images(resources, &k.images);
        plugins::run(self.root, dir, file, &k.transformers, resources)
    }
}

/// Whether a resource or component entry names something outside the repository.
fn is_remote(entry: &str) -> bool {
    entry.contains("://") || entry.starts_with("github.com/")
}

fn remote(file: &str, field: &str, entry: &str) -> RenderError {
    RenderError::in_field(
        file,
        field,
        format!(
            "remote reference `{entry}` is not supported: the renderer reads only the repository"
        ),
    )
}

/// Extracts the field name from serde's "unknown field `x`" message.
fn unsupported_field(message: &str) -> Option<String> {
    let rest = message.split("unknown field `").nth(1)?;
    Some(rest.split('`').next()?.to_string())
}
