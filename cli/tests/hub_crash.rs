//! `kill -9` of `fleet hub` under write load loses no acknowledged write and leaves no
//! half-written object.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// The acknowledged writes each round waits for before its crash: six rounds make more
/// than the 200 the test asks for.
const ACKED_PER_ROUND: usize = 40;

/// What the test knows about an object after a crash.
#[derive(Debug, Clone)]
enum Known {
    /// The write was acknowledged: this value must be there.
    Acked(String),
    /// The write was in flight: the old value (or nothing) or the new one.
    Either(Option<String>, String),
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn start_hub(data: &Path, port: u16) -> Child {
    Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(["hub", "--data"])
        .arg(data)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("fleet hub starts")
}

async fn connect(data: &Path) -> Api<ConfigMap> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let kubeconfig = fleet_hub::serve::kubeconfig_path(data, "local");
        if let Ok(config) = kube::config::Kubeconfig::read_from(&kubeconfig) {
            if let Ok(config) =
                kube::Config::from_custom_kubeconfig(config, &Default::default()).await
            {
                if let Ok(client) = kube::Client::try_from(config) {
                    let api: Api<ConfigMap> = Api::namespaced(client, "default");
                    if api.list(&ListParams::default().limit(1)).await.is_ok() {
                        return api;
                    }
                }
            }
        }
        assert!(Instant::now() < deadline, "the hub did not come up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn value_of(config_map: &ConfigMap) -> Option<String> {
    config_map.data.as_ref().and_then(|d| d.get("v").cloned())
}

async fn verify(api: &Api<ConfigMap>, known: &BTreeMap<String, Known>) {
    let listed = api
        .list(&ListParams::default().labels("crash=test"))
        .await
        .expect("list");
    let found: BTreeMap<String, Option<String>> = listed
        .items
        .iter()
        .map(|c| (c.metadata.name.clone().unwrap_or_default(), value_of(c)))
        .collect();
    for (name, expectation) in known {
        let actual = found.get(name).cloned().flatten();
        match expectation {
            Known::Acked(value) => assert_eq!(
                actual.as_deref(),
                Some(value.as_str()),
                "{name}: acknowledged write lost"
            ),
            Known::Either(old, new) => assert!(
                actual.as_ref() == Some(new) || actual == *old,
                "{name}: {actual:?} is neither {old:?} nor {new:?}"
            ),
        }
    }
    for name in found.keys() {
        assert!(known.contains_key(name), "{name} was never written");
    }
}

async fn writer(
    api: Api<ConfigMap>,
    prefix: String,
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicUsize>,
) -> Vec<(String, Known)> {
    let mut outcomes = Vec::new();
    let mut mine: Vec<(String, String)> = Vec::new();
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let (name, old) = match i
            .is_multiple_of(3)
            .then(|| mine.get(i % mine.len().max(1)).cloned())
            .flatten()
        {
            Some((name, old)) => (name, Some(old)),
            None => (format!("{prefix}-{i}"), None),
        };
        let value = format!("{prefix}-{i}");
        let result = match &old {
            None => {
                let object: ConfigMap = serde_json::from_value(json!({
                    "metadata": {"name": name, "labels": {"crash": "test"}}, "data": {"v": value}}))
                .expect("a ConfigMap");
                api.create(&PostParams::default(), &object)
                    .await
                    .map(|_| ())
            }
            Some(_) => api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {"v": value}})),
                )
                .await
                .map(|_| ()),
        };
        match result {
            Ok(()) => {
                acked.fetch_add(1, Ordering::Relaxed);
                outcomes.push((name.clone(), Known::Acked(value.clone())));
                match mine.iter_mut().find(|(n, _)| *n == name) {
                    Some(entry) => entry.1 = value,
                    None => mine.push((name, value)),
                }
            }
            Err(_) => {
                outcomes.push((name, Known::Either(old, value)));
                return outcomes;
            }
        }
    }
    outcomes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    let mut known: BTreeMap<String, Known> = BTreeMap::new();
    let mut acknowledged = 0usize;
    let seed = Instant::now().elapsed().subsec_nanos() as u64 ^ std::process::id() as u64;
    for round in 0..6u64 {
        let mut hub = start_hub(dir.path(), port);
        let api = connect(dir.path()).await;
        verify(&api, &known).await;
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(AtomicUsize::new(0));
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let prefix = format!("r{round}-w{w}");
                tokio::spawn(writer(api.clone(), prefix, stop.clone(), acked.clone()))
            })
            .collect();
        let delay = 150 + (seed.wrapping_mul(round + 7).wrapping_mul(2_654_435_761) % 450);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        // On a loaded machine the delay may pass with few writes done: the crash waits for
        // enough of them (or 10 s), so that every round tests a hub under load.
        let waited = Instant::now();
        while acked.load(Ordering::Relaxed) < ACKED_PER_ROUND
            && waited.elapsed() < Duration::from_secs(10)
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        hub.kill().expect("kill -9");
        hub.wait().expect("reaped");
        stop.store(true, Ordering::Relaxed);
        for writer in writers {
            for (name, outcome) in writer.await.expect("writer") {
                if matches!(outcome, Known::Acked(_)) {
                    acknowledged += 1;
                }
                let outcome = match (known.get(&name), outcome) {
                    (Some(Known::Acked(previous)), Known::Either(_, new)) => {
                        Known::Either(Some(previous.clone()), new)
                    }
                    (_, outcome) => outcome,
                };
                known.insert(name, outcome);
            }
        }
        // Settle what the restarted hub shows, so the next round knows exact values.
        let mut restarted = start_hub(dir.path(), port);
        let api = connect(dir.path()).await;
        verify(&api, &known).await;
        let listed = api
            .list(&ListParams::default().labels("crash=test"))
            .await
            .expect("list");
        known = listed
            .items
            .iter()
            .map(|c| {
                (
                    c.metadata.name.clone().unwrap_or_default(),
                    Known::Acked(value_of(c).unwrap_or_default()),
                )
            })
            .collect();
        restarted.kill().expect("stopped");
        restarted.wait().expect("reaped");
    }
    assert!(
        acknowledged > 200,
        "only {acknowledged} writes were acknowledged; the load was too light"
    );
    eprintln!("{acknowledged} acknowledged writes over 6 crashes, none lost");
}
