//! `fleet test [DIR] -l k=v ...`: render one bundle for a described cluster.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use fleet_api::FleetYaml;
use fleet_renderer::bundle::{self, BundleDir, ClusterInfo, Variant};
use fleet_renderer::RepoRoot;

use super::output::{print_structured, Format};

/// Arguments of `fleet test`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet test multi-cluster/manifests -l env=prod
  fleet test multi-cluster/helm -l env=dev -N dev-1 -o json
  fleet test multi-cluster/helm -t prod -q")]
pub(super) struct TestArgs {
    /// Bundle directory (holding fleet.yaml or manifests).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Cluster label to match against, repeatable.
    #[arg(short = 'l', long = "label", value_parser = fleet_objects::selector::parse_label)]
    pub labels: Vec<(String, String)>,
    /// Cluster name to match against.
    #[arg(short = 'N', long = "name", alias = "cluster-name", default_value = "")]
    pub cluster_name: String,
    /// Cluster group to match against, repeatable. Without a group, labels, group labels
    /// or target, the cluster is in the `default` group, as in Fleet.
    #[arg(short = 'g', long = "group")]
    pub groups: Vec<String>,
    /// Cluster group label to match against, repeatable.
    #[arg(short = 'L', long = "group-label", value_parser = fleet_objects::selector::parse_label)]
    pub group_labels: Vec<(String, String)>,
    /// The target to use, by name, instead of matching the cluster.
    #[arg(short = 't', long)]
    pub target: Option<String>,
    /// Print only the target matched (on standard error), not the resources.
    #[arg(short, long)]
    pub quiet: bool,
    /// The options file of DIR to read instead of its fleet.yaml (relative to DIR).
    #[arg(short = 'f', long)]
    pub file: Option<String>,
    /// A Bundle object (YAML) to render instead of DIR.
    #[arg(short = 'b', long, conflicts_with = "file")]
    pub bundle_file: Option<PathBuf>,
    /// Name prefix of the bundle (the GitRepo name), which names its Helm release.
    #[arg(long, default_value = NAME_PREFIX)]
    pub bundle_name: String,
    /// Directory paths may not leave (default: DIR).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Output format: the manifests as YAML documents (text), or one JSON or YAML list.
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// The name prefix of bundles rendered outside a GitRepo.
pub(super) const NAME_PREFIX: &str = "test";

/// Runs `fleet test`: the target of the bundle that matches the cluster described (printed
/// as `# Matched: NAME` on standard error, as Fleet's does), and the bundle rendered for it.
pub(super) fn run(args: TestArgs) -> Result<()> {
    let source = match &args.bundle_file {
        Some(file) => Source::of_bundle_file(file)?,
        None => Source::of_directory(&args)?,
    };
    let Source {
        root,
        bundle,
        fleet,
        targets,
        _files,
    } = source;
    let no_cluster_given = args.groups.is_empty()
        && args.labels.is_empty()
        && args.group_labels.is_empty()
        && args.target.is_none();
    let group_labels: BTreeMap<String, String> = args.group_labels.into_iter().collect();
    let mut groups = args.groups;
    if no_cluster_given {
        groups.push("default".into());
    }
    // Fleet matches against one group whose name may be empty: its labels still count.
    if groups.is_empty() {
        groups.push(String::new());
    }
    let cluster = ClusterInfo {
        name: args.cluster_name,
        namespace: "fleet-default".into(),
        labels: args.labels.into_iter().collect(),
        groups: groups
            .into_iter()
            .map(|g| (g, group_labels.clone()))
            .collect(),
        ..ClusterInfo::default()
    };
    let matched = match &args.target {
        Some(name) => targets.iter().find(|t| t.name.as_ref() == Some(name)),
        None => cluster.first_match(&targets),
    };
    let Some(matched) = matched else {
        anyhow::bail!("no match found");
    };
    eprintln!("# Matched: {}", matched.name.as_deref().unwrap_or_default());
    if args.quiet {
        return Ok(());
    }
    // A target named with `-t` is rendered as for a cluster it selects.
    let cluster = match &args.target {
        Some(_) => ClusterInfo {
            name: cluster.name.clone(),
            ..ClusterInfo::selected_by(matched)
        },
        None => cluster,
    };
    let variant = render_for(&root, &bundle, &fleet, &args.bundle_name, &cluster)?;
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

/// The bundle `fleet test` renders: a directory, or a Bundle object's files written out.
struct Source {
    root: RepoRoot,
    bundle: BundleDir,
    fleet: FleetYaml,
    /// The Bundle's targets, as `fleet apply` writes them, which the cluster is matched to
    /// (its files are not read for them).
    targets: Vec<fleet_api::BundleTarget>,
    /// Where a Bundle object's files were written, removed when done.
    _files: Option<tempfile::TempDir>,
}

impl Source {
    /// The bundle of `args.dir`, with its fleet.yaml or the options file `-f` names.
    fn of_directory(args: &TestArgs) -> Result<Self> {
        let root = RepoRoot::new(args.root.as_deref().unwrap_or(&args.dir))?;
        let dir = args.dir.canonicalize()?;
        let fleet_yaml = match &args.file {
            Some(file) => Some(root.resolve(&dir, file, &dir)?),
            None => bundle::fleet_yaml_in(&dir),
        };
        let bundle = BundleDir {
            rel: root.display(&dir),
            left_out: fleet_yaml.iter().cloned().collect(),
            fleet_yaml,
            dir,
            options: None,
        };
        let fleet = read_fleet_yaml(&root, &bundle)?;
        Ok(Self {
            targets: bundle::bundle_targets(&fleet, None).targets,
            root,
            bundle,
            fleet,
            _files: None,
        })
    }

    /// The Bundle object in `file` (`-b`), its resources written to a temporary directory.
    fn of_bundle_file(file: &std::path::Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let object: fleet_api::Bundle =
            fleet_files::yaml::parse_one(&text, &file.display().to_string())?;
        let files = tempfile::tempdir()?;
        bundle::write_files(&object.spec.resources, files.path())?;
        let root = RepoRoot::new(files.path())?;
        let bundle = BundleDir {
            rel: ".".into(),
            dir: root.path().to_path_buf(),
            ..BundleDir::default()
        };
        Ok(Self {
            fleet: fleet_controller::placement::as_fleet_yaml(&object),
            targets: object.spec.targets,
            root,
            bundle,
            _files: Some(files),
        })
    }
}

/// The bundle's fleet.yaml (or the options file named for it), its warnings printed.
pub(super) fn read_fleet_yaml(root: &RepoRoot, bundle: &BundleDir) -> Result<FleetYaml> {
    let Some(path) = &bundle.fleet_yaml else {
        return Ok(FleetYaml::default());
    };
    let loaded = bundle::load_fleet_yaml(root, path, false)?;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    Ok(loaded.spec)
}

/// Renders `bundle`, described by `fleet`, for `cluster` as gitjob would for the GitRepo
/// `repo_name`, remote charts fetched into the user's chart cache.
pub(super) fn render_for(
    root: &RepoRoot,
    bundle: &BundleDir,
    fleet: &FleetYaml,
    repo_name: &str,
    cluster: &ClusterInfo,
) -> Result<Variant> {
    let (_, options) = bundle::options_for(fleet, cluster);
    let cache = fleet_charts::ChartCache::new(chart_cache_dir());
    let none = fleet_charts::HelmAuth::none();
    let fetched = fleet_charts::fetch_for_bundle(&cache, root, bundle, fleet, &options, &none)?;
    let name = bundle::name_for(fleet, repo_name, bundle);
    Ok(bundle::render_with(
        root,
        bundle,
        &name,
        fleet,
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
