//! `fleet kustomize build DIR`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use super::output::{print_structured, Format};
use fleet_renderer::{kustomize, yaml, RepoRoot};

/// Kustomize subcommands.
#[derive(Subcommand, Debug)]
pub enum KustomizeCommand {
    /// Build a kustomization and print the resources, as `kubectl kustomize DIR` does.
    #[command(after_help = "Example:\n  fleet kustomize build overlays/prod")]
    Build {
        /// Directory holding kustomization.yaml.
        dir: PathBuf,
        /// Directory that paths may not leave (default: DIR itself, as kustomize's
        /// load restrictor does).
        #[arg(long)]
        root: Option<PathBuf>,
        /// Output format: YAML documents as kubectl prints them (text), or one JSON or YAML
        /// list.
        #[arg(short, long, value_enum, default_value_t = Format::Text)]
        output: Format,
    },
}

/// Runs a kustomize subcommand.
pub fn run(command: KustomizeCommand) -> Result<()> {
    match command {
        KustomizeCommand::Build { dir, root, output } => {
            let root = RepoRoot::new(root.as_deref().unwrap_or(&dir))?;
            let dir = dir.canonicalize()?;
            let resources: Vec<_> = kustomize::build(&root, &dir)?
                .iter()
                .map(fleet_renderer::resource::sorted_keys)
                .collect();
            if print_structured(output, &resources)? {
                return Ok(());
            }
            std::io::stdout().write_all(yaml::to_multi_document(&resources).as_bytes())?;
            Ok(())
        }
    }
}
