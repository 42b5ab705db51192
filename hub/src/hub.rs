//! The hub's state: the store, one resource registry per logical cluster, the token
//! index, kept up to date after each write; what else a write sets off is the
//! [`Effects`]' business.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::auth::Identity;
use crate::call::{Call, Propagation};
use crate::event::Key;
use crate::registry::Registry;
use crate::status::{ApiError, ApiResult};
use crate::store::{ClusterRecord, Store, StoreError};
use crate::stored::Stored;
use crate::token_request;

pub(crate) const CRD_RESOURCE: &str = "apiextensions.k8s.io/customresourcedefinitions";

/// The embedded API server's state.
pub struct Hub {
    pub(crate) store: Arc<Store>,
    registries: RwLock<HashMap<String, Arc<Registry>>>,
    /// Held while a registry is rebuilt.
    registry_refresh: std::sync::Mutex<()>,
    /// The CRDs (cluster, name) the controllers established, served from then on.
    established: RwLock<HashSet<(String, String)>>,
    tokens: RwLock<HashMap<String, Identity>>,
    /// The resource requests served.
    pub(crate) requests: crate::requests::RequestCounts,
    /// What service accounts may do.
    pub(crate) rbac: crate::auth::Rbac,
    /// The CA clients trust (none on plain HTTP): published in every namespace
    /// (`kube-root-ca.crt`) and in token Secrets (`ca.crt`).
    pub(crate) ca_pem: std::sync::OnceLock<String>,
    /// What acts on the hub's writes, as Kubernetes' controllers act on a cluster's.
    effects: Box<dyn Effects>,
    me: std::sync::Weak<Hub>,
}

/// What acts on the hub's writes, as kube-apiserver's own controllers and
/// kube-controller-manager act on a cluster's: through the same verbs as any client
/// (`crate::controllers` holds the hub's).
pub trait Effects: Send + Sync {
    /// A logical cluster was created: its initial objects are made.
    fn cluster_created<'a>(
        &'a self,
        hub: &'a Hub,
        cluster: &'a str,
    ) -> Pin<Box<dyn Future<Output = ApiResult<()>> + Send + 'a>>;

    /// `object` was created or updated by `call`.
    fn written(&self, hub: &Hub, call: &Call, object: &Value);

    /// A delete request left `object` waiting (finalizers, or a namespace emptying).
    fn delete_requested(&self, hub: &Hub, call: &Call, object: &Value);

    /// `object` was removed; its dependents are treated as `propagation` says.
    fn deleted<'a>(
        &'a self,
        hub: &'a Hub,
        call: &'a Call,
        object: &'a Value,
        propagation: Propagation,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

impl Hub {
    /// Opens the hub's database at `path`; the clusters in `memory_only` are never written
    /// to it (see [`Store::open`]).
    pub fn open(
        path: &Path,
        memory_only: HashSet<String>,
        effects: Box<dyn Effects>,
    ) -> Result<Arc<Self>, StoreError> {
        let store = Arc::new(Store::open(path, memory_only)?);
        let hub = Arc::new_cyclic(|me| Hub {
            rbac: crate::auth::Rbac::new(store.clone()),
            store,
            registries: RwLock::new(HashMap::new()),
            registry_refresh: std::sync::Mutex::new(()),
            established: RwLock::new(HashSet::new()),
            tokens: RwLock::new(HashMap::new()),
            requests: Default::default(),
            ca_pem: std::sync::OnceLock::new(),
            effects,
            me: me.clone(),
        });
        for record in hub.store.clusters() {
            hub.index_cluster(&record);
        }
        Ok(hub)
    }

    pub(crate) fn arc(&self) -> Option<Arc<Hub>> {
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

    /// Creates a logical cluster (its initial namespaces made by [`Effects::cluster_created`]),
    /// or returns the existing one.
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
        self.effects.cluster_created(self, name).await?;
        Ok(record)
    }

    /// The resources a cluster serves, or `None` for an unknown cluster.
    pub fn registry(&self, cluster: &str) -> Option<Arc<Registry>> {
        read(&self.registries).get(cluster).cloned()
    }

    /// Rebuilds a cluster's registry from its stored CRDs, those [`Hub::serve_established`]
    /// named counted as established. Refreshes run one at a time, each reading the store
    /// afresh: one that read before a CRD's write cannot replace the registry after the
    /// refresh of that write.
    fn refresh_registry(&self, cluster: &str) {
        let _one_at_a_time = self
            .registry_refresh
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let crds = self
            .store
            .list(cluster, CRD_RESOURCE, None, None)
            .map(|(_, items)| items)
            .unwrap_or_default();
        let established = read(&self.established);
        let crds: Vec<Value> = crds
            .iter()
            .filter_map(|c| c.value().ok())
            .map(|mut crd| {
                let name = crate::meta::meta_str(&crd, "name").unwrap_or_default();
                if established.contains(&(cluster.to_string(), name.to_string())) {
                    crate::kinds::accept_names(&mut crd);
                }
                crd
            })
            .collect();
        drop(established);
        let registry = Registry::new(crds.iter());
        write(&self.registries).insert(cluster.to_string(), Arc::new(registry));
    }

    /// Serves the kind of the CRD `name` as established before its status says so: a
    /// client that sees it Established then finds it.
    pub(crate) fn serve_established(&self, cluster: &str, name: &str) {
        write(&self.established).insert((cluster.to_string(), name.to_string()));
        self.refresh_registry(cluster);
    }

    pub(crate) fn account(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<Stored>> {
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
            issued: jiff::Timestamp::now().as_second(),
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

    /// Keeps the hub's own indexes after a create or update (a CRD's kind served, a token
    /// known), then hands the write to the [`Effects`].
    pub(crate) fn after_write(&self, call: &Call, object: &Value) {
        match call.resource.storage_key().as_str() {
            CRD_RESOURCE => self.refresh_registry(&call.cluster),
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
        self.effects.written(self, call, object);
    }

    /// Hands a delete request that left the object waiting (finalizers, or a namespace
    /// emptying) to the [`Effects`].
    pub(crate) fn after_delete_requested(&self, call: &Call, object: &Value) {
        self.effects.delete_requested(self, call, object);
    }

    /// Runs the [`Effects`] of a removal, then keeps the hub's own indexes (a removed
    /// CRD's kind no longer served, a token forgotten).
    pub(crate) fn after_delete<'a>(
        &'a self,
        call: &'a Call,
        object: &'a Value,
        propagation: Propagation,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            self.effects.deleted(self, call, object, propagation).await;
            match call.resource.storage_key().as_str() {
                CRD_RESOURCE => {
                    if let Some(name) = crate::meta::meta_str(object, "name") {
                        write(&self.established).remove(&(call.cluster.clone(), name.to_string()));
                    }
                    self.refresh_registry(&call.cluster)
                }
                "/secrets" => {
                    if let Some((token, _, _)) = crate::kinds::token_of(object) {
                        self.forget_token(&token);
                    }
                }
                _ => {}
            }
        })
    }

    /// Forgets a token: it identifies nobody from now on.
    pub(crate) fn forget_token(&self, token: &str) {
        write(&self.tokens).remove(token);
    }
}
