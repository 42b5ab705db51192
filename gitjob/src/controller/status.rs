//! GitRepo status as Fleet writes it: conditions, the `display` printer columns read, and
//! the summary of the GitRepo's Bundles.

use fleet_api::{BundleSummary, GitRepoDisplay, GitRepoStatus};
use fleet_objects::conditions::set_condition;

/// The outcome of one reconcile, before it becomes a status.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The repository could not be polled or fetched (message), or the sync failed.
    pub git_error: Option<String>,
    /// Bundles that failed to render, as `name: message`.
    pub broken_bundles: Vec<String>,
    /// Bundles written for the commit (counted from the Bundles when not known).
    pub synced_bundles: Option<usize>,
    /// Syncing is paused.
    pub paused: bool,
    /// The namespace's Policies refuse the GitRepo (why).
    pub refused: Option<String>,
}

/// Writes `outcome` and the Bundles' summary into `status`.
pub fn apply_outcome(
    status: &mut GitRepoStatus,
    outcome: &Outcome,
    summary: BundleSummary,
    now: &str,
) {
    let deployments_ready = summary.ready >= summary.desired_ready;
    let (ready, reason, message) = if outcome.paused {
        (
            false,
            "Paused",
            "paused: new commits are not synced".to_string(),
        )
    } else if let Some(refusal) = &outcome.refused {
        (false, "Refused", refusal.clone())
    } else if let Some(error) = &outcome.git_error {
        (false, "GitError", error.clone())
    } else if !outcome.broken_bundles.is_empty() {
        let message = format!(
            "{} bundle(s) failed to render and were left as they were ({} synced): {}",
            outcome.broken_bundles.len(),
            outcome.synced_bundles.unwrap_or(0),
            outcome.broken_bundles.join("; ")
        );
        (false, "RenderFailed", message)
    } else if !deployments_ready {
        let message = format!(
            "{}/{} bundle deployments ready",
            summary.ready, summary.desired_ready
        );
        (false, "NotReady", message)
    } else {
        (true, "", String::new())
    };
    let accepted = outcome.git_error.is_none() && outcome.refused.is_none();
    set_condition(
        &mut status.conditions,
        "Ready",
        ready,
        reason,
        &message,
        now,
    );
    set_condition(
        &mut status.conditions,
        "Accepted",
        accepted,
        if accepted { "" } else { reason },
        if accepted { "" } else { &message },
        now,
    );
    let stalled = !accepted || !outcome.broken_bundles.is_empty();
    set_condition(
        &mut status.conditions,
        "Stalled",
        stalled,
        if stalled { reason } else { "" },
        if stalled { &message } else { "" },
        now,
    );
    let state = if ready { "Ready" } else { reason };
    status.display = Some(GitRepoDisplay {
        ready_bundle_deployments: Some(format!("{}/{}", summary.ready, summary.desired_ready)),
        state: Some(state.to_string()),
        message: Some(message).filter(|m| !m.is_empty()),
        error: stalled,
    });
    status.summary = Some(summary);
    status.resource_errors = outcome.broken_bundles.clone();
}

/// An RFC 7386 merge patch turning `old` into `new`: fields `new` lacks are set to null
/// (a merge patch that only omitted them would leave them in place), objects are patched
/// field by field, anything else is replaced.
pub fn merge_patch(old: &serde_json::Value, new: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (old, new) {
        (Value::Object(before), Value::Object(after)) => {
            let mut patch = serde_json::Map::new();
            for (key, value) in after {
                match before.get(key) {
                    Some(previous) if previous == value => {}
                    Some(previous) => {
                        patch.insert(key.clone(), merge_patch(previous, value));
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in before.keys().filter(|k| !after.contains_key(*k)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

/// Whether two statuses differ in anything but update times.
pub fn differs(old: &GitRepoStatus, new: &GitRepoStatus) -> bool {
    let strip = |status: &GitRepoStatus| {
        let mut status = status.clone();
        status.last_polling_triggered = None;
        for condition in &mut status.conditions {
            condition.last_update_time = None;
        }
        status
    };
    strip(old) != strip(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patches_remove_what_is_gone() {
        use serde_json::json;
        let old = json!({"display": {"state": "NotReady", "message": "0/1"}, "commit": "a"});
        let new = json!({"display": {"state": "Ready"}, "commit": "a"});
        assert_eq!(
            merge_patch(&old, &new),
            json!({"display": {"state": "Ready", "message": null}})
        );
    }

    #[test]
    fn a_broken_bundle_makes_the_repo_not_ready_and_stalled() {
        let mut status = GitRepoStatus::default();
        let outcome = Outcome {
            broken_bundles: vec!["repo-app: app/fleet.yaml:3: bad".into()],
            synced_bundles: Some(2),
            ..Outcome::default()
        };
        apply_outcome(&mut status, &outcome, BundleSummary::default(), "t1");
        let ready = &status.conditions[0];
        assert_eq!(
            (ready.type_.as_str(), ready.status.as_str()),
            ("Ready", "False")
        );
        assert!(ready
            .message
            .as_deref()
            .is_some_and(|m| m.contains("app/fleet.yaml:3: bad") && m.contains("2 synced")));
        let display = status.display.as_ref().expect("display");
        assert_eq!(display.ready_bundle_deployments.as_deref(), Some("0/0"));
        assert!(display.error);

        let mut later = status.clone();
        apply_outcome(
            &mut later,
            &Outcome::default(),
            BundleSummary::default(),
            "t2",
        );
        assert_eq!(later.conditions[0].status, "True");
        assert_eq!(
            later.conditions[0].last_transition_time.as_deref(),
            Some("t2")
        );
        assert!(differs(&status, &later));
        let mut again = later.clone();
        apply_outcome(
            &mut again,
            &Outcome::default(),
            BundleSummary::default(),
            "t3",
        );
        assert!(!differs(&later, &again));
        assert_eq!(
            again.conditions[0].last_transition_time.as_deref(),
            Some("t2")
        );
    }
}
