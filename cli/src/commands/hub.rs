//! `fleet hub`: run the embedded Kubernetes-compatible API server.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

/// Arguments of `fleet hub`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet hub --data ./hub-data
  fleet hub --data ./hub-data --cluster local --cluster dev --cluster prod
  kubectl --kubeconfig ./hub-data/dev.kubeconfig get namespaces")]
pub(super) struct HubArgs {
    /// Data directory: the database, certificates and one kubeconfig per cluster.
    #[arg(long)]
    data: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Serve plain HTTP instead of HTTPS (for tests only).
    #[arg(long)]
    insecure_http: bool,
    /// A logical cluster to create if missing (repeatable; `local` always exists).
    #[arg(long = "cluster")]
    clusters: Vec<String>,
}

/// Runs the hub until Ctrl-C or SIGTERM.
pub(super) fn run(args: HubArgs) -> Result<()> {
    let runtime = super::runtime()?;
    runtime.block_on(async move {
        let mut clusters = vec![fleet_hub::route::DEFAULT_CLUSTER.to_string()];
        clusters.extend(
            args.clusters
                .into_iter()
                .filter(|c| c != fleet_hub::route::DEFAULT_CLUSTER),
        );
        let running = fleet_hub::start(fleet_hub::Options {
            data: args.data.clone(),
            listen: args.listen,
            insecure_http: args.insecure_http,
            clusters,
            memory_only: Vec::new(),
        })
        .await
        .context("starting the hub")?;
        println!("fleet hub listening on {}", running.url);
        for (cluster, path) in &running.kubeconfigs {
            println!(
                "  cluster {cluster}: kubectl --kubeconfig {}",
                path.display()
            );
        }
        super::shutdown_signal().await;
        running.shutdown().await;
        Ok(())
    })
}
