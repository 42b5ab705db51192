//! One commit of one GitRepo into Bundle objects: fetch, check out, render, then write the
//! Bundles that rendered, delete the ones whose directory left the repository, and mark
//! the broken ones, leaving their last good version in place.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleet_api::labels::REPO_NAME_LABEL;
use fleet_api::{Bundle, GitRepo};
use fleet_objects::client::patch_params;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use super::{Gitjob, ReconcileError};
use crate::bundles::{self, CommitBundles};
use crate::git::{self, Access, GitError, Wanted};
use crate::remote_bases;

/// The field manager of gitjob's writes.
pub const FIELD_MANAGER: &str = "fleet-gitjob";

/// What a sync wrote.
#[derive(Debug)]
pub(super) struct Synced {
    /// Bundles written.
    pub written: usize,
    /// Bundles deleted because their directory is gone.
    pub deleted: usize,
    /// Broken bundles, as `name: message`.
    pub broken: Vec<String>,
}

/// Why a sync stopped before writing anything.
#[derive(Debug, thiserror::Error)]
pub(super) enum SyncError {
    /// Fetching or checking out failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// The bundles could not be found (a `paths` entry is missing, say).
    #[error(transparent)]
    Render(#[from] fleet_renderer::RenderError),
    /// The blocking task failed.
    #[error("sync task: {0}")]
    Task(String),
}

/// Fetches `commit` on a Git slot, then renders the GitRepo's Bundles from it on a render
/// turn (blocking work both). The renders are cancelled, and the turn freed as they stop,
/// when the GitRepo is deleted or replaced meanwhile, when this future is dropped, or when
/// they have run for the sync's render budget: a repository whose charts loop costs others
/// that budget at most, once per commit.
pub(super) async fn render_commit(
    ctx: &Arc<Gitjob>,
    gitrepo: &GitRepo,
    access: &Access,
    wanted: &Wanted,
    commit: &str,
    auth: &fleet_charts::RepoHelmAuth,
) -> Result<CommitBundles, SyncError> {
    let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    tokio::spawn(cancel_when_removed(
        ctx.client.clone(),
        gitrepo.clone(),
        cancel.0.clone(),
    ));
    let checkout = check_out(ctx, gitrepo, access, wanted, commit).await?;
    let namespace = gitrepo.namespace().unwrap_or_default();
    let turn = (ctx.render_slots.turn(&namespace).await)
        .ok_or_else(|| SyncError::Task("the render slots are closed".into()))?;
    let budget = ctx.settings.sync_render_budget;
    let spent = Arc::new(AtomicBool::new(false));
    let timer = AbortOnDrop(tokio::spawn(stop_after(
        budget,
        cancel.0.clone(),
        spent.clone(),
    )));
    let (ctx, gitrepo, commit, auth, cancel_renders) = (
        ctx.clone(),
        gitrepo.clone(),
        commit.to_string(),
        auth.clone(),
        cancel.0.clone(),
    );
    let mut rendered = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        let started = Instant::now();
        let result = bundles::for_commit(
            &gitrepo,
            &checkout.path().join("tree"),
            &commit,
            &ctx.charts,
            &auth,
            &cancel_renders,
        );
        let ok = result.as_ref().is_ok_and(|b| b.failures.is_empty());
        ctx.metrics.sync(ok, started.elapsed().as_secs_f64());
        result
    })
    .await
    .map_err(|e| SyncError::Task(e.to_string()))??;
    drop(timer);
    if spent.load(Ordering::Relaxed) {
        for failure in rendered.failures.values_mut() {
            failure.message = format!(
                "{} (this commit's renders were stopped after their budget of {} s)",
                failure.message,
                budget.as_secs()
            );
        }
    }
    Ok(rendered)
}

/// Fetches `commit` and checks it out under `tree` in a scratch directory, on a Git slot,
/// with the remote Kustomize bases its bundles name.
async fn check_out(
    ctx: &Arc<Gitjob>,
    gitrepo: &GitRepo,
    access: &Access,
    wanted: &Wanted,
    commit: &str,
) -> Result<tempfile::TempDir, SyncError> {
    let permit = ctx
        .git_slots
        .clone()
        .acquire_owned()
        .await
        .map_err(|e| SyncError::Task(e.to_string()))?;
    let (ctx, gitrepo, access, wanted, commit) = (
        ctx.clone(),
        gitrepo.clone(),
        access.clone(),
        wanted.clone(),
        commit.to_string(),
    );
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mirror = ctx.mirrors.mirror(&access.url)?;
        mirror.fetch(&access, &wanted, &commit, ctx.settings.max_fetch_bytes)?;
        ctx.metrics.fetch();
        let work = ctx.settings.data_dir.join("work");
        std::fs::create_dir_all(&work).map_err(|e| GitError::local(&work, e))?;
        let scratch = tempfile::Builder::new()
            .prefix("checkout-")
            .tempdir_in(&work)
            .map_err(|e| GitError::local(&work, e))?;
        let tree = scratch.path().join("tree");
        let extracted = git::checkout(
            &ctx.mirrors,
            &access,
            &commit,
            &tree,
            ctx.settings.limits,
            ctx.settings.max_fetch_bytes,
        )?;
        for skipped in &extracted.skipped {
            tracing::warn!(gitrepo = %gitrepo.name_any(), "{skipped}");
        }
        let fetcher = remote_bases::Fetcher {
            mirrors: &ctx.mirrors,
            access: &access,
            http: &ctx.charts,
            limits: ctx.settings.limits,
            max_fetch_bytes: ctx.settings.max_fetch_bytes,
        };
        fetcher.fetch_all(&gitrepo, &tree);
        Ok(scratch)
    })
    .await
    .map_err(|e| SyncError::Task(e.to_string()))?
}

/// Sets `cancel` and `spent` once `budget` has passed.
async fn stop_after(budget: Duration, cancel: Arc<AtomicBool>, spent: Arc<AtomicBool>) {
    tokio::time::sleep(budget).await;
    spent.store(true, Ordering::Relaxed);
    cancel.store(true, Ordering::Relaxed);
}

/// Aborts its task when dropped: a timer whose sync has ended.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Sets its flag when dropped: the renders it stands for are no longer wanted.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// How often a sync in progress looks whether its GitRepo is still there.
const REMOVAL_CHECK: Duration = Duration::from_secs(1);

/// Sets `cancel` once `gitrepo` is deleted, being deleted, or replaced by another of its
/// name; returns when `cancel` is set (by this or by the sync ending).
async fn cancel_when_removed(client: kube::Client, gitrepo: GitRepo, cancel: Arc<AtomicBool>) {
    let api: Api<GitRepo> = Api::namespaced(client, &gitrepo.namespace().unwrap_or_default());
    let (name, uid) = (gitrepo.name_any(), gitrepo.uid());
    while !cancel.load(Ordering::Relaxed) {
        tokio::time::sleep(REMOVAL_CHECK).await;
        let removed = match api.get_opt(&name).await {
            Ok(Some(now)) => now.uid() != uid || now.metadata.deletion_timestamp.is_some(),
            Ok(None) => true,
            // Unknown: the sync goes on, and the next look may know.
            Err(_) => false,
        };
        if removed {
            tracing::info!(gitrepo = %name, "the GitRepo is gone: its renders are cancelled");
            cancel.store(true, Ordering::Relaxed);
        }
    }
}

/// Writes what `render_commit` produced: every good Bundle by server-side apply, broken
/// ones marked in their status, Bundles of vanished directories deleted.
pub(super) async fn write_bundles(
    client: &kube::Client,
    gitrepo: &GitRepo,
    rendered: CommitBundles,
) -> Result<Synced, ReconcileError> {
    let namespace = gitrepo.namespace().unwrap_or_default();
    let name = gitrepo.name_any();
    let api: Api<Bundle> = Api::namespaced(client.clone(), &namespace);
    let owner = owner_reference(gitrepo);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut keep: BTreeSet<String> = rendered.failures.keys().cloned().collect();
    let written = rendered.bundles.len();
    let bundles: Vec<Bundle> = rendered
        .bundles
        .into_iter()
        .map(|mut bundle| {
            keep.insert(bundle.name_any());
            bundle.metadata.owner_references = owner.clone().map(|o| vec![o]);
            bundle.metadata.managed_fields = None;
            bundle
        })
        .collect();
    futures::stream::iter(bundles)
        .map(|bundle| {
            let (api, params) = (&api, &params);
            async move {
                let applied = api
                    .patch(&bundle.name_any(), params, &Patch::Apply(&bundle))
                    .await?;
                clear_render_failure(api, &applied).await
            }
        })
        .buffer_unordered(8)
        .try_collect::<Vec<()>>()
        .await?;
    let mut broken = Vec::new();
    for (bundle_name, failure) in &rendered.failures {
        broken.push(format!("{bundle_name}: {}", failure.message));
        mark_render_failure(&api, bundle_name, &failure.message).await?;
    }
    let mut deleted = 0;
    let selector = format!("{REPO_NAME_LABEL}={name}");
    for existing in api.list(&ListParams::default().labels(&selector)).await? {
        let existing_name = existing.name_any();
        if !keep.contains(&existing_name) {
            api.delete(&existing_name, &DeleteParams::background())
                .await?;
            deleted += 1;
        }
    }
    Ok(Synced {
        written,
        deleted,
        broken,
    })
}

fn owner_reference(gitrepo: &GitRepo) -> Option<OwnerReference> {
    let mut owner = gitrepo.controller_owner_ref(&())?;
    owner.block_owner_deletion = Some(true);
    Some(owner)
}

/// Puts a `Ready=False, RenderFailed` condition on an existing Bundle; a Bundle that does
/// not exist yet stays absent.
async fn mark_render_failure(api: &Api<Bundle>, name: &str, message: &str) -> kube::Result<()> {
    let Some(bundle) = api.get_opt(name).await? else {
        return Ok(());
    };
    let now = jiff::Timestamp::now().to_string();
    let mut conditions = bundle.status.map(|s| s.conditions).unwrap_or_default();
    fleet_objects::conditions::set_condition(
        &mut conditions,
        "Ready",
        false,
        "RenderFailed",
        message,
        &now,
    );
    let patch = json!({ "status": { "conditions": conditions } });
    api.patch_status(name, &patch_params(FIELD_MANAGER), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Removes a `RenderFailed` condition an earlier commit left on `bundle`.
async fn clear_render_failure(api: &Api<Bundle>, bundle: &Bundle) -> kube::Result<()> {
    let conditions = bundle
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    if !conditions
        .iter()
        .any(|c| c.reason.as_deref() == Some("RenderFailed"))
    {
        return Ok(());
    }
    let kept: Vec<_> = conditions
        .into_iter()
        .filter(|c| c.reason.as_deref() != Some("RenderFailed"))
        .collect();
    let patch = json!({ "status": { "conditions": kept } });
    api.patch_status(
        &bundle.name_any(),
        &patch_params(FIELD_MANAGER),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}
