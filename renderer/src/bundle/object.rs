//! The Bundle object of a bundle directory, as Rancher Fleet's `fleet apply` writes it: the
//! directory's files as resources, and the fleet.yaml's options, targets and labels.

use base64::Engine;
use std::collections::BTreeMap;

use fleet_api::{
    Bundle, BundleResource, BundleSpec, BundleTarget, BundleTargetRestriction, CorrectDrift,
    FleetYaml, GitTarget,
};

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

/// The files of a bundle that only say how to build it, never resources, as Fleet leaves
/// them out: `fleet.yaml`, the options file a driven scan names, and the values files the
/// bundle and its customizations name (as written, and by their base name).
fn apply_configs(dir: &BundleDir, fleet: &FleetYaml) -> Vec<String> {
    let mut configs = vec!["fleet.yaml".to_string()];
    if let Some(file) = dir.fleet_yaml.as_deref() {
        if let Ok(relative) = file.strip_prefix(&dir.dir) {
            configs.push(relative.to_string_lossy().into_owned());
        }
    }
    let helms = std::iter::once(&fleet.options)
        .chain(fleet.target_customizations.iter().map(|t| &t.options))
        .filter_map(|options| options.helm.as_deref());
    for file in helms.flat_map(|helm| &helm.values_files) {
        let written = file.trim_start_matches("./");
        configs.push(written.to_string());
        if let Some(base) = std::path::Path::new(written).file_name() {
            configs.push(base.to_string_lossy().into_owned());
        }
    }
    configs
}

/// What Fleet's `fleet apply` flags set on each Bundle it writes; a GitRepo's fields reach
/// its bundles the same way (Fleet's gitjob passes them as those flags).
#[derive(Debug, Clone, Default)]
pub struct ApplySettings {
    /// Labels (`-l`); fleet.yaml's own labels win over them.
    pub labels: BTreeMap<String, String>,
    /// Every resource gzipped and base64-encoded (`-c`), not only large Bundles'.
    pub compress: bool,
    /// Targets and restrictions appended unless fleet.yaml has `overrideTargets` (a
    /// GitRepo's targets, `--targets-file`).
    pub targets: Option<RepoTargets>,
    /// `spec.serviceAccount` (`-a`), over fleet.yaml's.
    pub service_account: Option<String>,
    /// `spec.forceSyncGeneration` (`--sync-generation`); as in Fleet, it replaces
    /// fleet.yaml's.
    pub sync_generation: i64,
    /// The namespace of the Bundle and of each of its targets (`--target-namespace`).
    pub target_namespace: Option<String>,
    /// The Bundle is paused (`--paused`).
    pub paused: bool,
    /// `spec.keepResources` (`--keep-resources`).
    pub keep_resources: bool,
    /// `spec.deleteNamespace` (`--delete-namespace`).
    pub delete_namespace: bool,
    /// `spec.correctDrift`, when enabled (`--correct-drift`), over fleet.yaml's.
    pub correct_drift: Option<CorrectDrift>,
}

/// The Bundle for `dir`, described by `fleet`, named after `repo_name` and placed in
/// `namespace`, with what `settings` sets, as Fleet's bundle reader builds it.
pub fn bundle_object(
    root: &RepoRoot,
    dir: &BundleDir,
    fleet: &FleetYaml,
    repo_name: &str,
    namespace: &str,
    settings: &ApplySettings,
) -> Result<Bundle> {
    let name = name_for(fleet, repo_name, dir);
    let configs = apply_configs(dir, fleet);
    let mut files = bundle_files(root, dir)?;
    files.retain(|(path, _)| !configs.contains(path));
    let mut resources: Vec<BundleResource> = files.iter().map(plain_resource).collect();
    // Fleet's `fleet apply` compresses every resource of a Bundle this large.
    if settings.compress || serialized_size(&resources) >= COMPRESS_FROM {
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
    let mut labels = settings.labels.clone();
    labels.extend(fleet.labels.clone());
    let targets = bundle_targets(fleet, settings.targets.clone());
    let mut bundle = Bundle::new(
        &name,
        BundleSpec {
            options: fleet.options.clone(),
            paused: fleet.paused || settings.paused,
            rollout_strategy: fleet.rollout_strategy.clone(),
            resources,
            targets: targets.targets,
            target_customization_mode: fleet.target_customization_mode,
            target_restrictions: targets.target_restrictions,
            depends_on: fleet.depends_on.clone(),
            contents_id: None,
            helm_op_options: None,
        },
    );
    bundle.metadata.namespace = Some(namespace.to_string());
    bundle.metadata.labels = Some(labels).filter(|l| !l.is_empty());
    settings.set_options(&mut bundle);
    Ok(bundle)
}

impl ApplySettings {
    /// Sets the options these settings name on `bundle`, after its targets.
    fn set_options(&self, bundle: &mut Bundle) {
        let spec = &mut bundle.spec;
        if let Some(account) = self.service_account.clone().filter(|a| !a.is_empty()) {
            spec.options.service_account = Some(account);
        }
        spec.options.force_sync_generation = Some(self.sync_generation).filter(|g| *g != 0);
        if let Some(namespace) = self.target_namespace.clone().filter(|n| !n.is_empty()) {
            for target in &mut spec.targets {
                target.options.target_namespace = Some(namespace.clone());
            }
            spec.options.target_namespace = Some(namespace);
        }
        if self.keep_resources {
            spec.options.keep_resources = Some(true);
        }
        if self.delete_namespace {
            spec.options.delete_namespace = Some(true);
        }
        if let Some(drift) = self.correct_drift.clone().filter(|d| d.enabled) {
            spec.options.correct_drift = Some(drift);
        }
    }
}

/// Whether `bundle`, built from `fleet`, has nothing to deploy: no files, and no chart that
/// its fleet.yaml or a customization names to fetch. Fleet's `fleet apply` leaves such a
/// bundle out.
pub fn has_nothing_to_deploy(bundle: &Bundle, fleet: &FleetYaml) -> bool {
    let mut helms = std::iter::once(&fleet.options)
        .chain(fleet.target_customizations.iter().map(|t| &t.options))
        .filter_map(|options| options.helm.as_deref());
    bundle.spec.resources.is_empty() && !helms.any(super::fleetyaml::names_a_chart)
}

/// The targets a fleet.yaml gives its Bundle, as Fleet's bundle reader lists them: its
/// own `targets`, then its customizations, each without a name named `target000`,
/// `target001`... by its place.
fn own_targets(fleet: &FleetYaml) -> Vec<BundleTarget> {
    let customizations = fleet.target_customizations.iter().map(|t| BundleTarget {
        source: Some(fleet_api::CUSTOMIZATION_SOURCE.into()),
        ..t.clone()
    });
    fleet
        .targets
        .iter()
        .cloned()
        .chain(customizations)
        .enumerate()
        .map(|(index, target)| BundleTarget {
            name: target
                .name
                .clone()
                .filter(|n| !n.is_empty())
                .or_else(|| Some(format!("target{index:03}"))),
            ..target
        })
        .collect()
}

/// Where a Bundle's clusters come from besides its fleet.yaml: the GitRepo's targets,
/// each a target and a restriction (Fleet's targets file, `fleet apply --targets-file`).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoTargets {
    /// Targets appended to the Bundle's.
    #[serde(default)]
    pub targets: Vec<BundleTarget>,
    /// The restrictions every target is held to.
    #[serde(default)]
    pub target_restrictions: Vec<BundleTargetRestriction>,
}

impl RepoTargets {
    /// A GitRepo's `targets` as Fleet's GitRepo controller writes them for its bundles
    /// (`{name: default, clusterGroup: default}` when it has none).
    pub fn of_gitrepo(targets: &[GitTarget]) -> Self {
        let default = [GitTarget {
            name: Some("default".into()),
            cluster_group: Some("default".into()),
            ..GitTarget::default()
        }];
        let targets = if targets.is_empty() {
            &default[..]
        } else {
            targets
        };
        Self::of(targets)
    }

    /// Each of `targets` as a target and a restriction.
    fn of(targets: &[GitTarget]) -> Self {
        let target_restrictions: Vec<BundleTargetRestriction> =
            targets.iter().map(BundleTargetRestriction::from).collect();
        Self {
            targets: target_restrictions
                .iter()
                .map(|restriction| BundleTarget {
                    source: Some(fleet_api::GITREPO_SOURCE.into()),
                    ..BundleTarget::from(restriction)
                })
                .collect(),
            target_restrictions,
        }
    }
}

/// A Bundle's targets and restrictions as Fleet's bundle reader lists them: fleet.yaml's
/// own targets and customizations, then its `overrideTargets` when it has them, else the
/// `repo` targets (a GitRepo's, or `fleet apply --targets-file`), each appended as a
/// target and a restriction; a Bundle left without any target gets Fleet's default, the
/// `default` cluster group.
pub fn bundle_targets(fleet: &FleetYaml, repo: Option<RepoTargets>) -> RepoTargets {
    let added = if fleet.override_targets.is_empty() {
        repo.unwrap_or_default()
    } else {
        RepoTargets::of(&fleet.override_targets)
    };
    let mut targets = own_targets(fleet);
    targets.extend(added.targets);
    if targets.is_empty() {
        targets.push(BundleTarget {
            name: Some("default".into()),
            cluster_group: Some("default".into()),
            ..BundleTarget::default()
        });
    }
    RepoTargets {
        targets,
        target_restrictions: added.target_restrictions,
    }
}

/// The encoded size of a Bundle's resources from which they are all compressed
/// (`base64+gz`), as Rancher Fleet compresses a Bundle of a million bytes.
const COMPRESS_FROM: usize = 1_000_000;

/// The most a Bundle's resources may take: etcd stores an object in one request of at most
/// 1.5 MiB by default, and the Bundle's metadata and status need room beside them.
const MAX_RESOURCES_BYTES: usize = 1_310_720;

/// A file as Fleet's Bundle holds it: as text, or gzipped and base64-encoded when it is not
/// UTF-8 (`internal/bundlereader/loaddirectory.go`).
fn plain_resource(file: &(String, Vec<u8>)) -> BundleResource {
    match std::str::from_utf8(&file.1) {
        Ok(text) => BundleResource {
            name: Some(file.0.clone()),
            content: Some(text.to_string()),
            encoding: None,
        },
        Err(_) => compressed_resource(file),
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
