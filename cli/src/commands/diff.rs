//! `fleet diff DIR`: what the uncommitted changes under a directory would change on each
//! cluster, rendered from the working tree and from a commit (HEAD by default).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use clap::Args;
use fleet_api::{Cluster, ClusterGroup};
use fleet_renderer::bundle::{self, BundleDir, ClusterInfo};
use fleet_renderer::RepoRoot;
use kube::Api;
use serde::Serialize;
use serde_json::Value;

use super::output::{print_structured, Format};

/// Arguments of `fleet diff`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet diff . -l env=prod                    # one cluster, described by its labels
  fleet diff apps/ --base origin/main -l env=dev --cluster-name dev-1
  fleet diff . --kubeconfig hub.kubeconfig    # every Cluster of fleet-default, as labelled
  fleet diff . -l env=prod --exit-code && git commit -am 'No change for prod'

Exit code: 0, or with --exit-code 1 when something would change. A bundle that fails to
render is reported and makes the exit code 2.")]
pub(super) struct DiffArgs {
    /// A directory in a Git working tree: the bundles under it are compared.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The commit to compare with.
    #[arg(long, default_value = "HEAD")]
    base: String,
    /// A label of the cluster to render for (repeatable).
    #[arg(short = 'l', long = "label", value_parser = fleet_objects::selector::parse_label)]
    labels: Vec<(String, String)>,
    /// The name of that cluster.
    #[arg(long, default_value = "local")]
    cluster_name: String,
    /// Instead of one described cluster, every Cluster of this hub (kubeconfig).
    #[arg(long, conflicts_with = "labels")]
    kubeconfig: Option<PathBuf>,
    /// The hub namespace whose Clusters are compared.
    #[arg(short, long, default_value = "fleet-default")]
    namespace: String,
    /// Exit with 1 when something would change.
    #[arg(long)]
    exit_code: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    output: Format,
}

/// One object that would change on one cluster.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Change {
    cluster: String,
    bundle: String,
    /// `added`, `removed`, `changed`, or `error`.
    change: &'static str,
    /// `Kind namespace/name`, or the render error.
    object: String,
    /// A unified diff of the object's YAML.
    #[serde(skip_serializing_if = "String::is_empty")]
    diff: String,
}

/// Runs `fleet diff`, exiting with its exit code.
pub(super) fn run(args: DiffArgs) -> Result<()> {
    let code = diff(&args)?;
    if code != 0 {
        std::process::exit(code);
    }
    Ok(())
}

/// Prints the changes; returns the exit code (scratch files are gone by then).
fn diff(args: &DiffArgs) -> Result<i32> {
    let dir = args
        .dir
        .canonicalize()
        .with_context(|| format!("{} does not exist", args.dir.display()))?;
    let top = PathBuf::from(super::git(&dir, &["rev-parse", "--show-toplevel"])?);
    let commit = super::git(
        &top,
        &[
            "rev-parse",
            "--verify",
            &format!("{}^{{commit}}", args.base),
        ],
    )?;
    let path = match dir.strip_prefix(&top) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => bail!("{} is not inside {}", dir.display(), top.display()),
    };
    let scratch = tempfile::tempdir().context("scratch directory")?;
    let base_tree = scratch.path().join("base");
    let mirror = fleet_gitjob::git::Mirror::open(&top.display().to_string(), &top.join(".git"))?;
    fleet_gitjob::git::extract(&mirror, &commit, &base_tree, Default::default())?;
    let clusters = match &args.kubeconfig {
        Some(kubeconfig) => hub_clusters(kubeconfig, &args.namespace)?,
        None => vec![ClusterInfo {
            name: args.cluster_name.clone(),
            namespace: args.namespace.clone(),
            labels: args.labels.iter().cloned().collect(),
            ..ClusterInfo::default()
        }],
    };
    let short: String = commit.chars().take(7).collect();
    let mut changes = Vec::new();
    let (base, working) = (
        Tree::discover(&base_tree, &path),
        Tree::discover(&top, &path),
    );
    for cluster in &clusters {
        let (before, after) = (base.render(cluster), working.render(cluster));
        changes.extend(compare(&cluster.name, before, after, &short));
    }
    if !print_structured(args.output, &changes)? {
        print_text(&clusters, &changes);
    }
    Ok(if changes.iter().any(|c| c.change == "error") {
        2
    } else if args.exit_code && !changes.is_empty() {
        1
    } else {
        0
    })
}

/// The Clusters of `namespace` on the hub, with their labels and groups.
fn hub_clusters(kubeconfig: &Path, namespace: &str) -> Result<Vec<ClusterInfo>> {
    let runtime = super::runtime()?;
    runtime.block_on(async {
        let client = super::kube_client(kubeconfig).await?;
        let clusters = Api::<Cluster>::namespaced(client.clone(), namespace)
            .list(&Default::default())
            .await
            .context("listing Clusters")?
            .items;
        let groups = Api::<ClusterGroup>::namespaced(client, namespace)
            .list(&Default::default())
            .await
            .context("listing ClusterGroups")?
            .items;
        if clusters.is_empty() {
            bail!("the hub has no Clusters in namespace {namespace}");
        }
        Ok(clusters
            .iter()
            .map(|c| fleet_controller::placement::cluster_info(c, &groups))
            .collect())
    })
}

/// Each bundle under `path` of the tree at `root`, by bundle path: its resources by
/// `Kind namespace/name`, or why it could not be rendered.
type Rendered = BTreeMap<String, Result<BTreeMap<String, Value>, String>>;

/// One tree's bundles under the compared path, found once and rendered per cluster; or
/// why they could not be found.
struct Tree {
    path: String,
    found: Result<(RepoRoot, Vec<BundleDir>), String>,
}

impl Tree {
    fn discover(root: &Path, path: &str) -> Self {
        let found = RepoRoot::new(root)
            .and_then(|repo| {
                let bundles = bundle::discover(&repo, &[path.to_string()])?;
                Ok((repo, bundles))
            })
            .map_err(|error| error.to_string());
        Self {
            path: path.to_string(),
            found,
        }
    }

    fn render(&self, cluster: &ClusterInfo) -> Rendered {
        let (repo, bundles) = match &self.found {
            Ok(found) => found,
            Err(error) => return Rendered::from([(self.path.clone(), Err(error.clone()))]),
        };
        bundles
            .iter()
            .map(|dir| {
                let rendered = super::test::read_fleet_yaml(repo, dir)
                    .and_then(|fleet| {
                        super::test::render_for(
                            repo,
                            dir,
                            &fleet,
                            super::test::NAME_PREFIX,
                            cluster,
                        )
                    })
                    .map(|variant| {
                        let resources = if variant.deploy {
                            variant.resources
                        } else {
                            Vec::new()
                        };
                        resources.into_iter().map(|r| (object_key(&r), r)).collect()
                    })
                    .map_err(|e| format!("{e:#}"));
                (dir.rel.clone(), rendered)
            })
            .collect()
    }
}

fn object_key(object: &Value) -> String {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let namespace = text("/metadata/namespace");
    let name = text("/metadata/name");
    if namespace.is_empty() {
        format!("{} {name}", text("/kind"))
    } else {
        format!("{} {namespace}/{name}", text("/kind"))
    }
}

fn compare(cluster: &str, before: Rendered, after: Rendered, base: &str) -> Vec<Change> {
    let bundles: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let empty = Ok(BTreeMap::new());
    let mut changes = Vec::new();
    for bundle in bundles {
        let change = |change, object: &str, diff: String| Change {
            cluster: cluster.to_string(),
            bundle: bundle.clone(),
            change,
            object: object.to_string(),
            diff,
        };
        let (old, new) = match (
            before.get(bundle).unwrap_or(&empty),
            after.get(bundle).unwrap_or(&empty),
        ) {
            (_, Err(error)) => {
                changes.push(change("error", error, String::new()));
                continue;
            }
            // A bundle broken at the base and mended now: everything is compared to nothing.
            (Err(_), Ok(new)) => (BTreeMap::new(), new.clone()),
            (Ok(old), Ok(new)) => (old.clone(), new.clone()),
        };
        let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        for key in keys {
            let as_yaml = |v: Option<&Value>| {
                v.map(|v| serde_yaml_ng::to_string(v).unwrap_or_default())
                    .unwrap_or_default()
            };
            let (was, now) = (as_yaml(old.get(key)), as_yaml(new.get(key)));
            if was == now {
                continue;
            }
            let kind = match (old.contains_key(key), new.contains_key(key)) {
                (false, _) => "added",
                (_, false) => "removed",
                _ => "changed",
            };
            let diff = similar::TextDiff::from_lines(&was, &now)
                .unified_diff()
                .context_radius(3)
                .header(
                    &format!("{key} at {base}"),
                    &format!("{key} in the working tree"),
                )
                .to_string();
            changes.push(change(kind, key, diff));
        }
    }
    changes
}

fn print_text(clusters: &[ClusterInfo], changes: &[Change]) {
    for cluster in clusters {
        let labels: Vec<String> = cluster
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mine: Vec<&Change> = changes
            .iter()
            .filter(|c| c.cluster == cluster.name)
            .collect();
        let summary = if mine.is_empty() {
            "no changes".to_string()
        } else {
            format!("{} object(s) would change", mine.len())
        };
        println!(
            "cluster {} ({}): {summary}",
            cluster.name,
            labels.join(", ")
        );
        let mut bundle = "";
        for change in mine {
            if change.bundle != bundle {
                bundle = &change.bundle;
                println!("  bundle {bundle}");
            }
            let sign = match change.change {
                "added" => "+",
                "removed" => "-",
                "changed" => "~",
                _ => "!",
            };
            println!("    {sign} {}", change.object);
            for line in change.diff.lines() {
                println!("      {line}");
            }
        }
    }
}
