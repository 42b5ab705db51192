//! Git with gix: what a branch or tag points to on the remote (a ref advertisement only,
//! the cheap poll), and a shallow checkout of a commit.

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// Errors talking to a Git remote.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The remote could not be reached or refused us.
    #[error("{url}: {message}")]
    Remote {
        /// The repository URL.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The branch or tag does not exist on the remote.
    #[error("{url}: no branch or tag `{reference}`")]
    NoSuchRef {
        /// The repository URL.
        url: String,
        /// What was asked for.
        reference: String,
    },
}

fn remote(url: &str, error: impl std::fmt::Display) -> GitError {
    GitError::Remote {
        url: url.to_string(),
        message: error.to_string(),
    }
}

/// Every ref the remote advertises, with the commit it points to (tags peeled).
pub fn ls_remote(url: &str) -> Result<Vec<(String, String)>, GitError> {
    let scratch = tempfile::tempdir().map_err(|e| remote(url, e))?;
    let repo = gix::init_bare(scratch.path()).map_err(|e| remote(url, e))?;
    // Without refspecs the remote would advertise tags only.
    let remote_handle = repo
        .remote_at(url)
        .map_err(|e| remote(url, e))?
        .with_refspecs(
            [
                "+refs/heads/*:refs/remotes/origin/*",
                "+refs/tags/*:refs/tags/*",
            ],
            gix::remote::Direction::Fetch,
        )
        .map_err(|e| remote(url, e))?;
    let connection = remote_handle
        .connect(gix::remote::Direction::Fetch)
        .map_err(|e| remote(url, e))?;
    let (ref_map, _) = connection
        .ref_map(gix::progress::Discard, Default::default())
        .map_err(|e| remote(url, e))?;
    let mut refs = Vec::new();
    for advertised in ref_map.remote_refs {
        let (name, target, peeled) = advertised.unpack();
        let Some(id) = peeled.or(target) else {
            continue;
        };
        refs.push((name.to_string(), id.to_string()));
    }
    Ok(refs)
}

/// The commit `reference` (a branch, a tag, or a full name) points to on the remote.
pub fn resolve(url: &str, reference: &str) -> Result<String, GitError> {
    let refs = ls_remote(url)?;
    let wanted = [
        reference.to_string(),
        format!("refs/heads/{reference}"),
        format!("refs/tags/{reference}"),
    ];
    wanted
        .iter()
        .find_map(|w| refs.iter().find(|(name, _)| name == w))
        .map(|(_, id)| id.clone())
        .ok_or_else(|| GitError::NoSuchRef {
            url: url.to_string(),
            reference: reference.to_string(),
        })
}

/// Clones `reference` of `url` into the empty directory `dir` (depth 1) and checks out its
/// tree. Returns the commit checked out.
pub fn checkout(url: &str, reference: &str, dir: &Path) -> Result<String, GitError> {
    let interrupt = AtomicBool::new(false);
    let depth = NonZeroU32::new(1).ok_or_else(|| remote(url, "depth"))?;
    let mut prepare = gix::prepare_clone(url, dir)
        .map_err(|e| remote(url, e))?
        .with_shallow(gix::remote::fetch::Shallow::DepthAtRemote(depth))
        .with_ref_name(Some(reference))
        .map_err(|e| remote(url, e))?;
    let (mut checkout, _) = prepare
        .fetch_then_checkout(gix::progress::Discard, &interrupt)
        .map_err(|e| remote(url, e))?;
    let (repo, _) = checkout
        .main_worktree(gix::progress::Discard, &interrupt)
        .map_err(|e| remote(url, e))?;
    let head = repo.head_id().map_err(|e| remote(url, e))?;
    Ok(head.to_string())
}
