//! Joining the fleet with a registration token: the agent asks for a Cluster with a
//! ClusterRegistration and receives its own credential, which it keeps in a Secret of its
//! own cluster (as Fleet's agent keeps `fleet-agent`), so that a rescheduled agent goes on
//! with it after the registration token has expired.
//!
//! The agent registers as a client id the other holders of the token cannot know: the uid
//! of its cluster's `kube-system` namespace, as Fleet's agent does. The controller gives a
//! Cluster's credential only to the client that registered it first.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use fleet_api::labels::TOKEN_LABEL;
use fleet_api::{BundleDeployment, ClusterRegistration};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{ListParams, Patch};
use kube::Api;
use serde_json::json;

use crate::Error;

/// The Secret, in the agent's namespace of its own cluster, that keeps its credential.
pub const CREDENTIAL_SECRET: &str = "fleet-agent";

/// Where a registered agent finds the hub: its credential and its cluster namespace.
pub struct Registered {
    /// The agent's own kubeconfig for the hub.
    pub kubeconfig: kube::config::Kubeconfig,
    /// The cluster's namespace on the hub, where its BundleDeployments are.
    pub namespace: String,
    /// The Cluster object, as `namespace/name`.
    pub cluster: String,
}

impl Registered {
    /// A client of the hub with the agent's credential.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        client_of(self.kubeconfig.clone()).await
    }
}

/// Where the agent keeps its credential: a Secret in `namespace` of the cluster `member`
/// reaches.
pub struct CredentialStore {
    /// A client of the agent's own cluster.
    pub member: kube::Client,
    /// The agent's namespace there.
    pub namespace: String,
}

/// What an agent asks to join as.
pub struct Request<'a> {
    /// The token kubeconfig (as `fleet token create` prints it).
    pub token: &'a Path,
    /// The Cluster's name.
    pub cluster_name: &'a str,
    /// The Cluster's labels.
    pub labels: BTreeMap<String, String>,
}

fn failed(message: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("registration: {message}"))
}

async fn client_of(file: kube::config::Kubeconfig) -> Result<kube::Client, Error> {
    let config = kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .map_err(failed)?;
    Ok(kube::Client::try_from(config)?)
}

/// 32 random bytes as lowercase hex: the registration's `clientRandom`.
fn client_random() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The credential kept in `store`, if there is one and the hub still takes it.
pub async fn stored(store: &CredentialStore) -> Result<Option<Registered>, Error> {
    let secrets: Api<Secret> = Api::namespaced(store.member.clone(), &store.namespace);
    let Some(secret) = secrets.get_opt(CREDENTIAL_SECRET).await? else {
        return Ok(None);
    };
    let data = secret.data.unwrap_or_default();
    let text = |key: &str| {
        data.get(key)
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
    };
    let (Some(kubeconfig), Some(namespace), Some(cluster_namespace), Some(cluster_name)) = (
        text("kubeconfig"),
        text("deploymentNamespace"),
        text("clusterNamespace"),
        text("clusterName"),
    ) else {
        return Ok(None);
    };
    let cluster = format!("{cluster_namespace}/{cluster_name}");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&kubeconfig).map_err(|e| {
        failed(format!(
            "Secret {}/{CREDENTIAL_SECRET}: key kubeconfig: {e}",
            store.namespace
        ))
    })?;
    let registered = Registered {
        kubeconfig,
        namespace,
        cluster,
    };
    // A revoked credential (its Cluster deleted) is replaced by registering again; a hub
    // that does not answer now is no reason to.
    let own: Api<BundleDeployment> =
        Api::namespaced(registered.client().await?, &registered.namespace);
    match own.list(&ListParams::default().limit(1)).await {
        Err(kube::Error::Api(response)) if matches!(response.code, 401 | 403) => {
            tracing::warn!(namespace = %store.namespace, "the kept credential was refused; registering again");
            Ok(None)
        }
        _ => Ok(Some(registered)),
    }
}

/// The agent's credential: the one kept in `store` while the hub takes it, else a new one
/// from registering as `request` asks (waiting up to `patience` for the controller), which
/// is then kept there.
pub async fn register(
    request: Request<'_>,
    store: &CredentialStore,
    patience: Duration,
) -> Result<Registered, Error> {
    if let Some(registered) = stored(store).await? {
        return Ok(registered);
    }
    let file = kube::config::Kubeconfig::read_from(request.token).map_err(failed)?;
    let context = file
        .contexts
        .first()
        .and_then(|c| c.context.clone())
        .ok_or_else(|| failed("the token kubeconfig has no context"))?;
    let namespace = context.namespace.unwrap_or_else(|| "fleet-default".into());
    let token = context.user.unwrap_or_default();
    let token = token.strip_prefix("import-").unwrap_or(&token).to_string();
    let client = client_of(file).await?;
    let api: Api<ClusterRegistration> = Api::namespaced(client.clone(), &namespace);
    let mut registration = ClusterRegistration::new("", Default::default());
    registration.metadata.name = None;
    registration.metadata.generate_name = Some(format!("{}-", request.cluster_name));
    registration.metadata.labels = Some(BTreeMap::from([(TOKEN_LABEL.to_string(), token)]));
    registration.spec.client_id = Some(client_id(&store.member).await?);
    registration.spec.cluster_name = Some(request.cluster_name.to_string());
    registration.spec.cluster_labels = request.labels;
    registration.spec.client_random = Some(client_random().map_err(failed)?);
    let secret_name = registration
        .spec
        .credential_secret_name()
        .ok_or_else(|| failed("no credential name"))?;
    api.create(&crate::apply::post_params(), &registration)
        .await?;
    // The token may read this one Secret once the controller has granted the request (until
    // then it is missing, or not yet readable).
    let secrets = Api::<Secret>::namespaced(client, &namespace);
    let started = Instant::now();
    let secret = loop {
        match secrets.get(&secret_name).await {
            Ok(secret) => break secret,
            Err(kube::Error::Api(response)) if matches!(response.code, 403 | 404) => {}
            Err(error) => return Err(error.into()),
        }
        if started.elapsed() > patience {
            return Err(failed(format!(
                "cluster {} was not granted in {} s: is `fleet controller` running? It refuses a \
                 cluster name that another cluster registered (see its log)",
                request.cluster_name,
                patience.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let data = secret.data.unwrap_or_default();
    let text = |key: &str| {
        data.get(key)
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
            .ok_or_else(|| failed(format!("secret {secret_name} has no `{key}`")))
    };
    let (kubeconfig, home, cluster) = (text("kubeconfig")?, text("namespace")?, text("cluster")?);
    keep(store, &kubeconfig, &home, &cluster).await?;
    Ok(Registered {
        kubeconfig: kube::config::Kubeconfig::from_yaml(&kubeconfig).map_err(failed)?,
        namespace: home,
        cluster,
    })
}

/// The client id the agent registers as: the uid of its cluster's `kube-system` namespace.
async fn client_id(member: &kube::Client) -> Result<String, Error> {
    let namespaces: Api<Namespace> = Api::all(member.clone());
    namespaces
        .get("kube-system")
        .await?
        .metadata
        .uid
        .ok_or_else(|| failed("the kube-system namespace has no uid"))
}

/// Writes the credential into the store's Secret (and its namespace, if missing), with the
/// keys Fleet's agent uses.
async fn keep(
    store: &CredentialStore,
    kubeconfig: &str,
    namespace: &str,
    cluster: &str,
) -> Result<(), Error> {
    fleet_objects::client::ensure_namespace(
        &store.member,
        &store.namespace,
        crate::apply::FIELD_MANAGER,
    )
    .await?;
    let (cluster_namespace, cluster_name) = cluster.split_once('/').unwrap_or(("", cluster));
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": CREDENTIAL_SECRET, "namespace": store.namespace},
        "type": "Opaque",
        "stringData": {
            "kubeconfig": kubeconfig,
            "deploymentNamespace": namespace,
            "clusterNamespace": cluster_namespace,
            "clusterName": cluster_name,
        },
    });
    Api::<Secret>::namespaced(store.member.clone(), &store.namespace)
        .patch(
            CREDENTIAL_SECRET,
            &kube::api::PatchParams::apply(crate::apply::FIELD_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await?;
    Ok(())
}
