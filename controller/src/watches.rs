//! The controllers' watches. Each kind is watched once; every event first updates that
//! kind's in-memory cache, then wakes the reconciles that depend on it. A reconcile
//! therefore never reads a cache older than the event that woke it, and reads its clusters,
//! groups, Policies and deployments from memory, shared, instead of listing and copying
//! them from the API server every time.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use fleet_objects::backoff::WatchBackoff;
use futures::channel::mpsc::UnboundedSender;
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Resource, ResourceExt};

/// An object's namespace and name.
type Id = (String, String);

/// The keys an object is found under in a [`Cache`] (its namespace, labels' values...).
pub type Keys<K> = fn(&K) -> Vec<String>;

/// A kind kept in memory by its one watch (kube's reflector store holds each object once,
/// shared), with an index from keys to objects.
pub struct Cache<K: Resource<DynamicType = ()> + Clone + 'static> {
    store: Store<K>,
    keys: Keys<K>,
    index: RwLock<Indexes>,
}

#[derive(Default)]
struct Indexes {
    live: Index,
    /// Built while a watch (re)lists, swapped in when the list is done, as the store is.
    listing: Index,
}

#[derive(Default)]
struct Index {
    by_key: HashMap<String, BTreeSet<Id>>,
    keys_of: HashMap<Id, Vec<String>>,
}

impl Index {
    fn insert(&mut self, id: Id, keys: Vec<String>) {
        // Most changes (a status, a spec) leave an object under the same keys.
        if self.keys_of.get(&id) == Some(&keys) {
            return;
        }
        self.remove(&id);
        for key in &keys {
            self.by_key
                .entry(key.clone())
                .or_default()
                .insert(id.clone());
        }
        self.keys_of.insert(id, keys);
    }

    fn remove(&mut self, id: &Id) {
        for key in self.keys_of.remove(id).unwrap_or_default() {
            if let Some(ids) = self.by_key.get_mut(&key) {
                ids.remove(id);
                if ids.is_empty() {
                    self.by_key.remove(&key);
                }
            }
        }
    }
}

fn id_of<K: Resource>(object: &K) -> Id {
    (object.namespace().unwrap_or_default(), object.name_any())
}

impl<K> Cache<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    /// The objects found under `key`, by namespace and name.
    pub fn get(&self, key: &str) -> Vec<Arc<K>> {
        let index = self.index.read().unwrap_or_else(|e| e.into_inner());
        index
            .live
            .by_key
            .get(key)
            .into_iter()
            .flatten()
            .filter_map(|(namespace, name)| self.store.get(&ObjectRef::new(name).within(namespace)))
            .collect()
    }

    /// The object `name` in `namespace`, if the cache holds it.
    pub fn object(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.store.get(&ObjectRef::new(name).within(namespace))
    }

    /// A cache no watch fills, and what fills it instead: each event given to it goes to
    /// the store and the index, as a watch's would.
    #[cfg(test)]
    pub(crate) fn detached(keys: Keys<K>) -> (Arc<Self>, impl FnMut(watcher::Event<K>)) {
        let (store, mut writer) = reflector::store();
        let cache = Arc::new(Cache {
            store,
            keys,
            index: RwLock::default(),
        });
        let filled = cache.clone();
        let apply = move |event: watcher::Event<K>| {
            writer.apply_watcher_event(&event);
            filled.index_event(&event);
        };
        (cache, apply)
    }

    /// The store, for the reconciles of this kind.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    fn index_event(&self, event: &watcher::Event<K>) {
        let mut index = self.index.write().unwrap_or_else(|e| e.into_inner());
        match event {
            watcher::Event::Apply(object) => index.live.insert(id_of(object), (self.keys)(object)),
            watcher::Event::Delete(object) => index.live.remove(&id_of(object)),
            watcher::Event::Init => index.listing = Index::default(),
            watcher::Event::InitApply(object) => {
                index.listing.insert(id_of(object), (self.keys)(object))
            }
            watcher::Event::InitDone => index.live = std::mem::take(&mut index.listing),
        }
    }
}

/// A kind the controller can watch.
pub trait Watched:
    Resource<DynamicType = ()>
    + Clone
    + std::fmt::Debug
    + serde::de::DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<K> Watched for K where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// What one watched object wakes: reconciles of some kind, through its queue.
pub type Route<K> = Box<dyn Fn(&K) + Send + Sync>;

/// A route sending the reconciles `mapper` names for an object to `queue`.
pub fn route<K, R, I>(
    queue: &UnboundedSender<ObjectRef<R>>,
    mapper: impl Fn(&K) -> I + Send + Sync + 'static,
) -> Route<K>
where
    R: Resource + 'static,
    I: IntoIterator<Item = ObjectRef<R>>,
{
    let queue = queue.clone();
    Box::new(move |object| {
        for request in mapper(object) {
            // Closed only when the controller stopped.
            let _ = queue.unbounded_send(request);
        }
    })
}

/// The changes of the `K` objects (of `namespace`, or all) that `config` selects. The watch
/// reads them untyped, so that one object that does not decode as a `K` (written under
/// another schema, say) is left out with a warning naming it, rather than failing every
/// list of the kind; its last good version stays cached. A Secret's decoding error is not
/// shown: its text may quote the Secret's data.
fn changes<K: Watched>(
    client: &kube::Client,
    namespace: Option<&str>,
    config: watcher::Config,
) -> impl futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send {
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    watcher(api, config).filter_map(|event| async move {
        match event {
            Ok(event) => typed(event).map(Ok),
            Err(error) => Some(Err(error)),
        }
    })
}

/// `event` with its object decoded as a `K`; `None` when it does not decode. A deletion
/// is still passed on from the object's metadata alone, so the cache lets it go.
fn typed<K: Watched>(event: watcher::Event<DynamicObject>) -> Option<watcher::Event<K>> {
    Some(match event {
        watcher::Event::Apply(object) => watcher::Event::Apply(decoded(object)?),
        watcher::Event::InitApply(object) => watcher::Event::InitApply(decoded(object)?),
        watcher::Event::Delete(object) => {
            // Its metadata, with an empty spec for the kinds that must have one.
            let bare = |spec: Option<serde_json::Value>| {
                let mut bare = serde_json::json!({
                    "apiVersion": K::api_version(&()),
                    "kind": K::kind(&()),
                    "metadata": object.metadata.clone(),
                });
                if let Some(spec) = spec {
                    bare["spec"] = spec;
                }
                serde_json::from_value::<K>(bare).ok()
            };
            let gone = bare(None)
                .or_else(|| bare(Some(serde_json::json!({}))))
                .or_else(|| decoded(object));
            watcher::Event::Delete(gone?)
        }
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    })
}

/// `object` as a `K`, or `None` (and a warning naming it).
fn decoded<K: Watched>(object: DynamicObject) -> Option<K> {
    let (namespace, name) = (object.namespace().unwrap_or_default(), object.name_any());
    let decoded = serde_json::to_value(object).and_then(serde_json::from_value::<K>);
    match decoded {
        Ok(typed) => Some(typed),
        Err(error) => {
            let kind = K::kind(&());
            let why = match kind.as_ref() {
                "Secret" => format!("{:?} error", error.classify()),
                _ => error.to_string(),
            };
            tracing::warn!(%kind, %namespace, %name, %why, "an object that does not decode is left out of the watch");
            None
        }
    }
}

/// Starts the watch of the `K` objects `config` selects, filling a cache indexed by
/// `keys`; each change then goes through `routes`, a finished list through them for every
/// object. Returns the cache once its first list is in, and the watch's task.
pub async fn watch<K>(
    client: &kube::Client,
    config: watcher::Config,
    keys: Keys<K>,
    routes: Vec<Route<K>>,
) -> (Arc<Cache<K>>, tokio::task::JoinHandle<()>)
where
    K: Watched,
{
    let (store, writer) = reflector::store();
    let cache = Arc::new(Cache {
        store,
        keys,
        index: RwLock::default(),
    });
    let follower = cache.clone();
    let client = client.clone();
    let task = tokio::spawn(async move {
        let objects = changes::<K>(&client, None, config)
            .modify(fleet_objects::client::without_managed_fields);
        let mut events = reflector::reflector(writer, objects)
            .backoff(WatchBackoff::default())
            .boxed();
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    tracing::warn!(%error, kind = %K::kind(&()), "watch failed; retrying");
                    continue;
                }
            };
            follower.index_event(&event);
            match &event {
                watcher::Event::Apply(object) | watcher::Event::Delete(object) => {
                    routes.iter().for_each(|route| route(object));
                }
                watcher::Event::InitDone => {
                    for object in follower.store.state() {
                        routes.iter().for_each(|route| route(&object));
                    }
                }
                watcher::Event::Init | watcher::Event::InitApply(_) => {}
            }
        }
    });
    let _ = cache.store.wait_until_ready().await;
    (cache, task)
}

/// A trigger-only watch (nothing cached) of the `K` objects of `namespace`: each changed
/// object goes through `routes`.
pub fn trigger<K>(
    client: &kube::Client,
    namespace: &str,
    config: watcher::Config,
    routes: Vec<Route<K>>,
) -> tokio::task::JoinHandle<()>
where
    K: Watched,
{
    let (client, namespace) = (client.clone(), namespace.to_string());
    tokio::spawn(async move {
        let mut objects = changes::<K>(&client, Some(&namespace), config)
            .backoff(WatchBackoff::default())
            .touched_objects()
            .boxed();
        while let Some(object) = objects.next().await {
            match object {
                Ok(object) => routes.iter().for_each(|route| route(&object)),
                Err(error) => {
                    tracing::warn!(%error, kind = %K::kind(&()), "watch failed; retrying")
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_api::Cluster;

    fn cluster(namespace: &str, name: &str, env: &str) -> Cluster {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
            "metadata": {"namespace": namespace, "name": name, "labels": {"env": env}},
            "spec": {},
        }))
        .expect("a Cluster")
    }

    fn by_env(cluster: &Cluster) -> Vec<String> {
        cluster.labels().get("env").cloned().into_iter().collect()
    }

    fn untyped(object: serde_json::Value) -> DynamicObject {
        serde_json::from_value(object).expect("an object")
    }

    #[test]
    fn an_object_that_does_not_decode_is_left_out_and_its_deletion_still_passes() {
        let good = untyped(serde_json::json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
            "metadata": {"namespace": "ns", "name": "good"}, "spec": {"paused": true},
        }));
        let bad = untyped(serde_json::json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Cluster",
            "metadata": {"namespace": "ns", "name": "bad"}, "spec": {"paused": "yes"},
        }));
        let name = |event: Option<watcher::Event<Cluster>>| match event {
            Some(
                watcher::Event::Apply(c) | watcher::Event::InitApply(c) | watcher::Event::Delete(c),
            ) => Some(c.name_any()),
            _ => None,
        };
        assert_eq!(
            name(typed(watcher::Event::InitApply(good.clone()))).as_deref(),
            Some("good")
        );
        assert_eq!(name(typed(watcher::Event::InitApply(bad.clone()))), None);
        assert_eq!(name(typed(watcher::Event::Apply(bad.clone()))), None);
        assert_eq!(
            name(typed(watcher::Event::Delete(bad))).as_deref(),
            Some("bad")
        );
        // A Secret whose data is not base64 is left out the same way.
        let secret = untyped(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"namespace": "ns", "name": "s"}, "data": {"token": "not base64!"},
        }));
        let event = typed::<k8s_openapi::api::core::v1::Secret>(watcher::Event::Apply(secret));
        assert!(event.is_none());
    }

    #[test]
    fn the_index_follows_changes_and_swaps_in_a_relist_whole() {
        let (cache, mut apply) = Cache::detached(by_env);
        apply(watcher::Event::Init);
        apply(watcher::Event::InitApply(cluster("ns", "a", "dev")));
        apply(watcher::Event::InitApply(cluster("ns", "b", "prod")));
        apply(watcher::Event::InitDone);
        apply(watcher::Event::Apply(cluster("ns", "c", "dev")));
        // A label change moves the object between keys.
        apply(watcher::Event::Apply(cluster("ns", "b", "dev")));
        apply(watcher::Event::Delete(cluster("ns", "a", "dev")));
        let names =
            |key: &str| -> Vec<String> { cache.get(key).iter().map(|c| c.name_any()).collect() };
        assert_eq!(names("dev"), ["b", "c"]);
        assert!(names("prod").is_empty());
        // A relist replaces everything at once when it is done.
        apply(watcher::Event::Init);
        apply(watcher::Event::InitApply(cluster("ns", "d", "prod")));
        assert_eq!(names("dev"), ["b", "c"]);
        apply(watcher::Event::InitDone);
        assert!(names("dev").is_empty());
        assert_eq!(names("prod"), ["d"]);
        // An object is found by namespace and name, as it is now.
        let found = cache.object("ns", "d").map(|c| c.labels()["env"].clone());
        assert_eq!(found.as_deref(), Some("prod"));
        assert!(cache.object("ns", "b").is_none());
    }
}
