//! Watch: a stream of JSON events read from the revision log, with initial events, bookmarks,
//! timeouts, selector transitions and 410 Gone for compacted revisions.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use uc_api::Pointer;

use crate::app::{App, Body, Render, Req};
use crate::error::{ApiError, Result};
use crate::request::{PartialMetadata, Selectors, Target, include_object, parse_rv, served_as_stored, to_version};
use crate::storage::{Event, EventType, Kept, Obj, StoreError};
use crate::table;

/// How often an idle watch with bookmarks enabled gets a BOOKMARK.
const BOOKMARK_EVERY: Duration = Duration::from_secs(10);
/// How long a watch woken by a write waits before it reads the log: the events of the writes that
/// follow within it go out in one write to the socket instead of one each (fewer system calls and
/// wake-ups in the server and in the watching client; docs/benchmarks.md), for at most a millisecond
/// or two more of latency.
const COALESCE: Duration = Duration::from_millis(1);
/// Events read from the log per round, so one busy watcher cannot hold the log lock long.
const ROUND: usize = 2048;

struct Watcher {
    app: Arc<App>,
    target: Target,
    selectors: Selectors,
    render: Render,
    include: table::IncludeObject,
    bookmarks: bool,
    sent_columns: bool,
}

impl Watcher {
    fn in_scope(&self, ev: &Event) -> bool {
        if ev.gr != self.target.info.gr() {
            return false;
        }
        if let Some(ns) = &self.target.namespace
            && !(ev.key.len() > ns.len() && ev.key.starts_with(ns.as_str()) && ev.key.as_bytes()[ns.len()] == b'/')
        {
            return false;
        }
        if let Some(name) = &self.target.name
            && ev.key.rsplit('/').next() != Some(name.as_str())
        {
            return false;
        }
        true
    }

    /// The event's type as this watcher sees it, given its selectors (objects entering or leaving the
    /// selection become ADDED / DELETED, as kube-apiserver's watch cache reports them).
    fn translate(&self, ev: &Event) -> Option<&'static str> {
        let now = self.selectors.matches_kept(&ev.object);
        match ev.kind {
            EventType::Added => now.then_some("ADDED"),
            EventType::Deleted => {
                let before = ev.prev.as_ref().is_none_or(|p| self.selectors.matches_kept(p));
                before.then_some("DELETED")
            }
            EventType::Modified => {
                let before = ev.prev.as_ref().is_some_and(|p| self.selectors.matches_kept(p));
                match (before, now) {
                    (true, true) => Some("MODIFIED"),
                    (false, true) => Some("ADDED"),
                    (true, false) => Some("DELETED"),
                    (false, false) => None,
                }
            }
        }
    }

    fn encode(&mut self, kind: &str, obj: &Obj) -> Bytes {
        let obj = to_version(&self.target.info, &self.target.version, obj);
        self.render(kind, &obj)
    }

    /// An object already at this watcher's version, rendered as the watcher asked.
    fn render(&mut self, kind: &str, obj: &Obj) -> Bytes {
        let info = &self.target.info;
        let object = match self.render {
            // The stored object is serialized where it lies, not copied first.
            Render::Json => return line(kind, &crate::wire::Wire(obj)),
            Render::Metadata => return line(kind, &PartialMetadata::of(obj)),
            Render::Table => {
                let mut t = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1",
                    "metadata": {"resourceVersion": obj.at("/metadata/resourceVersion")},
                    "rows": [table::row(info, &self.target.version, obj, self.include)]});
                if !self.sent_columns {
                    t["columnDefinitions"] = Value::Array(table::column_definitions(info, &self.target.version));
                    self.sent_columns = true;
                } else {
                    t["columnDefinitions"] = Value::Null;
                }
                t
            }
        };
        line(kind, &crate::wire::Wire(&object))
    }

    /// A kept object (an event's, a list's) as this watcher sends it, appended to `out` (a chunk of
    /// lines): its JSON is the store's, shared with every other watcher sending the object as stored (the
    /// plain JSON of the version it is stored at).
    fn encode_kept_onto(&mut self, kind: &'static str, kept: &Kept, out: &mut Vec<u8>) {
        if served_as_stored(&self.target.info, &self.target.version, kept.api_version()) {
            match self.render {
                Render::Json => return line_onto(kind, kept, out),
                // The metadata's bytes are a slice of the stored JSON's.
                Render::Metadata => return metadata_line_onto(kind, kept.metadata_json().as_deref(), out),
                Render::Table => {}
            }
        }
        out.extend_from_slice(&self.encode(kind, &kept.tree()));
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let info = &self.target.info;
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        line(
            "BOOKMARK",
            &json!({"kind": info.kind, "apiVersion": info.api_version(&self.target.version), "metadata": meta}),
        )
    }
}

/// One event of the stream, serialized from borrowed parts.
#[derive(serde::Serialize)]
struct Line<'a, T> {
    #[serde(rename = "type")]
    kind: &'a str,
    object: &'a T,
}

fn line<T: serde::Serialize>(kind: &str, object: &T) -> Bytes {
    let mut v = serde_json::to_vec(&Line { kind, object }).unwrap_or_default();
    v.push(b'\n');
    Bytes::from(v)
}

/// The line of an event whose object is already JSON, appended to `out`: the same bytes [`line`] writes.
fn line_onto(kind: &'static str, object: &Kept, out: &mut Vec<u8>) {
    out.reserve(object.json_len() + kind.len() + 24);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    object.write_json(out);
    out.extend_from_slice(b"}\n");
}

/// The line of a `PartialObjectMetadata` event whose metadata is already JSON (None: the object has
/// none), appended to `out`: the same bytes [`line`] writes for [`PartialMetadata`].
fn metadata_line_onto(kind: &'static str, metadata: Option<&[u8]>, out: &mut Vec<u8>) {
    out.reserve(metadata.map_or(4, <[u8]>::len) + kind.len() + 96);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    crate::request::write_partial_metadata(out, metadata);
    out.extend_from_slice(b"}\n");
}

/// Lines gathered into one chunk of the response: the events a round reads go out in few writes (one
/// system call and one TLS record for many events, in the server and in the client reading them).
struct Chunk(Vec<u8>);

/// A chunk is sent once it holds this much (and at the end of each round).
const CHUNK_BYTES: usize = 64 << 10;

impl Chunk {
    fn new() -> Self {
        Chunk(Vec::new())
    }

    /// Sends what the chunk holds if it is full (`all`: if it holds anything); false if the client is
    /// gone.
    async fn send(&mut self, tx: &mpsc::Sender<Bytes>, all: bool) -> bool {
        let due = self.0.len() >= CHUNK_BYTES || all && !self.0.is_empty();
        if !due {
            return true;
        }
        tx.send(Bytes::from(std::mem::take(&mut self.0))).await.is_ok()
    }
}

fn gone_line(requested: u64, oldest: u64) -> Bytes {
    let status = uc_api::Status::failure(410, "Expired", format!("too old resource version: {requested} ({oldest})"));
    line("ERROR", &serde_json::to_value(status).unwrap_or(Value::Null))
}

/// Serves a watch request.
pub fn serve(app: &Arc<App>, req: &Req, t: &Target) -> Result<Response<Body>> {
    crate::request::check_list_options(&req.params)?;
    let selectors = Selectors::from_req(req)?;
    let mut selectors = selectors;
    if let Some(name) = &t.name {
        // Watching one object (`/pods/x?watch=true`) is a field selector on its name.
        selectors.fields.terms.push(("metadata.name".into(), name.clone(), true));
    }
    let rv_param = req.params.get("resourceVersion").map(String::as_str).unwrap_or_default();
    let send_initial = match req.params.get("sendInitialEvents").map(String::as_str) {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    let bookmarks = req.params.get("allowWatchBookmarks").and_then(|v| crate::request::parse_bool(v)) == Some(true);
    if send_initial.is_some() && !bookmarks {
        return Err(ApiError::invalid(
            "WatchOptions",
            "meta.k8s.io",
            "",
            &[crate::error::FieldError::forbidden(
                "allowWatchBookmarks",
                "sendInitialEvents requires setting allowWatchBookmarks=true",
            )],
        ));
    }
    let start: Option<u64> = match rv_param {
        "" | "0" => None,
        rv => Some(parse_rv(rv)?),
    };
    let initial = match send_initial {
        Some(v) => v,
        None => start.is_none(),
    };
    let timeout = match req.params.get("timeoutSeconds") {
        Some(s) => Duration::from_secs(s.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("invalid timeoutSeconds {s:?}: must be a non-negative integer"))
        })?),
        None => Duration::from_secs(1800 + rand::random_range(0..1800)),
    };
    let mut w = Watcher {
        app: app.clone(),
        target: t.clone(),
        selectors,
        render: req.negotiated.render,
        include: include_object(req),
        bookmarks,
        sent_columns: false,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        let _ = tokio::time::timeout_at(deadline, run(&mut w, tx, start, initial, send_initial.is_some())).await;
    });
    let stream = tokio_stream_from(rx).map(|b| Ok::<_, std::io::Error>(Frame::data(b)));
    let body: Body = BodyExt::boxed(StreamBody::new(stream));
    let mut r = Response::new(body);
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut().insert(header::TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
    Ok(r)
}

fn tokio_stream_from(mut rx: mpsc::Receiver<Bytes>) -> impl futures::Stream<Item = Bytes> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// The initial events (an ADDED per object at `start`, then the bookmark ending them when asked for);
/// the revision they show, or `None` when the watch ends (410, the client gone).
async fn send_initial(
    w: &mut Watcher,
    tx: &mpsc::Sender<Bytes>,
    start: Option<u64>,
    end_bookmark: bool,
) -> Option<u64> {
    let (objects, rv) = match w.app.store.list_kept(&w.target.info.gr(), w.target.namespace.as_deref(), start) {
        Ok(x) => x,
        Err(StoreError::Gone { requested, oldest }) => {
            let _ = tx.send(gone_line(requested, oldest)).await;
            return None;
        }
        Err(_) => return None,
    };
    let mut chunk = Chunk::new();
    for (_, kept) in objects {
        if w.selectors.matches_kept(&kept) {
            w.encode_kept_onto("ADDED", &kept, &mut chunk.0);
            if !chunk.send(tx, false).await {
                return None;
            }
        }
    }
    if !chunk.send(tx, true).await || end_bookmark && tx.send(w.bookmark(rv, true)).await.is_err() {
        return None;
    }
    Some(rv)
}

async fn run(w: &mut Watcher, tx: mpsc::Sender<Bytes>, start: Option<u64>, initial: bool, initial_end_bookmark: bool) {
    let store = w.app.store.clone();
    let mut revisions = store.subscribe();
    revisions.borrow_and_update();
    let mut cursor = match start {
        Some(rv) => rv,
        None => store.revision(),
    };
    if initial {
        let Some(rv) = send_initial(w, &tx, start, initial_end_bookmark).await else { return };
        cursor = rv;
    }
    // A bookmark is due BOOKMARK_EVERY after the last line this watch sent, however busy other
    // resources keep the store: a quiet watch's resourceVersion then follows the store's, and it
    // resumes after a reconnect instead of finding its version compacted (410).
    let mut bookmark_due = tokio::time::Instant::now() + BOOKMARK_EVERY;
    loop {
        let mut batch: Vec<Arc<Event>> = Vec::new();
        let mut newest = cursor;
        let res = store.events_after(cursor, |ev| {
            if batch.len() < ROUND {
                newest = ev.rv;
                if w.in_scope(ev) {
                    batch.push(ev.clone());
                }
            }
        });
        match res {
            Err(StoreError::Gone { requested, oldest }) => {
                let _ = tx.send(gone_line(requested, oldest)).await;
                return;
            }
            Err(_) => return,
            Ok(_) => {}
        }
        cursor = newest;
        let mut chunk = Chunk::new();
        for ev in batch {
            if let Some(kind) = w.translate(&ev) {
                w.encode_kept_onto(kind, &ev.object, &mut chunk.0);
                if !chunk.send(&tx, false).await {
                    return;
                }
                bookmark_due = tokio::time::Instant::now() + BOOKMARK_EVERY;
            }
        }
        if !chunk.send(&tx, true).await {
            return;
        }
        if w.bookmarks && tokio::time::Instant::now() >= bookmark_due {
            if tx.send(w.bookmark(cursor, false)).await.is_err() {
                return;
            }
            bookmark_due = tokio::time::Instant::now() + BOOKMARK_EVERY;
        }
        if store.revision() > cursor {
            continue;
        }
        tokio::select! {
            changed = revisions.changed() => {
                if changed.is_err() {
                    return;
                }
                tokio::time::sleep(COALESCE).await;
            }
            // Due: the check above the select sends it.
            _ = tokio::time::sleep_until(bookmark_due), if w.bookmarks => {}
            _ = tx.closed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_from_kept_json_is_the_line_written_from_the_object() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a\"b", "resourceVersion": "3"},
            "data": {"k": "é\n", "long": "abc".repeat(100)}});
        let kept = Kept::cold(&object);
        let line_with = |kind, kept: &Kept| {
            let mut out = b"before\n".to_vec();
            line_onto(kind, kept, &mut out);
            Bytes::from(out.split_off(7))
        };
        let plain: Vec<Bytes> = ["ADDED", "MODIFIED", "DELETED"].map(|kind| line_with(kind, &kept)).into();
        for (kind, plain) in ["ADDED", "MODIFIED", "DELETED"].into_iter().zip(&plain) {
            let parsed = |b: &[u8]| serde_json::from_slice::<Value>(b).unwrap();
            assert_eq!(parsed(plain), parsed(&line(kind, &object)), "{kind}");
            assert!(plain.ends_with(b"}\n"), "one line");
        }
        assert!(kept.pack(), "packed");
        let packed: Vec<Bytes> = ["ADDED", "MODIFIED", "DELETED"].map(|kind| line_with(kind, &kept)).into();
        assert_eq!(packed, plain, "a packed object's line is the same bytes");
    }

    #[test]
    fn a_metadata_line_from_the_stored_json_is_the_line_written_from_the_metadata() {
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a\"b", "labels": {"x": "é\n"},
                "managedFields": [{"manager": "m", "fieldsV1": {"f:data": {".": {}}}}]}, "data": {"k": "v"}}),
            json!({"kind": "ConfigMap", "data": {"metadata": {"name": "not this one"}}}),
            json!({"metadata": null}),
        ];
        for object in objects {
            let encoded = crate::kept::Encoded::of(&object);
            let mut out = Vec::new();
            metadata_line_onto("MODIFIED", encoded.metadata().as_deref(), &mut out);
            assert_eq!(Bytes::from(out), line("MODIFIED", &PartialMetadata::of(&object)), "{object}");
        }
    }
}
