//! What every long-running part (gitjob, the controller, the agent, the hub) does as a
//! process: log, stop on Ctrl-C or SIGTERM, and serve small HTTP endpoints such as
//! `/healthz`.

use std::net::SocketAddr;

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
