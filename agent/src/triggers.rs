//! Reconciles brought by changes. The agent watches, in its cluster, each kind its deployments
//! applied (only the objects labelled as deployed from its namespace on the hub). A change
//! to one of them that the agent did not make itself (a hand edit, a deletion, a workload's
//! status moving) sends that object's deployment for a reconcile at once: drift and readiness
//! need not wait for the resync, which stays only as a safety net.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use fleet_api::labels::{DEPLOYMENT_LABEL, DEPLOYMENT_NAMESPACE_LABEL};
use fleet_api::BundleDeployment;
use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use kube::api::{ApiResource, DynamicObject, PartialObjectMeta};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use serde_json::Value;

/// The watches of one agent and what it is changing itself.
pub struct Triggers {
    local: kube::Client,
    hub_namespace: String,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Where triggered reconciles go while the agent runs.
    sender: Option<mpsc::UnboundedSender<ObjectRef<BundleDeployment>>>,
    /// The kinds watched (`apiVersion/kind`).
    watched: HashSet<String>,
    /// The tasks running those watches.
    tasks: Vec<tokio::task::AbortHandle>,
    /// The objects the agent is applying (`None`) or has applied (the resourceVersion the
    /// apply returned), by [`object_key`]: the watch events of its own writes.
    own: HashMap<String, Option<String>>,
    /// Deployments sent for a reconcile that has not run yet.
    wanted: HashSet<String>,
}

impl Triggers {
    /// Triggers for the agent of `hub_namespace`, watching its cluster through `local`.
    pub fn new(local: kube::Client, hub_namespace: &str) -> Self {
        Self {
            local,
            hub_namespace: hub_namespace.to_string(),
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts sending reconciles to the stream returned; dropping it stops every watch.
    pub fn start(self: &Arc<Self>) -> Reconciles {
        let (sender, receiver) = mpsc::unbounded();
        self.state().sender = Some(sender);
        Reconciles {
            triggers: self.clone(),
            receiver,
        }
    }

    fn stop(&self) {
        let mut state = self.state();
        for task in state.tasks.drain(..) {
            task.abort();
        }
        state.watched.clear();
        state.sender = None;
    }

    /// Watches the kind `api` (while the agent runs), unless it is watched already.
    pub(crate) fn watch_kind(self: &Arc<Self>, api: &ApiResource) {
        let kind = kind_key(api);
        let mut state = self.state();
        if state.sender.is_some() && !state.watched.contains(&kind) {
            let task = tokio::spawn(self.clone().watch(api.clone(), kind.clone()));
            state.tasks.push(task.abort_handle());
            state.watched.insert(kind);
        }
    }

    /// Marks `object` (of kind `api`) as being applied by the agent: until the returned
    /// guard is told the outcome, changes to the object are taken as the agent's own.
    pub(crate) fn applying(&self, api: &ApiResource, object: &DynamicObject) -> OwnChange<'_> {
        let key = object_key(&kind_key(api), object);
        self.state().own.insert(key.clone(), None);
        OwnChange {
            triggers: self,
            key: Some(key),
        }
    }

    /// Whether a change sent `deployment` for the reconcile about to run (and forgets it): that
    /// reconcile runs even if the deployment itself has not changed since the agent's last
    /// status write.
    pub(crate) fn wanted(&self, deployment: &str) -> bool {
        self.state().wanted.remove(deployment)
    }

    /// Whether `deployment` was sent for a reconcile that has not run yet (it stays so).
    pub(crate) fn is_wanted(&self, deployment: &str) -> bool {
        self.state().wanted.contains(deployment)
    }

    /// Marks `deployment` as sent for a reconcile again: a reconcile that found the agent's copy of
    /// it stale leaves the change to the next one.
    pub(crate) fn want(&self, deployment: &str) {
        self.state().wanted.insert(deployment.to_string());
    }

    async fn watch(self: Arc<Self>, api: ApiResource, kind: String) {
        // Only the metadata is asked for (kube-rs sends metadata-only requests for
        // `PartialObjectMeta`): a reconcile reads the objects it needs itself.
        let objects: Api<PartialObjectMeta<DynamicObject>> =
            Api::all_with(self.local.clone(), &api);
        let selector = format!("{DEPLOYMENT_NAMESPACE_LABEL}={}", self.hub_namespace);
        let mut events = watcher(objects, watcher::Config::default().labels(&selector))
            .default_backoff()
            .boxed();
        // The first listing holds what was there when the watch began: the agent has just
        // applied it. A later one follows a watch that broke, and may hold missed changes.
        let mut first_listing = true;
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::InitApply(object)) if !first_listing => {
                    self.changed(&kind, &object);
                }
                Ok(watcher::Event::InitDone) => first_listing = false,
                Ok(watcher::Event::Apply(object) | watcher::Event::Delete(object)) => {
                    self.changed(&kind, &object);
                }
                Ok(_) => {}
                Err(error) => tracing::debug!(%kind, %error, "watch of deployed objects failed"),
            }
        }
    }

    /// `object` (of kind `kind`) changed: unless the change is the agent's own, its
    /// deployment is sent for a reconcile.
    fn changed(&self, kind: &str, object: &PartialObjectMeta<DynamicObject>) {
        let Some(deployment) = object.labels().get(DEPLOYMENT_LABEL) else {
            return;
        };
        let key = object_key(kind, object);
        let mut state = self.state();
        match state.own.get(&key) {
            // Changed while the agent applies it: what the apply returns is looked at.
            Some(None) => return,
            Some(Some(version)) if object.metadata.resource_version.as_ref() == Some(version) => {
                state.own.remove(&key);
                return;
            }
            _ => {}
        }
        self.send_reconcile(&mut state, deployment);
    }

    /// Sends `deployment` for a reconcile that runs even if the agent's copy is its own last
    /// write: a change came that the copy may not show.
    pub(crate) fn reconcile_again(&self, deployment: &str) {
        self.send_reconcile(&mut self.state(), deployment);
    }

    /// Sends `deployment` for a reconcile, and marks the reconcile wanted.
    fn send_reconcile(&self, state: &mut State, deployment: &str) {
        let reconcile = ObjectRef::new(deployment).within(&self.hub_namespace);
        let sent = state
            .sender
            .as_ref()
            .is_some_and(|sender| sender.unbounded_send(reconcile).is_ok());
        if sent {
            state.wanted.insert(deployment.to_string());
        }
    }
}

/// The deployments changes send for a reconcile, while the watches run.
pub struct Reconciles {
    triggers: Arc<Triggers>,
    receiver: mpsc::UnboundedReceiver<ObjectRef<BundleDeployment>>,
}

impl Stream for Reconciles {
    type Item = ObjectRef<BundleDeployment>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.receiver.poll_next_unpin(cx)
    }
}

impl Drop for Reconciles {
    fn drop(&mut self) {
        self.triggers.stop();
    }
}

/// An apply by the agent in progress: told its outcome, or dropped when the apply failed.
pub(crate) struct OwnChange<'a> {
    triggers: &'a Triggers,
    key: Option<String>,
}

impl OwnChange<'_> {
    /// The apply returned `applied`: the watch event carrying its resourceVersion is the
    /// agent's own.
    pub(crate) fn done(mut self, applied: &Value) {
        if let Some(key) = self.key.take() {
            let version = applied
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(String::from);
            let mut state = self.triggers.state();
            match version {
                Some(version) => state.own.insert(key, Some(version)),
                None => state.own.remove(&key),
            };
        }
    }
}

impl Drop for OwnChange<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.triggers.state().own.remove(&key);
        }
    }
}

fn kind_key(api: &ApiResource) -> String {
    format!("{}/{}", api.api_version, api.kind)
}

fn object_key(kind: &str, object: &impl ResourceExt) -> String {
    format!(
        "{kind}/{}/{}",
        object.meta().namespace.as_deref().unwrap_or_default(),
        object.name_any()
    )
}
