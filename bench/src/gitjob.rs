//! `fleet bench gitjob`: what a no-change poll costs, what 1,000 GitRepos on 20 repositories
//! cost a `fleet gitjob` process over minutes, and a 200-bundle repository cloned and
//! rendered against `git clone` of it, in the same run.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use fleet_api::{Bundle, GitRepo};
use fleet_gitjob::git::{extract, Access, Limits, Mirror, Wanted};
use fleet_local::LocalHub;
use fleet_testkit::{GitDaemon, TestRepo};
use kube::api::{ListParams, PostParams};
use kube::Api;
use serde_json::json;

/// Arguments of `fleet bench gitjob`.
#[derive(Args, Debug)]
pub(crate) struct GitjobBench {
    /// No-change polls timed for the per-poll cost.
    #[arg(long, default_value_t = 500)]
    polls: usize,
    /// GitRepos in the long run.
    #[arg(long, default_value_t = 1_000)]
    gitrepos: usize,
    /// Repositories they share.
    #[arg(long, default_value_t = 20)]
    repos: usize,
    /// Length of the long run, in seconds.
    #[arg(long, default_value_t = 300)]
    seconds: u64,
    /// Bundles in the repository cloned and rendered.
    #[arg(long, default_value_t = 200)]
    bundles: usize,
}

/// Runs the benchmark.
pub(crate) fn run(args: GitjobBench) -> Result<()> {
    if args.polls == 0 || args.gitrepos == 0 || args.repos == 0 || args.bundles == 0 {
        bail!("--polls, --gitrepos, --repos and --bundles must be at least 1");
    }
    let scratch = tempfile::tempdir().context("scratch directory")?;
    let repos = scratch.path().join("repos");
    std::fs::create_dir_all(&repos)?;
    let daemon = GitDaemon::start(&repos);
    println!(
        "fleet bench gitjob ({} cores; git daemon on loopback)",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    poll_cost(&args, &repos, &daemon, scratch.path())?;
    clone_and_render(&args, &repos, &daemon, scratch.path())?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(many_gitrepos(&args, &repos, &daemon, scratch.path()))
}

fn poll_cost(args: &GitjobBench, repos: &Path, daemon: &GitDaemon, scratch: &Path) -> Result<()> {
    let repo = TestRepo::in_dir(repos, "poll");
    repo.write(
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    repo.commit("first");
    let url = daemon.url("poll");
    let mirror = Mirror::open(&url, &scratch.join("poll-mirror"))?;
    let access = Access::public(&url);
    let wanted = Wanted::Branch("main".into());
    mirror.resolve(&access, &wanted)?;
    let cpu = crate::measure::cpu_seconds("self");
    let started = Instant::now();
    for _ in 0..args.polls {
        mirror.resolve(&access, &wanted)?;
    }
    let wall = started.elapsed().as_secs_f64() * 1000.0 / args.polls as f64;
    let cpu = (crate::measure::cpu_seconds("self") - cpu) * 1000.0 / args.polls as f64;
    println!(
        "no-change poll (ls-remote of one branch, git://): {cpu:.2} ms CPU, {wall:.2} ms wall per poll over {} polls (target < 5 ms CPU)",
        args.polls
    );
    Ok(())
}

fn clone_and_render(
    args: &GitjobBench,
    repos: &Path,
    daemon: &GitDaemon,
    scratch: &Path,
) -> Result<()> {
    let repo = TestRepo::in_dir(repos, "many");
    for i in 0..args.bundles {
        repo.write(&format!("b{i:03}/fleet.yaml"), &format!("defaultNamespace: ns{i}\n"))
            .write(
                &format!("b{i:03}/deploy.yaml"),
                &format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web{i}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.{i}\n"),
            );
    }
    let commit = repo.commit("bundles");
    let url = daemon.url("many");
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let mut parts = [Vec::new(), Vec::new(), Vec::new()];
    let (mut our_cpu, mut git_cpu) = (0.0, 0.0);
    for round in 0..5 {
        let target = scratch.join(format!("git-clone-{round}"));
        let started = Instant::now();
        let children_before = crate::measure::cpu_of("self", true);
        let status = Command::new("git")
            .args(["clone", "-q", "--depth", "1", &url])
            .arg(&target)
            .status()?;
        theirs.push(started.elapsed().as_secs_f64() * 1000.0);
        git_cpu += crate::measure::cpu_of("self", true) - children_before;
        if !status.success() {
            bail!("git clone failed");
        }
        let started = Instant::now();
        let own_before = crate::measure::cpu_seconds("self");
        let mirror = Mirror::open(&url, &scratch.join(format!("mirror-{round}")))?;
        let access = Access::public(&url);
        let wanted = Wanted::Branch("main".into());
        let head = mirror.resolve(&access, &wanted)?;
        mirror.fetch(&access, &wanted, &head, u64::MAX)?;
        parts[0].push(started.elapsed().as_secs_f64() * 1000.0);
        let tree = scratch.join(format!("tree-{round}"));
        extract(&mirror, &head, &tree, Limits::default())?;
        parts[1].push(started.elapsed().as_secs_f64() * 1000.0);
        let gitrepo: GitRepo = serde_json::from_value(json!({
            "metadata": {"name": "bench", "namespace": "fleet-local"},
            "spec": {"repo": url},
        }))?;
        let charts = fleet_charts::ChartCache::new(scratch.join("charts"));
        let bundles = fleet_gitjob::bundles::for_commit(
            &gitrepo,
            &tree,
            &commit,
            &charts,
            &fleet_charts::RepoHelmAuth::default(),
            &Default::default(),
        )?;
        ours.push(started.elapsed().as_secs_f64() * 1000.0);
        our_cpu += crate::measure::cpu_seconds("self") - own_before;
        if bundles.bundles.len() != args.bundles {
            bail!(
                "rendered {} bundles, expected {}",
                bundles.bundles.len(),
                args.bundles
            );
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (ours, theirs) = (median(&mut ours), median(&mut theirs));
    let fetched = median(&mut parts[0]);
    let extracted = median(&mut parts[1]);
    println!(
        "{}-bundle repository, median of 5: fleet fetch + checkout + render {ours:.1} ms (fetch {fetched:.1}, checkout {:.1}, render {:.1}), `git clone --depth 1` alone {theirs:.1} ms ({:.2}x)",
        args.bundles,
        extracted - fetched,
        ours - extracted,
        theirs / ours
    );
    println!(
        "  client CPU per round: fleet {:.0} ms, git clone {:.0} ms ({:.2}x); fleet renders too; the wall time is mostly git daemon's ~48 ms per connection, and fleet makes two (the poll, then the fetch)",
        our_cpu * 200.0,
        git_cpu * 200.0,
        git_cpu / our_cpu.max(1e-9)
    );
    Ok(())
}

/// A `fleet gitjob` child process, killed on drop.
struct ChildGitjob(Child);

impl Drop for ChildGitjob {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn many_gitrepos(
    args: &GitjobBench,
    repos: &Path,
    daemon: &GitDaemon,
    scratch: &Path,
) -> Result<()> {
    let hub = LocalHub::start(
        &scratch.join("hub"),
        "127.0.0.1:0".parse()?,
        &[],
        fleet_local::MemberStorage::Durable,
        "fleet-bench",
    )
    .await?;
    let kubeconfig = hub.kubeconfig(fleet_local::MANAGEMENT_CLUSTER);
    let client = hub.client.clone();
    for r in 0..args.repos {
        let repo = TestRepo::in_dir(repos, &format!("shared-{r}"));
        repo.write("app/fleet.yaml", "defaultNamespace: shared\n")
            .write(
                "app/cm.yaml",
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{r}\n"),
            );
        repo.commit("first");
    }
    let gitrepos: Api<GitRepo> = Api::namespaced(client.clone(), "fleet-local");
    for g in 0..args.gitrepos {
        let gitrepo: GitRepo = serde_json::from_value(json!({
            "metadata": {"name": format!("g{g:04}"), "namespace": "fleet-local"},
            "spec": {"repo": daemon.url(&format!("shared-{}", g % args.repos)), "branch": "main"},
        }))?;
        gitrepos.create(&PostParams::default(), &gitrepo).await?;
    }
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let child = Command::new(crate::fleet_binary()?)
        .arg("gitjob")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--data")
        .arg(scratch.join("gitjob"))
        .arg("--allow-local-sources")
        .arg("--metrics-listen")
        .arg(format!("127.0.0.1:{metrics_port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting fleet gitjob")?;
    let child = ChildGitjob(child);
    let pid = child.0.id().to_string();
    let started = Instant::now();
    let bundles: Api<Bundle> = Api::namespaced(client.clone(), "fleet-local");
    loop {
        let count = bundles
            .list_metadata(&ListParams::default())
            .await?
            .items
            .len();
        if count >= args.gitrepos {
            break;
        }
        if started.elapsed() > Duration::from_secs(600) {
            bail!("only {count} of {} bundles after 10 minutes", args.gitrepos);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "{} GitRepos on {} repositories synced into Bundles in {:.1} s (gitjob CPU {:.1} s)",
        args.gitrepos,
        args.repos,
        started.elapsed().as_secs_f64(),
        crate::measure::cpu_seconds(&pid)
    );
    let metrics = |port: u16| -> Result<String> {
        Ok(ureq::get(&format!("http://127.0.0.1:{port}/metrics"))
            .call()?
            .body_mut()
            .read_to_string()?)
    };
    let polls = |text: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix("fleet_gitjob_polls_total "))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let (gitjob_cpu, hub_cpu) = (
        crate::measure::cpu_seconds(&pid),
        crate::measure::cpu_seconds("self"),
    );
    let polls_before = polls(&metrics(metrics_port)?);
    let window = Instant::now();
    tokio::time::sleep(Duration::from_secs(args.seconds)).await;
    let elapsed = window.elapsed().as_secs_f64();
    let gitjob_share = (crate::measure::cpu_seconds(&pid) - gitjob_cpu) / elapsed * 100.0;
    let hub_share = (crate::measure::cpu_seconds("self") - hub_cpu) / elapsed * 100.0;
    let remote_polls = polls(&metrics(metrics_port)?) - polls_before;
    println!(
        "steady polling for {elapsed:.0} s: fleet gitjob used {gitjob_share:.1}% of one core (target < 10%), {remote_polls} ref advertisements asked of the remote; this process (hub and bench) {hub_share:.1}%, rss of gitjob {} MiB",
        crate::measure::rss_kib(&pid) / 1024
    );
    drop(child);
    drop(client);
    hub.shutdown().await;
    Ok(())
}
