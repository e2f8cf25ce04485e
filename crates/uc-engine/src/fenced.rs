//! The engine's writes go over their own connections whose sockets check the leader fence before
//! every write to the wire: a request the engine prepared before it was paused (SIGSTOP, a stalled VM)
//! and that the runtime flushes after it resumes — past its renew deadline, when a standby may already
//! lead — breaks its connection instead of reaching the API server. Reads and watches use ordinary
//! connections, untouched by the fence.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Until when this process may write: a deadline on the monotonic clock, moved by each lease renewal.
#[derive(Debug)]
pub struct Fence {
    base: Instant,
    /// Nanoseconds after `base` until which writes may go out (0: never).
    until: AtomicU64,
    /// Whether the fence is enforced at all (only under leader election).
    enforced: AtomicBool,
}

impl Default for Fence {
    fn default() -> Self {
        Self { base: Instant::now(), until: AtomicU64::new(0), enforced: AtomicBool::new(false) }
    }
}

impl Fence {
    /// Enforces the fence: from now on writes need a held lease.
    pub fn enforce(&self) {
        self.enforced.store(true, Ordering::Release);
    }

    /// Lets writes out until `deadline`.
    pub fn hold_until(&self, deadline: Instant) {
        let nanos = deadline.saturating_duration_since(self.base).as_nanos().min(u64::MAX as u128) as u64;
        self.until.store(nanos.max(1), Ordering::Release);
    }

    /// Closes the fence at once (leadership lost or given up).
    pub fn close(&self) {
        self.until.store(0, Ordering::Release);
    }

    /// Whether a write may go out at `now`.
    pub fn open_at(&self, now: Instant) -> bool {
        if !self.enforced.load(Ordering::Acquire) {
            return true;
        }
        let until = self.until.load(Ordering::Acquire);
        until != 0 && now.saturating_duration_since(self.base).as_nanos() < until as u128
    }

    /// Whether a write may go out now.
    pub fn open(&self) -> bool {
        self.open_at(Instant::now())
    }
}

/// The error of a write the fence stopped.
#[derive(Debug, thiserror::Error)]
#[error("not sent: this engine does not hold the leader lease")]
pub struct NotLeader;

/// A client whose connections carry bytes only while `fence` is open: HTTP/1.1, a connection per
/// request in flight.
pub fn client(config: &kube::Config, fence: Arc<Fence>) -> Result<kube::Client, kube::Error> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let https = config.rustls_https_connector_with_connector(FencedConnector { inner: http, fence })?;
    // Idle connections are not capped: with 64 reconciles under way the pool would close and open them
    // again all the time, a TLS handshake each (docs/benchmarks.md, **Connections**).
    let hyper = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build::<_, kube::client::Body>(https);
    crate::clients::kube_client(config, hyper)
}

/// Connects as `HttpConnector` does; the connections check the fence.
#[derive(Clone)]
struct FencedConnector {
    inner: HttpConnector,
    fence: Arc<Fence>,
}

impl tower_service::Service<http::Uri> for FencedConnector {
    type Response = FencedIo<<HttpConnector as tower_service::Service<http::Uri>>::Response>;
    type Error = <HttpConnector as tower_service::Service<http::Uri>>::Error;
    type Future = Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let fence = self.fence.clone();
        let connecting = self.inner.call(uri);
        Box::pin(async move { Ok(FencedIo { inner: connecting.await?, fence }) })
    }
}

/// A connection that writes nothing while the fence is closed.
struct FencedIo<T> {
    inner: T,
    fence: Arc<Fence>,
}

fn fenced() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, NotLeader)
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for FencedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for FencedIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if !self.fence.open() {
            return Poll::Ready(Err(fenced()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if !self.fence.open() {
            return Poll::Ready(Err(fenced()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<T: Connection> Connection for FencedIo<T> {
    fn connected(&self) -> Connected {
        self.inner.connected()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_unenforced_fence_is_open() {
        let f = Fence::default();
        assert!(f.open());
        f.enforce();
        assert!(!f.open(), "enforced and never held");
    }

    #[test]
    fn a_fence_holds_until_its_deadline_and_closes_at_once() {
        let f = Fence::default();
        f.enforce();
        let now = Instant::now();
        f.hold_until(now + Duration::from_secs(10));
        assert!(f.open_at(now + Duration::from_secs(9)));
        assert!(!f.open_at(now + Duration::from_secs(10)), "not at the deadline");
        assert!(!f.open_at(now + Duration::from_secs(60)), "a process paused past it writes nothing");
        f.close();
        assert!(!f.open_at(now));
    }
}
