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
    /// The file holding the Bundle(s), as `fleet apply -o` writes it. Without it, this
    /// help.
    #[arg(short, long)]
    bundle_file: Option<PathBuf>,
    /// Namespace of the Clusters and ClusterGroups (default: each Bundle's).
    #[arg(short, long)]
    namespace: Option<String>,
    /// Kubeconfig of the cluster holding the Clusters (default: in-cluster).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Also print, on standard error, how each cluster was judged (as YAML, a list of
    /// `Bundle`, `Cluster`, `ClusterGroups`, ...; `null` when there are no clusters).
    #[arg(short = 'l', long)]
    dump_input_list: bool,
    /// Where to write the result (default: stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// Prints what the controller would create.
pub(super) fn run(args: TargetArgs) -> Result<()> {
    let Some(bundle_file) = &args.bundle_file else {
        return super::print_help_of("target");
    };
    let file = bundle_file.display().to_string();
    let text = super::read_yaml_file(bundle_file, &file)?;
    let bundles: Vec<Bundle> = fleet_files::yaml::parse_documents(&text, &file)?
        .into_iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("Bundle"))
        .map(serde_json::from_value)
        .collect::<Result<_, _>>()
        .with_context(|| format!("{file}: reading the Bundles"))?;
    if bundles.is_empty() {
        anyhow::bail!("{file}: failed to read bundle from file, bundle is empty");
    }
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
            // The clusters of its namespace and of those its namespace's
            // BundleNamespaceMappings add, as the controller targets them.
            let (mut clusters, mut groups) = (Vec::new(), Vec::new());
            let targeted =
                fleet_controller::preview::targeted_namespaces(&client, bundle, &namespace)
                    .await
                    .context("reading the BundleNamespaceMappings")?;
            for namespace in targeted {
                clusters.extend(
                    Api::<Cluster>::namespaced(client.clone(), &namespace)
                        .list(&Default::default())
                        .await
                        .context("listing Clusters")?
                        .items,
                );
                groups.extend(
                    Api::<ClusterGroup>::namespaced(client.clone(), &namespace)
                        .list(&Default::default())
                        .await
                        .context("listing ClusterGroups")?
                        .items,
                );
            }
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
        let name = format!("{namespace}/{}", bundle.name_any());
        judged.extend(
            preview
                .inputs
                .into_iter()
                .map(|input| (name.clone(), input)),
        );
    }
    if args.dump_input_list {
        eprint!("{}", judged_inputs(&judged)?);
    }
    // As Fleet prints them: each document after a `---` line.
    let mut text = String::new();
    for item in &items {
        text.push_str("---\n");
        text.push_str(&serde_yaml_ng::to_string(item)?);
    }
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

/// How each cluster was judged for each Bundle, as YAML (Fleet's `--dump-input-list`
/// prints its targets with these capitalised keys; `null` when there are none).
fn judged_inputs(judged: &[(String, fleet_controller::preview::TargetInput)]) -> Result<String> {
    if judged.is_empty() {
        return Ok("null\n".into());
    }
    let list: Vec<Value> = judged
        .iter()
        .map(|(bundle, input)| {
            json!({
                "Bundle": bundle,
                "Cluster": input.cluster,
                "ClusterGroups": input.groups,
                "Labels": input.labels,
                "Targeted": input.targeted,
                "Customization": input.customization,
                "DoNotDeploy": input.do_not_deploy,
                "Problem": input.problem,
            })
        })
        .collect();
    Ok(serde_yaml_ng::to_string(&list)?)
}
