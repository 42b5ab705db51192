//! A Kustomize engine in Rust: `kustomize build` in-process, building what
//! `kubectl kustomize` (kustomize v5.8) builds.
//!
//! Every kustomization field is supported: resources, bases and components, namespace,
//! namePrefix/nameSuffix, labels, commonLabels, commonAnnotations, images, replicas,
//! patches of every kind, generators (ConfigMap, Secret, and `helmCharts` rendered by
//! [`fleet_helm`]), vars, replacements, configurations, crds, openapi, sortOptions, and
//! builtin plugin configurations in generators/transformers. Exec and KRM function plugins
//! are refused. Nothing is read outside the [`RepoRoot`] and nothing is fetched: remote
//! bases are looked for, already fetched, under [`REMOTE_DIR`] ([`remote_needs`] lists what
//! a tree needs), and remote charts come in [`BuildOptions::charts`].
//!
//! Start with [`build`]:
//!
//! ```
//! use fleet_kustomize::RepoRoot;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(
//!     dir.path().join("kustomization.yaml"),
//!     "namePrefix: prod-\nresources: [cm.yaml]\nlabels:\n- pairs: {app: web}\n",
//! )?;
//! std::fs::write(
//!     dir.path().join("cm.yaml"),
//!     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
//! )?;
//!
//! let root = RepoRoot::new(dir.path())?;
//! let resources = fleet_kustomize::build(&root, root.path())?;
//! assert_eq!(resources[0]["metadata"]["name"], "prod-settings");
//! assert_eq!(resources[0]["metadata"]["labels"]["app"], "web");
//! # Ok(())
//! # }
//! ```
//!
//! `examples/build.rs` is `kustomize build DIR` in a dozen lines.

mod config;
mod crds;
mod defaults;
mod fieldpath;
mod generators;
mod helm_charts;
mod location;
mod merge;
mod nameref;
mod needs;
mod openapi;
mod order;
mod patches;
mod plugin_source;
mod plugins;
mod provenance;
mod remote;
mod replacements;
mod resmap;
mod steps;
mod target;
mod transformers;
mod types;
mod value_add;
mod vars;
mod written;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use fleet_files::{Error, Location, RepoRoot, Result};
pub use fleet_helm::{FetchedCharts, RemoteChartRef};
pub use needs::{remote_needs, RemoteNeeds};
pub use remote::{RemoteResource, REMOTE_DIR};
use resmap::Resource;
use target::{Accumulator, Builder};

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

/// What a kustomization may read, as kustomize's `--load-restrictor` says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LoadRestrictor {
    /// `LoadRestrictionsRootOnly` (the default): plain files (patches, generator sources,
    /// resource files) in or below the kustomization's own directory; bases and
    /// components anywhere inside the repository root.
    #[default]
    RootOnly,
    /// `LoadRestrictionsNone`: files anywhere inside the repository root.
    None,
}

/// How to build.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildOptions<'a> {
    /// Where plain files may come from.
    pub load_restrictor: LoadRestrictor,
    /// Charts `helmCharts` entries name from a repository, fetched beforehand.
    pub charts: Option<&'a FetchedCharts>,
    /// Where remote resources were fetched to (a bundle's [`REMOTE_DIR`]); without it
    /// they are refused.
    pub remote_dir: Option<&'a Path>,
    /// Documents standing as a file of the top kustomization's directory and the first
    /// entry of its `resources`, as Rancher Fleet hands Helm's output to a kustomization.
    pub prepended: Option<&'a Prepended>,
    /// Told each warning as kustomize gives it (a deprecated field, as each kustomization
    /// is read), in kubectl's words; kubectl prints them on its standard error.
    pub on_warning: Option<fn(&str)>,
}

/// Documents a build reads as if they were a file in the top kustomization's directory,
/// listed first in its `resources` unless it lists that file itself.
#[derive(Debug, Clone, Default)]
pub struct Prepended {
    /// The file name they stand as (Fleet's `fleet-manifests.yaml`).
    pub file: String,
    /// The documents.
    pub documents: Vec<Value>,
}

/// Builds the kustomization in `dir` (inside `root`) into its output resources, with the
/// default load restrictor.
pub fn build(root: &RepoRoot, dir: &Path) -> Result<Vec<Value>> {
    build_with(root, dir, BuildOptions::default())
}

/// Builds the kustomization in `dir` (inside `root`) into its output resources.
pub fn build_with(root: &RepoRoot, dir: &Path, options: BuildOptions<'_>) -> Result<Vec<Value>> {
    let dir = root.resolve(root.path(), &dir.to_string_lossy(), root.path())?;
    let none = FetchedCharts::default();
    let mut builder = Builder::new(
        root,
        options.load_restrictor == LoadRestrictor::RootOnly,
        options.charts.unwrap_or(&none),
        options.remote_dir,
    );
    if let Some(prepended) = options.prepended {
        builder.prepend(&dir, prepended.clone());
    }
    builder.on_warning = options.on_warning;
    let (kustomization, file, mut accumulator) = builder.build_dir(&dir)?;
    let shown = root.display(&file);
    finish(&mut accumulator, &shown)?;
    let mut resources = accumulator.resources;
    let sort = kustomization.sort_options.as_ref();
    match sort.and_then(|s| s.order.as_deref()).unwrap_or("legacy") {
        "legacy" => order::legacy_sort(
            &mut resources.items,
            sort.and_then(|s| s.legacy_sort_options.as_ref()),
        ),
        "fifo" => {}
        other => {
            return Err(Error::in_field(
                shown,
                "sortOptions.order",
                format!("unknown order `{other}` (legacy or fifo)"),
            ))
        }
    }
    let managed = (kustomization.build_metadata.iter()).any(|b| b == "managedByLabel");
    for resource in &mut resources.items {
        provenance::strip_unlisted(&mut resource.value, &kustomization.build_metadata);
    }
    Ok(resources
        .items
        .into_iter()
        .map(printed)
        .map(|r| if managed { managed_by_kustomize(r) } else { r })
        .collect())
}

/// The version kustomize's `managedByLabel` names: the kustomize inside kubectl 1.37.
const KUSTOMIZE_VERSION: &str = "kustomize-v5.8.1";

/// `buildMetadata: [managedByLabel]`: `app.kubernetes.io/managed-by` in the object's own
/// labels (not its selectors or templates).
fn managed_by_kustomize(mut object: Value) -> Value {
    if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
        let labels = metadata
            .entry("labels")
            .or_insert_with(|| Value::Object(Default::default()));
        if !labels.is_object() {
            *labels = Value::Object(Default::default());
        }
        if let Value::Object(labels) = labels {
            labels.insert(
                "app.kubernetes.io/managed-by".into(),
                Value::String(KUSTOMIZE_VERSION.into()),
            );
        }
    }
    object
}

/// kustomize's reader annotates every object and strips those annotations before it
/// prints, which leaves every annotation's value the text it was written as (`0755`,
/// `1.50`, `~`) and drops an empty or null `metadata.annotations` (labels stay as
/// written).
fn printed(mut resource: Resource) -> Value {
    let mut object = resource.value;
    if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
        match metadata.get_mut("annotations") {
            Some(Value::Null) => {
                metadata.shift_remove("annotations");
            }
            Some(Value::Object(map)) if map.is_empty() => {
                metadata.shift_remove("annotations");
            }
            Some(Value::Object(map)) if map.values().any(|v| !v.is_string()) => {
                let texts = &resource.written.get().annotations;
                for (key, value) in map.iter_mut().filter(|(_, v)| !v.is_string()) {
                    *value = Value::String(written::text_of(texts, key, value));
                }
            }
            _ => {}
        }
    }
    object
}

/// Steps kustomize runs once, after every level: content hashes, name references, vars.
fn finish(accumulator: &mut Accumulator, file: &str) -> Result<()> {
    for resource in &mut accumulator.resources.items {
        if resource.generated.as_ref().is_some_and(|g| g.hash_suffix) {
            let hash = generators::content_hash(&resource.value);
            let name = fleet_files::str_at(&resource.value, &["metadata", "name"]);
            let hashed = format!("{name}-{hash}");
            resource.store_previous_id();
            fleet_files::set_metadata(&mut resource.value, "name", &hashed);
            resource.remember_name();
        }
    }
    let config = accumulator.config();
    nameref::fix_references(&mut accumulator.resources, &config, file)?;
    vars::resolve(&mut accumulator.resources, &accumulator.vars, &config, file)
}
