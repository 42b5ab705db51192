//! The subcommands of `fleet`.

mod kustomize;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// GitOps for fleets of Kubernetes clusters, compatible with Rancher Fleet.
#[derive(Parser, Debug)]
#[command(name = "fleet", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Kustomize operations.
    #[command(subcommand)]
    Kustomize(kustomize::KustomizeCommand),
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Kustomize(command) => kustomize::run(command),
    }
}
