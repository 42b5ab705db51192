//! `fleet agent`: applies one cluster's BundleDeployments, pulled from the hub.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;

/// Arguments of `fleet agent`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet agent --register token.kubeconfig --cluster-name dev --label env=dev \\
    --kubeconfig ./hub-data/dev.kubeconfig --data ./agent-dev
  fleet agent --hub-kubeconfig ./hub-data/local.kubeconfig \\
    --kubeconfig ./hub-data/dev.kubeconfig --namespace cluster-fleet-local-dev")]
pub struct AgentArgs {
    /// Register with this token kubeconfig (from `fleet token create`) on first start.
    #[arg(long, conflicts_with_all = ["hub_kubeconfig", "namespace"], requires = "cluster_name")]
    register: Option<PathBuf>,
    /// The name to register the cluster as.
    #[arg(long)]
    cluster_name: Option<String>,
    /// A label for the registered cluster (repeatable).
    #[arg(short = 'l', long = "label", value_parser = super::parse_label)]
    labels: Vec<(String, String)>,
    /// Where the credential a registration gives is kept.
    #[arg(long, default_value = "agent-data")]
    data: PathBuf,
    /// Kubeconfig for the hub, when not registering.
    #[arg(long, required_unless_present = "register")]
    hub_kubeconfig: Option<PathBuf>,
    /// The cluster's namespace on the hub, when not registering.
    #[arg(long, required_unless_present = "register")]
    namespace: Option<String>,
    /// Kubeconfig for the cluster the agent deploys to (default: in-cluster).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Serve /healthz and /readyz on this address.
    #[arg(long)]
    health_listen: Option<std::net::SocketAddr>,
    /// Seconds between looks at an applied deployment (drift, readiness).
    #[arg(long, default_value_t = 60)]
    resync_seconds: u64,
}

/// Runs the agent until Ctrl-C or SIGTERM.
pub fn run(args: AgentArgs) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async move {
        let (hub_kubeconfig, namespace, cluster) = match (&args.register, &args.cluster_name) {
            (Some(token), Some(name)) => {
                let labels = args.labels.iter().cloned().collect();
                let patience = std::time::Duration::from_secs(120);
                let registered =
                    fleet_agent::register::register(token, name, labels, &args.data, patience)
                        .await?;
                (
                    registered.kubeconfig,
                    registered.namespace,
                    Some(registered.cluster),
                )
            }
            _ => (
                args.hub_kubeconfig
                    .clone()
                    .context("--hub-kubeconfig is needed")?,
                args.namespace.clone().context("--namespace is needed")?,
                None,
            ),
        };
        let hub = super::kube_client(&hub_kubeconfig).await?;
        let local = super::cluster_client(args.kubeconfig.as_deref()).await?;
        if let Some(addr) = args.health_listen {
            super::serve_http(addr, super::health_router(), "health").await?;
        }
        let resync = std::time::Duration::from_secs(args.resync_seconds.max(1));
        let agent = fleet_agent::Agent::new(hub, local, &namespace, resync);
        if let Some(cluster) = cluster {
            let every = std::time::Duration::from_secs(30).min(resync);
            tokio::spawn(agent.clone().heartbeat(cluster, every));
        }
        tracing::info!(%namespace, "agent running");
        agent.run(super::shutdown_signal()).await;
        Ok(())
    })
}
