//! From a checked-out commit to the Bundle objects of a GitRepo: every bundle directory
//! under `paths`, with the GitRepo's targets and options, rendered once per customization
//! to prove it renders. A bundle that fails is reported and left out; the others go on. A directory with
//! nothing to deploy gives no Bundle, as in Fleet.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use fleet_api::labels::{BUNDLE_PATH_LABEL, COMMIT_LABEL, REPO_NAME_LABEL, SHARD_LABEL};
use fleet_api::{Bundle, FleetYaml, GitRepo};
use fleet_renderer::bundle::{self, BundleDir, ClusterInfo};
use fleet_renderer::{RenderError, RepoRoot};

use fleet_charts::{ChartCache, HelmAuth, RepoHelmAuth};

/// The Bundles of one commit.
#[derive(Debug, Default)]
pub struct CommitBundles {
    /// Bundles that rendered.
    pub bundles: Vec<Bundle>,
    /// Bundles that did not, by name.
    pub failures: BTreeMap<String, BundleFailure>,
}

/// A bundle directory whose fleet.yaml or resources are broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleFailure {
    /// The bundle's directory in the repository.
    pub path: String,
    /// What is wrong, naming the file, line and field.
    pub message: String,
}

/// Builds the Bundles of `gitrepo` from its checkout of `commit` at `checkout`, fetching
/// remote charts with the credentials `auth` gives each bundle's path. Only a failure to
/// find the bundles at all (a missing path) is an error; a broken bundle is recorded in
/// [`CommitBundles::failures`]. Setting `cancel` stops the charts' renders (each then
/// fails its bundle).
pub fn for_commit(
    gitrepo: &GitRepo,
    checkout: &Path,
    commit: &str,
    charts: &ChartCache,
    auth: &RepoHelmAuth,
    cancel: &Arc<AtomicBool>,
) -> Result<CommitBundles, RenderError> {
    let root = RepoRoot::new(checkout)?;
    let repo_name = gitrepo.metadata.name.clone().unwrap_or_default();
    let namespace = gitrepo
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "fleet-local".into());
    let dirs = if gitrepo.spec.bundles.is_empty() {
        bundle::discover(&root, &gitrepo.spec.paths)?
    } else {
        bundle::discover_driven(&root, &gitrepo.spec.bundles, "bundles")?
    };
    let built = in_parallel(&dirs, |dir| {
        let auth = auth.for_path(&dir.rel);
        let source = Source {
            root: &root,
            charts,
            auth: &auth,
            cancel,
        };
        one_bundle(gitrepo, &source, dir, &repo_name, &namespace, commit)
    })
    .ok_or_else(|| RenderError::in_file(root.display(checkout), "a render thread failed"))?;
    let mut out = CommitBundles::default();
    let mut names = std::collections::HashSet::new();
    for (dir, result) in dirs.iter().zip(built) {
        let failure = |message: String| BundleFailure {
            path: dir.rel.clone(),
            message,
        };
        match result {
            // As Fleet's `fleet apply`, which its gitjob runs: nothing to deploy, no Bundle.
            Ok(None) => tracing::info!(path = %dir.rel, "no resources found to deploy: no bundle"),
            Ok(Some(bundle)) => {
                let name = bundle.metadata.name.clone().unwrap_or_default();
                if names.insert(name.clone()) {
                    out.bundles.push(bundle);
                } else {
                    let message = format!(
                        "{}: bundle name `{name}` is already used by another directory",
                        dir.rel
                    );
                    out.failures.insert(name, failure(message));
                }
            }
            Err(message) => {
                let name = bundle::bundle_name(&repo_name, &dir.name_path());
                out.failures.insert(name, failure(message));
            }
        }
    }
    Ok(out)
}

/// `work` applied to every item on as many threads as there are cores, results in order;
/// `None` if a thread panicked.
fn in_parallel<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Option<Vec<R>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = items.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(work).collect::<Vec<R>>()))
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for handle in handles {
            out.extend(handle.join().ok()?);
        }
        Some(out)
    })
}

/// Where a bundle's files and charts come from: the checkout, the chart cache, and the
/// credentials for its charts.
struct Source<'a> {
    root: &'a RepoRoot,
    charts: &'a ChartCache,
    auth: &'a HelmAuth,
    cancel: &'a Arc<AtomicBool>,
}

fn one_bundle(
    gitrepo: &GitRepo,
    source: &Source<'_>,
    dir: &BundleDir,
    repo_name: &str,
    namespace: &str,
    commit: &str,
) -> Result<Option<Bundle>, String> {
    let root = source.root;
    let fleet = match &dir.fleet_yaml {
        Some(path) => {
            bundle::load_fleet_yaml(root, path, false)
                .map_err(|e| e.to_string())?
                .spec
        }
        None => FleetYaml::default(),
    };
    let name = bundle::name_for(&fleet, repo_name, dir);
    check_renders(source, dir, &name, &fleet)?;
    let spec = &gitrepo.spec;
    // What Fleet's gitjob passes to `fleet apply` as flags.
    let settings = bundle::ApplySettings {
        // The GitRepo's labels reach its bundles (BundleNamespaceMappings select by them).
        labels: gitrepo.metadata.labels.clone().unwrap_or_default(),
        targets: Some(bundle::RepoTargets::of_gitrepo(&spec.targets)),
        // A bundle's own account stays, so that a Policy can judge (and refuse) it.
        service_account: match fleet.options.service_account {
            Some(_) => None,
            None => spec.service_account.clone(),
        },
        sync_generation: spec.force_sync_generation.unwrap_or_default(),
        target_namespace: spec.target_namespace.clone(),
        keep_resources: spec.keep_resources,
        delete_namespace: spec.delete_namespace,
        correct_drift: spec.correct_drift.clone(),
        ..bundle::ApplySettings::default()
    };
    let mut object = bundle::bundle_object(root, dir, &fleet, repo_name, namespace, &settings)
        .map_err(|e| e.to_string())?;
    if bundle::has_nothing_to_deploy(&object, &fleet) {
        return Ok(None);
    }
    let labels = object.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(REPO_NAME_LABEL.into(), repo_name.to_string());
    labels.insert(BUNDLE_PATH_LABEL.into(), bundle::label_value(&dir.rel));
    labels.insert(COMMIT_LABEL.into(), commit.to_string());
    // A sharded GitRepo's Bundles belong to the same shard.
    if let Some(shard) = gitrepo
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SHARD_LABEL))
    {
        labels.insert(SHARD_LABEL.into(), shard.clone());
    }
    Ok(Some(object))
}

/// Renders the bundle for a cluster without labels and once for each customization, so a
/// broken template, patch or chart is found here rather than on every cluster.
fn check_renders(
    source: &Source<'_>,
    dir: &BundleDir,
    name: &str,
    fleet: &FleetYaml,
) -> Result<(), String> {
    let root = source.root;
    for cluster in ClusterInfo::checks_for(fleet) {
        let (_, options) = bundle::options_for(fleet, &cluster);
        let fetched =
            fleet_charts::fetch_for_bundle(source.charts, root, dir, fleet, &options, source.auth)
                .map_err(|e| e.to_string())?;
        bundle::render_with(
            root,
            dir,
            name,
            fleet,
            &cluster,
            &bundle::Sources {
                fetched: Some(&fetched),
                member: None,
                cancel: Some(source.cancel.clone()),
                // The sync's budget sets `cancel`.
                deadline: None,
                // As Fleet's CLI: values are templated for real clusters, not made-up ones.
                preprocess: false,
            },
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}
