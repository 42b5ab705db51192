//! A Helm bundle deployed as a Helm release, as Rancher Fleet's agent deploys every
//! bundle: `pre-install` or `pre-upgrade` hooks, the resources, a wait when
//! `helm.timeoutSeconds` is set (Jobs too under `waitForJobs`), `post-install` or
//! `post-upgrade` hooks, then a new revision in Helm's storage, the one before it
//! superseded and the history cut to `helm.maxHistory` (Fleet's default: 2).

use std::time::Duration;

use fleet_api::{BundleDeployment, BundleDeploymentOptions, HelmRelease};
use kube::ResourceExt;
use serde_json::Value;

use crate::deploy::{apply_all, Desired};
use crate::release::{self, NewRevision, Store};
use crate::{hooks, Agent, Error};

/// How often readiness is looked at while `timeoutSeconds` makes the agent wait.
const WAIT_POLL: Duration = Duration::from_millis(500);

/// Installs or upgrades `release` with the objects `desired`; returns the new revision.
/// A failure is recorded as a `failed` revision and returned.
pub(crate) async fn deploy(
    agent: &Agent,
    deployment: &BundleDeployment,
    desired: &[Desired],
    options: &BundleDeploymentOptions,
    release: &HelmRelease,
) -> Result<u64, Error> {
    let helm = options.helm.clone().unwrap_or_default();
    fleet_objects::client::ensure_namespace(&agent.local, &release.namespace).await?;
    let store = Store::new(&agent.local, &release.namespace, &release.name);
    let history = store.history().await?;
    let previous = history.iter().rev().find(|r| r.status == "deployed");
    let install = previous.is_none();
    let version = history.last().map_or(0, |r| r.version) + 1;
    let configured = helm.timeout_seconds.filter(|s| *s > 0);
    let timeout = configured
        .map(|s| Duration::from_secs(s.unsigned_abs()))
        .unwrap_or(hooks::DEFAULT_TIMEOUT);
    let (pre, post) = if install {
        ("pre-install", "post-install")
    } else {
        ("pre-upgrade", "post-upgrade")
    };
    let mut ran = Vec::new();
    let outcome = async {
        hooks::run(agent, release, pre, timeout, &mut ran).await?;
        apply_all(agent, deployment, desired, options, Some(release)).await?;
        if configured.is_some() {
            wait_ready(agent, desired, helm.wait_for_jobs.unwrap_or(false), timeout).await?;
        }
        hooks::run(agent, release, post, timeout, &mut ran).await
    }
    .await;
    let objects: Vec<Value> = desired
        .iter()
        .filter_map(|d| serde_json::to_value(&d.object).ok())
        .collect();
    let description = match &outcome {
        Ok(()) if install => "Install complete".to_string(),
        Ok(()) => "Upgrade complete".to_string(),
        Err(error) => format!("Release \"{}\" failed: {error}", release.name),
    };
    let revision = NewRevision {
        release,
        version,
        status: if outcome.is_ok() {
            "deployed"
        } else {
            "failed"
        },
        description,
        manifest: release::manifest(&objects),
        hooks: hooks::records(release, &ran),
        first_deployed: history
            .first()
            .and_then(|r| r.body.pointer("/info/first_deployed"))
            .and_then(Value::as_str)
            .map(String::from),
        bundle_id: &deployment.name_any(),
        agent_namespace: &agent.namespace,
        service_account: options.service_account.as_deref().unwrap_or_default(),
        keep_resources: options.keep_resources.unwrap_or(false),
    };
    store.create(&revision).await?;
    if outcome.is_ok() {
        for older in history.iter().filter(|r| r.status == "deployed") {
            store.set_status(older, "superseded").await?;
        }
    }
    let max_history = helm
        .max_history
        .and_then(|m| usize::try_from(m).ok())
        .filter(|m| *m > 0)
        .unwrap_or(release::DEFAULT_MAX_HISTORY);
    store.prune(max_history).await?;
    outcome.map(|()| version)
}

/// Waits until every object is ready, as `helm --wait` does (Jobs only when `jobs`).
async fn wait_ready(
    agent: &Agent,
    desired: &[Desired],
    jobs: bool,
    timeout: Duration,
) -> Result<(), Error> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let mut waiting = None;
        for item in desired {
            if item.api.kind == "Job" && !jobs {
                continue;
            }
            let api = agent.api_for(&item.api, item.object.metadata.namespace.as_deref());
            let reason = match api.get_opt(&item.object.name_any()).await? {
                Some(live) => serde_json::to_value(&live)
                    .ok()
                    .and_then(|v| crate::readiness::not_ready(&v)),
                None => Some("missing".into()),
            };
            if let Some(reason) = reason {
                waiting = Some(format!(
                    "{} {}: {reason}",
                    item.api.kind,
                    item.object.name_any()
                ));
                break;
            }
        }
        let Some(waiting) = waiting else {
            return Ok(());
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Timeout(format!(
                "not ready within {} s: {waiting}",
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(WAIT_POLL).await;
    }
}
