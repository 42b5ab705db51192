//! `fleet up`: the whole of fleet-rs on one machine, deploying a demo repository: the hub
//! with a management cluster and two member clusters, gitjob, the targeting controller, and
//! a registered agent per member.

mod agents;
mod demo;
mod progress;
mod ready;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use fleet_gitjob::controller::{Gitjob, Settings};
use fleet_gitjob::metrics::Metrics;
use fleet_local::{LocalHub, MemberStorage};
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::json;

use super::status::Snapshot;
use progress::Progress;

/// The member clusters of the demo with an agent, and their `env` label.
const MEMBERS: [(&str, &str); 2] = [("dev", "dev"), ("prod", "prod")];
/// The member the controllers deploy to through its kubeconfig (the push model: no agent
/// runs for it), and its `env` label.
const PUSHED: (&str, &str) = ("edge", "edge");
/// Where the GitRepo and the registered clusters live, as in Rancher Fleet.
const NAMESPACE: &str = "fleet-default";
/// The GitRepo's name.
const GITREPO: &str = "demo";
const FIELD_MANAGER: &str = "fleet-up";

/// Arguments of `fleet up`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet up                          # everything in ./fleet-demo, until Ctrl-C
  fleet up --data /tmp/fleet-demo --listen 127.0.0.1:7443
  fleet up --exit-when-ready        # for scripts: stop once every bundle is Ready

Run it again with the same --data to pick up where it stopped.")]
pub(super) struct UpArgs {
    /// Directory for everything: the hub's database and kubeconfigs, the Git repository,
    /// the agents' credentials.
    #[arg(long, default_value = "fleet-demo")]
    data: PathBuf,
    /// Address the hub listens on.
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Stop everything and exit once all bundles are Ready (exit code 1 if they are not
    /// within --timeout).
    #[arg(long)]
    exit_when_ready: bool,
    /// Seconds to wait for every bundle to be Ready.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
}

/// Everything `fleet up` started, to stop in order.
struct Fleet {
    hub: LocalHub,
    running: fleet_local::Fleet,
    hook: fleet_local::webhook::Hook,
}

/// Runs the demo until Ctrl-C (or until ready, with `--exit-when-ready`).
pub(super) fn run(args: UpArgs) -> Result<()> {
    std::fs::create_dir_all(&args.data)
        .with_context(|| format!("creating {}", args.data.display()))?;
    let data = std::fs::canonicalize(&args.data)
        .with_context(|| format!("resolving {}", args.data.display()))?;
    let runtime = super::runtime()?;
    runtime.block_on(async move {
        let progress = Progress::new();
        let fleet = tokio::select! {
            fleet = start(&args, &data, &progress) => match fleet {
                Ok(fleet) => fleet,
                Err(error) => {
                    progress.finish();
                    return Err(error);
                }
            },
            _ = super::shutdown_signal() => {
                progress.finish();
                bail!("interrupted while starting; data kept in {}", data.display());
            }
        };
        let outcome = tokio::select! {
            ready = ready::wait_until_ready(&fleet.hub.client, &data, &progress, args.timeout) => ready,
            _ = super::shutdown_signal() => {
                progress.finish();
                println!("Interrupted.");
                fleet.stop().await;
                println!("Stopped. Data kept in {}", data.display());
                return Ok(());
            }
        };
        progress.finish();
        if let Err(error) = outcome {
            if let Ok(snapshot) = Snapshot::load(&fleet.hub.client, Some(NAMESPACE)).await {
                print!("{}", snapshot.render(80, false));
            }
            fleet.stop().await;
            return Err(error);
        }
        ready::print_ready(&fleet, &data).await?;
        if !args.exit_when_ready {
            tokio::select! {
                _ = ready::watch_changes(&fleet, &data) => {}
                _ = super::shutdown_signal() => {}
            }
            println!("Stopping...");
        }
        fleet.stop().await;
        println!("Stopped. Data kept in {}", data.display());
        Ok(())
    })
}

impl Fleet {
    /// Stops the agents, the controllers, the webhook receiver and the hub, giving each a
    /// few seconds.
    async fn stop(self) {
        self.running.stop().await;
        self.hook.stop().await;
        self.hub.shutdown().await;
    }
}

async fn start(args: &UpArgs, data: &Path, progress: &Progress) -> Result<Fleet> {
    progress.working("starting the hub");
    let members: Vec<String> = MEMBERS
        .iter()
        .chain([&PUSHED])
        .map(|(name, _)| name.to_string())
        .collect();
    let hub = LocalHub::start(
        &data.join("hub"),
        args.listen,
        &members,
        MemberStorage::Durable,
        "fleet-cli",
    )
    .await
    .with_context(|| {
        format!(
            "starting the hub on {} (is another `fleet up` or `fleet hub` running? \
                 --listen picks another address)",
            args.listen
        )
    })?;
    progress.done(&format!(
        "hub on {} with clusters local (management), dev, prod and edge",
        hub.running.url
    ));
    progress.done("Fleet's CRDs and namespaces installed");

    let client = hub.client.clone();
    let metrics = Arc::new(Metrics::default());
    let hook = fleet_local::webhook::Hook::start(&client, metrics.clone()).await?;
    let mut running = fleet_local::Fleet::new();
    running.run_gitjob(Gitjob::new(
        client.clone(),
        Settings::on_this_machine(data.join("gitjob")),
        metrics,
    ));
    let address = hub.address()?;
    running.run_controller(fleet_controller::Context::registering(
        client.clone(),
        data.join("controller"),
        address,
    ));
    let mut fleet = Fleet { hub, running, hook };
    progress.done(&format!(
        "gitjob (push webhooks on http://{}) and the targeting controller running",
        fleet.hook.addr
    ));

    progress.working("registering the agents of dev and prod");
    agents::register_agents(&mut fleet, data).await?;
    progress.done("agents of dev (env=dev) and prod (env=prod) registered and running");
    agents::push_to_edge(&mut fleet).await?;
    progress.done("edge (env=edge) deployed to through its kubeconfig: no agent runs there");

    let repo = data.join("repo");
    if demo::create_repo(&repo)? {
        progress.done(&format!(
            "demo Git repository created in {}",
            repo.display()
        ));
    } else {
        progress.done(&format!("demo Git repository found in {}", repo.display()));
    }
    apply_gitrepo(&client, &repo).await?;
    progress.done(&format!("GitRepo {NAMESPACE}/{GITREPO} applied"));
    Ok(fleet)
}

/// The GitRepo deploying every bundle of the demo repository to every cluster.
async fn apply_gitrepo(client: &kube::Client, repo: &Path) -> Result<()> {
    let body = json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
        "metadata": {"name": GITREPO, "namespace": NAMESPACE},
        "spec": {
            "repo": demo::url(repo),
            "branch": "main",
            "paths": demo::BUNDLES,
            "pollingInterval": "5s",
            "targets": [{"name": "all", "clusterSelector": {}}],
        },
    });
    Api::<fleet_api::GitRepo>::namespaced(client.clone(), NAMESPACE)
        .patch(
            GITREPO,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await
        .context("applying the GitRepo")?;
    Ok(())
}
