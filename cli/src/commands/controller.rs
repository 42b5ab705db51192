//! `fleet controller`: the targeting controller (Bundles to BundleDeployments) and cluster
//! registration.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use fleet_controller::registration::HubAddress;

/// Arguments of `fleet controller`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet controller --kubeconfig ./hub-data/local.kubeconfig
  kubectl --kubeconfig ./hub-data/local.kubeconfig get bundledeployments -A
  # In a cluster (its service account), handing agents the cluster's public address:
  fleet controller --api-server-url https://fleet.example.com:6443 \\
    --api-server-ca /etc/fleet/ca.crt --metrics-listen 0.0.0.0:8081")]
pub(super) struct ControllerArgs {
    /// Kubeconfig of the cluster holding the Bundles and Clusters (default: in-cluster).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Directory for scratch files and the chart cache.
    #[arg(long, default_value = "controller-data")]
    data: PathBuf,
    /// The API server URL registering agents are told to use (default: the kubeconfig's).
    /// Without either, registrations are not served.
    #[arg(long)]
    api_server_url: Option<String>,
    /// PEM file of the CA agents should trust for --api-server-url.
    #[arg(long, requires = "api_server_url")]
    api_server_ca: Option<PathBuf>,
    /// Serve /metrics, /healthz and /readyz on this address.
    #[arg(long)]
    metrics_listen: Option<SocketAddr>,
    /// Seconds between reconciles of a deployment of a pushed cluster (drift, readiness).
    #[arg(long, default_value_t = 60)]
    push_resync_seconds: u64,
    /// Fetch the remote charts Bundles name from this machine too (local paths, loopback,
    /// link-local such as the cloud metadata address). Off: a Bundle's author could
    /// otherwise read through the controller what only its host may.
    #[arg(long)]
    allow_local_sources: bool,
    /// Delete every ClusterRegistrationToken that has no TTL (Fleet's
    /// `controller.registrationTokenTTL.required`).
    #[arg(long, env = "FLEET_REGISTRATION_TOKEN_TTL_REQUIRED", default_value_t = false,
          action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true",
          require_equals = true)]
    registration_token_ttl_required: bool,
    /// Leader election and sharding.
    #[command(flatten)]
    scale_out: super::scale_out::ScaleOutArgs,
}

/// Where agents are told to find the hub: the flags, else the kubeconfig's cluster.
fn agents_hub(args: &ControllerArgs) -> Result<Option<HubAddress>> {
    Ok(HubAddress::from_flags(
        args.api_server_url.as_deref(),
        args.api_server_ca.as_deref(),
        args.kubeconfig.as_deref(),
    )?)
}

/// Runs the controller until Ctrl-C or SIGTERM.
pub(super) fn run(args: ControllerArgs) -> Result<()> {
    let runtime = super::runtime()?;
    runtime.block_on(async move {
        let client = super::cluster_client(args.kubeconfig.as_deref()).await?;
        let hub = match (&args.scale_out.shard_id, agents_hub(&args)?) {
            (None, None) => {
                tracing::warn!("no --api-server-url: cluster registrations are not served");
                None
            }
            // A shard leaves registration to the unsharded controller.
            (Some(_), _) => None,
            (None, hub) => hub,
        };
        let options = fleet_controller::Options {
            hub,
            shard: args.scale_out.shard_id.clone(),
            require_token_ttl: args.registration_token_ttl_required,
            egress: fleet_charts::Egress::allowing_local(args.allow_local_sources),
            ..fleet_controller::Options::default()
        };
        let ctx = fleet_controller::Context::with_options(client.clone(), &args.data, options);
        if let Some(addr) = args.metrics_listen {
            let metrics = ctx.metrics();
            let router = super::health_router().route(
                "/metrics",
                axum::routing::get(move || async move { metrics.render() }),
            );
            super::serve_http(addr, router, "metrics").await?;
        }
        tracing::info!(data = %args.data.display(), "controller running");
        let resync = std::time::Duration::from_secs(args.push_resync_seconds.max(1));
        let work = async {
            if args.scale_out.shard_id.is_some() {
                return fleet_controller::run(ctx, super::shutdown_signal()).await;
            }
            // Clusters with spec.kubeConfigSecret are deployed to from here (the push
            // model), by the unsharded controller.
            futures::join!(
                fleet_agent::push::run(client.clone(), resync, super::shutdown_signal()),
                fleet_controller::run(ctx, super::shutdown_signal())
            );
        };
        args.scale_out
            .run(&client, "controller", fleet_controller::FIELD_MANAGER, work)
            .await
    })
}
