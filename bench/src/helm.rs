//! `fleet bench helm`: our Helm engine against real Helm on the same charts, in one run.
//!
//! Real Helm here is Helm 4's library in the PyPI wheel helm-sdkpy (see
//! testdata/charts/make-goldens.sh). It offers no `template` action without a cluster, so
//! its `lint`, which loads the chart and renders every template with the chart's values,
//! stands in: a lower bound on what `helm template` costs.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use fleet_renderer::helm::{chart, engine};

/// Times each chart `runs` times in one process and prints the median in milliseconds.
const HELM_TIMER: &str = r#"
import asyncio, json, sys, time
import helm_sdkpy as helm
async def main():
    runs, charts, medians = int(sys.argv[1]), sys.argv[2:], {}
    config = helm.Configuration(namespace="default")
    for chart in charts:
        lint, samples = helm.Lint(config), []
        for _ in range(runs):
            start = time.perf_counter()
            await lint.run(chart)
            samples.append(time.perf_counter() - start)
        samples.sort()
        medians[chart] = samples[len(samples) // 2] * 1000
    print(json.dumps(medians))
asyncio.run(main())
"#;

/// Arguments of `fleet bench helm`.
#[derive(Args, Debug)]
pub struct HelmBench {
    /// Chart directories.
    #[arg(required = true)]
    charts: Vec<PathBuf>,
    /// Runs per chart (the median is reported).
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// A Python with helm-sdkpy installed.
    #[arg(
        long,
        env = "HELM_SDKPY_PYTHON",
        default_value = "/tmp/helm-sdkpy-venv/bin/python"
    )]
    python: PathBuf,
}

fn ours(path: &std::path::Path, runs: usize) -> Result<Duration> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let loaded = chart::load(path)?;
        engine::render(&loaded, &serde_json::json!({}), &engine::Options::default())?;
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok(samples[samples.len() / 2])
}

/// Runs the benchmark.
pub fn run(args: HelmBench) -> Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let charts: Vec<String> = args
        .charts
        .iter()
        .filter(|c| c.join("Chart.yaml").is_file())
        .map(|c| std::fs::canonicalize(c).map(|p| p.display().to_string()))
        .collect::<std::io::Result<_>>()
        .context("reading the chart paths")?;
    if charts.is_empty() {
        bail!("none of the paths is a chart directory (with a Chart.yaml)");
    }
    let output = Command::new(&args.python)
        .arg("-c")
        .arg(HELM_TIMER)
        .arg(args.runs.to_string())
        .args(&charts)
        .output()
        .with_context(|| {
            format!(
                "running {} (install helm-sdkpy as make-goldens.sh does)",
                args.python.display()
            )
        })?;
    if !output.status.success() {
        bail!(
            "real Helm failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let helm: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("reading Helm's timings")?;
    println!(
        "{:<40} {:>12} {:>12} {:>8}",
        "chart", "fleet", "helm lint", "ratio"
    );
    let (mut total_ours, mut total_helm) = (0.0, 0.0);
    for chart in &charts {
        let mine = ours(std::path::Path::new(chart), args.runs)?.as_secs_f64() * 1e3;
        let theirs = helm
            .get(chart)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(f64::NAN);
        total_ours += mine;
        total_helm += theirs;
        let name = std::path::Path::new(chart)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        println!(
            "{name:<40} {mine:>9.3} ms {theirs:>9.3} ms {:>7.1}x",
            theirs / mine
        );
    }
    println!(
        "{:<40} {total_ours:>9.3} ms {total_helm:>9.3} ms {:>7.1}x (medians of {} runs, same machine, same run)",
        "all",
        total_helm / total_ours,
        args.runs
    );
    Ok(())
}
