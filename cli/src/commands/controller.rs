//! `fleet controller`: the targeting controller (Bundles to BundleDeployments).

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;

/// Arguments of `fleet controller`.
#[derive(Args, Debug)]
#[command(after_help = "Example:
  fleet controller --kubeconfig ./hub-data/local.kubeconfig
  kubectl --kubeconfig ./hub-data/local.kubeconfig get bundledeployments -A")]
pub struct ControllerArgs {
    /// Kubeconfig of the cluster holding the Bundles and Clusters.
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: PathBuf,
    /// Directory for scratch files and the chart cache.
    #[arg(long, default_value = "controller-data")]
    data: PathBuf,
}

/// Runs the controller until Ctrl-C or SIGTERM.
pub fn run(args: ControllerArgs) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let client = super::kube_client(&args.kubeconfig).await?;
        let hub = super::token::hub_address(&args.kubeconfig)?;
        let ctx = fleet_controller::Context::registering(client, &args.data, hub);
        tracing::info!(data = %args.data.display(), "controller running");
        fleet_controller::run(ctx, super::shutdown_signal()).await;
        Ok(())
    })
}
