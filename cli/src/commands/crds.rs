//! `fleet crds`: write or check `deploy/crds/`.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

/// Arguments of `fleet crds`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  fleet crds --output-dir deploy/crds\n  fleet crds --output-dir deploy/crds --check"
)]
pub(super) struct CrdsArgs {
    /// Directory to write one YAML file per CRD into; stdout when absent.
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Do not write: fail when the files differ from the generated ones.
    #[arg(long, requires = "output_dir")]
    pub check: bool,
}

/// Runs `fleet crds`.
pub(super) fn run(args: CrdsArgs) -> Result<()> {
    let mut stale = Vec::new();
    for (file, crd) in fleet_api::crds::all() {
        let text = fleet_api::crds::to_yaml(&crd)?;
        match &args.output_dir {
            None => print!("---\n{text}"),
            Some(dir) if args.check => {
                let path = dir.join(file);
                let existing = std::fs::read_to_string(&path).unwrap_or_default();
                if existing != text {
                    stale.push(path.display().to_string());
                }
            }
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                let path = dir.join(file);
                std::fs::write(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }
    if !stale.is_empty() {
        bail!(
            "CRD files differ from the generated ones (run `fleet crds --output-dir ...`): {}",
            stale.join(", ")
        );
    }
    Ok(())
}
