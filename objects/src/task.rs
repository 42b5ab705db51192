//! A reconcile on its own task, for kube-runtime's `applier`: so that reconciles use every
//! core, and one dropped (its controller stopping) stops.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future running on its own task, stopped if dropped.
pub struct Task<T>(tokio::task::JoinHandle<T>);

impl<T: Send + 'static> Task<T> {
    /// Spawns `future`.
    pub fn spawn(future: impl Future<Output = T> + Send + 'static) -> Self {
        Self(tokio::spawn(future))
    }
}

impl<T, E: From<tokio::task::JoinError>> Future for Task<Result<T, E>> {
    type Output = Result<T, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|joined| joined.map_err(E::from).and_then(|result| result))
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
