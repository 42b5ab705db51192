//! `fleet-bench` (also run as `fleet bench`): measurements for humans, printed with the
//! reference or the target they are judged against. Not tests, and not part of the `fleet`
//! binary: its fixtures (Git repositories, `git daemon`) come from the test support crate.

mod attack;
mod fleet;
mod gitjob;
mod helm;
mod hub;
mod kustomize;
mod measure;
mod processes;
mod real_management;
mod reference;
mod register;
mod soak;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// mimalloc, as the `fleet` binary (which runs the hub, controllers and agents) uses: the
/// benchmark measures what users run. (With glibc's malloc, a quarter of a 3,000-cluster
/// run's samples were in malloc and free.)
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Benchmarks of fleet-rs against the reference tools, measured in the same run.
#[derive(Parser, Debug)]
#[command(name = "fleet bench", version)]
struct Cli {
    #[command(subcommand)]
    command: BenchCommand,
}

/// Benchmarks.
#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// `fleet kustomize build` against real `kubectl kustomize` (kubectl 1.37) on every
    /// corpus root.
    #[command(
        after_help = "Example:\n  .ci/real-tools.sh && fleet bench kustomize --corpus ../shared/real/kustomize-corpus"
    )]
    Kustomize(kustomize::KustomizeBench),
    /// `fleet helm template` against real `helm template` (Helm 4.3.1) on every corpus case.
    #[command(
        after_help = "Example:\n  .ci/real-tools.sh && fleet bench helm --corpus ../shared/real/helm-corpus"
    )]
    Helm(helm::HelmBench),
    /// Creates per second, watch fan-out latency and memory of the embedded hub.
    #[command(after_help = "Example:\n  fleet bench hub --objects 20000 --watchers 1000")]
    Hub(hub::HubBench),
    /// The hub under siege: idle connections, watches and abusive clients; one admin's
    /// latency and the hub's memory.
    #[command(
        after_help = "Example:\n  fleet bench soak --idle 10000 --watches 2000 --abusive 50 --seconds 60"
    )]
    Soak(soak::SoakBench),
    /// Poll cost, 1,000 GitRepos polling for minutes, and clone + render against `git clone`.
    #[command(after_help = "Example:\n  fleet bench gitjob --seconds 300")]
    Gitjob(gitjob::GitjobBench),
    /// A fleet in one process: N clusters with an agent each; commit to all Ready, CPU, memory.
    #[command(after_help = "Example:\n  fleet bench fleet --clusters 1000")]
    Fleet(fleet::FleetBench),
    /// An attacker's probes against the hub, gitjob and the controller as production runs
    /// them, each its own process: whether each held, peak memory and file descriptors.
    #[command(after_help = "Example:\n  fleet bench attack")]
    Attack(attack::AttackBench),
}

/// Runs a benchmark.
fn run(command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Kustomize(args) => kustomize::run(args),
        BenchCommand::Helm(args) => helm::run(args),
        BenchCommand::Hub(args) => hub::run(args),
        BenchCommand::Soak(args) => soak::run(args),
        BenchCommand::Gitjob(args) => gitjob::run(args),
        BenchCommand::Fleet(args) => fleet::run(args),
        BenchCommand::Attack(args) => attack::run(args),
    }
}

/// The `fleet` binary beside this one, for benchmarks that run a part as its own process.
fn fleet_binary() -> Result<std::path::PathBuf> {
    use anyhow::Context;
    let me = std::env::current_exe().context("finding this binary")?;
    let fleet = me.with_file_name("fleet");
    if !fleet.is_file() {
        anyhow::bail!(
            "{} is missing: build it too (cargo build --release --bins)",
            fleet.display()
        );
    }
    Ok(fleet)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    fleet_objects::service::init_logging();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
