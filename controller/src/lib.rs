//! The targeting controller (`fleet controller`): every Bundle goes to the Clusters its
//! targets select, as one BundleDeployment per cluster in that cluster's namespace. A
//! BundleDeployment names its variant by content id; the rendered resources are stored
//! once per id as a Content object, however many clusters deploy them. Bundle status counts
//! the deployments' states.

pub mod placement;
pub mod reconcile;
pub mod variant;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fleet_api::{Bundle, BundleDeployment, Cluster, ClusterGroup};
use fleet_gitjob::charts::ChartCache;
use futures::StreamExt;
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
}

/// What reconciles share.
pub struct Context {
    client: kube::Client,
    charts: ChartCache,
    work_dir: PathBuf,
}

impl Context {
    /// A controller context keeping scratch files and the chart cache under `data_dir`.
    pub fn new(client: kube::Client, data_dir: impl Into<PathBuf>) -> Arc<Self> {
        let data_dir = data_dir.into();
        Arc::new(Self {
            client,
            charts: ChartCache::new(data_dir.join("charts")),
            work_dir: data_dir.join("work"),
        })
    }
}

/// Runs the controller until `shutdown` resolves: Bundles are reconciled when they, the
/// Clusters or ClusterGroups of their namespace, or their BundleDeployments change.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let bundles: Api<Bundle> = Api::all(ctx.client.clone());
    let controller = Controller::new(bundles, watcher::Config::default());
    let store = controller.store();
    let in_namespace = move |namespace: Option<String>| {
        store
            .state()
            .iter()
            .filter(|b| b.namespace() == namespace)
            .map(|b| ObjectRef::from_obj(&**b))
            .collect::<Vec<_>>()
    };
    let for_groups = in_namespace.clone();
    controller
        .watches(
            Api::<Cluster>::all(ctx.client.clone()),
            watcher::Config::default(),
            move |cluster| in_namespace(cluster.namespace()),
        )
        .watches(
            Api::<ClusterGroup>::all(ctx.client.clone()),
            watcher::Config::default(),
            move |group| for_groups(group.namespace()),
        )
        .watches(
            Api::<BundleDeployment>::all(ctx.client.clone()),
            watcher::Config::default().labels(reconcile::BUNDLE_NAME_LABEL),
            |deployment| {
                let labels = deployment.labels();
                let name = labels.get(reconcile::BUNDLE_NAME_LABEL)?;
                let namespace = labels.get(reconcile::BUNDLE_NAMESPACE_LABEL)?;
                Some(ObjectRef::<Bundle>::new(name).within(namespace))
            },
        )
        .with_config(ControllerConfig::default().concurrency(16))
        .graceful_shutdown_on(shutdown)
        .run(
            |bundle, ctx| async move {
                reconcile::bundle(bundle, &ctx).await?;
                Ok::<_, Error>(Action::await_change())
            },
            |bundle, error, _| {
                tracing::warn!(bundle = %bundle.name_any(), %error, "reconcile failed");
                Action::requeue(Duration::from_secs(5))
            },
            ctx,
        )
        .for_each(|_| async {})
        .await;
}
