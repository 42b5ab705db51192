//! The agent (`fleet-agent`, or `fleet agent`): runs beside (or in) one downstream cluster,
//! dials out to the hub, watches the BundleDeployments in its cluster's namespace there,
//! applies each one's Content to its own cluster and reports back. The hub never holds the
//! downstream cluster's credentials.
//!
//! It depends on the Fleet types, the shared object plumbing and the pure renderer (for the
//! Helm bundles that must be rendered in the member cluster, as Fleet's agent renders
//! them): no Git, no chart or remote fetching, no controller.

pub mod apply;
pub mod command;
pub mod contents;
pub mod deploy;
pub mod downstream;
pub mod drift;
pub mod helm;
pub mod hooks;
pub mod impersonate;
pub mod member_render;
pub mod objectset;
pub mod own_writes;
pub mod push;
pub mod readiness;
pub mod recent;
pub mod record_encoding;
pub mod register;
pub mod release;
pub mod served;
pub mod status_budget;
pub mod triggers;
pub mod uninstall;

use std::sync::Arc;
use std::time::Duration;

use fleet_api::BundleDeployment;
use futures::{StreamExt, TryStreamExt};
use kube::runtime::controller::{Action, Config as ControllerConfig};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};

/// What the agent's cluster serves of each kind, as it was found.
type Kinds = std::collections::HashMap<
    kube::api::GroupVersionKind,
    (
        kube::discovery::ApiResource,
        kube::discovery::ApiCapabilities,
    ),
>;

/// Errors that make a deployment retry.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The hub or the agent's cluster refused or failed a request.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The Content could not be read.
    #[error(transparent)]
    Content(#[from] fleet_api::ContentError),
    /// A resource is not something the cluster can take.
    #[error("{0}")]
    Invalid(String),
    /// An object exists that the bundle does not own.
    #[error("{0}")]
    NotOwned(String),
    /// A chart hook failed or did not finish.
    #[error("hook failed: {0}")]
    Hook(String),
    /// The resources were not ready within `helm.timeoutSeconds`.
    #[error("{0}")]
    Timeout(String),
    /// A bundle rendered in the member cluster failed to render.
    #[error("{0}")]
    Render(String),
    /// An `atomic` release failed and was undone.
    #[error("{0}")]
    Atomic(String),
    /// A reconcile of a deployment stopped before it finished (it panicked, or the agent is
    /// stopping).
    #[error("stopped unfinished: {0}")]
    Stopped(#[from] tokio::task::JoinError),
}

impl Error {
    /// The reason a failed deployment's `Deployed` condition gives, telling a failed hook
    /// apart from a failed apply.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Hook(_) => "HookFailed",
            Error::Timeout(_) => "Timeout",
            Error::Render(_) => "RenderFailed",
            Error::Atomic(_) => "RolledBack",
            Error::NotOwned(_) => "NotOwned",
            Error::Kube(_) | Error::Content(_) | Error::Invalid(_) | Error::Stopped(_) => {
                "ApplyFailed"
            }
        }
    }
}

/// The agent of one cluster.
#[derive(Clone)]
pub struct Agent {
    hub: kube::Client,
    local: kube::Client,
    namespace: String,
    system_namespace: String,
    /// Whether the agent creates (and labels) the namespaces a deployment needs; a Policy
    /// that requires service accounts turns it off unless it allows namespace creation.
    creates_namespaces: bool,
    resync: Duration,
    /// The API resource and capabilities of each kind resolved so far.
    kinds: Arc<std::sync::Mutex<Kinds>>,
    /// Everything the cluster serves, for bundles rendered here (found once they need it).
    discovery: Arc<tokio::sync::Mutex<served::Found>>,
    /// Deployments whose `atomic` release failed and was undone, with the deployment id
    /// that failed: it is not tried again (that would undo and redo it over and over)
    /// until a new one comes.
    rolled_back: Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>,
    /// Each deployment's last status written by this agent, until its watch event is
    /// recognised.
    own_writes: Arc<own_writes::OwnWrites>,
    /// The Contents read so far, unpacked.
    contents: Arc<contents::ContentCache>,
    /// Which service accounts were found in the system namespace, and when.
    accounts: Arc<recent::Recent<bool>>,
    /// The namespaces found or made in the cluster, and when.
    namespaces: Arc<recent::Recent<()>>,
    /// The schema of each custom kind (by `group/version/kind`), `None` for a kind no CRD
    /// defines, and when it was read.
    schemas: Arc<recent::Recent<Option<Arc<fleet_objects::schema::Schema>>>>,
    /// The watches on what the agent deployed, which bring reconciles when it changes.
    triggers: Arc<triggers::Triggers>,
}

impl Agent {
    /// An agent reading BundleDeployments from `namespace` on the hub (`hub`) and applying
    /// them to its own cluster (`local`). It reconciles a deployment again at once when one
    /// of its objects changes (the agent's own applies aside: see [`triggers`]), and every
    /// `resync` besides (every 5 s while one is not ready). Service accounts bundles name
    /// are looked up in [`impersonate::SYSTEM_NAMESPACE`]. The agent never reads
    /// managedFields: clients that ask to go without them
    /// ([`fleet_objects::client::omitting_managed_fields`]) spare it decoding them.
    pub fn new(
        hub: kube::Client,
        local: kube::Client,
        namespace: &str,
        resync: Duration,
    ) -> Arc<Self> {
        Self::with_system_namespace(hub, local, namespace, impersonate::SYSTEM_NAMESPACE, resync)
    }

    /// [`Agent::new`], looking service accounts up in `system_namespace` of its cluster.
    pub fn with_system_namespace(
        hub: kube::Client,
        local: kube::Client,
        namespace: &str,
        system_namespace: &str,
        resync: Duration,
    ) -> Arc<Self> {
        Arc::new(Self {
            hub,
            local: local.clone(),
            namespace: namespace.to_string(),
            system_namespace: system_namespace.to_string(),
            creates_namespaces: true,
            resync,
            kinds: Arc::default(),
            discovery: Arc::default(),
            rolled_back: Arc::default(),
            own_writes: Arc::default(),
            contents: Arc::default(),
            accounts: Arc::default(),
            namespaces: Arc::default(),
            schemas: Arc::default(),
            triggers: Arc::new(triggers::Triggers::new(local, namespace)),
        })
    }

    /// This agent keeping the Contents it reads in `contents`, which other agents of the
    /// process may share (a Content never changes, whoever reads it).
    pub fn sharing_contents(self: Arc<Self>, contents: Arc<contents::ContentCache>) -> Arc<Self> {
        Arc::new(Self {
            contents,
            ..Arc::unwrap_or_clone(self)
        })
    }

    /// This agent as it works for `deployment`, sharing its memory: acting in its cluster
    /// as `user` (impersonated) when one is given, and creating namespaces only when the
    /// deployment does not say otherwise.
    fn for_deployment(
        &self,
        deployment: &BundleDeployment,
        user: Option<&str>,
    ) -> Result<Self, Error> {
        let local = match user {
            Some(user) => impersonate::impersonating(&self.local, user)?,
            None => self.local.clone(),
        };
        let creation = deployment
            .annotations()
            .get(fleet_api::labels::NAMESPACE_CREATION_ANNOTATION);
        Ok(Self {
            local,
            creates_namespaces: creation.map(String::as_str)
                != Some(fleet_api::labels::NAMESPACE_CREATION_DISABLED),
            ..self.clone()
        })
    }

    /// Makes sure `namespace` exists in the agent's cluster, unless namespaces are not to
    /// be created (then a missing one fails what needs it, as with Helm's
    /// `--create-namespace` off). One found or made under [`recent::RECHECK`] ago is taken
    /// to exist still.
    pub(crate) async fn ensure_namespace(&self, namespace: &str) -> Result<(), kube::Error> {
        if !self.creates_namespaces || self.namespaces.get(namespace, recent::RECHECK).is_some() {
            return Ok(());
        }
        fleet_objects::client::ensure_namespace(&self.local, namespace, apply::FIELD_MANAGER)
            .await?;
        self.namespaces.remember(namespace, ());
        Ok(())
    }

    /// Forgets that `namespaces` exist: after a failed apply, in case one was deleted.
    pub(crate) fn forget_namespaces(&self, namespaces: &std::collections::BTreeSet<String>) {
        for namespace in namespaces {
            self.namespaces.forget(namespace);
        }
    }

    /// Makes sure each of `namespaces` exists (see [`Agent::ensure_namespace`]).
    pub(crate) async fn ensure_namespaces(
        &self,
        namespaces: &std::collections::BTreeSet<String>,
    ) -> Result<(), kube::Error> {
        for namespace in namespaces {
            self.ensure_namespace(namespace).await?;
        }
        Ok(())
    }

    /// The deployment id of `deployment` that failed `atomic`ally and was undone, if any.
    fn rolled_back(&self, deployment: &BundleDeployment) -> Option<String> {
        let rolled_back = self.rolled_back.lock().ok()?;
        rolled_back.get(&deployment.name_any()).cloned()
    }

    /// Remembers that `id` of `deployment` failed `atomic`ally and was undone.
    fn remember_rolled_back(&self, deployment: &BundleDeployment, id: &str) {
        if let Ok(mut rolled_back) = self.rolled_back.lock() {
            rolled_back.insert(deployment.name_any(), id.to_string());
        }
    }

    /// Reports the agent alive every `every` in its Cluster's `status.agent.lastSeen`
    /// (`cluster` is `namespace/name`), until the task is dropped.
    pub async fn heartbeat(self: Arc<Self>, cluster: String, every: Duration) {
        let Some((namespace, name)) = cluster.split_once('/') else {
            tracing::warn!(%cluster, "no heartbeat: the cluster is not namespace/name");
            return;
        };
        let api: Api<fleet_api::Cluster> = Api::namespaced(self.hub.clone(), namespace);
        loop {
            let patch = serde_json::json!({"status": {"agent": {
                "lastSeen": jiff::Timestamp::now().to_string(),
                "namespace": self.namespace,
            }}});
            let params = apply::patch_params();
            if let Err(error) = api
                .patch_status(name, &params, &kube::api::Patch::Merge(&patch))
                .await
            {
                tracing::warn!(%error, "heartbeat failed");
            }
            tokio::time::sleep(every).await;
        }
    }

    /// Runs until `shutdown` resolves. The watch on the hub resumes after the hub restarts
    /// (kube-runtime re-lists and re-watches with backoff); a failed deployment retries.
    /// The deployments are kept in memory without their managedFields, which the agent
    /// never reads.
    pub async fn run(
        self: Arc<Self>,
        shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    ) {
        let deployments: Api<BundleDeployment> = Api::namespaced(self.hub.clone(), &self.namespace);
        let (store, writer) = reflector::store();
        let changed = watcher(deployments, watcher::Config::default())
            .modify(fleet_objects::client::without_managed_fields)
            .reflect(writer)
            .applied_objects()
            .try_filter_map({
                let agent = self.clone();
                move |deployment| {
                    // The event of the agent's own status write brings back what its last
                    // reconcile found: no reconcile, unless a change is waiting for one.
                    let own = agent.own_writes.recognise(&deployment);
                    let reconcile = !own || agent.triggers.is_wanted(&deployment.name_any());
                    futures::future::ready(Ok(reconcile.then(|| ObjectRef::from_obj(&deployment))))
                }
            })
            .backoff(fleet_objects::backoff::WatchBackoff::default());
        let triggered = self.triggers.start().map(Ok);
        let requests = futures::stream::select(changed, triggered).take_until(shutdown);
        kube::runtime::applier(
            |deployment, agent| {
                fleet_objects::task::Task::spawn(async move {
                    let reported = deploy::deployment(&agent, &deployment).await?;
                    // Readiness changes without an event on the hub: reconcile again, soon while
                    // not ready (as the reconcile reported it, else as the copy says).
                    let copy = || deployment.status.as_ref().is_some_and(|s| s.ready);
                    let ready = reported.unwrap_or_else(copy);
                    let wait = if ready {
                        agent.resync
                    } else {
                        agent.resync.min(Duration::from_secs(5))
                    };
                    Ok::<_, Error>(Action::requeue(spread(wait)))
                })
            },
            |deployment, error, _| {
                tracing::warn!(deployment = %deployment.name_any(), %error, "apply failed");
                Action::requeue(Duration::from_secs(5))
            },
            self,
            store,
            requests,
            ControllerConfig::default().concurrency(4),
        )
        .for_each(|_| async {})
        .await;
    }
}

/// `wait` lengthened by a random part of up to a tenth, so that the reconciles of many
/// deployments started together (all of a cluster's, all agents after a hub restart) do
/// not keep arriving together.
fn spread(wait: Duration) -> Duration {
    let mut bytes = [0u8; 2];
    let random = getrandom::fill(&mut bytes).map_or(0, |()| u16::from_le_bytes(bytes));
    wait + wait / 10 * u32::from(random) / u32::from(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_wait_is_longer_by_at_most_a_tenth() {
        let wait = Duration::from_secs(60);
        let spread: Vec<Duration> = (0..100).map(|_| spread(wait)).collect();
        assert!(spread.iter().all(|s| *s >= wait && *s <= wait + wait / 10));
        assert!(spread.iter().any(|s| *s != spread[0]), "not random");
    }
}
