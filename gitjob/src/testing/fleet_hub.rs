//! A hub ready for Fleet: Fleet's CRDs installed and `fleet-local` created, with clients
//! for its logical clusters; and a patient assertion for what controllers do eventually.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::PostParams;
use kube::Api;

/// A running hub in a temporary directory.
pub struct FleetHub {
    /// The temporary directory; the hub's data is under `hub/`, and tests may put more.
    pub dir: tempfile::TempDir,
    /// The hub (`None` while stopped by [`FleetHub::restart`]).
    pub running: Option<fleet_hub::Running>,
    clusters: Vec<String>,
    /// An admin client of the `local` (management) cluster.
    pub client: kube::Client,
}

impl FleetHub {
    /// Starts a hub with logical clusters `local` and `members`, installs Fleet's CRDs in
    /// `local` and creates the namespaces `fleet-local` and `cattle-fleet-system` there.
    pub async fn start(members: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        let mut clusters = vec!["local".to_string()];
        clusters.extend(members.iter().map(|m| m.to_string()));
        let running = fleet_hub::start(fleet_hub::Options {
            data: dir.path().join("hub"),
            listen: ([127, 0, 0, 1], 0).into(),
            insecure_http: false,
            clusters: clusters.clone(),
        })
        .await
        .unwrap_or_else(|e| panic!("hub starts: {e}"));
        let client = client_for(&fleet_hub::serve::kubeconfig_path(
            &dir.path().join("hub"),
            "local",
        ))
        .await;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for (_, crd) in fleet_api::crds::all() {
            crds.create(&PostParams::default(), &crd)
                .await
                .unwrap_or_else(|e| panic!("CRD: {e}"));
        }
        let namespaces: Api<Namespace> = Api::all(client.clone());
        for name in ["fleet-local", "cattle-fleet-system"] {
            let namespace = Namespace {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.into()),
                    ..Default::default()
                },
                ..Namespace::default()
            };
            namespaces
                .create(&PostParams::default(), &namespace)
                .await
                .unwrap_or_else(|e| panic!("namespace {name}: {e}"));
        }
        Self {
            dir,
            running: Some(running),
            clusters,
            client,
        }
    }

    /// Stops the hub, waits `down`, and starts it again on the same port and data.
    pub async fn restart(&mut self, down: Duration) {
        let Some(running) = self.running.take() else {
            return;
        };
        let addr = running.addr;
        running.shutdown().await;
        tokio::time::sleep(down).await;
        for attempt in 0.. {
            let options = fleet_hub::Options {
                data: self.dir.path().join("hub"),
                listen: addr,
                insecure_http: false,
                clusters: self.clusters.clone(),
            };
            match fleet_hub::start(options).await {
                Ok(running) => {
                    self.running = Some(running);
                    return;
                }
                Err(error) if attempt < 50 => {
                    tracing::debug!(%error, "hub restart, retrying");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("hub restarts: {error}"),
            }
        }
    }

    /// The kubeconfig of a logical cluster.
    pub fn kubeconfig(&self, cluster: &str) -> PathBuf {
        fleet_hub::serve::kubeconfig_path(&self.dir.path().join("hub"), cluster)
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

/// A kube-rs client for the cluster a kubeconfig file names.
pub async fn client_for(kubeconfig: &Path) -> kube::Client {
    let config = kube::config::Kubeconfig::read_from(kubeconfig)
        .unwrap_or_else(|e| panic!("kubeconfig: {e}"));
    let config = kube::Config::from_custom_kubeconfig(config, &Default::default())
        .await
        .unwrap_or_else(|e| panic!("kubeconfig loads: {e}"));
    kube::Client::try_from(config).unwrap_or_else(|e| panic!("client: {e}"))
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
