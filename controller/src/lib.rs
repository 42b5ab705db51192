//! The targeting controller (`fleet controller`): every Bundle goes to the Clusters its
//! targets select, as one BundleDeployment per cluster in that cluster's namespace. A
//! BundleDeployment names its variant by content id; the rendered resources are stored
//! once per id as a Content object, however many clusters deploy them. Bundle status counts
//! the deployments' states.

pub mod clusters;
pub mod downstream;
pub mod metrics;
pub mod placement;
pub mod preview;
pub mod reconcile;
pub mod registration;
pub mod rollout;
pub mod variant;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_api::labels;
use fleet_api::{
    Bundle, BundleDeployment, Cluster, ClusterGroup, ClusterRegistration, ClusterRegistrationToken,
};
use fleet_charts::ChartCache;
use fleet_objects::backoff::WatchBackoff;
use futures::{FutureExt, StreamExt};
use kube::runtime::controller::{Action, Config as ControllerConfig};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{watcher, Controller};
use kube::{Api, ResourceExt};

/// The field manager of the controller's writes.
pub const FIELD_MANAGER: &str = "fleet-controller";

/// Errors that make a reconcile retry.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused or failed a request.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The bundle's files could not be written back for rendering.
    #[error(transparent)]
    Variant(#[from] variant::VariantError),
    /// A registration could not be completed.
    #[error("registration: {0}")]
    Registration(String),
}

/// What reconciles share.
pub struct Context {
    client: kube::Client,
    charts: ChartCache,
    work_dir: PathBuf,
    placements: Mutex<HashMap<String, u64>>,
    hub: Option<registration::HubAddress>,
    /// The shard handled (`--shard-id`), none for the unsharded controller.
    shard: Option<String>,
    metrics: Arc<metrics::Metrics>,
}

impl Context {
    /// A controller context keeping scratch files and the chart cache under `data_dir`.
    pub fn new(client: kube::Client, data_dir: impl Into<PathBuf>) -> Arc<Self> {
        Self::build(client, data_dir.into(), None, None)
    }

    /// A context for the shard `shard` (Fleet's `--shard-id`): it places only the Bundles
    /// labelled `fleet.cattle.io/shard-ref` with it, and leaves Clusters and registration
    /// to the unsharded controller.
    pub fn sharded(client: kube::Client, data_dir: impl Into<PathBuf>, shard: &str) -> Arc<Self> {
        Self::build(client, data_dir.into(), None, Some(shard.to_string()))
    }

    /// A context that also accepts cluster registrations, handing agents kubeconfigs for
    /// the hub at `hub`.
    pub fn registering(
        client: kube::Client,
        data_dir: impl Into<PathBuf>,
        hub: registration::HubAddress,
    ) -> Arc<Self> {
        Self::build(client, data_dir.into(), Some(hub), None)
    }

    fn build(
        client: kube::Client,
        data_dir: PathBuf,
        hub: Option<registration::HubAddress>,
        shard: Option<String>,
    ) -> Arc<Self> {
        Arc::new(Self {
            client,
            charts: ChartCache::new(data_dir.join("charts")),
            work_dir: data_dir.join("work"),
            placements: Mutex::default(),
            hub,
            shard,
            metrics: Arc::default(),
        })
    }

    /// The reconcile counters, for `/metrics`.
    pub fn metrics(&self) -> Arc<metrics::Metrics> {
        self.metrics.clone()
    }

    /// The placement fingerprint a bundle was last deployed at.
    fn placed(&self, key: &str) -> Option<u64> {
        self.placements.lock().ok()?.get(key).copied()
    }

    fn remember_placement(&self, key: &str, fingerprint: u64) {
        if let Ok(mut placements) = self.placements.lock() {
            placements.insert(key.to_string(), fingerprint);
        }
    }
}

/// Runs the controllers until `shutdown` resolves: Bundles are reconciled when they, the
/// Clusters or ClusterGroups of their namespace, or their BundleDeployments change;
/// Clusters (and the groups of their namespace) when they or their deployments change.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let shutdown = shutdown.shared();
    if ctx.shard.is_some() {
        return run_bundles(ctx, shutdown).await;
    }
    futures::join!(
        run_bundles(ctx.clone(), shutdown.clone()),
        run_clusters(ctx.clone(), shutdown.clone()),
        run_registration(ctx, shutdown)
    );
}

/// `ObjectRef`s of every object of `store` in `namespace`.
fn all_in<K>(
    store: &kube::runtime::reflector::Store<K>,
    namespace: Option<String>,
) -> Vec<ObjectRef<K>>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    store
        .state()
        .iter()
        .filter(|o| o.namespace() == namespace)
        .map(|o| ObjectRef::from_obj(&**o))
        .collect()
}

/// The bundles of `object`'s namespace whose `downstreamResources` (their own or a
/// target's) name it.
fn naming<K: kube::Resource>(
    store: &kube::runtime::reflector::Store<Bundle>,
    kind: &str,
    object: &K,
) -> Vec<ObjectRef<Bundle>> {
    let namespace = object.namespace();
    let name = object.name_any();
    store
        .state()
        .iter()
        .filter(|bundle| bundle.namespace() == namespace)
        .filter(|bundle| {
            placement::every_options(bundle)
                .flat_map(|options| options.downstream_resources.iter())
                .any(|r| r.kind == kind && r.name == name)
        })
        .map(|bundle| ObjectRef::from_obj(&**bundle))
        .collect()
}

fn label_ref<K: kube::Resource<DynamicType = ()>>(
    deployment: &BundleDeployment,
    name: &str,
    namespace: &str,
) -> Option<ObjectRef<K>> {
    let labels = deployment.labels();
    Some(ObjectRef::<K>::new(labels.get(name)?).within(labels.get(namespace)?))
}

fn retry<K: kube::Resource<DynamicType = ()>>(
    object: Arc<K>,
    error: &Error,
    _: Arc<Context>,
) -> Action {
    tracing::warn!(object = %object.name_any(), %error, "reconcile failed");
    // The API server failing is usually a restart, over in a moment; anything else will
    // not mend itself as fast.
    let wait = match error {
        Error::Kube(_) => Duration::from_secs(1),
        _ => Duration::from_secs(5),
    };
    Action::requeue(wait)
}

/// Counts each finished reconcile of `what`, well or not, for `/metrics`.
fn counted<T, E>(
    metrics: &Arc<metrics::Metrics>,
    what: metrics::Loop,
) -> impl FnMut(Result<T, E>) -> futures::future::Ready<()> {
    let metrics = metrics.clone();
    move |result| {
        metrics.reconciled(what, result.is_ok());
        futures::future::ready(())
    }
}

async fn run_bundles(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let shard = fleet_objects::selector::shard(ctx.shard.as_deref());
    let controller = Controller::new(
        Api::<Bundle>::all(ctx.client.clone()),
        watcher::Config::default().labels(&shard),
    );
    let counters = ctx.metrics();
    let store = controller.store();
    let for_groups = store.clone();
    let for_policies = store.clone();
    let for_secrets = store.clone();
    let for_config_maps = store.clone();
    controller
        .watches(
            Api::<Cluster>::all(ctx.client.clone()),
            watcher::Config::default(),
            move |cluster| all_in(&store, cluster.namespace()),
        )
        .watches(
            Api::<ClusterGroup>::all(ctx.client.clone()),
            watcher::Config::default(),
            move |group| all_in(&for_groups, group.namespace()),
        )
        .watches(
            Api::<fleet_api::Policy>::all(ctx.client.clone()),
            watcher::Config::default(),
            move |policy| all_in(&for_policies, policy.namespace()),
        )
        // A Secret or ConfigMap named in downstreamResources changed: its bundles redeploy.
        .watches(
            Api::<k8s_openapi::api::core::v1::Secret>::all(ctx.client.clone()),
            watcher::Config::default(),
            move |secret| naming(&for_secrets, "Secret", &secret),
        )
        .watches(
            Api::<k8s_openapi::api::core::v1::ConfigMap>::all(ctx.client.clone()),
            watcher::Config::default(),
            move |config_map| naming(&for_config_maps, "ConfigMap", &config_map),
        )
        .watches(
            Api::<BundleDeployment>::all(ctx.client.clone()),
            watcher::Config::default().labels(&format!("{},{shard}", labels::BUNDLE_NAME_LABEL)),
            |deployment| {
                label_ref(
                    &deployment,
                    labels::BUNDLE_NAME_LABEL,
                    labels::BUNDLE_NAMESPACE_LABEL,
                )
            },
        )
        // Agents' reports arrive in bursts (one per cluster): one reconcile counts them all.
        .with_config(
            ControllerConfig::default()
                .concurrency(16)
                .debounce(Duration::from_millis(500)),
        )
        .trigger_backoff(WatchBackoff::default())
        .graceful_shutdown_on(shutdown)
        .run(
            |bundle, ctx| async move {
                reconcile::bundle(bundle, &ctx).await?;
                Ok::<_, Error>(Action::await_change())
            },
            retry,
            ctx,
        )
        .for_each(counted(&counters, metrics::Loop::Bundles))
        .await;
}

async fn run_clusters(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let controller = Controller::new(
        Api::<Cluster>::all(ctx.client.clone()),
        watcher::Config::default(),
    );
    let counters = ctx.metrics();
    let store = controller.store();
    controller
        .watches(
            Api::<ClusterGroup>::all(ctx.client.clone()),
            watcher::Config::default(),
            move |group| all_in(&store, group.namespace()),
        )
        .watches(
            Api::<BundleDeployment>::all(ctx.client.clone()),
            watcher::Config::default().labels(labels::CLUSTER_LABEL),
            |deployment| {
                label_ref(
                    &deployment,
                    labels::CLUSTER_LABEL,
                    labels::CLUSTER_NAMESPACE_LABEL,
                )
            },
        )
        .with_config(
            ControllerConfig::default()
                .concurrency(8)
                .debounce(Duration::from_millis(500)),
        )
        .trigger_backoff(WatchBackoff::default())
        .graceful_shutdown_on(shutdown)
        .run(
            |cluster, ctx| async move {
                let revoking = cluster.metadata.deletion_timestamp.is_some()
                    && cluster
                        .finalizers()
                        .iter()
                        .any(|f| f == registration::CREDENTIAL_FINALIZER);
                if revoking {
                    registration::revoke(&cluster, &ctx).await?;
                } else {
                    clusters::cluster(cluster, &ctx).await?;
                }
                Ok::<_, Error>(Action::await_change())
            },
            retry,
            ctx,
        )
        .for_each(counted(&counters, metrics::Loop::Clusters))
        .await;
}

async fn run_registration(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Clone + Send + Sync + 'static,
) {
    let counters = ctx.metrics();
    let tokens = Controller::new(
        Api::<ClusterRegistrationToken>::all(ctx.client.clone()),
        watcher::Config::default(),
    )
    .trigger_backoff(WatchBackoff::default())
    .graceful_shutdown_on(shutdown.clone())
    .run(
        |token, ctx| async move { registration::token(token, &ctx).await },
        retry,
        ctx.clone(),
    )
    .for_each(counted(&counters, metrics::Loop::Tokens));
    let registrations = Controller::new(
        Api::<ClusterRegistration>::all(ctx.client.clone()),
        watcher::Config::default(),
    )
    .trigger_backoff(WatchBackoff::default())
    .graceful_shutdown_on(shutdown)
    .run(
        |request, ctx| async move {
            registration::registration(request, &ctx).await?;
            Ok::<_, Error>(Action::await_change())
        },
        retry,
        ctx,
    )
    .for_each(counted(&counters, metrics::Loop::Registrations));
    futures::join!(tokens, registrations);
}
