//! Joining the fleet with a registration token: the agent asks for a Cluster with a
//! ClusterRegistration and receives its own credential, which it keeps for its next start.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fleet_api::labels::TOKEN_LABEL;
use fleet_api::ClusterRegistration;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::Error;

/// Where a registered agent finds the hub: its kubeconfig and its cluster namespace.
pub struct Registered {
    /// The agent's own kubeconfig for the hub.
    pub kubeconfig: PathBuf,
    /// The cluster's namespace on the hub.
    pub namespace: String,
    /// The Cluster object, as `namespace/name`.
    pub cluster: String,
}

fn failed(message: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("registration: {message}"))
}

async fn client_for(kubeconfig: &Path) -> Result<(kube::Client, kube::config::Kubeconfig), Error> {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).map_err(failed)?;
    let config = kube::Config::from_custom_kubeconfig(file.clone(), &Default::default())
        .await
        .map_err(failed)?;
    Ok((kube::Client::try_from(config)?, file))
}

/// 32 random bytes as lowercase hex: the registration's `clientRandom`.
fn client_random() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Registers as `cluster_name` with `labels` using the token kubeconfig `import` (as
/// `fleet token create` prints it), or reuses the credential a previous start stored in
/// `data_dir`. Waits up to `patience` for the controller.
pub async fn register(
    import: &Path,
    cluster_name: &str,
    labels: BTreeMap<String, String>,
    data_dir: &Path,
    patience: Duration,
) -> Result<Registered, Error> {
    let kubeconfig = data_dir.join("hub.kubeconfig");
    let namespace_file = data_dir.join("namespace");
    let cluster_file = data_dir.join("cluster");
    if let (true, Ok(namespace), Ok(cluster)) = (
        kubeconfig.is_file(),
        std::fs::read_to_string(&namespace_file),
        std::fs::read_to_string(&cluster_file),
    ) {
        return Ok(Registered {
            kubeconfig,
            namespace: namespace.trim().to_string(),
            cluster: cluster.trim().to_string(),
        });
    }
    let (client, file) = client_for(import).await?;
    let context = file
        .contexts
        .first()
        .and_then(|c| c.context.clone())
        .ok_or_else(|| failed("the token kubeconfig has no context"))?;
    let namespace = context.namespace.unwrap_or_else(|| "fleet-default".into());
    let token = context.user.unwrap_or_default();
    let token = token.strip_prefix("import-").unwrap_or(&token).to_string();
    let api: Api<ClusterRegistration> = Api::namespaced(client.clone(), &namespace);
    let mut request = ClusterRegistration::new("", Default::default());
    request.metadata.name = None;
    request.metadata.generate_name = Some(format!("{cluster_name}-"));
    request.metadata.labels = Some(BTreeMap::from([(TOKEN_LABEL.to_string(), token)]));
    request.spec.client_id = Some(cluster_name.to_string());
    request.spec.cluster_name = Some(cluster_name.to_string());
    request.spec.cluster_labels = labels;
    request.spec.client_random = Some(client_random().map_err(failed)?);
    let secret_name = request
        .spec
        .credential_secret_name()
        .ok_or_else(|| failed("no credential name"))?;
    api.create(&crate::deploy::post_params(), &request).await?;
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
            return Err(failed(
                "not granted in time (is `fleet controller` running?)",
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let data = secret.data.unwrap_or_default();
    let text = |key: &str| {
        data.get(key)
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
            .ok_or_else(|| failed(format!("secret {secret_name} has no `{key}`")))
    };
    std::fs::create_dir_all(data_dir).map_err(failed)?;
    fleet_objects::secret_file::write(&kubeconfig, text("kubeconfig")?.as_bytes())
        .map_err(failed)?;
    let home = text("namespace")?;
    let cluster = text("cluster")?;
    std::fs::write(&namespace_file, &home).map_err(failed)?;
    std::fs::write(&cluster_file, &cluster).map_err(failed)?;
    Ok(Registered {
        kubeconfig,
        namespace: home,
        cluster,
    })
}
