//! A Bundle's files written back into a directory, rendered for one cluster, and the
//! result named by its content id and deployment id.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use fleet_api::{Bundle, FleetYaml};
use fleet_charts::ChartCache;
use fleet_renderer::bundle::{self, BundleDir, ClusterInfo, Variant};
use fleet_renderer::RepoRoot;
use sha2::{Digest, Sha256};

/// Why a bundle could not be rendered for a cluster.
#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    /// The bundle's files could not be written back.
    #[error(transparent)]
    Files(#[from] fleet_renderer::bundle::FilesError),
    /// The files could not be written.
    #[error("writing the bundle's files: {0}")]
    Io(#[from] std::io::Error),
    /// Rendering failed.
    #[error(transparent)]
    Render(#[from] fleet_renderer::RenderError),
    /// A remote chart could not be fetched.
    #[error(transparent)]
    Chart(#[from] fleet_charts::FetchForError),
    /// The cluster's Helm values cannot be templated for it: Fleet fails the bundle's
    /// whole targeting for that.
    #[error("{0}")]
    Targeting(String),
    /// The Bundle's renders for other clusters used up the time one reconcile may spend.
    #[error("rendering stopped: this Bundle's renders for its clusters ran past their budget of {} s", .0.as_secs())]
    BudgetSpent(Duration),
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
    files: Vec<fleet_api::BundleResource>,
    fleet: FleetYaml,
    uses_helm: bool,
    auth: fleet_charts::HelmAuth,
    rendered: HashMap<String, Variant>,
    /// When the renders of this reconcile stop: a chart that loops then fails the clusters
    /// left at once instead of costing its time limit for each.
    deadline: Instant,
    budget: Duration,
}

impl BundleFiles {
    /// Writes `bundle`'s resources into a scratch directory under `work`; its remote
    /// charts are fetched with `auth`, and its renders for all clusters may take `budget`.
    pub fn write(
        bundle: &Bundle,
        work: &Path,
        auth: fleet_charts::HelmAuth,
        budget: Duration,
    ) -> Result<Self, VariantError> {
        std::fs::create_dir_all(work)?;
        let scratch = tempfile::Builder::new()
            .prefix("bundle-")
            .tempdir_in(work)?;
        let top = scratch.path().join("bundle");
        bundle::write_files(&bundle.spec.resources, &top)?;
        let root = RepoRoot::new(&top)?;
        let dir = BundleDir {
            dir: root.path().to_path_buf(),
            rel: ".".into(),
            fleet_yaml: None,
            left_out: Vec::new(),
            options: None,
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
            files: bundle.spec.resources.clone(),
            fleet,
            uses_helm,
            auth,
            rendered: HashMap::new(),
            deadline: Instant::now() + budget,
            budget,
        })
    }

    /// The variant for `cluster`. Renders of raw YAML and Kustomize bundles depend only on
    /// the customization chosen, so they are made once per customization; Helm values may
    /// read what the cluster is, so Helm bundles render per cluster.
    pub fn variant(
        &mut self,
        cluster: &ClusterInfo,
        charts: &ChartCache,
    ) -> Result<Variant, VariantError> {
        let customization: Vec<usize> = self
            .fleet
            .target_customizations
            .iter()
            .enumerate()
            .filter(|(_, t)| cluster.matches(t))
            .map(|(i, _)| i)
            .take(
                match self.fleet.target_customization_mode.unwrap_or_default() {
                    fleet_api::TargetCustomizationMode::FirstMatch => 1,
                    fleet_api::TargetCustomizationMode::AllMatches => usize::MAX,
                },
            )
            .collect();
        // Helm values are templated with the cluster's name, namespace, labels, annotations
        // and template values: all of it keys the render.
        let key = if self.uses_helm {
            format!(
                "{customization:?}/{}",
                serde_json::to_string(cluster).unwrap_or_default()
            )
        } else {
            format!("{customization:?}")
        };
        if let Some(variant) = self.rendered.get(&key) {
            return Ok(variant.clone());
        }
        if Instant::now() >= self.deadline {
            return Err(VariantError::BudgetSpent(self.budget));
        }
        // Checked apart from the render so that the caller can tell a targeting error from
        // a failing chart.
        let options =
            bundle::templated_options(&self.fleet, cluster).map_err(VariantError::Targeting)?;
        let fetched = fleet_charts::fetch_for_bundle(
            charts,
            &self.root,
            &self.dir,
            &self.fleet,
            &options,
            &self.auth,
        )?;
        let variant = bundle::render_with(
            &self.root,
            &self.dir,
            &self.name,
            &self.fleet,
            cluster,
            &bundle::Sources {
                fetched: Some(&fetched),
                member: None,
                preprocess: true,
                deadline: Some(self.deadline),
                ..Default::default()
            },
        )
        // Said the same way for every cluster, the render in flight included, so that the
        // Bundle's status, and so its next reconcile, does not change with the timing.
        .map_err(|error| {
            if Instant::now() >= self.deadline {
                VariantError::BudgetSpent(self.budget)
            } else {
                error.into()
            }
        })?;
        // A render that needs the member cluster (valuesFrom, lookup, .Capabilities) is
        // done again by the agent there, from the bundle's files and what was fetched.
        let variant = if variant.reads_member {
            let render = fleet_api::MemberRender {
                bundle_name: self.name.clone(),
                files: self.files.clone(),
                charts: fetched.to_json(),
                cluster: serde_json::to_value(cluster).unwrap_or_default(),
            };
            variant.rendered_in_member(render)
        } else {
            variant
        };
        self.rendered.insert(key, variant.clone());
        Ok(variant)
    }
}

/// `<content id>:<sha256 of the options>`: what a BundleDeployment deploys; a change of
/// either is a new deployment. `downstream` (a digest of the downstream resources copied
/// with it, empty for none) is hashed with the options, so a change to one redeploys.
pub fn deployment_id(variant: &Variant, downstream: &str) -> String {
    let mut options = serde_json::to_vec(&variant.options).unwrap_or_default();
    options.extend_from_slice(downstream.as_bytes());
    let digest = Sha256::digest(&options);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}:{hex}", variant.id)
}
