//! The revision log: recent changes, in order, for watches that resume from a resourceVersion and lists
//! at a past revision. It is compacted as kube-apiserver's history is — beyond a number of events, past a
//! retention window, beyond a byte budget — and a revision older than what it holds is 410 Gone.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use uc_api::GroupResource;

use crate::kept::Kept;
use crate::stored::StoreError;

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
    pub object: Arc<Kept>,
    /// The object before the change.
    pub prev: Option<Arc<Kept>>,
    /// When the change was made (history older than the retention window is compacted).
    pub at: std::time::Instant,
    /// The change's size as JSON, for the history's byte budget.
    pub bytes: usize,
}

/// The newest events keep their object's tree ([`Kept::cool`]), so that the reads that follow a write
/// (watchers' selectors, the garbage collector, the next read-modify-write) find it decoded: at most this
/// many of them, ...
pub const HOT_EVENTS: usize = 1024;

/// ... of at most this much JSON together (a tree costs five to seven times its JSON: a 1,000-pod
/// Deployment's newest events would otherwise keep ~12 MB of trees), ...
pub const HOT_BYTES: usize = 1 << 20;

/// ... and none older than this: at rest the store holds JSON only.
pub const HOT_AGE: Duration = Duration::from_secs(2);

impl Event {
    /// A change about to be made, its object kept as the JSON it was committed as.
    pub fn new(
        rv: u64,
        kind: EventType,
        gr: GroupResource,
        key: String,
        object: Arc<Kept>,
        prev: Option<Arc<Kept>>,
    ) -> Self {
        let bytes = object.json_len();
        Self { rv, kind, gr, key, object, prev, at: Instant::now(), bytes }
    }

    /// The object as JSON, written once for the store, every watcher and the log.
    pub fn object_json(&self) -> bytes::Bytes {
        self.object.json()
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
    /// The events from this index on keep their trees (the hot window); those before it have cooled.
    hot_start: usize,
    /// The JSON of the hot window's events.
    hot_bytes: usize,
    /// Objects that have cooled (or were read back cold) and are not packed yet: the compactor packs them
    /// outside the store's lock ([`Kept::pack`]).
    to_pack: Vec<Arc<Kept>>,
    /// The trees let go of since [`History::take_cooled`]: dropped by the caller once the store's lock
    /// is released.
    cooled: Vec<crate::stored::Obj>,
    /// Every event with a revision above `start` is in the log.
    pub start: u64,
}

impl History {
    /// Appends the newest change; the oldest events of the hot window let go of their trees while it
    /// holds more than [`HOT_EVENTS`] or [`HOT_BYTES`].
    pub fn push(&mut self, ev: Arc<Event>) {
        self.bytes += ev.bytes;
        self.hot_bytes += ev.bytes;
        self.log.push_back(ev);
        while self.log.len() - self.hot_start > HOT_EVENTS || self.hot_bytes > HOT_BYTES {
            self.cool_oldest_hot();
        }
    }

    /// The oldest event of the hot window lets go of its tree.
    fn cool_oldest_hot(&mut self) {
        let Some(ev) = self.log.get(self.hot_start) else { return };
        self.cooled.extend(ev.object.cool());
        self.to_pack.push(ev.object.clone());
        self.hot_bytes -= ev.bytes;
        self.hot_start += 1;
    }

    /// The events of the hot window older than [`HOT_AGE`] let go of their trees.
    fn cool_aged(&mut self, now: Instant) {
        while self.log.get(self.hot_start).is_some_and(|ev| now.saturating_duration_since(ev.at) > HOT_AGE) {
            self.cool_oldest_hot();
        }
    }

    /// Whether the log holds nothing.
    pub fn is_empty(&self) -> bool {
        self.log.is_empty()
    }

    /// Drops the oldest history while it is beyond a limit, and cools the hot window's aged events.
    pub fn compact(&mut self, limits: &Limits, now: Instant) {
        self.cool_aged(now);
        while self.beyond(limits, now) {
            if self.hot_start == 0 {
                self.cool_oldest_hot();
            }
            let Some(ev) = self.log.pop_front() else { return };
            self.hot_start -= 1;
            self.start = ev.rv;
            self.bytes -= ev.bytes;
        }
    }

    /// Notes an object to be packed (one read back cold from the log).
    pub fn pack_later(&mut self, object: Arc<Kept>) {
        self.to_pack.push(object);
    }

    /// How many objects wait to be packed.
    pub fn waiting_to_pack(&self) -> usize {
        self.to_pack.len()
    }

    /// The objects to pack, handed over.
    pub fn take_to_pack(&mut self) -> Vec<Arc<Kept>> {
        std::mem::take(&mut self.to_pack)
    }

    /// The trees cooling let go of, handed over to be dropped outside the store's lock.
    pub fn take_cooled(&mut self) -> Vec<crate::stored::Obj> {
        std::mem::take(&mut self.cooled)
    }

    /// Whether `compact` would drop or cool anything now, or objects wait to be packed.
    pub fn wants_compaction(&self, limits: &Limits, now: Instant) -> bool {
        !self.to_pack.is_empty()
            || self.beyond(limits, now)
            || self.log.get(self.hot_start).is_some_and(|ev| now.saturating_duration_since(ev.at) > HOT_AGE)
    }

    /// Whether the oldest event is beyond a limit.
    fn beyond(&self, limits: &Limits, now: Instant) -> bool {
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
    use serde_json::{Value, json};

    /// An event at `rv` whose object has `pad` bytes of data.
    fn padded(rv: u64, pad: usize) -> Arc<Event> {
        let object = Arc::new(
            json!({"metadata": {"name": "a", "resourceVersion": rv.to_string()}, "data": {"x": "y".repeat(pad)}}),
        );
        let kept = Arc::new(Kept::new(object));
        Arc::new(Event::new(rv, EventType::Added, GroupResource::new("", "pods"), "ns/a".into(), kept, None))
    }

    fn hot(h: &History) -> Vec<u64> {
        h.log.iter().filter(|ev| ev.object.kept_tree().is_some()).map(|ev| ev.rv).collect()
    }

    #[test]
    fn the_hot_window_holds_at_most_its_bytes_of_json() {
        let mut h = History::default();
        let pad = HOT_BYTES / 4;
        for rv in 1..=10 {
            h.push(padded(rv, pad));
        }
        assert_eq!(hot(&h), vec![8, 9, 10], "three events of a quarter of the budget and a bit fit");
        let bytes = |from: usize| h.log.iter().skip(from).map(|ev| ev.bytes).sum::<usize>();
        assert!(h.hot_bytes <= HOT_BYTES && h.hot_bytes == bytes(7));
        let limits = Limits { events: 2, retention: Duration::from_secs(60), bytes: usize::MAX };
        h.compact(&limits, Instant::now());
        assert_eq!(hot(&h), vec![9, 10], "a compacted event leaves the window");
        assert_eq!(h.hot_bytes, h.log.iter().map(|ev| ev.bytes).sum::<usize>());
    }

    #[test]
    fn the_hot_window_cools_events_older_than_its_age() {
        let mut h = History::default();
        for rv in 1..=3 {
            h.push(padded(rv, 10));
        }
        let limits = Limits { events: 100, retention: Duration::from_secs(60), bytes: usize::MAX };
        let now = Instant::now();
        assert!(!h.wants_compaction(&limits, now));
        h.compact(&limits, now);
        assert_eq!(hot(&h), vec![1, 2, 3], "young events keep their trees");
        let later = now + HOT_AGE + Duration::from_millis(1);
        assert!(h.wants_compaction(&limits, later), "the compactor comes for aged trees");
        h.compact(&limits, later);
        assert_eq!(hot(&h), Vec::<u64>::new());
        assert_eq!((h.log.len(), h.hot_bytes), (3, 0), "the events stay; only their trees go");
        h.push(padded(4, 10));
        assert_eq!(hot(&h), vec![4]);
    }

    #[test]
    fn an_events_tree_is_kept_only_while_the_event_is_recent() {
        let ev = |rv: u64| padded(rv, 0);
        let mut h = History::default();
        let first = ev(1);
        let json = first.object_json();
        assert_eq!(serde_json::from_slice::<Value>(&json).unwrap(), *first.object.tree());
        assert_eq!(first.bytes, json.len(), "the budget counts the JSON kept");
        let tree = first.object.tree();
        h.push(first.clone());
        for rv in 2..=HOT_EVENTS as u64 {
            h.push(ev(rv));
        }
        assert!(first.object.kept_tree().is_some(), "still among the newest");
        assert!(h.take_cooled().is_empty());
        h.push(ev(HOT_EVENTS as u64 + 1));
        assert!(first.object.kept_tree().is_none(), "let go once older");
        let cooled = h.take_cooled();
        assert!(cooled.len() == 1 && Arc::ptr_eq(&cooled[0], &tree), "its tree handed back to be dropped");
        assert!(h.take_cooled().is_empty(), "once");
        assert_eq!(first.object_json(), json, "the JSON stays");
        let to_pack = h.take_to_pack();
        assert!(to_pack.len() == 1 && Arc::ptr_eq(&to_pack[0], &first.object), "what cooled is to be packed");
        let limits = Limits { events: 1, retention: Duration::from_secs(60), bytes: usize::MAX };
        let last = h.newest_first().next().cloned().unwrap();
        h.push(ev(HOT_EVENTS as u64 + 2));
        h.compact(&limits, Instant::now());
        assert!(last.object.kept_tree().is_none(), "a compacted event lets go of its tree too");
        assert!(h.take_to_pack().iter().any(|k| Arc::ptr_eq(k, &last.object)), "and is to be packed");
    }
}
