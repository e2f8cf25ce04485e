//! WebSocket plumbing of the streaming endpoints: the upgrade handshake with subprotocol negotiation,
//! one writer task per connection (several producers, one socket; pongs go out with it), and the
//! framing of the channel protocols as kube-apiserver's wsstream reads and writes them: binary
//! (`v5.channel.k8s.io`, `v4.channel.k8s.io`, ...: a channel byte, then the data; a text frame is read
//! as its bytes) or base64 (`v4.base64.channel.k8s.io`, `base64.channel.k8s.io`: text frames, the
//! channel as an ASCII digit, then the data in base64).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use futures::stream::BoxStream;
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

/// How a channel protocol frames its messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Binary frames: the channel byte, then the data.
    Binary,
    /// Text frames: the channel as an ASCII digit (`'0' + channel`), then the data in base64.
    Base64,
}

impl Framing {
    /// The framing of a negotiated subprotocol.
    pub fn of(protocol: &str) -> Framing {
        if protocol.starts_with("base64.") || protocol.contains(".base64.") { Framing::Base64 } else { Framing::Binary }
    }

    /// An outgoing message (`[channel, data...]`) as this framing sends it.
    pub fn encode(self, b: Bytes) -> Message {
        match (self, b.split_first()) {
            (Framing::Base64, Some((channel, data))) => {
                let mut text = String::with_capacity(1 + data.len().div_ceil(3) * 4);
                text.push(char::from(b'0'.wrapping_add(*channel)));
                STANDARD.encode_string(data, &mut text);
                Message::Text(text.into())
            }
            _ => Message::Binary(b),
        }
    }

    /// An incoming data message as `[channel, data...]` (a binary message), text frames included, as
    /// kube-apiserver reads both; None for base64 that does not decode.
    pub fn decode(self, m: Message) -> Option<Message> {
        let payload = match m {
            Message::Binary(b) => b,
            Message::Text(t) => Bytes::copy_from_slice(t.as_bytes()),
            other => return Some(other),
        };
        match (self, payload.split_first()) {
            (Framing::Base64, Some((digit, data))) => {
                let mut b = vec![digit.wrapping_sub(b'0')];
                STANDARD.decode_vec(data, &mut b).ok()?;
                Some(Message::Binary(Bytes::from(b)))
            }
            _ => Some(Message::Binary(payload)),
        }
    }
}

/// The incoming messages of a channel-protocol socket, data as binary `[channel, data...]`.
pub type Messages = BoxStream<'static, Result<Message, tokio_tungstenite::tungstenite::Error>>;

/// Splits the socket of a channel protocol: a sender for `[channel, data...]` messages (framed as the
/// protocol frames them) and the incoming messages in that form.
pub fn split_channels(socket: Socket, protocol: &str) -> (mpsc::Sender<Out>, Messages) {
    let framing = Framing::of(protocol);
    let (tx, incoming) = split_framed(socket, framing);
    let incoming = incoming.filter_map(move |m| {
        let m = match m {
            Ok(m) => framing.decode(m).map(Ok),
            Err(e) => Some(Err(e)),
        };
        if m.is_none() {
            tracing::debug!("a base64 channel message that does not decode was dropped");
        }
        futures::future::ready(m)
    });
    (tx, incoming.boxed())
}

/// Splits a socket: a sender for what goes out (handled by a writer task) and the incoming messages.
pub fn split(socket: Socket) -> (mpsc::Sender<Out>, futures::stream::SplitStream<Socket>) {
    split_framed(socket, Framing::Binary)
}

fn split_framed(socket: Socket, framing: Framing) -> (mpsc::Sender<Out>, futures::stream::SplitStream<Socket>) {
    let (mut sink, stream) = socket.split();
    let (tx, mut rx) = mpsc::channel::<Out>(64);
    tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            let r = match out {
                Out::Binary(b) => sink.send(framing.encode(b)).await,
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

    #[test]
    fn channel_frames_as_wsstream_writes_and_reads_them() {
        assert_eq!(Framing::of("v4.base64.channel.k8s.io"), Framing::Base64);
        assert_eq!(Framing::of("base64.channel.k8s.io"), Framing::Base64);
        assert_eq!(Framing::of("v5.channel.k8s.io"), Framing::Binary);
        assert_eq!(Framing::of(""), Framing::Binary);
        let out = Bytes::from_static(b"\x01hi\n");
        assert_eq!(Framing::Base64.encode(out.clone()), Message::Text("1aGkK".into()));
        assert_eq!(Framing::Binary.encode(out.clone()), Message::Binary(out.clone()));
        // The Python client writes stdin as text frames with the channel as a character.
        let stdin = Message::Text("\u{0}echo hi\n".into());
        assert_eq!(Framing::Binary.decode(stdin), Some(Message::Binary(Bytes::from_static(b"\x00echo hi\n"))));
        assert_eq!(
            Framing::Base64.decode(Message::Text("0ZWNobyBoaQo=".into())),
            Some(Message::Binary(Bytes::from_static(b"\x00echo hi\n")))
        );
        assert_eq!(Framing::Base64.decode(Message::Text("0!!".into())), None);
        assert_eq!(Framing::Base64.decode(Message::Ping(Bytes::new())), Some(Message::Ping(Bytes::new())));
    }
}
