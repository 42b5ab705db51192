//! `fleet bench fleet`: a whole fleet in one process: the hub with N member clusters, gitjob,
//! the targeting controller and one agent per member (reaching the hub in process, so the
//! control plane is measured, not the socket limit). With `--processes` the hub, the
//! controller and gitjob run as `fleet` processes instead, as in production, and the agents
//! reach the hub over HTTP/2 (see [`crate::processes`]). For each phase (the first
//! deployment, then a commit changing every bundle) it prints the time to every deployment
//! Ready, the CPU it took, the peak memory, the objects in the hub, the writes per
//! BundleDeployment (as the hub counted them) and the largest status object. Each commit is
//! announced to gitjob by a signed push webhook, as a Git host sends one, so a phase starts
//! at once rather than at the next poll. Named scenarios reproduce Rancher Fleet's
//! benchmark experiments. No reference tool runs here; the figures are printed against the
//! issue's targets.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use fleet_api::{Bundle, BundleDeployment, Cluster, GitRepo};
use fleet_hub::requests::RequestKind;
use fleet_local::webhook::Hook;
use fleet_local::{Fleet, LocalHub, MemberStorage};

use crate::real_management::RealManagement;
use fleet_objects::hints::ManagedFields;
use fleet_testkit::{create_cluster, GitDaemon, TestRepo};
use futures::StreamExt;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::Api;
use serde_json::json;

use crate::processes::{ControlPlane, HubCounts};

/// Arguments of `fleet bench fleet`.
#[derive(Args, Debug)]
pub(crate) struct FleetBench {
    /// Member clusters, each with its own agent.
    #[arg(long, default_value_t = 1_000)]
    clusters: usize,
    /// Bundles, each deployed to every cluster.
    #[arg(long, default_value_t = 1)]
    bundles: usize,
    /// ConfigMaps in each bundle.
    #[arg(long, default_value_t = 1)]
    resources: usize,
    /// GitRepos the bundles are spread over (0: Bundles applied directly, no gitjob).
    #[arg(long, default_value_t = 1)]
    gitrepos: usize,
    /// How often each agent reconciles a ready deployment again, beyond the reconciles a change
    /// to its objects brings (as `fleet agent --resync-seconds`).
    #[arg(long, default_value_t = 300)]
    resync_seconds: u64,
    /// Seconds the fleet is left alone after the commit, what it does meanwhile measured
    /// (drift reconciles, heartbeats): the cost of a fleet at rest.
    #[arg(long, default_value_t = 60)]
    idle_seconds: u64,
    /// One of Rancher Fleet's benchmark experiments (sets the figures above; `--clusters`
    /// still counts where the experiment does not fix it).
    #[arg(long, value_enum)]
    scenario: Option<Scenario>,
    /// Agents register as real ones do (a ClusterRegistration each, answered by the
    /// controller) and reach the hub with their own service accounts, every request
    /// authorised by RBAC; without it they use the hub's admin credentials.
    #[arg(long)]
    registered: bool,
    /// Clusters that join while the commit rolls out (registering, with `--registered`):
    /// the commit phase then counts their deployments too, and prints how long joining
    /// took.
    #[arg(long, default_value_t = 0)]
    joining: usize,
    /// The hub, the controller and gitjob run as `fleet hub`, `fleet controller` and `fleet
    /// gitjob` processes (the `fleet` binary beside this one), as in production, and the
    /// agents reach the hub over HTTP/2 with TLS, 32 to a connection; without it all of the
    /// fleet runs in this process and reaches the hub without sockets.
    #[arg(long)]
    processes: bool,
    /// The management cluster is a real kube-apiserver with its etcd and controller
    /// manager (built by `.ci/real-k8s.sh`); the members stay in the hub, and gitjob, the
    /// controller and the agents in this process.
    #[arg(long, conflicts_with_all = ["processes", "registered"])]
    real_management: bool,
}

/// Rancher Fleet's benchmark experiments.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Scenario {
    /// One GitRepo of 50 bundles.
    #[value(name = "create-1-gitrepo-50-bundle")]
    OneGitRepoFiftyBundles,
    /// 50 GitRepos of one bundle each.
    #[value(name = "create-50-gitrepo-50-bundle")]
    FiftyGitReposFiftyBundles,
    /// 50 Bundles applied directly.
    #[value(name = "create-50-bundle")]
    FiftyBundles,
    /// One bundle of 10 resources to one cluster.
    #[value(name = "create-1-bundledeployment-10-resources")]
    OneDeploymentTenResources,
    /// One bundle of 500 resources to 50 clusters.
    #[value(name = "create-50-bundledeployment-500-resources")]
    FiftyDeploymentsFiveHundredResources,
}

/// The shape of a run.
#[derive(Debug, Clone, Copy)]
struct Shape {
    clusters: usize,
    bundles: usize,
    resources: usize,
    gitrepos: usize,
}

impl FleetBench {
    fn shape(&self) -> Shape {
        let given = Shape {
            clusters: self.clusters,
            bundles: self.bundles,
            resources: self.resources,
            gitrepos: self.gitrepos,
        };
        let Some(scenario) = self.scenario else {
            return given;
        };
        let (clusters, bundles, resources, gitrepos) = match scenario {
            Scenario::OneGitRepoFiftyBundles => (given.clusters, 50, 1, 1),
            Scenario::FiftyGitReposFiftyBundles => (given.clusters, 50, 1, 50),
            Scenario::FiftyBundles => (given.clusters, 50, 1, 0),
            Scenario::OneDeploymentTenResources => (1, 1, 10, 1),
            Scenario::FiftyDeploymentsFiveHundredResources => (50, 1, 500, 1),
        };
        Shape {
            clusters,
            bundles,
            resources,
            gitrepos,
        }
    }
}

/// Runs the benchmark.
pub(crate) fn run(args: FleetBench) -> Result<()> {
    let shape = args.shape();
    if shape.clusters == 0 || shape.bundles == 0 || shape.resources == 0 {
        bail!("--clusters, --bundles and --resources must be at least 1");
    }
    if shape.gitrepos > shape.bundles {
        bail!("--gitrepos may not exceed --bundles (each GitRepo holds at least one bundle)");
    }
    let scratch = tempfile::tempdir().context("scratch directory")?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let timing = Timing {
        resync: Duration::from_secs(args.resync_seconds.max(1)),
        idle: Duration::from_secs(args.idle_seconds),
    };
    let agents = Agents {
        registered: args.registered,
        joining: args.joining,
        processes: args.processes,
        real_management: args.real_management,
    };
    runtime.block_on(bench(shape, timing, agents, scratch.path()))
}

/// Prints how fast a core is now (see [`crate::measure::core_pace`]), so that runs in
/// different hours can be told apart from changes in the code.
fn print_pace() {
    let pace = crate::measure::core_pace();
    println!(
        "machine pace: one core parses and writes a stored BundleDeployment {} times in {} ms (best of 3)",
        crate::measure::PACE_ROUNDS,
        pace.as_millis()
    );
}

fn member(i: usize) -> String {
    format!("m{i:05}")
}

/// The bundle `b`'s directory and files at `version`: a fleet.yaml with a customization
/// for the `prod` clusters, and `resources` ConfigMaps.
fn bundle_files(b: usize, resources: usize, version: u32) -> Vec<(String, String)> {
    let fleet_yaml = "defaultNamespace: app\ntargetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels:\n      env: prod\n  defaultNamespace: app-prod\n";
    let config_maps: Vec<String> = (0..resources)
        .map(|r| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b{b:03}-settings-{r}\ndata:\n  version: \"{version}\"\n"
            )
        })
        .collect();
    vec![
        (format!("b{b:03}/fleet.yaml"), fleet_yaml.to_string()),
        (format!("b{b:03}/settings.yaml"), config_maps.join("---\n")),
    ]
}

/// The agents' resync, and how long the fleet is watched at rest.
#[derive(Debug, Clone, Copy)]
struct Timing {
    resync: Duration,
    idle: Duration,
}

/// How the agents reach the hub, how many join during the commit, and whether the control
/// plane runs in processes of its own.
#[derive(Debug, Clone, Copy)]
struct Agents {
    registered: bool,
    joining: usize,
    processes: bool,
    real_management: bool,
}

/// Where the bundles come from: Git repositories with gitjob (told of each commit by a push
/// webhook), or Bundles applied directly.
enum Source {
    Git {
        repos: Vec<TestRepo>,
        daemon: GitDaemon,
        hook: Hook,
    },
    Direct,
}

impl Source {
    /// The repositories under `scratch`, pushes going to gitjob's receiver at `receiver`
    /// (another process's), or else to one served here.
    async fn new(
        scratch: &std::path::Path,
        shape: Shape,
        hub: &kube::Client,
        receiver: Option<std::net::SocketAddr>,
    ) -> Result<Self> {
        if shape.gitrepos == 0 {
            return Ok(Self::Direct);
        }
        let dir = scratch.join("repos");
        std::fs::create_dir_all(&dir)?;
        let repos = (0..shape.gitrepos)
            .map(|g| TestRepo::in_dir(&dir, &format!("app{g:03}")))
            .collect();
        let daemon = GitDaemon::start(&dir);
        let hook = match receiver {
            Some(addr) => Hook::elsewhere(hub, addr).await?,
            None => Hook::start(hub, Arc::new(fleet_gitjob::metrics::Metrics::default())).await?,
        };
        Ok(Self::Git {
            repos,
            daemon,
            hook,
        })
    }

    /// Writes every bundle at `version`: commits to the repositories (creating the
    /// GitRepos the first time, pushing the commit to gitjob's webhook after), or applies
    /// the Bundles.
    async fn publish(&self, hub: &kube::Client, shape: Shape, version: u32) -> Result<()> {
        match self {
            Self::Git {
                repos,
                daemon,
                hook,
            } => {
                for b in 0..shape.bundles {
                    let repo = &repos[b % repos.len()];
                    for (path, text) in bundle_files(b, shape.resources, version) {
                        repo.write(&path, &text);
                    }
                }
                for (g, repo) in repos.iter().enumerate() {
                    let commit = repo.commit(&format!("v{version}"));
                    let name = format!("app{g:03}");
                    if version > 1 {
                        hook.push(&daemon.url(&name), &commit).await?;
                    } else {
                        let gitrepo: GitRepo = serde_json::from_value(json!({
                            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
                            "metadata": {"name": name, "namespace": "fleet-local"},
                            "spec": {"repo": daemon.url(&name), "branch": "main",
                                     "pollingInterval": "1h",
                                     "targets": [{"clusterSelector": {}}]},
                        }))?;
                        Api::<GitRepo>::namespaced(hub.clone(), "fleet-local")
                            .create(&PostParams::default(), &gitrepo)
                            .await?;
                    }
                }
            }
            Self::Direct => {
                let api: Api<Bundle> = Api::namespaced(hub.clone(), "fleet-local");
                for b in 0..shape.bundles {
                    let files = bundle_files(b, shape.resources, version);
                    let resources: Vec<serde_json::Value> = files
                        .iter()
                        .map(|(path, text)| {
                            let name = path.split_once('/').map_or(path.as_str(), |(_, n)| n);
                            json!({"name": name, "content": text})
                        })
                        .collect();
                    let name = format!("direct-b{b:03}");
                    let bundle = json!({
                        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
                        "metadata": {"name": name, "namespace": "fleet-local"},
                        "spec": {"defaultNamespace": "app", "resources": resources,
                                 "targets": [{"clusterSelector": {}}]},
                    });
                    api.patch(
                        &name,
                        &PatchParams::apply("fleet-bench").force(),
                        &Patch::Apply(&bundle),
                    )
                    .await?;
                }
            }
        }
        Ok(())
    }
}

async fn bench(
    shape: Shape,
    timing: Timing,
    agents: Agents,
    scratch: &std::path::Path,
) -> Result<()> {
    // Before anything starts: afterwards the fleet's heap and threads would be timed too.
    print_pace();
    let pace = crate::measure::PaceSampler::start().context("starting the pace sampler")?;
    let started = Instant::now();
    // The joining members' clusters exist from the start, as real clusters do before
    // their agents register.
    let members: Vec<String> = (0..shape.clusters + agents.joining).map(member).collect();
    let local = LocalHub::start(
        &scratch.join("hub"),
        "127.0.0.1:0".parse()?,
        &members,
        MemberStorage::MemoryOnly,
        "fleet-bench",
    )
    .await?;
    let plane = if agents.processes {
        let plane = ControlPlane::start(scratch, members.len()).await?;
        println!(
            "fleet hub, fleet controller and fleet gitjob started as processes; agents reach the hub over HTTP/2, {} to a connection",
            crate::processes::AGENTS_PER_CONNECTION
        );
        Some(plane)
    } else {
        None
    };
    println!(
        "hub with {} member clusters (kept in memory: real members store their own objects) up in {:.1} s; {} bundles of {} ConfigMaps from {} GitRepos",
        members.len(),
        started.elapsed().as_secs_f64(),
        shape.bundles,
        shape.resources,
        shape.gitrepos
    );
    let labelled: Vec<(String, &str)> = (members.iter().enumerate())
        .map(|(i, name)| (name.clone(), if i % 2 == 0 { "prod" } else { "dev" }))
        .collect();
    let (first_members, joining) = labelled.split_at(shape.clusters);
    // Controllers and agents reach the hub in process: the control plane is measured, not
    // TLS or the socket limit (10,000 agents over TCP needed more than the 20,000 file
    // descriptors a process has). In production the hub's side of TLS is the API server's.
    // With `--processes`, the benchmark's own requests and watches go over HTTPS.
    let real = if agents.real_management {
        Some(RealManagement::start().await?)
    } else {
        None
    };
    let (management, admin) = match (&plane, &real) {
        (Some(plane), _) => (
            fleet_objects::client::omitting_managed_fields(&plane.admin),
            plane.admin.clone(),
        ),
        (None, Some(real)) => (
            fleet_objects::client::omitting_managed_fields(&real.admin),
            real.admin.clone(),
        ),
        (None, None) => (
            local
                .in_process_client(fleet_local::MANAGEMENT_CLUSTER, ManagedFields::Omitted)
                .context("no management cluster in the hub")?,
            local.client.clone(),
        ),
    };
    let receiver = plane.as_ref().map(|p| p.webhook);
    let source = Source::new(scratch, shape, &management, receiver).await?;
    let mut fleet = Fleet::new();
    if plane.is_none() {
        let registering = if agents.registered {
            Some(local.address()?)
        } else {
            None
        };
        fleet.run_controllers(&management, scratch, registering);
    }
    let starter = AgentStarter {
        local: &local,
        plane: plane.as_ref(),
        admin: admin.clone(),
        management: management.clone(),
        registered: agents.registered,
        resync: timing.resync,
        // One process, one copy of each Content the agents read.
        contents: Arc::new(fleet_agent::contents::ContentCache::default()),
        started: AtomicUsize::new(0),
    };
    starter.start(&mut fleet, first_members).await?;
    // The tracker watches every deployment in process too: what it costs is the
    // benchmark's, not the control plane's.
    let tracker = Tracker::start(&management)?;
    println!(
        "gitjob, controller and {} agents started; rss {} MiB",
        shape.clusters,
        crate::measure::rss_kib("self") / 1024
    );
    let run = Run {
        local: &local,
        plane: plane.as_ref(),
        real: real.as_ref(),
        admin: &admin,
        source: &source,
        shape,
        tracker: &tracker,
        pace: &pace,
    };
    let first = run
        .phase(1, "first deployment", shape.clusters, async { Ok(()) })
        .await?;
    let join = async {
        if joining.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        starter.start(&mut fleet, joining).await?;
        println!(
            "a commit: {} more clusters joined during it in {:.1} s",
            joining.len(),
            started.elapsed().as_secs_f64()
        );
        Ok(())
    };
    let commit = run.phase(2, "a commit", members.len(), join).await?;
    if !timing.idle.is_zero() {
        run.at_rest(members.len() * shape.bundles, timing.idle)
            .await?;
    }
    println!(
        "targets (10,000 x 10): each phase under 60 s, peak RSS under 4 GiB, status objects under 64 KiB, at most 2 writes per BundleDeployment per rollout; first deployment here {:.1} s",
        first
    );
    println!(
        "fleet bench: {} clusters x {} bundles: commit to all Ready in {:.1} s, peak RSS {} MiB",
        shape.clusters,
        shape.bundles,
        commit,
        run.peak_rss_kib() / 1024
    );
    fleet.stop().await;
    tracker.stop();
    if let Some(plane) = plane {
        plane.stop().await;
    }
    local.shutdown().await;
    Ok(())
}

/// Starts agents for members: each registered first (with `--registered`), or its Cluster
/// created with admin credentials.
struct AgentStarter<'a> {
    local: &'a LocalHub,
    /// The control plane's processes, with `--processes`.
    plane: Option<&'a ControlPlane>,
    /// An admin client of the hub, for registering.
    admin: kube::Client,
    /// The client of the hub unregistered agents share, in process.
    management: kube::Client,
    registered: bool,
    resync: Duration,
    contents: Arc<fleet_agent::contents::ContentCache>,
    /// Agents started so far: each is numbered, for its share of the HTTP/2 connections.
    started: AtomicUsize,
}

/// How long registered agents may wait for their credentials: 10,000 register in about
/// 10 s, so a registration still waiting after this is lost, and the run says which.
const REGISTRATION_PATIENCE: Duration = Duration::from_secs(300);

impl AgentStarter<'_> {
    /// Makes each of `members` (name and `env` label) a Cluster and starts its agent.
    async fn start(&self, fleet: &mut Fleet, members: &[(String, &str)]) -> Result<()> {
        let hub = &self.admin;
        let credentials = if self.registered {
            let started = Instant::now();
            let credentials =
                crate::register::register_all(hub, members, REGISTRATION_PATIENCE).await?;
            println!(
                "{} agents registered in {:.1} s; each reaches the hub with its own service account, authorised by RBAC",
                credentials.len(),
                started.elapsed().as_secs_f64()
            );
            Some(credentials)
        } else {
            for (name, env) in members {
                create_cluster(hub, "fleet-local", name, json!({"env": env})).await?;
            }
            None
        };
        for (name, _) in members {
            let credential = match &credentials {
                Some(credentials) => Some(
                    credentials
                        .get(name)
                        .with_context(|| format!("no credential for {name}"))?,
                ),
                None => None,
            };
            let hub_side = self.hub_side(credential.map(|c| c.token.as_str()))?;
            let namespace = match credential {
                Some(credential) => credential.namespace.clone(),
                None => format!("cluster-fleet-local-{name}"),
            };
            let member = (self.local)
                .in_process_client(name, ManagedFields::Omitted)
                .with_context(|| format!("no cluster {name} in the hub"))?;
            let agent = fleet_agent::Agent::new(hub_side, member, &namespace, self.resync)
                .sharing_contents(self.contents.clone());
            fleet.run_agent(name, agent, None).await;
        }
        Ok(())
    }

    /// The next agent's client of the hub, presenting `token` (else admin credentials):
    /// over its share of the HTTP/2 connections with `--processes`, else in process.
    fn hub_side(&self, token: Option<&str>) -> Result<kube::Client> {
        let index = self.started.fetch_add(1, Ordering::Relaxed);
        match (self.plane, token) {
            (Some(plane), token) => plane.agent_client(index, token),
            (None, Some(token)) => (self.local)
                .in_process_client_as(
                    fleet_local::MANAGEMENT_CLUSTER,
                    token,
                    ManagedFields::Omitted,
                )
                .context("a token that cannot be a header"),
            (None, None) => Ok(self.management.clone()),
        }
    }
}

/// What each phase measures against.
struct Run<'a> {
    local: &'a LocalHub,
    /// The control plane's processes, with `--processes`.
    plane: Option<&'a ControlPlane>,
    /// The real management cluster, with `--real-management`.
    real: Option<&'a RealManagement>,
    /// An admin client of the hub.
    admin: &'a kube::Client,
    source: &'a Source,
    shape: Shape,
    tracker: &'a Tracker,
    pace: &'a crate::measure::PaceSampler,
}

impl Run<'_> {
    /// Publishes `version`, runs `during` alongside, waits for the deployments of
    /// `clusters` clusters Ready at it, and prints the phase's figures; returns its
    /// seconds.
    async fn phase(
        &self,
        version: u32,
        name: &str,
        clusters: usize,
        during: impl std::future::Future<Output = Result<()>>,
    ) -> Result<f64> {
        let (shape, tracker) = (self.shape, self.tracker);
        let cpu = self.cpu_seconds();
        let before = self.hub_counts().await?;
        let ticks = crate::measure::cpu_ticks_and_steal();
        let relisted_before = tracker.relists.load(Ordering::Relaxed);
        let started = Instant::now();
        self.source.publish(self.admin, shape, version).await?;
        let deployments = clusters * shape.bundles;
        let version = version.to_string();
        let ready = tracker.all_ready(deployments, &version, started);
        let ([placed, applied], ()) = tokio::select! {
            done = async { tokio::try_join!(ready, during) } => done?,
            exited = self.plane_exited() => return Err(exited),
        };
        let seconds = started.elapsed().as_secs_f64();
        let stage = |at: Option<f64>| at.map_or("-".to_string(), |s| format!("{s:.1} s"));
        println!(
            "{name}: all placed at {}, all applied at {}, all Ready at {seconds:.1} s",
            stage(placed),
            stage(applied)
        );
        // Late status writes of the phase (agents' last reports) count too.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let used = self.cpu_seconds();
        let after = self.hub_counts().await?;
        let served = served(&before.requests, &after.requests);
        let written = deployment_writes(&served) as f64 / deployments as f64;
        println!(
            "{name}: {deployments} deployments Ready in {seconds:.1} s, {:.1} s CPU, peak RSS {} MiB, {} objects in the hub, {written:.2} writes per BundleDeployment, largest status {} bytes",
            used.total() - cpu.total(),
            self.peak_rss_kib() / 1024,
            after.objects,
            largest_status(self.admin)
                .await?
                .max(tracker.largest_status.load(Ordering::Relaxed))
        );
        let others = match (self.plane, self.real) {
            (Some(plane), _) => Some(plane.peak_rss_kib()),
            (None, Some(real)) => Some(real.peak_rss_kib()),
            (None, None) => None,
        };
        if let Some(others) = others {
            let peaks: Vec<String> = (others.into_iter())
                .map(|(process, kib)| format!("{process} {} MiB", kib / 1024))
                .collect();
            println!(
                "{name}: CPU by process: {}; peak RSS by process: benchmark {} MiB, {}",
                used.since(&cpu),
                crate::measure::peak_rss_kib("self") / 1024,
                peaks.join(", ")
            );
        }
        let relisted = tracker.relists.load(Ordering::Relaxed) - relisted_before;
        if relisted > 0 {
            println!(
                "{name}: the benchmark's watch of every deployment fell behind and listed them all again {relisted} times (counted in the hub's work)"
            );
        }
        println!(
            "{name}: hub requests per deployment: {}",
            requests_per_deployment(&served, deployments)
        );
        self.print_machine(name, started, ticks);
        Ok(seconds)
    }

    /// Prints how fast the machine was during a phase begun at `started`: the pace its
    /// sampler took, and the share of the machine's CPU time the hypervisor gave other
    /// guests (`ticks`: [`crate::measure::cpu_ticks_and_steal`] when the phase began).
    fn print_machine(&self, name: &str, started: Instant, ticks: Option<(u64, u64)>) {
        let pace = self
            .pace
            .since(started)
            .map_or("no sample".to_string(), |pace| pace.to_string());
        let stolen = ticks
            .zip(crate::measure::cpu_ticks_and_steal())
            .filter(|((total, _), (now, _))| now > total)
            .map_or("-".to_string(), |((total, steal), (now, stolen))| {
                let share = stolen.saturating_sub(steal) as f64 / (now - total) as f64;
                format!("{:.1}%", share * 100.0)
            });
        println!("{name}: machine pace {pace}; CPU time stolen by the hypervisor {stolen}");
    }

    /// Leaves the fleet alone for `idle`, and prints the CPU it took meanwhile and the
    /// hub's requests per deployment.
    async fn at_rest(&self, deployments: usize, idle: Duration) -> Result<()> {
        let cpu = self.cpu_seconds();
        let before = self.hub_counts().await?;
        tokio::time::sleep(idle).await;
        let used = self.cpu_seconds().total() - cpu.total();
        let after = self.hub_counts().await?;
        println!(
            "at rest for {} s: {used:.1} s CPU ({:.2} cores); hub requests per deployment: {}",
            idle.as_secs(),
            used / idle.as_secs_f64(),
            requests_per_deployment(&served(&before.requests, &after.requests), deployments)
        );
        Ok(())
    }

    /// Waits until a process of the control plane exits (with `--processes`; else never).
    async fn plane_exited(&self) -> anyhow::Error {
        match self.plane {
            Some(plane) => plane.exited().await,
            None => std::future::pending().await,
        }
    }

    /// The CPU seconds used so far by this process and by the control plane's.
    fn cpu_seconds(&self) -> CpuSeconds {
        let mut by_process = vec![("benchmark", crate::measure::cpu_seconds("self"))];
        if let Some(plane) = self.plane {
            by_process.extend(plane.cpu_seconds());
        }
        if let Some(real) = self.real {
            by_process.extend(real.cpu_seconds());
        }
        CpuSeconds(by_process)
    }

    /// The peak resident memory of this process and the control plane's together (the sum
    /// of their peaks), in KiB.
    fn peak_rss_kib(&self) -> u64 {
        let own = crate::measure::peak_rss_kib("self");
        let plane: u64 = self
            .plane
            .map_or(0, |p| p.peak_rss_kib().iter().map(|(_, kib)| kib).sum());
        let real: u64 = self
            .real
            .map_or(0, |r| r.peak_rss_kib().iter().map(|(_, kib)| kib).sum());
        own + plane + real
    }

    /// The requests served so far and the objects held: by the hub here (the member
    /// clusters, and the management cluster in one process), and with `--processes` the
    /// management cluster's by the hub's process (from its `/metrics`, read once).
    async fn hub_counts(&self) -> Result<HubCounts> {
        let hub = &self.local.running.hub;
        let mut counts = HubCounts {
            requests: hub.request_counts(),
            objects: hub.object_count(),
        };
        let elsewhere = match (self.plane, self.real) {
            (Some(plane), _) => Some(plane.hub_counts().await?),
            (None, Some(real)) => Some(real.counts().await?),
            (None, None) => None,
        };
        if let Some(management) = elsewhere {
            // The hub's management cluster here is unused but for Fleet's CRDs: another
            // process holds the real one.
            (counts.requests).retain(|kind, _| kind.cluster != fleet_local::MANAGEMENT_CLUSTER);
            counts.requests.extend(management.requests);
            counts.objects -= hub.cluster_object_count(fleet_local::MANAGEMENT_CLUSTER);
            counts.objects += management.objects;
        }
        Ok(counts)
    }
}

/// CPU seconds by process.
struct CpuSeconds(Vec<(&'static str, f64)>);

impl CpuSeconds {
    /// The seconds of every process together.
    fn total(&self) -> f64 {
        self.0.iter().map(|(_, seconds)| seconds).sum()
    }

    /// Each process's seconds since `before`.
    fn since(&self, before: &Self) -> String {
        let used: Vec<String> = (self.0.iter().zip(&before.0))
            .map(|((name, now), (_, then))| format!("{name} {:.1} s", now - then))
            .collect();
        used.join(", ")
    }
}

/// The requests of each kind served between two counts.
fn served(
    before: &HashMap<RequestKind, u64>,
    after: &HashMap<RequestKind, u64>,
) -> HashMap<RequestKind, u64> {
    (after.iter())
        .map(|(kind, n)| (kind.clone(), n - before.get(kind).copied().unwrap_or(0)))
        .collect()
}

/// Of the requests `served`, the writes to BundleDeployments (creates, updates and
/// patches, of their status too) on the management cluster.
fn deployment_writes(served: &HashMap<RequestKind, u64>) -> u64 {
    (served.iter())
        .filter(|(kind, _)| {
            kind.cluster == fleet_local::MANAGEMENT_CLUSTER
                && kind.resource == "bundledeployments"
                && matches!(kind.verb.as_str(), "create" | "update" | "patch")
        })
        .map(|(_, n)| n)
        .sum()
}

/// The hub's requests of a phase per deployment rolled out, on the management cluster and
/// on the members (what the agents ask of their own clusters), each with its five most
/// frequent kinds.
fn requests_per_deployment(served: &HashMap<RequestKind, u64>, deployments: usize) -> String {
    let mut sides: [BTreeMap<(String, String), u64>; 2] = Default::default();
    for (kind, count) in served {
        let side = usize::from(kind.cluster != fleet_local::MANAGEMENT_CLUSTER);
        *sides[side]
            .entry((kind.verb.clone(), kind.resource.clone()))
            .or_default() += count;
    }
    let per = |n: u64| n as f64 / deployments as f64;
    let [management, members] = sides.map(|counts| {
        let total: u64 = counts.values().sum();
        let mut kinds: Vec<_> = counts.into_iter().filter(|(_, n)| *n > 0).collect();
        kinds.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        let top: Vec<String> = (kinds.iter().take(5))
            .map(|((verb, resource), n)| format!("{verb} {resource} {:.2}", per(*n)))
            .collect();
        format!("{:.2} ({})", per(total), top.join(", "))
    });
    format!("management {management}; members {members}")
}

/// The largest status, serialized, of any GitRepo, Bundle or Cluster (BundleDeployments'
/// are followed by the [`Tracker`]).
async fn largest_status(hub: &kube::Client) -> Result<usize> {
    let size = |status: serde_json::Result<Vec<u8>>| status.map_or(0, |b| b.len());
    let params = ListParams::default();
    let mut largest = 0;
    for item in Api::<GitRepo>::all(hub.clone()).list(&params).await?.items {
        largest = largest.max(size(serde_json::to_vec(&item.status)));
    }
    for item in Api::<Bundle>::all(hub.clone()).list(&params).await?.items {
        largest = largest.max(size(serde_json::to_vec(&item.status)));
    }
    for item in Api::<Cluster>::all(hub.clone()).list(&params).await?.items {
        largest = largest.max(size(serde_json::to_vec(&item.status)));
    }
    Ok(largest)
}

/// What the benchmark follows from two watches (never by listing, which would weigh on
/// the hub it measures): what each deployment names, applied and is ready at, and the
/// version each Content holds.
#[derive(Default)]
struct Tracker {
    /// The times the watch of every deployment listed them again (it fell behind).
    relists: AtomicUsize,
    /// The largest BundleDeployment status seen, serialized.
    largest_status: AtomicUsize,
    state: Mutex<Tracked>,
    /// The thread the two watches run on, until stopped.
    thread: Mutex<Option<TrackerThread>>,
}

/// The thread a [`Tracker`]'s watches run on, and how to tell it to stop.
struct TrackerThread {
    stop: tokio::sync::oneshot::Sender<()>,
    handle: std::thread::JoinHandle<()>,
}

#[derive(Default)]
struct Tracked {
    /// Every deployment, by `namespace/name`.
    deployments: HashMap<String, Seen>,
    /// The number given to each Content's name, so that counting compares numbers.
    content_numbers: HashMap<String, usize>,
    /// The `version` each numbered Content's ConfigMaps carry, once seen.
    versions: Vec<Option<String>>,
}

impl Tracked {
    /// The number of the Content named `name`.
    fn content_number(&mut self, name: &str) -> usize {
        if let Some(number) = self.content_numbers.get(name) {
            return *number;
        }
        let number = self.versions.len();
        self.versions.push(None);
        self.content_numbers.insert(name.to_string(), number);
        number
    }
}

/// What the [`Tracker`] reads of a BundleDeployment: its name, the deployment its spec
/// names, and its status as the hub sent it (measured as it is, then read for two fields).
/// Decoding the whole object for every event, as the controller and agents must, would add
/// the benchmark's own work to the fleet's figures.
#[derive(Clone, Debug, serde::Deserialize)]
struct TrackedDeployment {
    #[serde(deserialize_with = "tracked_metadata")]
    metadata: kube::api::ObjectMeta,
    #[serde(default)]
    spec: TrackedSpec,
    #[serde(default)]
    status: Option<Box<serde_json::value::RawValue>>,
}

/// The name, namespace and resourceVersion of an object's metadata (what a watch needs);
/// the rest is passed over.
fn tracked_metadata<'de, D>(metadata: D) -> Result<kube::api::ObjectMeta, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Identity {
        name: Option<String>,
        namespace: Option<String>,
        resource_version: Option<String>,
    }
    let identity = <Identity as serde::Deserialize>::deserialize(metadata)?;
    Ok(kube::api::ObjectMeta {
        name: identity.name,
        namespace: identity.namespace,
        resource_version: identity.resource_version,
        ..Default::default()
    })
}

/// The part of a BundleDeployment's spec the [`Tracker`] reads.
#[derive(Clone, Debug, Default, serde::Deserialize)]
struct TrackedSpec {
    #[serde(rename = "deploymentID")]
    deployment_id: Option<String>,
}

/// The part of a BundleDeployment's status the [`Tracker`] reads.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct TrackedStatus {
    #[serde(rename = "appliedDeploymentID")]
    applied_deployment_id: Option<String>,
    #[serde(default)]
    ready: bool,
}

impl kube::Resource for TrackedDeployment {
    type DynamicType = ();
    type Scope = kube::core::NamespaceResourceScope;

    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::kind(&())
    }

    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::group(&())
    }

    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::version(&())
    }

    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        BundleDeployment::plural(&())
    }

    fn meta(&self) -> &kube::api::ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut kube::api::ObjectMeta {
        &mut self.metadata
    }
}

/// One deployment as last seen.
struct Seen {
    /// The Content its spec names.
    placed: usize,
    /// The Content its agent applied.
    applied: Option<usize>,
    /// Whether it is ready at what it names.
    ready: bool,
}

impl Tracker {
    /// Starts following the hub through `hub`, a client that asks for objects without
    /// managedFields. The watches run on a thread of their own: among 10,000 agents' tasks
    /// on the benchmark's runtime they would get too small a share to keep up with the
    /// hub, which then drops them, and each relist of every deployment would be the
    /// benchmark's work counted as the fleet's.
    fn start(hub: &kube::Client) -> std::io::Result<Arc<Self>> {
        let tracker = Arc::new(Self::default());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.spawn(tracker.clone().follow_deployments(hub.clone()));
        runtime.spawn(tracker.clone().follow_contents(hub.clone()));
        let (stop, stopped) = tokio::sync::oneshot::channel();
        // The watches end with their runtime, dropped when the thread ends.
        let thread = std::thread::Builder::new()
            .name("bench-tracker".into())
            .spawn(move || {
                let _ = runtime.block_on(stopped);
            })?;
        *tracker.lock_thread() = Some(TrackerThread {
            stop,
            handle: thread,
        });
        Ok(tracker)
    }

    /// Stops following the hub (before the hub stops).
    fn stop(&self) {
        if let Some(thread) = self.lock_thread().take() {
            let _ = thread.stop.send(());
            let _ = thread.handle.join();
        }
    }

    fn lock_thread(&self) -> std::sync::MutexGuard<'_, Option<TrackerThread>> {
        self.thread.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn follow_deployments(self: Arc<Self>, hub: kube::Client) {
        let api: Api<TrackedDeployment> = Api::all(hub);
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut listed = false;
        while let Some(event) = events.next().await {
            let deployment = match event {
                Ok(watcher::Event::Init) => {
                    if listed {
                        self.relists.fetch_add(1, Ordering::Relaxed);
                    }
                    listed = true;
                    continue;
                }
                Ok(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) => d,
                _ => continue,
            };
            let key = format!(
                "{}/{}",
                deployment.metadata.namespace.as_deref().unwrap_or_default(),
                deployment.metadata.name.as_deref().unwrap_or_default()
            );
            let size = deployment.status.as_ref().map_or(0, |s| s.get().len());
            self.largest_status.fetch_max(size, Ordering::Relaxed);
            let status: TrackedStatus = match &deployment.status {
                Some(status) => serde_json::from_str(status.get()).unwrap_or_default(),
                None => TrackedStatus::default(),
            };
            let content_of = |id: &str| id.split(':').next().unwrap_or_default().to_string();
            let id = deployment.spec.deployment_id.unwrap_or_default();
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let seen = Seen {
                placed: state.content_number(&content_of(&id)),
                applied: status
                    .applied_deployment_id
                    .as_deref()
                    .map(|applied| state.content_number(&content_of(applied))),
                ready: status.ready && status.applied_deployment_id.as_deref() == Some(&id),
            };
            state.deployments.insert(key, seen);
        }
    }

    async fn follow_contents(self: Arc<Self>, hub: kube::Client) {
        let api: Api<fleet_api::Content> = Api::all(hub);
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(event) = events.next().await {
            let (Ok(watcher::Event::Apply(content)) | Ok(watcher::Event::InitApply(content))) =
                event
            else {
                continue;
            };
            let version = content.unpack().ok().and_then(|p| {
                p.resources
                    .iter()
                    .find_map(|o| o["data"]["version"].as_str().map(String::from))
            });
            if let (Some(name), Some(version)) = (content.metadata.name.clone(), version) {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                let number = state.content_number(&name);
                state.versions[number] = Some(version);
            }
        }
    }

    /// Deployments placed, applied and ready at a Content holding `version`.
    fn counts_at(&self, version: &str) -> [usize; 3] {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let at_version: Vec<bool> = (state.versions.iter())
            .map(|v| v.as_deref() == Some(version))
            .collect();
        let at = |content: usize| at_version.get(content).copied().unwrap_or(false);
        let mut counts = [0; 3];
        for seen in state.deployments.values() {
            let stages = [
                at(seen.placed),
                seen.applied.is_some_and(at),
                seen.ready && at(seen.placed),
            ];
            for (count, reached) in counts.iter_mut().zip(stages) {
                *count += usize::from(reached);
            }
        }
        counts
    }

    /// Waits until `wanted` deployments are ready at `version`; returns the seconds since
    /// `started` at which all were placed (their BundleDeployments name the new Content)
    /// and all applied, to show which stage takes the time.
    async fn all_ready(
        &self,
        wanted: usize,
        version: &str,
        started: Instant,
    ) -> Result<[Option<f64>; 2]> {
        let deadline = Instant::now() + Duration::from_secs(900);
        let mut stages = [None; 2];
        loop {
            let counts = self.counts_at(version);
            for (stage, count) in stages.iter_mut().zip(counts) {
                if stage.is_none() && count >= wanted {
                    *stage = Some(started.elapsed().as_secs_f64());
                }
            }
            let ready = counts[2];
            if ready >= wanted {
                return Ok(stages);
            }
            if Instant::now() > deadline {
                bail!("only {ready} of {wanted} deployments ready after 15 minutes");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs both phases of a small fleet (three clusters, two bundles, a fourth cluster
    /// joining during the commit) with `agents`; fails unless both reach Ready within
    /// three minutes.
    async fn small_fleet_is_ready(agents: Agents) {
        let scratch = tempfile::tempdir().expect("scratch directory");
        let shape = Shape {
            clusters: 3,
            bundles: 2,
            resources: 1,
            gitrepos: 1,
        };
        let timing = Timing {
            resync: Duration::from_secs(300),
            idle: Duration::ZERO,
        };
        let run = bench(shape, timing, agents, scratch.path());
        tokio::time::timeout(Duration::from_secs(180), run)
            .await
            .expect("both phases within 3 minutes")
            .expect("both phases Ready");
    }

    /// Registered agents' own credentials carry the whole path: reading their deployments
    /// and the Contents they name, and writing status (a refusal would leave a phase short
    /// of Ready until the timeout). A cluster registering during the commit gets the
    /// committed bundles too: the commit counts its deployments.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_fleet_of_registered_agents_is_ready_in_both_phases_with_one_joining() {
        small_fleet_is_ready(Agents {
            registered: true,
            joining: 1,
            processes: false,
            real_management: false,
        })
        .await;
    }

    /// The same fleet with the control plane as production runs it: `fleet hub`, `fleet
    /// controller` and `fleet gitjob` processes (the `fleet` binary the workspace's tests
    /// build), the agents reaching the hub over shared HTTP/2 connections, and the hub's
    /// request counts read from its `/metrics`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_fleet_is_ready_with_the_control_plane_in_processes_of_its_own() {
        small_fleet_is_ready(Agents {
            registered: true,
            joining: 1,
            processes: true,
            real_management: false,
        })
        .await;
    }

    /// The same fleet with a real management cluster (kube-apiserver, etcd): its request
    /// counts read from kube-apiserver's `/metrics`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_fleet_is_ready_with_a_real_management_cluster() {
        small_fleet_is_ready(Agents {
            registered: false,
            joining: 1,
            processes: false,
            real_management: true,
        })
        .await;
    }
}
