//! Running gitjob or the controller as one of several replicas (leader election on a
//! Lease) and as one shard of several (`--shard-id`), as Fleet runs them.

use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use fleet_objects::leader::{identity, Election};

/// Leader election and sharding flags of `fleet gitjob` and `fleet controller`.
#[derive(Args, Debug)]
pub(super) struct ScaleOutArgs {
    /// Handle only the GitRepos (and their Bundles) labelled `fleet.cattle.io/shard-ref`
    /// with this id; without it, only those not labelled.
    #[arg(long)]
    pub shard_id: Option<String>,
    /// Work only while holding the component's Lease, so that several replicas may run.
    #[arg(long)]
    pub leader_elect: bool,
    /// Namespace of the Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "cattle-fleet-system")]
    pub leader_election_namespace: String,
    /// Seconds a leader's Lease lasts without renewal before another replica takes over.
    #[arg(long, default_value_t = 15)]
    pub lease_seconds: u64,
}

impl ScaleOutArgs {
    /// Runs `work` for `component` (`gitjob`, `controller`): at once without
    /// `--leader-elect`; else once this replica holds the Lease
    /// `fleet-rs-<component>[-<shard>]` (written as the component's `field_manager`),
    /// ending in an error when the Lease is lost (the process exits and is restarted, as
    /// controller-runtime's replicas are).
    pub(super) async fn run(
        &self,
        client: &kube::Client,
        component: &str,
        field_manager: &str,
        work: impl std::future::Future<Output = ()>,
    ) -> Result<()> {
        if !self.leader_elect {
            work.await;
            return Ok(());
        }
        let lease = match &self.shard_id {
            Some(shard) => format!("fleet-rs-{component}-{shard}"),
            None => format!("fleet-rs-{component}"),
        };
        let election = Election::new(
            client.clone(),
            &self.leader_election_namespace,
            &lease,
            &identity(),
            field_manager,
            Duration::from_secs(self.lease_seconds.max(1)),
        );
        if election.lead(work).await {
            bail!("lost the lease {}/{lease}", self.leader_election_namespace);
        }
        Ok(())
    }
}
