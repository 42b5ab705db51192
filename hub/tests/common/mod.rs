//! A hub on a free loopback port with TLS, and kubectl and kube-rs clients for it.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use fleet_hub::{Options, Running};

/// A running hub in a temporary data directory.
pub struct TestHub {
    pub dir: tempfile::TempDir,
    pub running: Option<Running>,
    pub addr: SocketAddr,
    clusters: Vec<String>,
}

impl TestHub {
    pub async fn start(clusters: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let clusters: Vec<String> = clusters.iter().map(|c| c.to_string()).collect();
        let running = fleet_hub::start(options(
            dir.path(),
            "127.0.0.1:0".parse().expect("addr"),
            &clusters,
        ))
        .await
        .expect("hub starts");
        let addr = running.addr;
        Self {
            dir,
            running: Some(running),
            addr,
            clusters,
        }
    }

    /// Stops the hub and starts it again on the same port and data.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.start_again().await;
    }

    pub async fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
    }

    pub async fn start_again(&mut self) {
        let mut attempts = 0;
        loop {
            match fleet_hub::start(options(self.dir.path(), self.addr, &self.clusters)).await {
                Ok(running) => {
                    self.running = Some(running);
                    return;
                }
                Err(error) if attempts < 50 => {
                    attempts += 1;
                    eprintln!("restart attempt {attempts}: {error}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(error) => panic!("hub restarts: {error}"),
            }
        }
    }

    pub fn kubeconfig(&self, cluster: &str) -> PathBuf {
        fleet_hub::serve::kubeconfig_path(self.dir.path(), cluster)
    }

    pub fn kubectl(&self, cluster: &str) -> Kubectl {
        Kubectl {
            kubeconfig: self.kubeconfig(cluster),
            cache: self.dir.path().join("kubectl-cache"),
        }
    }

    pub async fn client(&self, cluster: &str) -> kube::Client {
        client_for(&self.kubeconfig(cluster)).await
    }
}

fn options(data: &Path, listen: SocketAddr, clusters: &[String]) -> Options {
    Options {
        data: data.to_path_buf(),
        listen,
        insecure_http: false,
        clusters: clusters.to_vec(),
    }
}

pub async fn client_for(kubeconfig: &Path) -> kube::Client {
    let config = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig reads");
    let config = kube::Config::from_custom_kubeconfig(config, &Default::default())
        .await
        .expect("kubeconfig loads");
    kube::Client::try_from(config).expect("client builds")
}

/// kubectl against one logical cluster, with its own discovery cache.
pub struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
}

/// The outcome of one kubectl run.
pub struct Run {
    pub ok: bool,
    pub stdout: String,
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

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).expect("kubectl printed JSON")
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

    pub async fn run(&self, args: &[&str]) -> Run {
        let mut command = self.command(args);
        tokio::task::spawn_blocking(move || Run::from(command.output().expect("kubectl runs")))
            .await
            .expect("kubectl task")
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
                .expect("kubectl starts");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(input.as_bytes())
                .expect("stdin written");
            Run::from(child.wait_with_output().expect("kubectl finishes"))
        })
        .await
        .expect("kubectl task")
    }

    /// `kubectl patch TARGET --type KIND -p PATCH`, with TARGET's words as arguments.
    pub async fn patch(&self, target: &str, kind: &str, patch: &str) -> Run {
        let mut args = vec!["patch"];
        args.extend(target.split_whitespace());
        args.extend(["--type", kind, "-p", patch]);
        self.run(&args).await
    }

    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl starts")
    }
}

/// The workspace's root directory.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Lines of a table without the header, each split on whitespace.
pub fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}
