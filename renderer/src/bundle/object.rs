//! The Bundle object of a bundle directory, as Rancher Fleet's `fleet apply` writes it: the
//! directory's files as resources, and the fleet.yaml's options, targets and labels.

use base64::Engine;
use fleet_api::labels::{BUNDLE_PATH_LABEL, REPO_NAME_LABEL};
use fleet_api::{Bundle, BundleResource, BundleSpec, BundleTarget, FleetYaml};

use super::discovery::BundleDir;
use super::manifests::bundle_files;
use super::names::bundle_name;
use crate::RepoRoot;
use crate::{RenderError, Result};

/// The Bundle's name: fleet.yaml's `name`, else the one Fleet makes from the GitRepo (or
/// name prefix) `repo_name` and the bundle's directory.
pub fn name_for(fleet: &FleetYaml, repo_name: &str, dir: &BundleDir) -> String {
    fleet
        .name
        .clone()
        .unwrap_or_else(|| bundle_name(repo_name, &dir.name_path()))
}

/// The Bundle for `dir`, described by `fleet`, named after `repo_name` and placed in
/// `namespace`. Label values that Kubernetes would refuse (paths with `/`) are made safe.
pub fn bundle_object(
    root: &RepoRoot,
    dir: &BundleDir,
    fleet: &FleetYaml,
    repo_name: &str,
    namespace: &str,
) -> Result<Bundle> {
    let name = name_for(fleet, repo_name, dir);
    let files = bundle_files(root, dir)?;
    let mut resources: Vec<BundleResource> = files.iter().map(plain_resource).collect();
    // Fleet's `fleet apply` compresses every resource of a Bundle this large.
    if serialized_size(&resources) >= COMPRESS_FROM {
        resources = files.iter().map(compressed_resource).collect();
    }
    let size = serialized_size(&resources);
    if size > MAX_RESOURCES_BYTES {
        let directory = if dir.rel.is_empty() { "." } else { &dir.rel };
        return Err(RenderError::in_file(
            format!("{directory}/"),
            format!(
                "bundle {name}: its files take {size} bytes even compressed; Kubernetes keeps an \
                 object within 1.5 MiB (etcd's request limit), so a Bundle may hold at most \
                 {MAX_RESOURCES_BYTES} bytes of files: split it into smaller bundles"
            ),
        ));
    }
    let mut labels = fleet.labels.clone();
    labels.insert(REPO_NAME_LABEL.into(), repo_name.to_string());
    labels.insert(BUNDLE_PATH_LABEL.into(), label_value(&dir.rel));
    let mut bundle = Bundle::new(
        &name,
        BundleSpec {
            options: fleet.options.clone(),
            paused: fleet.paused,
            rollout_strategy: fleet.rollout_strategy.clone(),
            resources,
            targets: fleet
                .target_customizations
                .iter()
                .map(|t| BundleTarget {
                    source: Some(fleet_api::CUSTOMIZATION_SOURCE.into()),
                    ..t.clone()
                })
                .collect(),
            target_customization_mode: fleet.target_customization_mode,
            target_restrictions: Vec::new(),
            depends_on: fleet.depends_on.clone(),
            contents_id: None,
        },
    );
    bundle.metadata.namespace = Some(namespace.to_string());
    bundle.metadata.labels = Some(labels);
    Ok(bundle)
}

/// The encoded size of a Bundle's resources from which they are all compressed
/// (`base64+gz`), as Rancher Fleet compresses a Bundle of a million bytes.
const COMPRESS_FROM: usize = 1_000_000;

/// The most a Bundle's resources may take: etcd stores an object in one request of at most
/// 1.5 MiB by default, and the Bundle's metadata and status need room beside them.
const MAX_RESOURCES_BYTES: usize = 1_310_720;

/// A file as Fleet's Bundle holds it: as text, or base64 when it is not UTF-8.
fn plain_resource((rel, bytes): &(String, Vec<u8>)) -> BundleResource {
    match std::str::from_utf8(bytes) {
        Ok(text) => BundleResource {
            name: Some(rel.clone()),
            content: Some(text.to_string()),
            encoding: None,
        },
        Err(_) => BundleResource {
            name: Some(rel.clone()),
            content: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
            encoding: Some("base64".into()),
        },
    }
}

/// A file gzipped and base64-encoded (`base64+gz`).
fn compressed_resource((rel, bytes): &(String, Vec<u8>)) -> BundleResource {
    use std::io::Write;
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to memory does not fail.
    let packed = gzip
        .write_all(bytes)
        .and_then(|()| gzip.finish())
        .unwrap_or_default();
    BundleResource {
        name: Some(rel.clone()),
        content: Some(base64::engine::general_purpose::STANDARD.encode(packed)),
        encoding: Some("base64+gz".into()),
    }
}

/// How many bytes `resources` take in the Bundle's JSON.
fn serialized_size(resources: &[BundleResource]) -> usize {
    serde_json::to_vec(resources).map_or(usize::MAX, |json| json.len())
}

/// A label value for `text`: at most 63 characters of `[A-Za-z0-9._-]`, starting and ending
/// with an alphanumeric; other characters become `-`.
pub fn label_value(text: &str) -> String {
    let safe: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    safe.trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::label_value;

    #[test]
    fn label_values_are_what_kubernetes_accepts() {
        assert_eq!(label_value("multi-cluster/helm"), "multi-cluster-helm");
        assert_eq!(label_value("."), "");
        assert_eq!(label_value(&"a".repeat(70)).len(), 63);
    }
}
