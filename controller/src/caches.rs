//! The kinds the reconciles read, as their watches keep them (see [`crate::watches`]):
//! Clusters, ClusterGroups, Policies and GitRepoRestrictions by namespace, BundleDeployments by bundle and by
//! cluster. What they return is shared with the cache, never copied.

use std::sync::Arc;

use fleet_api::labels::{
    BUNDLE_NAMESPACE_LABEL, BUNDLE_NAME_LABEL, CLUSTER_LABEL, CLUSTER_NAMESPACE_LABEL,
};
use std::collections::BTreeSet;

use fleet_api::{
    Bundle, BundleDeployment, BundleNamespaceMapping, Cluster, ClusterGroup, GitRepoRestriction,
    Policy,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;

use crate::watches::Cache;

/// The cached kinds.
pub struct Caches {
    clusters: Arc<Cache<Cluster>>,
    groups: Arc<Cache<ClusterGroup>>,
    policies: Arc<Cache<Policy>>,
    restrictions: Arc<Cache<GitRepoRestriction>>,
    mappings: Arc<Cache<BundleNamespaceMapping>>,
    namespaces: Arc<Cache<Namespace>>,
    deployments: Arc<Cache<BundleDeployment>>,
}

impl Caches {
    /// The caches the watches fill.
    pub fn new(
        clusters: Arc<Cache<Cluster>>,
        groups: Arc<Cache<ClusterGroup>>,
        policies: Arc<Cache<Policy>>,
        restrictions: Arc<Cache<GitRepoRestriction>>,
        mappings: Arc<Cache<BundleNamespaceMapping>>,
        namespaces: Arc<Cache<Namespace>>,
        deployments: Arc<Cache<BundleDeployment>>,
    ) -> Self {
        Self {
            clusters,
            groups,
            policies,
            restrictions,
            mappings,
            namespaces,
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

    /// The GitRepoRestrictions of `namespace`, by name.
    pub fn restrictions(&self, namespace: &str) -> Vec<Arc<GitRepoRestriction>> {
        self.restrictions.get(namespace)
    }

    /// The namespaces whose Clusters `bundle` may target: its own and those the
    /// BundleNamespaceMappings of its namespace add (see [`crate::mapping`]).
    pub fn namespaces_for(&self, bundle: &Bundle) -> BTreeSet<String> {
        let own = bundle.namespace().unwrap_or_default();
        let mappings = self.mappings.get(&own);
        if mappings.is_empty() {
            return BTreeSet::from([own]);
        }
        crate::mapping::namespaces_for_bundle(bundle, &mappings, &self.namespaces.get(ALL))
    }

    /// The BundleDeployments of bundle `name` in `namespace`.
    pub fn deployments_of_bundle(&self, namespace: &str, name: &str) -> Vec<Arc<BundleDeployment>> {
        self.deployments.get(&bundle_key(namespace, name))
    }

    /// The BundleDeployment of bundle `name` in `namespace` in the cluster namespace
    /// `target`, as the cache holds it now.
    pub fn deployment_of_bundle(
        &self,
        namespace: &str,
        name: &str,
        target: &str,
    ) -> Option<Arc<BundleDeployment>> {
        // A deployment is named after its bundle; its labels say which namespace's.
        let deployment = self.deployments.object(target, name)?;
        let labels = deployment.labels();
        let of_bundle = labels.get(BUNDLE_NAME_LABEL).map(String::as_str) == Some(name)
            && labels.get(BUNDLE_NAMESPACE_LABEL).map(String::as_str) == Some(namespace);
        of_bundle.then_some(deployment)
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

/// The one index key of a kind the reconciles read whole (Namespaces).
pub const ALL: &str = "";

/// Every object's index key: [`ALL`].
pub fn all<K>(_: &K) -> Vec<String> {
    vec![ALL.to_string()]
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

pub(crate) fn bundle_key(namespace: &str, name: &str) -> String {
    format!("bundle:{namespace}/{name}")
}

pub(crate) fn cluster_key(namespace: &str, name: &str) -> String {
    format!("cluster:{namespace}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::watcher::Event;

    fn deployment(target: &str, name: &str, bundle_namespace: &str) -> BundleDeployment {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
            "metadata": {"namespace": target, "name": name, "labels": {
                BUNDLE_NAME_LABEL: name,
                BUNDLE_NAMESPACE_LABEL: bundle_namespace,
            }},
            "spec": {},
        }))
        .expect("a BundleDeployment")
    }

    #[test]
    fn a_bundles_deployment_in_a_cluster_namespace_is_found_only_for_that_bundle() {
        let (deployments, mut apply) = Cache::detached(deployment_keys);
        apply(Event::Init);
        apply(Event::InitApply(deployment(
            "cluster-a",
            "web",
            "fleet-local",
        )));
        apply(Event::InitDone);
        let caches = Caches::new(
            Cache::detached(by_namespace).0,
            Cache::detached(by_namespace).0,
            Cache::detached(by_namespace).0,
            Cache::detached(by_namespace).0,
            Cache::detached(by_namespace).0,
            Cache::detached(all).0,
            deployments,
        );
        let found = caches.deployment_of_bundle("fleet-local", "web", "cluster-a");
        assert_eq!(found.map(|d| d.name_any()).as_deref(), Some("web"));
        // A bundle of the same name in another namespace has no deployment there.
        assert!(caches
            .deployment_of_bundle("fleet-default", "web", "cluster-a")
            .is_none());
        assert!(caches
            .deployment_of_bundle("fleet-local", "web", "cluster-b")
            .is_none());
    }
}
