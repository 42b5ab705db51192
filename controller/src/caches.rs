//! The kinds the reconciles read, as their watches keep them (see [`crate::watches`]):
//! Clusters, ClusterGroups and Policies by namespace, BundleDeployments by bundle and by
//! cluster. What they return is shared with the cache, never copied.

use std::sync::Arc;

use fleet_api::labels::{
    BUNDLE_NAMESPACE_LABEL, BUNDLE_NAME_LABEL, CLUSTER_LABEL, CLUSTER_NAMESPACE_LABEL,
};
use fleet_api::{BundleDeployment, Cluster, ClusterGroup, Policy};
use kube::ResourceExt;

use crate::watches::Cache;

/// The cached kinds.
pub struct Caches {
    clusters: Arc<Cache<Cluster>>,
    groups: Arc<Cache<ClusterGroup>>,
    policies: Arc<Cache<Policy>>,
    deployments: Arc<Cache<BundleDeployment>>,
}

impl Caches {
    /// The caches the watches fill.
    pub fn new(
        clusters: Arc<Cache<Cluster>>,
        groups: Arc<Cache<ClusterGroup>>,
        policies: Arc<Cache<Policy>>,
        deployments: Arc<Cache<BundleDeployment>>,
    ) -> Self {
        Self {
            clusters,
            groups,
            policies,
            deployments,
        }
    }

    /// The Clusters of `namespace`, by name.
    pub fn clusters(&self, namespace: &str) -> Vec<Arc<Cluster>> {
        self.clusters.get(namespace)
    }

    /// The ClusterGroups of `namespace`, by name.
    pub fn groups(&self, namespace: &str) -> Vec<Arc<ClusterGroup>> {
        self.groups.get(namespace)
    }

    /// The Policies of `namespace`, by name.
    pub fn policies(&self, namespace: &str) -> Vec<Arc<Policy>> {
        self.policies.get(namespace)
    }

    /// The BundleDeployments of bundle `name` in `namespace`.
    pub fn deployments_of_bundle(&self, namespace: &str, name: &str) -> Vec<Arc<BundleDeployment>> {
        self.deployments.get(&bundle_key(namespace, name))
    }

    /// The BundleDeployments of cluster `name` in `namespace`.
    pub fn deployments_of_cluster(
        &self,
        namespace: &str,
        name: &str,
    ) -> Vec<Arc<BundleDeployment>> {
        self.deployments.get(&cluster_key(namespace, name))
    }
}

/// An object's index key: its namespace.
pub fn by_namespace<K: kube::Resource>(object: &K) -> Vec<String> {
    vec![object.namespace().unwrap_or_default()]
}

/// A BundleDeployment's index keys: its bundle and its cluster, as its labels name them.
pub fn deployment_keys(deployment: &BundleDeployment) -> Vec<String> {
    let labels = deployment.labels();
    let pair = |name: &str, namespace: &str| Some((labels.get(namespace)?, labels.get(name)?));
    let mut keys = Vec::new();
    if let Some((namespace, name)) = pair(BUNDLE_NAME_LABEL, BUNDLE_NAMESPACE_LABEL) {
        keys.push(bundle_key(namespace, name));
    }
    if let Some((namespace, name)) = pair(CLUSTER_LABEL, CLUSTER_NAMESPACE_LABEL) {
        keys.push(cluster_key(namespace, name));
    }
    keys
}

fn bundle_key(namespace: &str, name: &str) -> String {
    format!("bundle:{namespace}/{name}")
}

fn cluster_key(namespace: &str, name: &str) -> String {
    format!("cluster:{namespace}/{name}")
}
