//! WebSocket plumbing of the streaming endpoints: the upgrade handshake with subprotocol negotiation,
//! and one writer task per connection (several producers, one socket; pongs go out with it).

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use http::{HeaderValue, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, frame::coding::CloseCode};

use crate::response::{Body, error};

/// The socket of an upgraded request.
pub type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Whether a request asks for a WebSocket.
pub fn is_websocket(req: &http::Request<Incoming>) -> bool {
    req.headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// The client's subprotocols, in its order of preference.
pub fn offered(req: &http::Request<Incoming>) -> Vec<String> {
    req.headers()
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The first of `supported` (in the server's order of preference) the client offers; "" when the
/// client offers none.
pub fn choose(offered: &[String], supported: &[&str]) -> Option<String> {
    if offered.is_empty() {
        return Some(String::new());
    }
    supported.iter().find(|s| offered.iter().any(|o| o == *s)).map(|s| s.to_string())
}

/// Answers the upgrade (101 with the chosen subprotocol) and hands the socket to `serve` once the
/// connection has switched.
pub fn upgrade<F, Fut>(mut req: http::Request<Incoming>, protocol: &str, serve: F) -> Response<Body>
where
    F: FnOnce(Socket) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let Some(key) = req.headers().get(header::SEC_WEBSOCKET_KEY).map(|k| k.as_bytes().to_vec()) else {
        return error(StatusCode::BAD_REQUEST, "the WebSocket upgrade has no Sec-WebSocket-Key");
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        match on_upgrade.await {
            Ok(io) => serve(WebSocketStream::from_raw_socket(TokioIo::new(io), Role::Server, None).await).await,
            Err(e) => tracing::debug!(error = %e, "WebSocket upgrade failed"),
        }
    });
    let mut r = Response::new(crate::response::empty());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&tokio_tungstenite::tungstenite::handshake::derive_accept_key(&key)) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if !protocol.is_empty()
        && let Ok(v) = HeaderValue::from_str(protocol)
    {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, v);
    }
    r
}

/// What goes out on a socket.
#[derive(Debug)]
pub enum Out {
    /// A binary message.
    Binary(Bytes),
    /// Send queued control frames (pongs).
    Flush,
    /// Close normally and stop.
    Close,
}

/// Splits a socket: a sender for what goes out (handled by a writer task) and the incoming messages.
pub fn split(socket: Socket) -> (mpsc::Sender<Out>, futures::stream::SplitStream<Socket>) {
    let (mut sink, stream) = socket.split();
    let (tx, mut rx) = mpsc::channel::<Out>(64);
    tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            let r = match out {
                Out::Binary(b) => sink.send(Message::Binary(b)).await,
                Out::Flush => sink.flush().await,
                Out::Close => {
                    let frame = CloseFrame { code: CloseCode::Normal, reason: "".into() };
                    let _ = sink.send(Message::Close(Some(frame))).await;
                    let _ = sink.flush().await;
                    return;
                }
            };
            if r.is_err() {
                return;
            }
        }
    });
    (tx, stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subprotocols_follow_the_servers_preference() {
        let offered: Vec<String> = ["v4.channel.k8s.io", "v5.channel.k8s.io"].iter().map(|s| s.to_string()).collect();
        assert_eq!(choose(&offered, &["v5.channel.k8s.io", "v4.channel.k8s.io"]).as_deref(), Some("v5.channel.k8s.io"));
        assert_eq!(choose(&offered, &["base64.channel.k8s.io"]), None);
        assert_eq!(choose(&[], &["v5.channel.k8s.io"]).as_deref(), Some(""));
    }
}
