//! What a kustomization tree needs from outside the repository before it can be built:
//! remote resources and components, and charts its `helmCharts` take from a repository.
//! Read from the kustomization files alone (nothing is built), so gitjob can fetch them
//! first; remote resources already fetched are read in turn, for the remote bases they
//! name.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::helm_charts;
use super::remote::RemoteResource;
use super::target::Builder;
use fleet_files::RepoRoot;
use fleet_files::Result;
use fleet_helm::{FetchedCharts, RemoteChartRef};

/// Remote inputs of a kustomization tree.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RemoteNeeds {
    /// Remote resources and components not fetched into the remote directory yet.
    pub resources: BTreeSet<RemoteResource>,
    /// Charts `helmCharts` entries name from a repository (no local copy in chartHome).
    pub charts: Vec<RemoteChartRef>,
}

/// The remote inputs of the kustomization in `dir`, with remote resources looked for
/// under `remote_dir`.
pub fn remote_needs(root: &RepoRoot, dir: &Path, remote_dir: &Path) -> Result<RemoteNeeds> {
    let none = FetchedCharts::default();
    let builder = Builder::new(root, true, &none, Some(remote_dir));
    let mut needs = RemoteNeeds::default();
    let mut visited = BTreeSet::new();
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        if !visited.insert(dir.clone()) || super::kustomization_file(&dir).is_none() {
            continue;
        }
        let (kustomization, file) = builder.load(&dir)?;
        let globals = kustomization.helm_globals.clone().unwrap_or_default();
        for chart in &kustomization.helm_charts {
            if let Some(reference) = helm_charts::remote_ref(chart, &globals, &dir) {
                if !needs.charts.contains(&reference) {
                    needs.charts.push(reference);
                }
            }
        }
        let entries = kustomization
            .resources
            .iter()
            .chain(&kustomization.bases)
            .chain(&kustomization.components);
        for entry in entries {
            match RemoteResource::parse(entry) {
                Some(resource) => {
                    let local = resource.local_path(remote_dir);
                    if local.is_dir() {
                        pending.push(local);
                    } else if !local.exists() {
                        needs.resources.insert(resource);
                    }
                }
                None => {
                    let path = root.resolve(&dir, entry, &file)?;
                    if path.is_dir() {
                        pending.push(path);
                    }
                }
            }
        }
    }
    Ok(needs)
}
