//! The subcommands of `fleet`.

mod agent;
mod apply;
mod bench;
mod controller;
mod crds;
mod diff;
mod gitjob;
mod helm;
mod hub;
mod kustomize;
mod lint;
mod output;
mod releases;
mod status;
mod test;
mod token;
mod up;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// GitOps for fleets of Kubernetes clusters, compatible with Rancher Fleet.
#[derive(Parser, Debug)]
#[command(
    name = "fleet",
    version,
    about,
    after_help = "Examples:
  fleet up                                  # everything on this machine, with a demo
  fleet status --kubeconfig fleet-demo/hub/local.kubeconfig
  fleet test multi-cluster/helm -l env=prod # render a bundle for a cluster
  fleet diff . -l env=prod                  # what uncommitted changes would change
  fleet completions bash > ~/.local/share/bash-completion/completions/fleet"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run all of fleet-rs on this machine and deploy a demo repository to two clusters.
    Up(up::UpArgs),
    /// Kustomize operations.
    #[command(
        subcommand,
        after_help = "Example:\n  fleet kustomize build overlays/prod"
    )]
    Kustomize(kustomize::KustomizeCommand),
    /// Render a bundle for a cluster and print its resources, as Rancher Fleet's `fleet test`.
    Test(test::TestArgs),
    /// Write the Bundle objects for directories, as Rancher Fleet's `fleet apply -o`.
    Apply(apply::ApplyArgs),
    /// Show what uncommitted changes would change on each cluster, object by object.
    Diff(diff::DiffArgs),
    /// Check every fleet.yaml under a directory strictly and render each customization.
    Lint(lint::LintArgs),
    /// Write (or check) the CRD manifests of the Fleet kinds.
    Crds(crds::CrdsArgs),
    /// Helm operations (`fleet helm template`).
    #[command(
        subcommand,
        after_help = "Example:\n  fleet helm template web ./chart -f prod.yaml"
    )]
    Helm(helm::HelmCommand),
    /// Run a cluster's agent: apply the BundleDeployments the hub holds for it.
    Agent(agent::AgentArgs),
    /// Run the targeting controller: BundleDeployments for the clusters each Bundle targets.
    Controller(controller::ControllerArgs),
    /// Run the GitRepo controller: poll repositories, receive webhooks, write Bundles.
    Gitjob(gitjob::GitjobArgs),
    /// Run the embedded Kubernetes-compatible API server (the hub).
    Hub(hub::HubArgs),
    /// Cluster registration tokens.
    #[command(
        subcommand,
        after_help = "Example:\n  fleet token create --kubeconfig hub.kubeconfig --ttl 1h > token.kubeconfig"
    )]
    Token(token::TokenCommand),
    /// List the release record of every deployment, as `helm list` does.
    Releases(releases::ReleasesArgs),
    /// Show GitRepos, their Bundles and each cluster's state as a tree.
    Status(status::StatusArgs),
    /// Print a completion script for a shell.
    #[command(after_help = "Examples:
  fleet completions bash > ~/.local/share/bash-completion/completions/fleet
  fleet completions zsh > \"${fpath[1]}/_fleet\"
  fleet completions fish > ~/.config/fish/completions/fleet.fish")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Benchmarks against the reference tools, measured in the same run.
    #[command(
        subcommand,
        after_help = "Examples (on a release build):\n  fleet bench kustomize testdata/kustomize\n  fleet bench fleet --clusters 1000"
    )]
    Bench(bench::BenchCommand),
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Up(args) => up::run(args),
        Command::Kustomize(command) => kustomize::run(command),
        Command::Test(args) => test::run(args),
        Command::Apply(args) => apply::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Lint(args) => lint::run(args),
        Command::Crds(args) => crds::run(args),
        Command::Helm(command) => helm::run(command),
        Command::Agent(args) => agent::run(args),
        Command::Controller(args) => controller::run(args),
        Command::Gitjob(args) => gitjob::run(args),
        Command::Hub(args) => hub::run(args),
        Command::Releases(args) => releases::run(args),
        Command::Status(args) => status::run(args),
        Command::Token(command) => token::run(command),
        Command::Bench(command) => bench::run(command),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "fleet", &mut std::io::stdout());
            Ok(())
        }
    }
}

/// Parses `key=value` command-line labels.
fn parse_label(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("`{text}` is not key=value"))
}

/// Runs `git` in `dir`, returning its trimmed standard output, or its error output as the
/// error.
fn git(dir: &std::path::Path, args: &[&str]) -> Result<String> {
    use anyhow::Context;
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .context("running git (is it installed?)")?;
    if !output.status.success() {
        anyhow::bail!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// A kube-rs client for the cluster a kubeconfig file names.
async fn kube_client(kubeconfig: &std::path::Path) -> Result<kube::Client> {
    use anyhow::Context;
    let file = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .with_context(|| format!("loading {}", kubeconfig.display()))?;
    Ok(kube::Client::try_from(config)?)
}

/// A client for the cluster `kubeconfig` names or, without one, the cluster the process
/// runs in (its service account) or `~/.kube/config`.
async fn cluster_client(kubeconfig: Option<&std::path::Path>) -> Result<kube::Client> {
    use anyhow::Context;
    match kubeconfig {
        Some(path) => kube_client(path).await,
        None => kube::Client::try_default()
            .await
            .context("no --kubeconfig, no KUBECONFIG, and not running in a cluster"),
    }
}

/// Serves `router` on `addr` in the background, saying where in the log; returns the address
/// bound (`addr` may ask for any port) and the serving task.
async fn serve_http(
    addr: std::net::SocketAddr,
    router: axum::Router,
    what: &str,
) -> Result<(std::net::SocketAddr, tokio::task::JoinHandle<()>)> {
    use anyhow::Context;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening for {what} on {addr}"))?;
    let bound = listener.local_addr()?;
    tracing::info!("{what} on http://{bound}");
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(%error, "HTTP server stopped");
        }
    });
    Ok((bound, task))
}

/// `/healthz` and `/readyz` for a process with nothing more to say than that it runs.
fn health_router() -> axum::Router {
    axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .route("/readyz", axum::routing::get(|| async { "ok" }))
}

/// Installs (or updates) Fleet's CRDs and creates the namespaces Rancher Fleet creates.
async fn install_fleet(client: &kube::Client) -> Result<()> {
    use anyhow::Context;
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Patch, PatchParams};
    use kube::Api;
    use serde_json::json;
    let apply = PatchParams::apply("fleet-cli").force();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for (_, crd) in fleet_api::crds::all() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let mut body = serde_json::to_value(&crd)?;
        body["apiVersion"] = json!("apiextensions.k8s.io/v1");
        body["kind"] = json!("CustomResourceDefinition");
        crds.patch(&name, &apply, &Patch::Apply(&body))
            .await
            .with_context(|| format!("installing CRD {name}"))?;
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in ["fleet-local", "fleet-default", "cattle-fleet-system"] {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        namespaces
            .patch(name, &apply, &Patch::Apply(&body))
            .await
            .with_context(|| format!("creating namespace {name}"))?;
    }
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// The path of every command and subcommand whose `--help` shows no example.
    fn without_examples(command: &clap::Command, path: &str, found: &mut Vec<String>) {
        let path = format!("{path} {}", command.get_name()).trim().to_string();
        let help = command
            .get_after_help()
            .or(command.get_after_long_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        if !help.contains("  fleet ") {
            found.push(path.clone());
        }
        for sub in command.get_subcommands() {
            if sub.get_name() != "help" {
                without_examples(sub, &path, found);
            }
        }
    }

    #[test]
    fn every_command_has_examples_in_its_help() {
        let mut found = Vec::new();
        without_examples(&super::Cli::command(), "", &mut found);
        assert_eq!(found, Vec::<String>::new(), "commands without examples");
    }
}
