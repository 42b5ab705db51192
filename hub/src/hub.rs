//! The hub's state: the store, one resource registry per logical cluster, the token
//! index, and what happens after a write (CRDs registered, garbage collected...).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::{json, Value};

use crate::auth::Identity;
use crate::event::Key;
use crate::objects::{self, Call, Propagation};
use crate::registry::Registry;
use crate::status::{ApiError, ApiResult};
use crate::store::{Change, ClusterRecord, Store, StoreError};
use crate::stored::Stored;
use crate::token_request;

const CRD_RESOURCE: &str = "apiextensions.k8s.io/customresourcedefinitions";
const INITIAL_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The embedded API server's state.
pub struct Hub {
    pub(crate) store: Arc<Store>,
    registries: RwLock<HashMap<String, Arc<Registry>>>,
    tokens: RwLock<HashMap<String, Identity>>,
    /// The resource requests served.
    pub(crate) requests: crate::requests::RequestCounts,
    /// What service accounts may do.
    pub(crate) rbac: crate::auth::Rbac,
    /// The CA clients trust (none on plain HTTP): published in every namespace
    /// (`kube-root-ca.crt`) and in token Secrets (`ca.crt`).
    ca_pem: std::sync::OnceLock<String>,
    me: std::sync::Weak<Hub>,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

/// How long after a write the hub's stand-ins for controllers act on it.
const CONTROLLER_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

/// The ConfigMap every namespace holds the cluster's CA in.
const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";

/// Its description, as kube-controller-manager writes it.
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

impl Hub {
    /// Opens the hub's database at `path`; the clusters in `memory_only` are never written
    /// to it (see [`Store::open`]).
    pub fn open(path: &Path, memory_only: HashSet<String>) -> Result<Arc<Self>, StoreError> {
        let store = Arc::new(Store::open(path, memory_only)?);
        let hub = Arc::new_cyclic(|me| Hub {
            rbac: crate::auth::Rbac::new(store.clone()),
            store,
            registries: RwLock::new(HashMap::new()),
            tokens: RwLock::new(HashMap::new()),
            requests: Default::default(),
            ca_pem: std::sync::OnceLock::new(),
            me: me.clone(),
        });
        for record in hub.store.clusters() {
            hub.index_cluster(&record);
        }
        Ok(hub)
    }

    fn arc(&self) -> Option<Arc<Hub>> {
        self.me.upgrade()
    }

    /// Sets the CA the hub's serving certificate is signed by, once.
    pub fn set_ca(&self, pem: &str) {
        let _ = self.ca_pem.set(pem.to_string());
    }

    fn index_cluster(&self, record: &ClusterRecord) {
        self.refresh_registry(&record.name);
        let mut tokens = write(&self.tokens);
        tokens.insert(
            record.token.clone(),
            Identity::Admin {
                cluster: record.name.clone(),
            },
        );
        let secrets =
            (self.store).cluster_objects(&record.name, |resource, _, _| resource == "/secrets");
        for (_, secret) in secrets {
            if let Some((token, namespace, name)) = crate::kinds::stored_token_of(&secret) {
                tokens.insert(
                    token,
                    Identity::ServiceAccount {
                        cluster: record.name.clone(),
                        namespace,
                        name,
                    },
                );
            }
        }
    }

    /// The logical clusters.
    pub fn clusters(&self) -> Vec<ClusterRecord> {
        self.store.clusters()
    }

    /// Creates a logical cluster with its initial namespaces, or returns the existing one.
    pub async fn ensure_cluster(&self, name: &str) -> ApiResult<ClusterRecord> {
        if let Some(problem) = crate::meta::label_problem(name) {
            return Err(ApiError::bad_request(format!("cluster name {problem}")));
        }
        if let Some(record) = self.store.cluster(name) {
            return Ok(record);
        }
        let record = ClusterRecord {
            name: name.to_string(),
            token: crate::kinds::new_token(),
        };
        self.store.put_cluster(record.clone()).await?;
        self.index_cluster(&record);
        let registry = self
            .registry(name)
            .ok_or_else(|| ApiError::internal("no registry"))?;
        let namespaces = registry
            .find("", "v1", "namespaces")
            .ok_or_else(|| ApiError::internal("no namespaces resource"))?;
        for namespace in INITIAL_NAMESPACES {
            let call = Call {
                cluster: name.to_string(),
                resource: namespaces.clone(),
                version: "v1".into(),
                namespace: String::new(),
                name: None,
                subresource: None,
                query: HashMap::new(),
                manager: "fleet-hub".into(),
                without_managed_fields: false,
                metadata_only: false,
            };
            let body =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
            match objects::create(self, &call, body).await {
                Ok(_) => {}
                Err(error) if error.code == 409 => {}
                Err(error) => return Err(error),
            }
        }
        Ok(record)
    }

    /// The resources a cluster serves, or `None` for an unknown cluster.
    pub fn registry(&self, cluster: &str) -> Option<Arc<Registry>> {
        read(&self.registries).get(cluster).cloned()
    }

    fn refresh_registry(&self, cluster: &str) {
        self.refresh_registry_with(cluster, None);
    }

    /// Rebuilds a cluster's registry from its stored CRDs, `changed` (a CRD about to be
    /// stored) in place of the stored one of its name.
    fn refresh_registry_with(&self, cluster: &str, changed: Option<&Value>) {
        let crds = self
            .store
            .list(cluster, CRD_RESOURCE, None, None)
            .map(|(_, items)| items)
            .unwrap_or_default();
        let changed_name = changed.and_then(|crd| crate::meta::meta_str(crd, "name"));
        let mut crds: Vec<Value> = crds
            .iter()
            .filter_map(|c| c.value().ok())
            .filter(|crd| crate::meta::meta_str(crd, "name") != changed_name)
            .collect();
        crds.extend(changed.cloned());
        let registry = Registry::new(crds.iter());
        write(&self.registries).insert(cluster.to_string(), Arc::new(registry));
    }

    fn account(&self, cluster: &str, namespace: &str, name: &str) -> Option<Arc<Stored>> {
        let key = Key {
            cluster: cluster.to_string(),
            resource: "/serviceaccounts".into(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        };
        self.store.get(&key).ok().flatten()
    }

    /// A token for the service account a `.../serviceaccounts/<name>/token` call names
    /// (see [`crate::token_request`]): the TokenRequest answered.
    pub fn request_token(&self, call: &Call, request: &Value) -> ApiResult<Value> {
        let name = call.name.clone().unwrap_or_default();
        let account = self
            .account(&call.cluster, &call.namespace, &name)
            .ok_or_else(|| ApiError::not_found("serviceaccounts", "", &name))?;
        let lifetime = token_request::lifetime(request)?;
        let claims = token_request::Claims {
            cluster: call.cluster.clone(),
            namespace: call.namespace.clone(),
            name,
            uid: account.uid().unwrap_or_default(),
            expires: jiff::Timestamp::now().as_second() + lifetime,
        };
        let key = self
            .admin_token(&call.cluster)
            .ok_or_else(|| ApiError::not_found("clusters", "", &call.cluster))?;
        let token = token_request::sign(&claims, &key)?;
        Ok(token_request::answer(request, &token, &claims, lifetime))
    }

    /// The service account a requested token stands for, if it verifies and the account
    /// still exists with the uid it was made for.
    fn identify_requested(&self, token: token_request::Presented<'_>) -> Option<Identity> {
        let key = self.admin_token(&token.claims.cluster)?;
        let claims = token.verify(&key, jiff::Timestamp::now().as_second())?;
        let account = self.account(&claims.cluster, &claims.namespace, &claims.name)?;
        (account.uid().as_deref() == Some(claims.uid.as_str())).then_some(
            Identity::ServiceAccount {
                cluster: claims.cluster,
                namespace: claims.namespace,
                name: claims.name,
            },
        )
    }

    /// Who a bearer token belongs to.
    pub fn identify(&self, token: &str) -> Option<Identity> {
        if let Some(presented) = token_request::presented(token) {
            return self.identify_requested(presented);
        }
        let identity = read(&self.tokens).get(token).cloned()?;
        // As Kubernetes' authenticator: a service account's token is valid only while the
        // account exists.
        if let Some((cluster, namespace, name)) = identity.service_account() {
            self.account(cluster, namespace, name)?;
        }
        Some(identity)
    }

    /// How many objects the hub holds, in every logical cluster.
    pub fn object_count(&self) -> usize {
        self.store.object_count()
    }

    /// How many objects the hub holds in the logical cluster `cluster`.
    pub fn cluster_object_count(&self, cluster: &str) -> usize {
        (self.store.object_counts(cluster).iter())
            .map(|(_, n)| n)
            .sum()
    }

    /// How many resource requests the hub served so far, by cluster, verb and resource.
    pub fn request_counts(&self) -> HashMap<crate::requests::RequestKind, u64> {
        self.requests.snapshot()
    }

    /// The admin token of a cluster.
    pub fn admin_token(&self, cluster: &str) -> Option<String> {
        self.store.cluster(cluster).map(|c| c.token)
    }

    /// Runs the effects of a create or update.
    /// (A namespace's default ServiceAccount is created by a task of its own.)
    pub(crate) fn after_write(&self, call: &Call, object: &Value) {
        match call.resource.storage_key().as_str() {
            CRD_RESOURCE => {
                self.refresh_registry(&call.cluster);
                if !crate::registry::is_established(object) && !crate::meta::is_deleting(object) {
                    self.later(call, object, |hub, cluster, _, name| async move {
                        hub.establish(&cluster, &name).await
                    });
                }
            }
            "/namespaces" if !crate::meta::is_deleting(object) => {
                self.later(call, object, |hub, cluster, _, namespace| async move {
                    hub.ensure_default_account(&cluster, &namespace).await;
                    hub.publish_root_ca(&cluster, &namespace).await;
                });
            }
            "/secrets" if crate::kinds::awaits_token(object) => {
                self.later(call, object, |hub, cluster, namespace, name| async move {
                    hub.fill_token(&cluster, &namespace, &name).await
                });
            }
            "/secrets" => {
                if let Some((token, namespace, name)) = crate::kinds::token_of(object) {
                    write(&self.tokens).insert(
                        token,
                        Identity::ServiceAccount {
                            cluster: call.cluster.clone(),
                            namespace,
                            name,
                        },
                    );
                }
            }
            _ => {}
        }
    }

    /// Runs `effect` on a task of its own a moment after the write of `object`, as a
    /// controller of kube-controller-manager (or kube-apiserver's own) acts on what it
    /// watches: clients see the write first, then the effect.
    fn later<F, Fut>(&self, call: &Call, object: &Value, effect: F)
    where
        F: FnOnce(Arc<Hub>, String, String, String) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let (Some(hub), Some(name)) = (self.arc(), crate::meta::meta_str(object, "name")) else {
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
        &self,
        cluster: &str,
        (group, version, plural): (&str, &str, &str),
        namespace: &str,
        name: Option<&str>,
        subresource: Option<&str>,
    ) -> Option<Call> {
        let resource = self.registry(cluster)?.find(group, version, plural)?;
        Some(Call {
            cluster: cluster.to_string(),
            resource,
            version: version.into(),
            namespace: namespace.to_string(),
            name: name.map(String::from),
            subresource: subresource.map(String::from),
            query: HashMap::new(),
            manager: "fleet-hub".into(),
            without_managed_fields: false,
            metadata_only: false,
        })
    }

    /// Marks the CRD `name` accepted and established, then serves its kind, as
    /// kube-apiserver's own controllers do a moment after it is created.
    async fn establish(&self, cluster: &str, name: &str) {
        let resource = ("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        let Some(call) = self.own_call(cluster, resource, "", Some(name), Some("status")) else {
            return;
        };
        let Ok(stored) = objects::get(self, &call) else {
            return;
        };
        let Ok(mut crd) = stored.value() else {
            return;
        };
        crate::kinds::accept_names(&mut crd);
        // Served before its status says so: a client that sees it Established finds it.
        self.refresh_registry_with(cluster, Some(&crd));
        if let Err(error) = objects::update(self, &call, crd).await {
            tracing::warn!(%error, cluster, name, "could not establish the CRD");
        }
    }

    /// Gives the token Secret `namespace/name` its token, namespace and CA, as the token
    /// controller of kube-controller-manager does once its service account exists.
    async fn fill_token(&self, cluster: &str, namespace: &str, name: &str) {
        let Some(call) = self.own_call(cluster, ("", "v1", "secrets"), namespace, Some(name), None)
        else {
            return;
        };
        let Ok(stored) = objects::get(self, &call) else {
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
        let Some(account) = self.account(cluster, namespace, account_name) else {
            return;
        };
        let uid = account
            .value()
            .ok()
            .and_then(|a| crate::meta::meta_str(&a, "uid").map(String::from))
            .unwrap_or_default();
        let patch =
            crate::kinds::token_data(namespace, &uid, self.ca_pem.get().map(String::as_str));
        let body = patch.to_string().into_bytes();
        if let Err(error) = objects::patch(self, &call, objects::PatchKind::Merge, &body).await {
            tracing::warn!(%error, cluster, namespace, name, "could not fill the token Secret");
        }
    }

    /// Publishes the hub's CA in the ConfigMap `kube-root-ca.crt` of `namespace`, as
    /// kube-controller-manager's root CA publisher does in every namespace.
    async fn publish_root_ca(&self, cluster: &str, namespace: &str) {
        let Some(ca) = self.ca_pem.get() else {
            return;
        };
        let Some(call) = self.own_call(cluster, ("", "v1", "configmaps"), namespace, None, None)
        else {
            return;
        };
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": namespace,
                "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
            "data": {"ca.crt": ca}});
        match objects::create(self, &call, body).await {
            Ok(_) => {}
            Err(error) if matches!(error.code, 404 | 409) => {}
            Err(error) => {
                tracing::warn!(%error, cluster, namespace, "could not publish the root CA")
            }
        }
    }

    /// Creates the `default` ServiceAccount of a namespace, as Kubernetes' service account
    /// controller does (pods and clients expect it).
    async fn ensure_default_account(&self, cluster: &str, namespace: &str) {
        let Some(call) = self.own_call(
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
        match objects::create(self, &call, body).await {
            // Already there, or the namespace went away meanwhile.
            Ok(_) => {}
            Err(error) if matches!(error.code, 404 | 409) => {}
            Err(error) => {
                tracing::warn!(%error, cluster, namespace, "could not create the default ServiceAccount")
            }
        }
    }

    /// Runs the effects of a delete request that left the object waiting (finalizers, or
    /// a namespace emptying).
    pub(crate) async fn after_delete_requested(&self, call: &Call, object: &Value) {
        if call.resource.storage_key() != "/namespaces" {
            return;
        }
        let (Some(hub), Some(name)) = (self.arc(), crate::meta::meta_str(object, "name")) else {
            return;
        };
        let cluster = call.cluster.clone();
        let name = name.to_string();
        tokio::spawn(hub.finalize_namespace(cluster, name));
    }

    /// Runs the effects of a removal: CRD instances, tokens and dependents.
    pub(crate) fn after_delete<'a>(
        &'a self,
        call: &'a Call,
        object: &'a Value,
        propagation: Propagation,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            match call.resource.storage_key().as_str() {
                CRD_RESOURCE => {
                    if let Some(custom) = crate::registry::from_crd(object) {
                        self.delete_all(&call.cluster, &custom.storage_key()).await;
                    }
                    self.refresh_registry(&call.cluster);
                }
                "/secrets" => {
                    if let Some((token, _, _)) = crate::kinds::token_of(object) {
                        write(&self.tokens).remove(&token);
                    }
                }
                "/serviceaccounts" => self.delete_tokens_of(&call.cluster, object).await,
                _ => {}
            }
            if let Some(uid) = crate::meta::meta_str(object, "uid") {
                self.collect_dependents(&call.cluster, uid, propagation)
                    .await;
            }
        })
    }

    /// Deletes the token Secrets of a deleted ServiceAccount, as Kubernetes' token
    /// controller does (their tokens stopped working with the account).
    async fn delete_tokens_of(&self, cluster: &str, account: &Value) {
        let (Some(namespace), Some(name)) = (
            crate::meta::meta_str(account, "namespace"),
            crate::meta::meta_str(account, "name"),
        ) else {
            return;
        };
        let Ok((_, secrets)) = self.store.list(cluster, "/secrets", Some(namespace), None) else {
            return;
        };
        for secret in secrets {
            let Some((token, _, owner)) = crate::kinds::stored_token_of(&secret) else {
                continue;
            };
            if owner != name {
                continue;
            }
            write(&self.tokens).remove(&token);
            self.delete_stored(cluster, "/secrets", &secret, "a deleted account's token")
                .await;
        }
    }

    async fn delete_all(&self, cluster: &str, resource: &str) {
        let Ok((_, objects)) = self.store.list(cluster, resource, None, None) else {
            return;
        };
        for object in objects {
            self.delete_stored(cluster, resource, &object, "an instance of a removed CRD")
                .await;
        }
    }

    /// Removes a stored object directly (no finalizers, no effects), logging a failure;
    /// `what` names it in the log.
    async fn delete_stored(&self, cluster: &str, resource: &str, object: &Stored, what: &str) {
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
        if let Err(error) = self.store.write(&key, |_| Ok((Change::Delete, ()))).await {
            tracing::warn!(%error, ?key, "could not delete {what}");
        }
    }

    fn call_for(&self, cluster: &str, resource: &str, object: &Value) -> Option<Call> {
        let registry = self.registry(cluster)?;
        let resource = registry.by_storage_key(resource)?;
        let version = resource.versions.first()?.name.clone();
        Some(Call {
            cluster: cluster.to_string(),
            version,
            namespace: crate::meta::meta_str(object, "namespace")
                .unwrap_or_default()
                .into(),
            name: crate::meta::meta_str(object, "name").map(String::from),
            subresource: None,
            query: HashMap::new(),
            manager: "fleet-hub-garbage-collector".into(),
            without_managed_fields: false,
            metadata_only: false,
            resource,
        })
    }

    async fn collect_dependents(&self, cluster: &str, uid: &str, propagation: Propagation) {
        // Only objects whose text holds the uid can name it as their owner.
        let candidates = (self.store).cluster_objects(cluster, |_, _, o| o.mentions(uid));
        let dependents = candidates.into_iter().filter_map(|(resource, o)| {
            let object = o.value().ok()?;
            owned_by(&object, uid).then_some((resource, object))
        });
        for (resource, dependent) in dependents.collect::<Vec<_>>() {
            let Some(call) = self.call_for(cluster, &resource, &dependent) else {
                continue;
            };
            let result = match propagation {
                Propagation::Orphan => self.orphan(&call, uid).await,
                Propagation::Background => {
                    objects::delete(self, &call, &json!({})).await.map(|_| ())
                }
            };
            if let Err(error) = result {
                if error.code != 404 {
                    tracing::warn!(%error, "garbage collection of a dependent failed");
                }
            }
        }
    }

    async fn orphan(&self, call: &Call, owner_uid: &str) -> ApiResult<()> {
        let Some(name) = call.name.as_deref() else {
            return Ok(());
        };
        let key = Key {
            cluster: call.cluster.clone(),
            resource: call.resource.storage_key(),
            namespace: call.namespace.clone(),
            name: name.to_string(),
        };
        self.store
            .write(&key, |existing| {
                let Some(existing) = existing else {
                    return Ok((Change::Keep, ()));
                };
                let mut object = existing.clone();
                if let Some(Value::Array(owners)) = object.pointer_mut("/metadata/ownerReferences")
                {
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
        self: Arc<Self>,
        cluster: String,
        namespace: String,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move { self.empty_namespace(&cluster, &namespace).await })
    }

    async fn empty_namespace(&self, cluster: &str, namespace: &str) {
        loop {
            let contents = (self.store).cluster_objects(cluster, |_, ns, _| ns == namespace);
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
                if let Some(call) = self.call_for(cluster, &resource, &object) {
                    if let Err(error) = objects::delete(self, &call, &json!({})).await {
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
        let removed = self
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
