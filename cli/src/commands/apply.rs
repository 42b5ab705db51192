//! `fleet apply NAME [DIR...]`: the Bundle objects Rancher Fleet would create, written to
//! a file (`-o`) or applied to a cluster (and the bundles of NAME no longer found pruned),
//! as Fleet's `fleet apply` does.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use fleet_renderer::bundle;
use fleet_renderer::RepoRoot;

/// Arguments of `fleet apply`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  fleet apply -n fleet-local -o bundles.yaml my-repo multi-cluster/manifests\n  fleet apply --kubeconfig hub/local.kubeconfig my-repo multi-cluster/manifests\n  fleet apply --driven-scan -o - my-repo app:dev.yaml app:prod.yaml\n  fleet apply --targets-file targets.yaml -o - my-repo ."
)]
pub(super) struct ApplyArgs {
    /// Namespace of the Bundle objects.
    #[arg(short, long, default_value = "fleet-local")]
    pub namespace: String,
    /// File to write the Bundles to (`-` for stdout); without it, they are applied to the
    /// cluster of `--kubeconfig`.
    #[arg(short, long)]
    pub output: Option<String>,
    /// Kubeconfig of the cluster to apply the Bundles to (default: in-cluster).
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Name prefix of the bundles (the GitRepo name).
    pub name: String,
    /// Directories scanned for bundles (default: the current directory); with
    /// `--driven-scan`, bundle directories, each optionally followed by the separator and
    /// its options file (`base:options.yaml`).
    pub dirs: Vec<String>,
    /// Repository root the directories are relative to.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Each argument is one bundle, not a directory to scan (Fleet's driven scan).
    #[arg(long)]
    pub driven_scan: bool,
    /// What separates a bundle directory from its options file under `--driven-scan`.
    #[arg(long = "driven-scan-sep", default_value = ":")]
    pub driven_scan_separator: String,
    /// The options file to read in each bundle directory instead of fleet.yaml (relative
    /// to the directory), as with `-b` in Fleet.
    #[arg(short = 'b', long)]
    pub bundle_file: Option<String>,
    /// A file of targets and target restrictions (a Bundle spec's `targets` and
    /// `targetRestrictions`, as a GitRepo's controller writes them) added to each Bundle
    /// whose fleet.yaml has no `overrideTargets`.
    #[arg(long)]
    pub targets_file: Option<PathBuf>,
}

/// The bundle directories `args` name: scanned, or declared one by one.
fn bundle_dirs(root: &RepoRoot, args: &ApplyArgs) -> Result<Vec<bundle::BundleDir>> {
    if !args.driven_scan {
        let mut dirs = bundle::discover(root, &args.dirs)?;
        if let Some(file) = &args.bundle_file {
            for dir in &mut dirs {
                let options = dir.dir.join(file);
                if options.is_file() {
                    dir.left_out = vec![options.clone()];
                    dir.fleet_yaml = Some(options);
                    dir.options = Some(file.clone());
                }
            }
        }
        return Ok(dirs);
    }
    let mut declared = Vec::new();
    for arg in &args.dirs {
        let parts: Vec<&str> = arg.split(args.driven_scan_separator.as_str()).collect();
        let (base, options) = match parts.as_slice() {
            // Fleet's driven scan reads a bare base's own fleet.yaml, whatever `-b` says.
            [base] => (*base, None),
            [base, options] => (*base, Some(options.to_string())),
            _ => anyhow::bail!("invalid bundle path: {arg:?}"),
        };
        declared.push(fleet_api::BundlePath {
            base: base.to_string(),
            options,
        });
    }
    if declared.is_empty() {
        declared.push(fleet_api::BundlePath {
            base: ".".into(),
            options: args.bundle_file.clone(),
        });
    }
    Ok(bundle::discover_driven(root, &declared, "fleet apply")?)
}

/// Runs `fleet apply`.
pub(super) fn run(args: ApplyArgs) -> Result<()> {
    let root = RepoRoot::new(&args.root)?;
    let repo_targets = match &args.targets_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let shown = path.display().to_string();
            Some(fleet_files::yaml::parse_one::<bundle::RepoTargets>(
                &text, &shown,
            )?)
        }
        None => None,
    };
    let mut bundles = Vec::new();
    for dir in bundle_dirs(&root, &args)? {
        let fleet = match &dir.fleet_yaml {
            Some(path) => bundle::load_fleet_yaml(&root, path, false)?.spec,
            None => Default::default(),
        };
        let mut object = bundle::bundle_object(&root, &dir, &fleet, &args.name, &args.namespace)?;
        bundle::add_targets(&mut object, &fleet, repo_targets.clone());
        bundles.push(object);
    }
    let Some(output) = &args.output else {
        return super::runtime()?.block_on(apply_live(&args, &bundles));
    };
    let documents: Vec<serde_json::Value> = bundles
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    let text = fleet_helm::yaml::to_kubectl_stream(&documents);
    if output == "-" {
        std::io::stdout().write_all(text.as_bytes())?;
    } else {
        std::fs::write(output, text).with_context(|| format!("writing {output}"))?;
    }
    Ok(())
}

/// Applies `bundles` (server-side, as `fleet-apply`) and deletes the Bundles of the same
/// name prefix (label `fleet.cattle.io/repo-name`) that are no longer among them.
async fn apply_live(args: &ApplyArgs, bundles: &[fleet_api::Bundle]) -> Result<()> {
    use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
    let client = super::cluster_client(args.kubeconfig.as_deref()).await?;
    let api: kube::Api<fleet_api::Bundle> = kube::Api::namespaced(client, &args.namespace);
    let apply = PatchParams::apply("fleet-apply").force();
    let mut names = Vec::new();
    for bundle in bundles {
        let name = kube::ResourceExt::name_any(bundle);
        api.patch(&name, &apply, &Patch::Apply(bundle))
            .await
            .with_context(|| format!("applying bundle {}/{name}", args.namespace))?;
        println!("bundle {}/{name} applied", args.namespace);
        names.push(name);
    }
    let selector = format!("{}={}", fleet_api::labels::REPO_NAME_LABEL, args.name);
    for stale in api
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
    {
        let name = kube::ResourceExt::name_any(&stale);
        if !names.contains(&name) {
            api.delete(&name, &DeleteParams::default())
                .await
                .with_context(|| format!("deleting bundle {}/{name}", args.namespace))?;
            println!("bundle {}/{name} deleted: no longer found", args.namespace);
        }
    }
    Ok(())
}
