//! The demo's push webhook: gitjob's receiver on a local port, and a sender that signs
//! and posts each new commit of the demo repository to it, as a Git host would on a push.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use base64::Engine as _;
use fleet_gitjob::metrics::Metrics;
use fleet_gitjob::webhook::{self, providers::hmac_sha256_hex};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::json;

/// Where gitjob hears pushes, and the secret they are signed with.
pub struct Hook {
    /// The receiver's address.
    pub addr: SocketAddr,
    secret: String,
    server: tokio::task::JoinHandle<()>,
}

/// Namespace of Fleet's `gitjob-webhook` Secret.
const SECRET_NAMESPACE: &str = "cattle-fleet-system";

impl Hook {
    /// Stores a new `generic` secret in Fleet's `gitjob-webhook` Secret and serves gitjob's
    /// receiver on a free local port.
    pub async fn start(client: &kube::Client, metrics: Arc<Metrics>) -> Result<Self> {
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
                &PatchParams::apply(super::FIELD_MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await
            .context("storing the webhook secret")?;
        let receiver = webhook::Receiver::new(client.clone(), SECRET_NAMESPACE, metrics);
        let (addr, server) = super::super::serve_http(
            "127.0.0.1:0".parse()?,
            webhook::router(receiver),
            "webhooks",
        )
        .await?;
        Ok(Self {
            addr,
            secret,
            server,
        })
    }

    /// Stops the receiver (and lets go of its client).
    pub async fn stop(self) {
        self.server.abort();
        // A cancelled task's result says only that it was cancelled.
        let _ = self.server.await;
    }

    /// Posts a signed push of `commit` on `main` of the repository at `repo`.
    pub async fn push(&self, repo: &Path, commit: &str) -> Result<()> {
        let body = json!({
            "repository": format!("file://{}", repo.display()),
            "branch": "main",
            "commit": commit,
        })
        .to_string();
        let signature = format!(
            "sha256={}",
            hmac_sha256_hex(self.secret.as_bytes(), body.as_bytes())
        );
        let url = format!("http://{}/generic", self.addr);
        let delivery = commit.to_string();
        let status = tokio::task::spawn_blocking(move || {
            ureq::post(&url)
                .header("content-type", "application/json")
                .header("x-fleet-signature-256", &signature)
                .header("x-fleet-delivery", &delivery)
                .config()
                .http_status_as_error(false)
                .build()
                .send(&body)
                .map(|response| response.status().as_u16())
        })
        .await??;
        if status != 200 {
            bail!("the webhook receiver answered {status}");
        }
        Ok(())
    }
}
