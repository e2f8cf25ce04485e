//! The server side of SPDY/3.1 as Kubernetes port-forwarding uses it (`portforward.k8s.io`): kubectl
//! 1.31+ tunnels it inside a WebSocket (`SPDY/3.1+portforward.k8s.io`), older clients upgrade to it
//! directly. Only what port-forwarding needs: streams opened by the client (SYN_STREAM, answered with
//! SYN_REPLY), DATA with FIN, RST_STREAM, PING (answered), GOAWAY; SETTINGS, HEADERS and
//! WINDOW_UPDATE are read and ignored (kube's SPDY peers do no flow control).
//!
//! Header blocks are zlib streams that go on across frames (one context per direction) with the SPDY/3
//! dictionary (draft-mbelshe-httpbis-spdy-00 §2.6.10.1).

use std::collections::BTreeMap;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The SPDY version spoken.
const VERSION: u16 = 3;

/// Control frame types.
const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;

/// The largest decompressed header block accepted (port-forwarding's are a few dozen bytes).
const MAX_HEADER_BLOCK: usize = 1 << 20;

/// The FIN flag (DATA and SYN_* frames).
pub const FLAG_FIN: u8 = 1;

/// The header compression dictionary of SPDY/3: length-prefixed words, then a run of common values.
#[expect(clippy::too_many_lines, reason = "data table: SPDY/3's compression dictionary")]
fn dictionary() -> Vec<u8> {
    const WORDS: &[&str] = &[
        "options",
        "head",
        "post",
        "put",
        "delete",
        "trace",
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "accept-ranges",
        "age",
        "allow",
        "authorization",
        "cache-control",
        "connection",
        "content-base",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-md5",
        "content-range",
        "content-type",
        "date",
        "etag",
        "expect",
        "expires",
        "from",
        "host",
        "if-match",
        "if-modified-since",
        "if-none-match",
        "if-range",
        "if-unmodified-since",
        "last-modified",
        "location",
        "max-forwards",
        "pragma",
        "proxy-authenticate",
        "proxy-authorization",
        "range",
        "referer",
        "retry-after",
        "server",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "vary",
        "via",
        "warning",
        "www-authenticate",
        "method",
        "get",
        "status",
        "200 OK",
        "version",
        "HTTP/1.1",
        "url",
        "public",
        "set-cookie",
        "keep-alive",
        "origin",
    ];
    const TAIL: &str = concat!(
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
        "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized",
        "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable",
        "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT",
        "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,",
        "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
    );
    let mut out = Vec::with_capacity(1423);
    for w in WORDS {
        out.extend_from_slice(&(w.len() as u32).to_be_bytes());
        out.extend_from_slice(w.as_bytes());
    }
    out.extend_from_slice(TAIL.as_bytes());
    out
}

/// Errors of a SPDY session.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The peer sent something this codec does not accept.
    #[error("SPDY protocol error: {0}")]
    Protocol(String),
}

/// A decoded frame.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A new stream from the peer, with its headers.
    SynStream { id: u32, fin: bool, headers: BTreeMap<String, String> },
    /// Data on a stream.
    Data { id: u32, fin: bool, data: Bytes },
    /// The peer reset a stream.
    RstStream { id: u32, status: u32 },
    /// A ping to answer.
    Ping { id: u32 },
    /// The peer goes away.
    GoAway,
    /// Anything else (read and ignored).
    Other,
}

/// Header block compression, one context per direction.
pub struct Codec {
    inflate: Decompress,
    deflate: Compress,
    dictionary: Vec<u8>,
}

impl Default for Codec {
    fn default() -> Self {
        let dictionary = dictionary();
        let mut deflate = Compress::new(Compression::default(), true);
        // Only fails without a zlib backend that has dictionaries; flate2 is built with zlib-rs.
        let _ = deflate.set_dictionary(&dictionary);
        Codec { inflate: Decompress::new(true), deflate, dictionary }
    }
}

impl Codec {
    fn inflate_block(&mut self, mut input: &[u8]) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        loop {
            out.reserve(4096);
            let (before_in, before_out) = (self.inflate.total_in(), self.inflate.total_out());
            let result = self.inflate.decompress_vec(input, &mut out, FlushDecompress::Sync);
            let used = (self.inflate.total_in() - before_in) as usize;
            input = &input[used..];
            let produced = self.inflate.total_out() - before_out;
            match result {
                Ok(Status::StreamEnd) => return Ok(out),
                Ok(_) => {}
                // The zlib header names the dictionary (it has been read): supply it and go on.
                Err(e) if e.needs_dictionary().is_some() => {
                    self.inflate
                        .set_dictionary(&self.dictionary)
                        .map_err(|e| Error::Protocol(format!("header dictionary: {e}")))?;
                    continue;
                }
                Err(e) => return Err(Error::Protocol(format!("header block: {e}"))),
            }
            // Done once the input is used up and the output had room to spare (nothing held back).
            if input.is_empty() && out.len() < out.capacity() {
                return Ok(out);
            }
            if out.len() > MAX_HEADER_BLOCK || (used == 0 && produced == 0) {
                return Err(Error::Protocol("header block does not decompress".into()));
            }
        }
    }

    fn deflate_block(&mut self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(input.len() + 64);
        let mut consumed = 0;
        loop {
            out.reserve(128);
            let before = self.deflate.total_in();
            if self.deflate.compress_vec(&input[consumed..], &mut out, FlushCompress::Sync).is_err() {
                return out;
            }
            consumed += (self.deflate.total_in() - before) as usize;
            if consumed >= input.len() && out.len() < out.capacity() {
                return out;
            }
        }
    }

    /// Decodes the header block of a SYN_STREAM/SYN_REPLY/HEADERS frame.
    pub fn decode_headers(&mut self, block: &[u8]) -> Result<BTreeMap<String, String>, Error> {
        let raw = self.inflate_block(block)?;
        let mut b = &raw[..];
        let next = |b: &mut &[u8]| -> Result<Vec<u8>, Error> {
            if b.remaining() < 4 {
                return Err(Error::Protocol("short header block".into()));
            }
            let n = b.get_u32() as usize;
            if b.remaining() < n {
                return Err(Error::Protocol("short header block".into()));
            }
            let v = b[..n].to_vec();
            b.advance(n);
            Ok(v)
        };
        if b.remaining() < 4 {
            return Err(Error::Protocol("short header block".into()));
        }
        let count = b.get_u32();
        let mut headers = BTreeMap::new();
        for _ in 0..count {
            let name = String::from_utf8_lossy(&next(&mut b)?).to_lowercase();
            let value = String::from_utf8_lossy(&next(&mut b)?).replace('\0', ",");
            headers.insert(name, value);
        }
        Ok(headers)
    }

    /// Encodes a header block.
    pub fn encode_headers(&mut self, headers: &BTreeMap<String, String>) -> Vec<u8> {
        let mut raw = Vec::new();
        raw.put_u32(headers.len() as u32);
        for (k, v) in headers {
            raw.put_u32(k.len() as u32);
            raw.put_slice(k.to_lowercase().as_bytes());
            raw.put_u32(v.len() as u32);
            raw.put_slice(v.as_bytes());
        }
        self.deflate_block(&raw)
    }

    /// Takes one whole frame off the front of `buf`, if it holds one.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Error> {
        if buf.len() < 8 {
            return Ok(None);
        }
        let len = (u32::from_be_bytes([0, buf[5], buf[6], buf[7]])) as usize;
        if buf.len() < 8 + len {
            return Ok(None);
        }
        let control = buf[0] & 0x80 != 0;
        let flags = buf[4];
        let head = buf.split_to(8);
        let mut body = buf.split_to(len).freeze();
        if !control {
            let id = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) & 0x7fff_ffff;
            return Ok(Some(Frame::Data { id, fin: flags & FLAG_FIN != 0, data: body }));
        }
        let kind = u16::from_be_bytes([head[2], head[3]]);
        let need =
            |n: usize| if len < n { Err(Error::Protocol(format!("frame type {kind} too short"))) } else { Ok(()) };
        Ok(Some(match kind {
            SYN_STREAM => {
                need(10)?;
                let id = body.get_u32() & 0x7fff_ffff;
                body.advance(6);
                Frame::SynStream { id, fin: flags & FLAG_FIN != 0, headers: self.decode_headers(&body)? }
            }
            RST_STREAM => {
                need(8)?;
                Frame::RstStream { id: body.get_u32() & 0x7fff_ffff, status: body.get_u32() }
            }
            PING => {
                need(4)?;
                Frame::Ping { id: body.get_u32() }
            }
            GOAWAY => Frame::GoAway,
            // SYN_REPLY and HEADERS carry header blocks: read them to keep the context in step.
            SYN_REPLY | 8 => {
                need(4)?;
                body.advance(4);
                self.decode_headers(&body)?;
                Frame::Other
            }
            _ => Frame::Other,
        }))
    }
}

fn control(kind: u16, flags: u8, payload: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(8 + payload.len());
    b.put_u16(0x8000 | VERSION);
    b.put_u16(kind);
    b.put_u32((u32::from(flags) << 24) | payload.len() as u32);
    b.put_slice(payload);
    b.freeze()
}

/// A SYN_REPLY accepting stream `id` (no headers).
pub fn syn_reply(codec: &mut Codec, id: u32) -> Bytes {
    let mut payload = Vec::new();
    payload.put_u32(id);
    payload.extend(codec.encode_headers(&BTreeMap::new()));
    control(SYN_REPLY, 0, &payload)
}

/// The answer to a ping.
pub fn ping(id: u32) -> Bytes {
    control(PING, 0, &id.to_be_bytes())
}

/// A reset of stream `id` (status 5: CANCEL).
pub fn rst_stream(id: u32) -> Bytes {
    let mut payload = Vec::new();
    payload.put_u32(id);
    payload.put_u32(5);
    control(RST_STREAM, 0, &payload)
}

/// Going away (status OK).
pub fn goaway(last: u32) -> Bytes {
    let mut payload = Vec::new();
    payload.put_u32(last);
    payload.put_u32(0);
    control(GOAWAY, 0, &payload)
}

/// DATA on stream `id`.
pub fn data(id: u32, fin: bool, payload: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(8 + payload.len());
    b.put_u32(id & 0x7fff_ffff);
    b.put_u32((u32::from(if fin { FLAG_FIN } else { 0 }) << 24) | payload.len() as u32);
    b.put_slice(payload);
    b.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Adler-32 of the SPDY/3 dictionary, which Go's SPDY peers put in their zlib headers.
    #[test]
    fn the_dictionary_is_spdy3s() {
        let d = dictionary();
        assert_eq!(d.len(), 1423);
        let (mut a, mut b) = (1u32, 0u32);
        for byte in &d {
            a = (a + u32::from(*byte)) % 65521;
            b = (b + a) % 65521;
        }
        assert_eq!((b << 16) | a, 0xe3c6_a7c2, "the dictionary id of SPDY/3 peers");
    }

    #[test]
    fn frames_round_trip_through_the_codec() {
        // The client's side: a SYN_STREAM with port-forward headers, compressed by a second codec
        // (what a peer with the same dictionary sends).
        let mut client = Codec::default();
        let mut server = Codec::default();
        let headers: BTreeMap<String, String> = [("streamtype", "data"), ("port", "2379"), ("requestid", "0")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for id in [1u32, 3] {
            let mut payload = Vec::new();
            payload.put_u32(id);
            payload.put_u32(0);
            payload.put_u16(0);
            payload.extend(client.encode_headers(&headers));
            let mut buf = BytesMut::from(&control(SYN_STREAM, 0, &payload)[..]);
            buf.extend_from_slice(&data(id, true, b"hello"));
            let frame = server.decode(&mut buf).unwrap().unwrap();
            assert_eq!(
                frame,
                Frame::SynStream { id, fin: false, headers: headers.clone() },
                "the context carries over frames"
            );
            assert_eq!(
                server.decode(&mut buf).unwrap(),
                Some(Frame::Data { id, fin: true, data: Bytes::from_static(b"hello") })
            );
            assert_eq!(server.decode(&mut buf).unwrap(), None);
        }
        // The server's replies decode on the client's side.
        for id in [1u32, 3] {
            let mut buf = BytesMut::from(&syn_reply(&mut server, id)[..]);
            assert_eq!(client.decode(&mut buf).unwrap(), Some(Frame::Other));
        }
        let mut buf = BytesMut::from(&ping(7)[..]);
        buf.extend_from_slice(&rst_stream(3));
        let half = buf.split_to(5);
        let mut partial = half.clone();
        assert_eq!(client.decode(&mut partial).unwrap(), None, "half a frame waits");
        let mut whole = half;
        whole.extend_from_slice(&buf);
        assert_eq!(client.decode(&mut whole).unwrap(), Some(Frame::Ping { id: 7 }));
        assert_eq!(client.decode(&mut whole).unwrap(), Some(Frame::RstStream { id: 3, status: 5 }));
    }
}
