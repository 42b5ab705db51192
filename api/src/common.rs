//! Types shared by several Fleet kinds: selectors, conditions, summaries, bundle options.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Free-form JSON (Helm values, patch values) kept as-is in the CRD schema.
pub type FreeForm = serde_json::Map<String, serde_json::Value>;

/// Schema for a field that holds arbitrary JSON.
pub fn preserve_unknown_fields(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// The rule Fleet's CRDs put on a Go duration (`15s`, `1h30m`, `0`; no days or weeks, at
/// most what Go's duration holds), in the Common Expression Language kube-apiserver runs.
pub const GO_DURATION_RULE: &str = "self == '0' || (self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$') && duration(self) <= duration('2562047h'))";

/// What an object breaking [`GO_DURATION_RULE`] is told, in Fleet's words.
pub const GO_DURATION_MESSAGE: &str = "must be a valid Go duration using units ns, us, µs, ms, s, m, h (e.g. 15s, 5m, 2h, 1h30m); units like d (days) or w (weeks) are not supported";

/// Schema for a Go duration held as a string, checked by [`GO_DURATION_RULE`].
pub fn go_duration(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "x-kubernetes-validations": [{"rule": GO_DURATION_RULE, "message": GO_DURATION_MESSAGE}]
    })
}

/// Schema for a field that holds any JSON value (scalar, list or object).
pub fn any_value(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "x-kubernetes-preserve-unknown-fields": true })
}

/// A Kubernetes label selector (`matchLabels` and `matchExpressions`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels that must all be present with these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements that must all hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One set-based requirement of a [`LabelSelector`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label key the requirement applies to.
    pub key: String,
    /// One of `In`, `NotIn`, `Exists`, `DoesNotExist`.
    pub operator: String,
    /// Values for `In` and `NotIn`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// A status condition as Fleet (wrangler) writes them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Last time the condition was updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<String>,
    /// Last time the status changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Counts of BundleDeployments per state.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleSummary {
    /// Deployments not yet ready for any reason.
    #[serde(default)]
    pub not_ready: i32,
    /// Deployments waiting to be applied by their agent.
    #[serde(default)]
    pub wait_applied: i32,
    /// Deployments whose apply failed.
    #[serde(default)]
    pub err_applied: i32,
    /// Deployments not yet up to date with the bundle.
    #[serde(default)]
    pub out_of_sync: i32,
    /// Deployments whose resources were changed outside Fleet.
    #[serde(default)]
    pub modified: i32,
    /// Deployments that are ready.
    #[serde(default)]
    pub ready: i32,
    /// Deployments waiting for their turn.
    #[serde(default)]
    pub pending: i32,
    /// Deployments that should be ready.
    #[serde(default)]
    pub desired_ready: i32,
    /// Details about non-ready deployments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "any_value")]
    pub non_ready_resources: Vec<serde_json::Value>,
}

/// Adds up deployment summaries (of a GitRepo's Bundles, of a group's Clusters); the
/// details of non-ready deployments are not carried over.
impl<'a> std::iter::Sum<&'a BundleSummary> for BundleSummary {
    fn sum<I: Iterator<Item = &'a BundleSummary>>(summaries: I) -> Self {
        let mut total = BundleSummary::default();
        for summary in summaries {
            total.not_ready += summary.not_ready;
            total.wait_applied += summary.wait_applied;
            total.err_applied += summary.err_applied;
            total.out_of_sync += summary.out_of_sync;
            total.modified += summary.modified;
            total.ready += summary.ready;
            total.pending += summary.pending;
            total.desired_ready += summary.desired_ready;
        }
        total
    }
}

/// A bundle's (and a deployment's) states, from the best to the worst: Fleet's
/// `StateRank` order, which picks the state a bundle of several deployments shows.
pub const BUNDLE_STATES: [&str; 7] = [
    "Ready",
    "NotReady",
    "Pending",
    "OutOfSync",
    "Modified",
    "WaitApplied",
    "ErrApplied",
];

/// Counts of resources per state, as shown on GitRepos and Clusters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceCounts {
    /// Resources ready.
    #[serde(default)]
    pub ready: i32,
    /// Resources that should be ready.
    #[serde(default)]
    pub desired_ready: i32,
    /// Resources waiting to be applied.
    #[serde(default)]
    pub wait_applied: i32,
    /// Resources modified outside Fleet.
    #[serde(default)]
    pub modified: i32,
    /// Resources missing or out of sync.
    #[serde(default)]
    pub orphaned: i32,
    /// Resources missing.
    #[serde(default)]
    pub missing: i32,
    /// Resources in an unknown state.
    #[serde(default)]
    pub unknown: i32,
    /// Resources not ready.
    #[serde(default)]
    pub not_ready: i32,
}

impl std::ops::AddAssign<&ResourceCounts> for ResourceCounts {
    fn add_assign(&mut self, more: &ResourceCounts) {
        self.ready += more.ready;
        self.desired_ready += more.desired_ready;
        self.wait_applied += more.wait_applied;
        self.modified += more.modified;
        self.orphaned += more.orphaned;
        self.missing += more.missing;
        self.unknown += more.unknown;
        self.not_ready += more.not_ready;
    }
}

/// Options that shape how a bundle is deployed; shared by fleet.yaml, Bundle and its targets.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleDeploymentOptions {
    /// Namespace for namespaced resources that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_namespace: Option<String>,
    /// Namespace forced on every resource; cluster-scoped resources are then an error.
    #[serde(rename = "namespace", default, skip_serializing_if = "Option::is_none")]
    pub target_namespace: Option<String>,
    /// Kustomize options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kustomize: Option<KustomizeOptions>,
    // Boxed: a deployment holds two sets of options, every cache of deployments holds one
    // per cluster and bundle, and bundles of plain manifests have none. (Not in the doc
    // comment, which is the CRD's description.)
    /// Helm options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm: Option<Box<HelmOptions>>,
    /// Service account the agent impersonates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    /// Set by the controller from the GitRepoRestrictions of a GitRepo's namespace: the
    /// labels the namespace a deployment goes to must have on its cluster, checked by the
    /// agent before it deploys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_target_namespace_selector: Option<LabelSelector>,
    /// Bump to force a redeploy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_sync_generation: Option<i64>,
    /// Raw YAML options (overlays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yaml: Option<YamlOptions>,
    /// Options for drift detection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<DiffOptions>,
    /// Keep resources when the bundle is removed.
    #[serde(default, skip_serializing_if = "crate::unset_or_false")]
    pub keep_resources: Option<bool>,
    /// Delete CRD-created resources when the CRD is removed.
    #[serde(
        rename = "deleteCRDResources",
        default,
        skip_serializing_if = "crate::unset_or_false"
    )]
    pub delete_crd_resources: Option<bool>,
    /// Conditions ignored when computing readiness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore: Option<IgnoreOptions>,
    /// Drift correction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct_drift: Option<CorrectDrift>,
    /// Labels put on the namespace Fleet creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_labels: Option<BTreeMap<String, String>>,
    /// Annotations put on the namespace Fleet creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_annotations: Option<BTreeMap<String, String>>,
    /// Delete the namespace when the bundle is removed.
    #[serde(default, skip_serializing_if = "crate::unset_or_false")]
    pub delete_namespace: Option<bool>,
    /// Secrets and ConfigMaps copied to the downstream cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub downstream_resources: Vec<DownstreamResource>,
}

/// `kustomize:` options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KustomizeOptions {
    /// Directory (relative to the bundle) holding the kustomization.yaml to build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
}

/// `yaml:` options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct YamlOptions {
    /// Names of `overlays/<name>` directories applied in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlays: Vec<String>,
}

/// `helm:` options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmOptions {
    /// Chart path, URL, or name in `repo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<String>,
    /// Helm repository URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// Release name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_name: Option<String>,
    /// Chart version or semver range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Time to wait for the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// Values passed to the chart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub values: Option<FreeForm>,
    /// Values read from ConfigMaps or Secrets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_from: Vec<ValuesFrom>,
    /// Replace resources that cannot be updated.
    #[serde(default, skip_serializing_if = "crate::unset_or_false")]
    pub force: Option<bool>,
    /// Adopt resources owned by another release.
    #[serde(default, skip_serializing_if = "crate::unset_or_false")]
    pub take_ownership: Option<bool>,
    /// Number of release revisions kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_history: Option<i32>,
    /// Values files, relative to the bundle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_files: Vec<String>,
    /// Wait for Jobs to complete.
    #[serde(default, skip_serializing_if = "crate::unset_or_false")]
    pub wait_for_jobs: Option<bool>,
    /// Roll back on failure.
    #[serde(default, skip_serializing_if = "crate::unset_or_false")]
    pub atomic: Option<bool>,
    /// Do not template `helm.values` with cluster data (Fleet's own tests spell it
    /// `disablePreprocess` too: Go reads field names without regard to case).
    #[serde(
        default,
        alias = "disablePreprocess",
        skip_serializing_if = "crate::unset_or_false"
    )]
    pub disable_pre_process: Option<bool>,
    /// Values templated per cluster, each its own `${ }` template whose output is read as
    /// YAML; each replaces the top-level value of its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_values: Option<std::collections::BTreeMap<String, String>>,
    /// Disable DNS lookups in templates (Fleet spells it `disableDNS`).
    #[serde(
        rename = "disableDNS",
        default,
        skip_serializing_if = "crate::unset_or_false"
    )]
    pub disable_dns: Option<bool>,
    /// Skip values.schema.json validation.
    #[serde(default, skip_serializing_if = "crate::unset_or_false")]
    pub skip_schema_validation: Option<bool>,
    /// Do not update chart dependencies.
    #[serde(default, skip_serializing_if = "crate::unset_or_false")]
    pub disable_dependency_update: Option<bool>,
}

/// One source of Helm values.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValuesFrom {
    /// A key of a ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_key_ref: Option<KeySelector>,
    /// A key of a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<KeySelector>,
}

/// A key in a named ConfigMap or Secret.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeySelector {
    /// Object name.
    #[serde(default)]
    pub name: String,
    /// Object namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Key within the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// `diff:` options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffOptions {
    /// Patches applied to both sides before comparing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compare_patches: Vec<ComparePatch>,
}

/// A patch that masks fields when detecting drift.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComparePatch {
    /// Kind of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// apiVersion of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Namespace of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// JSON patch operations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<Operation>,
    /// JSON pointers to ignore.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_pointers: Vec<String>,
}

/// One JSON patch operation.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// `add`, `remove`, `replace`...
    #[serde(default)]
    pub op: String,
    /// JSON pointer.
    #[serde(default)]
    pub path: String,
    /// Value, a string as Fleet has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// `ignore:` options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IgnoreOptions {
    /// Conditions (maps of field to value) ignored for readiness.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<BTreeMap<String, String>>,
}

/// `correctDrift:` options.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorrectDrift {
    /// Correct drift when detected.
    #[serde(default)]
    pub enabled: bool,
    /// Use force when correcting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Keep the failed history entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_fail_history: Option<bool>,
}

/// A Secret or ConfigMap copied downstream.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownstreamResource {
    /// `Secret` or `ConfigMap`.
    #[serde(default)]
    pub kind: String,
    /// Object name.
    #[serde(default)]
    pub name: String,
}

/// `rolloutStrategy:`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// Clusters that may be unavailable at once (count or percentage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Partitions that may be unavailable at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable_partitions: Option<IntOrString>,
    /// Size of automatically built partitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_partition_size: Option<IntOrString>,
    /// Explicit partitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<Partition>,
    /// Clusters below which no automatic partitions are made (default 200, as Fleet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_partition_threshold: Option<i32>,
    /// BundleDeployments created at most per pass of the controller (default: no limit;
    /// Fleet's default of 50 guards a slower controller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_new: Option<i32>,
}

/// One rollout partition.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Partition {
    /// Partition name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Clusters of this partition that may be unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
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

/// A reference to a bundle another depends on.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleRef {
    /// Bundle name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Bundles selected by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The states of the dependency that let this bundle go on (default: `Ready`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_states: Vec<String>,
}

/// Where a GitRepo deploys: a cluster by name, label, group or group label.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitTarget {
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
}
