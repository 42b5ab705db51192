//! The Bundle kind: rendered resources plus the targets they go to.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    BundleDeploymentOptions, BundleRef, BundleSummary, Condition, GitTarget, LabelSelector,
    RolloutStrategy,
};

/// A set of resources deployed to the clusters its targets select.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "Bundle",
    namespaced,
    status = "BundleStatus",
    category = "fleet",
    printcolumn(
        name = "BundleDeployments-Ready",
        type_ = "string",
        json_path = ".status.display.readyClusters"
    ),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].message"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct BundleSpec {
    /// Deployment options for every target.
    #[serde(flatten)]
    pub options: BundleDeploymentOptions,
    /// Stop deploying new versions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// How new versions roll out across clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_strategy: Option<RolloutStrategy>,
    /// The bundle's files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<BundleResource>,
    /// Targets with their customizations; the first match wins, unless
    /// `targetCustomizationMode` is `AllMatches`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<BundleTarget>,
    /// Whether the first matching target's customization applies, or all of them.
    /// Kept as written (Fleet's Bundle carries an explicit `FirstMatch`); none is
    /// `FirstMatch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_customization_mode: Option<crate::TargetCustomizationMode>,
    /// Restrictions that every target must also satisfy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_restrictions: Vec<BundleTargetRestriction>,
    /// Bundles that must be ready first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<BundleRef>,
    /// Content id of the resources, when stored elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contents_id: Option<String>,
    /// Set on a Bundle made from a HelmOp: where its chart's credentials are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_op_options: Option<BundleHelmOptions>,
}

/// How a Bundle made from a HelmOp reaches its chart's repository.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct BundleHelmOptions {
    /// Secret in the Bundle's namespace with the repository's credentials.
    #[serde(
        rename = "helmOpSecretName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub secret_name: Option<String>,
    /// Skip verifying the repository's TLS certificate.
    #[serde(
        rename = "helmOpInsecureSkipTLSVerify",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub insecure_skip_tls_verify: bool,
    /// CA certificates for the repository (base64 in JSON).
    #[serde(
        rename = "helmOpCABundle",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub ca_bundle: Option<String>,
}

/// One file of a bundle.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleResource {
    /// Path of the file relative to the bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// File content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// `base64+gz` when compressed, empty otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
}

/// A target of a bundle and the customization applied there.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleTarget {
    /// Options overriding the bundle's.
    #[serde(flatten)]
    pub options: BundleDeploymentOptions,
    /// Target name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Select a cluster by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<String>,
    /// Select clusters by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
    /// Select a cluster group by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_group: Option<String>,
    /// Select cluster groups by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_group_selector: Option<LabelSelector>,
    /// Match, but deploy nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub do_not_deploy: bool,
    /// Where the target comes from: `customization` (fleet.yaml's
    /// `targetCustomizations`) or `gitrepo` (the GitRepo's targets), as Fleet marks them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// [`BundleTarget::source`] of a fleet.yaml target customization.
pub const CUSTOMIZATION_SOURCE: &str = "customization";
/// [`BundleTarget::source`] of a GitRepo target.
pub const GITREPO_SOURCE: &str = "gitrepo";

/// A restriction that bundle targets must satisfy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleTargetRestriction {
    /// Restriction name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Select a cluster by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<String>,
    /// Select clusters by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
    /// Select a cluster group by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_group: Option<String>,
    /// Select cluster groups by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_group_selector: Option<LabelSelector>,
}

impl From<&GitTarget> for BundleTargetRestriction {
    /// The restriction a GitRepo's target makes of its bundles: the same selection.
    fn from(target: &GitTarget) -> Self {
        Self {
            name: target.name.clone(),
            cluster_name: target.cluster_name.clone(),
            cluster_selector: target.cluster_selector.clone(),
            cluster_group: target.cluster_group.clone(),
            cluster_group_selector: target.cluster_group_selector.clone(),
        }
    }
}

impl From<&BundleTargetRestriction> for BundleTarget {
    /// A target selecting what the restriction selects, with no options of its own.
    fn from(restriction: &BundleTargetRestriction) -> Self {
        Self {
            name: restriction.name.clone(),
            cluster_name: restriction.cluster_name.clone(),
            cluster_selector: restriction.cluster_selector.clone(),
            cluster_group: restriction.cluster_group.clone(),
            cluster_group_selector: restriction.cluster_group_selector.clone(),
            ..Self::default()
        }
    }
}

/// Observed state of a Bundle.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleStatus {
    /// Conditions (Ready...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Counts of deployments per state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<BundleSummary>,
    /// Deployments created in the current rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newly_created: Option<i32>,
    /// Deployments currently unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<i32>,
    /// Partitions currently unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_partitions: Option<i32>,
    /// Computed maximum unavailable deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<i32>,
    /// Computed maximum unavailable partitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable_partitions: Option<i32>,
    /// Maximum new deployments per reconcile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_new: Option<i32>,
    /// Per-partition status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<PartitionStatus>,
    /// Values shown by kubectl.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<BundleDisplay>,
    /// sha256 of the bundle's resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_sha256_sum: Option<String>,
    /// Generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Status of one rollout partition.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartitionStatus {
    /// Partition name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Clusters in the partition.
    #[serde(default)]
    pub count: i32,
    /// Allowed unavailable clusters.
    #[serde(default)]
    pub max_unavailable: i32,
    /// Currently unavailable clusters.
    #[serde(default)]
    pub unavailable: i32,
    /// Counts per state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<BundleSummary>,
}

/// Bundle values shown in printer columns.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleDisplay {
    /// "ready/desired" clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_clusters: Option<String>,
    /// Summary state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}
