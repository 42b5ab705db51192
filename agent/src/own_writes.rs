//! The agent's own status writes, followed from the moment they are sent until their watch
//! events come back. The event of a write brings back what the agent has just looked at:
//! it is not sent for a reconcile ([`OwnWrites::recognise`]). Until it comes, the agent's copy of
//! the deployment is older than what it wrote: a reconcile then would act on a stale status, and
//! apply again what it has just applied.
//!
//! The event often comes before the answer to the write (the hub publishes a write to its
//! watchers before it answers), when the agent does not know the write's resourceVersion
//! yet. Events that come while a write is in flight are held; the answer then tells
//! whether they were the write's own, and any other brings a reconcile
//! ([`OwnWrites::answered`]).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fleet_api::BundleDeployment;
use kube::ResourceExt;

/// How long the event of a write (or the answer to it) is waited for; past it the agent's
/// copy is trusted again (a watch that broke may not bring it back as such).
const PATIENCE: Duration = Duration::from_secs(10);

/// What the agent's copy of a deployment is, against its last status write.
#[derive(Debug, PartialEq, Eq)]
pub enum Copy {
    /// The agent's last write, unchanged since: what it has just looked at.
    OwnWrite,
    /// Older than the agent's last write, whose event has not come yet.
    Stale,
    /// Neither: changed by someone else, or written by no reconcile of this agent.
    Current,
}

/// The agent's last status write of one deployment.
enum Write {
    /// Sent, not answered yet; the resourceVersions of the events held meanwhile.
    InFlight { since: Instant, held: Vec<String> },
    /// Answered with `version`; its event has not come yet.
    Answered { version: String, at: Instant },
}

/// The last status write of each deployment, until recognised.
#[derive(Default)]
pub struct OwnWrites {
    writes: Mutex<HashMap<String, Write>>,
}

impl OwnWrites {
    fn writes(&self) -> MutexGuard<'_, HashMap<String, Write>> {
        self.writes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Notes that the agent is writing the status of the deployment `name`.
    pub fn sending(&self, name: &str) {
        let write = Write::InFlight {
            since: Instant::now(),
            held: Vec::new(),
        };
        self.writes().insert(name.to_string(), write);
    }

    /// Notes the answer to the write of `name`: the resourceVersion the hub gave it, or
    /// `None` if it failed. Returns whether an event held meanwhile was not the write's
    /// own: the deployment then needs a reconcile.
    pub fn answered(&self, name: &str, version: Option<String>) -> bool {
        let mut writes = self.writes();
        let held = match writes.remove(name) {
            Some(Write::InFlight { held, .. }) => held,
            _ => Vec::new(),
        };
        let owed = held.iter().any(|rv| Some(rv) != version.as_ref());
        // Its own event not held yet: recognised when it comes.
        if let Some(version) = version.filter(|v| !held.contains(v)) {
            let answered = Write::Answered {
                version,
                at: Instant::now(),
            };
            writes.insert(name.to_string(), answered);
        }
        owed
    }

    /// Whether the watch event of `deployment` is to be kept from a reconcile: the event of the
    /// agent's last write (then recognised, so that a later reconcile of that copy is not
    /// skipped), or one that came while a write is in flight (held until its answer).
    pub fn recognise(&self, deployment: &BundleDeployment) -> bool {
        let mut writes = self.writes();
        let name = deployment.name_any();
        let seen = deployment.metadata.resource_version.as_ref();
        match (writes.get_mut(&name), seen) {
            (Some(Write::InFlight { since, held }), Some(seen)) if since.elapsed() < PATIENCE => {
                held.push(seen.clone());
                true
            }
            (Some(Write::Answered { version, .. }), Some(seen)) if version == seen => {
                writes.remove(&name);
                true
            }
            _ => false,
        }
    }

    /// What the agent's copy `deployment` is; each write is recognised as the copy once.
    pub fn classify(&self, deployment: &BundleDeployment) -> Copy {
        let mut writes = self.writes();
        let name = deployment.name_any();
        let Some(Write::Answered { version, at }) = writes.get(&name) else {
            return Copy::Current;
        };
        if deployment.metadata.resource_version.as_ref() == Some(version) {
            writes.remove(&name);
            return Copy::OwnWrite;
        }
        if at.elapsed() < PATIENCE {
            return Copy::Stale;
        }
        writes.remove(&name);
        Copy::Current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(version: &str) -> BundleDeployment {
        let mut deployment = BundleDeployment::new("demo", Default::default());
        deployment.metadata.resource_version = Some(version.into());
        deployment
    }

    #[test]
    fn a_copy_is_stale_until_the_write_comes_back_then_the_write_once() {
        let writes = OwnWrites::default();
        assert_eq!(writes.classify(&at("1")), Copy::Current, "nothing written");
        writes.sending("demo");
        assert!(!writes.answered("demo", Some("2".into())), "nothing held");
        assert_eq!(writes.classify(&at("1")), Copy::Stale);
        assert_eq!(writes.classify(&at("2")), Copy::OwnWrite);
        assert_eq!(writes.classify(&at("2")), Copy::Current, "recognised once");
    }

    #[test]
    fn the_event_after_the_answer_is_recognised_once_and_later_copies_are_current() {
        let writes = OwnWrites::default();
        writes.sending("demo");
        writes.answered("demo", Some("2".into()));
        assert!(!writes.recognise(&at("1")), "an older event");
        assert!(writes.recognise(&at("2")));
        assert!(!writes.recognise(&at("2")), "recognised once");
        assert_eq!(writes.classify(&at("2")), Copy::Current);
        assert_eq!(writes.classify(&at("3")), Copy::Current);
    }

    #[test]
    fn events_before_the_answer_are_held_and_only_others_than_its_own_bring_a_reconcile() {
        let writes = OwnWrites::default();
        writes.sending("demo");
        assert!(writes.recognise(&at("2")), "held");
        assert!(!writes.answered("demo", Some("2".into())), "its own");
        assert_eq!(
            writes.classify(&at("2")),
            Copy::Current,
            "already recognised"
        );

        writes.sending("demo");
        assert!(writes.recognise(&at("3")), "someone else's change, held");
        assert!(
            writes.answered("demo", Some("4".into())),
            "not its own: a reconcile"
        );
        assert_eq!(
            writes.classify(&at("3")),
            Copy::Stale,
            "its own is yet to come"
        );
        assert!(writes.recognise(&at("4")));

        writes.sending("demo");
        assert!(writes.recognise(&at("5")));
        assert!(
            writes.answered("demo", None),
            "failed: what was held needs a reconcile"
        );
        assert_eq!(writes.classify(&at("5")), Copy::Current);
    }
}
