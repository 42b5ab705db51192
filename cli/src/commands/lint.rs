//! `fleet lint DIR`: strict fleet.yaml checks and a render of every customization.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use fleet_renderer::bundle::{self, ClusterInfo};
use fleet_renderer::RepoRoot;

use super::output::{print_structured, Format};

/// Arguments of `fleet lint`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  fleet lint .\n  fleet lint apps/ -o json")]
pub(super) struct LintArgs {
    /// Repository directory to check.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Output format: a summary and the problems (text), or a JSON or YAML report.
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
}

/// What `fleet lint -o json|yaml` prints.
#[derive(serde::Serialize)]
struct Report<'a> {
    bundles: usize,
    problems: &'a [String],
}

/// Runs `fleet lint`.
pub(super) fn run(args: LintArgs) -> Result<()> {
    let root = RepoRoot::new(&args.dir)?;
    let mut problems = Vec::new();
    let bundles = bundle::discover(&root, &[])?;
    for dir in &bundles {
        let Some(path) = &dir.fleet_yaml else {
            continue;
        };
        let fleet = match bundle::load_fleet_yaml(&root, path, true) {
            Ok(loaded) => loaded.spec,
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        let name = bundle::name_for(&fleet, super::test::NAME_PREFIX, dir);
        for cluster in ClusterInfo::checks_for(&fleet) {
            if let Err(e) = bundle::render(&root, dir, &name, &fleet, &cluster) {
                let message = e.to_string();
                if !problems.contains(&message) {
                    problems.push(message);
                }
            }
        }
    }
    let report = Report {
        bundles: bundles.len(),
        problems: &problems,
    };
    if print_structured(args.output, &report)? {
        if problems.is_empty() {
            return Ok(());
        }
        bail!("{} problem(s) found", problems.len());
    }
    if problems.is_empty() {
        println!("{} bundles checked, no problems", bundles.len());
        return Ok(());
    }
    for problem in &problems {
        eprintln!("{problem}");
    }
    bail!("{} problem(s) found", problems.len())
}
