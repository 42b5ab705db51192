//! `fleet bench soak`: the hub under a bounded siege. It runs as its own process (`fleet hub`)
//! while this one holds idle connections that never send a request (and reopen them when
//! the hub closes them), open watches, and abusive clients that send the costliest bodies
//! the hub must refuse or store: deeply nested YAML, 1 MiB objects rewritten in a loop,
//! malformed selectors, bad tokens. One admin reads and writes throughout; its latency
//! percentiles and the hub's resident memory are printed. Not a test: figures go in the
//! issue note.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use tokio::net::TcpStream;

/// Arguments of `fleet bench soak`.
#[derive(Args, Debug)]
pub(crate) struct SoakBench {
    /// Connections that open and never send a request.
    #[arg(long, default_value_t = 10_000)]
    idle: usize,
    /// Open watches.
    #[arg(long, default_value_t = 2_000)]
    watches: usize,
    /// Clients sending costly or malformed requests in a loop.
    #[arg(long, default_value_t = 50)]
    abusive: usize,
    /// How long the siege lasts.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
}

/// Runs the benchmark.
pub(crate) fn run(args: SoakBench) -> Result<()> {
    let data = tempfile::tempdir().context("a scratch directory")?;
    let fleet = std::env::current_exe()?.with_file_name("fleet");
    if !fleet.exists() {
        bail!("{} is missing: build the workspace first", fleet.display());
    }
    let port = fleet_testkit::free_port();
    let mut hub = std::process::Command::new(&fleet)
        .args(["hub", "--listen", &format!("127.0.0.1:{port}"), "--data"])
        .arg(data.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", fleet.display()))?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let result = runtime.block_on(siege(&args, data.path(), port, hub.id()));
    // The clients go first, so that none reports the hub going away.
    runtime.shutdown_timeout(Duration::from_millis(500));
    // Stopping the hub changes no figure; a failure to kill it leaves a process, not a result.
    let _ = hub.kill();
    let _ = hub.wait();
    result
}

async fn admin_client(data: &std::path::Path) -> Result<kube::Client> {
    let path = data.join("local.kubeconfig");
    for _ in 0..100 {
        if path.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let file = kube::config::Kubeconfig::read_from(&path)?;
    let mut config = kube::Config::from_custom_kubeconfig(file, &Default::default()).await?;
    // A refusal is an answer here, not something to retry.
    config.read_timeout = Some(Duration::from_secs(30));
    Ok(kube::Client::try_from(config)?)
}

/// Holds `count` connections that send nothing, reopening each one the hub closes.
fn idle_connections(port: u16, count: usize, stop: Arc<AtomicBool>, reopened: Arc<AtomicUsize>) {
    for _ in 0..count {
        let (stop, reopened) = (stop.clone(), reopened.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)).await else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                let mut buffer = [0u8; 64];
                // Returns when the hub closes the connection (its first-request timeout).
                let _ = tokio::io::AsyncReadExt::read(&mut stream, &mut buffer).await;
                reopened.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

/// One abusive client: `kind` picks what it sends, over and over.
async fn abuse(client: kube::Client, kind: usize, stop: Arc<AtomicBool>, sent: Arc<AtomicUsize>) {
    let deep = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: deep}}\nextra: {}{}\n",
        "[".repeat(60_000),
        "]".repeat(60_000)
    );
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": format!("big-{kind}")},
                     "data": {"blob": "y".repeat(1024 * 1024)}});
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let _ = match kind % 4 {
            0 => {
                let request = http::Request::patch(
                    "/api/v1/namespaces/default/configmaps/deep?fieldManager=abuse",
                )
                .header("Content-Type", "application/apply-patch+yaml")
                .body(deep.clone().into_bytes());
                match request {
                    Ok(request) => client.request_text(request).await.map(|_| ()),
                    Err(_) => Ok(()),
                }
            }
            1 => {
                let mut object = big.clone();
                object["data"]["round"] = json!(round.to_string());
                configmaps
                    .patch(
                        &format!("big-{kind}"),
                        &PatchParams::apply("abuse").force(),
                        &Patch::Apply(object),
                    )
                    .await
                    .map(|_| ())
            }
            2 => configmaps
                .list(&kube::api::ListParams::default().labels("!!!"))
                .await
                .map(|_| ()),
            _ => {
                let request = http::Request::get("/api/v1/namespaces")
                    .header("Authorization", "Bearer not-a-token")
                    .body(Vec::new());
                match request {
                    Ok(request) => client.request_text(request).await.map(|_| ()),
                    Err(_) => Ok(()),
                }
            }
        };
        sent.fetch_add(1, Ordering::Relaxed);
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

async fn siege(args: &SoakBench, data: &std::path::Path, port: u16, hub_pid: u32) -> Result<()> {
    let admin = admin_client(data).await?;
    let pid = hub_pid.to_string();
    let configmaps: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    let probe: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "probe"}, "data": {"n": "0"}}))?;
    // The hub may still be starting.
    let mut created = false;
    for _ in 0..100 {
        if configmaps
            .create(&PostParams::default(), &probe)
            .await
            .is_ok()
        {
            created = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if !created {
        bail!("the hub did not start on port {port}");
    }
    println!(
        "hub pid {pid} on port {port}; before the siege: {} MiB resident",
        crate::measure::rss_kib(&pid) / 1024
    );

    let stop = Arc::new(AtomicBool::new(false));
    let reopened = Arc::new(AtomicUsize::new(0));
    idle_connections(port, args.idle, stop.clone(), reopened.clone());

    let events = Arc::new(AtomicUsize::new(0));
    for i in 0..args.watches {
        // Each watch its own client: its own connection, as separate agents would have.
        let (client, events, stop) = (admin_client(data).await?, events.clone(), stop.clone());
        tokio::spawn(async move {
            let api: Api<ConfigMap> = Api::namespaced(client, "default");
            let params = WatchParams::default()
                .fields("metadata.name=probe")
                .timeout(290);
            while !stop.load(Ordering::Relaxed) {
                let Ok(stream) = api.watch(&params, "0").await else {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                };
                let mut stream = stream.boxed();
                while let Some(Ok(event)) = stream.next().await {
                    if matches!(event, WatchEvent::Modified(_)) {
                        events.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        if i % 200 == 199 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    let sent = Arc::new(AtomicUsize::new(0));
    for kind in 0..args.abusive {
        tokio::spawn(abuse(
            admin_client(data).await?,
            kind,
            stop.clone(),
            sent.clone(),
        ));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let settled = crate::measure::rss_kib(&pid);
    println!(
        "siege on: {} idle connections, {} watches, {} abusive clients; hub at {} MiB",
        args.idle,
        args.watches,
        args.abusive,
        settled / 1024
    );

    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut memory = Vec::new();
    let mut failures = 0usize;
    let mut n = 0u64;
    while started.elapsed() < Duration::from_secs(args.seconds) {
        n += 1;
        let asked = Instant::now();
        let read = configmaps.get("probe").await;
        let patch = json!({"data": {"n": n.to_string()}});
        let written = configmaps
            .patch("probe", &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        if read.is_err() || written.is_err() {
            failures += 1;
        }
        latencies.push(asked.elapsed() / 2);
        if n.is_multiple_of(50) {
            memory.push(crate::measure::rss_kib(&pid));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::Relaxed);
    latencies.sort();
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "admin: {} requests in {} s, {failures} failed; p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target: p99 < 100 ms)",
        latencies.len() * 2,
        args.seconds,
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
    println!(
        "hub memory: {:.0} MiB when the siege settled, then {} (MiB, every ~5 s), {:.0} MiB at the end",
        mib(settled),
        memory.iter().map(|k| format!("{:.0}", mib(*k))).collect::<Vec<_>>().join(" "),
        mib(crate::measure::rss_kib(&pid)),
    );
    println!(
        "during it: {} idle connections closed by the hub and reopened, {} abusive requests, {} changes delivered to watches",
        reopened.load(Ordering::Relaxed),
        sent.load(Ordering::Relaxed),
        events.load(Ordering::Relaxed),
    );
    Ok(())
}
