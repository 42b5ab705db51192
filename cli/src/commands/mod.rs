//! The subcommands of `fleet`.

mod apply;
mod bench;
mod bundlediff;
mod controller;
mod crds;
mod deploy;
mod diff;
mod dump;
mod gitjob;
mod helm;
mod hub;
mod install;
mod kustomize;
mod lint;
mod output;
mod releases;
mod scale_out;
mod status;
mod target;
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
pub(crate) struct Cli {
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
    Apply(Box<apply::ApplyArgs>),
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
    Agent(fleet_agent::command::AgentArgs),
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
    /// Manifests that install fleet-rs with `kubectl apply -f`: the control plane, or an
    /// agent with its registration token.
    #[command(
        subcommand,
        after_help = "Examples:\n  fleet install manager | kubectl apply -f -\n  fleet install agent-token --kubeconfig management.kubeconfig --cluster-name edge-7 > token"
    )]
    Install(install::InstallCommand),
    /// List the release record of every deployment, as `helm list` does.
    Releases(releases::ReleasesArgs),
    /// Show GitRepos, their Bundles and each cluster's state as a tree.
    Status(status::StatusArgs),
    /// Show what changed on deployed resources, as the agents report it.
    Bundlediff(bundlediff::BundleDiffArgs),
    /// Print the Contents and BundleDeployments the controller would create for Bundles.
    Target(target::TargetArgs),
    /// Print what BundleDeployments would deploy (`fleet target`'s output), with --dry-run.
    Deploy(deploy::DeployArgs),
    /// Write Fleet's objects and the relevant events into a .tgz archive for a bug report.
    Dump(dump::DumpArgs),
    /// Print a completion script for a shell.
    #[command(after_help = "Examples:
  fleet completions bash > ~/.local/share/bash-completion/completions/fleet
  fleet completions zsh > \"${fpath[1]}/_fleet\"
  fleet completions fish > ~/.config/fish/completions/fleet.fish")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Benchmarks against the reference tools, measured in the same run (the `fleet-bench`
    /// binary built beside this one).
    #[command(
        after_help = "Examples (on a release build, cargo build --release --bins):\n  fleet bench --help\n  fleet bench kustomize\n  fleet bench fleet --clusters 1000"
    )]
    Bench(bench::BenchArgs),
}

/// Runs the parsed command line.
pub(crate) fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Up(args) => up::run(args),
        Command::Kustomize(command) => kustomize::run(command),
        Command::Test(args) => test::run(args),
        Command::Apply(args) => apply::run(*args),
        Command::Diff(args) => diff::run(args),
        Command::Lint(args) => lint::run(args),
        Command::Crds(args) => crds::run(args),
        Command::Helm(command) => helm::run(command),
        Command::Agent(args) => runtime()?
            .block_on(async { Ok(fleet_agent::command::run(args, shutdown_signal()).await?) }),
        Command::Controller(args) => controller::run(args),
        Command::Gitjob(args) => gitjob::run(args),
        Command::Hub(args) => hub::run(args),
        Command::Releases(args) => releases::run(args),
        Command::Status(args) => status::run(args),
        Command::Bundlediff(args) => bundlediff::run(args),
        Command::Target(args) => target::run(args),
        Command::Deploy(args) => deploy::run(args),
        Command::Dump(args) => dump::run(args),
        Command::Token(command) => token::run(command),
        Command::Install(command) => install::run(command),
        Command::Bench(args) => bench::run(args),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "fleet", &mut std::io::stdout());
            Ok(())
        }
    }
}

use fleet_objects::client::{for_cluster as cluster_client, from_kubeconfig as kube_client};
use fleet_objects::service::{health_router, serve_http, shutdown_signal};

/// An error the command has already shown the user in its own words (as `helm` prints
/// its errors): the process ends with failure and prints nothing more.
#[derive(Debug, thiserror::Error)]
#[error("reported")]
pub(crate) struct Reported;

/// Prints the help of the subcommand `name`, as a command given nothing to work on does.
fn print_help_of(name: &str) -> Result<()> {
    use clap::CommandFactory;
    let mut command = Cli::command();
    if let Some(subcommand) = command.find_subcommand_mut(name) {
        subcommand.print_help()?;
    }
    Ok(())
}

/// The text of the YAML file `path` (shown as `file`): a missing file and control
/// characters, which YAML refuses, are named as Fleet's commands name them.
fn read_yaml_file(path: &std::path::Path, file: &str) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            anyhow::anyhow!("reading {file}: no such file or directory")
        }
        _ => anyhow::Error::new(e).context(format!("reading {file}")),
    })?;
    let forbidden = |c: char| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{85}');
    String::from_utf8(bytes)
        .ok()
        .filter(|text| !text.chars().any(forbidden))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{file}: error converting YAML to JSON: yaml: control characters are not allowed"
            )
        })
}

/// A multi-threaded async runtime for a command.
fn runtime() -> Result<tokio::runtime::Runtime> {
    use anyhow::Context;
    tokio::runtime::Runtime::new().context("starting the async runtime")
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
