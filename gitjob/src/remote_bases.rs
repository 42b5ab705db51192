//! Remote Kustomize resources (`github.com/org/repo//base?ref=v1`, plain URLs to files):
//! before a commit's bundles render, each one their kustomizations name is fetched (Git
//! repositories through the mirror cache, files over HTTP) into the bundle's
//! `_fleet_remote` directory. The renderer finds them there and so, from the Bundle's files,
//! does the controller: neither reaches the network. A fetch that fails is written beside
//! them, so the render of that bundle alone fails and says why.

use std::path::Path;

use fleet_api::GitRepo;
use fleet_charts::ChartCache;
use fleet_kustomize::{RemoteResource, REMOTE_DIR};
use fleet_renderer::bundle::{self, BundleDir};
use fleet_renderer::RepoRoot;

use crate::git::{extract, Access, GitError, Limits, MirrorCache, Wanted};

/// How many rounds of remote bases that name further remote bases are followed.
const MAX_ROUNDS: usize = 5;

/// Where remote resources are fetched from, with what limits.
pub struct Fetcher<'a> {
    /// Git mirrors by URL.
    pub mirrors: &'a MirrorCache,
    /// The GitRepo's own access: its credentials serve remote bases on the same host.
    pub access: &'a Access,
    /// HTTP, for plain file URLs.
    pub http: &'a ChartCache,
    /// Limits on each extracted tree.
    pub limits: Limits,
    /// Limit on each Git transfer.
    pub max_fetch_bytes: u64,
}

impl Fetcher<'_> {
    /// Fetches the remote resources of every bundle of `gitrepo` in the checkout `tree`.
    /// Nothing here fails the sync: what cannot be fetched fails its bundle's render.
    pub fn fetch_all(&self, gitrepo: &GitRepo, tree: &Path) {
        let Ok(root) = RepoRoot::new(tree) else {
            return;
        };
        // Missing paths are reported by the render that follows.
        let Ok(dirs) = bundle::discover(&root, &gitrepo.spec.paths) else {
            return;
        };
        for dir in &dirs {
            self.fetch_bundle(&root, dir);
        }
    }

    /// Fetches what one bundle needs, round by round (a remote base may name others).
    fn fetch_bundle(&self, root: &RepoRoot, dir: &BundleDir) {
        let fleet = match &dir.fleet_yaml {
            Some(path) => match bundle::load_fleet_yaml(root, path, false) {
                Ok(loaded) => loaded.spec,
                // A broken fleet.yaml is the render's to report.
                Err(_) => return,
            },
            None => fleet_api::FleetYaml::default(),
        };
        let remote_dir = dir.dir.join(REMOTE_DIR);
        for _ in 0..MAX_ROUNDS {
            let Ok(needs) = bundle::kustomize_needs(root, dir, &fleet) else {
                return;
            };
            if needs.resources.is_empty() {
                return;
            }
            for resource in &needs.resources {
                if let Err(message) = self.fetch_one(resource, &remote_dir) {
                    tracing::warn!(bundle = %dir.rel, "remote resource: {message}");
                    let failure = resource.failure_path(&remote_dir);
                    if let Err(e) = std::fs::create_dir_all(&remote_dir)
                        .and_then(|()| std::fs::write(&failure, &message))
                    {
                        tracing::warn!(bundle = %dir.rel, "writing {}: {e}", failure.display());
                    }
                }
            }
        }
    }

    fn fetch_one(&self, resource: &RemoteResource, remote_dir: &Path) -> Result<(), String> {
        let dest = remote_dir.join(resource.local_name());
        match resource {
            RemoteResource::File { url } => {
                let bytes = self.http.fetch_file(url).map_err(|e| e.to_string())?;
                std::fs::create_dir_all(remote_dir).map_err(|e| e.to_string())?;
                std::fs::write(&dest, bytes).map_err(|e| e.to_string())
            }
            RemoteResource::Git {
                repo, reference, ..
            } => self
                .checkout(repo, reference.as_deref(), &dest)
                .map_err(|e| e.to_string()),
        }
    }

    /// Writes the tree of `repo` at `reference` (default branch when none) into `dest`.
    fn checkout(&self, repo: &str, reference: Option<&str>, dest: &Path) -> Result<(), GitError> {
        let access = if same_host(repo, &self.access.url) {
            Access {
                url: repo.to_string(),
                ..self.access.clone()
            }
        } else {
            Access::public(repo)
        };
        let mirror = self.mirrors.mirror(repo)?;
        let commit = match reference {
            Some(reference) => mirror.resolve(&access, &Wanted::Revision(reference.into()))?,
            None => mirror
                .ls_remote(&access, &["HEAD".to_string()])?
                .into_iter()
                .next()
                .map(|(_, id)| id)
                .ok_or_else(|| GitError::NoSuchRef {
                    url: repo.to_string(),
                    reference: "HEAD".into(),
                })?,
        };
        let wanted = Wanted::Revision(commit.clone());
        mirror.fetch(&access, &wanted, &commit, self.max_fetch_bytes)?;
        extract(&mirror, &commit, dest, self.limits)?;
        Ok(())
    }
}

/// Whether two Git URLs name the same host (so the same credentials apply).
fn same_host(a: &str, b: &str) -> bool {
    fn host(url: &str) -> Option<&str> {
        let rest = match url.split_once("://") {
            Some((_, rest)) => rest,
            None => url.split_once('@').map_or(url, |(_, rest)| rest),
        };
        let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        rest.split(['/', ':']).next().filter(|h| !h.is_empty())
    }
    host(a).is_some_and(|h| Some(h) == host(b))
}

#[cfg(test)]
mod tests {
    use super::same_host;

    #[test]
    fn hosts_compare_across_url_forms() {
        assert!(same_host(
            "https://github.com/org/base.git",
            "https://user@github.com/org/app"
        ));
        assert!(same_host(
            "git@github.com:org/base.git",
            "ssh://git@github.com/org/app.git"
        ));
        assert!(!same_host(
            "https://gitlab.com/org/base",
            "https://github.com/org/app"
        ));
    }
}
