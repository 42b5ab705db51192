//! What a kube-rs client needs around it: a client from a kubeconfig file (or the
//! process's own cluster), namespaces made on demand, and Fleet's CRDs installed.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
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

/// Creates namespace `name` unless it exists.
pub async fn ensure_namespace(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
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
    match api.create(&PostParams::default(), &namespace).await {
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
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in FLEET_NAMESPACES {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        namespaces.patch(name, &apply, &Patch::Apply(&body)).await?;
    }
    Ok(())
}
