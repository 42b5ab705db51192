//! Push webhooks in one process: gitjob's receiver on a local port, and a sender that
//! signs and posts a commit to it, as a Git host would on a push. `fleet up` pushes each
//! new commit of its demo repository; `fleet bench fleet` pushes its commits, so that a
//! rollout starts at once instead of at gitjob's next poll.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use fleet_gitjob::metrics::Metrics;
use fleet_gitjob::webhook::{self, providers::hmac_sha256_hex};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::json;

/// Why the receiver could not start or a push was not taken.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The secret pushes are signed with could not be stored.
    #[error("storing the webhook secret: {0}")]
    Secret(#[source] kube::Error),
    /// The receiver could not listen.
    #[error(transparent)]
    Serve(#[from] fleet_objects::service::ServeError),
    /// The push could not be sent.
    #[error("posting the push: {0}")]
    Post(String),
    /// The receiver turned the push down.
    #[error("the webhook receiver answered {0}")]
    Refused(u16),
}

/// Where gitjob hears pushes, and the secret they are signed with.
pub struct Hook {
    /// The receiver's address.
    pub addr: SocketAddr,
    secret: String,
    /// The receiver, when this process serves it.
    server: Option<tokio::task::JoinHandle<()>>,
}

/// Who stores the webhook secret.
const FIELD_MANAGER: &str = "fleet-local";

/// Namespace of Fleet's `gitjob-webhook` Secret.
const SECRET_NAMESPACE: &str = "cattle-fleet-system";

impl Hook {
    /// Stores a new `generic` secret in Fleet's `gitjob-webhook` Secret and serves gitjob's
    /// receiver on a free local port.
    pub async fn start(client: &kube::Client, metrics: Arc<Metrics>) -> Result<Self, HookError> {
        let secret = store_secret(client).await?;
        let receiver = webhook::Receiver::new(client.clone(), SECRET_NAMESPACE, metrics, None);
        let any_port = SocketAddr::from(([127, 0, 0, 1], 0));
        let (addr, server) =
            fleet_objects::service::serve_http(any_port, webhook::router(receiver), "webhooks")
                .await?;
        Ok(Self {
            addr,
            secret,
            server: Some(server),
        })
    }

    /// Stores a new `generic` secret as [`Hook::start`] does, for the receiver another
    /// process serves at `addr` (`fleet gitjob --webhook-listen`) against the cluster
    /// `client` reaches.
    pub async fn elsewhere(client: &kube::Client, addr: SocketAddr) -> Result<Self, HookError> {
        let secret = store_secret(client).await?;
        Ok(Self {
            addr,
            secret,
            server: None,
        })
    }

    /// Stops the receiver, when this process serves it (and lets go of its client).
    pub async fn stop(self) {
        if let Some(server) = self.server {
            server.abort();
            // A cancelled task's result says only that it was cancelled.
            let _ = server.await;
        }
    }

    /// Posts a signed push of `commit` on `main` of the repository at `url`.
    pub async fn push(&self, url: &str, commit: &str) -> Result<(), HookError> {
        let body = json!({
            "repository": url,
            "branch": "main",
            "commit": commit,
        })
        .to_string();
        let signature = format!(
            "sha256={}",
            hmac_sha256_hex(self.secret.as_bytes(), body.as_bytes())
        );
        let receiver = format!("http://{}/generic", self.addr);
        let delivery = commit.to_string();
        let status = tokio::task::spawn_blocking(move || {
            ureq::post(&receiver)
                .header("content-type", "application/json")
                .header("x-fleet-signature-256", &signature)
                .header("x-fleet-delivery", &delivery)
                .config()
                .http_status_as_error(false)
                .build()
                .send(&body)
                .map(|response| response.status().as_u16())
        })
        .await
        .map_err(|e| HookError::Post(e.to_string()))?
        .map_err(|e| HookError::Post(e.to_string()))?;
        if status != 200 {
            return Err(HookError::Refused(status));
        }
        Ok(())
    }
}

/// Stores a new secret as the `generic` key of Fleet's `gitjob-webhook` Secret, and returns
/// it.
async fn store_secret(client: &kube::Client) -> Result<String, HookError> {
    let secret = fleet_hub::kinds::new_token();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&secret);
    let body = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": webhook::SECRET_NAME, "namespace": SECRET_NAMESPACE},
        "data": {"generic": encoded},
    });
    Api::<Secret>::namespaced(client.clone(), SECRET_NAMESPACE)
        .patch(
            webhook::SECRET_NAME,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await
        .map_err(HookError::Secret)?;
    Ok(secret)
}
