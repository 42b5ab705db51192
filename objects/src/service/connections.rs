//! Bounds on connections: at most [`MAX_CONNECTIONS`] open at once (each holds a file
//! descriptor, and a flood of idle ones must not exhaust them and lock every client out),
//! at most half of those from one address (one client's flood leaves the others room), and
//! timeouts that close connections that send nothing: the TLS handshake, the first request,
//! an HTTP/1.1 connection idle between requests (or slow to send headers), and idle HTTP/2
//! connections.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
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

/// A connection's remote address, where it has one.
pub trait Peer {
    /// The address the connection comes from.
    fn peer_ip(&self) -> Option<IpAddr>;
}

impl Peer for tokio::net::TcpStream {
    fn peer_ip(&self) -> Option<IpAddr> {
        self.peer_addr().ok().map(|addr| addr.ip())
    }
}

/// An acceptor that admits a connection only while fewer than its limit are open, and
/// fewer than half of it from the same address; it wraps the acceptor that runs next
/// (TLS, or none).
#[derive(Clone)]
pub struct ConnectionLimit<A> {
    inner: A,
    permits: Arc<Semaphore>,
    per_source: usize,
    sources: Arc<Sources>,
}

/// The connections open from each address.
type Sources = Mutex<HashMap<IpAddr, usize>>;

impl<A> ConnectionLimit<A> {
    /// Admits at most `limit` connections at once, `limit / 2` (at least one) from one
    /// address, then hands each to `inner`.
    pub fn new(inner: A, limit: usize) -> Self {
        Self {
            inner,
            permits: Arc::new(Semaphore::new(limit)),
            per_source: (limit / 2).max(1),
            sources: Arc::default(),
        }
    }

    /// Counts a connection from `ip` against its address's share; `None` when that share
    /// is taken.
    fn admit(&self, ip: Option<IpAddr>) -> Option<Source> {
        let Some(ip) = ip else {
            return Some(Source(None));
        };
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        let open = sources.entry(ip).or_default();
        if *open >= self.per_source {
            return None;
        }
        *open += 1;
        Some(Source(Some((ip, self.sources.clone()))))
    }
}

impl<A, I, S> Accept<I, S> for ConnectionLimit<A>
where
    A: Accept<Counted<I>, S> + Clone + Send + Sync + 'static,
    A::Future: Send,
    I: Peer + Send + 'static,
    S: Send + 'static,
{
    type Stream = A::Stream;
    type Service = A::Service;
    type Future = BoxFuture<'static, io::Result<(Self::Stream, Self::Service)>>;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        let inner = self.inner.clone();
        let permit = self.permits.clone().try_acquire_owned();
        let source = self.admit(stream.peer_ip());
        Box::pin(async move {
            let Ok(permit) = permit else {
                return Err(io::Error::other("too many connections"));
            };
            let Some(source) = source else {
                return Err(io::Error::other("too many connections from one address"));
            };
            inner
                .accept(
                    Counted {
                        inner: stream,
                        _permit: permit,
                        _source: source,
                    },
                    service,
                )
                .await
        })
    }
}

/// A connection counted against its address's share, until dropped.
struct Source(Option<(IpAddr, Arc<Sources>)>);

impl Drop for Source {
    fn drop(&mut self) {
        let Some((ip, sources)) = &self.0 else {
            return;
        };
        let mut sources = sources.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(open) = sources.get_mut(ip) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                sources.remove(ip);
            }
        }
    }
}

/// A stream that frees its connection slots when dropped.
pub struct Counted<I> {
    inner: I,
    _permit: OwnedSemaphorePermit,
    _source: Source,
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

    /// A connection from `0` (or from nowhere known).
    struct From(Option<IpAddr>);

    impl Peer for From {
        fn peer_ip(&self) -> Option<IpAddr> {
            self.0
        }
    }

    impl tokio::io::AsyncRead for From {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    impl tokio::io::AsyncWrite for From {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            b: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(b.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn one_address_takes_at_most_half_the_connections() {
        let limit = ConnectionLimit::new(DefaultAcceptor, 4);
        let (a, b): (IpAddr, IpAddr) = (
            "10.0.0.1".parse().expect("ip"),
            "10.0.0.2".parse().expect("ip"),
        );
        let first = limit.accept(From(Some(a)), ()).await.expect("first from a");
        let second = limit
            .accept(From(Some(a)), ())
            .await
            .expect("second from a");
        assert!(
            limit.accept(From(Some(a)), ()).await.is_err(),
            "a third from a is refused"
        );
        let other = limit
            .accept(From(Some(b)), ())
            .await
            .expect("b still gets in");
        drop(first);
        let again = limit
            .accept(From(Some(a)), ())
            .await
            .expect("a's slot was freed");
        drop((second, other, again));
        assert!(lock_sources(&limit).is_empty(), "nothing left counted");
    }

    fn lock_sources<A>(limit: &ConnectionLimit<A>) -> HashMap<IpAddr, usize> {
        limit.sources.lock().expect("sources").clone()
    }

    #[tokio::test]
    async fn connections_beyond_the_limit_are_refused_until_one_closes() {
        let limit = ConnectionLimit::new(DefaultAcceptor, 2);
        let stream = || From(None);
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
