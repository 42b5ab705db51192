//! The control plane as production runs it, for `fleet bench fleet --processes`: `fleet
//! hub`, `fleet controller` and `fleet gitjob`, each a process of the `fleet` binary built
//! beside this one, reached over HTTPS as any client reaches them. The simulated agents
//! stay in the benchmark's process, with their member clusters, and reach the hub over
//! HTTP/2 with TLS: [`AGENTS_PER_CONNECTION`] agents share a connection (10,000 agents with
//! connections of their own would need a file descriptor each on both sides).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use fleet_hub::requests::RequestKind;
use fleet_testkit::free_address;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::ListParams;
use kube::client::ConfigExt;
use kube::Api;
use tower::ServiceBuilder;

/// Agents sharing one HTTP/2 connection to the hub. Each holds a watch open and makes at
/// most a few requests at once (four deployments at a time), well under the 200 streams
/// the hub allows a connection.
pub(crate) const AGENTS_PER_CONNECTION: usize = 32;

/// How long the hub may take to answer after starting.
const HUB_PATIENCE: Duration = Duration::from_secs(60);

/// How long a process may take to stop when asked before it is killed.
const STOP_PATIENCE: Duration = Duration::from_secs(10);

/// An HTTP/2 connection over TLS to the hub, shared by the agents given it.
type Connection =
    hyper_util::client::legacy::Client<HttpsConnector<HttpConnector>, kube::client::Body>;

/// A process of the control plane.
struct Process {
    /// `hub`, `controller` or `gitjob`.
    name: &'static str,
    child: Child,
    /// Its standard output and error.
    log: PathBuf,
}

impl Process {
    /// Runs `fleet ARGS` as the process `name`, its output going to `name.log` under
    /// `data`.
    fn spawn(fleet: &Path, data: &Path, name: &'static str, args: &[&OsStr]) -> Result<Self> {
        let log = data.join(format!("{name}.log"));
        let output = std::fs::File::create(&log)?;
        let child = Command::new(fleet)
            .args(args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(output.try_clone()?)
            .stderr(output)
            .spawn()
            .with_context(|| format!("starting {} {name}", fleet.display()))?;
        Ok(Self { name, child, log })
    }

    /// Fails, with the end of its log, if the process has exited.
    fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "fleet {} exited ({status}): {}",
                self.name,
                log_tail(&self.log)
            );
        }
        Ok(())
    }

    /// Asks the process to stop (SIGTERM, as Kubernetes asks a pod), waiting up to
    /// [`STOP_PATIENCE`] before it is killed (on drop).
    async fn stop(mut self) {
        let pid = i32::try_from(self.child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let asked = Instant::now();
        while matches!(self.child.try_wait(), Ok(None)) && asked.elapsed() < STOP_PATIENCE {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Process {
    /// A benchmark that fails part way leaves no process behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The hub, the controller and gitjob, each running as its own `fleet` process.
pub(crate) struct ControlPlane {
    /// The hub first, then gitjob and the controller.
    processes: Mutex<Vec<Process>>,
    /// How the hub's admin kubeconfig reaches it.
    config: kube::Config,
    /// The hub's admin token.
    admin_token: String,
    /// An admin client (kube-rs's own, over HTTP/1.1), for the benchmark's own requests.
    pub admin: kube::Client,
    /// Where gitjob hears push webhooks.
    pub webhook: SocketAddr,
    /// Where the hub listens (HTTPS).
    pub hub: SocketAddr,
    /// The agents' connections, each opened at its first request.
    connections: Vec<Connection>,
}

impl ControlPlane {
    /// Starts `fleet hub` with its data under `scratch`, installs Fleet's CRDs in it, then
    /// starts `fleet gitjob` (serving push webhooks on a free port) and `fleet controller`
    /// against it. The controller serves registrations, handing agents the hub's address.
    /// `agents` agents will reach the hub (see [`ControlPlane::agent_client`]).
    pub(crate) async fn start(scratch: &Path, agents: usize) -> Result<Self> {
        Self::start_with(scratch, agents, true).await
    }

    /// [`ControlPlane::start`], gitjob and the controller fetching from this machine only
    /// when `allow_local_sources` (their `--allow-local-sources`).
    pub(crate) async fn start_with(
        scratch: &Path,
        agents: usize,
        allow_local_sources: bool,
    ) -> Result<Self> {
        let fleet = fleet_binary()?;
        let data = scratch.join("control-plane");
        std::fs::create_dir_all(&data)?;
        let hub_data = data.join("hub");
        let hub = free_address().context("finding a free port")?;
        let listen = hub.to_string();
        let hub_args = [
            "hub".as_ref(),
            "--data".as_ref(),
            hub_data.as_os_str(),
            "--listen".as_ref(),
            listen.as_ref(),
        ];
        let mut processes = vec![Process::spawn(&fleet, &data, "hub", &hub_args)?];
        let kubeconfig =
            fleet_hub::serve::kubeconfig_path(&hub_data, fleet_local::MANAGEMENT_CLUSTER);
        let config = wait_for_hub(&mut processes, &kubeconfig).await?;
        let admin = kube::Client::try_from(config.clone())?;
        fleet_objects::client::install_fleet(&admin, "fleet-bench").await?;
        let webhook = free_address().context("finding a free port")?;
        let webhook_arg = webhook.to_string();
        let gitjob_data = data.join("gitjob");
        let mut gitjob_args: Vec<&OsStr> = vec![
            "gitjob".as_ref(),
            "--kubeconfig".as_ref(),
            kubeconfig.as_os_str(),
            "--data".as_ref(),
            gitjob_data.as_os_str(),
            "--webhook-listen".as_ref(),
            webhook_arg.as_ref(),
        ];
        if allow_local_sources {
            gitjob_args.push("--allow-local-sources".as_ref());
        }
        processes.push(Process::spawn(&fleet, &data, "gitjob", &gitjob_args)?);
        let controller_data = data.join("controller");
        let mut controller_args: Vec<&OsStr> = vec![
            "controller".as_ref(),
            "--kubeconfig".as_ref(),
            kubeconfig.as_os_str(),
            "--data".as_ref(),
            controller_data.as_os_str(),
        ];
        if allow_local_sources {
            controller_args.push("--allow-local-sources".as_ref());
        }
        processes.push(Process::spawn(
            &fleet,
            &data,
            "controller",
            &controller_args,
        )?);
        let connections = (0..agents.div_ceil(AGENTS_PER_CONNECTION))
            .map(|_| http2_connection(&config))
            .collect::<Result<_>>()?;
        Ok(Self {
            processes: Mutex::new(processes),
            admin_token: admin_token(&config)?,
            config,
            admin,
            webhook,
            hub,
            connections,
        })
    }

    /// A client of the hub for agent number `index`, presenting `token` (its service
    /// account's) or else the admin token, over the HTTP/2 connection it shares with the
    /// agents numbered next to it. It asks for objects without their managedFields, as
    /// `fleet agent` does.
    pub(crate) fn agent_client(&self, index: usize, token: Option<&str>) -> Result<kube::Client> {
        let connection =
            (self.connections.get(index / AGENTS_PER_CONNECTION)).with_context(|| {
                format!("agent {index} is more than the control plane was started for")
            })?;
        let token = token.unwrap_or(&self.admin_token);
        let authorization = http::HeaderValue::from_str(&format!("Bearer {token}"))
            .context("a token that cannot be a header")?;
        let (omit_name, omit_value) = fleet_objects::client::managed_fields_omitted();
        let service = ServiceBuilder::new()
            .layer(self.config.base_uri_layer())
            .map_request(move |mut request: http::Request<kube::client::Body>| {
                let headers = request.headers_mut();
                headers.insert(http::header::AUTHORIZATION, authorization.clone());
                headers.insert(omit_name.clone(), omit_value.clone());
                request
            })
            .service(connection.clone());
        Ok(kube::Client::new(service, "default"))
    }

    /// The CPU seconds each process has used so far, by name.
    pub(crate) fn cpu_seconds(&self) -> Vec<(&'static str, f64)> {
        self.each(crate::measure::cpu_seconds)
    }

    /// The peak resident memory of each process so far, in KiB, by name.
    pub(crate) fn peak_rss_kib(&self) -> Vec<(&'static str, u64)> {
        self.each(crate::measure::peak_rss_kib)
    }

    /// The file descriptors each process holds now, by name.
    pub(crate) fn open_fds(&self) -> Vec<(&'static str, usize)> {
        self.each(crate::measure::open_fds)
    }

    /// What each process has logged so far, by name.
    pub(crate) fn logs(&self) -> Vec<(&'static str, String)> {
        (self.processes().iter())
            .map(|p| (p.name, std::fs::read_to_string(&p.log).unwrap_or_default()))
            .collect()
    }

    /// The hub's admin token (a secret no process may log).
    pub(crate) fn admin_token(&self) -> &str {
        &self.admin_token
    }

    fn each<T>(&self, measure: impl Fn(&str) -> T) -> Vec<(&'static str, T)> {
        (self.processes().iter())
            .map(|p| (p.name, measure(&p.child.id().to_string())))
            .collect()
    }

    /// What the hub's process has served and holds, from its `/metrics`.
    pub(crate) async fn hub_counts(&self) -> Result<HubCounts> {
        HubCounts::read(&self.admin).await
    }

    /// Waits until a process exits; returns why, with the end of its log.
    pub(crate) async fn exited(&self) -> anyhow::Error {
        loop {
            let checked = (self.processes().iter_mut()).try_for_each(Process::check_running);
            if let Err(error) = checked {
                return error;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Stops the processes: the controllers first, then the hub.
    pub(crate) async fn stop(mut self) {
        self.connections.clear();
        let mut processes = std::mem::take(&mut *self.processes());
        while let Some(process) = processes.pop() {
            process.stop().await;
        }
    }

    fn processes(&self) -> std::sync::MutexGuard<'_, Vec<Process>> {
        self.processes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What a hub has served and holds (read here from the `/metrics` of the hub's process,
/// for its management cluster).
#[derive(Debug, Default)]
pub(crate) struct HubCounts {
    /// The requests served, by cluster, verb and resource (`apiserver_request_total`).
    pub requests: HashMap<RequestKind, u64>,
    /// The objects stored (`apiserver_storage_objects`, summed).
    pub objects: usize,
}

impl HubCounts {
    /// The counts of the API server `admin` reaches (the hub's process, or a real
    /// kube-apiserver, which has the same metrics), from its `/metrics`.
    pub(crate) async fn read(admin: &kube::Client) -> Result<Self> {
        let request = http::Request::get("/metrics")
            .body(Vec::new())
            .context("a request for /metrics")?;
        let text = admin.request_text(request).await?;
        Ok(Self::parse(&text))
    }

    /// Reads the samples of Prometheus' text format `text`; other lines are passed over.
    fn parse(text: &str) -> Self {
        let mut metrics = Self::default();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<u64>() else {
                continue;
            };
            if series.starts_with("apiserver_storage_objects{") {
                metrics.objects += usize::try_from(value).unwrap_or(usize::MAX);
            } else if series.starts_with("apiserver_request_total{") {
                let (Some(verb), Some(resource)) =
                    (label(series, "verb"), label(series, "resource"))
                else {
                    continue;
                };
                let kind = RequestKind {
                    cluster: fleet_local::MANAGEMENT_CLUSTER.to_string(),
                    verb: fleet_hub::metrics::verb_of_metric(verb),
                    resource: resource.to_string(),
                };
                *metrics.requests.entry(kind).or_default() += value;
            }
        }
        metrics
    }
}

/// The value of label `name` in a series such as `metric{a="x",b="y"}`.
fn label<'a>(series: &'a str, name: &str) -> Option<&'a str> {
    let start = series.find(&format!("{name}=\""))? + name.len() + 2;
    let rest = series.get(start..)?;
    rest.split('"').next()
}

/// Waits until the hub (the first of `processes`) has written `kubeconfig` and answers
/// through it; returns the configuration it holds.
async fn wait_for_hub(processes: &mut [Process], kubeconfig: &Path) -> Result<kube::Config> {
    let started = Instant::now();
    loop {
        if let Some(config) = answering(kubeconfig).await {
            return Ok(config);
        }
        processes.iter_mut().try_for_each(Process::check_running)?;
        if started.elapsed() > HUB_PATIENCE {
            bail!("the hub did not answer within {HUB_PATIENCE:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `fleet` binary beside this one (`cargo build` puts both in one directory).
fn fleet_binary() -> Result<PathBuf> {
    let me = std::env::current_exe().context("finding this binary")?;
    // A test binary sits one directory further down, in `deps/`.
    let candidates = me.ancestors().skip(1).take(2).map(|dir| dir.join("fleet"));
    for candidate in candidates {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!(
        "no fleet binary beside {} (build it: cargo build --release --bin fleet)",
        me.display()
    )
}

/// The configuration in `kubeconfig`, once the file is there and the hub answers through it.
async fn answering(kubeconfig: &Path) -> Option<kube::Config> {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).ok()?;
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .ok()?;
    let client = kube::Client::try_from(config.clone()).ok()?;
    let namespaces: Api<Namespace> = Api::all(client);
    namespaces
        .list(&ListParams::default().limit(1))
        .await
        .ok()?;
    Some(config)
}

/// The bearer token of an admin kubeconfig's configuration.
fn admin_token(config: &kube::Config) -> Result<String> {
    use secrecy::ExposeSecret;
    let token = (config.auth_info.token.as_ref()).context("the hub's kubeconfig has no token")?;
    Ok(token.expose_secret().to_string())
}

/// A new HTTP/2 connection (made at its first request) to the hub `config` names, trusting
/// its CA.
fn http2_connection(config: &kube::Config) -> Result<Connection> {
    let tls = config.rustls_client_config()?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http2()
        .wrap_connector(http);
    Ok(
        hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .http2_only(true)
            .build(https),
    )
}

/// The last lines of a process's log, for an error.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hubs_metrics_are_read_back_as_its_request_counts_and_objects() {
        let text = "# HELP apiserver_request_total Resource requests served.\n\
            # TYPE apiserver_request_total counter\n\
            apiserver_request_total{verb=\"PATCH\",resource=\"bundledeployments\"} 20\n\
            apiserver_request_total{verb=\"POST\",resource=\"secrets\"} 3\n\
            apiserver_storage_objects{resource=\"bundles.fleet.cattle.io\"} 10\n\
            apiserver_storage_objects{resource=\"secrets\"} 5\n";
        let metrics = HubCounts::parse(text);
        assert_eq!(metrics.objects, 15);
        let count = |verb: &str, resource: &str| {
            metrics.requests.get(&RequestKind {
                cluster: fleet_local::MANAGEMENT_CLUSTER.into(),
                verb: verb.into(),
                resource: resource.into(),
            })
        };
        assert_eq!(count("patch", "bundledeployments"), Some(&20));
        assert_eq!(count("create", "secrets"), Some(&3));
        assert_eq!(metrics.requests.len(), 2);
    }
}
