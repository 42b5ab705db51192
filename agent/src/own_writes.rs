//! The agent's own status writes, followed until their watch events come back: the event
//! of a write brings back what the agent has just looked at (no need to look again: the
//! event is not even sent for a look, see [`OwnWrites::recognise`]), and until it comes,
//! the agent's copy of the deployment is older than what it wrote (a look then would act
//! on a stale status, and apply again what it has just applied).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fleet_api::BundleDeployment;
use kube::ResourceExt;

/// How long the event of a write is waited for; past it the agent's copy is trusted again
/// (a watch that broke may not bring it back as such).
const PATIENCE: Duration = Duration::from_secs(10);

/// What the agent's copy of a deployment is, against its last status write.
#[derive(Debug, PartialEq, Eq)]
pub enum Copy {
    /// The agent's last write, unchanged since: what it has just looked at.
    OwnWrite,
    /// Older than the agent's last write, whose event has not come yet.
    Stale,
    /// Neither: changed by someone else, or written by no look of this agent.
    Current,
}

/// A write, by its resourceVersion.
struct Written {
    version: String,
    at: Instant,
}

/// The last status write of each deployment, until recognised.
#[derive(Default)]
pub struct OwnWrites {
    writes: Mutex<HashMap<String, Written>>,
}

impl OwnWrites {
    fn writes(&self) -> MutexGuard<'_, HashMap<String, Written>> {
        self.writes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Remembers that the agent wrote the deployment `name`, which the hub then gave
    /// resourceVersion `version`.
    pub fn remember(&self, name: &str, version: Option<String>) {
        if let Some(version) = version {
            let written = Written {
                version,
                at: Instant::now(),
            };
            self.writes().insert(name.to_string(), written);
        }
    }

    /// Whether the watch event of `deployment` is the agent's last write of it, which is
    /// then recognised (a look at that copy is no longer skipped as the agent's own).
    pub fn recognise(&self, deployment: &BundleDeployment) -> bool {
        let mut writes = self.writes();
        let name = deployment.name_any();
        let own = writes.get(&name).is_some_and(|written| {
            deployment.metadata.resource_version.as_ref() == Some(&written.version)
        });
        if own {
            writes.remove(&name);
        }
        own
    }

    /// What the agent's copy `deployment` is; each write is recognised as the copy once.
    pub fn classify(&self, deployment: &BundleDeployment) -> Copy {
        let mut writes = self.writes();
        let name = deployment.name_any();
        let Some(written) = writes.get(&name) else {
            return Copy::Current;
        };
        if deployment.metadata.resource_version.as_ref() == Some(&written.version) {
            writes.remove(&name);
            return Copy::OwnWrite;
        }
        if written.at.elapsed() < PATIENCE {
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
        writes.remember("demo", Some("2".into()));
        assert_eq!(writes.classify(&at("1")), Copy::Stale);
        assert_eq!(writes.classify(&at("2")), Copy::OwnWrite);
        assert_eq!(writes.classify(&at("2")), Copy::Current, "recognised once");
    }

    #[test]
    fn the_event_of_the_write_is_recognised_once_and_later_copies_are_current() {
        let writes = OwnWrites::default();
        writes.remember("demo", Some("2".into()));
        assert!(!writes.recognise(&at("1")), "an older event");
        assert!(writes.recognise(&at("2")));
        assert!(!writes.recognise(&at("2")), "recognised once");
        assert_eq!(writes.classify(&at("2")), Copy::Current);
        assert_eq!(writes.classify(&at("3")), Copy::Current);
    }
}
