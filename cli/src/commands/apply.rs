//! `fleet apply -o FILE NAME [DIR...]`: the Bundle objects Rancher Fleet would create.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use base64::Engine;
use clap::Args;
use fleet_api::{Bundle, BundleResource, BundleSpec};
use fleet_renderer::bundle::{self, BundleDir};
use fleet_renderer::{yaml, RepoRoot};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

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
        let bundle = bundle_object(&root, &dir, &args)?;
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

fn bundle_object(root: &RepoRoot, dir: &BundleDir, args: &ApplyArgs) -> Result<Bundle> {
    let fleet = match &dir.fleet_yaml {
        Some(path) => bundle::load_fleet_yaml(root, path, false)?.spec,
        None => Default::default(),
    };
    let name = fleet
        .name
        .clone()
        .unwrap_or_else(|| bundle::bundle_name(&args.name, &dir.rel));
    let resources = bundle::bundle_files(root, &dir.dir)?
        .into_iter()
        .map(|(rel, bytes)| match String::from_utf8(bytes) {
            Ok(text) => BundleResource {
                name: Some(rel),
                content: Some(text),
                encoding: None,
            },
            Err(e) => BundleResource {
                name: Some(rel),
                content: Some(base64::engine::general_purpose::STANDARD.encode(e.into_bytes())),
                encoding: Some("base64".into()),
            },
        })
        .collect();
    let mut labels = fleet.labels.clone();
    labels.insert("fleet.cattle.io/repo-name".into(), args.name.clone());
    labels.insert("fleet.cattle.io/bundle-path".into(), dir.rel.clone());
    Ok(Bundle {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(args.namespace.clone()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: BundleSpec {
            options: fleet.options,
            paused: fleet.paused,
            rollout_strategy: fleet.rollout_strategy,
            resources,
            targets: fleet.target_customizations,
            target_restrictions: Vec::new(),
            depends_on: fleet.depends_on,
            contents_id: None,
        },
        status: None,
    })
}
