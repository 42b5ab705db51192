//! The `fleet-agent` binary as the agent chart runs it: the chart's arguments (which start
//! with `agent`, the `fleet` command they name) are taken as they are.

use std::process::Command;

#[test]
fn the_charts_arguments_are_taken_by_the_agent_binary() {
    let chart = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/charts/fleet-rs-agent"
    );
    let values = [
        "registration.tokenSecret=token",
        "registration.clusterName=edge",
    ];
    let mut helm = Command::new(fleet_testkit::real_tool("helm4"));
    helm.args(["template", "agent", chart]);
    for value in values {
        helm.args(["--set", value]);
    }
    let rendered = helm.output().expect("helm runs");
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let text = String::from_utf8_lossy(&rendered.stdout);
    let args: Vec<String> = text
        .split("\n---")
        .find(|doc| doc.contains("kind: Deployment"))
        .expect("the agent's Deployment")
        .lines()
        .skip_while(|line| line.trim() != "args:")
        .skip(1)
        .take_while(|line| line.trim_start().starts_with("- "))
        .map(|line| line.trim_start().trim_start_matches("- ").to_string())
        .collect();
    assert_eq!(args.first().map(String::as_str), Some("agent"), "{args:?}");
    // No cluster to reach here: the agent must get as far as looking for one.
    let run = Command::new(env!("CARGO_BIN_EXE_fleet-agent"))
        .args(&args)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("fleet-agent runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_ne!(run.status.code(), Some(2), "a usage error: {stderr}");
    assert!(
        stderr.contains("kubeconfig"),
        "it stopped at the kubeconfig, not the arguments: {stderr}"
    );
}
