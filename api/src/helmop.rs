//! The HelmOp kind: a Helm chart from a repository or registry deployed to the clusters its
//! targets select, with no Git repository, its version followed by polling.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{BundleSpec, BundleSummary, Condition};

/// A chart deployed as a Bundle of the same name: every Bundle field, plus where its
/// credentials are and how often to look for a new version.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "HelmOp",
    namespaced,
    status = "HelmOpStatus",
    category = "fleet",
    printcolumn(name = "Repo", type_ = "string", json_path = ".spec.helm.repo"),
    printcolumn(name = "Chart", type_ = "string", json_path = ".spec.helm.chart"),
    printcolumn(name = "Version", type_ = "string", json_path = ".status.version"),
    printcolumn(
        name = "BundleDeployments-Ready",
        type_ = "string",
        json_path = ".status.display.readyBundleDeployments"
    ),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].message"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct HelmOpSpec {
    /// The Bundle made from this HelmOp; its `resources` are ignored (the chart is fetched).
    #[serde(flatten)]
    pub bundle: BundleSpec,
    /// Labels put on the Bundle (for `dependsOn` selectors).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// How often to look for a newer chart version matching `helm.version` (a Go
    /// duration); none or `0` looks only when the HelmOp changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::go_duration")]
    pub polling_interval: Option<String>,
    /// Secret in the HelmOp's namespace with the repository's credentials (`username`,
    /// `password`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_secret_name: Option<String>,
    /// Skip verifying the repository's TLS certificate.
    #[serde(
        rename = "insecureSkipTLSVerify",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub insecure_skip_tls_verify: bool,
}

/// Observed state of a HelmOp.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmOpStatus {
    /// Conditions: `Accepted` (the Bundle is written), `Polled` (the last look for a new
    /// version), `Ready` (its deployments).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The chart version deployed: `helm.version` resolved against the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// When the repository was last looked at for a new version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_polling_triggered: Option<String>,
    /// Clusters whose deployment is ready.
    #[serde(default)]
    pub ready_clusters: i32,
    /// Clusters targeted.
    #[serde(default)]
    pub desired_ready_clusters: i32,
    /// Counts of the Bundle's deployments per state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<BundleSummary>,
    /// Values shown by kubectl.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<HelmOpDisplay>,
}

/// What `kubectl get helmops` shows.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmOpDisplay {
    /// "ready/desired" deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_bundle_deployments: Option<String>,
    /// Summary state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Summary message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Whether the state is an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
}
