//! `fleet bench kustomize`: our Kustomize engine against `kubectl kustomize`, same inputs,
//! same run, ratios printed.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use fleet_renderer::{kustomize, RepoRoot};

/// Arguments of `fleet bench kustomize`.
#[derive(Args, Debug)]
pub struct KustomizeBench {
    /// Directory whose subdirectories are kustomizations (also the root paths stay in).
    pub fixtures: PathBuf,
    /// Runs of our engine per fixture (the median is reported).
    #[arg(long, default_value_t = 50)]
    pub runs: usize,
    /// Runs of kubectl per fixture (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub kubectl_runs: usize,
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs the benchmark.
pub fn run(args: KustomizeBench) -> Result<()> {
    if args.runs == 0 || args.kubectl_runs == 0 {
        bail!("--runs and --kubectl-runs must be at least 1");
    }
    let root = RepoRoot::new(&args.fixtures)?;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.path())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| kustomize::kustomization_file(p).is_some())
        .collect();
    dirs.sort();
    println!(
        "{:<36} {:>10} {:>12} {:>8}",
        "fixture", "fleet", "kubectl", "ratio"
    );
    let mut slowest_ratio = f64::INFINITY;
    let (mut ours_total, mut theirs_total) = (Duration::ZERO, Duration::ZERO);
    for dir in &dirs {
        let mut ours = Vec::with_capacity(args.runs);
        for _ in 0..args.runs {
            let start = Instant::now();
            kustomize::build(&root, dir)?;
            ours.push(start.elapsed());
        }
        let mut theirs = Vec::with_capacity(args.kubectl_runs);
        for _ in 0..args.kubectl_runs {
            let start = Instant::now();
            let status = Command::new("kubectl")
                .arg("kustomize")
                .arg(dir)
                .output()
                .context("running kubectl kustomize")?;
            if !status.status.success() {
                bail!("kubectl kustomize {} failed", dir.display());
            }
            theirs.push(start.elapsed());
        }
        let (ours, theirs) = (median(ours), median(theirs));
        ours_total += ours;
        theirs_total += theirs;
        let ratio = theirs.as_secs_f64() / ours.as_secs_f64().max(1e-9);
        slowest_ratio = slowest_ratio.min(ratio);
        println!(
            "{:<36} {:>8.3}ms {:>10.1}ms {:>7.0}x",
            root.display(dir),
            ours.as_secs_f64() * 1e3,
            theirs.as_secs_f64() * 1e3,
            ratio
        );
    }
    println!(
        "total: fleet {:.1}ms, kubectl {:.1}ms, {:.0}x faster overall, {:.0}x on the least favourable fixture",
        ours_total.as_secs_f64() * 1e3,
        theirs_total.as_secs_f64() * 1e3,
        theirs_total.as_secs_f64() / ours_total.as_secs_f64().max(1e-9),
        slowest_ratio
    );
    Ok(())
}
