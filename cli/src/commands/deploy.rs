//! `fleet deploy --dry-run`: the resources the BundleDeployments of a file (from `fleet
//! target`) would deploy, read from their Contents, as Rancher Fleet's `fleet deploy
//! --dry-run` prints them: one YAML list per BundleDeployment, the release's resources
//! and then its hooks. A Content written by Rancher Fleet holds the bundle's files rather
//! than resources; they are rendered here, as Fleet's agent would render them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use clap::Args;
use fleet_api::{BundleDeployment, Content, Payload};
use fleet_renderer::bundle::MemberData;
use kube::ResourceExt;
use serde_json::Value;

/// Arguments of `fleet deploy`.
#[derive(Args, Debug)]
#[command(after_help = "Example:
  fleet target --bundle-file bundle.yaml --dump-input-list > bd.yaml
  fleet deploy --input-file bd.yaml --dry-run --kube-version v1.30.0")]
pub(super) struct DeployArgs {
    /// The file holding the Contents and BundleDeployments (`fleet target`'s output, or a
    /// Content and BundleDeployment written by Rancher Fleet). Without it, this help.
    #[arg(short, long)]
    input_file: Option<PathBuf>,
    /// Print the resources that would be deployed (required: deploying is the agent's
    /// work, or the controller's for a pushed cluster).
    #[arg(short, long)]
    dry_run: bool,
    /// Namespace for resources that name none and whose deployment names none either.
    #[arg(short, long, default_value = "default")]
    namespace: String,
    /// The Kubernetes version to render for (`.Capabilities.KubeVersion`, and the version
    /// a chart's `kubeVersion` range is checked against), when the Content holds files.
    #[arg(long)]
    kube_version: Option<String>,
}

/// Prints, per BundleDeployment, the resources it would deploy.
pub(super) fn run(args: DeployArgs) -> Result<()> {
    let Some(input) = &args.input_file else {
        return super::print_help_of("deploy");
    };
    let file = input.display().to_string();
    let (contents, deployments) = read_input(input, &file)?;
    if !args.dry_run {
        bail!(
            "fleet deploy only prints (--dry-run): the agent deploys a BundleDeployment in \
             its cluster, or the controller for a pushed cluster"
        );
    }
    let mut out = String::new();
    for deployment in &deployments {
        let content = content_of(deployment, &contents, &file)?;
        let payload = resources_of(deployment, content, &args)?;
        let options = deployment.spec.options.clone().unwrap_or_default();
        let namespace = options
            .target_namespace
            .or(options.default_namespace)
            .unwrap_or_else(|| args.namespace.clone());
        let mut objects = payload.resources;
        objects.extend(payload.helm.into_iter().flat_map(|release| {
            release
                .hooks
                .into_iter()
                .map(|hook| hook.object)
                .collect::<Vec<_>>()
        }));
        if !out.is_empty() {
            out.push_str("---\n");
        }
        out.push_str(&format!(
            "# dry run: BundleDeployment {}/{}: {} resource(s), namespace {namespace}\n",
            deployment.namespace().unwrap_or_default(),
            deployment.name_any(),
            objects.len()
        ));
        out.push_str(&serde_yaml_ng::to_string(&objects)?);
    }
    print!("{out}");
    Ok(())
}

/// The Contents (by name) and BundleDeployments the file holds, in any order.
fn read_input(
    input: &Path,
    file: &str,
) -> Result<(BTreeMap<String, Content>, Vec<BundleDeployment>)> {
    let text = super::read_yaml_file(input, file)?;
    let mut contents = BTreeMap::new();
    let mut deployments = Vec::new();
    for document in fleet_files::yaml::parse_documents(&text, file)? {
        match document.get("kind").and_then(Value::as_str) {
            Some("Content") => {
                let content: Content =
                    serde_json::from_value(document).with_context(|| format!("{file}: Content"))?;
                contents.insert(content.name_any(), content);
            }
            Some("BundleDeployment") => deployments.push(
                serde_json::from_value(document)
                    .with_context(|| format!("{file}: BundleDeployment"))?,
            ),
            _ => {}
        }
    }
    if contents.is_empty() {
        bail!("{file}: failed to read content resource from file");
    }
    if deployments.is_empty() {
        bail!("{file}: failed to read bundledeployment resource from file");
    }
    Ok((contents, deployments))
}

/// The Content `deployment` deploys: the one its deployment id names or, when the file
/// holds a single Content, that one (Rancher Fleet's `deploy` reads the Content of the
/// file whatever its name).
fn content_of<'c>(
    deployment: &BundleDeployment,
    contents: &'c BTreeMap<String, Content>,
    file: &str,
) -> Result<&'c Content> {
    let id = deployment.spec.deployment_id.clone().unwrap_or_default();
    let content_id = id.split(':').next().unwrap_or_default();
    if let Some(content) = contents.get(content_id) {
        return Ok(content);
    }
    match contents.values().collect::<Vec<_>>()[..] {
        [only] => Ok(only),
        _ => bail!(
            "{file}: BundleDeployment {}/{} names Content {content_id}, which the file does not hold",
            deployment.namespace().unwrap_or_default(),
            deployment.name_any()
        ),
    }
}

/// The resources `content` holds for `deployment`; the files of one the agent renders are
/// rendered here, without a cluster to read `valuesFrom` or answer `lookup`.
fn resources_of(
    deployment: &BundleDeployment,
    content: &Content,
    args: &DeployArgs,
) -> Result<Payload> {
    let payload = content.unpack()?;
    let Some(render) = &payload.member_render else {
        return Ok(payload);
    };
    let member = MemberData {
        kube_version: args.kube_version.clone(),
        ..MemberData::default()
    };
    let bundle_name = fleet_agent::member_render::bundle_name(render, deployment);
    let options = deployment.spec.options.clone().unwrap_or_default();
    fleet_agent::member_render::render_files(render, &bundle_name, options, &member)
        .with_context(|| format!("rendering BundleDeployment {}", deployment.name_any()))
}
