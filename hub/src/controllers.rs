//! The hub's stand-ins for the controllers of a real control plane, acting on writes
//! through the same verbs as any client: a new cluster's namespaces, CRDs established, a
//! namespace's `default` ServiceAccount and `kube-root-ca.crt`, token Secrets filled and
//! deleted with their account, a removed CRD's objects, garbage collection of dependents,
//! terminating namespaces emptied.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::call::{Call, Propagation};
use crate::event::Key;
use crate::hub::{Effects, Hub, CRD_RESOURCE};
use crate::status::ApiResult;
use crate::store::Change;
use crate::stored::Stored;
use crate::verbs;

/// The namespaces every logical cluster starts with.
const INITIAL_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// How long after a write the hub's stand-ins for controllers act on it.
const CONTROLLER_DELAY: Duration = Duration::from_millis(100);

/// The ConfigMap every namespace holds the cluster's CA in.
const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";

/// Its description, as kube-controller-manager writes it.
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The controllers of a Kubernetes control plane the hub stands in for.
pub(crate) struct Controllers;

impl Effects for Controllers {
    fn cluster_created<'a>(
        &'a self,
        hub: &'a Hub,
        cluster: &'a str,
    ) -> Pin<Box<dyn Future<Output = ApiResult<()>> + Send + 'a>> {
        Box::pin(async move {
            for namespace in INITIAL_NAMESPACES {
                let Some(call) = own_call(hub, cluster, ("", "v1", "namespaces"), "", None, None)
                else {
                    return Err(crate::status::ApiError::internal("no namespaces resource"));
                };
                let body = json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": namespace}});
                match verbs::create(hub, &call, body).await {
                    Ok(_) => {}
                    Err(error) if error.code == 409 => {}
                    Err(error) => return Err(error),
                }
            }
            Ok(())
        })
    }

    fn written(&self, hub: &Hub, call: &Call, object: &Value) {
        match call.resource.storage_key().as_str() {
            CRD_RESOURCE
                if !crate::registry::is_established(object)
                    && !crate::meta::is_deleting(object) =>
            {
                later(hub, call, object, |hub, cluster, _, name| async move {
                    establish(&hub, &cluster, &name).await
                });
            }
            "/namespaces" if !crate::meta::is_deleting(object) => {
                later(hub, call, object, |hub, cluster, _, namespace| async move {
                    ensure_default_account(&hub, &cluster, &namespace).await;
                    publish_root_ca(&hub, &cluster, &namespace).await;
                });
            }
            "/secrets" if crate::kinds::awaits_token(object) => {
                later(
                    hub,
                    call,
                    object,
                    |hub, cluster, namespace, name| async move {
                        fill_token(&hub, &cluster, &namespace, &name).await
                    },
                );
            }
            _ => {}
        }
    }

    fn delete_requested(&self, hub: &Hub, call: &Call, object: &Value) {
        if call.resource.storage_key() != "/namespaces" {
            return;
        }
        let (Some(hub), Some(name)) = (hub.arc(), crate::meta::meta_str(object, "name")) else {
            return;
        };
        tokio::spawn(finalize_namespace(
            hub,
            call.cluster.clone(),
            name.to_string(),
        ));
    }

    fn deleted<'a>(
        &'a self,
        hub: &'a Hub,
        call: &'a Call,
        object: &'a Value,
        propagation: Propagation,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            match call.resource.storage_key().as_str() {
                CRD_RESOURCE => {
                    if let Some(custom) = crate::registry::from_crd(object) {
                        delete_all(hub, &call.cluster, &custom.storage_key()).await;
                    }
                }
                "/serviceaccounts" => delete_tokens_of(hub, &call.cluster, object).await,
                _ => {}
            }
            if let Some(uid) = crate::meta::meta_str(object, "uid") {
                collect_dependents(hub, &call.cluster, uid, propagation).await;
            }
        })
    }
}

/// Runs `effect` on a task of its own a moment after the write of `object`, as a
/// controller of kube-controller-manager (or kube-apiserver's own) acts on what it
/// watches: clients see the write first, then the effect.
fn later<F, Fut>(hub: &Hub, call: &Call, object: &Value, effect: F)
where
    F: FnOnce(Arc<Hub>, String, String, String) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (Some(hub), Some(name)) = (hub.arc(), crate::meta::meta_str(object, "name")) else {
        return;
    };
    let (cluster, namespace, name) = (
        call.cluster.clone(),
        call.namespace.clone(),
        name.to_string(),
    );
    tokio::spawn(async move {
        tokio::time::sleep(CONTROLLER_DELAY).await;
        effect(hub, cluster, namespace, name).await;
    });
}

/// A call of the hub's own, as `fleet-hub`, on `group/version` `plural` in `namespace`.
fn own_call(
    hub: &Hub,
    cluster: &str,
    (group, version, plural): (&str, &str, &str),
    namespace: &str,
    name: Option<&str>,
    subresource: Option<&str>,
) -> Option<Call> {
    let resource = hub.registry(cluster)?.find(group, version, plural)?;
    let call = Call::own(
        cluster,
        (resource, version.into()),
        namespace,
        name,
        "fleet-hub",
    );
    Some(Call {
        subresource: subresource.map(String::from),
        ..call
    })
}

/// Marks the CRD `name` accepted and established, then serves its kind, as
/// kube-apiserver's own controllers do a moment after it is created.
async fn establish(hub: &Hub, cluster: &str, name: &str) {
    let resource = ("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    let Some(call) = own_call(hub, cluster, resource, "", Some(name), Some("status")) else {
        return;
    };
    let Ok(stored) = verbs::get(hub, &call) else {
        return;
    };
    let Ok(mut crd) = stored.value() else {
        return;
    };
    crate::kinds::accept_names(&mut crd);
    // Served before its status says so: a client that sees it Established finds it.
    hub.serve_established(cluster, name);
    if let Err(error) = verbs::update(hub, &call, crd).await {
        tracing::warn!(%error, cluster, name, "could not establish the CRD");
    }
}

/// Gives the token Secret `namespace/name` its token, namespace and CA, as the token
/// controller of kube-controller-manager does once its service account exists.
async fn fill_token(hub: &Hub, cluster: &str, namespace: &str, name: &str) {
    let Some(call) = own_call(
        hub,
        cluster,
        ("", "v1", "secrets"),
        namespace,
        Some(name),
        None,
    ) else {
        return;
    };
    let Ok(stored) = verbs::get(hub, &call) else {
        return;
    };
    let Ok(secret) = stored.value() else {
        return;
    };
    let Some(account_name) = secret
        .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
        .and_then(Value::as_str)
    else {
        return;
    };
    let Some(account) = hub.account(cluster, namespace, account_name) else {
        return;
    };
    let uid = account
        .value()
        .ok()
        .and_then(|a| crate::meta::meta_str(&a, "uid").map(String::from))
        .unwrap_or_default();
    let patch = crate::kinds::token_data(namespace, &uid, hub.ca_pem.get().map(String::as_str));
    let body = patch.to_string().into_bytes();
    if let Err(error) = verbs::patch(hub, &call, verbs::PatchKind::Merge, &body).await {
        tracing::warn!(%error, cluster, namespace, name, "could not fill the token Secret");
    }
}

/// Publishes the hub's CA in the ConfigMap `kube-root-ca.crt` of `namespace`, as
/// kube-controller-manager's root CA publisher does in every namespace.
async fn publish_root_ca(hub: &Hub, cluster: &str, namespace: &str) {
    let Some(ca) = hub.ca_pem.get() else {
        return;
    };
    let Some(call) = own_call(
        hub,
        cluster,
        ("", "v1", "configmaps"),
        namespace,
        None,
        None,
    ) else {
        return;
    };
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": namespace,
            "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
        "data": {"ca.crt": ca}});
    match verbs::create(hub, &call, body).await {
        Ok(_) => {}
        Err(error) if matches!(error.code, 404 | 409) => {}
        Err(error) => {
            tracing::warn!(%error, cluster, namespace, "could not publish the root CA")
        }
    }
}

/// Creates the `default` ServiceAccount of a namespace, as Kubernetes' service account
/// controller does (pods and clients expect it).
async fn ensure_default_account(hub: &Hub, cluster: &str, namespace: &str) {
    let Some(call) = own_call(
        hub,
        cluster,
        ("", "v1", "serviceaccounts"),
        namespace,
        None,
        None,
    ) else {
        return;
    };
    let body = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                      "metadata": {"name": "default", "namespace": namespace}});
    match verbs::create(hub, &call, body).await {
        // Already there, or the namespace went away meanwhile.
        Ok(_) => {}
        Err(error) if matches!(error.code, 404 | 409) => {}
        Err(error) => {
            tracing::warn!(%error, cluster, namespace, "could not create the default ServiceAccount")
        }
    }
}

/// Deletes the token Secrets of a deleted ServiceAccount, as Kubernetes' token
/// controller does (their tokens stopped working with the account).
async fn delete_tokens_of(hub: &Hub, cluster: &str, account: &Value) {
    let (Some(namespace), Some(name)) = (
        crate::meta::meta_str(account, "namespace"),
        crate::meta::meta_str(account, "name"),
    ) else {
        return;
    };
    let Ok((_, secrets)) = hub.store.list(cluster, "/secrets", Some(namespace), None) else {
        return;
    };
    for secret in secrets {
        let Some((token, _, owner)) = crate::kinds::stored_token_of(&secret) else {
            continue;
        };
        if owner != name {
            continue;
        }
        hub.forget_token(&token);
        delete_stored(
            hub,
            cluster,
            "/secrets",
            &secret,
            "a deleted account's token",
        )
        .await;
    }
}

async fn delete_all(hub: &Hub, cluster: &str, resource: &str) {
    let Ok((_, objects)) = hub.store.list(cluster, resource, None, None) else {
        return;
    };
    for object in objects {
        delete_stored(
            hub,
            cluster,
            resource,
            &object,
            "an instance of a removed CRD",
        )
        .await;
    }
}

/// Removes a stored object directly (no finalizers, no effects), logging a failure;
/// `what` names it in the log.
async fn delete_stored(hub: &Hub, cluster: &str, resource: &str, object: &Stored, what: &str) {
    let Ok(object) = object.value() else {
        return;
    };
    let key = Key {
        cluster: cluster.to_string(),
        resource: resource.to_string(),
        namespace: crate::meta::meta_str(&object, "namespace")
            .unwrap_or_default()
            .into(),
        name: crate::meta::meta_str(&object, "name")
            .unwrap_or_default()
            .into(),
    };
    if let Err(error) = hub.store.write(&key, |_| Ok((Change::Delete, ()))).await {
        tracing::warn!(%error, ?key, "could not delete {what}");
    }
}

fn call_for(hub: &Hub, cluster: &str, resource: &str, object: &Value) -> Option<Call> {
    let registry = hub.registry(cluster)?;
    let resource = registry.by_storage_key(resource)?;
    let version = resource.versions.first()?.name.clone();
    Some(Call::own(
        cluster,
        (resource, version),
        crate::meta::meta_str(object, "namespace").unwrap_or_default(),
        crate::meta::meta_str(object, "name"),
        "fleet-hub-garbage-collector",
    ))
}

async fn collect_dependents(hub: &Hub, cluster: &str, uid: &str, propagation: Propagation) {
    // Only objects whose text holds the uid can name it as their owner.
    let candidates = (hub.store).cluster_objects(cluster, |_, _, o| o.mentions(uid));
    let dependents = candidates.into_iter().filter_map(|(resource, o)| {
        let object = o.value().ok()?;
        owned_by(&object, uid).then_some((resource, object))
    });
    for (resource, dependent) in dependents.collect::<Vec<_>>() {
        let Some(call) = call_for(hub, cluster, &resource, &dependent) else {
            continue;
        };
        let result = match propagation {
            Propagation::Orphan => orphan(hub, &call, uid).await,
            Propagation::Background => verbs::delete(hub, &call, &json!({})).await.map(|_| ()),
        };
        if let Err(error) = result {
            if error.code != 404 {
                tracing::warn!(%error, "garbage collection of a dependent failed");
            }
        }
    }
}

async fn orphan(hub: &Hub, call: &Call, owner_uid: &str) -> ApiResult<()> {
    let Some(name) = call.name.as_deref() else {
        return Ok(());
    };
    let key = Key {
        cluster: call.cluster.clone(),
        resource: call.resource.storage_key(),
        namespace: call.namespace.clone(),
        name: name.to_string(),
    };
    hub.store
        .write(&key, |existing| {
            let Some(existing) = existing else {
                return Ok((Change::Keep, ()));
            };
            let mut object = existing.clone();
            if let Some(Value::Array(owners)) = object.pointer_mut("/metadata/ownerReferences") {
                owners.retain(|o| o.get("uid").and_then(Value::as_str) != Some(owner_uid));
            }
            Ok((Change::Put(object), ()))
        })
        .await
        .map(|_| ())
}

/// Empties a terminating namespace, then removes it. Boxed: it deletes objects, and
/// deleting may start another namespace's finalisation.
fn finalize_namespace(
    hub: Arc<Hub>,
    cluster: String,
    namespace: String,
) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move { empty_namespace(&hub, &cluster, &namespace).await })
}

async fn empty_namespace(hub: &Hub, cluster: &str, namespace: &str) {
    loop {
        let contents = (hub.store).cluster_objects(cluster, |_, ns, _| ns == namespace);
        if contents.is_empty() {
            break;
        }
        for (resource, object) in contents {
            let Ok(object) = object.value() else {
                continue;
            };
            if crate::meta::is_deleting(&object) {
                continue;
            }
            if let Some(call) = call_for(hub, cluster, &resource, &object) {
                if let Err(error) = verbs::delete(hub, &call, &json!({})).await {
                    tracing::warn!(%error, namespace, "could not empty a terminating namespace");
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let key = Key {
        cluster: cluster.to_string(),
        resource: "/namespaces".into(),
        namespace: String::new(),
        name: namespace.to_string(),
    };
    let removed = hub
        .store
        .write(&key, |existing| match existing {
            Some(ns) if crate::meta::is_deleting(ns) && !crate::meta::has_finalizers(ns) => {
                Ok((Change::Delete, ()))
            }
            _ => Ok((Change::Keep, ())),
        })
        .await;
    if let Err(error) = removed {
        tracing::warn!(%error, namespace, "could not remove a terminated namespace");
    }
}

fn owned_by(object: &Value, uid: &str) -> bool {
    crate::meta::meta_field(object, "ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|owners| {
            owners
                .iter()
                .any(|o| o.get("uid").and_then(Value::as_str) == Some(uid))
        })
}
