//! `fleet bench`: measurements for humans, printed with the reference or the target they
//! are judged against. Not tests.

mod helm;
mod hub;
mod kustomize;

use anyhow::Result;
use clap::Subcommand;

/// Benchmarks.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Time `fleet kustomize build` against `kubectl kustomize` on every fixture.
    ///
    /// Example: fleet bench kustomize testdata/kustomize
    Kustomize(kustomize::KustomizeBench),
    /// Our Helm engine against real Helm (helm-sdkpy) on the same charts.
    ///
    /// Example: fleet bench helm ../shared/charts/podinfo testdata/charts/*/
    Helm(helm::HelmBench),
    /// Creates per second, watch fan-out latency and memory of the embedded hub.
    ///
    /// Example: fleet bench hub --objects 20000 --watchers 1000
    Hub(hub::HubBench),
}

/// Runs a benchmark.
pub fn run(command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Kustomize(args) => kustomize::run(args),
        BenchCommand::Helm(args) => helm::run(args),
        BenchCommand::Hub(args) => hub::run(args),
    }
}
