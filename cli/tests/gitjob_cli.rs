//! `fleet gitjob` as a user runs it: beside `fleet hub`, driven with kubectl, stopped with
//! SIGTERM.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fleet_gitjob::testing::{free_port, wait_for_port, TestRepo};

/// A child process killed on drop (if the test failed before stopping it).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[&str]) -> Running {
    Running(
        Command::new(env!("CARGO_BIN_EXE_fleet"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("fleet starts"),
    )
}

fn kubectl(kubeconfig: &Path, args: &[&str], input: Option<&str>) -> (bool, String) {
    use std::io::Write;
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

fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn gitjob_syncs_a_gitrepo_serves_metrics_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("temp dir");
    let hub_port = free_port();
    let _hub = spawn(&[
        "hub",
        "--data",
        &dir.path().join("hub").display().to_string(),
        "--listen",
        &format!("127.0.0.1:{hub_port}"),
    ]);
    let kubeconfig = dir.path().join("hub/local.kubeconfig");
    until("the hub", || {
        kubeconfig.is_file() && kubectl(&kubeconfig, &["get", "namespaces"], None).0
    });
    let crds = common::workspace().join("deploy/crds");
    assert!(
        kubectl(
            &kubeconfig,
            &["apply", "-f", &crds.display().to_string()],
            None
        )
        .0
    );
    assert!(kubectl(&kubeconfig, &["create", "namespace", "fleet-local"], None).0);

    let repo = TestRepo::new();
    repo.write("app/fleet.yaml", "defaultNamespace: app\n")
        .write(
            "app/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
        );
    let head = repo.commit("first");
    let metrics_port = free_port();
    let mut gitjob = spawn(&[
        "gitjob",
        "--kubeconfig",
        &kubeconfig.display().to_string(),
        "--data",
        &dir.path().join("gitjob").display().to_string(),
        "--webhook-listen",
        &format!("127.0.0.1:{metrics_port}"),
    ]);
    let gitrepo = format!(
        "apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: demo\n  namespace: fleet-local\nspec:\n  repo: {}\n  branch: main\n",
        repo.url()
    );
    assert!(kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&gitrepo)).0);
    let label = "jsonpath={.metadata.labels.fleet\\.cattle\\.io/commit}";
    until("the Bundle at the commit", || {
        let (ok, text) = kubectl(
            &kubeconfig,
            &[
                "get",
                "bundle",
                "demo-app",
                "-n",
                "fleet-local",
                "-o",
                label,
            ],
            None,
        );
        ok && text == head
    });
    let (_, commit) = kubectl(
        &kubeconfig,
        &[
            "get",
            "gitrepo",
            "demo",
            "-n",
            "fleet-local",
            "-o",
            "jsonpath={.status.commit}",
        ],
        None,
    );
    assert_eq!(commit, head);

    wait_for_port(metrics_port);
    let metrics = ureq::get(&format!("http://127.0.0.1:{metrics_port}/metrics"))
        .call()
        .expect("metrics")
        .body_mut()
        .read_to_string()
        .expect("text");
    assert!(
        metrics.contains("fleet_gitjob_syncs_total 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("fleet_gitjob_fetches_total 1\n"),
        "{metrics}"
    );

    let pid = gitjob.0.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill")
        .success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = gitjob.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "fleet gitjob did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}
