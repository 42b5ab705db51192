//! Leader election on a `coordination.k8s.io/v1` Lease, as controller-runtime does it, so
//! that two replicas of gitjob or the controller can run and only one works: a replica
//! holds the Lease by renewing it; when the holder stops renewing (killed, partitioned),
//! another takes it over once `leaseDurationSeconds` have passed since the last renewal.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::ObjectMeta;
use kube::Api;

use crate::client::post_params;

/// One replica's claim on a Lease.
#[derive(Clone)]
pub struct Election {
    api: Api<Lease>,
    name: String,
    identity: String,
    field_manager: String,
    duration: Duration,
}

impl Election {
    /// A claim by `identity` on the Lease `namespace/name`, held for `duration` after each
    /// renewal (renewed every third of it). The Lease is written as `field_manager`.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        identity: &str,
        field_manager: &str,
        duration: Duration,
    ) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
            identity: identity.to_string(),
            field_manager: field_manager.to_string(),
            duration,
        }
    }

    /// Waits until this replica holds the Lease.
    pub async fn acquire(&self) {
        loop {
            match self.try_acquire().await {
                Ok(true) => return,
                Ok(false) => {}
                Err(error) => tracing::warn!(lease = %self.name, %error, "leader election"),
            }
            tokio::time::sleep(self.retry()).await;
        }
    }

    /// Renews the Lease until a renewal fails for longer than the Lease lasts (another
    /// replica may then have taken it): then returns, and the caller must stop working.
    pub async fn keep(&self) {
        let mut last_renewed = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.retry()).await;
            match self.try_acquire().await {
                Ok(true) => last_renewed = tokio::time::Instant::now(),
                Ok(false) => return,
                Err(error) => {
                    tracing::warn!(lease = %self.name, %error, "renewing the lease");
                    if last_renewed.elapsed() >= self.duration {
                        return;
                    }
                }
            }
        }
    }

    /// Runs `work` while this replica leads: waits for the Lease, then runs `work` until it
    /// ends or the Lease is lost. Says whether the Lease was lost.
    pub async fn lead(&self, work: impl std::future::Future<Output = ()>) -> bool {
        self.acquire().await;
        tracing::info!(lease = %self.name, identity = %self.identity, "leading");
        tokio::select! {
            _ = work => false,
            _ = self.keep() => {
                tracing::warn!(lease = %self.name, identity = %self.identity, "lost the lease");
                true
            }
        }
    }

    fn retry(&self) -> Duration {
        (self.duration / 3).max(Duration::from_millis(100))
    }

    /// Takes or renews the Lease if it is free, expired or ours; says whether we hold it.
    async fn try_acquire(&self) -> Result<bool, kube::Error> {
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
        let ours = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        let renewed = spec
            .renew_time
            .as_ref()
            .map(|t| t.0)
            .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let lasts = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0).max(0) as u64);
        let expired = now.duration_since(renewed).unsigned_abs() >= lasts;
        if !ours && !expired {
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
            lease_duration_seconds: Some(self.duration.as_secs().max(1) as i32),
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
