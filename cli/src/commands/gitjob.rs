//! `fleet gitjob`: the GitRepo controller, with the webhook receiver and metrics.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use fleet_gitjob::controller::{Gitjob, Settings};
use fleet_gitjob::git::Limits;
use fleet_gitjob::metrics::Metrics;
use fleet_gitjob::webhook;

/// Arguments of `fleet gitjob`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet gitjob --kubeconfig ./hub-data/local.kubeconfig
  fleet gitjob --kubeconfig ./hub-data/local.kubeconfig --webhook-listen 0.0.0.0:8080
  curl -s localhost:8080/metrics")]
pub(super) struct GitjobArgs {
    /// Kubeconfig of the cluster holding the GitRepos and Bundles (default: in-cluster).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Directory for repository mirrors, checkouts and the chart cache.
    #[arg(long, default_value = "gitjob-data")]
    data: PathBuf,
    /// Serve push webhooks (and /metrics, /healthz, /readyz) on this address.
    #[arg(long)]
    webhook_listen: Option<SocketAddr>,
    /// Serve /metrics, /healthz and /readyz on this address.
    #[arg(long)]
    metrics_listen: Option<SocketAddr>,
    /// Namespace of the `gitjob-webhook` Secret holding webhook secrets.
    #[arg(long, default_value = "cattle-fleet-system")]
    webhook_secret_namespace: String,
    /// Git operations (polls and fetches) at once.
    #[arg(long, default_value_t = 8)]
    git_concurrency: usize,
    /// Commits rendered at once; one namespace's GitRepos take at most half of these.
    #[arg(long, default_value_t = 4)]
    render_concurrency: usize,
    /// How long one commit's renders may run in all, in seconds, before they stop and its
    /// bundles are marked broken.
    #[arg(long, default_value_t = 120)]
    sync_render_budget_seconds: u64,
    /// The most one fetch may transfer, in MiB.
    #[arg(long, default_value_t = 1024)]
    max_fetch_mib: u64,
    /// The most files one checkout may hold.
    #[arg(long, default_value_t = 50_000)]
    max_files: usize,
    /// The most bytes of files one checkout may hold, in MiB.
    #[arg(long, default_value_t = 1024)]
    max_tree_mib: u64,
    /// Accept any SSH host key when a Secret has no known_hosts (unsafe).
    #[arg(long)]
    insecure_skip_host_key_checks: bool,
    /// Fetch repositories, remote resources and charts from this machine too: local paths,
    /// loopback and link-local addresses (refused by default: a GitRepo's author could read
    /// through gitjob what only this host may).
    #[arg(long)]
    allow_local_sources: bool,
    /// Leader election and sharding.
    #[command(flatten)]
    scale_out: super::scale_out::ScaleOutArgs,
}

/// Runs gitjob until Ctrl-C or SIGTERM.
pub(super) fn run(args: GitjobArgs) -> Result<()> {
    let runtime = super::runtime()?;
    runtime.block_on(async move {
        let client = super::cluster_client(args.kubeconfig.as_deref()).await?;
        let metrics = Arc::new(Metrics::default());
        let mut settings = Settings::new(&args.data);
        settings.git_concurrency = args.git_concurrency;
        settings.render_concurrency = args.render_concurrency;
        settings.sync_render_budget =
            std::time::Duration::from_secs(args.sync_render_budget_seconds);
        settings.max_fetch_bytes = args.max_fetch_mib << 20;
        settings.limits = Limits {
            max_files: args.max_files,
            max_bytes: args.max_tree_mib << 20,
        };
        settings.skip_host_key_check = args.insecure_skip_host_key_checks;
        settings.shard = args.scale_out.shard_id.clone();
        settings.egress = fleet_charts::Egress::allowing_local(args.allow_local_sources);
        if let Some(addr) = args.webhook_listen {
            std::fs::create_dir_all(&args.data)?;
            let receiver = webhook::Receiver::new(
                client.clone(),
                &args.webhook_secret_namespace,
                metrics.clone(),
                Some(&args.data.join("webhook-deliveries")),
            );
            super::serve_http(addr, webhook::router(receiver), "webhooks").await?;
        }
        if let Some(addr) = args.metrics_listen {
            super::serve_http(addr, webhook::metrics_router(metrics.clone()), "metrics").await?;
        }
        let gitjob = Gitjob::new(client.clone(), settings, metrics);
        tracing::info!(data = %args.data.display(), "gitjob running");
        args.scale_out
            .run(
                &client,
                "gitjob",
                fleet_gitjob::controller::FIELD_MANAGER,
                gitjob.run(super::shutdown_signal()),
            )
            .await
    })
}
