//! `fleet bench hub`: the embedded hub under load, in one process, against the targets of
//! its issue (no kube-apiserver can run here to compare with).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

/// Arguments of `fleet bench hub`.
#[derive(Args, Debug)]
pub(crate) struct HubBench {
    /// ConfigMaps of about 1 KiB to create.
    #[arg(long, default_value_t = 20_000)]
    objects: usize,
    /// Concurrent writers.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Concurrent watchers for the fan-out latency.
    #[arg(long, default_value_t = 1_000)]
    watchers: usize,
    /// Changes each watcher must see.
    #[arg(long, default_value_t = 50)]
    events: usize,
    /// Serve plain HTTP instead of HTTPS.
    #[arg(long)]
    insecure_http: bool,
}

/// Runs the benchmark.
pub(crate) fn run(args: HubBench) -> Result<()> {
    if args.objects == 0 || args.concurrency == 0 || args.watchers == 0 || args.events == 0 {
        bail!("--objects, --concurrency, --watchers and --events must be at least 1");
    }
    let data = std::env::temp_dir().join(format!("fleet-bench-hub-{}", std::process::id()));
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let result = runtime.block_on(bench(&args, &data));
    // The data directory is scratch space; failing to remove it changes no result.
    let _ = std::fs::remove_dir_all(&data);
    result
}

fn config_map(name: &str, fill: usize, extra: (&str, String)) -> Result<ConfigMap> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"bench": "hub"}},
        "data": {"blob": "x".repeat(fill), extra.0: extra.1},
    }))?)
}

async fn bench(args: &HubBench, data: &std::path::Path) -> Result<()> {
    let running = fleet_hub::start(fleet_hub::Options {
        data: data.to_path_buf(),
        listen: "127.0.0.1:0".parse()?,
        insecure_http: args.insecure_http,
        clusters: vec![fleet_hub::route::DEFAULT_CLUSTER.into()],
        memory_only: Vec::new(),
    })
    .await?;
    let kubeconfig = fleet_hub::serve::kubeconfig_path(data, fleet_hub::route::DEFAULT_CLUSTER);
    let config = kube::config::Kubeconfig::read_from(&kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(config, &Default::default()).await?;
    let client = kube::Client::try_from(config)?;
    println!(
        "hub at {} ({} cores)",
        running.url,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );

    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in ["load", "fanout"] {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        namespaces.create(&PostParams::default(), &ns).await?;
    }

    // Creates.
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "load");
    let sample = serde_json::to_vec(&config_map("load-000000", 860, ("n", "0".into()))?)?.len();
    let before = crate::measure::rss_kib("self");
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut writers = Vec::new();
    for _ in 0..args.concurrency {
        let (api, next, total) = (api.clone(), next.clone(), args.objects);
        writers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return Ok::<(), anyhow::Error>(());
                }
                let object = config_map(&format!("load-{i:06}"), 860, ("n", i.to_string()))?;
                api.create(&PostParams::default(), &object).await?;
            }
        }));
    }
    for writer in writers {
        writer.await??;
    }
    let elapsed = started.elapsed();
    let rate = args.objects as f64 / elapsed.as_secs_f64();
    let grown = crate::measure::rss_kib("self").saturating_sub(before);
    println!(
        "creates: {} objects of {} bytes with {} writers in {:.2} s = {:.0} creates/s (target >= 5,000)",
        args.objects, sample, args.concurrency, elapsed.as_secs_f64(), rate
    );
    println!(
        "memory: resident set grew {:.1} MiB, {:.1} MiB per 10,000 objects (hub and client in one process)",
        grown as f64 / 1024.0,
        grown as f64 / 1024.0 * 10_000.0 / args.objects as f64
    );

    let fanout: Api<ConfigMap> = Api::namespaced(client.clone(), "fanout");
    let mut sizes = vec![100.min(args.watchers), args.watchers];
    sizes.dedup();
    let pace = Duration::from_millis(20);
    for (round, watchers) in sizes.iter().enumerate() {
        fan_out(&fanout, round, *watchers, args.events, pace).await?;
    }
    // Throughput: 100 watchers, changes as fast as one writer makes them.
    fan_out(
        &fanout,
        sizes.len(),
        sizes[0],
        args.events * 20,
        Duration::ZERO,
    )
    .await?;
    running.shutdown().await;
    Ok(())
}

/// Opens `watchers` watches, makes `events` changes `pace` apart, and prints how long each
/// change took to reach each watcher.
async fn fan_out(
    fanout: &Api<ConfigMap>,
    round: usize,
    watchers: usize,
    events: usize,
    pace: Duration,
) -> Result<()> {
    let rv = fanout
        .list(&ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let base = Instant::now();
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(watchers * events)));
    let connected = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let (api, rv, latencies, connected, wanted) = (
            fanout.clone(),
            rv.clone(),
            latencies.clone(),
            connected.clone(),
            events,
        );
        tasks.push(tokio::spawn(async move {
            let params = WatchParams::default().timeout(290);
            let mut stream = api.watch(&params, &rv).await?.boxed();
            connected.fetch_add(1, Ordering::Relaxed);
            let mut seen = 0;
            while let Some(event) = stream.try_next().await? {
                if let WatchEvent::Added(object) = event {
                    let sent: u128 = object
                        .data
                        .and_then(|d| d.get("sent").and_then(|s| s.parse().ok()))
                        .unwrap_or(0);
                    let latency = base.elapsed().as_nanos().saturating_sub(sent);
                    if let Ok(mut all) = latencies.lock() {
                        all.push(latency);
                    }
                    seen += 1;
                    if seen == wanted {
                        return Ok::<(), anyhow::Error>(());
                    }
                }
            }
            Ok(())
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while connected.load(Ordering::Relaxed) < watchers {
        if Instant::now() > deadline {
            bail!(
                "only {} of {} watchers connected",
                connected.load(Ordering::Relaxed),
                watchers
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let first_send = Instant::now();
    for i in 0..events {
        let sent = base.elapsed().as_nanos().to_string();
        fanout
            .create(
                &PostParams::default(),
                &config_map(&format!("fan-{round}-{i:04}"), 100, ("sent", sent))?,
            )
            .await?;
        if !pace.is_zero() {
            tokio::time::sleep(pace).await;
        }
    }
    for task in tasks {
        task.await??;
    }
    let spread = first_send.elapsed();
    let mut all = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    all.sort_unstable();
    let at = |q: f64| {
        let index = ((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1));
        Duration::from_nanos(
            u64::try_from(all.get(index).copied().unwrap_or(0)).unwrap_or(u64::MAX),
        )
    };
    println!(
        "watch fan-out: {} watchers x {} changes {} ms apart = {} events in {:.2} s ({:.0} events/s); latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 < 50 ms)",
        watchers,
        events,
        pace.as_millis(),
        all.len(),
        spread.as_secs_f64(),
        all.len() as f64 / spread.as_secs_f64(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        at(1.0).as_secs_f64() * 1e3,
    );
    Ok(())
}
