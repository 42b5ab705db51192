//! The GitRepo kind: a Git repository watched by gitjob.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{BundleSummary, Condition, CorrectDrift, GitTarget, ResourceCounts};

/// A Git repository whose bundles Fleet deploys to the selected clusters.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "GitRepo",
    namespaced,
    status = "GitRepoStatus",
    category = "fleet",
    printcolumn(name = "Repo", type_ = "string", json_path = ".spec.repo"),
    printcolumn(name = "Commit", type_ = "string", json_path = ".status.commit"),
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
pub struct GitRepoSpec {
    /// Repository URL (https, ssh, git or file).
    pub repo: String,
    /// Branch to follow; `master` when neither branch nor revision is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Tag or commit to deploy instead of a branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Namespace forced on every bundle of the repo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespace: Option<String>,
    /// Secret with Git credentials (basic auth or SSH key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_name: Option<String>,
    /// Secret with Helm repository credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_secret_name: Option<String>,
    /// Secret with Helm credentials per path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_secret_name_for_paths: Option<String>,
    /// Regex of Helm repository URLs the Helm credentials are sent to.
    #[serde(
        rename = "helmRepoURLRegex",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub helm_repo_url_regex: Option<String>,
    /// PEM CA bundle trusted for the Git and Helm servers (base64 in JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
    /// Skip TLS verification.
    #[serde(
        rename = "insecureSkipTLSVerify",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub insecure_skip_tls_verify: bool,
    /// Bundles declared one by one (a driven scan): each a base directory and, optionally,
    /// an options file replacing its fleet.yaml. When given, `paths` is not scanned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bundles: Vec<BundlePath>,
    /// Directories scanned for bundles; the repo root when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Stop syncing new commits.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Service account used downstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    /// Where the bundles go.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<GitTarget>,
    /// Poll period (a Go duration such as `15s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::go_duration")]
    pub polling_interval: Option<String>,
    /// Bump to force a redeploy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_sync_generation: Option<i64>,
    /// Image scan period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::go_duration")]
    pub image_scan_interval: Option<String>,
    /// Commit settings for image scans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_scan_commit: Option<CommitSpec>,
    /// Keep resources when the GitRepo is removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_resources: bool,
    /// Delete namespaces when the GitRepo is removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete_namespace: bool,
    /// Drift correction for every bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct_drift: Option<CorrectDrift>,
    /// Sync only on webhooks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_polling: bool,
    /// Secret holding the webhook secret for this repo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<String>,
}

/// Commit author and message for image-scan commits.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommitSpec {
    /// Author name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_name: Option<String>,
    /// Author email.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_email: Option<String>,
    /// Message template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_template: Option<String>,
}

/// Observed state of a GitRepo.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitRepoStatus {
    /// Generation last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `forceSyncGeneration` last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_generation: Option<i64>,
    /// Commit last synced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Commit last reported by a webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_commit: Option<String>,
    /// Clusters ready.
    #[serde(default)]
    pub ready_clusters: i32,
    /// Clusters targeted.
    #[serde(default)]
    pub desired_ready_clusters: i32,
    /// Counts of deployments per state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<BundleSummary>,
    /// Values shown by kubectl.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<GitRepoDisplay>,
    /// Conditions (Ready, Accepted, Stalled...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Counts of resources per state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_counts: Option<ResourceCounts>,
    /// Errors of resources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_errors: Vec<String>,
    /// Time of the last poll (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_polling_triggered: Option<String>,
}

/// GitRepo values shown in printer columns.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitRepoDisplay {
    /// "ready/desired" bundle deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_bundle_deployments: Option<String>,
    /// Summary state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Summary message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Whether the state is an error.
    #[serde(default)]
    pub error: bool,
}

/// A bundle a GitRepo declares (a driven scan): its directory and its options file.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundlePath {
    /// The bundle's directory, relative to the repository root.
    #[serde(default)]
    pub base: String,
    /// The options file (in place of fleet.yaml), relative to `base`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<String>,
}
