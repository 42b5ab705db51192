//! The webhook receiver (axum): a push from GitHub, GitLab, Gitea, Gogs, Bitbucket Cloud or
//! Server, or fleet-rs' generic JSON, verified against the secret in Fleet's
//! `gitjob-webhook` Secret or the GitRepo's own `webhookSecret`, marks the GitRepos that
//! follow that repository and branch; the controller sees the mark and syncs at once.
//! `/metrics`, `/healthz` and `/readyz` are served beside it.

pub mod providers;
mod replay;

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use fleet_api::GitRepo;
use fleet_objects::client::patch_params;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Patch;
use kube::{Api, ResourceExt};
use serde_json::json;
use sha2::Digest;

use crate::controller::FIELD_MANAGER;
use crate::metrics::{Metrics, WebhookResult};
use crate::repo_url::repo_key;
use providers::{Event, Provider, Push};

/// Fleet's name of the Secret holding webhook secrets, one key per provider.
pub const SECRET_NAME: &str = "gitjob-webhook";
/// The largest payload read (GitHub caps its own at 25 MB).
pub const MAX_BODY: usize = 25 * 1024 * 1024;
/// The most payloads read at once; others wait their turn (within the listener's request
/// timeout), so that slow senders hold connections, not `MAX_BODY` of memory each.
pub const PAYLOADS_AT_ONCE: usize = 16;

/// What the receiver needs.
pub struct Receiver {
    client: kube::Client,
    secret_namespace: String,
    metrics: Arc<Metrics>,
    seen: Mutex<replay::Seen>,
    payloads: Arc<tokio::sync::Semaphore>,
}

impl Receiver {
    /// A receiver reading GitRepos through `client` and the global webhook Secret from
    /// `secret_namespace` (Fleet's `cattle-fleet-system`). Deliveries are remembered for a
    /// day to refuse replays; with `deliveries`, in that file too, across restarts.
    pub fn new(
        client: kube::Client,
        secret_namespace: &str,
        metrics: Arc<Metrics>,
        deliveries: Option<&std::path::Path>,
    ) -> Arc<Self> {
        Arc::new(Self {
            client,
            secret_namespace: secret_namespace.to_string(),
            metrics,
            seen: Mutex::new(replay::Seen::new(deliveries)),
            payloads: Arc::new(tokio::sync::Semaphore::new(PAYLOADS_AT_ONCE)),
        })
    }
}

/// The routes: `POST /` (any provider, told by its headers), `POST /generic`, and
/// `/metrics`, `/healthz`, `/readyz`.
pub fn router(receiver: Arc<Receiver>) -> Router {
    let payloads = receiver.payloads.clone();
    Router::new()
        .route("/", post(receive_detected))
        .route("/generic", post(receive_generic))
        .route_layer(axum::middleware::from_fn(move |request, next| {
            one_of_the_payloads(payloads.clone(), request, next)
        }))
        .merge(metrics_router(receiver.metrics.clone()))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(receiver)
}

/// Reads a payload once fewer than [`PAYLOADS_AT_ONCE`] are being read.
async fn one_of_the_payloads(
    payloads: Arc<tokio::sync::Semaphore>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let Ok(_turn) = payloads.acquire_owned().await else {
        return axum::response::IntoResponse::into_response(StatusCode::SERVICE_UNAVAILABLE);
    };
    next.run(request).await
}

/// `/metrics`, `/healthz` and `/readyz` alone, for a gitjob without webhooks.
pub fn metrics_router<S: Clone + Send + Sync + 'static>(metrics: Arc<Metrics>) -> Router<S> {
    Router::new()
        .route("/metrics", get(move || async move { metrics.render() }))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }))
}

async fn receive_detected(
    State(receiver): State<Arc<Receiver>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    receive(&receiver, &headers, &body, false).await
}

async fn receive_generic(
    State(receiver): State<Arc<Receiver>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    receive(&receiver, &headers, &body, true).await
}

async fn receive(
    receiver: &Receiver,
    headers: &HeaderMap,
    body: &[u8],
    generic: bool,
) -> (StatusCode, String) {
    let (result, status, message) = match handle(receiver, headers, body, generic).await {
        Ok(reply) => reply,
        Err(e) => (
            WebhookResult::Error,
            StatusCode::INTERNAL_SERVER_ERROR,
            e.to_string(),
        ),
    };
    receiver.metrics.webhook(result);
    tracing::info!(result = ?result, %message, "webhook");
    (status, message)
}

/// A webhook's answer: how it is counted, its status and its text.
type Reply = (WebhookResult, StatusCode, String);

fn reply(result: WebhookResult, status: StatusCode, message: impl Into<String>) -> Reply {
    (result, status, message.into())
}

async fn handle(
    receiver: &Receiver,
    headers: &HeaderMap,
    body: &[u8],
    generic: bool,
) -> kube::Result<Reply> {
    let Some(provider) = Provider::detect(headers, generic) else {
        return Ok(reply(
            WebhookResult::BadRequest,
            StatusCode::BAD_REQUEST,
            "no known webhook headers (GitHub, GitLab, Gitea, Gogs, Bitbucket)",
        ));
    };
    let global = secret_values(
        &receiver.client,
        &receiver.secret_namespace,
        SECRET_NAME,
        provider,
    )
    .await?;
    if global
        .as_ref()
        .is_some_and(|secret| !provider.verify(headers, body, secret))
    {
        return Ok(unauthorized(provider));
    }
    if let Event::Other(name) = provider.event(headers) {
        let message = format!("event `{name}` ignored");
        return Ok(reply(WebhookResult::Ignored, StatusCode::OK, message));
    }
    let Some(push) = provider.parse_push(body) else {
        let message = format!("not a {provider:?} push payload");
        return Ok(reply(
            WebhookResult::BadRequest,
            StatusCode::BAD_REQUEST,
            message,
        ));
    };
    if let Err(why) = push.check() {
        return Ok(reply(
            WebhookResult::BadRequest,
            StatusCode::BAD_REQUEST,
            why,
        ));
    }
    let gitrepos: Api<GitRepo> = Api::all(receiver.client.clone());
    let all = gitrepos.list(&Default::default()).await?.items;
    let mut marked = Vec::new();
    let (mut refused, mut unsigned) = (0, 0);
    for gitrepo in all.iter().filter(|g| follows(g, &push)) {
        match own_secret(receiver, gitrepo, provider).await? {
            Some(secret) if !provider.verify(headers, body, &secret) => {
                refused += 1;
                continue;
            }
            // Anyone can post a push: without a secret to check, it is refused.
            None if global.is_none() => {
                unsigned += 1;
                continue;
            }
            _ => {}
        }
        marked.push(gitrepo);
    }
    // A push nothing verified gets one answer whether or not a GitRepo follows its
    // repository, with a secret of its own or none: anyone may post, and must not learn
    // which repositories are followed.
    if marked.is_empty() && (refused > 0 || unsigned > 0 || global.is_none()) {
        let message = format!(
            "the push is not signed with a webhook secret gitjob holds for {provider:?}: set key `{}` in Secret {}/{SECRET_NAME} or in the Secret a GitRepo names in webhookSecret; unsigned pushes are refused",
            provider.secret_keys().first().copied().unwrap_or_default(),
            receiver.secret_namespace
        );
        return Ok(reply(
            WebhookResult::Unauthorized,
            StatusCode::UNAUTHORIZED,
            message,
        ));
    }
    if !first_delivery(receiver, provider, headers, body) {
        let message = "this push was already received (same delivery id or same signed body)";
        return Ok(reply(
            WebhookResult::Replayed,
            StatusCode::UNAUTHORIZED,
            message,
        ));
    }
    if marked.is_empty() {
        let message = "no GitRepo follows that repository and branch";
        return Ok(reply(WebhookResult::Ignored, StatusCode::OK, message));
    }
    let mut names = Vec::new();
    for gitrepo in marked {
        mark(receiver, gitrepo, &push).await?;
        names.push(format!(
            "{}/{}",
            gitrepo.namespace().unwrap_or_default(),
            gitrepo.name_any()
        ));
    }
    let message = format!("syncing {}", names.join(", "));
    Ok(reply(WebhookResult::Synced, StatusCode::OK, message))
}

/// Whether this push is new: neither its delivery id nor its body (what the signature
/// covers, so a replay cannot change it) was received before. A replay with a new or
/// missing delivery id is still caught by its body.
fn first_delivery(
    receiver: &Receiver,
    provider: Provider,
    headers: &HeaderMap,
    body: &[u8],
) -> bool {
    let Ok(mut seen) = receiver.seen.lock() else {
        return false;
    };
    let digest = sha2::Sha256::digest(body);
    let body_key: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let body_fresh = seen.first_time(&format!("{provider:?}/body/{body_key}"));
    let id_fresh = provider
        .delivery_id(headers)
        .is_none_or(|id| seen.first_time(&format!("{provider:?}/delivery/{id}")));
    body_fresh && id_fresh
}

fn unauthorized(provider: Provider) -> Reply {
    let message = format!("{provider:?} signature does not verify");
    reply(
        WebhookResult::Unauthorized,
        StatusCode::UNAUTHORIZED,
        message,
    )
}

/// Whether `gitrepo` follows the pushed repository and ref: its branch (one without a
/// branch follows every branch, as in Fleet), or, pinned to a revision, pushes of that tag
/// (moved or made again; Fleet follows none, its issue #3474). A revision that is a commit
/// never moves, and no push names it as a tag.
fn follows(gitrepo: &GitRepo, push: &Push) -> bool {
    let spec = &gitrepo.spec;
    let key = repo_key(&spec.repo);
    if !push.repo_urls.iter().any(|u| repo_key(u) == key) {
        return false;
    }
    if let Some(revision) = spec.revision.as_deref().filter(|r| !r.is_empty()) {
        return push.tag.as_deref() == Some(revision);
    }
    match spec.branch.as_deref().filter(|b| !b.is_empty()) {
        Some(branch) => push.branch.as_deref() == Some(branch),
        None => true,
    }
}

/// The GitRepo's own `webhookSecret` value for `provider`, if it names a Secret.
async fn own_secret(
    receiver: &Receiver,
    gitrepo: &GitRepo,
    provider: Provider,
) -> kube::Result<Option<Vec<u8>>> {
    let Some(name) = gitrepo
        .spec
        .webhook_secret
        .as_deref()
        .filter(|n| !n.is_empty())
    else {
        return Ok(None);
    };
    let namespace = gitrepo.namespace().unwrap_or_default();
    secret_values(&receiver.client, &namespace, name, provider).await
}

/// The value for `provider` in Secret `namespace/name`, if both exist.
async fn secret_values(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    provider: Provider,
) -> kube::Result<Option<Vec<u8>>> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let Some(secret) = secrets.get_opt(name).await? else {
        return Ok(None);
    };
    let data = secret.data.unwrap_or_default();
    Ok(provider
        .secret_keys()
        .iter()
        .find_map(|key| data.get(*key))
        .map(|value| value.0.clone()))
}

/// Records the pushed commit as `status.webhookCommit`; the controller's watch sees the
/// change and syncs.
async fn mark(receiver: &Receiver, gitrepo: &GitRepo, push: &Push) -> kube::Result<()> {
    let namespace = gitrepo.namespace().unwrap_or_default();
    let api: Api<GitRepo> = Api::namespaced(receiver.client.clone(), &namespace);
    let commit = push
        .commit
        .clone()
        .unwrap_or_else(|| format!("webhook-{}", jiff::Timestamp::now().as_millisecond()));
    let patch = json!({ "status": { "webhookCommit": commit } });
    api.patch_status(
        &gitrepo.name_any(),
        &patch_params(FIELD_MANAGER),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}
