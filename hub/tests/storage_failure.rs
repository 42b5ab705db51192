//! A commit that fails (here: the disk refuses writes to the database's log, which is made
//! immutable) makes the hub refuse requests and say so in its health checks, instead of
//! answering 500 to everything while `/healthz` says ok, or dying of a fault in a mapped
//! file; once the disk takes writes again the hub reloads its state from the database and
//! serves again, without the write that never committed.

use std::time::{Duration, Instant};

use fleet_testkit::TestHub;
use serde_json::{json, Value};

async fn create(client: &kube::Client, name: &str) -> Result<(), String> {
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    let request = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("Content-Type", "application/json")
        .body(object.to_string().into_bytes())
        .expect("request");
    client
        .request::<Value>(request)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

async fn exists(client: &kube::Client, name: &str) -> Result<bool, String> {
    let request = http::Request::get(format!("/api/v1/namespaces/default/configmaps/{name}"))
        .body(Vec::new())
        .expect("request");
    match client.request::<Value>(request).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(other) => Err(other.to_string()),
    }
}

/// A client of the hub without kube's retries of 503, which would hide the answer for
/// minutes.
async fn client_without_retries(hub: &TestHub) -> kube::Client {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(hub.kubeconfig("local")).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config");
    config.default_retry = false;
    kube::Client::try_from(config).expect("client")
}

async fn healthy(client: &kube::Client) -> bool {
    let request = http::Request::get("/readyz")
        .body(Vec::new())
        .expect("request");
    client.request_text(request).await.is_ok()
}

/// Sets (`+i`) or clears (`-i`) the immutable attribute of `path` with `chattr`; `false`
/// when this user may not (only root may), so the test cannot inject the fault.
fn chattr(flag: &str, path: &std::path::Path) -> bool {
    let done = std::process::Command::new("chattr")
        .arg(flag)
        .arg(path)
        .status()
        .is_ok_and(|status| status.success());
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0");
    assert!(
        done || !root,
        "chattr {flag} {} failed as root",
        path.display()
    );
    done
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_is_reported_and_recovered_from() {
    let hub = TestHub::start(&["local"]).await;
    let client = client_without_retries(&hub).await;
    create(&client, "before").await.expect("a write");
    assert!(healthy(&client).await);
    assert!(
        !hub.data().join("hub.db-shm").exists(),
        "no memory-mapped index to fault on"
    );

    // The disk refuses writes to the log: the hub's next commit fails.
    let log = hub.data().join("hub.db-wal");
    if !chattr("+i", &log) {
        eprintln!("skipped: only root may make a file immutable");
        return;
    }
    let failed = create(&client, "lost").await;
    let unhealthy = !healthy(&client).await;
    let refused = exists(&client, "before").await.is_err();
    chattr("-i", &log);
    assert!(failed.is_err(), "the write was not committed");
    assert!(unhealthy, "health tells the truth");
    assert!(refused, "requests are refused meanwhile");

    let started = Instant::now();
    while !healthy(&client).await {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the hub recovers"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(exists(&client, "before").await, Ok(true));
    assert_eq!(
        exists(&client, "lost").await,
        Ok(false),
        "the uncommitted write is gone"
    );
    create(&client, "after").await.expect("writes work again");
    assert_eq!(exists(&client, "after").await, Ok(true));
}

/// The database deleted under a running hub (an operator cleaning up, a volume unmounted):
/// everything written from then on would be lost at the next start, so the hub says so in
/// its health checks and refuses requests, instead of answering as if all were well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_database_fails_the_health_checks() {
    for deleted in [&["hub.db", "hub.db-wal"][..], &["hub.db-wal"]] {
        deleted_files_fail_the_health_checks(deleted).await;
    }
}

/// The hub's database files `deleted` under it: health fails and writes are refused.
async fn deleted_files_fail_the_health_checks(deleted: &[&str]) {
    let hub = TestHub::start(&["local"]).await;
    let client = client_without_retries(&hub).await;
    create(&client, "before").await.expect("a write");
    assert!(healthy(&client).await);
    for file in deleted {
        std::fs::remove_file(hub.data().join(file)).expect("deleted");
    }
    let request = http::Request::get("/readyz")
        .body(Vec::new())
        .expect("request");
    let refused = client
        .request_text(request)
        .await
        .expect_err("unhealthy")
        .to_string();
    assert!(
        refused.contains("was removed or replaced"),
        "{deleted:?}: {refused}"
    );
    assert!(
        create(&client, "lost").await.is_err(),
        "writes that would be lost are refused"
    );
}
