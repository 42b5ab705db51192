//! A hub ready for Fleet: Fleet's CRDs and namespaces installed, with an admin client of
//! its management cluster; Clusters added by hand; and a patient assertion for what
//! controllers do eventually.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kube::api::PostParams;
use kube::Api;

use crate::hub::TestHub;

/// A hub ready for Fleet, with an admin client of its management cluster.
pub struct FleetHub {
    /// The hub; its logical clusters are `local` and the members.
    pub hub: TestHub,
    /// An admin client of the `local` (management) cluster.
    pub client: kube::Client,
}

impl FleetHub {
    /// Starts a hub with logical clusters `local` and `members` and installs Fleet's CRDs
    /// and namespaces in `local`.
    pub async fn start(members: &[&str]) -> Self {
        let mut clusters = vec!["local"];
        clusters.extend(members);
        let hub = TestHub::start(&clusters).await;
        let client = hub.client("local").await;
        fleet_objects::client::install_fleet(&client, "fleet-testkit")
            .await
            .unwrap_or_else(|e| panic!("installing Fleet: {e}"));
        Self { hub, client }
    }

    /// The temporary directory holding the hub's data under `hub/`; tests may put more.
    pub fn dir(&self) -> &Path {
        self.hub.dir.path()
    }

    /// Stops the hub, waits `down`, and starts it again on the same port and data.
    pub async fn restart(&mut self, down: Duration) {
        self.hub.restart(down).await;
    }

    /// The kubeconfig of a logical cluster.
    pub fn kubeconfig(&self, cluster: &str) -> PathBuf {
        self.hub.kubeconfig(cluster)
    }
}

/// Creates the Cluster `namespace/name` with `labels` (a JSON object), as an admin adds a
/// cluster by hand rather than through registration.
pub async fn create_cluster(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    labels: serde_json::Value,
) -> Result<fleet_api::Cluster, kube::Error> {
    let cluster: fleet_api::Cluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {},
    }))
    .map_err(kube::Error::SerdeError)?;
    Api::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &cluster)
        .await
}

/// Creates the Cluster `namespace/name` with `labels` deployed to the push way: through
/// the kubeconfig `kubeconfig` (its text), kept in the Secret `<name>-kubeconfig` (key
/// `value`, as Fleet's manager keeps it).
pub async fn create_pushed_cluster(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    kubeconfig: &str,
    labels: serde_json::Value,
) -> Result<fleet_api::Cluster, kube::Error> {
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("{name}-kubeconfig"), "namespace": namespace},
        "stringData": {"value": kubeconfig},
    }))
    .map_err(kube::Error::SerdeError)?;
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await?;
    let cluster: fleet_api::Cluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"kubeConfigSecret": format!("{name}-kubeconfig")},
    }))
    .map_err(kube::Error::SerdeError)?;
    Api::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &cluster)
        .await
}

/// Polls `check` every 50 ms until it gives a value; panics naming `what` after `limit`.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `len` letters that do not compress (xorshift), for repositories that must be large.
pub fn incompressible(len: usize, seed: u64) -> String {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'a' + (state % 26) as u8)
        })
        .collect()
}
