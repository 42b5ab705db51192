//! `fleet agent`: applies one cluster's BundleDeployments, pulled from the hub.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;

/// Arguments of `fleet agent`.
#[derive(Args, Debug)]
#[command(after_help = "Example:
  fleet agent --hub-kubeconfig ./hub-data/local.kubeconfig \\
    --kubeconfig ./hub-data/dev.kubeconfig --namespace cluster-fleet-local-dev")]
pub struct AgentArgs {
    /// Kubeconfig for the hub (the management cluster holding the BundleDeployments).
    #[arg(long)]
    hub_kubeconfig: PathBuf,
    /// Kubeconfig for the cluster the agent deploys to.
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: PathBuf,
    /// The cluster's namespace on the hub, where its BundleDeployments are.
    #[arg(long)]
    namespace: String,
    /// Seconds between looks at an applied deployment (drift, readiness).
    #[arg(long, default_value_t = 60)]
    resync_seconds: u64,
}

/// Runs the agent until Ctrl-C or SIGTERM.
pub fn run(args: AgentArgs) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let hub = super::kube_client(&args.hub_kubeconfig).await?;
        let local = super::kube_client(&args.kubeconfig).await?;
        let resync = std::time::Duration::from_secs(args.resync_seconds.max(1));
        let agent = fleet_agent::Agent::new(hub, local, &args.namespace, resync);
        tracing::info!(namespace = %args.namespace, "agent running");
        agent.run(super::shutdown_signal()).await;
        Ok(())
    })
}
