//! Bounds on connections: at most [`MAX_CONNECTIONS`] open at once (each holds a file
//! descriptor, and a flood of idle ones must not exhaust them and lock every client out),
//! and timeouts that close connections that send nothing: the TLS handshake, the first
//! request, an HTTP/1.1 connection idle between requests (or slow to send headers), and idle
//! HTTP/2 connections.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum_server::accept::Accept;
use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most connections served at once; more are closed as they arrive.
pub const MAX_CONNECTIONS: usize = 16_384;
/// How long a connection may take to send its first request (after the TLS handshake).
pub const FIRST_REQUEST: Duration = Duration::from_secs(10);
/// How long an HTTP/1.1 connection may sit idle between requests, and how long a client may
/// take to send a request's headers (hyper keeps one timer for both). Longer than the 90 s
/// that kube-rs's (hyper's) and Go's client pools keep an idle connection, so that the hub
/// never closes one as the client sends on it (kube-apiserver keeps idle connections 90 s).
pub const KEEP_ALIVE_IDLE: Duration = Duration::from_secs(120);
/// HTTP/2 pings: an idle connection that does not answer one in time is closed.
pub const HTTP2_PING: Duration = Duration::from_secs(30);
/// How long a ping may go unanswered.
pub const HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(10);

/// Sets the timeouts on a server.
pub fn with_timeouts<A: axum_server::Address, Acc>(
    server: axum_server::Server<A, Acc>,
) -> axum_server::Server<A, Acc> {
    let mut server = server.first_request_timeout(FIRST_REQUEST);
    server
        .http_builder()
        .http1()
        .header_read_timeout(KEEP_ALIVE_IDLE);
    server
        .http_builder()
        .http2()
        .keep_alive_interval(HTTP2_PING)
        .keep_alive_timeout(HTTP2_PING_TIMEOUT);
    server
}

/// An acceptor that admits a connection only while fewer than `permits` are open; it
/// wraps the acceptor that runs next (TLS, or none).
#[derive(Clone)]
pub struct ConnectionLimit<A> {
    inner: A,
    permits: Arc<Semaphore>,
}

impl<A> ConnectionLimit<A> {
    /// Admits at most `limit` connections at once, then hands each to `inner`.
    pub fn new(inner: A, limit: usize) -> Self {
        Self {
            inner,
            permits: Arc::new(Semaphore::new(limit)),
        }
    }
}

impl<A, I, S> Accept<I, S> for ConnectionLimit<A>
where
    A: Accept<Counted<I>, S> + Clone + Send + Sync + 'static,
    A::Future: Send,
    I: Send + 'static,
    S: Send + 'static,
{
    type Stream = A::Stream;
    type Service = A::Service;
    type Future = BoxFuture<'static, io::Result<(Self::Stream, Self::Service)>>;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        let inner = self.inner.clone();
        let permit = self.permits.clone().try_acquire_owned();
        Box::pin(async move {
            let Ok(permit) = permit else {
                return Err(io::Error::other("too many connections"));
            };
            inner
                .accept(
                    Counted {
                        inner: stream,
                        _permit: permit,
                    },
                    service,
                )
                .await
        })
    }
}

/// A stream that frees its connection slot when dropped.
pub struct Counted<I> {
    inner: I,
    _permit: OwnedSemaphorePermit,
}

impl<I: AsyncRead + Unpin> AsyncRead for Counted<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Counted<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum_server::accept::DefaultAcceptor;

    #[tokio::test]
    async fn connections_beyond_the_limit_are_refused_until_one_closes() {
        let limit = ConnectionLimit::new(DefaultAcceptor, 2);
        let stream = || tokio::io::duplex(64).0;
        let first = limit.accept(stream(), ()).await.expect("first");
        let second = limit.accept(stream(), ()).await.expect("second");
        assert!(
            limit.accept(stream(), ()).await.is_err(),
            "a third is refused"
        );
        drop(first);
        let third = limit.accept(stream(), ()).await.expect("a slot was freed");
        drop((second, third));
    }
}
