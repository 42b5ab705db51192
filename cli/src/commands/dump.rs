//! `fleet dump`: Fleet's objects and the events of the namespaces that matter, in one
//! `.tgz` archive to attach to a bug report, laid out as Rancher Fleet's `fleet dump` lays
//! it out: one YAML file per object (`<kind>_<namespace>_<name>`), one JSON-lines file of
//! events per namespace (`events_<namespace>`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::ResourceExt;

/// Arguments of `fleet dump`.
#[derive(Args, Debug)]
#[command(after_help = "Example:
  fleet dump --kubeconfig ./hub-data/local.kubeconfig -p fleet-dump.tgz
  tar tzf fleet-dump.tgz")]
pub(super) struct DumpArgs {
    /// Kubeconfig of the cluster holding Fleet's objects (default: in-cluster).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The archive to write.
    #[arg(short = 'p', long, default_value = "fleet-dump.tgz")]
    path: PathBuf,
}

/// The kinds dumped: Fleet's (Contents, which hold only rendered resources, are left out).
const KINDS: [&str; 6] = [
    "Bundle",
    "BundleDeployment",
    "Cluster",
    "ClusterGroup",
    "GitRepo",
    "Policy",
];

/// Namespaces whose events are always dumped, beside those holding a Cluster.
const EVENT_NAMESPACES: [&str; 4] = [
    "cattle-fleet-system",
    "cattle-fleet-local-system",
    "default",
    "kube-system",
];

/// Writes the archive.
pub(super) fn run(args: DumpArgs) -> Result<()> {
    let entries = super::runtime()?.block_on(collect(&args))?;
    let file = std::fs::File::create(&args.path)
        .with_context(|| format!("creating {}", args.path.display()))?;
    let gzip = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut archive = tar::Builder::new(gzip);
    for (name, bytes) in &entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        archive
            .append_data(&mut header, name, bytes.as_slice())
            .with_context(|| format!("writing {name} into {}", args.path.display()))?;
    }
    archive.into_inner()?.finish()?;
    println!(
        "{} entries written to {}",
        entries.len(),
        args.path.display()
    );
    Ok(())
}

/// The archive's files, by name.
async fn collect(args: &DumpArgs) -> Result<Vec<(String, Vec<u8>)>> {
    let client = super::cluster_client(args.kubeconfig.as_deref()).await?;
    let mut entries = Vec::new();
    let mut namespaces: BTreeSet<String> = EVENT_NAMESPACES.iter().map(|n| n.to_string()).collect();
    for kind in KINDS {
        let gvk = GroupVersionKind::gvk(fleet_api::GROUP, fleet_api::VERSION, kind);
        let resource = ApiResource::from_gvk(&gvk);
        let resource = ApiResource {
            plural: plural(kind),
            ..resource
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let listed = api
            .list(&Default::default())
            .await
            .with_context(|| format!("listing {kind}s"))?;
        for mut object in listed.items {
            object.metadata.managed_fields = None;
            let namespace = object.namespace().unwrap_or_default();
            if kind == "Cluster" {
                namespaces.insert(namespace.clone());
            }
            let name = format!(
                "{}_{namespace}_{}",
                kind.to_ascii_lowercase(),
                object.name_any()
            );
            let mut value = serde_json::to_value(&object)?;
            value["apiVersion"] = serde_json::json!(resource.api_version);
            value["kind"] = serde_json::json!(kind);
            entries.push((name, serde_yaml_ng::to_string(&value)?.into_bytes()));
        }
    }
    for namespace in namespaces {
        let api: Api<k8s_openapi::api::core::v1::Event> =
            Api::namespaced(client.clone(), &namespace);
        // A namespace that does not exist has no events.
        let Ok(events) = api.list(&Default::default()).await else {
            continue;
        };
        let mut lines = String::new();
        for event in events.items {
            lines.push_str(&serde_json::to_string(&event)?);
            lines.push('\n');
        }
        entries.push((format!("events_{namespace}"), lines.into_bytes()));
    }
    Ok(entries)
}

/// The plural of a Fleet kind.
fn plural(kind: &str) -> String {
    match kind {
        "Policy" => "policies".into(),
        other => format!("{}s", other.to_ascii_lowercase()),
    }
}
