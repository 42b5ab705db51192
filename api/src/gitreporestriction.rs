//! The GitRepoRestriction kind: Rancher Fleet's first way to restrict and default the
//! GitRepos of a namespace (target namespaces, service accounts, repositories, client
//! secrets), still honoured beside Policy. Like Fleet's, it has no spec: its fields sit
//! beside the metadata, and every one may be null.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::LabelSelector;

/// Restrictions and defaults for the GitRepos of one namespace. Several combine: the
/// first by name gives a default, the lists add up.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct GitRepoRestriction {
    /// Object metadata.
    pub metadata: ObjectMeta,
    /// What the restriction says.
    #[serde(flatten)]
    pub rules: GitRepoRestrictionRules,
}

/// The fields of a [`GitRepoRestriction`].
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitRepoRestrictionRules {
    /// Service account set on GitRepos that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_service_account: Option<String>,
    /// When not empty, the service accounts GitRepos may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_service_accounts: Option<Vec<String>>,
    /// When not empty, regular expressions (unanchored) or exact values one of which a
    /// GitRepo's `repo` must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_repo_patterns: Option<Vec<String>>,
    /// Client secret set on GitRepos that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_client_secret_name: Option<String>,
    /// When not empty, the client secrets GitRepos may name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_client_secret_names: Option<Vec<String>>,
    /// When not empty, GitRepos must set a `targetNamespace`, one of these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_target_namespaces: Option<Vec<String>>,
    /// When set, GitRepos must set a `targetNamespace`, and on each cluster it must be a
    /// namespace whose labels this selector matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_target_namespace_selector: Option<LabelSelector>,
}

specless_resource!(
    GitRepoRestriction,
    "GitRepoRestriction",
    "gitreporestrictions",
    k8s_openapi::NamespaceResourceScope
);

impl GitRepoRestriction {
    /// The CRD of the kind, with Fleet's columns.
    pub fn crd() -> CustomResourceDefinition {
        crate::specless::crd::<GitRepoRestrictionRules>(crate::specless::Kind {
            kind: "GitRepoRestriction",
            plural: "gitreporestrictions",
            description: "Restrictions and defaults for the GitRepos of a namespace.",
            columns: &[
                ("Default-ServiceAccount", ".defaultServiceAccount"),
                ("Allowed-ServiceAccounts", ".allowedServiceAccounts"),
            ],
        })
    }
}
