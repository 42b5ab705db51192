//! The Policy kind: what the GitRepos and Bundles of its namespace may do (service
//! accounts, repositories, client secrets, namespace creation), as Rancher Fleet's Policy.
//! Like Fleet's, it has no spec: its fields sit beside the metadata.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Restrictions and defaults for the GitRepos and Bundles of one namespace. Several
/// Policies of a namespace combine: any may allow, any may require.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Policy {
    /// Object metadata.
    pub metadata: ObjectMeta,
    /// What the policy says.
    #[serde(flatten)]
    pub rules: PolicyRules,
}

/// The fields of a [`Policy`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRules {
    /// Refuse GitRepos and Bundles without a service account (after defaults apply).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_service_account: bool,
    /// When not empty, the service accounts that may be used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_service_accounts: Vec<String>,
    /// Let the agent create namespaces even though a service account is required (by
    /// default it then creates none, so that tenant accounts need no cluster-scoped
    /// right to create namespaces).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_namespace_creation: bool,
    /// Defaults and restrictions for GitRepos.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_repo: Option<GitRepoPolicy>,
    /// Defaults and restrictions for HelmOps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_op: Option<HelmOpPolicy>,
}

/// What a [`Policy`] says of HelmOps.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelmOpPolicy {
    /// Service account set on HelmOps that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_service_account: Option<String>,
    /// `helmSecretName` set on HelmOps that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_helm_secret_name: Option<String>,
    /// When not empty, the `helmSecretName`s HelmOps may name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_helm_secret_names: Vec<String>,
    /// When not empty, regular expressions one of which a HelmOp's `helm.repo` must match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_helm_repo_patterns: Vec<String>,
    /// When not empty, regular expressions one of which a HelmOp's `helm.chart` must match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_chart_patterns: Vec<String>,
}

/// What a [`Policy`] says of GitRepos.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitRepoPolicy {
    /// Service account set on GitRepos that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_service_account: Option<String>,
    /// Client secret set on GitRepos that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_client_secret_name: Option<String>,
    /// When not empty, the client secrets GitRepos may name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_client_secret_names: Vec<String>,
    /// When not empty, regular expressions one of which a GitRepo's `repo` must match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_repo_patterns: Vec<String>,
}

specless_resource!(
    Policy,
    "Policy",
    "policies",
    k8s_openapi::NamespaceResourceScope
);

impl Policy {
    /// The CRD of the kind: the schema of [`PolicyRules`] beside `metadata`.
    pub fn crd() -> CustomResourceDefinition {
        crate::specless::crd::<PolicyRules>(crate::specless::Kind {
            kind: "Policy",
            plural: "policies",
            description: "What the GitRepos and Bundles of a namespace may do.",
            columns: &[],
        })
    }
}
