//! A hub on a free loopback port with TLS, in a temporary directory, that can be stopped and
//! started again on the same port and data; and kubectl against its logical clusters.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use fleet_hub::{Options, Running};

/// A running hub in a temporary data directory.
pub struct TestHub {
    /// The temporary directory; the hub's data is under `hub/`, and tests may put more.
    pub dir: tempfile::TempDir,
    /// The hub (`None` while stopped).
    pub running: Option<Running>,
    /// The address it listens on, kept across restarts.
    pub addr: SocketAddr,
    clusters: Vec<String>,
}

impl TestHub {
    /// Starts a hub serving the logical `clusters`.
    pub async fn start(clusters: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        let clusters: Vec<String> = clusters.iter().map(|c| c.to_string()).collect();
        let running = fleet_hub::start(options(dir.path(), ([127, 0, 0, 1], 0).into(), &clusters))
            .await
            .unwrap_or_else(|e| panic!("hub starts: {e}"));
        let addr = running.addr;
        Self {
            dir,
            running: Some(running),
            addr,
            clusters,
        }
    }

    /// Stops the hub, waits `down`, and starts it again on the same port and data.
    pub async fn restart(&mut self, down: Duration) {
        self.stop().await;
        tokio::time::sleep(down).await;
        self.start_again().await;
    }

    /// Stops the hub.
    pub async fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
    }

    /// Starts a stopped hub again on its port and data (retrying while the port is freed).
    pub async fn start_again(&mut self) {
        for attempt in 0.. {
            match fleet_hub::start(options(self.dir.path(), self.addr, &self.clusters)).await {
                Ok(running) => {
                    self.running = Some(running);
                    return;
                }
                Err(error) if attempt < 50 => {
                    tracing::debug!(%error, "hub restart, retrying");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("hub restarts: {error}"),
            }
        }
    }

    /// The directory of the hub's data.
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    /// The kubeconfig of a logical cluster.
    pub fn kubeconfig(&self, cluster: &str) -> PathBuf {
        fleet_hub::serve::kubeconfig_path(&self.data(), cluster)
    }

    /// kubectl against a logical cluster, with its own discovery cache.
    pub fn kubectl(&self, cluster: &str) -> Kubectl {
        Kubectl {
            kubeconfig: self.kubeconfig(cluster),
            cache: self.dir.path().join("kubectl-cache"),
        }
    }

    /// An admin client of a logical cluster.
    pub async fn client(&self, cluster: &str) -> kube::Client {
        client_for(&self.kubeconfig(cluster)).await
    }
}

fn options(dir: &Path, listen: SocketAddr, clusters: &[String]) -> Options {
    Options {
        data: dir.join("hub"),
        listen,
        insecure_http: false,
        clusters: clusters.to_vec(),
        memory_only: Vec::new(),
    }
}

/// A kube-rs client for the cluster a kubeconfig file names.
pub async fn client_for(kubeconfig: &Path) -> kube::Client {
    fleet_objects::client::from_kubeconfig(kubeconfig)
        .await
        .unwrap_or_else(|e| panic!("client: {e}"))
}

/// kubectl against one cluster, with its own discovery cache.
pub struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
}

/// The outcome of one kubectl run.
pub struct Run {
    /// kubectl exited with success.
    pub ok: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Run {
    fn from(output: Output) -> Self {
        Self {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Panics with kubectl's output unless it succeeded.
    pub fn success(self) -> Self {
        assert!(
            self.ok,
            "kubectl failed:\nstdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self
    }

    /// Panics unless it failed; returns stderr.
    pub fn failure(self) -> String {
        assert!(
            !self.ok,
            "kubectl should have failed:\nstdout: {}",
            self.stdout
        );
        self.stderr
    }

    /// Standard output parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("kubectl printed JSON: {e}"))
    }
}

impl Kubectl {
    /// kubectl with any kubeconfig, caching discovery under `dir`.
    pub fn from_kubeconfig(kubeconfig: &Path, dir: &Path) -> Self {
        Self {
            kubeconfig: kubeconfig.to_path_buf(),
            cache: dir.join("kubectl-cache-other"),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args);
        command
    }

    /// Runs kubectl with `args` and waits for it.
    pub async fn run(&self, args: &[&str]) -> Run {
        let mut command = self.command(args);
        tokio::task::spawn_blocking(move || {
            Run::from(
                command
                    .output()
                    .unwrap_or_else(|e| panic!("kubectl runs: {e}")),
            )
        })
        .await
        .unwrap_or_else(|e| panic!("kubectl task: {e}"))
    }

    /// Runs kubectl with `args` and waits for it, from a thread that may block.
    pub fn run_blocking(&self, args: &[&str]) -> Run {
        Run::from(
            self.command(args)
                .output()
                .unwrap_or_else(|e| panic!("kubectl runs: {e}")),
        )
    }

    /// Runs kubectl with `input` on stdin (for `-f -`).
    pub async fn run_with(&self, args: &[&str], input: &str) -> Run {
        let mut command = self.command(args);
        let input = input.to_string();
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("kubectl starts: {e}"));
            if let Some(mut stdin) = child.stdin.take() {
                stdin
                    .write_all(input.as_bytes())
                    .unwrap_or_else(|e| panic!("stdin written: {e}"));
            }
            Run::from(
                child
                    .wait_with_output()
                    .unwrap_or_else(|e| panic!("kubectl finishes: {e}")),
            )
        })
        .await
        .unwrap_or_else(|e| panic!("kubectl task: {e}"))
    }

    /// `kubectl patch TARGET --type KIND -p PATCH`, with TARGET's words as arguments.
    pub async fn patch(&self, target: &str, kind: &str, patch: &str) -> Run {
        let mut args = vec!["patch"];
        args.extend(target.split_whitespace());
        args.extend(["--type", kind, "-p", patch]);
        self.run(&args).await
    }

    /// Starts kubectl with `args` without waiting (for `--watch`).
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("kubectl starts: {e}"))
    }
}
