//! `fleet target`: the Contents and BundleDeployments the controller would create for the
//! Bundles of a file (from `fleet apply -o`), against the Clusters of a live cluster, as
//! Rancher Fleet's `fleet target`; its output is `fleet deploy`'s input.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;
use fleet_api::{Bundle, Cluster, ClusterGroup};
use fleet_controller::preview::Surroundings;
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

/// Arguments of `fleet target`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:
  fleet apply -n fleet-local -o bundle.yaml testbundle simple-chart/
  fleet target --bundle-file bundle.yaml --dump-input-list > bd.yaml
  fleet deploy --input-file bd.yaml --dry-run")]
pub(super) struct TargetArgs {
    /// The file holding the Bundle(s), as `fleet apply -o` writes it.
    #[arg(short, long)]
    bundle_file: PathBuf,
    /// Namespace of the Clusters and ClusterGroups (default: each Bundle's).
    #[arg(short, long)]
    namespace: Option<String>,
    /// Kubeconfig of the cluster holding the Clusters (default: in-cluster).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Print one `List` of the Contents and BundleDeployments (and, as comments, how each
    /// cluster was judged) instead of separate documents.
    #[arg(long)]
    dump_input_list: bool,
    /// Where to write the result (default: stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// Prints what the controller would create.
pub(super) fn run(args: TargetArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.bundle_file)
        .with_context(|| format!("reading {}", args.bundle_file.display()))?;
    let bundles: Vec<Bundle> =
        fleet_files::yaml::parse_documents(&text, &args.bundle_file.display().to_string())?
            .into_iter()
            .filter(|d| d.get("kind").and_then(Value::as_str) == Some("Bundle"))
            .map(serde_json::from_value)
            .collect::<Result<_, _>>()
            .context("reading the Bundles")?;
    let work = tempfile::tempdir().context("a scratch directory")?;
    let charts = fleet_charts::ChartCache::new(work.path().join("charts"));
    let runtime = super::runtime()?;
    let client = runtime.block_on(super::cluster_client(args.kubeconfig.as_deref()))?;
    let mut items = Vec::new();
    let mut judged = Vec::new();
    for mut bundle in bundles {
        let namespace = args
            .namespace
            .clone()
            .or_else(|| bundle.metadata.namespace.clone())
            .unwrap_or_else(|| "fleet-local".into());
        // Its Policies and downstream resources are those of the namespace it would be in.
        bundle
            .metadata
            .namespace
            .get_or_insert_with(|| namespace.clone());
        let bundle = &bundle;
        let (clusters, groups, surroundings) = runtime.block_on(async {
            let clusters = Api::<Cluster>::namespaced(client.clone(), &namespace)
                .list(&Default::default())
                .await
                .context("listing Clusters")?
                .items;
            let groups = Api::<ClusterGroup>::namespaced(client.clone(), &namespace)
                .list(&Default::default())
                .await
                .context("listing ClusterGroups")?
                .items;
            let surroundings = Surroundings::read(&client, bundle)
                .await
                .context("reading the Policies and the downstream resources")?;
            anyhow::Ok((clusters, groups, surroundings))
        })?;
        let preview = fleet_controller::preview::preview(
            bundle,
            &clusters,
            &groups,
            &surroundings,
            work.path(),
            &charts,
            fleet_charts::HelmAuth::none(),
        )
        .with_context(|| format!("bundle {namespace}/{}", bundle.name_any()))?;
        for content in preview.contents {
            let mut value = serde_json::to_value(content)?;
            value["apiVersion"] = json!("fleet.cattle.io/v1alpha1");
            value["kind"] = json!("Content");
            items.push(value);
        }
        for deployment in preview.deployments {
            items.push(serde_json::to_value(deployment)?);
        }
        judged.extend(preview.inputs);
    }
    let mut text = if args.dump_input_list {
        let mut text = String::new();
        for input in &judged {
            text.push_str(&format!("# {}\n", serde_json::to_string(input)?));
        }
        text.push_str(&serde_yaml_ng::to_string(
            &json!({"apiVersion": "v1", "kind": "List", "items": items}),
        )?);
        text
    } else {
        fleet_helm::yaml::to_kubectl_stream(&items)
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    Ok(())
}
