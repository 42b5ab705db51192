//! Watches of the Secrets and ConfigMaps that bundles copy downstream
//! (`downstreamResources`), and of nothing else: a management cluster holds thousands of
//! Secrets and ConfigMaps, and the controller needs to hear of a change to the few its
//! bundles name. Each named object gets a watch of its own (a field selector on its name),
//! started when a bundle first names it and stopped when none does any more.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use fleet_api::Bundle;
use futures::channel::mpsc::UnboundedSender;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::ResourceExt;
use tokio::task::JoinHandle;

use crate::watches::{self, Watched};

/// How often the set of named objects is read again from the bundles.
const RECHECK: Duration = Duration::from_secs(2);

/// An object a bundle names: its kind (`Secret` or `ConfigMap`), namespace and name.
type Named = (String, String, String);

/// Keeps one watch running per object the bundles of `bundles` name, each change waking
/// the bundles that name it through `queue`, until `shutdown`.
pub async fn run(
    client: kube::Client,
    bundles: Store<Bundle>,
    queue: UnboundedSender<ObjectRef<Bundle>>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let mut running: HashMap<Named, JoinHandle<()>> = HashMap::new();
    let following = async {
        loop {
            let wanted = named(&bundles);
            running.retain(|object, task| {
                let keep = wanted.contains(object);
                if !keep {
                    task.abort();
                }
                keep
            });
            for object in wanted {
                if let std::collections::hash_map::Entry::Vacant(entry) = running.entry(object) {
                    let task = watch_one(&client, entry.key(), &bundles, &queue);
                    entry.insert(task);
                }
            }
            tokio::time::sleep(RECHECK).await;
        }
    };
    tokio::select! {
        _ = following => {}
        _ = shutdown => {}
    }
    for task in running.into_values() {
        task.abort();
    }
}

/// Every object the bundles name, their own options' and their targets'.
fn named(bundles: &Store<Bundle>) -> BTreeSet<Named> {
    bundles
        .state()
        .iter()
        .flat_map(|bundle| {
            let namespace = bundle.namespace().unwrap_or_default();
            crate::placement::every_options(bundle)
                .flat_map(|options| options.downstream_resources.iter())
                .map(|r| (r.kind.clone(), namespace.clone(), r.name.clone()))
                .collect::<Vec<_>>()
        })
        .filter(|(kind, _, _)| kind == "Secret" || kind == "ConfigMap")
        .collect()
}

/// The watch of one named object.
fn watch_one(
    client: &kube::Client,
    (kind, namespace, name): &Named,
    bundles: &Store<Bundle>,
    queue: &UnboundedSender<ObjectRef<Bundle>>,
) -> JoinHandle<()> {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    if kind == "Secret" {
        trigger::<Secret>(client, namespace, config, bundles, queue)
    } else {
        trigger::<ConfigMap>(client, namespace, config, bundles, queue)
    }
}

fn trigger<K>(
    client: &kube::Client,
    namespace: &str,
    config: watcher::Config,
    bundles: &Store<Bundle>,
    queue: &UnboundedSender<ObjectRef<Bundle>>,
) -> JoinHandle<()>
where
    K: Watched + kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
{
    let bundles = bundles.clone();
    watches::trigger::<K>(
        client,
        namespace,
        config,
        vec![watches::route(queue, move |object: &K| {
            crate::naming(&bundles, K::kind(&()).as_ref(), object)
        })],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::watcher::Event;

    #[test]
    fn only_the_secrets_and_config_maps_bundles_name_are_followed() {
        let bundle: Bundle = serde_json::from_value(serde_json::json!({
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
            "metadata": {"name": "app", "namespace": "fleet-default"},
            "spec": {
                "downstreamResources": [{"kind": "Secret", "name": "creds"}],
                "targets": [{"clusterName": "dev",
                             "downstreamResources": [{"kind": "ConfigMap", "name": "settings"}]}],
            },
        }))
        .expect("a Bundle");
        let (store, mut writer) = kube::runtime::reflector::store();
        writer.apply_watcher_event(&Event::Apply(bundle));
        let expected: BTreeSet<Named> = [
            ("ConfigMap", "fleet-default", "settings"),
            ("Secret", "fleet-default", "creds"),
        ]
        .into_iter()
        .map(|(k, n, o)| (k.to_string(), n.to_string(), o.to_string()))
        .collect();
        assert_eq!(named(&store), expected);
    }
}
