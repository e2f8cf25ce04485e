//! The part of ZooKeeper's client protocol the operator needs for dynamic reconfiguration: a session,
//! digest authentication as the super user, `reconfig`, and a write to confirm that the new
//! configuration commits. Requests and answers are jute records framed by their length; encoding and
//! decoding are pure (`encode_*`, `Reader`), the session is the I/O.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The session timeout asked for, ms.
const SESSION_MS: i32 = 10_000;
/// The largest answer accepted.
const MAX_FRAME: usize = 4 * 1024 * 1024;

/// Operation codes.
const OP_CREATE: i32 = 1;
const OP_SET_DATA: i32 = 5;
const OP_GET_DATA: i32 = 4;
const OP_RECONFIG: i32 = 16;
const OP_AUTH: i32 = 100;
const OP_CLOSE: i32 = -11;
/// The xid of authentication packets.
const XID_AUTH: i32 = -4;

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZkError {
    /// No connection, a broken one, or no answer in time.
    #[error("{0}")]
    Io(String),
    /// The server answered with an error code.
    #[error("{name} ({code})")]
    Server { code: i32, name: &'static str },
}

impl ZkError {
    fn server(code: i32) -> ZkError {
        let name = match code {
            -4 => "ConnectionLoss",
            -7 => "OperationTimeout",
            -8 => "BadArguments",
            -13 => "NewConfigNoQuorum",
            -14 => "ReconfigInProgress",
            -101 => "NoNode",
            -102 => "NoAuth",
            -103 => "BadVersion",
            -110 => "NodeExists",
            -115 => "AuthFailed",
            -123 => "ReconfigDisabled",
            _ => "Error",
        };
        ZkError::Server { code, name }
    }

    /// Whether the server refused because another reconfiguration is under way or the new one would
    /// have no quorum: ask again later, nothing changed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, ZkError::Server { code: -13 | -14 | -4 | -7, .. } | ZkError::Io(_))
    }

    /// Whether the node (or its parent) was not there.
    pub fn is_no_node(&self) -> bool {
        matches!(self, ZkError::Server { code: -101, .. })
    }

    /// Whether the node was there already.
    pub fn is_node_exists(&self) -> bool {
        matches!(self, ZkError::Server { code: -110, .. })
    }
}

/// Jute encoding into a buffer.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    pub fn int(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn long(&mut self, v: i64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn boolean(&mut self, v: bool) -> &mut Self {
        self.0.push(u8::from(v));
        self
    }
    pub fn buffer(&mut self, v: &[u8]) -> &mut Self {
        self.int(v.len() as i32);
        self.0.extend_from_slice(v);
        self
    }
    pub fn string(&mut self, v: &str) -> &mut Self {
        self.buffer(v.as_bytes())
    }
    /// The record, framed by its length.
    pub fn framed(&self) -> Vec<u8> {
        let mut out = (self.0.len() as i32).to_be_bytes().to_vec();
        out.extend_from_slice(&self.0);
        out
    }
}

/// Jute decoding from a frame.
pub struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], ZkError> {
        if self.0.len() < n {
            return Err(ZkError::Io("truncated answer".into()));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    pub fn int(&mut self) -> Result<i32, ZkError> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().unwrap_or_default()))
    }
    pub fn long(&mut self) -> Result<i64, ZkError> {
        Ok(i64::from_be_bytes(self.take(8)?.try_into().unwrap_or_default()))
    }
    pub fn buffer(&mut self) -> Result<Vec<u8>, ZkError> {
        let n = self.int()?;
        if n < 0 {
            return Ok(Vec::new());
        }
        Ok(self.take(n as usize)?.to_vec())
    }
}

/// A connect request for a new session.
pub fn encode_connect() -> Vec<u8> {
    let mut w = Writer::default();
    w.int(0).long(0).int(SESSION_MS).long(0).buffer(&[0; 16]).boolean(false);
    w.framed()
}

/// A request: header (xid, op) and body.
pub fn encode_request(xid: i32, op: i32, body: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::default();
    w.int(xid).int(op);
    body(&mut w);
    w.framed()
}

/// The `reconfig` body: incremental (`joining`, `leaving`), from any configuration (-1).
pub fn encode_reconfig(xid: i32, joining: &str, leaving: &str) -> Vec<u8> {
    encode_request(xid, OP_RECONFIG, |w| {
        w.string(joining).string(leaving);
        w.int(-1); // newMembers: null (an incremental change)
        w.long(-1);
    })
}

/// The super user's digest for `password`, as `DigestAuthenticationProvider.superDigest` takes it:
/// `super:<base64(sha1("super:<password>"))>`.
pub fn super_digest(password: &str) -> String {
    use base64::Engine;
    use sha1::Digest;
    let hash = sha1::Sha1::digest(format!("super:{password}").as_bytes());
    format!("super:{}", base64::engine::general_purpose::STANDARD.encode(hash))
}

/// A session with one server.
pub struct Session {
    stream: TcpStream,
    xid: i32,
}

impl Session {
    /// Opens a session with the server at `addr` and authenticates as the super user.
    pub async fn open(addr: &str, password: &str) -> Result<Session, ZkError> {
        let io = |e: std::io::Error| ZkError::Io(format!("{addr}: {e}"));
        let stream = tokio::time::timeout(TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| ZkError::Io(format!("{addr}: no connection within {} s", TIMEOUT.as_secs())))?
            .map_err(io)?;
        let mut s = Session { stream, xid: 0 };
        s.send(&encode_connect()).await?;
        let answer = s.frame().await?;
        let mut r = Reader(&answer);
        let (_version, timeout, session) = (r.int()?, r.int()?, r.long()?);
        if timeout <= 0 || session == 0 {
            return Err(ZkError::Io(format!("{addr}: the server refused the session (it does not serve)")));
        }
        let auth = encode_request(XID_AUTH, OP_AUTH, |w| {
            w.int(0).string("digest").string(&format!("super:{password}"));
        });
        s.send(&auth).await?;
        s.reply(XID_AUTH).await?;
        Ok(s)
    }

    async fn send(&mut self, bytes: &[u8]) -> Result<(), ZkError> {
        tokio::time::timeout(TIMEOUT, self.stream.write_all(bytes))
            .await
            .map_err(|_| ZkError::Io("write timed out".into()))?
            .map_err(|e| ZkError::Io(e.to_string()))
    }

    async fn frame(&mut self) -> Result<Vec<u8>, ZkError> {
        let read = async {
            let n = self.stream.read_i32().await.map_err(|e| ZkError::Io(e.to_string()))?;
            if n < 0 || n as usize > MAX_FRAME {
                return Err(ZkError::Io(format!("bad frame length {n}")));
            }
            let mut buf = vec![0; n as usize];
            self.stream.read_exact(&mut buf).await.map_err(|e| ZkError::Io(e.to_string()))?;
            Ok(buf)
        };
        tokio::time::timeout(TIMEOUT, read).await.map_err(|_| ZkError::Io("no answer in time".into()))?
    }

    /// Reads answers until the one for `xid` (watch notifications, xid -1, are skipped); its body.
    async fn reply(&mut self, xid: i32) -> Result<Vec<u8>, ZkError> {
        loop {
            let frame = self.frame().await?;
            let mut r = Reader(&frame);
            let (got, _zxid, err) = (r.int()?, r.long()?, r.int()?);
            if got != xid {
                continue;
            }
            if err != 0 {
                return Err(ZkError::server(err));
            }
            return Ok(r.0.to_vec());
        }
    }

    async fn call(&mut self, request: impl FnOnce(i32) -> Vec<u8>) -> Result<Vec<u8>, ZkError> {
        self.xid += 1;
        let xid = self.xid;
        self.send(&request(xid)).await?;
        self.reply(xid).await
    }

    /// The data of a znode.
    pub async fn get_data(&mut self, path: &str) -> Result<Vec<u8>, ZkError> {
        let body = self
            .call(|xid| {
                encode_request(xid, OP_GET_DATA, |w| {
                    w.string(path).boolean(false);
                })
            })
            .await?;
        Reader(&body).buffer()
    }

    /// Creates a persistent znode open to everyone.
    pub async fn create(&mut self, path: &str, data: &[u8]) -> Result<(), ZkError> {
        self.call(|xid| {
            encode_request(xid, OP_CREATE, |w| {
                w.string(path).buffer(data);
                w.int(1).int(31).string("world").string("anyone"); // ACL: all permissions, world:anyone
                w.int(0); // persistent
            })
        })
        .await
        .map(drop)
    }

    /// Sets the data of a znode, any version.
    pub async fn set_data(&mut self, path: &str, data: &[u8]) -> Result<(), ZkError> {
        self.call(|xid| {
            encode_request(xid, OP_SET_DATA, |w| {
                w.string(path).buffer(data).int(-1);
            })
        })
        .await
        .map(drop)
    }

    /// An incremental reconfiguration: `joining` server lines (`server.4=...`, comma-separated) and
    /// `leaving` ids. Returns the new configuration.
    pub async fn reconfig(&mut self, joining: &str, leaving: &str) -> Result<String, ZkError> {
        let body = self.call(|xid| encode_reconfig(xid, joining, leaving)).await?;
        Ok(String::from_utf8_lossy(&Reader(&body).buffer()?).into_owned())
    }

    /// Closes the session.
    pub async fn close(mut self) {
        let _ = self.call(|xid| encode_request(xid, OP_CLOSE, |_| {})).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_framed_jute() {
        let connect = encode_connect();
        // length, protocol version, last zxid, timeout, session id, password (16 bytes), read-only
        assert_eq!(connect.len(), 4 + 4 + 8 + 4 + 8 + 4 + 16 + 1);
        assert_eq!(&connect[..4], &(connect.len() as i32 - 4).to_be_bytes());
        assert_eq!(&connect[16..20], &SESSION_MS.to_be_bytes());
        let r = encode_reconfig(7, "server.4=h:2888:3888:observer;h:2181", "");
        let mut rd = Reader(&r[4..]);
        assert_eq!((rd.int().unwrap(), rd.int().unwrap()), (7, OP_RECONFIG));
        assert_eq!(rd.buffer().unwrap(), b"server.4=h:2888:3888:observer;h:2181");
        assert_eq!(rd.buffer().unwrap(), b"");
        assert_eq!(rd.int().unwrap(), -1, "newMembers is null");
        assert_eq!(rd.long().unwrap(), -1, "from any configuration");
        assert!(rd.0.is_empty());
        assert!(Reader(&[0, 0]).int().is_err(), "a truncated answer is an error, not a panic");
    }

    #[test]
    fn the_super_digest_is_zookeepers() {
        // `java -cp zookeeper.jar org.apache.zookeeper.server.auth.DigestAuthenticationProvider super:secret`
        assert_eq!(super_digest("secret"), "super:lK75jTNcA+U9vtVEw5vB51mj/w4=");
    }

    #[test]
    fn error_codes_say_what_to_do() {
        assert!(ZkError::server(-13).is_retryable());
        assert!(ZkError::server(-14).is_retryable());
        assert!(!ZkError::server(-102).is_retryable());
        assert_eq!(ZkError::server(-13).to_string(), "NewConfigNoQuorum (-13)");
        assert!(ZkError::server(-110).is_node_exists() && ZkError::server(-101).is_no_node());
    }
}
