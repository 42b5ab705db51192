//! The agent's command line, shared by the `fleet-agent` binary and `fleet agent`: applies
//! one cluster's BundleDeployments, pulled from the hub.

use std::path::PathBuf;

use clap::Args;
use fleet_objects::client::{for_cluster, from_kubeconfig, ClientError};
use fleet_objects::service::{health_router, serve_http, ServeError};

/// Why the agent could not run.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Registration with the hub failed.
    #[error(transparent)]
    Register(#[from] crate::Error),
    /// No client could be made for the hub or the cluster.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The health endpoints could not be served.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

/// Arguments of `fleet agent`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet agent --register token.kubeconfig --cluster-name dev --label env=dev \\
    --kubeconfig ./hub-data/dev.kubeconfig
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
    #[arg(short = 'l', long = "label", value_parser = fleet_objects::selector::parse_label)]
    labels: Vec<(String, String)>,
    /// The agent's namespace in its cluster: where the credential a registration gives is
    /// kept (Secret `fleet-agent`) and where bundles' `serviceAccount`s are looked up.
    #[arg(long, env = "POD_NAMESPACE", default_value = "cattle-fleet-system")]
    agent_namespace: String,
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
    /// Seconds between reconciles of an applied, ready deployment (drift, readiness) beyond
    /// those a change to its objects brings at once.
    #[arg(long, default_value_t = 300)]
    resync_seconds: u64,
}

/// Runs the agent until `shutdown` resolves: registers first if asked to, then applies the
/// cluster's BundleDeployments and reports its heartbeat.
pub async fn run(
    args: AgentArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) -> Result<(), CommandError> {
    let omitting = fleet_objects::client::omitting_managed_fields;
    let local = omitting(&for_cluster(args.kubeconfig.as_deref()).await?);
    let (hub, namespace, cluster) = match (args.register, args.cluster_name) {
        (Some(token), Some(name)) => {
            let request = crate::register::Request {
                token: &token,
                cluster_name: &name,
                labels: args.labels.into_iter().collect(),
            };
            let store = crate::register::CredentialStore {
                member: local.clone(),
                namespace: args.agent_namespace.clone(),
            };
            let patience = std::time::Duration::from_secs(120);
            let registered = crate::register::register(request, &store, patience).await?;
            (
                registered.client().await?,
                registered.namespace,
                Some(registered.cluster),
            )
        }
        // clap requires --hub-kubeconfig and --namespace unless --register is given, and
        // --cluster-name with it.
        _ => (
            from_kubeconfig(&args.hub_kubeconfig.unwrap_or_default()).await?,
            args.namespace.unwrap_or_default(),
            None,
        ),
    };
    let hub = omitting(&hub);
    if let Some(addr) = args.health_listen {
        serve_http(addr, health_router(), "health").await?;
    }
    let resync = std::time::Duration::from_secs(args.resync_seconds.max(1));
    let agent =
        crate::Agent::with_system_namespace(hub, local, &namespace, &args.agent_namespace, resync);
    if let Some(cluster) = cluster {
        let every = std::time::Duration::from_secs(30).min(resync);
        tokio::spawn(agent.clone().heartbeat(cluster, every));
    }
    tracing::info!(%namespace, "agent running");
    agent.run(shutdown).await;
    Ok(())
}
