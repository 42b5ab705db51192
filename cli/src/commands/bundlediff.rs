//! `fleet bundlediff`: what changed on deployed resources, as the agents report it in
//! their BundleDeployments' `modifiedStatus`, per deployment or per Bundle; or the
//! `diff.comparePatches` a fleet.yaml needs to ignore those changes.

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use fleet_api::labels::{BUNDLE_NAMESPACE_LABEL, BUNDLE_NAME_LABEL};
use fleet_api::BundleDeployment;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

/// Arguments of `fleet bundlediff`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet bundlediff                                   # every modified deployment
  fleet bundlediff --bundle demo-app                 # the deployments of one Bundle
  fleet bundlediff --bundle-deployment demo-app -n cluster-fleet-local-dev
  fleet bundlediff --fleet-yaml --bundle-deployment demo-app -n cluster-fleet-local-dev")]
pub(super) struct BundleDiffArgs {
    /// Kubeconfig of the hub (the cluster holding the BundleDeployments).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Only the deployments of this Bundle.
    #[arg(short, long, conflicts_with = "bundle_deployment")]
    bundle: Option<String>,
    /// Only this BundleDeployment (needs --namespace).
    #[arg(long, requires = "namespace")]
    bundle_deployment: Option<String>,
    /// Only this namespace (of the BundleDeployments; of the Bundle with --bundle).
    #[arg(short, long)]
    namespace: Option<String>,
    /// Print JSON.
    #[arg(long, conflicts_with = "fleet_yaml")]
    json: bool,
    /// Print the `diff:` section of a fleet.yaml that ignores these changes.
    #[arg(long)]
    fleet_yaml: bool,
}

/// One modified deployment.
#[derive(serde::Serialize)]
struct Diffs {
    bundle: String,
    #[serde(rename = "bundleDeployment")]
    bundle_deployment: String,
    namespace: String,
    modified: Vec<Value>,
}

/// Prints the diffs.
pub(super) fn run(args: BundleDiffArgs) -> Result<()> {
    let deployments = super::runtime()?.block_on(deployments(&args))?;
    let diffs: Vec<Diffs> = deployments
        .iter()
        .filter_map(|d| {
            let modified = d.status.as_ref()?.modified_status.clone();
            (!modified.is_empty()).then(|| Diffs {
                bundle: d
                    .labels()
                    .get(BUNDLE_NAME_LABEL)
                    .cloned()
                    .unwrap_or_default(),
                bundle_deployment: d.name_any(),
                namespace: d.namespace().unwrap_or_default(),
                modified,
            })
        })
        .collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&diffs)?);
    } else if args.fleet_yaml {
        print!("{}", fleet_yaml(&diffs)?);
    } else if diffs.is_empty() {
        println!("no modified resources");
    } else {
        print!("{}", text(&diffs));
    }
    Ok(())
}

async fn deployments(args: &BundleDiffArgs) -> Result<Vec<BundleDeployment>> {
    let client = super::cluster_client(args.kubeconfig.as_deref()).await?;
    if let (Some(name), Some(namespace)) = (&args.bundle_deployment, &args.namespace) {
        let api: Api<BundleDeployment> = Api::namespaced(client, namespace);
        let found = api
            .get_opt(name)
            .await
            .with_context(|| format!("reading BundleDeployment {namespace}/{name}"))?;
        let Some(found) = found else {
            bail!("BundleDeployment {namespace}/{name} not found");
        };
        return Ok(vec![found]);
    }
    let mut params = ListParams::default();
    let mut selector = Vec::new();
    if let Some(bundle) = &args.bundle {
        selector.push(format!("{BUNDLE_NAME_LABEL}={bundle}"));
        if let Some(namespace) = &args.namespace {
            selector.push(format!("{BUNDLE_NAMESPACE_LABEL}={namespace}"));
        }
    }
    if !selector.is_empty() {
        params = params.labels(&selector.join(","));
    }
    let api: Api<BundleDeployment> = match (&args.bundle, &args.namespace) {
        (None, Some(namespace)) => Api::namespaced(client, namespace),
        _ => Api::all(client),
    };
    let mut items = api
        .list(&params)
        .await
        .context("listing BundleDeployments")?
        .items;
    items.sort_by_key(|d| (d.labels().get(BUNDLE_NAME_LABEL).cloned(), d.namespace()));
    Ok(items)
}

fn field<'v>(resource: &'v Value, name: &str) -> &'v str {
    resource
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The diffs grouped by Bundle, each resource with its patch.
fn text(diffs: &[Diffs]) -> String {
    let mut out = String::new();
    let mut bundle = None;
    for diff in diffs {
        if bundle != Some(&diff.bundle) {
            out.push_str(&format!("Bundle {}\n", diff.bundle));
            bundle = Some(&diff.bundle);
        }
        out.push_str(&format!(
            "  BundleDeployment {}/{}\n",
            diff.namespace, diff.bundle_deployment
        ));
        for resource in &diff.modified {
            let namespace = field(resource, "namespace");
            let name = if namespace.is_empty() {
                field(resource, "name").to_string()
            } else {
                format!("{namespace}/{}", field(resource, "name"))
            };
            let what = if resource.get("missing") == Some(&Value::Bool(true)) {
                "missing".to_string()
            } else if resource.get("delete") == Some(&Value::Bool(true)) {
                "not in the bundle (to delete)".to_string()
            } else {
                format!("patch {}", field(resource, "patch"))
            };
            out.push_str(&format!(
                "    {} {} {name}: {what}\n",
                field(resource, "apiVersion"),
                field(resource, "kind")
            ));
        }
    }
    out
}

/// A fleet.yaml `diff:` section whose compare patches mask every drifted path.
fn fleet_yaml(diffs: &[Diffs]) -> Result<String> {
    let mut patches = Vec::new();
    for resource in diffs.iter().flat_map(|d| &d.modified) {
        let pointers: Vec<&str> = resource
            .get("paths")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if pointers.is_empty() {
            continue;
        }
        let mut patch = json!({
            "apiVersion": field(resource, "apiVersion"),
            "kind": field(resource, "kind"),
            "name": field(resource, "name"),
            "jsonPointers": pointers,
        });
        if !field(resource, "namespace").is_empty() {
            patch["namespace"] = json!(field(resource, "namespace"));
        }
        if !patches.contains(&patch) {
            patches.push(patch);
        }
    }
    Ok(serde_yaml_ng::to_string(
        &json!({"diff": {"comparePatches": patches}}),
    )?)
}
