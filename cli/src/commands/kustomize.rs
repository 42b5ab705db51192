//! `fleet kustomize build DIR`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;

use super::output::{print_structured, Format};
use fleet_kustomize as kustomize;
use fleet_renderer::RepoRoot;

/// Kustomize subcommands.
#[derive(Subcommand, Debug)]
pub(super) enum KustomizeCommand {
    /// Build a kustomization and print the resources, as `kubectl kustomize DIR` does.
    #[command(after_help = "Example:\n  fleet kustomize build overlays/prod")]
    Build {
        /// Directory holding kustomization.yaml.
        dir: PathBuf,
        /// Directory that no path may leave (default: none, as kubectl: bases and
        /// components may be anywhere, and the load restrictor bounds plain files).
        #[arg(long)]
        root: Option<PathBuf>,
        /// `LoadRestrictionsRootOnly` (default): patches, generator sources and resource
        /// files in or below their kustomization's directory; `LoadRestrictionsNone`:
        /// anywhere.
        #[arg(long, value_enum, default_value_t = Restrictor::LoadRestrictionsRootOnly)]
        load_restrictor: Restrictor,
        /// Output format: YAML documents as kubectl prints them (text), or one JSON or YAML
        /// list.
        #[arg(short, long, value_enum, default_value_t = Format::Text)]
        output: Format,
    },
}

/// kustomize's `--load-restrictor` values.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
#[clap(rename_all = "verbatim")]
pub(super) enum Restrictor {
    /// Plain files only in or below their kustomization's directory.
    LoadRestrictionsRootOnly,
    /// No restriction.
    LoadRestrictionsNone,
}

/// Runs a kustomize subcommand.
pub(super) fn run(command: KustomizeCommand) -> Result<()> {
    match command {
        KustomizeCommand::Build {
            dir,
            root,
            load_restrictor,
            output,
        } => {
            let root = RepoRoot::new(root.as_deref().unwrap_or(std::path::Path::new("/")))?;
            let dir = dir.canonicalize()?;
            let options = kustomize::BuildOptions {
                load_restrictor: match load_restrictor {
                    Restrictor::LoadRestrictionsRootOnly => kustomize::LoadRestrictor::RootOnly,
                    Restrictor::LoadRestrictionsNone => kustomize::LoadRestrictor::None,
                },
                // As kubectl: deprecation warnings on standard error, as each is read.
                on_warning: Some(|warning| eprintln!("{warning}")),
                ..kustomize::BuildOptions::default()
            };
            let resources = kustomize::build_with(&root, &dir, options)?;
            if !matches!(output, Format::Text) {
                let sorted: Vec<_> = resources.iter().map(fleet_files::sorted_keys).collect();
                print_structured(output, &sorted)?;
                return Ok(());
            }
            // The YAML writer orders keys as kubectl does.
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            fleet_helm::yaml::write_kubectl_stream(&mut stdout, &resources)?;
            stdout.flush()?;
            Ok(())
        }
    }
}
