//! `fleet bench attack`: an attacker's and an unlucky operator's probes against the
//! control plane as production runs it (`fleet hub`, `fleet gitjob`, `fleet controller`,
//! each its own process, gitjob fetching nothing from its own host), on loopback, bounded
//! in count and time (under a minute). Each probe prints whether the system held; the
//! last line says how many did, with each process's peak memory and file descriptors.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::pin::Pin;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use fleet_api::{Bundle, Cluster, ClusterRegistration, GitRepo};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::processes::ControlPlane;

/// Arguments of `fleet bench attack`.
#[derive(Args, Debug)]
pub(crate) struct AttackBench {
    /// Keep the control plane's data and logs here (default: a temporary directory).
    #[arg(long)]
    keep: Option<std::path::PathBuf>,
}

/// What a probe found: whether the system held, and what was seen.
type Verdict = Result<String, String>;

/// A probe: its name and the attack.
type Probe<'a> = (&'static str, Pin<Box<dyn Future<Output = Verdict> + 'a>>);

/// The namespace the probes work in.
const NS: &str = "fleet-default";

/// Runs the suite.
pub(crate) fn run(args: AttackBench) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let scratch = tempfile::tempdir()?;
        let dir = args.keep.clone().unwrap_or_else(|| scratch.path().to_path_buf());
        let plane = ControlPlane::start_with(&dir, 0, false).await?;
        let namespaces: Api<Namespace> = Api::all(plane.admin.clone());
        let namespace = serde_json::from_value(json!({"metadata": {"name": NS}}))?;
        let _ = namespaces.create(&PostParams::default(), &namespace).await;
        let probes = probes(&plane);
        let count = probes.len();
        let started = Instant::now();
        let verdicts = futures::future::join_all(
            probes.into_iter().map(|(name, probe)| async move { (name, probe.await) }),
        )
        .await;
        let mut held = 0;
        for (name, verdict) in &verdicts {
            match verdict {
                Ok(seen) => {
                    held += 1;
                    println!("held    {name}: {seen}");
                }
                Err(seen) => println!("FAILED  {name}: {seen}"),
            }
        }
        let secret = plane.admin_token().to_string();
        let leaked: Vec<&str> = (plane.logs().iter())
            .filter(|(_, log)| log.contains(&secret))
            .map(|(name, _)| *name)
            .collect();
        let count = count + 1;
        if leaked.is_empty() {
            held += 1;
            println!("held    no process logged a token: the hub's, gitjob's and the controller's logs checked");
        } else {
            println!("FAILED  no process logged a token: {leaked:?} logged the admin token");
        }
        let memory: Vec<String> = (plane.peak_rss_kib().iter())
            .map(|(name, kib)| format!("{name} {} MiB", kib / 1024))
            .collect();
        let fds: Vec<String> = (plane.open_fds().iter())
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        plane.stop().await;
        println!(
            "fleet bench attack: {held} of {count} probes held in {:.0} s; peak memory {}; file descriptors at the end {}",
            started.elapsed().as_secs_f64(),
            memory.join(", "),
            fds.join(", ")
        );
        if held < count {
            anyhow::bail!("{} probes failed", count - held);
        }
        Ok(())
    })
}

/// Every probe, to run at once.
fn probes(plane: &ControlPlane) -> Vec<Probe<'_>> {
    let hub = plane.hub;
    let webhook = plane.webhook;
    let admin = plane.admin.clone();
    let mut probes: Vec<Probe<'_>> = (refusals().into_iter())
        .map(|(name, refusal)| -> Probe<'_> { (name, Box::pin(refused(admin.clone(), refusal))) })
        .collect();
    probes.extend::<Vec<Probe<'_>>>(vec![
        (
            "100 idle connections to the hub",
            Box::pin(idle(hub, 100, Duration::from_secs(10))),
        ),
        (
            "an idle connection to the webhook port",
            Box::pin(idle(webhook, 1, Duration::from_secs(10))),
        ),
        (
            "refused HTTP/2 uploads of 2 MiB",
            Box::pin(refused_uploads(hub, 10)),
        ),
        (
            "a request body sent at 2 KiB/s",
            Box::pin(slow_body(hub, plane.admin_token().to_string())),
        ),
        (
            "a webhook payload that never ends",
            Box::pin(endless_payload(webhook)),
        ),
        (
            "unsigned pushes tell nothing of followed repositories",
            Box::pin(push_oracle(admin.clone(), webhook)),
        ),
        (
            "a GitRepo reading gitjob's own host",
            Box::pin(own_host(admin.clone())),
        ),
        (
            "a Bundle's chart on the controller's own host",
            Box::pin(chart_on_own_host(admin.clone())),
        ),
        (
            "a registration naming another client's cluster",
            Box::pin(hijack(admin.clone())),
        ),
        (
            "a registration setting Fleet's reserved labels",
            Box::pin(reserved_labels(admin.clone())),
        ),
    ]);
    probes
}

/// Sends `body` as `content_type` with `method` to `path`; the status code.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<u16, String> {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(body)
        .map_err(|e| e.to_string())?;
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .map_err(|e| e.to_string())?;
    Ok(response.status().as_u16())
}

/// Held when `got` is `wanted` within `limit`.
fn expect(
    what: &str,
    got: Result<u16, String>,
    wanted: u16,
    took: Duration,
    limit: Duration,
) -> Verdict {
    match got {
        Ok(code) if code == wanted && took <= limit => Ok(format!("{what}: {code} in {took:.1?}")),
        Ok(code) => Err(format!(
            "{what}: {code} in {took:.1?}, wanted {wanted} within {limit:?}"
        )),
        Err(error) => Err(format!("{what}: {error}")),
    }
}

/// A request the hub must refuse: how it is sent, and the status wanted within a time.
struct Refusal {
    method: &'static str,
    path: String,
    content_type: &'static str,
    body: Vec<u8>,
    wanted: u16,
    within: Duration,
}

/// Sends `refusal` as the admin; held when the hub answers as wanted, in time.
async fn refused(admin: kube::Client, refusal: Refusal) -> Verdict {
    let started = Instant::now();
    let got = send(
        &admin,
        refusal.method,
        &refusal.path,
        refusal.content_type,
        refusal.body,
    )
    .await;
    expect(
        "refused",
        got,
        refusal.wanted,
        started.elapsed(),
        refusal.within,
    )
}

/// The bodies the hub must refuse, by probe.
fn refusals() -> Vec<(&'static str, Refusal)> {
    let apply = |name: &str, body: String| Refusal {
        method: "PATCH",
        path: format!("/api/v1/namespaces/{NS}/configmaps/{name}?fieldManager=probe"),
        content_type: "application/apply-patch+yaml",
        body: body.into_bytes(),
        wanted: 400,
        within: Duration::from_secs(2),
    };
    let post = |path: String, body: serde_json::Value, wanted: u16| Refusal {
        method: "POST",
        path,
        content_type: "application/json",
        body: body.to_string().into_bytes(),
        wanted,
        within: Duration::from_secs(5),
    };
    vec![
        (
            "YAML aliases expanding to 128 MiB",
            apply(
                "bomb",
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: bomb}}\ndata: {{a: &a {}}}\nb: [{}]\n",
                    "x".repeat(64 * 1024),
                    "*a, ".repeat(2000)
                ),
            ),
        ),
        (
            "YAML nested 60,000 levels",
            apply(
                "deep",
                format!("kind: ConfigMap\nextra: {}{}\n", "[".repeat(60_000), "]".repeat(60_000)),
            ),
        ),
        (
            "a 4 MiB body",
            post(
                format!("/api/v1/namespaces/{NS}/configmaps"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "huge"},
                       "data": {"blob": "x".repeat(4 * 1024 * 1024)}}),
                413,
            ),
        ),
        (
            "a Secret whose data is not base64",
            post(
                format!("/api/v1/namespaces/{NS}/secrets"),
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"},
                       "data": {"token": "not base64!"}}),
                400,
            ),
        ),
        (
            "a Deployment with -5 replicas",
            post(
                format!("/apis/apps/v1/namespaces/{NS}/deployments"),
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "neg"},
                    "spec": {"replicas": -5, "selector": {"matchLabels": {"a": "b"}},
                        "template": {"metadata": {"labels": {"a": "b"}},
                            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
                422,
            ),
        ),
    ]
}

/// Opens `count` connections to `addr` that send nothing; held when every one is closed
/// by the server within `patience` (plus a margin).
async fn idle(addr: SocketAddr, count: usize, patience: Duration) -> Verdict {
    let waited = tokio::task::spawn_blocking(move || {
        let connections: Vec<TcpStream> = (0..count)
            .filter_map(|_| TcpStream::connect(addr).ok())
            .collect();
        let started = Instant::now();
        let mut closed = 0;
        for mut connection in connections {
            let left = (patience + Duration::from_secs(5)).saturating_sub(started.elapsed());
            let _ = connection.set_read_timeout(Some(left.max(Duration::from_millis(1))));
            let mut buffer = [0u8; 64];
            if matches!(connection.read(&mut buffer), Ok(0)) {
                closed += 1;
            }
        }
        (closed, started.elapsed())
    })
    .await
    .map_err(|e| e.to_string())?;
    if waited.0 == count {
        Ok(format!(
            "all {count} closed by the server after {:.1?}",
            waited.1
        ))
    } else {
        Err(format!(
            "{} of {count} closed within {:?}",
            waited.0,
            patience + Duration::from_secs(5)
        ))
    }
}

/// Uploads a 2 MiB body over HTTP/2 with a wrong token, `count` times, with `curl` (which
/// calls a reset of the stream it still sends on error 92); held when every upload gets its
/// 401.
async fn refused_uploads(hub: SocketAddr, count: usize) -> Verdict {
    let body = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    std::fs::write(body.path(), vec![b'a'; 2 << 20]).map_err(|e| e.to_string())?;
    let url = format!("https://{hub}/api/v1/namespaces/default/configmaps");
    for attempt in 1..=count {
        let output = tokio::process::Command::new("curl")
            .args([
                "-sk",
                "--http2",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-X",
                "POST",
            ])
            .args([
                "-H",
                "Authorization: Bearer wrong",
                "-H",
                "Content-Type: application/json",
            ])
            .arg("--data-binary")
            .arg(format!("@{}", body.path().display()))
            .arg(&url)
            .output()
            .await
            .map_err(|e| format!("running curl: {e}"))?;
        let code = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() || code != "401" {
            return Err(format!(
                "upload {attempt}: curl exit {:?}, status {code}",
                output.status.code()
            ));
        }
    }
    Ok(format!("{count} of {count} answered 401"))
}

/// Sends an admin's request whose 1 MiB body comes at 2 KiB/s (it would take eight
/// minutes); held when the hub answers 408 within its 60 s.
async fn slow_body(hub: SocketAddr, token: String) -> Verdict {
    let body = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    std::fs::write(body.path(), vec![b' '; 1 << 20]).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let output = tokio::process::Command::new("curl")
        .args(["-sk", "--http1.1", "--limit-rate", "2k", "-o", "/dev/null"])
        .args(["-w", "%{http_code}", "-X", "POST", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .args(["-H", "Content-Type: application/json", "--data-binary"])
        .arg(format!("@{}", body.path().display()))
        .arg(format!(
            "https://{hub}/api/v1/namespaces/default/configmaps"
        ))
        .output()
        .await
        .map_err(|e| format!("running curl: {e}"))?;
    let took = started.elapsed();
    let code = String::from_utf8_lossy(&output.stdout).to_string();
    match code.as_str() {
        "408" if took < Duration::from_secs(75) => Ok(format!("408 after {took:.1?}")),
        _ => Err(format!(
            "status {code} after {took:.1?}, wanted 408 within 75 s"
        )),
    }
}

async fn endless_payload(webhook: SocketAddr) -> Verdict {
    tokio::task::spawn_blocking(move || {
        let mut connection = TcpStream::connect(webhook).map_err(|e| e.to_string())?;
        connection
            .write_all(b"POST /generic HTTP/1.1\r\nHost: gitjob\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"repository\":")
            .map_err(|e| e.to_string())?;
        let _ = connection.set_read_timeout(Some(Duration::from_secs(45)));
        let started = Instant::now();
        let mut answer = Vec::new();
        let _ = connection.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        let took = started.elapsed();
        if answer.starts_with("HTTP/1.1 408") && took < Duration::from_secs(40) {
            Ok(format!("answered 408 and closed after {took:.1?}"))
        } else {
            Err(format!("after {took:.1?}: {:?}", answer.lines().next()))
        }
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Posts an unsigned GitHub push for `repository`; the status and body.
fn unsigned_push(
    webhook: SocketAddr,
    repository: &str,
    delivery: &str,
) -> Result<(u16, String), String> {
    let body =
        json!({"ref": "refs/heads/main", "after": "0123456789abcdef0123456789abcdef01234567",
                      "repository": {"clone_url": repository}})
        .to_string();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent
        .post(format!("http://{webhook}/"))
        .header("X-GitHub-Event", "push")
        .header("X-GitHub-Delivery", delivery)
        .send(body.as_bytes())
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    Ok((
        status,
        response.body_mut().read_to_string().unwrap_or_default(),
    ))
}

/// Unsigned pushes for a followed repository, one whose GitRepo has its own webhook
/// secret, and an unknown one; held when all three get the same 401.
async fn push_oracle(admin: kube::Client, webhook: SocketAddr) -> Verdict {
    let followed = "https://git.example.com/followed";
    let guarded = "https://git.example.com/guarded";
    create::<k8s_openapi::api::core::v1::Secret>(
        &admin,
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "guarded-webhook", "namespace": NS},
               "stringData": {"github": "only-the-forge-knows"}}),
    )
    .await?;
    for (name, repo, webhook_secret) in [
        ("followed", followed, None),
        ("guarded", guarded, Some("guarded-webhook")),
    ] {
        create::<GitRepo>(
            &admin,
            json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
                   "metadata": {"name": name, "namespace": NS},
                   "spec": {"repo": repo, "branch": "main", "pollingInterval": "1h",
                            "webhookSecret": webhook_secret}}),
        )
        .await?;
    }
    tokio::task::spawn_blocking(move || {
        let one = unsigned_push(webhook, followed, "probe-1")?;
        let own = unsigned_push(webhook, guarded, "probe-2")?;
        let other = unsigned_push(webhook, "https://git.example.com/unknown", "probe-3")?;
        if one == other && own == other && one.0 == 401 {
            Ok("the same 401 for a followed, a guarded and an unknown repository".to_string())
        } else {
            Err(format!(
                "followed: {one:?}; guarded: {own:?}; unknown: {other:?}"
            ))
        }
    })
    .await
    .map_err(|e| e.to_string())?
}

async fn own_host(admin: kube::Client) -> Verdict {
    let gitrepos = create::<GitRepo>(
        &admin,
        json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
               "metadata": {"name": "own-host", "namespace": NS},
               "spec": {"repo": "/etc", "branch": "main"}}),
    )
    .await?;
    let look = || async {
        let status = gitrepos.get("own-host").await.ok()?.status?;
        refusal(
            &status.conditions,
            "Accepted",
            "local paths are not fetched",
        )
    };
    refused_in_status("GitRepo", look, || Ok(())).await
}

/// Looks every quarter second, for 20 s, whether `look` finds a refusal in an object's
/// status, and that `meanwhile` holds; held with the refusal's message.
async fn refused_in_status<F, Fut>(
    what: &str,
    look: F,
    meanwhile: impl Fn() -> Result<(), String>,
) -> Verdict
where
    F: Fn() -> Fut,
    Fut: Future<Output = Option<String>>,
{
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        meanwhile()?;
        if let Some(message) = look().await {
            let took = started.elapsed();
            return Ok(format!("refused after {took:.1?}: {message}"));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Err(format!("no refusal in the {what}'s status within 20 s"))
}

/// The message of the condition `kind` of `conditions` when it is False and says `says`.
fn refusal(conditions: &[fleet_api::Condition], kind: &str, says: &str) -> Option<String> {
    (conditions.iter())
        .find(|c| c.type_ == kind && c.status == "False")
        .and_then(|c| c.message.clone())
        .filter(|m| m.contains(says))
}

/// Creates `object`, a `K`, in the probes' namespace; the API it was created through.
async fn create<K>(admin: &kube::Client, object: serde_json::Value) -> Result<Api<K>, String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let typed: K = serde_json::from_value(object).map_err(|e| e.to_string())?;
    let api: Api<K> = Api::namespaced(admin.clone(), NS);
    api.create(&PostParams::default(), &typed)
        .await
        .map_err(|e| e.to_string())?;
    Ok(api)
}

/// Creates a ClusterRegistration; waits up to `patience` for it to be granted.
async fn register(
    admin: &kube::Client,
    body: serde_json::Value,
    patience: Duration,
) -> Result<bool, String> {
    let name = body["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let registrations = create::<ClusterRegistration>(admin, body).await?;
    let started = Instant::now();
    while started.elapsed() < patience {
        let granted = registrations
            .get(&name)
            .await
            .ok()
            .and_then(|r| r.status)
            .is_some_and(|s| s.granted);
        if granted {
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(false)
}

fn registration(
    name: &str,
    cluster: &str,
    client: &str,
    labels: serde_json::Value,
) -> serde_json::Value {
    json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterRegistration",
           "metadata": {"name": name, "namespace": NS},
           "spec": {"clientID": client, "clientRandom": format!("{:064x}", name.len() as u64 * 7919),
                    "clusterName": cluster, "clusterLabels": labels}})
}

/// A Bundle whose chart is a URL on the controller's loopback, targeted at a cluster; held
/// when the Bundle's status says it was not fetched and nothing connected to that port.
async fn chart_on_own_host(admin: kube::Client) -> Verdict {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    create::<Cluster>(
        &admin,
        json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
               "metadata": {"name": "chart-target", "namespace": NS, "labels": {"probe": "chart"}},
               "spec": {}}),
    )
    .await?;
    let bundles = create::<Bundle>(
        &admin,
        json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
               "metadata": {"name": "chart-on-own-host", "namespace": NS},
               "spec": {"helm": {"chart": format!("http://127.0.0.1:{port}/chart.tgz")},
                        "targets": [{"clusterSelector": {"matchLabels": {"probe": "chart"}}}]}}),
    )
    .await?;
    let look = || async {
        let status = bundles.get("chart-on-own-host").await.ok()?.status?;
        refusal(&status.conditions, "Ready", "not fetched")
    };
    let untouched = || match listener.accept() {
        Ok(_) => Err(format!("the controller connected to 127.0.0.1:{port}")),
        Err(_) => Ok(()),
    };
    refused_in_status("Bundle", look, untouched).await
}

async fn hijack(admin: kube::Client) -> Verdict {
    create::<Cluster>(
        &admin,
        json!({"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
               "metadata": {"name": "prod", "namespace": NS}, "spec": {"clientID": "the-real-prod"}}),
    )
    .await?;
    let thief = registration("thief", "prod", "guessed", json!({}));
    match register(&admin, thief, Duration::from_secs(8)).await? {
        false => Ok("not granted within 8 s".into()),
        true => Err("granted: the registrant holds prod's credential".into()),
    }
}

async fn reserved_labels(admin: kube::Client) -> Verdict {
    let labels = json!({"env": "dev", "fleet.cattle.io/cluster-group": "prod"});
    let asked = registration("labelled", "labelled", "client-labelled", labels);
    if !register(&admin, asked, Duration::from_secs(20)).await? {
        return Err("the registration was not granted within 20 s".into());
    }
    let cluster = Api::<Cluster>::namespaced(admin, NS)
        .get("labelled")
        .await
        .map_err(|e| e.to_string())?;
    let labels = cluster.metadata.labels.unwrap_or_default();
    match (
        labels.get("env"),
        labels.get("fleet.cattle.io/cluster-group"),
    ) {
        (Some(_), None) => Ok("the Cluster has env, not fleet.cattle.io/cluster-group".into()),
        _ => Err(format!("the Cluster's labels: {labels:?}")),
    }
}
