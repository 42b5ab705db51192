//! Real Kubernetes on loopback, the judge of what fleet-rs does where users run it: for each
//! cluster an etcd, a kube-apiserver (RBAC, service-account tokens, an admin token) and a
//! kube-controller-manager (the token, namespace, garbage-collector and workload
//! controllers), built from the upstream Go modules by `.ci/real-k8s.sh`. Clusters have no
//! kubelet: a [`crate::fake_kubelet`] binds their Pods to one fake Node and runs them.
//!
//! Every process is started by one long-lived thread under `setpriv --pdeathsig KILL`, so
//! none outlives the test binary, whatever way it ends; a [`RealControlPlane`] kills its
//! own when dropped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine;

use crate::hub::Kubectl;
use crate::repos::free_port;

/// How long a cluster may take to serve, on a loaded two-core machine.
const START_PATIENCE: Duration = Duration::from_secs(120);

/// Real clusters started together, each with its own etcd, API server and controller
/// manager; all stopped when this is dropped.
pub struct RealControlPlane {
    clusters: Vec<RealCluster>,
    started_in: Duration,
    _dir: tempfile::TempDir,
}

/// One real cluster.
pub struct RealCluster {
    name: String,
    url: String,
    dir: PathBuf,
    ca_pem: String,
    admin_kubeconfig: PathBuf,
    processes: Vec<Child>,
    kubelet: Option<crate::fake_kubelet::FakeKubelet>,
}

impl RealControlPlane {
    /// Starts one cluster per name, all at once, and waits until each serves and its
    /// controller manager works (the `default` ServiceAccount exists). Builds the binaries
    /// first if `.ci/real-k8s.sh` has not.
    pub async fn start(names: &[&str]) -> Self {
        let started = Instant::now();
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        let binaries = binaries();
        let mut clusters: Vec<RealCluster> = names
            .iter()
            .map(|name| RealCluster::spawn(name, &dir.path().join(name), &binaries))
            .collect();
        for cluster in &mut clusters {
            // A port picked free may be taken by another process before the server binds
            // it: such a cluster starts again on other ports, in a directory of its own.
            for attempt in 1.. {
                match cluster.wait_until_serving().await {
                    Ok(()) => break,
                    Err(exited) if attempt < 3 && exited.contains("address already in use") => {
                        let name = cluster.name.clone();
                        let retry = dir.path().join(format!("{name}-{attempt}"));
                        *cluster = RealCluster::spawn(&name, &retry, &binaries);
                    }
                    Err(exited) => panic!("{exited}"),
                }
            }
        }
        Self {
            clusters,
            started_in: started.elapsed(),
            _dir: dir,
        }
    }

    /// The cluster `name`; panics if it was not started.
    pub fn cluster(&self, name: &str) -> &RealCluster {
        self.clusters
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no real cluster {name}"))
    }

    /// How long the clusters took to start.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }
}

impl RealCluster {
    /// Writes the cluster's keys and starts its etcd, API server and controller manager.
    fn spawn(name: &str, dir: &Path, binaries: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        let tls = fleet_hub::tls::load_or_create(&dir.join("tls"), &[])
            .unwrap_or_else(|e| panic!("certificates: {e}"));
        let accounts_key =
            rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("service-account key: {e}"));
        let admin_token = random_hex();
        let file = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            path
        };
        let ca = file("ca.crt", &tls.ca_pem);
        let cert = file("server.crt", &tls.cert_pem);
        let key = file("server.key", &tls.key_pem);
        let accounts = file("accounts.key", &accounts_key.serialize_pem());
        let accounts_public = file("accounts.pub", &accounts_key.public_key_pem());
        // The controller manager is a user of its own, so that the audit log tells its
        // requests from the tests' and the fleet's.
        let manager_token = random_hex();
        let tokens = file(
            "tokens.csv",
            &format!(
                "{admin_token},admin,admin,\"system:masters\"\n{manager_token},system:kube-controller-manager,kcm,\"system:masters\"\n"
            ),
        );
        let audit_policy = file("audit-policy.yaml", AUDIT_POLICY);
        let etcd_port = free_port();
        let api_port = free_port();
        let url = format!("https://127.0.0.1:{api_port}");
        let admin_kubeconfig = file(
            "admin.kubeconfig",
            &kubeconfig_text(&url, &tls.ca_pem, "admin", &admin_token, "default"),
        );
        let manager_kubeconfig = file(
            "kube-controller-manager.kubeconfig",
            &kubeconfig_text(&url, &tls.ca_pem, "kcm", &manager_token, "default"),
        );
        let etcd = launch(
            dir,
            "etcd",
            Command::new(binaries.join("etcd")).args([
                "--data-dir".into(),
                dir.join("etcd").display().to_string(),
                "--listen-client-urls".into(),
                format!("http://127.0.0.1:{etcd_port}"),
                "--advertise-client-urls".into(),
                format!("http://127.0.0.1:{etcd_port}"),
                "--listen-peer-urls".into(),
                format!("http://127.0.0.1:{}", free_port()),
                "--unsafe-no-fsync".into(),
                "--log-level".into(),
                "warn".into(),
            ]),
        );
        let path = |p: &Path| p.display().to_string();
        let apiserver = launch(
            dir,
            "kube-apiserver",
            Command::new(binaries.join("kube-apiserver")).args([
                format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
                format!("--secure-port={api_port}"),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                // The `kubernetes` Service's endpoints may not be a loopback address.
                "--endpoint-reconciler-type=none".into(),
                format!("--tls-cert-file={}", path(&cert)),
                format!("--tls-private-key-file={}", path(&key)),
                format!("--client-ca-file={}", path(&ca)),
                format!("--token-auth-file={}", path(&tokens)),
                "--authorization-mode=RBAC".into(),
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
                format!("--service-account-key-file={}", path(&accounts_public)),
                format!("--service-account-signing-key-file={}", path(&accounts)),
                "--service-cluster-ip-range=10.96.0.0/16".into(),
                // As OpenShift runs it: blockOwnerDeletion needs `update` on the owner's
                // finalizers.
                "--enable-admission-plugins=OwnerReferencesPermissionEnforcement".into(),
                format!("--cert-dir={}", path(&dir.join("certs"))),
                format!("--audit-policy-file={}", path(&audit_policy)),
                format!("--audit-log-path={}", path(&dir.join("audit.log"))),
                "--profiling=false".into(),
            ]),
        );
        let manager = launch(
            dir,
            "kube-controller-manager",
            Command::new(binaries.join("kube-controller-manager")).args([
                format!("--kubeconfig={}", path(&manager_kubeconfig)),
                "--secure-port=0".into(),
                "--leader-elect=false".into(),
                format!("--service-account-private-key-file={}", path(&accounts)),
                format!("--root-ca-file={}", path(&ca)),
                // The fake Node sends no heartbeats: nothing may taint it and evict its Pods.
                "--controllers=*,-node-lifecycle-controller,-node-ipam-controller".into(),
            ]),
        );
        Self {
            name: name.to_string(),
            url,
            dir: dir.to_path_buf(),
            ca_pem: tls.ca_pem,
            admin_kubeconfig,
            processes: vec![manager, apiserver, etcd],
            kubelet: None,
        }
    }

    /// Waits until the API server is ready and the controller manager has made the
    /// `default` ServiceAccount, then starts the fake kubelet; if one of its processes
    /// exits first, returns why, with the logs.
    async fn wait_until_serving(&mut self) -> Result<(), String> {
        let started = Instant::now();
        let client = self.client().await;
        loop {
            let ready = client
                .request_text(
                    http::Request::get("/readyz")
                        .body(Vec::new())
                        .unwrap_or_else(|e| panic!("request: {e}")),
                )
                .await
                .is_ok_and(|answer| answer == "ok");
            let accounts: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
                kube::Api::namespaced(client.clone(), "default");
            if ready && matches!(accounts.get_opt("default").await, Ok(Some(_))) {
                break;
            }
            if let Some(exited) = self.exited() {
                return Err(exited);
            }
            assert!(
                started.elapsed() < START_PATIENCE,
                "real cluster {} did not serve within {START_PATIENCE:?}:\n{}",
                self.name,
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        self.kubelet = Some(crate::fake_kubelet::FakeKubelet::start(
            self.admin_kubeconfig.clone(),
        ));
        Ok(())
    }

    /// The first process found to have exited, with the logs, if any has.
    fn exited(&mut self) -> Option<String> {
        let exited = self
            .processes
            .iter_mut()
            .any(|p| matches!(p.try_wait(), Ok(Some(_))));
        exited.then(|| {
            format!(
                "a process of real cluster {} exited:\n{}",
                self.name,
                self.logs()
            )
        })
    }

    /// The last lines of each process's log.
    pub fn logs(&self) -> String {
        ["etcd", "kube-apiserver", "kube-controller-manager"]
            .iter()
            .map(|name| {
                let text = std::fs::read_to_string(self.dir.join(format!("{name}.log")))
                    .unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(15)..].join("\n");
                format!("--- {name}\n{tail}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The entries of the API server's audit log: who listed or watched Secrets and
    /// ConfigMaps (`user.username`, `verb`, `requestURI`, `objectRef`).
    pub fn audit(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.join("audit.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// The process ids of the cluster's etcd, kube-apiserver and kube-controller-manager,
    /// by name.
    pub fn pids(&self) -> Vec<(&'static str, u32)> {
        let names = ["kube-controller-manager", "kube-apiserver", "etcd"];
        names
            .into_iter()
            .zip(&self.processes)
            .map(|(name, process)| (name, process.id()))
            .collect()
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The API server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The PEM of the CA the API server's certificate is signed by.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A kubeconfig of the cluster's admin (group `system:masters`).
    pub fn kubeconfig(&self) -> &Path {
        &self.admin_kubeconfig
    }

    /// An admin client.
    pub async fn client(&self) -> kube::Client {
        crate::hub::client_for(&self.admin_kubeconfig).await
    }

    /// kubectl as the admin.
    pub fn kubectl(&self) -> Kubectl {
        Kubectl::from_kubeconfig(&self.admin_kubeconfig, &self.dir)
    }

    /// Writes, under the cluster's directory, a kubeconfig named `name` that authenticates
    /// with `token`, defaulting to `namespace`; returns its path.
    pub fn kubeconfig_for(&self, name: &str, token: &str, namespace: &str) -> PathBuf {
        let path = self.dir.join(format!("{name}.kubeconfig"));
        let text = kubeconfig_text(&self.url, &self.ca_pem, name, token, namespace);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path
    }

    /// A token of the ServiceAccount `namespace/account` from the TokenRequest API, valid
    /// for an hour, as a Pod of that account is given one.
    pub async fn account_token(&self, namespace: &str, account: &str) -> String {
        let accounts: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
            kube::Api::namespaced(self.client().await, namespace);
        let request = serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        });
        let granted: serde_json::Value = accounts
            .create_subresource("token", account, &Default::default(), &request)
            .await
            .unwrap_or_else(|e| panic!("a token for {namespace}/{account}: {e}"));
        granted["status"]["token"]
            .as_str()
            .unwrap_or_else(|| panic!("the TokenRequest for {namespace}/{account} has no token"))
            .to_string()
    }
}

impl Drop for RealCluster {
    fn drop(&mut self) {
        self.kubelet.take();
        for process in &mut self.processes {
            let _ = process.kill();
            let _ = process.wait();
        }
    }
}

/// What the audit log records: who lists and watches Secrets and ConfigMaps, and how
/// widely.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [list, watch]
  resources:
  - group: \"\"
    resources: [secrets, configmaps]
- level: None
";

/// A kubeconfig for the API server at `url`.
fn kubeconfig_text(url: &str, ca_pem: &str, user: &str, token: &str, namespace: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: real\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\ncontexts:\n- name: {user}\n  context:\n    cluster: real\n    user: {user}\n    namespace: {namespace}\ncurrent-context: {user}\nusers:\n- name: {user}\n  user:\n    token: {token}\n"
    )
}

/// 16 random bytes as hex.
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).unwrap_or_else(|e| panic!("random bytes: {e}"));
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The directory of the control plane's binaries, built by `.ci/real-k8s.sh` (run once per
/// test binary; it only prints the directory when they are built).
pub(crate) fn binaries() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/real-k8s.sh");
        let output = Command::new("bash")
            .arg(&script)
            .stderr(Stdio::inherit())
            .output()
            .unwrap_or_else(|e| panic!("{} runs: {e}", script.display()));
        assert!(
            output.status.success(),
            "{} failed: the real control plane could not be built",
            script.display()
        );
        PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
    })
    .clone()
}

/// Starts `command` from the launcher thread, its output in `dir/<name>.log`.
pub(crate) fn launch(dir: &Path, name: &str, command: &mut Command) -> Child {
    let log_path = dir.join(format!("{name}.log"));
    let log =
        std::fs::File::create(&log_path).unwrap_or_else(|e| panic!("{}: {e}", log_path.display()));
    let err = log
        .try_clone()
        .unwrap_or_else(|e| panic!("{}: {e}", log_path.display()));
    let mut wrapped = Command::new("setpriv");
    wrapped
        .args(["--pdeathsig", "KILL", "--"])
        .arg(command.get_program())
        .args(command.get_args())
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err);
    let (answer, answered) = mpsc::channel();
    launcher()
        .lock()
        .unwrap_or_else(|e| panic!("launcher: {e}"))
        .send((wrapped, answer))
        .unwrap_or_else(|e| panic!("launcher: {e}"));
    let child = answered
        .recv()
        .unwrap_or_else(|e| panic!("launcher: {e}"))
        .unwrap_or_else(|e| panic!("{name} starts (setpriv is util-linux's): {e}"));
    let _ = writeln!(
        std::io::stderr(),
        "real-k8s: {name} started, log {}",
        log_path.display()
    );
    child
}

/// A request to the launcher thread: the command, and where to send the child.
type Launch = (Command, mpsc::Sender<std::io::Result<Child>>);

/// The thread every control-plane process is started from. `--pdeathsig` fires when the
/// thread that started a process ends, so it must be one that lives as long as the test
/// binary, not a test's own thread or a pool's.
fn launcher() -> &'static Mutex<mpsc::Sender<Launch>> {
    static LAUNCHER: OnceLock<Mutex<mpsc::Sender<Launch>>> = OnceLock::new();
    LAUNCHER.get_or_init(|| {
        let (requests, received) = mpsc::channel::<Launch>();
        std::thread::Builder::new()
            .name("real-k8s-launcher".into())
            .spawn(move || {
                for (mut command, answer) in received {
                    let _ = answer.send(command.spawn());
                }
                // The sender lives in a static, so this never ends while the binary runs.
                loop {
                    std::thread::park();
                }
            })
            .unwrap_or_else(|e| panic!("launcher thread: {e}"));
        Mutex::new(requests)
    })
}
