//! The revision log: recent changes, in order, for watches that resume from a resourceVersion and lists
//! at a past revision. It is compacted as kube-apiserver's history is — beyond a number of events, past a
//! retention window, beyond a byte budget — and a revision older than what it holds is 410 Gone.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use uc_api::GroupResource;

use crate::stored::{Obj, StoreError};

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// Created.
    Added,
    /// Updated.
    Modified,
    /// Removed.
    Deleted,
}

impl EventType {
    /// The watch event type string.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One entry of the revision log.
#[derive(Debug)]
pub struct Event {
    /// The revision this change created.
    pub rv: u64,
    /// What happened.
    pub kind: EventType,
    /// Resource type of the object.
    pub gr: GroupResource,
    /// Storage key `namespace/name`.
    pub key: String,
    /// The object after the change (for deletes: its last state, with the delete's resourceVersion).
    pub object: Obj,
    /// The object before the change.
    pub prev: Option<Obj>,
    /// When the change was made (history older than the retention window is compacted).
    pub at: std::time::Instant,
    /// The change's size as JSON (approximately), for the history's byte budget.
    pub bytes: usize,
    /// The object as JSON, written by the first watcher that sends it as stored and shared by the others
    /// (as kube-apiserver's watch cache shares an event's serialization), kept while the event is among
    /// the newest [`ENCODED_EVENTS`].
    pub encoded: parking_lot::Mutex<Option<Encoded>>,
}

/// An object written as JSON, and where its `metadata` lies in those bytes: a watcher of metadata alone
/// (`as=PartialObjectMetadata`, as garbage collectors and metadata informers watch) sends that slice
/// instead of writing the metadata again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The object's JSON, as `serde_json::to_vec` writes it.
    pub json: bytes::Bytes,
    metadata: Option<std::ops::Range<usize>>,
}

/// The top-level members of an object in the order kube-apiserver writes them: `kind`, `apiVersion`,
/// `metadata` (its Go types start with TypeMeta and ObjectMeta), then the rest as stored.
pub fn in_kube_order(members: &serde_json::Map<String, Value>) -> impl Iterator<Item = (&String, &Value)> {
    const FIRST: [&str; 3] = ["kind", "apiVersion", "metadata"];
    FIRST
        .iter()
        .filter_map(|k| members.get_key_value(*k))
        .chain(members.iter().filter(|(k, _)| !FIRST.contains(&k.as_str())))
}

impl Encoded {
    /// `object` as JSON in kube's member order ([`in_kube_order`]), managed fields as JSON
    /// ([`crate::wire`]), noting where its top-level `metadata` is.
    pub fn of(object: &Value) -> Self {
        let Value::Object(members) = object else {
            return Self { json: crate::wire::to_vec(object).into(), metadata: None };
        };
        let mut out = Vec::with_capacity(json_size(object) + 16);
        let mut metadata = None;
        out.push(b'{');
        for (i, (key, value)) in in_kube_order(members).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            // Writing to a vector fails only for a value serde_json cannot write, which a Value is not.
            let _ = serde_json::to_writer(&mut out, key);
            out.push(b':');
            let start = out.len();
            let _ = serde_json::to_writer(&mut out, &crate::wire::Member(key, value));
            if key == "metadata" {
                metadata = Some(start..out.len());
            }
        }
        out.push(b'}');
        Self { json: out.into(), metadata }
    }

    /// The JSON of the object's `metadata` (None if it has none), sharing the object's bytes.
    pub fn metadata(&self) -> Option<bytes::Bytes> {
        self.metadata.clone().map(|r| self.json.slice(r))
    }
}

/// How many of the newest events keep their object's JSON for watchers: enough for every watcher keeping
/// up; one further behind writes its own.
pub const ENCODED_EVENTS: usize = 1024;

impl Event {
    /// A change about to be made; the history's budget counts its size once it is published.
    pub fn new(rv: u64, kind: EventType, gr: GroupResource, key: String, object: Obj, prev: Option<Obj>) -> Self {
        let (at, bytes, encoded) = (Instant::now(), 0, Default::default());
        Self { rv, kind, gr, key, object, prev, at, bytes, encoded }
    }

    /// The object as JSON, written once for every watcher.
    pub fn object_json(&self) -> bytes::Bytes {
        self.encoded().json
    }

    /// The object's JSON and where its metadata is, written once for every watcher.
    pub fn encoded(&self) -> Encoded {
        self.encoded.lock().get_or_insert_with(|| Encoded::of(&self.object)).clone()
    }
}

/// The approximate size of a value written as JSON, without writing it.
pub fn json_size(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(_) => 5,
        Value::Number(_) => 4,
        Value::String(s) => s.len() + 2,
        Value::Array(a) => 2 + a.iter().map(|x| json_size(x) + 1).sum::<usize>(),
        Value::Object(m) => 2 + m.iter().map(|(k, x)| k.len() + 4 + json_size(x)).sum::<usize>(),
    }
}

/// What the revision log holds now (for `/metrics`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryStats {
    /// Events in the log.
    pub events: usize,
    /// Their size as JSON.
    pub bytes: usize,
    /// The oldest revision a watch can start from.
    pub oldest_revision: u64,
    /// The newest revision.
    pub revision: u64,
}

/// How much history is kept.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most events.
    pub events: usize,
    /// Longest age.
    pub retention: Duration,
    /// Most bytes (as JSON).
    pub bytes: usize,
}

/// The log.
#[derive(Debug, Default)]
pub struct History {
    log: VecDeque<Arc<Event>>,
    bytes: usize,
    /// Every event with a revision above `start` is in the log.
    pub start: u64,
}

impl History {
    /// Appends the newest change; the event [`ENCODED_EVENTS`] before it lets go of its JSON.
    pub fn push(&mut self, ev: Arc<Event>) {
        self.bytes += ev.bytes;
        self.log.push_back(ev);
        if let Some(old) = self.log.len().checked_sub(ENCODED_EVENTS + 1).and_then(|i| self.log.get(i)) {
            old.encoded.lock().take();
        }
    }

    /// Whether the log holds nothing.
    pub fn is_empty(&self) -> bool {
        self.log.is_empty()
    }

    /// Drops the oldest history while it is beyond a limit.
    pub fn compact(&mut self, limits: &Limits, now: Instant) {
        while self.wants_compaction(limits, now) {
            let Some(ev) = self.log.pop_front() else { return };
            self.start = ev.rv;
            self.bytes -= ev.bytes;
        }
    }

    /// Whether `compact` would drop anything now.
    pub fn wants_compaction(&self, limits: &Limits, now: Instant) -> bool {
        self.log.front().is_some_and(|f| now.saturating_duration_since(f.at) > limits.retention)
            || self.log.len() > limits.events
            || self.bytes > limits.bytes
    }

    /// Fails with Gone when changes after `rv` have been compacted.
    pub fn check(&self, rv: u64) -> Result<(), StoreError> {
        if rv < self.start {
            return Err(StoreError::Gone { requested: rv, oldest: self.start });
        }
        Ok(())
    }

    /// The changes after `rv`, oldest first.
    pub fn after(&self, rv: u64) -> Result<impl Iterator<Item = &Arc<Event>>, StoreError> {
        self.check(rv)?;
        Ok(self.log.iter().skip((rv - self.start) as usize))
    }

    /// The change that made revision `rv`, while the log holds it.
    pub fn event(&self, rv: u64) -> Option<&Arc<Event>> {
        let i = rv.checked_sub(self.start + 1)?;
        self.log.get(usize::try_from(i).ok()?).filter(|ev| ev.rv == rv)
    }

    /// Every change, newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = &Arc<Event>> {
        self.log.iter().rev()
    }

    /// The gauges `/metrics` shows.
    pub fn stats(&self, revision: u64) -> HistoryStats {
        HistoryStats { events: self.log.len(), bytes: self.bytes, oldest_revision: self.start, revision }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_events_json_is_written_once_and_kept_only_while_the_event_is_recent() {
        let ev = |rv: u64| {
            let object = Arc::new(json!({"metadata": {"name": "a", "resourceVersion": rv.to_string()}}));
            Arc::new(Event::new(rv, EventType::Added, GroupResource::new("", "pods"), "ns/a".into(), object, None))
        };
        let mut h = History::default();
        let first = ev(1);
        let json = first.object_json();
        assert_eq!(serde_json::from_slice::<Value>(&json).unwrap(), *first.object);
        assert_eq!(first.object_json().as_ptr(), json.as_ptr(), "written once, then shared");
        h.push(first.clone());
        for rv in 2..=ENCODED_EVENTS as u64 {
            h.push(ev(rv));
        }
        assert!(first.encoded.lock().is_some(), "still among the newest");
        h.push(ev(ENCODED_EVENTS as u64 + 1));
        assert!(first.encoded.lock().is_none(), "let go once older");
        assert_eq!(first.object_json(), json, "written again on demand");
    }

    #[test]
    fn an_encoded_object_is_in_kubes_order_and_its_metadata_a_slice_of_it() {
        let cm = json!({"apiVersion": "v1", "data": {"k": "v"}, "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(
            String::from_utf8(Encoded::of(&cm).json.to_vec()).unwrap(),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"},"data":{"k":"v"}}"#
        );
        let values = [
            json!({"apiVersion": "v1", "metadata": {"name": "a\"b", "labels": {"é": "\u{1}"}}, "spec": {"n": [1, 2.5, null]}}),
            json!({"spec": {"metadata": {"name": "nested, not the object's"}}}),
            json!({}),
            json!({"metadata": {}}),
            json!([1, {"metadata": {}}]),
            json!("text"),
        ];
        for v in values {
            let e = Encoded::of(&v);
            assert_eq!(serde_json::from_slice::<Value>(&e.json).unwrap(), v, "the same JSON: {v}");
            let metadata = v.as_object().and_then(|m| m.get("metadata")).map(|m| serde_json::to_vec(m).unwrap());
            assert_eq!(e.metadata().map(|b| b.to_vec()), metadata, "{v}");
        }
    }

    #[test]
    fn json_sizes_are_close_to_the_written_length() {
        let v =
            json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"n": [1, 2, 3], "ok": true, "s": null}});
        let written = serde_json::to_vec(&v).unwrap().len();
        let estimate = json_size(&v);
        assert!(estimate.abs_diff(written) * 5 <= written, "{estimate} vs {written}");
    }
}
