//! `fleet bench`: measurements for humans, printed with the reference or the target they
//! are judged against. Not tests.

mod fleet;
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
    #[command(after_help = "Example:\n  fleet bench kustomize testdata/kustomize")]
    Kustomize(kustomize::KustomizeBench),
    /// Our Helm engine against real Helm (helm-sdkpy) on the same charts.
    #[command(
        after_help = "Example:\n  fleet bench helm ../shared/charts/podinfo testdata/charts/*/"
    )]
    Helm(helm::HelmBench),
    /// Creates per second, watch fan-out latency and memory of the embedded hub.
    #[command(after_help = "Example:\n  fleet bench hub --objects 20000 --watchers 1000")]
    Hub(hub::HubBench),
    /// Poll cost, 1,000 GitRepos polling for minutes, and clone + render against `git clone`.
    #[command(after_help = "Example:\n  fleet bench gitjob --seconds 300")]
    Gitjob(gitjob::GitjobBench),
    /// A fleet in one process: N clusters with an agent each; commit to all Ready, CPU, memory.
    #[command(after_help = "Example:\n  fleet bench fleet --clusters 1000")]
    Fleet(fleet::FleetBench),
}

/// Runs a benchmark.
pub fn run(command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Kustomize(args) => kustomize::run(args),
        BenchCommand::Helm(args) => helm::run(args),
        BenchCommand::Hub(args) => hub::run(args),
        BenchCommand::Gitjob(args) => gitjob::run(args),
        BenchCommand::Fleet(args) => fleet::run(args),
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

/// CPU time (user + system) of a process, from /proc; with `children`, that of its
/// children it waited for instead.
pub(crate) fn cpu_of(pid: &str, children: bool) -> f64 {
    let ticks_per_second = 100.0;
    let first = if children { 13 } else { 11 };
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after_name = stat.rsplit_once(") ")?.1;
            let fields: Vec<&str> = after_name.split_whitespace().collect();
            let user: f64 = fields.get(first)?.parse().ok()?;
            let system: f64 = fields.get(first + 1)?.parse().ok()?;
            Some((user + system) / ticks_per_second)
        })
        .unwrap_or(0.0)
}

/// CPU time (user + system) of a process, from /proc.
pub(crate) fn cpu_seconds(pid: &str) -> f64 {
    cpu_of(pid, false)
}
