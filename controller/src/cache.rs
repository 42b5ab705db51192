//! What the controllers read on every reconcile, kept in memory by watches: Clusters,
//! ClusterGroups and BundleDeployments. A Bundle's reconcile then reads its clusters and
//! deployments without asking the API server to list and filter every object again
//! (which grew with clusters × bundles), and without copying them.

use std::sync::Arc;

use fleet_api::{BundleDeployment, Cluster, ClusterGroup};
use futures::StreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};

use fleet_objects::backoff::WatchBackoff;

/// The cached kinds.
#[derive(Clone)]
pub struct Caches {
    clusters: Store<Cluster>,
    groups: Store<ClusterGroup>,
    deployments: Store<BundleDeployment>,
}

impl Caches {
    /// Starts the watches filling the caches (BundleDeployments: those `deployments`
    /// selects) and waits until each has listed once.
    pub async fn start(client: &kube::Client, deployments: &str) -> Self {
        let caches = Self {
            clusters: cache(Api::all(client.clone()), watcher::Config::default()),
            groups: cache(Api::all(client.clone()), watcher::Config::default()),
            deployments: cache(
                Api::all(client.clone()),
                watcher::Config::default().labels(deployments),
            ),
        };
        let _ = caches.clusters.wait_until_ready().await;
        let _ = caches.groups.wait_until_ready().await;
        let _ = caches.deployments.wait_until_ready().await;
        caches
    }

    /// The Clusters of `namespace`.
    pub fn clusters(&self, namespace: &str) -> Vec<Arc<Cluster>> {
        in_namespace(&self.clusters, namespace)
    }

    /// The ClusterGroups of `namespace`.
    pub fn groups(&self, namespace: &str) -> Vec<Arc<ClusterGroup>> {
        in_namespace(&self.groups, namespace)
    }

    /// The BundleDeployments whose labels hold every `(key, value)` of `labels`.
    pub fn deployments(&self, labels: &[(&str, &str)]) -> Vec<Arc<BundleDeployment>> {
        self.deployments
            .state()
            .into_iter()
            .filter(|d| {
                let own = d.labels();
                labels
                    .iter()
                    .all(|(k, v)| own.get(*k).map(String::as_str) == Some(*v))
            })
            .collect()
    }
}

fn in_namespace<K>(store: &Store<K>, namespace: &str) -> Vec<Arc<K>>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    store
        .state()
        .into_iter()
        .filter(|o| o.namespace().as_deref() == Some(namespace))
        .collect()
}

/// A store kept by a watch of `api`, running until the process ends.
fn cache<K>(api: Api<K>, config: watcher::Config) -> Store<K>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api, config))
        .backoff(WatchBackoff::default())
        .touched_objects();
    tokio::spawn(stream.for_each(|_| async {}));
    store
}
