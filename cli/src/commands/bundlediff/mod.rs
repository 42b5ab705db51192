//! `fleet bundlediff`: what differs on deployed resources, as the agents report it in their
//! BundleDeployments' `modifiedStatus` and `nonReadyStatus`, for one deployment, the
//! deployments of a Bundle or all of them; as text, JSON, or the `diff.comparePatches` a
//! fleet.yaml needs to ignore those changes. Its output is Rancher Fleet's.

mod compare_patches;
mod text;

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use fleet_api::labels::BUNDLE_NAME_LABEL;
use fleet_api::BundleDeployment;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

/// The namespace Fleet's CLI defaults to; given (or defaulted) to `bundlediff`, it means
/// every namespace.
const DEFAULT_NAMESPACE: &str = "fleet-local";

/// Arguments of `fleet bundlediff`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet bundlediff                                   # every deployment with differences
  fleet bundlediff --bundle demo-app                 # the deployments of one Bundle
  fleet bundlediff --bundle-deployment demo-app -n cluster-fleet-local-dev
  fleet bundlediff --fleet-yaml --bundle-deployment demo-app -n cluster-fleet-local-dev")]
pub(super) struct BundleDiffArgs {
    /// Kubeconfig of the hub (the cluster holding the BundleDeployments).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Only the deployments of this Bundle.
    #[arg(short, long)]
    bundle: Option<String>,
    /// Only this BundleDeployment, in --namespace.
    #[arg(long)]
    bundle_deployment: Option<String>,
    /// The namespace of the BundleDeployments; `fleet-local` (the default) means all.
    #[arg(short, long, env = "NAMESPACE", default_value = DEFAULT_NAMESPACE)]
    namespace: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Print the `diff:` section of a fleet.yaml that ignores these changes, merged with
    /// the Bundle's own (needs --bundle-deployment).
    #[arg(long)]
    fleet_yaml: bool,
}

/// The differences of one BundleDeployment, as Fleet's JSON names them.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct DeploymentDiff {
    bundle_deployment_name: String,
    bundle_name: String,
    namespace: String,
    /// `null` when empty, as in Fleet.
    modified_resources: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    non_ready_resources: Vec<Value>,
}

impl DeploymentDiff {
    /// The differences `deployment` reports, if it reports any.
    fn of(deployment: &BundleDeployment) -> Option<Self> {
        let status = deployment.status.as_ref()?;
        let (modified, non_ready) = (&status.modified_status, &status.non_ready_status);
        if modified.is_empty() && non_ready.is_empty() {
            return None;
        }
        Some(Self {
            bundle_deployment_name: deployment.name_any(),
            bundle_name: deployment
                .labels()
                .get(BUNDLE_NAME_LABEL)
                .cloned()
                .unwrap_or_default(),
            namespace: deployment.namespace().unwrap_or_default(),
            modified_resources: (!modified.is_empty()).then(|| modified.clone()),
            non_ready_resources: non_ready.clone(),
        })
    }

    fn modified(&self) -> &[Value] {
        self.modified_resources.as_deref().unwrap_or_default()
    }
}

/// Prints the differences.
pub(super) fn run(args: BundleDiffArgs) -> Result<()> {
    if args.json && args.fleet_yaml {
        bail!("cannot specify both --json and --fleet-yaml");
    }
    let runtime = super::runtime()?;
    let client = runtime.block_on(super::cluster_client(args.kubeconfig.as_deref()))?;
    if args.fleet_yaml && args.bundle_deployment.is_none() {
        bail!("--fleet-yaml requires --bundle-deployment to be specified");
    }
    let deployments = runtime.block_on(deployments(&client, &args))?;
    let diffs: Vec<DeploymentDiff> = deployments.iter().filter_map(DeploymentDiff::of).collect();
    if args.json {
        let mut out = json!({
            "namespace": args.namespace,
            // Fleet's list modes give `null` for nothing found, its single one `[]`.
            "bundleDeploymentDiffs": if diffs.is_empty() && args.bundle_deployment.is_none() {
                Value::Null
            } else {
                serde_json::to_value(&diffs)?
            },
        });
        if let Some(bundle) = args
            .bundle
            .as_ref()
            .filter(|_| args.bundle_deployment.is_none())
        {
            out["bundleName"] = json!(bundle);
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    if diffs.is_empty() {
        // With --fleet-yaml standard output stays a YAML snippet.
        match args.fleet_yaml {
            true => eprintln!("No modified resources found."),
            false => println!("No modified resources found."),
        }
        return Ok(());
    }
    if args.fleet_yaml {
        let Some(yaml) = runtime.block_on(compare_patches::fleet_yaml(&client, &args, &diffs))?
        else {
            return Ok(());
        };
        print!("{yaml}");
        return Ok(());
    }
    match args.bundle_deployment {
        Some(_) => print!("{}", text::single(&diffs)),
        None => print!("{}", text::grouped(&diffs)),
    }
    Ok(())
}

/// The BundleDeployments asked for: the one named (in --namespace), or those of the
/// Bundle or all of them, in --namespace unless that is Fleet's default.
async fn deployments(
    client: &kube::Client,
    args: &BundleDiffArgs,
) -> Result<Vec<BundleDeployment>> {
    if let Some(name) = &args.bundle_deployment {
        let api: Api<BundleDeployment> = Api::namespaced(client.clone(), &args.namespace);
        let found = api
            .get(name)
            .await
            .with_context(|| format!("failed to get BundleDeployment {}/{name}", args.namespace))?;
        return Ok(vec![found]);
    }
    let mut params = ListParams::default();
    if let Some(bundle) = &args.bundle {
        params = params.labels(&format!("{BUNDLE_NAME_LABEL}={bundle}"));
    }
    let every_namespace = args.namespace.is_empty() || args.namespace == DEFAULT_NAMESPACE;
    let api: Api<BundleDeployment> = match every_namespace {
        true => Api::all(client.clone()),
        false => Api::namespaced(client.clone(), &args.namespace),
    };
    let mut items = api
        .list(&params)
        .await
        .context("failed to list BundleDeployments")?
        .items;
    // The API server's order, which the embedded hub shares with kube-apiserver.
    items.sort_by_key(|d| (d.namespace(), d.name_any()));
    Ok(items)
}

/// A string field of a status entry.
fn field<'v>(entry: &'v Value, name: &str) -> &'v str {
    entry.get(name).and_then(Value::as_str).unwrap_or_default()
}
