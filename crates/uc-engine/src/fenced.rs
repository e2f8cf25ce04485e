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

use crate::guard::Guard;

/// A client whose connections carry bytes only while `guard`'s fence is open.
pub fn client(config: &kube::Config, guard: Arc<Guard>) -> Result<kube::Client, kube::Error> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let https = config.rustls_https_connector_with_connector(FencedConnector { inner: http, guard })?;
    let hyper = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build::<_, kube::client::Body>(https);
    let service = tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(|e: hyper_util::client::legacy::Error| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
        .service(hyper);
    Ok(kube::client::ClientBuilder::new(service, config.default_namespace.clone()).build())
}

/// Connects as `HttpConnector` does; the connections check the fence.
#[derive(Clone)]
struct FencedConnector {
    inner: HttpConnector,
    guard: Arc<Guard>,
}

impl tower_service::Service<http::Uri> for FencedConnector {
    type Response = FencedIo<<HttpConnector as tower_service::Service<http::Uri>>::Response>;
    type Error = <HttpConnector as tower_service::Service<http::Uri>>::Error;
    type Future = Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let guard = self.guard.clone();
        let connecting = self.inner.call(uri);
        Box::pin(async move { Ok(FencedIo { inner: connecting.await?, guard }) })
    }
}

/// A connection that writes nothing while the fence is closed.
struct FencedIo<T> {
    inner: T,
    guard: Arc<Guard>,
}

fn fenced() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, crate::guard::NotLeader)
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
        if !self.guard.fence.open() {
            return Poll::Ready(Err(fenced()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if !self.guard.fence.open() {
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
