//! `fleet up`: the whole of fleet-rs on one machine, deploying a demo repository: the hub
//! with a management cluster and two member clusters, gitjob, the targeting controller, and
//! a registered agent per member.

mod demo;
mod progress;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

use super::status::{RepoNode, Snapshot};
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
            ready = wait_until_ready(&fleet.client, &data, &progress, args.timeout) => ready,
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
        print_ready(&fleet, &data).await?;
        if !args.exit_when_ready {
            tokio::select! {
                _ = watch_changes(&fleet.client) => {}
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
    let mut fleet = Fleet {
        hub,
        client: client.clone(),
        tasks: Vec::new(),
        heartbeats: Vec::new(),
        stop: Some(stop_sender),
    };
    let gitjob = Gitjob::new(
        client.clone(),
        Settings::new(data.join("gitjob")),
        Arc::new(Metrics::default()),
    );
    fleet.tasks.push(tokio::spawn(gitjob.run(stop.clone())));
    let address = super::token::hub_address(&local_kubeconfig)?;
    let controller =
        fleet_controller::Context::registering(client.clone(), data.join("controller"), address);
    fleet.tasks.push(tokio::spawn(fleet_controller::run(
        controller,
        stop.clone(),
    )));
    progress.done("gitjob and the targeting controller running");

    progress.working("registering the agents of dev and prod");
    register_agents(&mut fleet, data, &local_kubeconfig, &stop).await?;
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

/// Registers each member's agent with a token (once: a later start reuses the credential
/// kept in `data/agents/NAME`), then runs it with its heartbeat.
async fn register_agents(
    fleet: &mut Fleet,
    data: &Path,
    local_kubeconfig: &Path,
    stop: &StopSignal,
) -> Result<()> {
    let hub_dir = data.join("hub");
    let token_file = data.join("token.kubeconfig");
    let unregistered = MEMBERS
        .iter()
        .any(|(name, _)| !agent_dir(data, name).join("hub.kubeconfig").is_file());
    if unregistered {
        let address = super::token::hub_address(local_kubeconfig)?;
        let token =
            super::token::issue(&fleet.client, &address, NAMESPACE, Some("1h".into())).await?;
        fleet_gitjob::git::write_secret_file(&token_file, token.as_bytes())
            .with_context(|| format!("writing {}", token_file.display()))?;
    }
    for (name, env) in MEMBERS {
        let dir = agent_dir(data, name);
        let labels = BTreeMap::from([("env".to_string(), env.to_string())]);
        let registered = fleet_agent::register::register(
            &token_file,
            name,
            labels,
            &dir,
            Duration::from_secs(60),
        )
        .await
        .with_context(|| format!("registering cluster {name}"))?;
        point_at(&registered.kubeconfig, &fleet.hub.url)?;
        let hub = super::kube_client(&registered.kubeconfig).await?;
        let member = super::kube_client(&fleet_hub::serve::kubeconfig_path(&hub_dir, name)).await?;
        let agent = fleet_agent::Agent::new(hub, member, &registered.namespace, RESYNC);
        fleet.heartbeats.push(tokio::spawn(
            agent
                .clone()
                .heartbeat(registered.cluster, Duration::from_secs(10)),
        ));
        fleet.tasks.push(tokio::spawn(agent.run(stop.clone())));
    }
    Ok(())
}

/// How often an agent looks again at what it applied (drift, readiness).
const RESYNC: Duration = Duration::from_secs(15);

fn agent_dir(data: &Path, cluster: &str) -> PathBuf {
    data.join("agents").join(cluster)
}

/// Points a kept agent kubeconfig at the hub's current address (the port may have changed
/// since it registered).
fn point_at(kubeconfig: &Path, url: &str) -> Result<()> {
    let mut file = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let mut changed = false;
    for cluster in file.clusters.iter_mut().filter_map(|c| c.cluster.as_mut()) {
        if cluster.server.as_deref() != Some(url) {
            cluster.server = Some(url.to_string());
            changed = true;
        }
    }
    if changed {
        let text = serde_yaml_ng::to_string(&file)?;
        fleet_gitjob::git::write_secret_file(kubeconfig, text.as_bytes())
            .with_context(|| format!("writing {}", kubeconfig.display()))?;
    }
    Ok(())
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

/// The demo GitRepo's node, if the hub has it.
async fn demo_repo(client: &kube::Client) -> Result<Option<RepoNode>> {
    let snapshot = Snapshot::load(client, Some(NAMESPACE)).await?;
    Ok(snapshot
        .repos
        .into_iter()
        .find(|r| r.name.as_deref() == Some(GITREPO)))
}

/// Waits until the GitRepo is synced at the repository's head and every bundle is Ready
/// on every member, showing how far along it is.
async fn wait_until_ready(
    client: &kube::Client,
    data: &Path,
    progress: &Progress,
    timeout: u64,
) -> Result<()> {
    let started = Instant::now();
    let wanted = demo::BUNDLES.len() * MEMBERS.len();
    loop {
        let head = demo::head(&data.join("repo"))?;
        let repo = demo_repo(client).await?;
        let synced = repo.as_ref().and_then(|r| r.commit.as_deref()) == Some(head.as_str());
        let ready = repo
            .as_ref()
            .map_or(0, |r| r.bundles.iter().map(|b| b.ready).sum::<usize>());
        let waiting = repo
            .as_ref()
            .map(|r| {
                r.bundles
                    .iter()
                    .filter(|b| !b.is_ready())
                    .map(|b| b.name.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let message = if !synced {
            "waiting for gitjob to sync the repository".to_string()
        } else {
            format!("waiting for {waiting}")
        };
        progress.deployments(ready, wanted, &message);
        if synced && repo.as_ref().is_some_and(RepoNode::is_ready) && ready >= wanted {
            progress.done(&format!(
                "all {} bundles Ready on dev and prod in {:.1} s",
                demo::BUNDLES.len(),
                started.elapsed().as_secs_f64()
            ));
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(timeout) {
            bail!("the bundles were not all Ready within {timeout} s");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// What to look at, and how to make a change roll out.
async fn print_ready(fleet: &Fleet, data: &Path) -> Result<()> {
    let snapshot = Snapshot::load(&fleet.client, Some(NAMESPACE)).await?;
    let hub = data.join("hub");
    let local = hub.join("local.kubeconfig");
    let repo = data.join("repo");
    println!();
    print!("{}", snapshot.render(80, false));
    println!(
        "
fleet-rs is up. Data: {data}

Look around (the hub's management cluster, then a member):
  kubectl --kubeconfig {local} get gitrepos,bundles,clusters -A
  kubectl --kubeconfig {local} get bundledeployments -A
  kubectl --kubeconfig {dev} get configmaps -A -l app.kubernetes.io/name
  {fleet} status --kubeconfig {local} --watch

Make a change and watch it roll out (the GitRepo polls every 5 s):
  sed -i 's/color: blue/color: green/' {repo}/helm-chart/fleet.yaml && git -C {repo} commit -qam 'Green'
  kubectl --kubeconfig {prod} get configmap greeter -n demo-helm -o jsonpath='{{.data.color}}'
",
        data = data.display(),
        fleet = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "fleet".into()),
        local = local.display(),
        dev = hub.join("dev.kubeconfig").display(),
        prod = hub.join("prod.kubeconfig").display(),
        repo = repo.display(),
    );
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Ok(());
    }
    println!(
        "Ctrl-C stops everything; `fleet up --data {}` starts it again.",
        data.display()
    );
    Ok(())
}

/// Prints a line whenever the demo GitRepo's commit or readiness changes.
async fn watch_changes(client: &kube::Client) {
    let mut last = String::new();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let Ok(Some(repo)) = demo_repo(client).await else {
            continue;
        };
        let ready = repo.bundles.iter().map(|b| b.ready).sum::<usize>();
        let desired = repo.bundles.iter().map(|b| b.desired).sum::<usize>();
        let commit: String = repo.commit.unwrap_or_default().chars().take(7).collect();
        let line = format!("commit {commit}: {ready}/{desired} deployments ready");
        if line != last {
            println!("{line}");
            last = line;
        }
    }
}
