//! What the controller would create for a Bundle, computed without writing anything (for
//! `fleet target`): a Content per distinct variant and a BundleDeployment per targeted
//! cluster, by the same placement, rendering, naming, Policies and downstream resources as
//! the reconcile loop, plus the targeting decision for every cluster.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use fleet_api::{Bundle, BundleDeployment, Cluster, ClusterGroup, Content, Policy};
use fleet_charts::{ChartCache, HelmAuth};
use kube::api::ListParams;
use kube::{Api, ResourceExt};

use crate::downstream::{self, Sources};
use crate::placement::{cluster_info, is_targeted};
use crate::reconcile::{admitted, cluster_namespace, deployment_for};
use crate::variant::{deployment_id, BundleFiles, VariantError};

/// How one cluster was judged.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetInput {
    /// `namespace/name` of the Cluster.
    pub cluster: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// The groups it belongs to.
    pub groups: Vec<String>,
    /// Whether the bundle goes there.
    pub targeted: bool,
    /// The customizations applied, if any.
    pub customization: Option<String>,
    /// Whether a matching customization says doNotDeploy.
    pub do_not_deploy: bool,
    /// Why it gets no deployment although it is targeted (a downstream resource missing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The objects the controller would write for a Bundle.
#[derive(Debug, Default)]
pub struct Preview {
    /// One per distinct variant deployed; when no cluster is deployed to, the one a cluster
    /// without labels would get.
    pub contents: Vec<Content>,
    /// One per targeted cluster.
    pub deployments: Vec<BundleDeployment>,
    /// Every cluster, targeted or not.
    pub inputs: Vec<TargetInput>,
}

/// What the controller reads for a Bundle besides its clusters and groups: the objects its
/// downstreamResources name and the Policies of its namespace.
pub struct Surroundings {
    /// The Secrets and ConfigMaps the bundle copies downstream.
    pub sources: Sources,
    /// The Policies of the bundle's namespace.
    pub policies: Vec<Arc<Policy>>,
}

impl Surroundings {
    /// Reads them for `bundle` through `client`, as the controller does. A cluster that
    /// does not serve Policies (one without their CRD) has none.
    pub async fn read(client: &kube::Client, bundle: &Bundle) -> Result<Self, kube::Error> {
        let namespace = bundle.namespace().unwrap_or_default();
        let policies =
            listed_if_served(Api::<Policy>::namespaced(client.clone(), &namespace)).await?;
        Ok(Self {
            sources: Sources::read(client, bundle).await?,
            policies,
        })
    }
}

/// The objects `api` lists; none where the server does not serve the kind (a cluster
/// with an older set of Fleet's CRDs).
async fn listed_if_served<K>(api: Api<K>) -> Result<Vec<Arc<K>>, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(list.items.into_iter().map(Arc::new).collect()),
        Err(kube::Error::Api(response)) if response.code == 404 => Ok(Vec::new()),
        Err(error) => Err(error),
    }
}

/// The namespaces whose clusters `bundle`, in `namespace`, may target, as the controller
/// reads them: that one and those the BundleNamespaceMappings there add (see
/// [`crate::mapping`]).
pub async fn targeted_namespaces(
    client: &kube::Client,
    bundle: &Bundle,
    namespace: &str,
) -> Result<std::collections::BTreeSet<String>, kube::Error> {
    let mappings = listed_if_served(Api::<fleet_api::BundleNamespaceMapping>::namespaced(
        client.clone(),
        namespace,
    ))
    .await?;
    if mappings.is_empty() {
        return Ok([namespace.to_string()].into());
    }
    let namespaces = listed_if_served(Api::<k8s_openapi::api::core::v1::Namespace>::all(
        client.clone(),
    ))
    .await?;
    Ok(crate::mapping::namespaces_for_bundle(
        bundle,
        &mappings,
        &namespaces,
    ))
}

/// The Preview of `bundle` over `clusters` (with their `groups`) in `surroundings`,
/// rendering in a scratch directory under `work` and fetching remote charts with `auth`.
pub fn preview(
    bundle: &Bundle,
    clusters: &[Cluster],
    groups: &[ClusterGroup],
    surroundings: &Surroundings,
    work: &Path,
    charts: &ChartCache,
    auth: HelmAuth,
) -> Result<Preview, PreviewError> {
    let creates_namespaces =
        admitted(bundle, &surroundings.policies).map_err(PreviewError::Refused)?;
    let mut files = BundleFiles::write(bundle, work, auth, crate::RENDER_BUDGET)?;
    let mut out = Preview::default();
    for cluster in clusters {
        let info = cluster_info(cluster, groups);
        let targeted = is_targeted(bundle, &info) && !cluster.is_driven_twice();
        let mut input = TargetInput {
            cluster: format!(
                "{}/{}",
                cluster.namespace().unwrap_or_default(),
                cluster.name_any()
            ),
            labels: info.labels.clone(),
            groups: info.groups.iter().map(|(g, _)| g.clone()).collect(),
            targeted,
            customization: None,
            do_not_deploy: false,
            problem: None,
        };
        if targeted {
            let variant = files.variant(&info, charts)?;
            input.customization = variant.target.clone();
            input.do_not_deploy = !variant.deploy;
            let copies = surroundings
                .sources
                .for_variant(&variant.options.downstream_resources);
            match copies {
                // As the controller, no deployment for a cluster whose copies cannot be made.
                Err(why) => input.problem = Some(why),
                Ok(copies) if variant.deploy => {
                    let content = Content::pack(&variant.id, &variant.payload())
                        .map_err(VariantError::from)?;
                    if !out.contents.iter().any(|c| c.name_any() == variant.id) {
                        out.contents.push(content);
                    }
                    let id = deployment_id(&variant, &downstream::digest(&copies));
                    let namespace = cluster_namespace(cluster);
                    out.deployments.push(deployment_for(
                        bundle,
                        cluster,
                        &variant.options,
                        &namespace,
                        id,
                        creates_namespaces,
                    ));
                }
                Ok(_) => {}
            }
        }
        out.inputs.push(input);
    }
    if out.contents.is_empty() {
        // As Fleet's `fleet target`, the bundle's content is shown even where no cluster
        // takes it: as a cluster without labels would get it.
        let variant = files.variant(&Default::default(), charts)?;
        let content = Content::pack(&variant.id, &variant.payload()).map_err(VariantError::from)?;
        out.contents.push(content);
    }
    Ok(out)
}

/// Why a Bundle has no preview.
#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    /// It could not be rendered.
    #[error(transparent)]
    Variant(#[from] VariantError),
    /// The namespace's Policies refuse it: the controller deploys nothing of it.
    #[error("refused by the Policies of its namespace: {0}")]
    Refused(String),
}
