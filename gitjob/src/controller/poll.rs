//! The cheap poll, shared: GitRepos that follow the same branch of the same URL with the
//! same access share one ref advertisement per short period, and wait for one another
//! instead of asking the remote at the same moment.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::git::{Access, GitError, MirrorCache, Wanted};

type Slot = Arc<tokio::sync::Mutex<Option<(String, Instant)>>>;

/// Recent answers of the remote, by URL, wanted ref and access.
pub(super) struct PollCache {
    fresh_for: Duration,
    slots: Mutex<HashMap<u64, Slot>>,
    git_slots: Arc<tokio::sync::Semaphore>,
}

impl PollCache {
    /// A cache whose answers stay fresh for `fresh_for`; at most `concurrency` Git
    /// operations (polls and fetches together, through `git_slots`) run at once.
    pub(super) fn new(fresh_for: Duration, git_slots: Arc<tokio::sync::Semaphore>) -> Self {
        Self {
            fresh_for,
            slots: Mutex::default(),
            git_slots,
        }
    }

    /// The commit `wanted` points to; asks the remote unless an answer younger than the
    /// freshness period and than `period` (the asking GitRepo's poll period: a GitRepo
    /// polling every second must not be handed an answer five seconds old) exists and
    /// `fresh` is false. Returns whether the remote was asked.
    pub(super) async fn resolve(
        &self,
        mirrors: &Arc<MirrorCache>,
        access: &Access,
        wanted: &Wanted,
        fresh: bool,
        period: Duration,
    ) -> Result<(String, bool), GitError> {
        let key = {
            let mut hasher = DefaultHasher::new();
            (access, wanted).hash(&mut hasher);
            hasher.finish()
        };
        let slot = {
            let mut slots = self
                .slots
                .lock()
                .map_err(|_| GitError::remote(&access.url, "poll cache lock poisoned"))?;
            slots.entry(key).or_default().clone()
        };
        let mut answer = slot.lock().await;
        if let Some((commit, at)) = answer.as_ref() {
            if !fresh && at.elapsed() < self.fresh_for.min(period) {
                return Ok((commit.clone(), false));
            }
        }
        let _permit = self
            .git_slots
            .acquire()
            .await
            .map_err(|_| GitError::remote(&access.url, "shutting down"))?;
        let (mirrors, access_owned, wanted_owned) =
            (mirrors.clone(), access.clone(), wanted.clone());
        let commit = tokio::task::spawn_blocking(move || {
            mirrors
                .mirror(&access_owned.url)?
                .resolve(&access_owned, &wanted_owned)
        })
        .await
        .map_err(|e| GitError::remote(&access.url, e))??;
        *answer = Some((commit.clone(), Instant::now()));
        Ok((commit, true))
    }
}
