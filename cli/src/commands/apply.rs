//! `fleet apply -o FILE NAME [DIR...]`: the Bundle objects Rancher Fleet would create.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use fleet_renderer::bundle;
use fleet_renderer::{yaml, RepoRoot};

/// Arguments of `fleet apply`.
#[derive(Args, Debug)]
#[command(
    after_help = "Example:\n  fleet apply -n fleet-local -o bundles.yaml my-repo multi-cluster/manifests"
)]
pub struct ApplyArgs {
    /// Namespace of the Bundle objects.
    #[arg(short, long, default_value = "fleet-local")]
    pub namespace: String,
    /// File to write the Bundles to (`-` for stdout).
    #[arg(short, long)]
    pub output: String,
    /// Name prefix of the bundles (the GitRepo name).
    pub name: String,
    /// Directories scanned for bundles (default: the current directory).
    pub dirs: Vec<String>,
    /// Repository root the directories are relative to.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
}

/// Runs `fleet apply`.
pub fn run(args: ApplyArgs) -> Result<()> {
    let root = RepoRoot::new(&args.root)?;
    let mut documents = Vec::new();
    for dir in bundle::discover(&root, &args.dirs)? {
        let fleet = match &dir.fleet_yaml {
            Some(path) => bundle::load_fleet_yaml(&root, path, false)?.spec,
            None => Default::default(),
        };
        let bundle = bundle::bundle_object(&root, &dir, &fleet, &args.name, &args.namespace)?;
        documents.push(serde_json::to_value(&bundle)?);
    }
    let text = yaml::to_multi_document(&documents);
    if args.output == "-" {
        std::io::stdout().write_all(text.as_bytes())?;
    } else {
        std::fs::write(&args.output, text).with_context(|| format!("writing {}", args.output))?;
    }
    Ok(())
}
