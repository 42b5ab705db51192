//! `fleet bench`: measurements for humans, printed with the reference or the target they
//! are judged against. Not tests.

mod gitjob;
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
    /// Poll cost, 1,000 GitRepos polling for minutes, and clone + render against `git clone`.
    ///
    /// Example: fleet bench gitjob --seconds 300
    Gitjob(gitjob::GitjobBench),
}

/// Runs a benchmark.
pub fn run(command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Kustomize(args) => kustomize::run(args),
        BenchCommand::Helm(args) => helm::run(args),
        BenchCommand::Hub(args) => hub::run(args),
        BenchCommand::Gitjob(args) => gitjob::run(args),
    }
}

/// Resident memory of a process (`self` or a pid), in KiB, from /proc.
fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
