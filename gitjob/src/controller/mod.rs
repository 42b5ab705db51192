//! The GitRepo controller: a kube-runtime Controller that polls each GitRepo's repository
//! cheaply, syncs a commit into Bundles when it moved (or when a webhook, a spec change or
//! `forceSyncGeneration` asks), and writes Fleet's status.

pub mod credentials;
mod poll;
mod render_slots;
pub mod schedule;
pub mod status;
mod sync;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_api::labels::{COMMIT_LABEL, REPO_NAME_LABEL};
use fleet_api::{Bundle, GitRepo, GitRepoStatus};
use fleet_charts::Egress;
use fleet_objects::client::patch_params;
use futures::StreamExt;
use kube::api::Patch;
use kube::runtime::controller::{Action, Config as ControllerConfig};
use kube::runtime::{reflector, watcher, Controller, WatchStreamExt};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::git::{Limits, MirrorCache, Wanted};
use crate::metrics::Metrics;
use fleet_charts::ChartCache;
use fleet_objects::backoff::WatchBackoff;
pub use sync::FIELD_MANAGER;

/// How the controller runs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Where mirrors, checkouts and the chart cache live.
    pub data_dir: PathBuf,
    /// How long a poll answer is shared with other GitRepos on the same ref.
    pub poll_cache: Duration,
    /// Git operations (polls and fetches) at once.
    pub git_concurrency: usize,
    /// Commits rendered at once (each on as many threads as there are cores); one
    /// namespace's GitRepos take at most half of these turns.
    pub render_concurrency: usize,
    /// How long one commit's renders may run in all before they are stopped and its
    /// bundles marked broken (each chart also stops on its own at a minute).
    pub sync_render_budget: Duration,
    /// GitRepos reconciled at once.
    pub reconcile_concurrency: u16,
    /// The most a fetch may transfer.
    pub max_fetch_bytes: u64,
    /// Bounds on a checkout.
    pub limits: Limits,
    /// Accept any SSH host key.
    pub skip_host_key_check: bool,
    /// The shard handled: GitRepos labelled `fleet.cattle.io/shard-ref` with it, or, when
    /// none, GitRepos without that label.
    pub shard: Option<String>,
    /// Where repositories, remote resources and charts may be fetched from: by default not
    /// from this machine (its paths, loopback or link-local addresses), which a GitRepo's
    /// author could otherwise read through gitjob.
    pub egress: Egress,
}

impl Settings {
    /// Defaults, keeping data under `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            poll_cache: Duration::from_secs(5),
            git_concurrency: 8,
            render_concurrency: 4,
            sync_render_budget: Duration::from_secs(120),
            reconcile_concurrency: 64,
            max_fetch_bytes: 1 << 30,
            limits: Limits::default(),
            skip_host_key_check: false,
            shard: None,
            egress: Egress::Public,
        }
    }

    /// Defaults for a fleet on one machine with its repositories (`fleet up`, `fleet
    /// local`, tests): local paths and loopback addresses are fetched too.
    pub fn on_this_machine(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            egress: Egress::Anywhere,
            ..Self::new(data_dir)
        }
    }
}

/// Errors that make a reconcile retry with backoff.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The API server refused or failed a request.
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

/// What a GitRepo was last synced to, remembered here because the watch may deliver our own
/// status write after the next reconcile starts. The uid tells a GitRepo deleted and made
/// again under the same name from the one synced before; the versions of its Helm
/// credentials' Secrets tell a rotated password, with which the same commit renders again.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SyncedTo {
    uid: Option<String>,
    commit: String,
    generation: Option<i64>,
    force: Option<i64>,
    helm_secrets: Option<String>,
}

/// The controller's shared state.
pub struct Gitjob {
    client: kube::Client,
    settings: Settings,
    mirrors: Arc<MirrorCache>,
    charts: ChartCache,
    metrics: Arc<Metrics>,
    git_slots: Arc<tokio::sync::Semaphore>,
    render_slots: render_slots::RenderSlots,
    polls: poll::PollCache,
    synced: Mutex<HashMap<String, SyncedTo>>,
    webhooks_polled: Mutex<HashMap<String, String>>,
    failures: Mutex<HashMap<String, u32>>,
    bundles: reflector::Store<Bundle>,
    bundle_writer: Mutex<Option<reflector::store::Writer<Bundle>>>,
}

/// Makes `dir` (mirrors of private repositories, their checkouts, charts) readable by this
/// user alone; what is made inside is then out of other users' reach, whatever its mode.
fn keep_private(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let private = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)));
    if let Err(error) = private {
        tracing::warn!(dir = %dir.display(), %error, "could not make gitjob's data directory private");
    }
}

impl Gitjob {
    /// The controller's state for `client`.
    pub fn new(client: kube::Client, settings: Settings, metrics: Arc<Metrics>) -> Arc<Self> {
        let git_slots = Arc::new(tokio::sync::Semaphore::new(settings.git_concurrency.max(1)));
        let (bundles, bundle_writer) = reflector::store();
        Arc::new(Self {
            bundles,
            bundle_writer: Mutex::new(Some(bundle_writer)),
            mirrors: Arc::new(
                MirrorCache::new(settings.data_dir.join("mirrors")).with_egress(settings.egress),
            ),
            charts: ChartCache::new(settings.data_dir.join("charts")).with_egress(settings.egress),
            polls: poll::PollCache::new(settings.poll_cache, git_slots.clone()),
            git_slots,
            render_slots: render_slots::RenderSlots::new(settings.render_concurrency),
            // Nothing here reads managedFields.
            client: fleet_objects::client::omitting_managed_fields(&client),
            settings,
            metrics,
            synced: Mutex::default(),
            webhooks_polled: Mutex::default(),
            failures: Mutex::default(),
        })
    }

    /// Runs the controller until `shutdown` resolves.
    pub async fn run(
        self: Arc<Self>,
        shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    ) {
        keep_private(&self.settings.data_dir);
        let gitrepos: Api<GitRepo> = Api::all(self.client.clone());
        let bundles: Api<Bundle> = Api::all(self.client.clone());
        // Bundle status changes come in bursts as agents report: one reconcile takes them
        // all. Short, because a webhook's mark reaches the controller the same way.
        let config = ControllerConfig::default()
            .concurrency(self.settings.reconcile_concurrency)
            .debounce(Duration::from_millis(100));
        let writer = self.bundle_writer.lock().ok().and_then(|mut w| w.take());
        if let Some(writer) = writer {
            let watch = watcher(
                bundles.clone(),
                watcher::Config::default().labels(REPO_NAME_LABEL),
            );
            let mirror = reflector::reflector(writer, watch)
                .backoff(WatchBackoff::default())
                .touched_objects();
            tokio::spawn(mirror.for_each(|_| async {}));
        }
        let shard = fleet_objects::selector::shard(self.settings.shard.as_deref());
        let shutdown = futures::FutureExt::shared(shutdown);
        // HelmOps are sources of bundles too, fetched with the same chart cache and rule.
        let helmops =
            crate::helmops::run(self.client.clone(), self.charts.clone(), shutdown.clone());
        let gitrepos = Controller::new(gitrepos, watcher::Config::default().labels(&shard))
            .owns(bundles, watcher::Config::default().labels(REPO_NAME_LABEL))
            .with_config(config)
            .trigger_backoff(WatchBackoff::default())
            .graceful_shutdown_on(shutdown)
            .run(reconcile, error_policy, self)
            .for_each(|result| async move {
                if let Err(error) = result {
                    tracing::debug!(%error, "reconcile");
                }
            });
        futures::join!(gitrepos, helmops);
    }

    fn failures(&self, key: &str, failed: bool) -> u32 {
        let Ok(mut failures) = self.failures.lock() else {
            return 1;
        };
        if failed {
            let count = failures.entry(key.to_string()).or_default();
            *count += 1;
            *count
        } else {
            failures.remove(key);
            0
        }
    }

    /// Whether a webhook commit still wants a fresh poll (once per webhook commit).
    fn webhook_wants_poll(&self, key: &str, status: &GitRepoStatus) -> bool {
        let Some(webhook) = status.webhook_commit.as_ref() else {
            return false;
        };
        if status.commit.as_ref() == Some(webhook) {
            return false;
        }
        let Ok(mut polled) = self.webhooks_polled.lock() else {
            return true;
        };
        polled.insert(key.to_string(), webhook.clone()).as_ref() != Some(webhook)
    }

    fn synced_to(&self, key: &str) -> Option<SyncedTo> {
        self.synced.lock().ok()?.get(key).cloned()
    }

    fn remember(&self, key: &str, synced: SyncedTo) {
        if let Ok(mut map) = self.synced.lock() {
            map.insert(key.to_string(), synced);
        }
    }
}

fn error_policy(gitrepo: Arc<GitRepo>, error: &ReconcileError, ctx: Arc<Gitjob>) -> Action {
    let key = format!(
        "{}/{}",
        gitrepo.namespace().unwrap_or_default(),
        gitrepo.name_any()
    );
    let failures = ctx.failures(&key, true);
    // The API server failed (restarting, say): come back soon, not at the poll period.
    let wait = schedule::api_backoff(failures);
    tracing::warn!(gitrepo = %key, %error, retry_in = ?wait, "reconcile failed");
    Action::requeue(wait)
}

/// The branch or revision a GitRepo deploys (`master` when it names neither, as Fleet).
fn wanted(gitrepo: &GitRepo) -> Wanted {
    let spec = &gitrepo.spec;
    match spec.revision.as_deref().filter(|r| !r.is_empty()) {
        Some(revision) => Wanted::Revision(revision.to_string()),
        None => Wanted::Branch(
            spec.branch
                .clone()
                .filter(|b| !b.is_empty())
                .unwrap_or_else(|| "master".into()),
        ),
    }
}

async fn reconcile(gitrepo: Arc<GitRepo>, ctx: Arc<Gitjob>) -> Result<Action, ReconcileError> {
    if gitrepo.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = gitrepo.namespace().unwrap_or_default();
    let key = format!("{namespace}/{}", gitrepo.name_any());
    let old = gitrepo.status.clone().unwrap_or_default();
    let period = schedule::poll_period(
        gitrepo.spec.polling_interval.as_deref(),
        old.webhook_commit.is_some(),
    );
    let next_poll = if gitrepo.spec.disable_polling {
        Action::await_change()
    } else {
        Action::requeue(schedule::jittered(period))
    };
    let mut outcome = status::Outcome::default();
    let mut new = old.clone();
    if gitrepo.spec.paused {
        outcome.paused = true;
        write_status(&ctx, &gitrepo, &old, new, &outcome).await?;
        return Ok(next_poll);
    }
    let gitrepo = match admitted(&ctx.client, &gitrepo).await? {
        Ok(admitted) => admitted,
        Err(refusal) => {
            // Told once in a Warning event, as Fleet tells it, not at every retry.
            let told = (old.conditions.iter())
                .any(|c| c.type_ == "Accepted" && c.message.as_deref() == Some(refusal.as_str()));
            if !told {
                fleet_objects::events::record(
                    &ctx.client,
                    gitrepo.as_ref(),
                    "gitjob",
                    fleet_objects::events::EventType::Warning,
                    "PolicyViolation",
                    &refusal,
                )
                .await;
            }
            outcome.refused = Some(refusal);
            write_status(&ctx, &gitrepo, &old, new, &outcome).await?;
            return Ok(Action::requeue(period));
        }
    };
    match poll_and_sync(&ctx, &gitrepo, &key, period, &old, &mut new, &mut outcome).await {
        Ok(()) => {
            ctx.failures(&key, false);
            write_status(&ctx, &gitrepo, &old, new, &outcome).await?;
            Ok(next_poll)
        }
        Err(StepError::Git(message)) => {
            let failures = ctx.failures(&key, true);
            let wait = schedule::backoff(failures, period);
            outcome.git_error = Some(format!("{message} (retrying in {}s)", wait.as_secs()));
            write_status(&ctx, &gitrepo, &old, new, &outcome).await?;
            Ok(Action::requeue(wait))
        }
        Err(StepError::Kube(error)) => Err(error.into()),
    }
}

/// `gitrepo` as the Policies and GitRepoRestrictions of its namespace admit it, with
/// their defaults (service account, client secret) filled in; or why they refuse it.
async fn admitted(
    client: &kube::Client,
    gitrepo: &GitRepo,
) -> Result<Result<GitRepo, String>, ReconcileError> {
    let namespace = gitrepo.namespace().unwrap_or_default();
    let policies = kube::Api::<fleet_api::Policy>::namespaced(client.clone(), &namespace)
        .list(&Default::default())
        .await?;
    let restrictions =
        kube::Api::<fleet_api::GitRepoRestriction>::namespaced(client.clone(), &namespace)
            .list(&Default::default())
            .await?;
    let restrictions = fleet_objects::policy::Restrictions::combine(&restrictions.items);
    let admitted = fleet_objects::policy::Policies::combine(&policies.items)
        .and_then(|policies| policies.admit_git_repo(&gitrepo.spec, &restrictions))
        .map(|spec| GitRepo {
            spec,
            ..gitrepo.clone()
        });
    Ok(admitted)
}

enum StepError {
    /// The repository could not be read: said in status, retried with backoff.
    Git(String),
    /// The API server failed: retried by the error policy.
    Kube(kube::Error),
}

async fn poll_and_sync(
    ctx: &Arc<Gitjob>,
    gitrepo: &GitRepo,
    key: &str,
    period: Duration,
    old: &GitRepoStatus,
    new: &mut GitRepoStatus,
    outcome: &mut status::Outcome,
) -> Result<(), StepError> {
    let access = credentials::access_for(&ctx.client, gitrepo, ctx.settings.skip_host_key_check)
        .await
        .map_err(|e| match e {
            credentials::AccessError::Read { source, .. } if !is_not_found(&source) => {
                StepError::Kube(source)
            }
            other => StepError::Git(other.to_string()),
        })?;
    let wanted = wanted(gitrepo);
    let webhook_pending = ctx.webhook_wants_poll(key, old);
    let resolved = ctx
        .polls
        .resolve(&ctx.mirrors, &access, &wanted, webhook_pending, period)
        .await;
    new.last_polling_triggered = Some(jiff::Timestamp::now().to_string());
    let commit = match resolved {
        Ok((commit, asked)) => {
            if asked {
                ctx.metrics.poll(true);
            }
            commit
        }
        Err(error) => {
            ctx.metrics.poll(false);
            return Err(StepError::Git(error.to_string()));
        }
    };
    let helm_secrets = credentials::helm_secrets_version(&ctx.client, gitrepo)
        .await
        .map_err(StepError::Kube)?;
    let target = SyncedTo {
        uid: gitrepo.metadata.uid.clone(),
        commit: commit.clone(),
        generation: gitrepo.metadata.generation,
        force: gitrepo.spec.force_sync_generation,
        helm_secrets,
    };
    // The status cannot tell which credentials rendered it: what this process remembers
    // can, and after a restart the status is taken to have rendered with today's.
    let remembered = ctx.synced_to(key);
    let from_status = SyncedTo {
        uid: gitrepo.metadata.uid.clone(),
        commit: old.commit.clone().unwrap_or_default(),
        generation: old.observed_generation,
        force: old.update_generation,
        helm_secrets: (remembered.as_ref())
            .map_or(target.helm_secrets.clone(), |r| r.helm_secrets.clone()),
    };
    let already = remembered.as_ref().is_some_and(|s| *s == target) || from_status == target;
    if already {
        if remembered.is_none() {
            ctx.remember(key, target.clone());
        }
        // The status says what is synced, even if an earlier write of it failed.
        outcome.broken_bundles = old.resource_errors.clone();
        new.commit = Some(target.commit);
        new.observed_generation = target.generation;
        new.update_generation = target.force;
        return Ok(());
    }
    let auth = if fleet_charts::RepoHelmAuth::named_by(gitrepo) {
        fleet_charts::RepoHelmAuth::read(&ctx.client, gitrepo)
            .await
            .map_err(|e| StepError::Git(format!("Helm credentials: {e}")))?
    } else {
        fleet_charts::RepoHelmAuth::default()
    };
    let rendered = sync::render_commit(ctx, gitrepo, &access, &wanted, &commit, &auth)
        .await
        .map_err(|e| StepError::Git(e.to_string()))?;
    let synced = sync::write_bundles(&ctx.client, gitrepo, rendered)
        .await
        .map_err(|ReconcileError::Kube(e)| StepError::Kube(e))?;
    tracing::info!(
        gitrepo = %key,
        commit = %commit,
        written = synced.written,
        deleted = synced.deleted,
        broken = synced.broken.len(),
        "synced"
    );
    outcome.synced_bundles = Some(synced.written);
    outcome.broken_bundles = synced.broken;
    if old.commit.as_deref() != Some(commit.as_str()) {
        // As Fleet's gitjob: the commit itself is the message.
        fleet_objects::events::record(
            &ctx.client,
            gitrepo,
            "gitjob",
            fleet_objects::events::EventType::Normal,
            "GotNewCommit",
            &commit,
        )
        .await;
    }
    new.commit = Some(commit);
    new.observed_generation = target.generation;
    new.update_generation = target.force;
    ctx.remember(key, target);
    Ok(())
}

fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(response) if response.code == 404)
}

/// Status is written when it changed, and at least every five minutes so that
/// `lastPollingTriggered` shows polling is alive without a write per poll.
async fn write_status(
    ctx: &Gitjob,
    gitrepo: &GitRepo,
    old: &GitRepoStatus,
    mut new: GitRepoStatus,
    outcome: &status::Outcome,
) -> Result<(), ReconcileError> {
    let now = jiff::Timestamp::now();
    let namespace = gitrepo.namespace().unwrap_or_default();
    let name = gitrepo.name_any();
    let bundles = ctx.bundles.state();
    let owned = bundles
        .iter()
        .map(|b| &**b)
        .filter(|b| b.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|b| b.labels().get(REPO_NAME_LABEL) == Some(&name));
    let commit = new.commit.clone().unwrap_or_default();
    let mut at_commit = 0;
    let summary = owned
        .inspect(|b| {
            if b.labels().get(COMMIT_LABEL) == Some(&commit) {
                at_commit += 1;
            }
        })
        .filter_map(|b| b.status.as_ref()?.summary.as_ref())
        .sum();
    let mut outcome = outcome.clone();
    outcome.synced_bundles.get_or_insert(at_commit);
    status::apply_outcome(&mut new, &outcome, summary, &now.to_string());
    let stale = old
        .last_polling_triggered
        .as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .is_none_or(|t| now.duration_since(t).as_secs() >= 300);
    if !status::differs(old, &new) && !stale {
        return Ok(());
    }
    let api: Api<GitRepo> = Api::namespaced(ctx.client.clone(), &namespace);
    let (before, after) = (
        serde_json::to_value(old).unwrap_or_default(),
        serde_json::to_value(&new).unwrap_or_default(),
    );
    let patch = json!({ "status": status::merge_patch(&before, &after) });
    api.patch_status(&name, &patch_params(FIELD_MANAGER), &Patch::Merge(&patch))
        .await?;
    Ok(())
}
