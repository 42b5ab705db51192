//! A Bundle's files written back into a directory, rendered for one cluster, and the
//! result named by its content id and deployment id.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use base64::Engine;
use fleet_api::{Bundle, FleetYaml};
use fleet_charts::ChartCache;
use fleet_renderer::bundle::{self, BundleDir, ClusterInfo, Variant};
use fleet_renderer::RepoRoot;
use sha2::{Digest, Sha256};

/// Why a bundle could not be rendered for a cluster.
#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    /// A resource name that would leave the bundle directory.
    #[error("resource `{0}` names a path outside the bundle")]
    UnsafeName(String),
    /// A resource whose base64 or gzip encoding is broken.
    #[error("resource `{name}`: {message}")]
    Encoding {
        /// The resource.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The files could not be written.
    #[error("writing the bundle's files: {0}")]
    Io(#[from] std::io::Error),
    /// Rendering failed.
    #[error(transparent)]
    Render(#[from] fleet_renderer::RenderError),
    /// A remote chart could not be fetched.
    #[error(transparent)]
    Chart(#[from] fleet_charts::FetchForError),
    /// The Content could not be packed.
    #[error(transparent)]
    Content(#[from] fleet_api::ContentError),
}

/// A Bundle's files on disk, ready to render for any number of clusters.
pub struct BundleFiles {
    _scratch: tempfile::TempDir,
    root: RepoRoot,
    dir: BundleDir,
    name: String,
    fleet: FleetYaml,
    uses_helm: bool,
    rendered: HashMap<String, Variant>,
}

impl BundleFiles {
    /// Writes `bundle`'s resources into a scratch directory under `work`.
    pub fn write(bundle: &Bundle, work: &Path) -> Result<Self, VariantError> {
        std::fs::create_dir_all(work)?;
        let scratch = tempfile::Builder::new()
            .prefix("bundle-")
            .tempdir_in(work)?;
        let top = scratch.path().join("bundle");
        std::fs::create_dir_all(&top)?;
        for resource in &bundle.spec.resources {
            let name = resource.name.clone().unwrap_or_default();
            let path = safe_join(&top, &name)?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, decode(&name, resource)?)?;
        }
        let root = RepoRoot::new(&top)?;
        let dir = BundleDir {
            dir: root.path().to_path_buf(),
            rel: ".".into(),
            fleet_yaml: None,
        };
        let fleet = crate::placement::as_fleet_yaml(bundle);
        let uses_helm = fleet.options.helm.is_some()
            || fleet
                .target_customizations
                .iter()
                .any(|t| t.options.helm.is_some())
            || root.path().join("Chart.yaml").is_file();
        Ok(Self {
            _scratch: scratch,
            root,
            dir,
            name: kube::ResourceExt::name_any(bundle),
            fleet,
            uses_helm,
            rendered: HashMap::new(),
        })
    }

    /// The variant for `cluster`. Renders of raw YAML and Kustomize bundles depend only on
    /// the customization chosen, so they are made once per customization; Helm values may
    /// read the cluster's name and labels, so Helm bundles render per cluster.
    pub fn variant(
        &mut self,
        cluster: &ClusterInfo,
        charts: &ChartCache,
    ) -> Result<Variant, VariantError> {
        let customization = self
            .fleet
            .target_customizations
            .iter()
            .position(|t| cluster.matches(t));
        let key = if self.uses_helm {
            format!("{customization:?}/{}/{:?}", cluster.name, cluster.labels)
        } else {
            format!("{customization:?}")
        };
        if let Some(variant) = self.rendered.get(&key) {
            return Ok(variant.clone());
        }
        let (_, options) = bundle::options_for(&self.fleet, cluster);
        let fetched =
            fleet_charts::fetch_for_bundle(charts, &self.root, &self.dir, &self.fleet, &options)?;
        let variant = bundle::render_with(
            &self.root,
            &self.dir,
            &self.name,
            &self.fleet,
            cluster,
            &fetched,
        )?;
        self.rendered.insert(key, variant.clone());
        Ok(variant)
    }
}

fn safe_join(top: &Path, name: &str) -> Result<PathBuf, VariantError> {
    let relative = Path::new(name);
    let normal = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if name.is_empty() || !normal {
        return Err(VariantError::UnsafeName(name.to_string()));
    }
    Ok(top.join(relative))
}

fn decode(name: &str, resource: &fleet_api::BundleResource) -> Result<Vec<u8>, VariantError> {
    let content = resource.content.clone().unwrap_or_default();
    let broken = |message: String| VariantError::Encoding {
        name: name.to_string(),
        message,
    };
    let base64 = || {
        base64::engine::general_purpose::STANDARD
            .decode(content.trim())
            .map_err(|e| broken(e.to_string()))
    };
    match resource.encoding.as_deref().unwrap_or("") {
        "" => Ok(content.into_bytes()),
        "base64" => base64(),
        "base64+gz" => {
            let mut out = Vec::new();
            let bytes = base64()?;
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
                .map_err(|e| broken(e.to_string()))?;
            Ok(out)
        }
        other => Err(broken(format!("unknown encoding `{other}`"))),
    }
}

/// `<content id>:<sha256 of the options>`: what a BundleDeployment deploys; a change of
/// either is a new deployment.
pub fn deployment_id(variant: &Variant) -> String {
    let options = serde_json::to_vec(&variant.options).unwrap_or_default();
    let digest = Sha256::digest(&options);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}:{hex}", variant.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_names_stay_inside_the_bundle() {
        let top = Path::new("/scratch/bundle");
        assert!(safe_join(top, "a/b.yaml").is_ok());
        assert!(safe_join(top, "../x").is_err());
        assert!(safe_join(top, "/etc/passwd").is_err());
        assert!(safe_join(top, "").is_err());
    }
}
