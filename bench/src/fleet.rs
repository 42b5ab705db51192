//! `fleet bench fleet`: a whole fleet in one process: the hub with N member clusters, gitjob,
//! the targeting controller and one agent per member; the time from a commit to every
//! cluster Ready, and the CPU and memory it took. No reference tool runs here to compare
//! with; the figures are printed against the targets.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use fleet_api::{BundleDeployment, GitRepo};
use fleet_local::{Fleet, LocalHub};
use fleet_testkit::{create_cluster, GitDaemon, TestRepo};
use kube::api::{ListParams, PostParams};
use kube::Api;
use serde_json::json;

/// Arguments of `fleet bench fleet`.
#[derive(Args, Debug)]
pub struct FleetBench {
    /// Member clusters, each with its own agent.
    #[arg(long, default_value_t = 1_000)]
    clusters: usize,
}

/// Runs the benchmark.
pub fn run(args: FleetBench) -> Result<()> {
    if args.clusters == 0 {
        bail!("--clusters must be at least 1");
    }
    let scratch = tempfile::tempdir().context("scratch directory")?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(bench(&args, scratch.path()))
}

fn member(i: usize) -> String {
    format!("m{i:04}")
}

async fn bench(args: &FleetBench, scratch: &std::path::Path) -> Result<()> {
    let started = Instant::now();
    let members: Vec<String> = (0..args.clusters).map(member).collect();
    let local = LocalHub::start(
        &scratch.join("hub"),
        "127.0.0.1:0".parse()?,
        &members,
        "fleet-bench",
    )
    .await?;
    println!(
        "hub with {} member clusters up in {:.1} s",
        args.clusters,
        started.elapsed().as_secs_f64()
    );
    let hub = local.client.clone();
    for (i, name) in members.iter().enumerate() {
        let env = if i % 2 == 0 { "prod" } else { "dev" };
        create_cluster(&hub, "fleet-local", name, json!({"env": env})).await?;
    }
    let repos = scratch.join("repos");
    std::fs::create_dir_all(&repos)?;
    let repo = TestRepo::in_dir(&repos, "app");
    repo.write(
        "app/fleet.yaml",
        "defaultNamespace: app\ntargetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels:\n      env: prod\n  defaultNamespace: app-prod\n",
    )
    .write("app/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  version: \"1\"\n");
    repo.commit("v1");
    let daemon = GitDaemon::start(&repos);

    let mut fleet = Fleet::new();
    fleet.run_controllers(&hub, scratch);
    // Agents reach the hub in process: the control plane is measured, not the socket limit
    // (10,000 agents over TCP needed more than the 20,000 file descriptors a process has).
    let in_process = |cluster: &str| {
        local
            .in_process_client(cluster)
            .with_context(|| format!("no cluster {cluster} in the hub"))
    };
    let agents_hub = in_process(fleet_local::MANAGEMENT_CLUSTER)?;
    for name in &members {
        let agent = fleet_agent::Agent::new(
            agents_hub.clone(),
            in_process(name)?,
            &format!("cluster-fleet-local-{name}"),
            Duration::from_secs(60),
        );
        fleet.run_agent(name, agent, None).await;
    }
    println!(
        "gitjob, controller and {} agents started; rss {} MiB",
        args.clusters,
        crate::measure::rss_kib("self") / 1024
    );

    let cpu = crate::measure::cpu_seconds("self");
    let commit = Instant::now();
    let gitrepo: GitRepo = serde_json::from_value(json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
        "metadata": {"name": "demo", "namespace": "fleet-local"},
        "spec": {"repo": daemon.url("app"), "branch": "main", "pollingInterval": "1s",
                 "targets": [{"clusterSelector": {}}]},
    }))?;
    Api::<GitRepo>::namespaced(hub.clone(), "fleet-local")
        .create(&PostParams::default(), &gitrepo)
        .await?;
    all_ready(&hub, args.clusters, "1").await?;
    println!(
        "first deployment: GitRepo created to all {} clusters Ready in {:.1} s (target < 30 s), {:.1} s CPU",
        args.clusters,
        commit.elapsed().as_secs_f64(),
        crate::measure::cpu_seconds("self") - cpu
    );

    let cpu = crate::measure::cpu_seconds("self");
    repo.write(
        "app/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  version: \"2\"\n",
    );
    repo.commit("v2");
    let commit = Instant::now();
    all_ready(&hub, args.clusters, "2").await?;
    println!(
        "a commit: to all {} clusters Ready at the new version in {:.1} s (target < 30 s), {:.1} s CPU; rss {} MiB for hub, gitjob, controller and agents (target < 1 GiB)",
        args.clusters,
        commit.elapsed().as_secs_f64(),
        crate::measure::cpu_seconds("self") - cpu,
        crate::measure::rss_kib("self") / 1024
    );
    fleet.stop().await;
    local.shutdown().await;
    Ok(())
}

/// Waits until every cluster's deployment is ready at a Content holding `version`.
async fn all_ready(hub: &kube::Client, clusters: usize, version: &str) -> Result<()> {
    let contents: Api<fleet_api::Content> = Api::all(hub.clone());
    let deployments: Api<BundleDeployment> = Api::all(hub.clone());
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut at_version = std::collections::HashSet::new();
    loop {
        for content in contents.list(&ListParams::default()).await?.items {
            let holds = content
                .unpack()
                .is_ok_and(|p| p.resources.iter().any(|o| o["data"]["version"] == version));
            if holds {
                at_version.insert(content.metadata.name.unwrap_or_default());
            }
        }
        let ready = deployments
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .filter(|d| {
                let id = d.spec.deployment_id.clone().unwrap_or_default();
                let content = id.split(':').next().unwrap_or_default().to_string();
                at_version.contains(&content)
                    && d.status
                        .as_ref()
                        .is_some_and(|s| s.ready && s.applied_deployment_id == d.spec.deployment_id)
            })
            .count();
        if ready >= clusters {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("only {ready} of {clusters} clusters ready after 10 minutes");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
