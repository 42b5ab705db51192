//! Helm bundles: the chart named by `helm.chart` (or the bundle directory when it holds a
//! Chart.yaml), values from `helm.valuesFiles` then `helm.values` with Fleet's `${ }`
//! cluster templating, rendered by the Helm engine. Remote charts (`helm.repo`, URLs, OCI)
//! are fetched before rendering, outside this pure crate; here they are an error.

use fleet_api::{BundleDeploymentOptions, HelmHook, HelmRelease};
use serde_json::Value;

use super::discovery::BundleDir;
use crate::RepoRoot;
use crate::{RenderError, Result};
use fleet_helm::{Chart, FetchedCharts, RemoteChartRef};

fn is_remote(chart: &str) -> bool {
    chart.contains("://") || chart.starts_with("oci:")
}

/// The Helm engine's error, at the file of the chart it names.
fn helm_error(error: fleet_helm::Error) -> RenderError {
    RenderError::in_file(error.file(), error.message())
        .with_line(error.line())
        .with_cause(error)
}

/// The chart the options name outside the repository (`helm.repo`, a URL, `oci://`), if
/// they name one. An `oci://` repository is the chart itself (Fleet's preferred way to
/// name an OCI chart), whatever `helm.chart` says.
pub fn remote_chart(options: &BundleDeploymentOptions) -> Option<RemoteChartRef> {
    let helm = options.helm.as_ref()?;
    let version = helm.version.clone().unwrap_or_default();
    let repo = helm.repo.clone().unwrap_or_default();
    if let Some(chart) = oci_repository(helm) {
        return Some(RemoteChartRef {
            repo: String::new(),
            chart: chart.to_string(),
            version,
        });
    }
    let chart = helm.chart.clone().filter(|c| !c.is_empty())?;
    (!repo.is_empty() || is_remote(&chart)).then_some(RemoteChartRef {
        repo,
        chart,
        version,
    })
}

/// `helm.repo` when it is an OCI reference (`oci://registry/charts/web`): in Fleet it
/// names the chart, `helm.chart` being left empty.
pub(super) fn oci_repository(helm: &fleet_api::HelmOptions) -> Option<&str> {
    helm.repo
        .as_deref()
        .filter(|repo| repo.starts_with("oci://"))
}

/// What the member cluster contributes when a Helm bundle is rendered there, by its agent,
/// as Fleet's agent renders every chart: `helm.valuesFrom`, `.Capabilities` and `lookup`.
#[derive(Debug, Clone, Default)]
pub struct MemberData {
    /// The values read from the member's ConfigMaps and Secrets (`helm.valuesFrom`), in
    /// order; each is merged over `helm.values` and the ones before it.
    pub values_from: Vec<Value>,
    /// `.Capabilities.KubeVersion`, from the member's `/version`.
    pub kube_version: Option<String>,
    /// `.Capabilities.APIVersions`, from the member's discovery.
    pub api_versions: Option<Vec<String>>,
    /// The cluster `lookup` asks.
    pub lookup: Option<fleet_helm::ClusterLookup>,
}

/// A Helm bundle rendered for one cluster: the release's resources (CRDs first) and the
/// release itself, hooks included.
pub(super) struct HelmOutput {
    /// The resources to apply, hooks left out.
    pub resources: Vec<Value>,
    /// The release the agent records.
    pub release: HelmRelease,
    /// Whether the render depends on the member cluster (`helm.valuesFrom`, or a chart
    /// that reads `lookup` or `.Capabilities`): then the agent renders it there.
    pub reads_member: bool,
}

/// Which chart to render, with what, as what.
pub(super) struct HelmInput<'a> {
    /// The bundle's options for this cluster.
    pub options: &'a BundleDeploymentOptions,
    /// `helm.chart`, or `Chart.yaml` for a chart at the bundle's root.
    pub chart_ref: &'a str,
    /// The bundle's name, which names the release unless `helm.releaseName` does.
    pub bundle_name: &'a str,
    /// The fleet.yaml as shown in errors.
    pub fleet_file: &'a str,
    /// What the member cluster contributes, when rendered there.
    pub member: &'a MemberData,
    /// Stops the render once set.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Stops the render at this instant, if sooner than [`HELM_TIME_LIMIT`].
    pub deadline: Option<std::time::Instant>,
}

/// How long a bundle's chart may render: a chart is whatever its repository holds, and one
/// that loops for ever must fail its bundle, not hold a core and the GitRepo's sync.
const HELM_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The name and namespace of a bundle's release, as Fleet's agent chooses them:
/// `helm.releaseName`, else the bundle's name made valid; `namespace`, else
/// `defaultNamespace`, else `default`.
pub fn release_of(options: &BundleDeploymentOptions, bundle_name: &str) -> (String, String) {
    let namespace = options
        .target_namespace
        .clone()
        .or_else(|| options.default_namespace.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into());
    let name = options
        .helm
        .as_ref()
        .and_then(|h| h.release_name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| super::names::release_name(bundle_name));
    (name, namespace)
}

/// The release of a bundle that is not a chart (raw YAML or Kustomize), as Fleet makes
/// one for every bundle: a chart named after the bundle, versioned `v0.0.0+<content id>`,
/// with no values and no hooks.
pub(super) fn manifest_release(
    options: &BundleDeploymentOptions,
    bundle_name: &str,
    content_id: &str,
) -> HelmRelease {
    let (name, namespace) = release_of(options, bundle_name);
    HelmRelease {
        name,
        namespace,
        chart: serde_json::json!({
            "apiVersion": "v2",
            "name": bundle_name,
            "version": format!("v0.0.0+{content_id}"),
        }),
        values: serde_json::json!({}),
        config: serde_json::json!({}),
        ..HelmRelease::default()
    }
}

/// The local chart `chart_ref` names (`Chart.yaml`: the bundle's own directory).
pub(super) fn local_chart(
    root: &RepoRoot,
    bundle: &BundleDir,
    chart_ref: &str,
    fleet_file: &str,
) -> Result<Chart> {
    if chart_ref == "Chart.yaml" {
        return Chart::load(&bundle.dir).map_err(helm_error);
    }
    let dir = root
        .resolve(&bundle.dir, chart_ref, &bundle.dir.join("fleet.yaml"))
        .map_err(|e| RenderError::in_field(fleet_file, "helm.chart", e.message))?;
    Chart::load(&dir).map_err(helm_error)
}

/// The dependencies `chart` declares from a Helm repository or OCI registry that its
/// `charts/` directory lacks.
pub(super) fn missing_dependencies(chart: &Chart) -> Vec<RemoteChartRef> {
    chart
        .dependencies
        .iter()
        .filter(|d| !chart.subcharts.iter().any(|sub| sub.name == d.name))
        .filter(|d| {
            ["http://", "https://", "oci://"]
                .iter()
                .any(|scheme| d.repository.starts_with(scheme))
        })
        .map(|d| match d.repository.strip_prefix("oci://") {
            Some(registry) => RemoteChartRef {
                repo: String::new(),
                chart: format!("oci://{}/{}", registry.trim_end_matches('/'), d.name),
                version: d.version.clone(),
            },
            None => RemoteChartRef {
                repo: d.repository.clone(),
                chart: d.name.clone(),
                version: d.version.clone(),
            },
        })
        .collect()
}

/// Renders a Helm bundle for one cluster into resources and its release.
pub(super) fn render(
    root: &RepoRoot,
    bundle: &BundleDir,
    input: &HelmInput<'_>,
    fetched: &FetchedCharts,
) -> Result<HelmOutput> {
    let HelmInput {
        options,
        chart_ref,
        bundle_name,
        fleet_file,
        member,
        ref cancel,
        deadline,
    } = *input;
    let helm = options.helm.clone().unwrap_or_default();
    let mut loaded = match remote_chart(options) {
        Some(remote) => fetched.get(&remote).cloned().ok_or_else(|| {
            RenderError::in_field(
                fleet_file,
                "helm.chart",
                format!("`{chart_ref}` is a remote chart and was not fetched before rendering"),
            )
        })?,
        None => local_chart(root, bundle, chart_ref, fleet_file)?,
    };
    if !helm.disable_dependency_update.unwrap_or(false) {
        // As Fleet runs `helm dependency update`: what charts/ lacks comes from its
        // repository, fetched beforehand.
        for needed in missing_dependencies(&loaded) {
            if let Some(chart) = fetched.get(&needed) {
                loaded.subcharts.push(chart.clone());
            }
        }
    }
    // `helm.valuesFiles` were merged into `helm.values` when fleet.yaml was read.
    let mut user = serde_json::json!({});
    if let Some(inline) = &helm.values {
        // Already preprocessed for the cluster (`${ }`), when it is a cluster's render.
        fleet_helm::merge_values(&mut user, &Value::Object(inline.clone()));
    }
    for from_member in &member.values_from {
        fleet_helm::merge_values(&mut user, from_member);
    }
    let (release_name, namespace) = release_of(options, bundle_name);
    let defaults = fleet_helm::Options::default();
    let engine_options = fleet_helm::Options {
        release_name: release_name.clone(),
        namespace: namespace.clone(),
        include_crds: true,
        skip_schema_validation: helm.skip_schema_validation.unwrap_or(false),
        kube_version: member.kube_version.clone().unwrap_or(defaults.kube_version),
        api_versions: member.api_versions.clone().unwrap_or(defaults.api_versions),
        lookup: member.lookup.clone(),
        // Fleet installs with DNS lookups on unless `disableDNS`.
        enable_dns: !helm.disable_dns.unwrap_or(false),
        time_limit: Some(deadline.map_or(HELM_TIME_LIMIT, |at| {
            at.saturating_duration_since(std::time::Instant::now())
                .min(HELM_TIME_LIMIT)
        })),
        cancel: cancel.clone(),
        ..fleet_helm::Options::default()
    };
    let rendered = fleet_helm::render(&loaded, &user, &engine_options).map_err(helm_error)?;
    let mut resources = Vec::new();
    for crd in &rendered.crds {
        resources.extend(
            fleet_files::yaml::parse_documents(&crd.text, &crd.path)?
                .into_iter()
                .filter(|d| !d.is_null()),
        );
    }
    for manifest in &rendered.manifests {
        let document = fleet_files::yaml::parse_value(&manifest.content, &manifest.source)?;
        if !document.is_null() {
            resources.push(document);
        }
    }
    let mut hooks = Vec::new();
    for hook in &rendered.hooks {
        if hook.events.iter().any(|e| e.starts_with("test")) {
            continue;
        }
        let object: Value =
            fleet_files::yaml::parse_value(&hook.manifest.content, &hook.manifest.source)?;
        hooks.push(HelmHook {
            path: hook.manifest.source.clone(),
            events: hook.events.clone(),
            weight: hook.weight,
            delete_policies: hook.delete_policies.clone(),
            object,
        });
    }
    let release = HelmRelease {
        name: release_name,
        namespace,
        chart: loaded.metadata.clone(),
        values: loaded.values.clone(),
        config: user,
        notes: rendered.notes.clone(),
        hooks,
    };
    let resolves = loaded.resolves_hosts() && !helm.disable_dns.unwrap_or(false);
    let reads_member = !helm.values_from.is_empty() || loaded.reads_cluster() || resolves;
    Ok(HelmOutput {
        resources,
        release,
        reads_member,
    })
}
