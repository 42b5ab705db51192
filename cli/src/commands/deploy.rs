//! `fleet deploy --dry-run`: the resources the BundleDeployments of a file (from `fleet
//! target`) would deploy, read from their Contents, as Rancher Fleet's `fleet deploy
//! --dry-run` prints them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use fleet_api::{BundleDeployment, Content};
use kube::ResourceExt;
use serde_json::Value;

/// Arguments of `fleet deploy`.
#[derive(Args, Debug)]
#[command(after_help = "Example:
  fleet target --bundle-file bundle.yaml --dump-input-list > bd.yaml
  fleet deploy --input-file bd.yaml --dry-run")]
pub(super) struct DeployArgs {
    /// The file holding the Contents and BundleDeployments (`fleet target`'s output).
    #[arg(short, long)]
    input_file: PathBuf,
    /// Print the resources that would be deployed (required: deploying is the agent's
    /// work, or the controller's for a pushed cluster).
    #[arg(short, long, required = true)]
    dry_run: bool,
    /// Namespace for resources that name none and whose deployment names none either.
    #[arg(short, long, default_value = "default")]
    namespace: String,
}

/// Prints, per BundleDeployment, the resources it would deploy.
pub(super) fn run(args: DeployArgs) -> Result<()> {
    let file = args.input_file.display().to_string();
    let text =
        std::fs::read_to_string(&args.input_file).with_context(|| format!("reading {file}"))?;
    let mut contents = BTreeMap::new();
    let mut deployments = Vec::new();
    for document in fleet_files::yaml::parse_documents(&text, &file)? {
        match document.get("kind").and_then(Value::as_str) {
            Some("Content") => {
                let content: Content = serde_json::from_value(document)?;
                contents.insert(content.name_any(), content);
            }
            Some("BundleDeployment") => {
                deployments.push(serde_json::from_value::<BundleDeployment>(document)?)
            }
            _ => {}
        }
    }
    if deployments.is_empty() {
        bail!("{file} holds no BundleDeployment");
    }
    let mut out = String::new();
    for deployment in &deployments {
        let id = deployment.spec.deployment_id.clone().unwrap_or_default();
        let content_id = id.split(':').next().unwrap_or_default();
        let Some(content) = contents.get(content_id) else {
            bail!(
                "{file}: BundleDeployment {}/{} names Content {content_id}, which the file does not hold",
                deployment.namespace().unwrap_or_default(),
                deployment.name_any()
            );
        };
        let payload = content.unpack()?;
        let options = deployment.spec.options.clone().unwrap_or_default();
        let namespace = options
            .target_namespace
            .clone()
            .or(options.default_namespace.clone())
            .unwrap_or_else(|| args.namespace.clone());
        let mode = if args.dry_run { "dry run" } else { "deploy" };
        out.push_str(&format!(
            "# {mode}: BundleDeployment {}/{}: {} resource(s), namespace {namespace}\n",
            deployment.namespace().unwrap_or_default(),
            deployment.name_any(),
            payload.resources.len()
        ));
        if payload.member_render.is_some() {
            out.push_str("# rendered by the agent in its cluster (valuesFrom, lookup or .Capabilities): not shown\n");
            continue;
        }
        out.push_str(&fleet_helm::yaml::to_kubectl_stream(&payload.resources));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    print!("{out}");
    Ok(())
}
