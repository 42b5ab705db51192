//! `fleet lint DIR`: strict fleet.yaml checks and a render of every customization.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use fleet_renderer::bundle::{self, ClusterInfo};
use fleet_renderer::RepoRoot;

/// Arguments of `fleet lint`.
#[derive(Args, Debug)]
#[command(after_help = "Example:\n  fleet lint .")]
pub struct LintArgs {
    /// Repository directory to check.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

/// Runs `fleet lint`.
pub fn run(args: LintArgs) -> Result<()> {
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
        for cluster in ClusterInfo::checks_for(&fleet) {
            if let Err(e) = bundle::render(&root, dir, &fleet, &cluster) {
                let message = e.to_string();
                if !problems.contains(&message) {
                    problems.push(message);
                }
            }
        }
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
