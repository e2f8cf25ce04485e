//! Answers delimited by the close of a TLS connection, read as Go's HTTP client reads them.
//!
//! An HTTP/1.0 server (Python's `http.server`, Metacontroller's webhook-auth example) may send its
//! answer without `Content-Length` and end it by closing the connection — over TLS, often without a
//! `close_notify` alert. rustls reports that close as `UnexpectedEof`, so hyper fails the body it has
//! read in full ("error reading a body from connection"); Go's client and kube-apiserver take the close
//! as the end of the answer. [`CloseDelimited`] wraps a connector so its connections read such a close
//! as an ordinary end of stream. (A body with a length is still checked by hyper: a close before the
//! last byte stays an error.)

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};

/// A connector whose connections end at a close without `close_notify` instead of failing.
#[derive(Clone)]
pub struct CloseDelimited<C>(pub C);

impl<C> tower_service::Service<http::Uri> for CloseDelimited<C>
where
    C: tower_service::Service<http::Uri>,
    C::Future: Send + 'static,
{
    type Response = Lenient<C::Response>;
    type Error = C::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let connecting = self.0.call(uri);
        Box::pin(async move { connecting.await.map(Lenient) })
    }
}

/// A connection reading an unannounced close as the end of the stream.
pub struct Lenient<S>(S);

/// What a read that ended in `result` means: an unannounced close is an end of stream (nothing read).
fn end_of_stream(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(()),
        other => other,
    }
}

impl<S: Read + Unpin> Read for Lenient<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf).map(end_of_stream)
    }
}

impl<S: Write + Unpin> Write for Lenient<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }
}

impl<S: Connection> Connection for Lenient<S> {
    fn connected(&self) -> Connected {
        self.0.connected()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unannounced_close_ends_the_stream_and_other_errors_stay() {
        assert!(end_of_stream(Err(io::ErrorKind::UnexpectedEof.into())).is_ok());
        assert!(end_of_stream(Ok(())).is_ok());
        let reset = end_of_stream(Err(io::ErrorKind::ConnectionReset.into())).unwrap_err();
        assert_eq!(reset.kind(), io::ErrorKind::ConnectionReset);
    }
}
