//! Cluster registration: a ClusterRegistrationToken lets an agent ask to join once, with a
//! ClusterRegistration; the controller then makes its Cluster and its own credential.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A token agents register with, valid for `ttl`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "ClusterRegistrationToken",
    namespaced,
    status = "ClusterRegistrationTokenStatus",
    category = "fleet"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRegistrationTokenSpec {
    /// How long the token is valid (a Go duration such as `1h`); forever when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::go_duration")]
    pub ttl: Option<String>,
}

/// Observed state of a ClusterRegistrationToken.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRegistrationTokenStatus {
    /// The Secret holding the token (key `token`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    /// When the token stops working (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
}

/// An agent's request to join, made with a registration token.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "fleet.cattle.io",
    version = "v1alpha1",
    kind = "ClusterRegistration",
    namespaced,
    status = "ClusterRegistrationStatus",
    category = "fleet"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRegistrationSpec {
    /// A stable id the agent chose.
    #[serde(rename = "clientID", default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The name the agent asks for its Cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<String>,
    /// Labels for the Cluster.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cluster_labels: BTreeMap<String, String>,
    /// A random value only the registering agent knows (32 to 64 lowercase hex digits): its
    /// credential is handed back in the Secret `c-<clientRandom>`. Other holders of the same
    /// registration token can neither read ClusterRegistrations nor list Secrets, so they
    /// cannot find it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_random: Option<String>,
}

impl ClusterRegistrationSpec {
    /// The Secret the credential is handed back in, or `None` without a well-formed
    /// `clientRandom`.
    pub fn credential_secret_name(&self) -> Option<String> {
        let random = self.client_random.as_deref()?;
        let well_formed = (32..=64).contains(&random.len())
            && random
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        well_formed.then(|| format!("c-{random}"))
    }
}

/// Observed state of a ClusterRegistration.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRegistrationStatus {
    /// The Cluster made for the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_name: Option<String>,
    /// The Secret (in this namespace) holding the agent's kubeconfig (key `kubeconfig`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    /// The registration was accepted.
    #[serde(default)]
    pub granted: bool,
}
