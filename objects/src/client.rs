//! What a kube-rs client needs around it: a client from a kubeconfig file (or the
//! process's own cluster), namespaces made on demand, Fleet's CRDs installed, and the
//! deletes and finalizer removals every controller writes the same way.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig file could not be read or does not describe a usable cluster.
    #[error("kubeconfig {}: {source}", path.display())]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: kube::config::KubeconfigError,
    },
    /// No kubeconfig was named and the process runs in no cluster.
    #[error("no --kubeconfig, no KUBECONFIG, and not running in a cluster: {0}")]
    NoCluster(kube::config::InferConfigError),
    /// The client could not be built from the configuration.
    #[error(transparent)]
    Client(#[from] kube::Error),
}

/// A client for the cluster (and user) that the kubeconfig file at `path` names.
pub async fn from_kubeconfig(path: &Path) -> Result<kube::Client, ClientError> {
    let broken = |source| ClientError::Kubeconfig {
        path: path.to_path_buf(),
        source,
    };
    let file = kube::config::Kubeconfig::read_from(path).map_err(broken)?;
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .map_err(broken)?;
    Ok(kube::Client::try_from(config)?)
}

/// A client for the cluster `kubeconfig` names or, without one, the cluster the process
/// runs in (its service account) or `~/.kube/config`.
pub async fn for_cluster(kubeconfig: Option<&Path>) -> Result<kube::Client, ClientError> {
    match kubeconfig {
        Some(path) => from_kubeconfig(path).await,
        None => {
            let config = kube::Config::infer()
                .await
                .map_err(ClientError::NoCluster)?;
            Ok(kube::Client::try_from(config)?)
        }
    }
}

/// The parameters of a create or replace by `field_manager`: the write is recorded under
/// the writer's own name, not under one the server guesses from the client.
pub fn post_params(field_manager: &str) -> PostParams {
    PostParams {
        field_manager: Some(field_manager.to_string()),
        ..PostParams::default()
    }
}

/// The parameters of a (non-apply) patch by `field_manager`.
pub fn patch_params(field_manager: &str) -> PatchParams {
    PatchParams {
        field_manager: Some(field_manager.to_string()),
        ..PatchParams::default()
    }
}

/// Creates namespace `name` unless it exists, as `field_manager`.
pub async fn ensure_namespace(
    client: &kube::Client,
    name: &str,
    field_manager: &str,
) -> Result<(), kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    if api.get_opt(name).await?.is_some() {
        return Ok(());
    }
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Namespace::default()
    };
    match api.create(&post_params(field_manager), &namespace).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(response)) if response.code == 409 => Ok(()),
        Err(error) => Err(error),
    }
}

/// The namespaces Rancher Fleet creates on its management cluster.
pub const FLEET_NAMESPACES: [&str; 3] = ["fleet-local", "fleet-default", "cattle-fleet-system"];

/// Installs (or updates, by server-side apply as `field_manager`) Fleet's CRDs and creates
/// [`FLEET_NAMESPACES`].
pub async fn install_fleet(client: &kube::Client, field_manager: &str) -> Result<(), kube::Error> {
    let apply = PatchParams::apply(field_manager).force();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for (_, crd) in fleet_api::crds::all() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let mut body = serde_json::to_value(&crd).map_err(kube::Error::SerdeError)?;
        body["apiVersion"] = json!("apiextensions.k8s.io/v1");
        body["kind"] = json!("CustomResourceDefinition");
        crds.patch(&name, &apply, &Patch::Apply(&body)).await?;
    }
    for (_, crd) in fleet_api::crds::all() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        wait_established(client, &name, CRD_PATIENCE).await?;
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in FLEET_NAMESPACES {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        namespaces.patch(name, &apply, &Patch::Apply(&body)).await?;
    }
    Ok(())
}

/// How long a CRD just applied may take to be served.
pub const CRD_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits up to `patience` until the CustomResourceDefinition `name` is `Established` (its
/// kind served: kube-apiserver refuses objects of it until then). Says whether it is.
pub async fn wait_established(
    client: &kube::Client,
    name: &str,
    patience: std::time::Duration,
) -> Result<bool, kube::Error> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let started = std::time::Instant::now();
    loop {
        let established = crds
            .get(name)
            .await?
            .status
            .and_then(|status| status.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        if established {
            return Ok(true);
        }
        if started.elapsed() > patience {
            return Ok(false);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Sends a write that `build` makes from `api`'s URL and returns the answer as text, for a
/// caller that reads little of it or nothing: decoding the whole object that comes back is
/// much of a small write's work in the client.
pub async fn write_text<K>(
    api: &Api<K>,
    build: impl FnOnce(
        &kube::core::Request,
    ) -> Result<http::Request<Vec<u8>>, kube::core::request::Error>,
) -> Result<String, kube::Error>
where
    K: kube::Resource + Clone,
{
    let request =
        build(&kube::core::Request::new(api.resource_url())).map_err(kube::Error::BuildRequest)?;
    api.clone().into_client().request_text(request).await
}

/// [`write_text`] for a caller that never reads the answer.
pub async fn write_unread<K>(
    api: &Api<K>,
    build: impl FnOnce(
        &kube::core::Request,
    ) -> Result<http::Request<Vec<u8>>, kube::core::request::Error>,
) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone,
{
    write_text(api, build).await.map(drop)
}

/// Deletes the object `name`, a missing one being fine.
pub async fn delete_if_present<K>(
    api: &Api<K>,
    name: &str,
    params: &DeleteParams,
) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(response)) if response.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// How often [`delete_and_wait`] looks whether the object is gone.
const GONE_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// Deletes the object `name` (a missing one being fine) and waits until it is gone;
/// false if it was still there after `patience`.
pub async fn delete_and_wait<K>(
    api: &Api<K>,
    name: &str,
    params: &DeleteParams,
    patience: std::time::Duration,
) -> Result<bool, kube::Error>
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    delete_if_present(api, name, params).await?;
    let deadline = tokio::time::Instant::now() + patience;
    while api.get_opt(name).await?.is_some() {
        if tokio::time::Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(GONE_POLL).await;
    }
    Ok(true)
}

/// Adds `finalizer` to `object` (at its resourceVersion) unless it has it, as
/// `field_manager`.
pub async fn add_finalizer<K>(
    api: &Api<K>,
    object: &K,
    finalizer: &str,
    field_manager: &str,
) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    if object.finalizers().iter().any(|f| f == finalizer) {
        return Ok(());
    }
    let mut finalizers = object.finalizers().to_vec();
    finalizers.push(finalizer.to_string());
    set_finalizers(api, object, &finalizers, field_manager).await
}

/// Removes `finalizer` from `object` (at its resourceVersion), as `field_manager`; the
/// object may then go. An object without it, or gone already, is fine.
pub async fn remove_finalizer<K>(
    api: &Api<K>,
    object: &K,
    finalizer: &str,
    field_manager: &str,
) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    if !object.finalizers().iter().any(|f| f == finalizer) {
        return Ok(());
    }
    let finalizers: Vec<String> = object
        .finalizers()
        .iter()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    match set_finalizers(api, object, &finalizers, field_manager).await {
        Err(kube::Error::Api(response)) if response.code == 404 => Ok(()),
        done => done,
    }
}

/// Sets `object`'s finalizers as `field_manager`, failing if it changed since it was read.
async fn set_finalizers<K>(
    api: &Api<K>,
    object: &K,
    finalizers: &[String],
    field_manager: &str,
) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    let patch = json!({"metadata": {"finalizers": finalizers,
                                    "resourceVersion": object.resource_version()}});
    api.patch(
        &object.name_any(),
        &patch_params(field_manager),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// Drops `object`'s managedFields: for watch caches, whose readers never look at them
/// (they are often most of a small object's size, and a cache may hold 100,000 objects).
pub fn without_managed_fields<K: kube::Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// A client of the same cluster as `client` whose every request carries `name: value`.
pub fn with_header(
    client: &kube::Client,
    name: http::HeaderName,
    value: http::HeaderValue,
) -> kube::Client {
    let inner = client.clone();
    let service = tower::service_fn(move |mut request: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        request.headers_mut().insert(name.clone(), value.clone());
        async move { inner.send(request).await }
    });
    kube::Client::new(service, client.default_namespace())
}

/// A client of the same cluster as `client` that asks for objects without their
/// managedFields ([`crate::hints::MANAGED_FIELDS_HEADER`]): a fleet-rs hub leaves them out
/// of what it returns, another API server ignores the header. For controllers that never
/// read them.
pub fn omitting_managed_fields(client: &kube::Client) -> kube::Client {
    let (name, value) = managed_fields_omitted();
    with_header(client, name, value)
}

/// The header that asks for objects without their managedFields
/// ([`crate::hints::MANAGED_FIELDS_HEADER`]), for a client built another way.
pub fn managed_fields_omitted() -> (http::HeaderName, http::HeaderValue) {
    (
        http::HeaderName::from_static(crate::hints::MANAGED_FIELDS_HEADER),
        http::HeaderValue::from_static(crate::hints::OMIT_MANAGED_FIELDS),
    )
}
