//! What every long-running part (gitjob, the controller, the agent, the hub) does as a
//! process: log, stop on Ctrl-C or SIGTERM, and serve small HTTP endpoints such as
//! `/healthz` and gitjob's webhooks, with bounds on connections and on each request.

pub mod connections;

use std::net::SocketAddr;
use std::time::Duration;

use connections::{with_timeouts, ConnectionLimit};

/// Logs to standard error at the level `$FLEET_LOG` asks for (a tracing filter such as
/// `info` or `fleet_gitjob=debug`), warnings and errors by default.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(log_filter(std::env::var("FLEET_LOG").ok().as_deref()))
        .with_writer(std::io::stderr)
        .init();
}

/// The filter a process logs with: the one asked for (warnings by default), except that
/// kube-client's own warnings are never shown: when a response does not decode it logs the
/// whole body, and a list of Secrets holds every token and kubeconfig in it. The error
/// itself still reaches the caller, which logs it without the body.
fn log_filter(asked: Option<&str>) -> tracing_subscriber::EnvFilter {
    let filter = asked
        .and_then(|asked| tracing_subscriber::EnvFilter::try_new(asked).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("warn"));
    match "kube_client::client=error".parse() {
        Ok(quiet) => filter.add_directive(quiet),
        Err(_) => filter,
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}

/// Why an HTTP endpoint could not be served.
#[derive(Debug, thiserror::Error)]
#[error("listening for {what} on {addr}: {source}")]
pub struct ServeError {
    /// What was to be served.
    pub what: String,
    /// The address asked for.
    pub addr: SocketAddr,
    /// The cause.
    pub source: std::io::Error,
}

/// The most connections one of these endpoints keeps open at once; more are closed as they
/// arrive (each holds a file descriptor, and the process's other work needs some).
pub const ENDPOINT_CONNECTIONS: usize = 1_024;
/// How long one request may take, its body read included: a client that sends slowly (or
/// never finishes) is answered 408 and its connection closed.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `router` on `addr` in the background, saying where in the log; returns the address
/// bound (`addr` may ask for any port) and the serving task. Connections are bounded as the
/// hub bounds its own ([`connections`]): at most [`ENDPOINT_CONNECTIONS`], closed when they
/// send nothing, and each request is given [`REQUEST_TIMEOUT`].
pub async fn serve_http(
    addr: SocketAddr,
    router: axum::Router,
    what: &str,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), ServeError> {
    let failed = |source| ServeError {
        what: what.to_string(),
        addr,
        source,
    };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(failed)?;
    let bound = listener.local_addr().map_err(failed)?;
    let listener = listener.into_std().map_err(failed)?;
    tracing::info!("{what} on http://{bound}");
    let router = router.layer(axum::middleware::from_fn(within_request_timeout));
    let server = with_timeouts(axum_server::from_tcp(listener).map_err(failed)?).acceptor(
        ConnectionLimit::new(axum_server::accept::DefaultAcceptor, ENDPOINT_CONNECTIONS),
    );
    let task = tokio::spawn(async move {
        if let Err(error) = server.serve(router.into_make_service()).await {
            tracing::error!(%error, "HTTP server stopped");
        }
    });
    Ok((bound, task))
}

/// Runs a request within [`REQUEST_TIMEOUT`], or answers 408.
async fn within_request_timeout(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match tokio::time::timeout(REQUEST_TIMEOUT, next.run(request)).await {
        Ok(response) => response,
        Err(_) => (
            axum::http::StatusCode::REQUEST_TIMEOUT,
            "the request took too long\n",
        )
            .into_response(),
    }
}

/// `/healthz` and `/readyz` for a process with nothing more to say than that it runs.
pub fn health_router() -> axum::Router {
    axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .route("/readyz", axum::routing::get(|| async { "ok" }))
}

#[cfg(test)]
mod tests {
    use super::log_filter;

    #[test]
    fn kube_clients_body_dumps_stay_out_of_the_log_whatever_is_asked() {
        for asked in [
            None,
            Some("debug"),
            Some("kube_client=trace"),
            Some("not a filter["),
        ] {
            let shown = log_filter(asked).to_string();
            assert!(
                shown.contains("kube_client::client=error"),
                "{asked:?}: {shown}"
            );
        }
        assert!(log_filter(Some("fleet_gitjob=debug"))
            .to_string()
            .contains("fleet_gitjob=debug"));
    }
}
