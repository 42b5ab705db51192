//! The targeting controller (`fleet controller`): every Bundle goes to the Clusters its
//! targets select, as one BundleDeployment per cluster in that cluster's namespace. A
//! BundleDeployment names its variant by content id; the rendered resources are stored
//! once per id as a Content object, however many clusters deploy them. Bundle status counts
//! the deployments' states.

pub mod caches;
pub mod clusters;
pub mod downstream;
pub mod mapping;
pub mod metrics;
pub mod pacing;
pub mod placement;
pub mod preview;
pub mod purge;
pub mod reconcile;
pub mod referenced;
pub mod registration;
pub mod rollout;
pub mod schedules;
pub mod state_metrics;
pub mod variant;
pub mod watches;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleet_api::labels;
use fleet_api::{
    Bundle, BundleDeployment, BundleNamespaceMapping, Cluster, ClusterGroup, ClusterRegistration,
    ClusterRegistrationToken, GitRepoRestriction, Policy,
};
use fleet_charts::ChartCache;
use fleet_objects::backoff::WatchBackoff;
use futures::channel::mpsc;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::runtime::controller::{Action, Config as ControllerConfig, Error as ControllerError};
use kube::runtime::reflector::{ObjectRef, Store};

use caches::Caches;
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
    /// A reconcile's task ended without finishing (it panicked or was stopped).
    #[error("reconcile task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// What reconciles share.
pub struct Context {
    client: kube::Client,
    charts: ChartCache,
    work_dir: PathBuf,
    placements: Mutex<HashMap<String, u64>>,
    /// The cluster namespaces this process made sure of: the bundles deploying to a
    /// cluster for the first time need not ask again each.
    namespaces: Mutex<HashSet<String>>,
    options: Options,
    metrics: Arc<metrics::Metrics>,
}

/// How often Contents nobody deploys are looked for, by default.
pub const PURGE_EVERY: Duration = Duration::from_secs(30);

/// How long the charts of one Bundle may render, for all its clusters, in one reconcile, by
/// default.
pub const RENDER_BUDGET: Duration = Duration::from_secs(120);

/// How long an agent may go without reporting before its cluster is offline, by default:
/// agents report every 30 seconds, so this is four reports missed.
pub const OFFLINE_AFTER: Duration = Duration::from_secs(120);

/// How a controller runs, beside its client and data directory.
#[derive(Clone, Debug)]
pub struct Options {
    /// Accept cluster registrations, handing agents kubeconfigs for the hub at this
    /// address; none serves no registrations.
    pub hub: Option<registration::HubAddress>,
    /// The shard placed (Fleet's `--shard-id`): only the Bundles labelled
    /// `fleet.cattle.io/shard-ref` with it, leaving Clusters and registration to the
    /// unsharded controller. None is the unsharded controller.
    pub shard: Option<String>,
    /// How often Contents nobody deploys are looked for (and how long one must stay so
    /// before it is deleted).
    pub purge_every: Duration,
    /// Refuse (delete) every ClusterRegistrationToken without a TTL, as Fleet does with
    /// `controller.registrationTokenTTL.required`.
    pub require_token_ttl: bool,
    /// Where remote charts may be fetched from (a Bundle's author names the URLs).
    pub egress: fleet_charts::Egress,
    /// How long one Bundle's charts may render for all its clusters in one reconcile;
    /// the clusters left once it is spent are not rendered and their failure says why.
    pub render_budget: Duration,
    /// How long a registered cluster's agent may go without reporting before the cluster,
    /// and the bundles deployed to it, say it is offline.
    pub offline_after: Duration,
}

impl Default for Options {
    /// Unsharded, no registrations, charts fetched from anywhere.
    fn default() -> Self {
        Self {
            hub: None,
            shard: None,
            purge_every: PURGE_EVERY,
            require_token_ttl: false,
            egress: fleet_charts::Egress::Anywhere,
            render_budget: RENDER_BUDGET,
            offline_after: OFFLINE_AFTER,
        }
    }
}

impl Context {
    /// A controller context keeping scratch files and the chart cache under `data_dir`,
    /// with the default [`Options`].
    pub fn new(client: kube::Client, data_dir: impl Into<PathBuf>) -> Arc<Self> {
        Self::with_options(client, data_dir, Options::default())
    }

    /// A context that also accepts cluster registrations, handing agents kubeconfigs for
    /// the hub at `hub`.
    pub fn registering(
        client: kube::Client,
        data_dir: impl Into<PathBuf>,
        hub: registration::HubAddress,
    ) -> Arc<Self> {
        let options = Options {
            hub: Some(hub),
            ..Options::default()
        };
        Self::with_options(client, data_dir, options)
    }

    /// A context for the shard `shard` (see [`Options::shard`]).
    pub fn sharded(client: kube::Client, data_dir: impl Into<PathBuf>, shard: &str) -> Arc<Self> {
        let options = Options {
            shard: Some(shard.to_string()),
            ..Options::default()
        };
        Self::with_options(client, data_dir, options)
    }

    /// A controller context keeping scratch files and the chart cache under `data_dir`,
    /// running as `options` say.
    pub fn with_options(
        client: kube::Client,
        data_dir: impl Into<PathBuf>,
        options: Options,
    ) -> Arc<Self> {
        let data_dir = data_dir.into();
        Arc::new(Self {
            // Nothing here reads managedFields.
            client: fleet_objects::client::omitting_managed_fields(&client),
            charts: ChartCache::new(data_dir.join("charts")).with_egress(options.egress),
            work_dir: data_dir.join("work"),
            placements: Mutex::default(),
            namespaces: Mutex::default(),
            options,
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

    /// Forgets every placement: each bundle's next pass writes what it must again.
    fn forget_placements(&self) {
        if let Ok(mut placements) = self.placements.lock() {
            placements.clear();
        }
    }

    fn forget_placement(&self, key: &str) {
        if let Ok(mut placements) = self.placements.lock() {
            placements.remove(key);
        }
    }

    fn remember_placement(&self, key: &str, fingerprint: u64) {
        if let Ok(mut placements) = self.placements.lock() {
            placements.insert(key.to_string(), fingerprint);
        }
    }

    /// Makes sure the namespace `name` exists, unless this process already did.
    pub(crate) async fn ensure_namespace(&self, name: &str) -> Result<(), kube::Error> {
        let known = self
            .namespaces
            .lock()
            .is_ok_and(|known| known.contains(name));
        if known {
            return Ok(());
        }
        fleet_objects::client::ensure_namespace(&self.client, name, FIELD_MANAGER).await?;
        if let Ok(mut known) = self.namespaces.lock() {
            known.insert(name.to_string());
        }
        Ok(())
    }

    /// Forgets that the namespace `name` exists: a write there failed, maybe because it
    /// was deleted.
    fn forget_namespace(&self, name: &str) {
        if let Ok(mut known) = self.namespaces.lock() {
            known.remove(name);
        }
    }
}

/// Runs the controllers until `shutdown` resolves: Bundles are reconciled when they, the
/// Clusters, ClusterGroups or Policies of their namespace, the Secrets and ConfigMaps they
/// copy downstream, or their BundleDeployments change; Clusters (and the groups of their
/// namespace) when they, those groups or their deployments change. Each kind is watched
/// once, and the reconciles read it from that watch's cache.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let shutdown = shutdown.shared();
    let sharded = ctx.options.shard.is_some();
    let (bundle_queue, bundle_requests) = mpsc::unbounded();
    let (cluster_queue, cluster_requests) = mpsc::unbounded();
    let client = &ctx.client;
    let shard = fleet_objects::selector::shard(ctx.options.shard.as_deref());
    let own_shard = ctx.options.shard.clone();

    let (bundles, bundles_watch) = watches::watch::<Bundle>(
        client,
        watcher::Config::default().labels(&shard),
        |_| Vec::new(),
        vec![watches::route(&bundle_queue, |bundle: &Bundle| {
            Some(ObjectRef::from_obj(bundle))
        })],
    )
    .await;
    // A mapping changed: the bundles of its namespace may target other clusters.
    let (mappings, mappings_watch) =
        watch_for_bundles::<BundleNamespaceMapping>(client, &bundle_queue, &bundles).await;
    // A namespace's labels changed: mappings may select it, or no longer.
    let (namespaces, namespaces_watch) = watches::watch::<Namespace>(
        client,
        watcher::Config::default(),
        caches::all,
        vec![watches::route(
            &bundle_queue,
            in_mapping_namespaces(mappings.store(), bundles.store()),
        )],
    )
    .await;
    let mut routes = to_placing_bundles(&bundle_queue, &bundles, &mappings);
    if !sharded {
        routes.push(watches::route(&cluster_queue, |cluster: &Cluster| {
            Some(ObjectRef::from_obj(cluster))
        }));
    }
    let (clusters, clusters_watch) = watches::watch::<Cluster>(
        client,
        watcher::Config::default(),
        caches::by_namespace,
        routes,
    )
    .await;
    let mut routes = to_placing_bundles(&bundle_queue, &bundles, &mappings);
    if !sharded {
        routes.push(watches::route(
            &cluster_queue,
            in_namespace(clusters.store()),
        ));
    }
    let (groups, groups_watch) = watches::watch::<ClusterGroup>(
        client,
        watcher::Config::default(),
        caches::by_namespace,
        routes,
    )
    .await;
    let (policies, policies_watch) =
        watch_for_bundles::<Policy>(client, &bundle_queue, &bundles).await;
    let (restrictions, restrictions_watch) =
        watch_for_bundles::<GitRepoRestriction>(client, &bundle_queue, &bundles).await;
    let mut routes = vec![watches::route(
        &bundle_queue,
        move |deployment: &BundleDeployment| {
            let of_shard = deployment.labels().get(labels::SHARD_LABEL) == own_shard.as_ref();
            of_shard
                .then(|| {
                    label_ref(
                        deployment,
                        labels::BUNDLE_NAME_LABEL,
                        labels::BUNDLE_NAMESPACE_LABEL,
                    )
                })
                .flatten()
        },
    )];
    if !sharded {
        routes.push(watches::route(
            &cluster_queue,
            |deployment: &BundleDeployment| {
                label_ref(
                    deployment,
                    labels::CLUSTER_LABEL,
                    labels::CLUSTER_NAMESPACE_LABEL,
                )
            },
        ));
    }
    let deployments_selected = match &ctx.options.shard {
        Some(_) => format!("{},{shard}", labels::BUNDLE_NAME_LABEL),
        None => labels::BUNDLE_NAME_LABEL.to_string(),
    };
    let (deployments, deployments_watch) = watches::watch::<BundleDeployment>(
        client,
        watcher::Config::default().labels(&deployments_selected),
        caches::deployment_keys,
        routes,
    )
    .await;
    // A Secret or ConfigMap named in downstreamResources changed: its bundles redeploy.
    let referenced_watch = tokio::spawn(referenced::run(
        client.clone(),
        bundles.store(),
        bundle_queue.clone(),
        shutdown.clone(),
    ));
    let watch_tasks = [
        bundles_watch,
        clusters_watch,
        groups_watch,
        policies_watch,
        restrictions_watch,
        mappings_watch,
        namespaces_watch,
        deployments_watch,
        referenced_watch,
    ];

    let metrics = ctx.metrics();
    metrics.observe(state_metrics::Sources {
        bundles: bundles.store(),
        deployments: deployments.clone(),
        clusters: (!sharded).then(|| (clusters.clone(), groups.clone())),
    });
    let named_contents = deployments.clone();
    let running = Arc::new(Running {
        ctx: ctx.clone(),
        caches: Caches::new(
            clusters.clone(),
            groups,
            policies,
            restrictions,
            mappings,
            namespaces,
            deployments,
        ),
        pacer: pacing::Pacer::new(clusters::STATUS_INTERVAL),
    });
    let counters = ctx.metrics();
    // Agents' reports arrive in bursts (one per cluster): one reconcile counts them all.
    let bundle_loop = reconciles(
        bundles.store(),
        bundle_requests,
        ControllerConfig::default()
            .concurrency(16)
            .debounce(Duration::from_millis(500)),
        running.clone(),
        shutdown.clone(),
        |bundle, running| async move {
            reconcile::bundle(bundle, &running.ctx, &running.caches).await?;
            Ok(Action::await_change())
        },
    )
    .for_each(counted(&counters, metrics::Loop::Bundles));
    if sharded {
        bundle_loop.await;
    } else {
        let flushing = running.clone();
        let scheduling = running.clone();
        let (schedule_client, schedule_stop) = (ctx.client.clone(), shutdown.clone());
        let schedules = async {
            schedules::run(
                schedule_client,
                clusters.store(),
                &scheduling.caches,
                schedule_stop,
            )
            .await;
        };
        let cluster_loop = reconciles(
            clusters.store(),
            cluster_requests,
            ControllerConfig::default()
                .concurrency(8)
                .debounce(Duration::from_millis(500)),
            running,
            shutdown.clone(),
            |cluster, running| async move {
                let revoking = cluster.metadata.deletion_timestamp.is_some()
                    && cluster
                        .finalizers()
                        .iter()
                        .any(|f| f == registration::CREDENTIAL_FINALIZER);
                if revoking {
                    registration::revoke(&cluster, &running.ctx).await?;
                    Ok(Action::await_change())
                } else {
                    clusters::cluster(cluster, &running.ctx, &running.caches, &running.pacer).await
                }
            },
        )
        .for_each(counted(&counters, metrics::Loop::Clusters));
        let purging = purge::run(
            ctx.clone(),
            named_contents,
            ctx.options.purge_every,
            shutdown.clone(),
        );
        futures::join!(
            bundle_loop,
            cluster_loop,
            run_registration(ctx, shutdown),
            purging,
            schedules
        );
        flush_cluster_statuses(&flushing, clusters.store().state()).await;
    }
    for task in watch_tasks {
        task.abort();
    }
    metrics.forget();
}

/// How long stopping may spend writing the statuses still waiting for their pace.
const FLUSH_PATIENCE: Duration = Duration::from_secs(10);

/// Writes the Cluster and group statuses still waiting for their pace, giving up after
/// [`FLUSH_PATIENCE`].
async fn flush_cluster_statuses(running: &Running, clusters: Vec<Arc<Cluster>>) {
    let flush = clusters::flush_waiting(&running.ctx, &running.caches, &running.pacer, &clusters);
    if tokio::time::timeout(FLUSH_PATIENCE, flush).await.is_err() {
        tracing::warn!("stopped before every waiting cluster status was written");
    }
}

/// What reconciles share once running: the context, the watches' caches and the pace of
/// status writes.
struct Running {
    ctx: Arc<Context>,
    caches: Caches,
    pacer: pacing::Pacer,
}

/// Reconciles of `K` (read from `store`) for the requests `requests` brings, until
/// `shutdown`; each runs on its own task.
fn reconciles<K, Fut>(
    store: Store<K>,
    requests: mpsc::UnboundedReceiver<ObjectRef<K>>,
    config: ControllerConfig,
    running: Arc<Running>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    reconcile: impl Fn(Arc<K>, Arc<Running>) -> Fut,
) -> impl futures::Stream<
    Item = Result<(ObjectRef<K>, Action), ControllerError<Error, std::convert::Infallible>>,
>
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Action, Error>> + Send + 'static,
{
    kube::runtime::applier(
        move |object, running| {
            let reconciled = reconcile(object, running);
            fleet_objects::task::Task::spawn(reconciled)
        },
        retry,
        running,
        store,
        requests
            .map(Ok::<_, std::convert::Infallible>)
            .take_until(shutdown),
        config,
    )
}

/// Every object of `store` in the namespace of the object given.
fn in_namespace<K, R>(store: Store<R>) -> impl Fn(&K) -> Vec<ObjectRef<R>> + Send + Sync
where
    K: kube::Resource,
    R: kube::Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    move |object| all_in(&store, object.namespace())
}

/// Routes of a Cluster or ClusterGroup change: the bundles of its namespace, and those of
/// every namespace a mapping may send to it.
fn to_placing_bundles<K: watches::Watched>(
    bundle_queue: &mpsc::UnboundedSender<ObjectRef<Bundle>>,
    bundles: &watches::Cache<Bundle>,
    mappings: &watches::Cache<BundleNamespaceMapping>,
) -> Vec<watches::Route<K>> {
    vec![
        watches::route(bundle_queue, in_namespace(bundles.store())),
        watches::route(
            bundle_queue,
            in_mapping_namespaces(mappings.store(), bundles.store()),
        ),
    ]
}

/// Watches a kind the bundles of its namespace read (Policies, restrictions, mappings),
/// cached by namespace: a change reconciles those bundles.
async fn watch_for_bundles<K: watches::Watched>(
    client: &kube::Client,
    bundle_queue: &mpsc::UnboundedSender<ObjectRef<Bundle>>,
    bundles: &watches::Cache<Bundle>,
) -> (Arc<watches::Cache<K>>, tokio::task::JoinHandle<()>) {
    watches::watch::<K>(
        client,
        watcher::Config::default(),
        caches::by_namespace,
        vec![watches::route(bundle_queue, in_namespace(bundles.store()))],
    )
    .await
}

/// Every Bundle of a namespace holding a BundleNamespaceMapping: what a change to a
/// Namespace, or to a Cluster or ClusterGroup in any namespace, may retarget (more than
/// that, at times; a reconcile with nothing new to place stops early).
fn in_mapping_namespaces<K>(
    mappings: Store<BundleNamespaceMapping>,
    bundles: Store<Bundle>,
) -> impl Fn(&K) -> Vec<ObjectRef<Bundle>> + Send + Sync {
    move |_| {
        let namespaces: HashSet<Option<String>> =
            mappings.state().iter().map(|m| m.namespace()).collect();
        namespaces
            .into_iter()
            .flat_map(|namespace| all_in(&bundles, namespace))
            .collect()
    }
}

/// `ObjectRef`s of every object of `store` in `namespace`.
fn all_in<K>(store: &Store<K>, namespace: Option<String>) -> Vec<ObjectRef<K>>
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
pub(crate) fn naming<K: kube::Resource>(
    store: &Store<Bundle>,
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

fn retry<K: kube::Resource<DynamicType = ()>, C>(
    object: Arc<K>,
    error: &Error,
    _: Arc<C>,
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
