//! Chart hooks as Helm runs them: the hooks of one event in order of weight then name,
//! each deleted first when its policy says `before-hook-creation` (the default), created,
//! and waited for when it is a Job or a Pod; the first failure stops the event. Hooks that
//! failed are deleted under `hook-failed`, and once every hook of the event succeeded,
//! those under `hook-succeeded` are deleted.

use std::time::Duration;

use fleet_api::{HelmHook, HelmRelease};
use kube::api::{DeleteParams, DynamicObject};
use kube::ResourceExt;
use serde_json::{json, Value};

use crate::{Agent, Error};

/// Helm's default wait for a hook when `helm.timeoutSeconds` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// `helm.timeoutSeconds`, when set to more than zero.
pub fn configured_timeout(options: &fleet_api::BundleDeploymentOptions) -> Option<Duration> {
    options
        .helm
        .as_ref()
        .and_then(|h| h.timeout_seconds)
        .filter(|s| *s > 0)
        .map(|s| Duration::from_secs(s.unsigned_abs()))
}

/// How long hooks may run: `helm.timeoutSeconds`, else [`DEFAULT_TIMEOUT`].
pub fn timeout(options: &fleet_api::BundleDeploymentOptions) -> Duration {
    configured_timeout(options).unwrap_or(DEFAULT_TIMEOUT)
}

/// How often a hook is looked at while it runs.
const POLL: Duration = Duration::from_millis(250);

/// A hook as the release records it, with how its last run went.
pub struct Ran {
    /// The hook's index in the release.
    pub index: usize,
    /// The record: Helm's `release.Hook`.
    pub record: Value,
}

/// The hooks of `release` for `event`, run in the agent's cluster. Returns each hook run
/// (for the release record), or the first failure as [`Error::Hook`].
pub async fn run(
    agent: &Agent,
    release: &HelmRelease,
    event: &str,
    timeout: Duration,
    ran: &mut Vec<Ran>,
) -> Result<(), Error> {
    let mut due: Vec<(usize, &HelmHook)> = release
        .hooks
        .iter()
        .enumerate()
        .filter(|(_, h)| h.events.iter().any(|e| e == event))
        .collect();
    due.sort_by(|(_, a), (_, b)| (a.weight, name(a)).cmp(&(b.weight, name(b))));
    for (index, hook) in &due {
        let started = jiff::Timestamp::now().to_string();
        let outcome = run_one(agent, release, hook, timeout).await;
        let phase = if outcome.is_ok() {
            "Succeeded"
        } else {
            "Failed"
        };
        let mut record = record(hook);
        record["last_run"] = json!({
            "started_at": started,
            "completed_at": jiff::Timestamp::now().to_string(),
            "phase": phase,
        });
        ran.push(Ran {
            index: *index,
            record,
        });
        if let Err(error) = outcome {
            if has_policy(hook, "hook-failed") {
                delete(agent, release, hook, timeout).await?;
            }
            return Err(Error::Hook(format!(
                "{event} hook {} {}: {error}",
                kind(hook),
                name(hook)
            )));
        }
    }
    for (_, hook) in &due {
        if has_policy(hook, "hook-succeeded") {
            delete(agent, release, hook, timeout).await?;
        }
    }
    Ok(())
}

/// Every hook of `release` in Helm's record form, with the last runs of `ran`.
pub fn records(release: &HelmRelease, ran: &[Ran]) -> Vec<Value> {
    release
        .hooks
        .iter()
        .enumerate()
        .map(|(index, hook)| {
            ran.iter()
                .rev()
                .find(|r| r.index == index)
                .map(|r| r.record.clone())
                .unwrap_or_else(|| record(hook))
        })
        .collect()
}

fn record(hook: &HelmHook) -> Value {
    json!({
        "name": name(hook),
        "kind": kind(hook),
        "path": hook.path,
        "manifest": serde_yaml_ng::to_string(&hook.object).unwrap_or_default(),
        "events": hook.events,
        // Times are left out until it runs: Helm 4 reads them as Go times, and "" is none.
        "last_run": {"phase": ""},
        "weight": hook.weight,
        "delete_policies": hook.delete_policies,
    })
}

fn name(hook: &HelmHook) -> &str {
    hook.object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn kind(hook: &HelmHook) -> &str {
    hook.object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Helm's policy: the ones set, or `before-hook-creation` when none is.
fn has_policy(hook: &HelmHook, policy: &str) -> bool {
    if hook.delete_policies.is_empty() {
        return policy == "before-hook-creation";
    }
    hook.delete_policies.iter().any(|p| p == policy)
}

/// The hook's API and its namespace (the release's when the object names none).
async fn target(
    agent: &Agent,
    release: &HelmRelease,
    hook: &HelmHook,
) -> Result<(kube::Api<DynamicObject>, DynamicObject), Error> {
    let (resource, capabilities) = agent.resolve(&hook.object).await?;
    let mut object: DynamicObject =
        serde_json::from_value(hook.object.clone()).map_err(|e| Error::Invalid(e.to_string()))?;
    let namespaced = matches!(capabilities.scope, kube::discovery::Scope::Namespaced);
    if namespaced && object.metadata.namespace.is_none() {
        object.metadata.namespace = Some(release.namespace.clone());
    }
    let namespace = object.metadata.namespace.clone().filter(|_| namespaced);
    if let Some(namespace) = &namespace {
        agent.ensure_namespace(namespace).await?;
    }
    Ok((agent.api_for(&resource, namespace.as_deref()), object))
}

async fn run_one(
    agent: &Agent,
    release: &HelmRelease,
    hook: &HelmHook,
    timeout: Duration,
) -> Result<(), Error> {
    if has_policy(hook, "before-hook-creation") {
        delete(agent, release, hook, timeout).await?;
    }
    let (api, object) = target(agent, release, hook).await?;
    api.create(&crate::apply::post_params(), &object).await?;
    let kind = kind(hook);
    if kind != "Job" && kind != "Pod" {
        return Ok(());
    }
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let live = api.get(&object.name_any()).await?;
        let live = serde_json::to_value(&live).map_err(|e| Error::Invalid(e.to_string()))?;
        match finished(kind, &live) {
            Some(Ok(())) => return Ok(()),
            Some(Err(reason)) => return Err(Error::Hook(reason)),
            None if tokio::time::Instant::now() >= deadline => {
                return Err(Error::Hook(format!(
                    "not finished within {} s",
                    timeout.as_secs()
                )))
            }
            None => tokio::time::sleep(POLL).await,
        }
    }
}

/// Whether a hook Job or Pod has finished: `Ok` when it succeeded, `Err` saying why not.
fn finished(kind: &str, live: &Value) -> Option<Result<(), String>> {
    if kind == "Pod" {
        return match live.pointer("/status/phase").and_then(Value::as_str) {
            Some("Succeeded") => Some(Ok(())),
            Some("Failed") => Some(Err("pod failed".into())),
            _ => None,
        };
    }
    let conditions = live
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let holds = |kind: &str| {
        conditions
            .iter()
            .find(|c| c["type"] == kind && c["status"] == "True")
    };
    if let Some(failed) = holds("Failed") {
        let reason = failed["reason"].as_str().unwrap_or("job failed");
        let message = failed["message"].as_str().unwrap_or_default();
        return Some(Err(format!("{reason} {message}").trim().to_string()));
    }
    holds("Complete").map(|_| Ok(()))
}

/// Deletes the hook's object if it exists and waits until it is gone.
async fn delete(
    agent: &Agent,
    release: &HelmRelease,
    hook: &HelmHook,
    timeout: Duration,
) -> Result<(), Error> {
    let (api, object) = target(agent, release, hook).await?;
    let name = object.name_any();
    let gone =
        fleet_objects::client::delete_and_wait(&api, &name, &DeleteParams::background(), timeout)
            .await?;
    if !gone {
        return Err(Error::Hook(format!("{name} was not deleted in time")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_and_pods_finish_as_helm_waits_for_them() {
        let job = |kind: &str| json!({"status": {"conditions": [{"type": kind, "status": "True", "reason": "BackoffLimitExceeded"}]}});
        assert_eq!(finished("Job", &job("Complete")), Some(Ok(())));
        assert_eq!(
            finished("Job", &job("Failed")),
            Some(Err("BackoffLimitExceeded".into()))
        );
        assert_eq!(finished("Job", &json!({"status": {}})), None);
        let pod = |phase: &str| json!({"status": {"phase": phase}});
        assert_eq!(finished("Pod", &pod("Succeeded")), Some(Ok(())));
        assert!(matches!(finished("Pod", &pod("Failed")), Some(Err(_))));
        assert_eq!(finished("Pod", &pod("Running")), None);
    }

    #[test]
    fn no_policy_means_before_hook_creation() {
        let mut hook = HelmHook::default();
        assert!(has_policy(&hook, "before-hook-creation"));
        assert!(!has_policy(&hook, "hook-succeeded"));
        hook.delete_policies = vec!["hook-succeeded".into()];
        assert!(!has_policy(&hook, "before-hook-creation"));
        assert!(has_policy(&hook, "hook-succeeded"));
    }
}
