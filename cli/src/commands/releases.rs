//! `fleet releases`: the release record of every deployment, as `helm list` shows releases.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;
use fleet_api::BundleDeployment;
use kube::{Api, ResourceExt};

use super::output::{print_structured, Format};

/// Arguments of `fleet releases`.
#[derive(Args, Debug)]
#[command(after_help = "Example:
  fleet releases --kubeconfig ./hub-data/local.kubeconfig
  fleet releases -o yaml")]
pub(super) struct ReleasesArgs {
    /// Kubeconfig of the hub (the cluster holding the BundleDeployments).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    output: Format,
}

/// One row of the listing.
#[derive(serde::Serialize)]
struct Release {
    cluster: String,
    namespace: String,
    name: String,
    revision: String,
    status: String,
    deployment: String,
}

/// Lists the release of every BundleDeployment.
pub(super) fn run(args: ReleasesArgs) -> Result<()> {
    let runtime = super::runtime()?;
    let deployments = runtime.block_on(async {
        let client = super::cluster_client(args.kubeconfig.as_deref()).await?;
        let list = Api::<BundleDeployment>::all(client)
            .list(&Default::default())
            .await
            .context("listing BundleDeployments")?;
        anyhow::Ok(list.items)
    })?;
    let mut releases: Vec<Release> = deployments.iter().filter_map(release).collect();
    releases.sort_by(|a, b| (&a.cluster, &a.name).cmp(&(&b.cluster, &b.name)));
    if print_structured(args.output, &releases)? {
        return Ok(());
    }
    let rows: Vec<[String; 6]> = releases
        .into_iter()
        .map(|r| {
            [
                r.cluster,
                r.namespace,
                r.name,
                r.revision,
                r.status,
                r.deployment,
            ]
        })
        .collect();
    let header = [
        "CLUSTER",
        "NAMESPACE",
        "NAME",
        "REVISION",
        "STATUS",
        "DEPLOYMENT",
    ];
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("   ").trim_end());
    };
    line(header.to_vec());
    for row in &rows {
        line(row.iter().map(String::as_str).collect());
    }
    Ok(())
}

fn release(deployment: &BundleDeployment) -> Option<Release> {
    let status = deployment.status.as_ref()?;
    let record = status.release.as_deref()?;
    let (place, revision) = record.rsplit_once(':')?;
    let (namespace, name) = place.split_once('/')?;
    let labels = deployment.labels();
    let cluster = format!(
        "{}/{}",
        labels
            .get("fleet.cattle.io/cluster-namespace")
            .cloned()
            .unwrap_or_default(),
        labels
            .get("fleet.cattle.io/cluster")
            .cloned()
            .unwrap_or_default()
    );
    let id = status.applied_deployment_id.clone().unwrap_or_default();
    Some(Release {
        cluster,
        namespace: namespace.to_string(),
        name: name.to_string(),
        revision: revision.to_string(),
        status: status
            .display
            .as_ref()
            .and_then(|d| d.state.clone())
            .unwrap_or_default(),
        deployment: id.chars().take(14).collect(),
    })
}
