//! `kubectl port-forward` to a pod: each forwarded connection is a TCP connection from the node to the
//! pod's address and port. Two framings:
//! - SPDY (`portforward.k8s.io`), inside a WebSocket as kubectl 1.31+ tunnels it
//!   (`SPDY/3.1+portforward.k8s.io`): the client opens an error stream and a data stream per
//!   connection (headers `streamType`, `port`, `requestID`);
//! - the WebSocket channel protocol (`v4.channel.k8s.io`, used by the Python client and kube-rs): the
//!   ports come in the query, two channels per port (data 2i, errors 2i+1), each opened by a message
//!   holding the port as two little-endian bytes.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use crate::invalid::Invalid;
use crate::spdy::{self, Codec, Frame};
use crate::ws::{Out, Socket};

/// The WebSocket subprotocols served, in order of preference.
pub const PROTOCOLS: &[&str] =
    &["SPDY/3.1+portforward.k8s.io", "v4.channel.k8s.io", "v4.base64.channel.k8s.io", "portforward.k8s.io"];

/// Where forwarded connections go: a pod's address, and the pod's network namespace when it has one.
#[derive(Clone, Debug)]
pub struct Target {
    /// The pod's address.
    pub ip: String,
    /// The uid of the pod whose network namespace holds it.
    pub namespace: Option<String>,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.ip)
    }
}

/// Connects to a pod's port: inside its network namespace to its loopback and then its address, as
/// a kubelet's runtime does; without one, its own address first, then the machine's loopback (a
/// process may listen on either). Fails with the error of the first address tried.
async fn connect(target: &Target, port: u16) -> std::io::Result<TcpStream> {
    let ip = target.ip.as_str();
    if let Some(uid) = &target.namespace {
        let mut addrs = vec![std::net::SocketAddr::from(([127, 0, 0, 1], port))];
        addrs.extend(ip.parse::<std::net::IpAddr>().ok().map(|ip| std::net::SocketAddr::new(ip, port)));
        return crate::network::host::connect_inside(uid, addrs).await;
    }
    match TcpStream::connect((ip, port)).await {
        Ok(s) => Ok(s),
        Err(first) => TcpStream::connect(("127.0.0.1", port)).await.map_err(|_| first),
    }
}

/// The ports of a channel-protocol request (`ports` repeated or comma-separated).
pub fn ports(query: &[(String, String)]) -> Result<Vec<u16>, Invalid> {
    let mut out = Vec::new();
    for (_, v) in query.iter().filter(|(k, _)| k == "ports") {
        for p in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            out.push(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| Invalid::new("ports", format!("invalid port {p:?}")))?,
            );
        }
    }
    Ok(out)
}

/// The two streams of one forwarded connection as they arrive: the error stream, and the data
/// stream with its port.
type Pair = (Option<u32>, Option<(u32, u16)>);

/// What arrives for a forwarded connection from the client.
enum In {
    Data(Bytes),
    Fin,
    Reset,
}

/// Serves a WebSocket that carries SPDY.
pub async fn serve_spdy_over_websocket(socket: Socket, pod: String, ip: Target) {
    let (out, mut incoming) = crate::ws::split(socket);
    let (bytes_out, mut to_socket) = mpsc::channel::<Bytes>(64);
    let writer = {
        let out = out.clone();
        tokio::spawn(async move {
            while let Some(b) = to_socket.recv().await {
                if out.send(Out::Binary(b)).await.is_err() {
                    return;
                }
            }
        })
    };
    let (bytes_in, from_socket) = mpsc::channel::<Bytes>(64);
    let reader = {
        let out = out.clone();
        tokio::spawn(async move {
            while let Some(m) = incoming.next().await {
                match m {
                    Ok(Message::Binary(b)) => {
                        if bytes_in.send(b).await.is_err() {
                            return;
                        }
                    }
                    Ok(Message::Ping(_)) => {
                        let _ = out.send(Out::Flush).await;
                    }
                    Ok(Message::Close(_)) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
    };
    if let Err(e) = serve_spdy(from_socket, bytes_out, pod, ip).await {
        tracing::debug!(error = %e, "port-forward session ended");
    }
    reader.abort();
    let _ = writer.await;
    let _ = out.send(Out::Close).await;
}

/// A SPDY port-forward session over a stream of byte chunks (in) and a sink of them (out).
pub async fn serve_spdy(
    mut input: mpsc::Receiver<Bytes>,
    out: mpsc::Sender<Bytes>,
    pod: String,
    ip: Target,
) -> Result<(), spdy::Error> {
    let mut codec = Codec::default();
    let mut buf = BytesMut::new();
    // Streams waiting for their pair, by request id.
    let mut pairs: HashMap<String, Pair> = HashMap::new();
    let mut streams: HashMap<u32, mpsc::UnboundedSender<In>> = HashMap::new();
    while let Some(chunk) = input.recv().await {
        buf.extend_from_slice(&chunk);
        while let Some(frame) = codec.decode(&mut buf)? {
            match frame {
                Frame::SynStream { id, headers, .. } => {
                    let _ = out.send(spdy::syn_reply(&mut codec, id)).await;
                    let kind = headers.get("streamtype").map(String::as_str).unwrap_or_default();
                    let port = headers.get("port").and_then(|p| p.parse::<u16>().ok()).unwrap_or(0);
                    let request = headers.get("requestid").cloned().unwrap_or_else(|| port.to_string());
                    let pair = pairs.entry(request.clone()).or_default();
                    match kind {
                        "error" => pair.0 = Some(id),
                        "data" => pair.1 = Some((id, port)),
                        _ => {
                            let _ = out.send(spdy::rst_stream(id)).await;
                            continue;
                        }
                    }
                    if let (Some(error), Some((data, port))) = *pair {
                        pairs.remove(&request);
                        let (tx, rx) = mpsc::unbounded_channel();
                        streams.insert(data, tx);
                        tokio::spawn(forward(pod.clone(), ip.clone(), port, data, error, rx, out.clone()));
                    }
                }
                Frame::Data { id, fin, data } => {
                    if let Some(tx) = streams.get(&id) {
                        if !data.is_empty() {
                            let _ = tx.send(In::Data(data));
                        }
                        if fin {
                            let _ = tx.send(In::Fin);
                        }
                    }
                }
                Frame::RstStream { id, .. } => {
                    if let Some(tx) = streams.remove(&id) {
                        let _ = tx.send(In::Reset);
                    }
                }
                Frame::Ping { id } => {
                    let _ = out.send(spdy::ping(id)).await;
                }
                Frame::GoAway => return Ok(()),
                Frame::Other => {}
            }
        }
    }
    Ok(())
}

/// One forwarded connection: pod ⇄ data stream; a failure is written on the error stream; both
/// streams are closed at the end.
async fn forward(
    pod: String,
    ip: Target,
    port: u16,
    data: u32,
    error: u32,
    mut rx: mpsc::UnboundedReceiver<In>,
    out: mpsc::Sender<Bytes>,
) {
    let tcp = match connect(&ip, port).await {
        Ok(t) => t,
        Err(e) => {
            let msg = format!("error forwarding port {port} to pod {pod}: dial tcp {ip}:{port}: {e}");
            let _ = out.send(spdy::data(error, false, msg.as_bytes())).await;
            let _ = out.send(spdy::data(error, true, &[])).await;
            let _ = out.send(spdy::data(data, true, &[])).await;
            return;
        }
    };
    let (mut r, mut w) = tcp.into_split();
    let down = {
        let out = out.clone();
        async move {
            let mut buf = vec![0u8; 32 * 1024];
            loop {
                match r.read(&mut buf).await {
                    Ok(0) | Err(_) => {
                        let _ = out.send(spdy::data(data, true, &[])).await;
                        return;
                    }
                    Ok(n) => {
                        if out.send(spdy::data(data, false, &buf[..n])).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
    };
    let up = async move {
        while let Some(m) = rx.recv().await {
            match m {
                In::Data(b) => {
                    if w.write_all(&b).await.is_err() {
                        return;
                    }
                }
                In::Fin => {
                    let _ = w.shutdown().await;
                }
                In::Reset => return,
            }
        }
    };
    // The connection is over when the pod's side has closed (and everything is sent), or the client
    // reset the stream.
    let mut down = std::pin::pin!(down);
    tokio::select! {
        _ = &mut down => {}
        _ = up => {}
    }
    let _ = out.send(spdy::data(error, true, &[])).await;
}

/// Serves the channel protocol: every requested port at once, on one socket.
pub async fn serve_channels(socket: Socket, protocol: String, ports: Vec<u16>, pod: String, ip: Target) {
    let (out, mut incoming) = crate::ws::split_channels(socket, &protocol);
    let mut writers = HashMap::new();
    let mut tasks = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let (data, err) = ((2 * i) as u8, (2 * i + 1) as u8);
        for ch in [data, err] {
            let mut b = vec![ch];
            b.extend_from_slice(&port.to_le_bytes());
            let _ = out.send(Out::Binary(Bytes::from(b))).await;
        }
        match connect(&ip, *port).await {
            Ok(tcp) => {
                let (mut r, w) = tcp.into_split();
                writers.insert(data, w);
                let out = out.clone();
                tasks.push(tokio::spawn(async move {
                    let mut buf = vec![0u8; 32 * 1024];
                    buf[0] = data;
                    loop {
                        match r.read(&mut buf[1..]).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => {
                                if out.send(Out::Binary(Bytes::copy_from_slice(&buf[..n + 1]))).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                }));
            }
            Err(e) => {
                let mut b = vec![err];
                b.extend_from_slice(format!("error forwarding port {port} to pod {pod}: {e}").as_bytes());
                let _ = out.send(Out::Binary(Bytes::from(b))).await;
            }
        }
    }
    let all_done = futures::future::join_all(tasks);
    let mut all_done = std::pin::pin!(all_done);
    loop {
        tokio::select! {
            _ = &mut all_done => break,
            m = incoming.next() => match m {
                Some(Ok(Message::Binary(b))) if !b.is_empty() => {
                    if let Some(w) = writers.get_mut(&b[0]) && w.write_all(&b[1..]).await.is_err() {
                        writers.remove(&b[0]);
                    }
                }
                Some(Ok(Message::Ping(_))) => { let _ = out.send(Out::Flush).await; }
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
        }
    }
    let _ = out.send(Out::Close).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_come_from_the_query() {
        let q: Vec<(String, String)> =
            [("ports", "2379,2380"), ("ports", "8080")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        assert_eq!(ports(&q).unwrap(), vec![2379, 2380, 8080]);
        let bad: Vec<(String, String)> = vec![("ports".into(), "http".into())];
        assert!(ports(&bad).unwrap_err().to_string().starts_with("ports: invalid port"));
    }

    /// A whole SPDY session against a local server: the client's frames in, the pod's answer out.
    #[tokio::test]
    async fn a_spdy_session_forwards_a_connection() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4];
            s.read_exact(&mut buf).await.unwrap();
            s.write_all(&[b"pong:", &buf[..]].concat()).await.unwrap();
        });
        let (to_session, input) = mpsc::channel(16);
        let (output, mut from_session) = mpsc::channel(64);
        tokio::spawn(serve_spdy(input, output, "p".into(), Target { ip: "127.0.0.1".into(), namespace: None }));
        let mut client = Codec::default();
        let syn = |client: &mut Codec, id: u32, kind: &str| {
            let headers = [("streamtype", kind), ("port", &port.to_string()), ("requestid", "0")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let mut payload = id.to_be_bytes().to_vec();
            payload.extend([0u8; 6]);
            payload.extend(client.encode_headers(&headers));
            let mut b = vec![0x80, 3, 0, 1];
            b.extend(((payload.len() as u32) & 0xff_ffff).to_be_bytes());
            b.extend(payload);
            Bytes::from(b)
        };
        to_session.send(syn(&mut client, 1, "error")).await.unwrap();
        to_session.send(spdy::data(1, true, &[])).await.unwrap();
        to_session.send(syn(&mut client, 3, "data")).await.unwrap();
        to_session.send(spdy::data(3, false, b"ping")).await.unwrap();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        let mut replies = 0;
        let mut ends = Vec::new();
        while ends.len() < 2 {
            buf.extend_from_slice(&from_session.recv().await.unwrap());
            while let Some(f) = client.decode(&mut buf).unwrap() {
                match f {
                    Frame::Other => replies += 1,
                    Frame::Data { id: 3, data, fin } => {
                        got.extend_from_slice(&data);
                        if fin {
                            ends.push(3);
                        }
                    }
                    Frame::Data { id: 1, fin: true, data } => {
                        assert!(data.is_empty(), "no error: {data:?}");
                        ends.push(1);
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        assert_eq!(replies, 2, "each stream is accepted");
        assert_eq!(got, b"pong:ping");
    }
}
