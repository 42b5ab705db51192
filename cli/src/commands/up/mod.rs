//! `fleet up`: the whole of fleet-rs on one machine, deploying a demo repository: the hub
//! with a management cluster and two member clusters, gitjob, the targeting controller, and
//! a registered agent per member.

mod agents;
mod demo;
mod progress;
mod ready;
mod webhook;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use fleet_gitjob::controller::{Gitjob, Settings};
use fleet_gitjob::metrics::Metrics;
use futures::future::{BoxFuture, Shared};
use futures::FutureExt;
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::json;
use tokio::task::JoinHandle;

use super::status::Snapshot;
use progress::Progress;

/// The member clusters of the demo and their `env` label.
const MEMBERS: [(&str, &str); 2] = [("dev", "dev"), ("prod", "prod")];
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
pub struct UpArgs {
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
    hub: fleet_hub::Running,
    client: kube::Client,
    tasks: Vec<JoinHandle<()>>,
    heartbeats: Vec<JoinHandle<()>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    hook: webhook::Hook,
}

type StopSignal = Shared<BoxFuture<'static, ()>>;

/// Runs the demo until Ctrl-C (or until ready, with `--exit-when-ready`).
pub fn run(args: UpArgs) -> Result<()> {
    std::fs::create_dir_all(&args.data)
        .with_context(|| format!("creating {}", args.data.display()))?;
    let data = std::fs::canonicalize(&args.data)
        .with_context(|| format!("resolving {}", args.data.display()))?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
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
            ready = ready::wait_until_ready(&fleet.client, &data, &progress, args.timeout) => ready,
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
            if let Ok(snapshot) = Snapshot::load(&fleet.client, Some(NAMESPACE)).await {
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
    /// Stops the agents, controllers and hub, giving each a few seconds.
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        for heartbeat in &self.heartbeats {
            heartbeat.abort();
        }
        for task in self.tasks {
            if tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .is_err()
            {
                tracing::warn!("a controller did not stop within 5 s");
            }
        }
        self.hook.stop().await;
        // Idle connections of a client still alive would report the hub going away.
        drop(self.client);
        self.hub.shutdown().await;
    }
}

async fn start(args: &UpArgs, data: &Path, progress: &Progress) -> Result<Fleet> {
    let hub_dir = data.join("hub");
    let mut clusters = vec![fleet_hub::route::DEFAULT_CLUSTER.to_string()];
    clusters.extend(MEMBERS.iter().map(|(name, _)| name.to_string()));
    progress.working("starting the hub");
    let hub = fleet_hub::start(fleet_hub::Options {
        data: hub_dir.clone(),
        listen: args.listen,
        insecure_http: false,
        clusters,
    })
    .await
    .with_context(|| {
        format!(
            "starting the hub on {} (is another `fleet up` or `fleet hub` running? \
             --listen picks another address)",
            args.listen
        )
    })?;
    progress.done(&format!(
        "hub on {} with clusters local (management), dev and prod",
        hub.url
    ));
    let local_kubeconfig = fleet_hub::serve::kubeconfig_path(&hub_dir, "local");
    let client = super::kube_client(&local_kubeconfig).await?;
    super::install_fleet(&client).await?;
    progress.done("Fleet's CRDs and namespaces installed");

    let (stop_sender, stop_receiver) = tokio::sync::oneshot::channel::<()>();
    let stop: StopSignal = async move {
        let _ = stop_receiver.await;
    }
    .boxed()
    .shared();
    let metrics = Arc::new(Metrics::default());
    let hook = webhook::Hook::start(&client, metrics.clone()).await?;
    let mut fleet = Fleet {
        hub,
        client: client.clone(),
        tasks: Vec::new(),
        heartbeats: Vec::new(),
        stop: Some(stop_sender),
        hook,
    };
    let gitjob = Gitjob::new(client.clone(), Settings::new(data.join("gitjob")), metrics);
    fleet.tasks.push(tokio::spawn(gitjob.run(stop.clone())));
    let address = fleet_controller::registration::HubAddress::from_kubeconfig(&local_kubeconfig)?;
    let controller =
        fleet_controller::Context::registering(client.clone(), data.join("controller"), address);
    fleet.tasks.push(tokio::spawn(fleet_controller::run(
        controller,
        stop.clone(),
    )));
    progress.done(&format!(
        "gitjob (push webhooks on http://{}) and the targeting controller running",
        fleet.hook.addr
    ));

    progress.working("registering the agents of dev and prod");
    agents::register_agents(&mut fleet, data, &local_kubeconfig, &stop).await?;
    progress.done("agents of dev (env=dev) and prod (env=prod) registered and running");

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
            "repo": format!("file://{}", repo.display()),
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
