//! Rendering one bundle for one cluster: customization, Kustomize or raw YAML with
//! overlays, namespaces, order and content id.

use std::path::PathBuf;

use fleet_api::{BundleDeploymentOptions, FleetYaml, HelmRelease, MemberRender, Payload};
use serde_json::Value;

use super::content::{content_id, helm_install_order, member_render_id, release_content_id};
use super::discovery::BundleDir;
use super::helm::MemberData;
use super::manifests;
use super::options;
use super::target::ClusterInfo;
use crate::RepoRoot;
use crate::{RenderError, Result};
use fleet_files::{is_cluster_scoped, set_metadata, str_at};
use fleet_helm::FetchedCharts;
use fleet_kustomize as kustomize;

/// A bundle rendered for one cluster.
#[derive(Debug, Clone)]
pub struct Variant {
    /// Name of the target customization applied, if any.
    pub target: Option<String>,
    /// False when the matching customization says `doNotDeploy`.
    pub deploy: bool,
    /// The options in force for this cluster.
    pub options: BundleDeploymentOptions,
    /// The resources, in Helm's install order.
    pub resources: Vec<Value>,
    /// For a Helm bundle, the release the resources make up.
    pub helm: Option<HelmRelease>,
    /// Whether its output depends on the member cluster (`helm.valuesFrom`, `lookup`,
    /// `.Capabilities`), so that its agent renders it.
    pub reads_member: bool,
    /// When the agent renders it in its member cluster, what it renders from (and no
    /// resources or release here).
    pub member_render: Option<MemberRender>,
    /// Content id of the resources and release.
    pub id: String,
}

impl Variant {
    /// What its Content holds.
    pub fn payload(&self) -> Payload {
        Payload {
            resources: self.resources.clone(),
            helm: self.helm.clone(),
            member_render: self.member_render.clone(),
        }
    }

    /// The same variant, left to the agent to render in its member cluster from `render`:
    /// no resources or release, and a content id naming what it renders from.
    pub fn rendered_in_member(self, render: MemberRender) -> Self {
        Self {
            resources: Vec::new(),
            helm: None,
            id: member_render_id(&render),
            member_render: Some(render),
            ..self
        }
    }
}

/// Renders `bundle` (described by `fleet`, named `bundle_name`) for `cluster`, with no
/// remote charts.
pub fn render(
    root: &RepoRoot,
    bundle: &BundleDir,
    bundle_name: &str,
    fleet: &FleetYaml,
    cluster: &ClusterInfo,
) -> Result<Variant> {
    let sources = Sources::default();
    render_with(root, bundle, bundle_name, fleet, cluster, &sources)
}

/// What a render takes beside the repository: remote charts fetched beforehand and, when
/// the agent renders in its member cluster, what that cluster contributes.
#[derive(Debug, Default)]
pub struct Sources<'a> {
    /// Remote charts, fetched.
    pub fetched: Option<&'a FetchedCharts>,
    /// The member cluster's values, capabilities and lookups.
    pub member: Option<&'a MemberData>,
    /// Stops a chart's render with an error once set: what it renders for is gone.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Stops a chart's render with an error at this instant, when that comes before the
    /// chart's own time limit: a budget shared by the renders of many clusters.
    pub deadline: Option<std::time::Instant>,
    /// Template the Helm values for the cluster (`${ }`), as Fleet's controller does for
    /// each cluster it deploys to; checks of a bundle before it ships leave them as written,
    /// as Fleet's CLI does.
    pub preprocess: bool,
}

/// The options in force for `cluster`: the bundle's, merged with those of the
/// customizations that apply (the first match, or every match in order under
/// `AllMatches`). Also says which customizations those are, their names joined by `,`.
pub fn options_for(
    fleet: &FleetYaml,
    cluster: &ClusterInfo,
) -> (Option<String>, BundleDeploymentOptions) {
    let customizations = cluster.customizations(
        &fleet.target_customizations,
        fleet.target_customization_mode.unwrap_or_default(),
    );
    let names: Vec<&str> = customizations
        .iter()
        .filter_map(|c| c.name.as_deref())
        .collect();
    let target = (!names.is_empty()).then(|| names.join(","));
    let options = customizations
        .iter()
        .fold(fleet.options.clone(), |merged, c| {
            options::merge(&merged, &c.options)
        });
    (target, options)
}

/// Whether any customization that selects `cluster` says `doNotDeploy`, whichever
/// applies (as Fleet checks it, so a broader match earlier in the list does not hide it).
pub fn not_deployed(fleet: &FleetYaml, cluster: &ClusterInfo) -> bool {
    fleet
        .target_customizations
        .iter()
        .any(|c| c.do_not_deploy && cluster.matches(c))
}

/// The options in force for `cluster`, its Helm values templated for it (`${ }`), as
/// Fleet's controller computes them while it targets: an error (a missing key, a template
/// that does not parse) is a targeting error, in Fleet's words.
pub fn templated_options(
    fleet: &FleetYaml,
    cluster: &ClusterInfo,
) -> std::result::Result<BundleDeploymentOptions, String> {
    let (_, mut options) = options_for(fleet, cluster);
    super::preprocess::preprocess_helm_values(&mut options, cluster)?;
    Ok(options)
}

/// Renders `bundle` for `cluster`, taking remote charts and member data from `sources`.
pub fn render_with(
    root: &RepoRoot,
    bundle: &BundleDir,
    bundle_name: &str,
    fleet: &FleetYaml,
    cluster: &ClusterInfo,
    sources: &Sources<'_>,
) -> Result<Variant> {
    let no_charts = FetchedCharts::default();
    let fetched = sources.fetched.unwrap_or(&no_charts);
    let no_member = MemberData::default();
    let fleet_file = root.display(&bundle.dir.join("fleet.yaml"));
    let (target, mut options) = options_for(fleet, cluster);
    if sources.preprocess {
        super::preprocess::preprocess_helm_values(&mut options, cluster)
            .map_err(|why| RenderError::in_field(&fleet_file, "helm.values", why))?;
    }
    if not_deployed(fleet, cluster) {
        return Ok(Variant {
            target,
            deploy: false,
            options,
            resources: Vec::new(),
            helm: None,
            reads_member: false,
            member_render: None,
            id: content_id(&[]),
        });
    }
    let (mut resources, helm, reads_member) = match helm_chart(bundle, &options) {
        Some(chart) => {
            let input = super::helm::HelmInput {
                options: &options,
                chart_ref: &chart,
                bundle_name,
                fleet_file: &fleet_file,
                member: sources.member.unwrap_or(&no_member),
                cancel: sources.cancel.clone(),
                deadline: sources.deadline,
            };
            let output = super::helm::render(root, bundle, &input, fetched)?;
            let resources =
                kustomize_helm_output(root, bundle, &options, &fleet_file, output.resources)?;
            (resources, Some(output.release), output.reads_member)
        }
        None => (
            render_sources(root, bundle, &options, &fleet_file, fetched)?,
            None,
            false,
        ),
    };
    if let Some(namespace) = options
        .target_namespace
        .as_deref()
        .filter(|n| !n.is_empty())
    {
        force_namespace(&mut resources, namespace, &fleet_file)?;
    }
    helm_install_order(&mut resources);
    // Every bundle is a Helm release, as in Fleet; one that is not a chart gets a chart
    // named after the bundle.
    let helm = helm.unwrap_or_else(|| {
        super::helm::manifest_release(&options, bundle_name, &content_id(&resources))
    });
    let id = release_content_id(&resources, &helm);
    let helm = Some(helm);
    Ok(Variant {
        target,
        deploy: true,
        options,
        resources,
        helm,
        reads_member,
        member_render: None,
        id,
    })
}

/// The file a chart's output stands as in the kustomization that post-processes it.
const HELM_OUTPUT_FILE: &str = "fleet-manifests.yaml";

/// A chart's output run through the kustomization of `kustomize.dir` (the bundle's own
/// directory when unset), as Rancher Fleet post-renders it: when that directory holds a
/// `kustomization.yaml`, the output becomes its file `fleet-manifests.yaml`, first in its
/// `resources`, and the build's result is what is deployed.
fn kustomize_helm_output(
    root: &RepoRoot,
    bundle: &BundleDir,
    options: &BundleDeploymentOptions,
    fleet_file: &str,
    output: Vec<Value>,
) -> Result<Vec<Value>> {
    let dir = kustomize_dir(root, bundle, options, fleet_file)?;
    if output.is_empty() || !dir.join("kustomization.yaml").is_file() {
        return Ok(output);
    }
    let prepended = kustomize::Prepended {
        file: HELM_OUTPUT_FILE.into(),
        documents: output,
    };
    let remote_dir = bundle.dir.join(kustomize::REMOTE_DIR);
    let build = kustomize::BuildOptions {
        remote_dir: Some(&remote_dir),
        prepended: Some(&prepended),
        ..kustomize::BuildOptions::default()
    };
    kustomize::build_with(root, &dir, build)
}

/// The dependencies of `bundle`'s local chart (for `options`) that must be fetched before
/// it renders: those its `charts/` directory lacks, from a repository or registry (Fleet
/// runs `helm dependency update`), unless `helm.disableDependencyUpdate`. None for a
/// remote chart, which comes whole, or a bundle that is not a chart.
pub fn dependency_needs(
    root: &RepoRoot,
    bundle: &BundleDir,
    options: &BundleDeploymentOptions,
) -> Result<Vec<fleet_helm::RemoteChartRef>> {
    let disabled = options
        .helm
        .as_ref()
        .and_then(|h| h.disable_dependency_update)
        .unwrap_or(false);
    if disabled || super::remote_chart(options).is_some() {
        return Ok(Vec::new());
    }
    let Some(chart_ref) = helm_chart(bundle, options) else {
        return Ok(Vec::new());
    };
    let fleet_file = root.display(&bundle.dir.join("fleet.yaml"));
    let chart = super::helm::local_chart(root, bundle, &chart_ref, &fleet_file)?;
    Ok(super::helm::missing_dependencies(&chart))
}

/// The chart a bundle deploys, as written: an `oci://` repository (which is the chart),
/// `helm.chart`, or the bundle's own directory when it holds a Chart.yaml.
fn helm_chart(bundle: &BundleDir, options: &BundleDeploymentOptions) -> Option<String> {
    let helm = options.helm.as_ref();
    let chart = helm
        .and_then(|h| super::helm::oci_repository(h))
        .map(String::from)
        .or_else(|| helm.and_then(|h| h.chart.clone()).filter(|c| !c.is_empty()));
    chart.or_else(|| {
        bundle
            .dir
            .join("Chart.yaml")
            .is_file()
            .then(|| "Chart.yaml".to_string())
    })
}

/// The directory a bundle's Kustomize build starts from: `kustomize.dir` (relative to the
/// bundle), or the bundle's own directory.
fn kustomize_dir(
    root: &RepoRoot,
    bundle: &BundleDir,
    options: &BundleDeploymentOptions,
    fleet_file: &str,
) -> Result<PathBuf> {
    match options
        .kustomize
        .as_ref()
        .and_then(|k| k.dir.as_deref())
        .filter(|d| !d.is_empty())
    {
        Some(rel) => root
            .resolve(&bundle.dir, rel, &bundle.dir.join("fleet.yaml"))
            .map_err(|e| RenderError::in_field(fleet_file, "kustomize.dir", e.message)),
        None => Ok(bundle.dir.clone()),
    }
}

/// What the bundle's kustomizations (for every customization) need from outside the
/// repository: remote bases not yet fetched into its [`kustomize::REMOTE_DIR`], and
/// charts from repositories.
pub fn kustomize_needs(
    root: &RepoRoot,
    bundle: &BundleDir,
    fleet: &FleetYaml,
) -> Result<kustomize::RemoteNeeds> {
    let fleet_file = root.display(&bundle.dir.join("fleet.yaml"));
    let remote_dir = bundle.dir.join(kustomize::REMOTE_DIR);
    let mut needs = kustomize::RemoteNeeds::default();
    let customizations = fleet
        .target_customizations
        .iter()
        .map(|c| options::merge(&fleet.options, &c.options));
    for options in std::iter::once(fleet.options.clone()).chain(customizations) {
        if helm_chart(bundle, &options).is_some() {
            continue;
        }
        let dir = kustomize_dir(root, bundle, &options, &fleet_file)?;
        if kustomize::kustomization_file(&dir).is_none() {
            continue;
        }
        let more = kustomize::remote_needs(root, &dir, &remote_dir)?;
        needs.resources.extend(more.resources);
        for chart in more.charts {
            if !needs.charts.contains(&chart) {
                needs.charts.push(chart);
            }
        }
    }
    Ok(needs)
}

fn render_sources(
    root: &RepoRoot,
    bundle: &BundleDir,
    options: &BundleDeploymentOptions,
    fleet_file: &str,
    fetched: &FetchedCharts,
) -> Result<Vec<Value>> {
    let dir = kustomize_dir(root, bundle, options, fleet_file)?;
    let kustomize_dir_set = options
        .kustomize
        .as_ref()
        .and_then(|k| k.dir.as_deref())
        .is_some_and(|d| !d.is_empty());
    if kustomize::kustomization_file(&dir).is_some() {
        // Remote bases and charts were fetched into the bundle (by gitjob) beforehand.
        let remote_dir = bundle.dir.join(kustomize::REMOTE_DIR);
        let build = kustomize::BuildOptions {
            charts: Some(fetched),
            remote_dir: Some(&remote_dir),
            ..kustomize::BuildOptions::default()
        };
        return kustomize::build_with(root, &dir, build);
    }
    if kustomize_dir_set {
        return Err(RenderError::in_field(
            fleet_file,
            "kustomize.dir",
            format!("`{}` holds no kustomization.yaml", root.display(&dir)),
        ));
    }
    raw_manifests(root, bundle, options, fleet_file)
}

fn raw_manifests(
    root: &RepoRoot,
    bundle: &BundleDir,
    options: &BundleDeploymentOptions,
    fleet_file: &str,
) -> Result<Vec<Value>> {
    let mut files = manifests::collect(root, bundle)?;
    if let Some(yaml) = &options.yaml {
        manifests::apply_overlays(root, &bundle.dir, &yaml.overlays, &mut files, fleet_file)?;
    }
    // What names no apiVersion and kind is no object (another bundle's options file kept
    // among this one's files, as Fleet keeps it): Fleet's agent leaves it out, and so here.
    let is_object = |document: &Value| {
        !str_at(document, &["apiVersion"]).is_empty() && !str_at(document, &["kind"]).is_empty()
    };
    Ok(files.into_values().flatten().filter(is_object).collect())
}

/// `namespace:` forces a namespace on every object; cluster-scoped objects are an error.
fn force_namespace(resources: &mut [Value], namespace: &str, fleet_file: &str) -> Result<()> {
    for object in resources {
        let kind = str_at(object, &["kind"]).to_string();
        if is_cluster_scoped(&kind) {
            return Err(RenderError::in_field(
                fleet_file,
                "namespace",
                format!(
                    "cluster-scoped {kind} `{}` cannot be forced into namespace `{namespace}`; use defaultNamespace instead",
                    str_at(object, &["metadata", "name"])
                ),
            ));
        }
        set_metadata(object, "namespace", namespace);
    }
    Ok(())
}
