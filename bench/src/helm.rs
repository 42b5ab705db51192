//! `fleet bench helm`: `fleet helm template` against real `helm template` (Helm 4.3.1, the
//! binary `.ci/real-tools.sh` installs from PyPI), process against process, on every case
//! of the Helm corpus, in one run; each ratio printed, and the least favourable one.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::reference::{race, real_tool, tsv_rows, Tally};

/// Arguments of `fleet bench helm`.
#[derive(Args, Debug)]
pub(crate) struct HelmBench {
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

/// The corpus's render cases, as `helm template` arguments.
fn cases(corpus: &Path, only: Option<&str>) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for row in tsv_rows(&corpus.join("MANIFEST.tsv"))? {
        let field = |name: &str| row.get(name).map(String::as_str).unwrap_or("-");
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

/// Runs the benchmark.
pub(crate) fn run(args: HelmBench) -> Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let helm = real_tool("helm4", args.helm)?;
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
    let mut tally = Tally::default();
    for case in &cases {
        let race = race(
            args.runs,
            (&fleet, &["helm"]),
            (&helm, &[]),
            &case.args,
            &corpus,
        )?;
        tally.add(&case.id, &race);
        println!(
            "{:<52} {:>7.1} ms {:>7.1} ms {:>6.1}x{}",
            case.id,
            race.ours.as_secs_f64() * 1e3,
            race.theirs.as_secs_f64() * 1e3,
            race.ratio(),
            race.note("helm")
        );
    }
    println!("{}", tally.summary("helm", args.runs));
    Ok(())
}
