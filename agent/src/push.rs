//! The push model: a Cluster whose `spec.kubeConfigSecret` names a Secret (key `value`, a
//! kubeconfig, as Fleet's manager-initiated registration keeps it) is deployed to by the
//! controller's process itself, through that kubeconfig, with this crate's agent: the same
//! apply, prune, drift, hooks and status code as a pulling agent, run once per such cluster.
//! No agent process runs in the cluster. A cluster that also has a registered agent is
//! driven by neither (the controller refuses it, saying so in its status).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use fleet_api::Cluster;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Api, ResourceExt};

use crate::Agent;

/// The Secret key holding the kubeconfig, as in Fleet.
pub const KUBECONFIG_KEY: &str = "value";

/// How often clusters that could not be started are tried again.
const RETRY: Duration = Duration::from_secs(5);

/// Why a pushed cluster could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The Secret could not be read.
    #[error("secret {namespace}/{name}: {message}")]
    Secret {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// The kubeconfig could not be used.
    #[error("secret {namespace}/{name}: key `value`: {message}")]
    Kubeconfig {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// What went wrong.
        message: String,
    },
}

/// One pushed cluster being driven: what it was started with (its Secret and namespace,
/// and a digest of the kubeconfig read), and how to stop it.
struct Driven {
    started_with: String,
    kubeconfig: [u8; 32],
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Drives every pushed cluster the hub (`hub`) lists, looking at each deployment again
/// every `resync`, until `shutdown` resolves. Clusters are started once their controller
/// gave them a namespace, stopped when they stop being pushed (or are refused), and
/// started again when their Secret reference or namespace changes, or when the kubeconfig
/// in their Secret does (a rotated credential, looked at every few seconds).
pub async fn run(
    hub: kube::Client,
    resync: Duration,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let (store, writer) = reflector::store::<Cluster>();
    let events = reflector(
        writer,
        watcher(Api::<Cluster>::all(hub.clone()), watcher::Config::default()),
    )
    .default_backoff()
    .touched_objects()
    .boxed();
    let mut events = events.fuse();
    let mut shutdown = Box::pin(shutdown);
    let mut retry = tokio::time::interval(RETRY);
    let mut driven: HashMap<String, Driven> = HashMap::new();
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            event = events.next() => {
                let Some(event) = event else {
                    break;
                };
                // Clusters' status writes come in bursts: one reconcile serves the whole burst,
                // and none is needed when it touched no pushed or driven cluster (agents'
                // heartbeats, at thousands of clusters).
                let mut relevant = may_change_pushed(&event, &driven);
                while let Some(Some(event)) = events.next().now_or_never() {
                    relevant |= may_change_pushed(&event, &driven);
                }
                if !relevant {
                    continue;
                }
            }
            _ = retry.tick() => forget_rotated(&hub, &store.state(), &mut driven).await,
        }
        let clusters = store.state();
        reconcile(&hub, resync, &clusters, &mut driven).await;
    }
    tracing::info!(clusters = driven.len(), "push: stopping");
}

/// Whether a watch event may change which clusters are driven: it touched a pushed
/// cluster, or a driven one (which may no longer be pushed, or be gone); an error may hide
/// either.
fn may_change_pushed(
    event: &Result<Cluster, watcher::Error>,
    driven: &HashMap<String, Driven>,
) -> bool {
    let Ok(cluster) = event else {
        return true;
    };
    cluster.is_pushed() || driven.contains_key(&cluster_key(cluster))
}

fn cluster_key(cluster: &Cluster) -> String {
    format!(
        "{}/{}",
        cluster.namespace().unwrap_or_default(),
        cluster.name_any()
    )
}

/// What a pushed cluster is started with: its Secret and its namespace on the hub.
/// The namespace and name of the Secret holding `cluster`'s kubeconfig: the Cluster's own
/// namespace unless `kubeConfigSecretNamespace` names another.
fn kubeconfig_secret(cluster: &Cluster) -> Option<(String, String)> {
    let name = cluster.spec.kube_config_secret.clone()?;
    let namespace = cluster
        .spec
        .kube_config_secret_namespace
        .clone()
        .filter(|n| !n.is_empty())
        .or_else(|| cluster.namespace())?;
    Some((namespace, name))
}

fn start_key(cluster: &Cluster) -> Option<String> {
    if !cluster.is_pushed() || cluster.is_driven_twice() {
        return None;
    }
    let namespace = cluster.status.as_ref()?.namespace.clone()?;
    let (secret_namespace, secret) = kubeconfig_secret(cluster)?;
    Some(format!("{secret_namespace}/{secret}@{namespace}"))
}

async fn reconcile(
    hub: &kube::Client,
    resync: Duration,
    clusters: &[Arc<Cluster>],
    driven: &mut HashMap<String, Driven>,
) {
    let wanted: HashMap<String, (&Cluster, String)> = clusters
        .iter()
        .filter_map(|cluster| {
            // Most clusters are not pushed: no key is formatted for them.
            let started_with = start_key(cluster)?;
            Some((cluster_key(cluster), (&**cluster, started_with)))
        })
        .collect();
    driven.retain(|key, running| {
        let keep = wanted
            .get(key)
            .is_some_and(|(_, started_with)| *started_with == running.started_with);
        if !keep {
            tracing::info!(cluster = %key, "push: stopped");
        }
        keep
    });
    for (key, (cluster, started_with)) in wanted {
        if driven.contains_key(&key) {
            continue;
        }
        match start(hub, resync, cluster).await {
            Ok((stop, kubeconfig)) => {
                tracing::info!(cluster = %key, "push: deploying through the cluster's kubeconfig");
                driven.insert(
                    key,
                    Driven {
                        started_with,
                        kubeconfig,
                        _stop: stop,
                    },
                );
            }
            Err(error) => tracing::warn!(cluster = %key, %error, "push: not started"),
        }
    }
}

/// Stops driving the clusters whose Secret now holds another kubeconfig than the one they
/// were started with (a rotated credential); the next reconcile starts them with it. A
/// Secret that cannot be read now leaves its cluster as it is.
async fn forget_rotated(
    hub: &kube::Client,
    clusters: &[Arc<Cluster>],
    driven: &mut HashMap<String, Driven>,
) {
    for cluster in clusters {
        let key = cluster_key(cluster);
        let Some(running) = driven.get(&key) else {
            continue;
        };
        let Ok(text) = kubeconfig_text(hub, cluster).await else {
            continue;
        };
        if digest(&text) != running.kubeconfig {
            tracing::info!(cluster = %key, "push: the kubeconfig changed; starting again with it");
            driven.remove(&key);
        }
    }
}

fn digest(text: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes()).into()
}

/// Starts the agent of a pushed cluster; it stops when the returned sender is dropped.
/// Also returns the digest of the kubeconfig it was started with.
async fn start(
    hub: &kube::Client,
    resync: Duration,
    cluster: &Cluster,
) -> Result<(tokio::sync::oneshot::Sender<()>, [u8; 32]), PushError> {
    let namespace = cluster
        .status
        .as_ref()
        .and_then(|s| s.namespace.clone())
        .unwrap_or_default();
    let text = kubeconfig_text(hub, cluster).await?;
    let local = member_client(cluster, &text).await?;
    let agent = Agent::new(hub.clone(), local, &namespace, resync);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(agent.run(async move {
        let _ = stopped.await;
    }));
    Ok((stop, digest(&text)))
}

/// The kubeconfig `cluster`'s Secret holds.
async fn kubeconfig_text(hub: &kube::Client, cluster: &Cluster) -> Result<String, PushError> {
    let (namespace, name) = kubeconfig_secret(cluster).unwrap_or_default();
    let secret_error = |message: String| PushError::Secret {
        namespace: namespace.clone(),
        name: name.clone(),
        message,
    };
    let secret = Api::<Secret>::namespaced(hub.clone(), &namespace)
        .get_opt(&name)
        .await
        .map_err(|e| secret_error(e.to_string()))?
        .ok_or_else(|| secret_error("not found".into()))?;
    let bytes = secret
        .data
        .and_then(|mut data| data.remove(KUBECONFIG_KEY))
        .ok_or_else(|| kubeconfig_error(cluster, "missing".into()))?;
    String::from_utf8(bytes.0).map_err(|_| kubeconfig_error(cluster, "not UTF-8".into()))
}

fn kubeconfig_error(cluster: &Cluster, message: String) -> PushError {
    let (namespace, name) = kubeconfig_secret(cluster).unwrap_or_default();
    PushError::Kubeconfig {
        namespace,
        name,
        message,
    }
}

/// A client of the cluster, from the kubeconfig `text` its Secret holds.
async fn member_client(cluster: &Cluster, text: &str) -> Result<kube::Client, PushError> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(text)
        .map_err(|e| kubeconfig_error(cluster, e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| kubeconfig_error(cluster, e.to_string()))?;
    kube::Client::try_from(config).map_err(|e| kubeconfig_error(cluster, e.to_string()))
}
