//! `fleet test [DIR] -l k=v ...`: render one bundle for a described cluster.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use fleet_renderer::bundle::{self, BundleDir, ClusterInfo, Variant};
use fleet_renderer::RepoRoot;

use super::output::{print_structured, Format};

/// Arguments of `fleet test`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet test multi-cluster/manifests -l env=prod
  fleet test multi-cluster/helm -l env=dev --cluster-name dev-1 -o json")]
pub(super) struct TestArgs {
    /// Bundle directory (holding fleet.yaml or manifests).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Cluster label, repeatable.
    #[arg(short = 'l', long = "label", value_parser = fleet_objects::selector::parse_label)]
    pub labels: Vec<(String, String)>,
    /// Cluster name.
    #[arg(long, default_value = "local")]
    pub cluster_name: String,
    /// Name prefix of the bundle (the GitRepo name), which names its Helm release.
    #[arg(long, default_value = NAME_PREFIX)]
    pub name: String,
    /// Cluster group the cluster belongs to, repeatable.
    #[arg(long = "group")]
    pub groups: Vec<String>,
    /// Directory paths may not leave (default: DIR).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Output format: the manifests as YAML documents (text), or one JSON or YAML list.
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// The name prefix of bundles rendered outside a GitRepo.
pub(super) const NAME_PREFIX: &str = "test";

/// Runs `fleet test`.
pub(super) fn run(args: TestArgs) -> Result<()> {
    let root = RepoRoot::new(args.root.as_deref().unwrap_or(&args.dir))?;
    let dir = args.dir.canonicalize()?;
    let bundle = BundleDir {
        rel: root.display(&dir),
        fleet_yaml: bundle::fleet_yaml_in(&dir),
        dir,
        left_out: Vec::new(),
        options: None,
    };
    let cluster = ClusterInfo {
        name: args.cluster_name,
        namespace: "fleet-default".into(),
        labels: args.labels.into_iter().collect(),
        groups: args
            .groups
            .into_iter()
            .map(|g| (g, BTreeMap::new()))
            .collect(),
        ..ClusterInfo::default()
    };
    let variant = render_for(&root, &bundle, &args.name, &cluster)?;
    if !variant.deploy {
        eprintln!(
            "target `{}` is doNotDeploy: nothing is deployed",
            variant.target.unwrap_or_default()
        );
        return Ok(());
    }
    if print_structured(args.output, &variant.resources)? {
        return Ok(());
    }
    std::io::stdout()
        .write_all(fleet_helm::yaml::to_kubectl_stream(&variant.resources).as_bytes())?;
    Ok(())
}

/// Renders `bundle` for `cluster` as gitjob would for the GitRepo `repo_name`: its
/// fleet.yaml (unknown fields warned about), remote charts fetched into the user's chart
/// cache.
pub(super) fn render_for(
    root: &RepoRoot,
    bundle: &BundleDir,
    repo_name: &str,
    cluster: &ClusterInfo,
) -> Result<Variant> {
    let fleet = match &bundle.fleet_yaml {
        Some(path) => {
            let loaded = bundle::load_fleet_yaml(root, path, false)?;
            for warning in &loaded.unknown {
                tracing::warn!("{warning}");
            }
            loaded.spec
        }
        None => Default::default(),
    };
    let (_, options) = bundle::options_for(&fleet, cluster);
    let cache = fleet_charts::ChartCache::new(chart_cache_dir());
    let none = fleet_charts::HelmAuth::none();
    let fetched = fleet_charts::fetch_for_bundle(&cache, root, bundle, &fleet, &options, &none)?;
    let name = bundle::name_for(&fleet, repo_name, bundle);
    Ok(bundle::render_with(
        root,
        bundle,
        &name,
        &fleet,
        cluster,
        &bundle::Sources {
            fetched: Some(&fetched),
            member: None,
            preprocess: true,
            ..Default::default()
        },
    )?)
}

/// Where downloaded charts are kept: `$FLEET_CHART_CACHE`, or the user's cache directory.
pub(super) fn chart_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FLEET_CHART_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("fleet-rs").join("charts")
}
