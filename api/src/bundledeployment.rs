//! The BundleDeployment kind: one bundle variant meant for one cluster.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{any_value, BundleDeploymentOptions, BundleRef, Condition, CorrectDrift};

/// A rendered bundle variant that the agent of one cluster applies.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "BundleDeployment",
    namespaced,
    status = "BundleDeploymentStatus",
    category = "fleet",
    printcolumn(
        name = "Deployed",
        type_ = "string",
        json_path = ".status.display.deployed"
    ),
    printcolumn(
        name = "Monitored",
        type_ = "string",
        json_path = ".status.display.monitored"
    ),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].message"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct BundleDeploymentSpec {
    /// Stop applying new versions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Options of the staged (next) deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged_options: Option<BundleDeploymentOptions>,
    /// Id of the staged deployment.
    #[serde(
        rename = "stagedDeploymentID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub staged_deployment_id: Option<String>,
    /// Options of the current deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<BundleDeploymentOptions>,
    /// Id of the current deployment: `<contents id>:<options hash>`.
    #[serde(
        rename = "deploymentID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub deployment_id: Option<String>,
    /// Bundles that must be ready first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<BundleRef>,
    /// Drift correction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct_drift: Option<CorrectDrift>,
    /// Its cluster is under a Schedule whose window is closed: the agent deploys nothing
    /// new until it opens.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub off_schedule: bool,
}

/// Observed state of a BundleDeployment, written by the agent.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleDeploymentStatus {
    /// Conditions (Ready, Deployed, Monitored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Deployment id last applied.
    #[serde(
        rename = "appliedDeploymentID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub applied_deployment_id: Option<String>,
    /// Release record (namespace/name:revision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// All resources are ready.
    #[serde(default)]
    pub ready: bool,
    /// No resource was modified outside Fleet.
    #[serde(default)]
    pub non_modified: bool,
    /// Resources not ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "any_value")]
    pub non_ready_status: Vec<serde_json::Value>,
    /// Resources modified outside Fleet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "any_value")]
    pub modified_status: Vec<serde_json::Value>,
    /// Values shown by kubectl.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<BundleDeploymentDisplay>,
    /// Generation of forceSyncGeneration last applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_generation: Option<i64>,
    /// The objects the agent applied for the deployment, in install order; a large set is
    /// listed only in part (see `resourcesOmitted`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<BundleDeploymentResource>,
    /// How many applied objects `resources` leaves out, so that the status stays small.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resources_omitted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One object a deployment applied.
#[derive(
    Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct BundleDeploymentResource {
    /// API version.
    #[serde(default)]
    pub api_version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Namespace; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    #[serde(default)]
    pub name: String,
}

/// BundleDeployment values shown in printer columns.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleDeploymentDisplay {
    /// Deployed condition summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed: Option<String>,
    /// Monitored condition summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitored: Option<String>,
    /// Summary state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// The condition an agent reports once it uninstalled a deleted BundleDeployment from its
/// cluster; the controller then lets the deployment go.
pub const UNINSTALLED_CONDITION: &str = "Uninstalled";

impl BundleDeployment {
    /// Whether its agent reported it uninstalled.
    pub fn is_uninstalled(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == UNINSTALLED_CONDITION && c.status == "True")
        })
    }
}
