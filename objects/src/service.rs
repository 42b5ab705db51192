//! What every long-running part (gitjob, the controller, the agent, the hub) does as a
//! process: log, stop on Ctrl-C or SIGTERM, and serve small HTTP endpoints such as
//! `/healthz`.

use std::net::SocketAddr;

/// Logs to standard error at the level `$FLEET_LOG` asks for (a tracing filter such as
/// `info` or `fleet_gitjob=debug`), warnings and errors by default.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FLEET_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
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

/// Serves `router` on `addr` in the background, saying where in the log; returns the address
/// bound (`addr` may ask for any port) and the serving task.
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
    tracing::info!("{what} on http://{bound}");
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(%error, "HTTP server stopped");
        }
    });
    Ok((bound, task))
}

/// `/healthz` and `/readyz` for a process with nothing more to say than that it runs.
pub fn health_router() -> axum::Router {
    axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .route("/readyz", axum::routing::get(|| async { "ok" }))
}
