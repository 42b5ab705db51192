//! What the controller would create for a Bundle, computed without writing anything (for
//! `fleet target`): a Content per distinct variant and a BundleDeployment per targeted
//! cluster, by the same placement, rendering and naming as the reconcile loop, plus the
//! targeting decision for every cluster.

use std::collections::BTreeMap;
use std::path::Path;

use fleet_api::{Bundle, BundleDeployment, Cluster, ClusterGroup, Content};
use fleet_charts::{ChartCache, HelmAuth};
use kube::ResourceExt;

use crate::placement::{cluster_info, is_targeted};
use crate::reconcile::{cluster_namespace, deployment_for};
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
}

/// The objects the controller would write for a Bundle.
#[derive(Debug, Default)]
pub struct Preview {
    /// One per distinct variant.
    pub contents: Vec<Content>,
    /// One per targeted cluster.
    pub deployments: Vec<BundleDeployment>,
    /// Every cluster, targeted or not.
    pub inputs: Vec<TargetInput>,
}

/// The Preview of `bundle` over `clusters` (with their `groups`), rendering in a scratch
/// directory under `work` and fetching remote charts with `auth`. Downstream resources and
/// Policies, which need the cluster's Secrets and Policies, are left out.
pub fn preview(
    bundle: &Bundle,
    clusters: &[Cluster],
    groups: &[ClusterGroup],
    work: &Path,
    charts: &ChartCache,
    auth: HelmAuth,
) -> Result<Preview, VariantError> {
    let mut files = BundleFiles::write(bundle, work, auth)?;
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
        };
        if targeted {
            let variant = files.variant(&info, charts)?;
            input.customization = variant.target.clone();
            input.do_not_deploy = !variant.deploy;
            if variant.deploy {
                let content = Content::pack(&variant.id, &variant.payload())?;
                if !out.contents.iter().any(|c| c.name_any() == variant.id) {
                    out.contents.push(content);
                }
                let id = deployment_id(&variant, "");
                let namespace = cluster_namespace(cluster);
                out.deployments.push(deployment_for(
                    bundle,
                    cluster,
                    &variant.options,
                    &namespace,
                    id,
                ));
            }
        }
        out.inputs.push(input);
    }
    Ok(out)
}
