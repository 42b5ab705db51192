//! The Cluster and ClusterGroup kinds: downstream clusters and groups of them.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    preserve_unknown_fields, BundleSummary, Condition, FreeForm, LabelSelector, ResourceCounts,
};

/// A downstream cluster registered with Fleet.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "Cluster",
    namespaced,
    status = "ClusterStatus",
    category = "fleet",
    printcolumn(
        name = "Bundles-Ready",
        type_ = "string",
        json_path = ".status.display.readyBundles"
    ),
    printcolumn(
        name = "Last-Seen",
        type_ = "string",
        json_path = ".status.agent.lastSeen"
    ),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].message"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Stop deploying to this cluster.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Unique id of the agent's registration.
    #[serde(rename = "clientID", default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Secret holding a kubeconfig for the cluster (push mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config_secret: Option<String>,
    /// Namespace of that secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config_secret_namespace: Option<String>,
    /// Bump to redeploy the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redeploy_agent_generation: Option<i64>,
    /// Namespace the agent runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_namespace: Option<String>,
    /// Values available to `helm.values` templating as `.ClusterValues`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_unknown_fields")]
    pub template_values: Option<FreeForm>,
    /// Prefix for private image registries.
    #[serde(
        rename = "privateRepoURL",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub private_repo_url: Option<String>,
    /// Extra environment variables for an agent the manager deploys (kept; fleet-rs's
    /// agents are installed by their chart, whose values set these).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_env_vars: Vec<k8s_openapi::api::core::v1::EnvVar>,
    /// Extra tolerations for that agent (kept, as `agentEnvVars`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_tolerations: Vec<k8s_openapi::api::core::v1::Toleration>,
    /// Affinity for that agent (kept, as `agentEnvVars`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_affinity: Option<k8s_openapi::api::core::v1::Affinity>,
    /// Resources for that agent (kept, as `agentEnvVars`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
    /// Run that agent on the host's network (kept, as `agentEnvVars`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_network: Option<bool>,
    /// A priority class and disruption budget for that agent (kept, as `agentEnvVars`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_scheduling_customization: Option<AgentSchedulingCustomization>,
    /// Image pull secrets for that agent (kept, as `agentEnvVars`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_pull_secrets: Option<Vec<k8s_openapi::api::core::v1::LocalObjectReference>>,
}

/// Scheduling of an agent the manager deploys.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSchedulingCustomization {
    /// The agent's priority class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class: Option<AgentPriorityClass>,
    /// The agent's disruption budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<AgentDisruptionBudget>,
}

/// The priority class made for an agent.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentPriorityClass {
    /// Its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<i32>,
    /// `PreemptLowerPriority` or `Never`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<String>,
}

/// The disruption budget made for an agent.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentDisruptionBudget {
    /// Pods that must stay available (a count or a percentage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<String>,
    /// Pods that may be unavailable (a count or a percentage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<String>,
}

impl Cluster {
    /// Whether the controller deploys to this cluster itself, through the kubeconfig in
    /// `spec.kubeConfigSecret` (the push model), instead of an agent pulling.
    pub fn is_pushed(&self) -> bool {
        self.spec
            .kube_config_secret
            .as_deref()
            .is_some_and(|s| !s.is_empty())
    }

    /// Whether an agent registered for this cluster has reported (a heartbeat).
    pub fn has_agent(&self) -> bool {
        self.status
            .as_ref()
            .and_then(|s| s.agent.as_ref())
            .is_some_and(|a| a.last_seen.is_some())
    }

    /// Whether its agent stopped reporting: its `Ready` condition says so (reason
    /// [`OFFLINE_REASON`]), written by the controller once the agent's `lastSeen` is old.
    pub fn is_offline(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.reason.as_deref() == Some(OFFLINE_REASON))
        })
    }

    /// Whether new deployments wait for a Schedule's window: one targets the cluster and
    /// none is open.
    pub fn is_off_schedule(&self) -> bool {
        self.status
            .as_ref()
            .is_some_and(|s| s.scheduled && !s.active_schedule)
    }

    /// Whether the cluster would be driven both ways (a kubeconfig to push through and a
    /// registered agent pulling): it is then refused, and nothing is deployed to it.
    pub fn is_driven_twice(&self) -> bool {
        self.is_pushed() && self.has_agent()
    }
}

/// The reason of a Cluster's `Ready` condition when its agent stopped reporting.
pub const OFFLINE_REASON: &str = "Offline";

/// The reason of a Cluster's `Ready` condition when it is driven both ways.
pub const DRIVEN_TWICE_REASON: &str = "DrivenTwice";

/// Observed state of a Cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Conditions (Ready...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Namespace holding this cluster's BundleDeployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Counts of deployments per state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<BundleSummary>,
    /// Counts of resources per state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_counts: Option<ResourceCounts>,
    /// GitRepos ready on this cluster.
    #[serde(default)]
    pub ready_git_repos: i32,
    /// GitRepos targeting this cluster.
    #[serde(default)]
    pub desired_ready_git_repos: i32,
    /// Values shown by kubectl.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<ClusterDisplay>,
    /// What the agent reports about itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentStatus>,
    /// A Schedule targets the cluster: it gets new deployments only while one is active.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scheduled: bool,
    /// A Schedule targeting the cluster has its window open now.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub active_schedule: bool,
}

/// Cluster values shown in printer columns.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDisplay {
    /// "ready/desired" bundles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_bundles: Option<String>,
    /// Summary state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// The agent's heartbeat.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    /// Time of the last heartbeat (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<String>,
    /// Namespace the agent runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Nodes ready.
    #[serde(default)]
    pub ready_nodes: i32,
    /// Nodes not ready.
    #[serde(default)]
    pub non_ready_nodes: i32,
}

/// A named set of clusters chosen by label.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "ClusterGroup",
    namespaced,
    status = "ClusterGroupStatus",
    category = "fleet",
    printcolumn(
        name = "Clusters-Ready",
        type_ = "string",
        json_path = ".status.display.readyClusters"
    ),
    printcolumn(
        name = "Bundles-Ready",
        type_ = "string",
        json_path = ".status.display.readyBundles"
    ),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].message"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterGroupSpec {
    /// Clusters in the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// Observed state of a ClusterGroup.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterGroupStatus {
    /// Clusters in the group.
    #[serde(default)]
    pub cluster_count: i32,
    /// Clusters not ready.
    #[serde(default)]
    pub non_ready_cluster_count: i32,
    /// Names of some non-ready clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub non_ready_clusters: Vec<String>,
    /// Conditions (Ready...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Counts of deployments per state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<BundleSummary>,
    /// Values shown by kubectl.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<ClusterGroupDisplay>,
    /// Counts of resources per state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_counts: Option<ResourceCounts>,
}

/// ClusterGroup values shown in printer columns.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterGroupDisplay {
    /// "ready/desired" clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_clusters: Option<String>,
    /// "ready/desired" bundles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_bundles: Option<String>,
    /// Summary state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}
