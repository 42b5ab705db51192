//! `fleet install manager` and `fleet install agent-token`: the manifests that install
//! fleet-rs with `kubectl apply -f`, as the charts of `deploy/charts/` (embedded in the
//! binary) render them with the Helm engine: the control plane of a management cluster,
//! and, for a member cluster, its agent with a fresh registration token.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use fleet_helm::{Chart, Options, ValueOptions};
use serde_json::json;

/// The files of a chart of `deploy/charts/`, embedded, by their path in the chart.
macro_rules! embedded_chart {
    ($chart:literal, [$($file:literal),* $(,)?]) => {
        &[$(($file, include_str!(concat!("../../../deploy/charts/", $chart, "/", $file)))),*]
    };
}

/// The control plane's chart (`deploy/charts/fleet-rs`).
const MANAGER_CHART: &[(&str, &str)] = embedded_chart!(
    "fleet-rs",
    [
        "Chart.yaml",
        "values.yaml",
        "templates/_helpers.tpl",
        "templates/controller.yaml",
        "templates/gitjob.yaml",
        "templates/rbac-controller.yaml",
        "templates/rbac-gitjob.yaml",
        "templates/rbac-leader-election.yaml",
        "templates/serviceaccounts.yaml",
    ]
);

/// The agent's chart (`deploy/charts/fleet-rs-agent`).
const AGENT_CHART: &[(&str, &str)] = embedded_chart!(
    "fleet-rs-agent",
    [
        "Chart.yaml",
        "values.yaml",
        "templates/_helpers.tpl",
        "templates/agent.yaml",
    ]
);

/// The namespace both charts install into, as Fleet's.
const SYSTEM_NAMESPACE: &str = "cattle-fleet-system";

/// The Secret holding the registration token's kubeconfig on a member.
const TOKEN_SECRET: &str = "fleet-token";

/// Manifests that install fleet-rs.
#[derive(Subcommand, Debug)]
pub(super) enum InstallCommand {
    /// Print the control plane for a management cluster: Fleet's CRDs, its namespaces,
    /// gitjob and the controller with their accounts.
    #[command(after_help = "Example:
  fleet install manager --set apiServerURL=https://fleet.example.com:6443 \\
    --set-file apiServerCA=ca.pem | kubectl apply -f -")]
    Manager(ManagerArgs),
    /// Create a registration token on the management cluster and print what installs and
    /// registers an agent on a member: its namespace, the token's Secret, the agent with
    /// its account.
    #[command(
        name = "agent-token",
        after_help = "Example:
  fleet install agent-token --kubeconfig management.kubeconfig --ttl 1h \\
    --cluster-name edge-7 --label env=prod > token
  kubectl --kubeconfig edge-7.kubeconfig apply -f token"
    )]
    AgentToken(AgentTokenArgs),
}

/// Values for a chart, as `helm template` takes them.
#[derive(Args, Debug, Default)]
pub(super) struct ChartValues {
    /// Set a chart value (`key=value`, as Helm's `--set`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    values: Vec<String>,
    /// Set a chart value to a file's contents (as Helm's `--set-file`).
    #[arg(long = "set-file", value_name = "KEY=PATH")]
    file_values: Vec<String>,
    /// A values file (as Helm's `-f`).
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    value_files: Vec<PathBuf>,
}

/// Arguments of `fleet install manager`.
#[derive(Args, Debug)]
pub(super) struct ManagerArgs {
    #[command(flatten)]
    values: ChartValues,
}

/// Arguments of `fleet install agent-token`.
#[derive(Args, Debug)]
pub(super) struct AgentTokenArgs {
    /// The token: where it is made and for how long.
    #[command(flatten)]
    token: super::token::TokenArgs,
    /// The name of the Cluster the agent registers.
    #[arg(long)]
    cluster_name: Option<String>,
    /// A label of that Cluster (`key=value`; repeatable): targets select clusters by them.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    labels: Vec<String>,
    #[command(flatten)]
    values: ChartValues,
}

/// Runs an install command.
pub(super) fn run(command: InstallCommand) -> Result<()> {
    let manifests = match command {
        InstallCommand::Manager(args) => manager(&args)?,
        InstallCommand::AgentToken(args) => agent_token(&args)?,
    };
    print!("{manifests}");
    Ok(())
}

/// Fleet's CRDs, its namespaces and the control plane's chart.
fn manager(args: &ManagerArgs) -> Result<String> {
    let mut out = String::new();
    for (_, crd) in fleet_api::crds::all() {
        out.push_str(&document(&serde_json::to_value(&crd)?)?);
    }
    for namespace in [SYSTEM_NAMESPACE, "fleet-default", "fleet-local"] {
        out.push_str(&document(&namespace_object(namespace))?);
    }
    out.push_str(&render(
        "fleet-rs",
        MANAGER_CHART,
        "fleet",
        &args.values,
        &[],
    )?);
    Ok(out)
}

/// A new registration token's Secret and the agent's chart, for a member.
fn agent_token(args: &AgentTokenArgs) -> Result<String> {
    let mut set = vec![format!("registration.tokenSecret={TOKEN_SECRET}")];
    if let Some(name) = &args.cluster_name {
        set.push(format!("registration.clusterName={name}"));
    }
    for label in &args.labels {
        let (key, value) = label
            .split_once('=')
            .with_context(|| format!("--label {label}: expected KEY=VALUE"))?;
        // Helm's --set reads dots as nesting: a label key keeps its own.
        set.push(format!(
            "registration.labels.{}={value}",
            key.replace('.', "\\.")
        ));
    }
    let chart = render(
        "fleet-rs-agent",
        AGENT_CHART,
        "fleet-agent",
        &args.values,
        &set,
    )?;
    let token = args.token.issue()?;
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": TOKEN_SECRET, "namespace": SYSTEM_NAMESPACE},
        "type": "Opaque",
        "stringData": {"kubeconfig": token},
    });
    let mut out = document(&namespace_object(SYSTEM_NAMESPACE))?;
    out.push_str(&document(&secret)?);
    out.push_str(&chart);
    Ok(out)
}

fn namespace_object(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// One YAML document of a manifest stream.
fn document(object: &serde_json::Value) -> Result<String> {
    Ok(format!("---\n{}", serde_yaml_ng::to_string(object)?))
}

/// `helm template RELEASE CHART -n cattle-fleet-system` of an embedded chart, with the
/// user's values and then `set` (which wins).
fn render(
    name: &str,
    files: &[(&str, &str)],
    release: &str,
    values: &ChartValues,
    set: &[String],
) -> Result<String> {
    let files = files
        .iter()
        .map(|(path, text)| (path.to_string(), text.as_bytes().to_vec()))
        .collect();
    let chart = Chart::from_files(name, files)?;
    let mut sets = values.values.clone();
    sets.extend(set.iter().cloned());
    let user = ValueOptions {
        value_files: values.value_files.clone(),
        values: sets,
        file_values: values.file_values.clone(),
        ..ValueOptions::default()
    }
    .merge()?;
    let options = Options {
        release_name: release.into(),
        namespace: SYSTEM_NAMESPACE.into(),
        ..Options::default()
    };
    let rendered = fleet_helm::prepare(&chart, &user, &options)?.render()?;
    Ok(rendered.to_template_output(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file of each chart is embedded: a template added to `deploy/charts/` and not
    /// here would be left out of what `fleet install` prints.
    #[test]
    fn every_file_of_the_charts_is_embedded() {
        let charts = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/charts");
        for (chart, embedded) in [("fleet-rs", MANAGER_CHART), ("fleet-rs-agent", AGENT_CHART)] {
            let root = charts.join(chart);
            let mut on_disk = Vec::new();
            let mut dirs = vec![root.clone()];
            while let Some(dir) = dirs.pop() {
                for entry in std::fs::read_dir(&dir).expect("chart dir") {
                    let path = entry.expect("entry").path();
                    if path.is_dir() {
                        dirs.push(path);
                    } else {
                        let relative = path.strip_prefix(&root).expect("inside");
                        on_disk.push(relative.to_string_lossy().replace('\\', "/"));
                    }
                }
            }
            on_disk.sort();
            let mut listed: Vec<String> = embedded.iter().map(|(p, _)| p.to_string()).collect();
            listed.sort();
            assert_eq!(listed, on_disk, "{chart}");
        }
    }
}
