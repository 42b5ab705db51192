//! Helpers shared by the CLI tests: run the built `fleet` binary.
#![allow(dead_code)] // Each test crate uses its own part of these helpers.

use std::path::Path;
use std::process::{Command, Output};

#[allow(unused_imports)] // as the helpers: each test crate uses its own part.
pub(crate) use fleet_testkit::{shared_real, workspace_root as workspace};

/// Runs `fleet` with arguments.
pub(crate) fn fleet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(args)
        .output()
        .expect("run fleet")
}

/// Runs `fleet`, asserts success and returns stdout.
pub(crate) fn fleet_ok(args: &[&str]) -> String {
    let output = fleet(args);
    assert!(
        output.status.success(),
        "fleet {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

/// Parses multi-document YAML output.
pub(crate) fn documents(text: &str) -> Vec<serde_json::Value> {
    fleet_files::yaml::parse_documents(text, "stdout").expect("valid YAML output")
}

/// The `metadata.name` of each document.
#[allow(dead_code)] // each test binary compiles this module and uses a subset of it
pub(crate) fn names(documents: &[serde_json::Value]) -> Vec<&str> {
    documents
        .iter()
        .filter_map(|d| d["metadata"]["name"].as_str())
        .collect()
}

/// A child process killed on drop (if the test failed before stopping it).
pub(crate) struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Running {
    /// Sends `signal` (`INT`, `TERM`) and waits up to `limit` for the exit status.
    pub(crate) fn stop_with(
        &mut self,
        signal: &str,
        limit: std::time::Duration,
    ) -> std::process::ExitStatus {
        let pid = self.0.id().to_string();
        let sent = Command::new("kill")
            .args([format!("-{signal}"), pid])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill -{signal} failed");
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.0.try_wait().expect("wait") {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "fleet did not stop on SIG{signal} within {limit:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// Starts `fleet` with arguments, its output discarded.
pub(crate) fn spawn(args: &[&str]) -> Running {
    Running(
        Command::new(env!("CARGO_BIN_EXE_fleet"))
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("fleet starts"),
    )
}

/// Starts `fleet` with arguments, its standard error going to `log`.
pub(crate) fn spawn_logged(args: &[&str], log: &Path) -> Running {
    let file = std::fs::File::create(log).expect("log file");
    Running(
        Command::new(env!("CARGO_BIN_EXE_fleet"))
            .args(args)
            .env("FLEET_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(file)
            .spawn()
            .expect("fleet starts"),
    )
}

/// Applies Fleet's CRDs (`deploy/crds`) with kubectl and waits until they are Established
/// (served), as on any cluster.
pub(crate) fn apply_fleet_crds(kubeconfig: &Path) {
    let crds = workspace().join("deploy/crds").display().to_string();
    assert!(kubectl(kubeconfig, &["apply", "-f", &crds], None).0);
    let wait = [
        "wait",
        "--for",
        "condition=established",
        "--timeout=60s",
        "-f",
        &crds,
    ];
    assert!(
        kubectl(kubeconfig, &wait, None).0,
        "Fleet's CRDs Established"
    );
}

/// Runs kubectl against `kubeconfig` with `input` on stdin; returns success and stdout.
pub(crate) fn kubectl(kubeconfig: &Path, args: &[&str], input: Option<&str>) -> (bool, String) {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(text.as_bytes()).expect("stdin");
    }
    let output = child.wait_with_output().expect("kubectl finishes");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.success(), text)
}

/// Waits up to `limit` for `check` to hold.
pub(crate) fn until(what: &str, limit: std::time::Duration, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !check() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
