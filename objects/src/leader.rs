//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's leader election does
//! it, so that two replicas of gitjob or the controller can run and only one works:
//!
//! - a replica holds the Lease by renewing it every retry period;
//! - a leader that could not renew for the renew deadline (shorter than the Lease) stops
//!   working, before any other replica may take over;
//! - another replica takes the Lease over once it has seen the same record, unrenewed, for
//!   a whole Lease duration by its own clock: the times in the Lease were written by the
//!   holder's clock, which may differ from ours, and are never compared with ours;
//! - a leader that stops (SIGTERM) releases the Lease, so that another takes over at once.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::ObjectMeta;
use kube::Api;
use tokio::time::Instant;

use crate::client::post_params;

/// One replica's claim on a Lease.
#[derive(Clone)]
pub struct Election {
    api: Api<Lease>,
    name: String,
    identity: String,
    field_manager: String,
    timing: Timing,
}

/// The durations of an election, in client-go's proportions (15 s, 10 s, 2 s by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// How long a Lease lasts unrenewed before another replica may take it.
    pub lease: Duration,
    /// How long a leader keeps working while its renewals fail.
    pub renew_deadline: Duration,
    /// How often a replica tries to take or renew the Lease.
    pub retry: Duration,
}

impl Timing {
    /// The timing of a Lease lasting `lease`: a renew deadline of two thirds of it, retries
    /// every 2/15 of it (at least every 100 ms).
    pub fn for_lease(lease: Duration) -> Self {
        Self {
            lease,
            renew_deadline: lease * 2 / 3,
            retry: (lease * 2 / 15).max(Duration::from_millis(100)),
        }
    }
}

/// The Lease record a replica last saw, and when by its own clock.
struct Observed {
    record: Option<Record>,
    at: Instant,
}

/// What identifies one renewal of a Lease: its holder and its resourceVersion.
#[derive(Clone, PartialEq, Eq)]
struct Record {
    holder: Option<String>,
    version: Option<String>,
    lasts: Duration,
}

impl Election {
    /// A claim by `identity` on the Lease `namespace/name`, held for `lease` after each
    /// renewal ([`Timing::for_lease`]). The Lease is written as `field_manager`.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        identity: &str,
        field_manager: &str,
        lease: Duration,
    ) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
            identity: identity.to_string(),
            field_manager: field_manager.to_string(),
            timing: Timing::for_lease(lease),
        }
    }

    /// Waits until this replica holds the Lease.
    pub async fn acquire(&self) {
        let mut observed = Observed {
            record: None,
            at: Instant::now(),
        };
        loop {
            match self.try_acquire(&mut observed).await {
                Ok(true) => return,
                Ok(false) => {}
                Err(error) => tracing::warn!(lease = %self.name, %error, "leader election"),
            }
            tokio::time::sleep(self.timing.retry).await;
        }
    }

    /// Renews the Lease until another replica holds it, or until renewals have failed for
    /// the renew deadline: then returns, and the caller must stop working.
    pub async fn keep(&self) {
        let mut last_renewed = Instant::now();
        let mut observed = Observed {
            record: None,
            at: Instant::now(),
        };
        loop {
            tokio::time::sleep(self.timing.retry).await;
            let attempt =
                tokio::time::timeout(self.timing.renew_deadline, self.try_acquire(&mut observed))
                    .await;
            match attempt {
                Ok(Ok(true)) => last_renewed = Instant::now(),
                Ok(Ok(false)) => return,
                Ok(Err(error)) => tracing::warn!(lease = %self.name, %error, "renewing the lease"),
                Err(_) => tracing::warn!(lease = %self.name, "renewing the lease: no answer"),
            }
            if last_renewed.elapsed() >= self.timing.renew_deadline {
                return;
            }
        }
    }

    /// Runs `work` while this replica leads: waits for the Lease, then runs `work` until it
    /// ends (and then lets the Lease go) or the Lease is lost. Says whether it was lost.
    pub async fn lead(&self, work: impl std::future::Future<Output = ()>) -> bool {
        self.acquire().await;
        tracing::info!(lease = %self.name, identity = %self.identity, "leading");
        tokio::select! {
            _ = work => {
                if let Err(error) = self.release().await {
                    tracing::warn!(lease = %self.name, %error, "releasing the lease");
                }
                false
            }
            _ = self.keep() => {
                tracing::warn!(lease = %self.name, identity = %self.identity, "lost the lease");
                true
            }
        }
    }

    /// Lets the Lease go, if this replica holds it: the next replica to look takes it at
    /// once instead of waiting for it to run out.
    pub async fn release(&self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            return Ok(());
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(());
        }
        lease.spec = Some(LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            ..spec
        });
        match self
            .api
            .replace(&self.name, &post_params(&self.field_manager), &lease)
            .await
        {
            Ok(_) => {
                tracing::info!(lease = %self.name, identity = %self.identity, "released the lease");
                Ok(())
            }
            // Taken meanwhile: it is not ours to release.
            Err(kube::Error::Api(response)) if response.code == 409 => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Takes or renews the Lease if it is free, ours, or unrenewed for its whole duration
    /// since this replica first saw its record; says whether we hold it.
    async fn try_acquire(&self, observed: &mut Observed) -> Result<bool, kube::Error> {
        let now = k8s_openapi::jiff::Timestamp::now();
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.spec(now, now, 0)),
            };
            return match self
                .api
                .create(&post_params(&self.field_manager), &lease)
                .await
            {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(response)) if response.code == 409 => Ok(false),
                Err(error) => Err(error),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let record = Record {
            holder: spec.holder_identity.clone().filter(|h| !h.is_empty()),
            version: lease.metadata.resource_version.clone(),
            lasts: Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0).max(0) as u64),
        };
        if observed.record.as_ref() != Some(&record) {
            *observed = Observed {
                record: Some(record.clone()),
                at: Instant::now(),
            };
        }
        let ours = record.holder.as_deref() == Some(self.identity.as_str());
        let free = record.holder.is_none() || observed.at.elapsed() >= record.lasts;
        if !ours && !free {
            return Ok(false);
        }
        let (acquired, transitions) = if ours {
            (
                spec.acquire_time.as_ref().map_or(now, |t| t.0),
                spec.lease_transitions.unwrap_or(0),
            )
        } else {
            (now, spec.lease_transitions.unwrap_or(0) + 1)
        };
        lease.spec = Some(self.spec(acquired, now, transitions));
        // The resourceVersion read makes this a compare-and-swap: of two replicas taking
        // an expired Lease, one gets a conflict.
        match self
            .api
            .replace(&self.name, &post_params(&self.field_manager), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(response)) if response.code == 409 => Ok(false),
            Err(error) => Err(error),
        }
    }

    fn spec(
        &self,
        acquired: k8s_openapi::jiff::Timestamp,
        renewed: k8s_openapi::jiff::Timestamp,
        transitions: i32,
    ) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.timing.lease.as_secs().max(1) as i32),
            acquire_time: Some(MicroTime(acquired)),
            renew_time: Some(MicroTime(renewed)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }
}

/// An identity for this replica: the host name (a Pod's name in Kubernetes) and a random
/// suffix, so two replicas on one host differ.
pub fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "fleet-rs".into());
    let mut bytes = [0u8; 4];
    let suffix: String = match getrandom::fill(&mut bytes) {
        Ok(()) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        Err(_) => std::process::id().to_string(),
    };
    format!("{host}-{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timing_follows_client_gos_proportions() {
        let timing = Timing::for_lease(Duration::from_secs(15));
        assert_eq!(timing.renew_deadline, Duration::from_secs(10));
        assert_eq!(timing.retry, Duration::from_secs(2));
        assert!(timing.renew_deadline < timing.lease);
    }
}
