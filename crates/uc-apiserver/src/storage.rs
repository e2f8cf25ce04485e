//! Object storage: an in-memory map of every object (the watch cache), each kept as its JSON
//! ([`Kept`]), a revision log of recent changes, and an optional write-ahead log (with snapshots) that
//! makes each acknowledged write durable.
//!
//! A durable store's writes go through one writer thread. It takes every write waiting at that moment as
//! one batch (group commit): checks each write's precondition against the current state, appends the
//! batch to the log with one fdatasync, and only then publishes it to readers and watchers and
//! acknowledges it. So a watcher never sees a change that a crash could still lose, and one fsync pays for
//! many writes. Once the log fails (a write or a sync), every later write fails until uc restarts:
//! whether the failed batch reached the disk is unknown, and nothing may be committed on top of it.
//! A store in memory has no fsync to share: each write is committed by the task making it,
//! one at a time under a lock, without the two thread hand-offs a writer thread costs (a wake-up of the
//! writer, then of the waiting task: a tenth of the API server's CPU in docs/benchmarks.md's profile).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use uc_api::GroupResource;

pub use crate::history::{Event, EventType, HistoryStats};
use crate::history::{History, Limits};
pub use crate::kept::{Kept, rv_of};
pub use crate::stored::{Obj, StoreError};
use crate::wal::{Change, Wal};

mod index;
pub mod suspects;

/// Most writes taken into one group commit.
const MAX_BATCH: usize = 4096;

/// A write.
#[derive(Debug)]
pub enum Op {
    /// Create a new object; fails if the key exists.
    Create {
        /// Resource type.
        gr: GroupResource,
        /// `namespace/name`.
        key: String,
        /// The object; its resourceVersion is set by the store.
        object: Value,
    },
    /// Replace an object whose current resourceVersion is `expect_rv`.
    Update {
        /// Resource type.
        gr: GroupResource,
        /// `namespace/name`.
        key: String,
        /// The new object.
        object: Value,
        /// The resourceVersion the caller read.
        expect_rv: u64,
    },
    /// Remove an object whose current resourceVersion is `expect_rv`.
    Delete {
        /// Resource type.
        gr: GroupResource,
        /// `namespace/name`.
        key: String,
        /// The resourceVersion the caller read.
        expect_rv: u64,
    },
}

impl Op {
    fn target(&self) -> (&GroupResource, &str) {
        match self {
            Op::Create { gr, key, .. } | Op::Update { gr, key, .. } | Op::Delete { gr, key, .. } => (gr, key),
        }
    }
}

/// The storage key of an object: `namespace/name` (empty namespace for cluster-scoped objects).
pub fn object_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

fn db_key(gr: &GroupResource, key: &str) -> String {
    format!("{}/{}/{}", gr.group, gr.resource, key)
}

/// A reference to a stored object.
pub type ObjRef = (GroupResource, String);

/// A type's objects as kept, by key, and the revision they reflect.
pub type KeptList = (Vec<(String, Arc<Kept>)>, u64);

/// An object's place as the indexes keep it: its type by number ([`State::types`]) and its key — 24
/// bytes where an [`ObjRef`] is 72 and three allocations (the uid index has an entry per object).
type Place = (u32, Box<str>);

#[derive(Default)]
struct State {
    revision: u64,
    objects: HashMap<GroupResource, BTreeMap<String, Arc<Kept>>>,
    history: History,
    uids: HashMap<Box<str>, Place>,
    /// Each owner uid's dependents: a list, not a set — most owners have one or a few, and a hash set
    /// of one costs ~300 bytes (issue 58).
    dependents: HashMap<Box<str>, Vec<Place>>,
    /// The owner uids of `dependents` that no object has (`index.rs`): with `deleting`, what the
    /// garbage collector's full pass starts from, kept as the indexes change instead of found by walking
    /// them (a walk of a million owners held the state's lock for most of a second, issue 58).
    dangling: HashSet<Box<str>>,
    /// The objects with a deletionTimestamp.
    deleting: HashSet<Place>,
    /// The types [`Place`]s name, by number, and the number of each.
    types: Vec<GroupResource>,
    type_numbers: HashMap<GroupResource, u32>,
}

impl State {
    /// The object at a place, with its reference.
    fn at(&self, place: &Place) -> Option<(ObjRef, Arc<Kept>)> {
        let gr = self.types.get(place.0 as usize)?;
        let kept = self.objects.get(gr)?.get(&*place.1)?;
        Some(((gr.clone(), place.1.to_string()), kept.clone()))
    }
}

type Reply = oneshot::Sender<Result<Obj, StoreError>>;

/// Storage options.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Most events kept in the revision log; older revisions are compacted (watching from them gives
    /// 410).
    pub log_capacity: usize,
    /// How long history is kept (kube-apiserver compacts every 5 minutes by default).
    pub retention: std::time::Duration,
    /// Most bytes (as JSON) of history kept, whatever its age.
    pub log_budget_bytes: usize,
    /// Log segment size that triggers a snapshot (default 64 MiB).
    pub checkpoint_bytes: Option<u64>,
}

impl StoreOptions {
    fn limits(&self) -> Limits {
        Limits { events: self.log_capacity, retention: self.retention, bytes: self.log_budget_bytes }
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            log_capacity: 100_000,
            retention: std::time::Duration::from_secs(300),
            log_budget_bytes: 256 << 20,
            checkpoint_bytes: None,
        }
    }
}

/// The revision of the first change of a log record whose changes took consecutive revisions
/// ending at `revision`; `None` when the record claims more changes than revisions before it.
fn first_revision(revision: u64, changes: usize) -> Option<u64> {
    (revision + 1).checked_sub(changes as u64)
}

/// Who commits writes.
enum Writer {
    /// The writer thread, which group-commits to the log.
    Thread(mpsc::UnboundedSender<(Op, Reply)>),
    /// The writing task itself, one at a time (a store in memory).
    Inline(parking_lot::Mutex<()>),
}

/// The object store. Cheap to share behind an `Arc`.
pub struct Store {
    state: RwLock<State>,
    writer: Writer,
    revision_tx: watch::Sender<u64>,
    options: StoreOptions,
    /// What writes fail with since the log's first failure. Whether a failed write or sync left
    /// its record on disk is unknown (a later sync may still write it), so nothing may be committed
    /// after it (PostgreSQL and etcd stop too).
    failed: std::sync::OnceLock<String>,
    /// The directory of a durable store.
    dir: Option<std::path::PathBuf>,
    /// Wakes the compactor thread before its next second is up (a burst of writes left many objects
    /// to pack); dropped with the store, which ends the thread.
    compactor: std::sync::mpsc::SyncSender<()>,
}

/// The compactor packs what cooled every second, or as soon as this many objects wait: a burst of writes
/// (a 1,000-pod rollout) would otherwise hold a second's worth of them plain.
const PACK_BATCH: usize = 256;

/// Applies one recovered record to the state; a record from the log (after the snapshot) also rebuilds
/// its events, so that a watch resumes across a restart.
fn replay(
    state: &mut State,
    record: crate::wal::Record,
    snapshot_revision: u64,
    options: &StoreOptions,
) -> Result<(), StoreError> {
    // Changes of one record took consecutive revisions ending at the record's.
    let from_log = record.revision > snapshot_revision;
    // Snapshot records carry revision 0 (only the last names the snapshot's), so
    // their changes have no revisions of their own; they make no events either.
    let mut rv = match (from_log, first_revision(record.revision, record.changes.len())) {
        (false, _) => 0,
        (true, Some(rv)) => rv,
        (true, None) => {
            return Err(StoreError::Backend(format!(
                "log record at revision {} holds {} changes, more than its revision allows",
                record.revision,
                record.changes.len()
            )));
        }
    };
    for (k, value) in record.changes {
        let mut parts = k.splitn(3, '/');
        let (Some(group), Some(resource), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(StoreError::Backend(format!("malformed key {k:?} in the log")));
        };
        let gr = GroupResource::new(group, resource);
        let old = state.objects.get_mut(&gr).and_then(|m| m.remove(key));
        let new = match value {
            Some(bytes) => {
                let mut object = serde_json::from_slice::<Value>(&bytes)
                    .map_err(|e| StoreError::Backend(format!("object {k:?} in the log is not valid JSON: {e}")))?;
                crate::wire::compact(&mut object);
                let kept = Arc::new(Kept::cold(&object));
                state.history.pack_later(kept.clone());
                Some(kept)
            }
            None => None,
        };
        state.index(&gr, key, old.as_deref(), new.as_deref());
        if from_log {
            // The watch log is rebuilt too, so that a watch resumes across a restart.
            let (kind, object) = match (&old, &new) {
                (_, Some(n)) if old.is_some() => (EventType::Modified, n.clone()),
                (_, Some(n)) => (EventType::Added, n.clone()),
                (Some(o), None) => (EventType::Deleted, Arc::new(Kept::cold(&with_rv((*o.tree()).clone(), rv)))),
                (None, None) => {
                    rv += 1;
                    continue;
                }
            };
            let ev = Event::new(rv, kind, gr.clone(), key.to_string(), object, old.clone());
            state.history.push(Arc::new(ev));
            state.history.compact(&options.limits(), std::time::Instant::now());
            drop(state.history.take_cooled());
        }
        rv += 1;
        if let Some(new) = new {
            state.objects.entry(gr).or_default().insert(key.to_string(), new);
        }
    }
    state.revision = state.revision.max(record.revision);
    Ok(())
}

impl Store {
    /// Notes that the store stops cleanly here (no write comes after): a log found shorter at the
    /// next start is then damage, not a torn tail.
    pub fn seal(&self) -> Result<(), StoreError> {
        match &self.dir {
            Some(dir) if self.failure().is_none() => crate::wal::seal(dir, self.revision()),
            _ => Ok(()),
        }
    }

    /// Opens the store: durable in the directory `path` (log and snapshots), or purely in memory
    /// when `path` is `None`.
    pub fn open(path: Option<&Path>, options: StoreOptions) -> Result<Arc<Store>, StoreError> {
        let mut state = State::default();
        let wal = match path {
            Some(path) => {
                let (mut wal, recovered) = Wal::open(path)?;
                if let Some(bytes) = options.checkpoint_bytes {
                    wal.checkpoint_bytes = bytes;
                }
                state.history.start = recovered.snapshot_revision;
                for record in recovered.records {
                    replay(&mut state, record, recovered.snapshot_revision, &options)?;
                }
                if state.history.is_empty() {
                    state.history.start = state.revision;
                }
                Some(wal)
            }
            None => {
                state.history.start = state.revision;
                None
            }
        };
        let (revision_tx, _) = watch::channel(state.revision);
        let (compactor, wake) = std::sync::mpsc::sync_channel(1);
        let (writer, rx) = match wal {
            Some(wal) => {
                let (tx, rx) = mpsc::unbounded_channel();
                (Writer::Thread(tx), Some((wal, rx)))
            }
            None => (Writer::Inline(parking_lot::Mutex::new(())), None),
        };
        let store = Arc::new(Store {
            state: RwLock::new(state),
            writer,
            revision_tx,
            options,
            failed: Default::default(),
            dir: path.map(Path::to_path_buf),
            compactor,
        });
        if let Some((wal, rx)) = rx {
            let weak = Arc::downgrade(&store);
            std::thread::Builder::new()
                .name("uc-store-writer".into())
                .spawn(move || writer_loop(weak, wal, rx))
                .map_err(|e| StoreError::Backend(format!("cannot start the writer thread: {e}")))?;
        }
        // History also ages while nothing is written.
        let weak = Arc::downgrade(&store);
        std::thread::Builder::new()
            .name("uc-store-compactor".into())
            .spawn(move || {
                use std::sync::mpsc::RecvTimeoutError;
                while let Ok(()) | Err(RecvTimeoutError::Timeout) = wake.recv_timeout(std::time::Duration::from_secs(1))
                {
                    let Some(store) = weak.upgrade() else { return };
                    store.compact_now();
                }
            })
            .map_err(|e| StoreError::Backend(format!("cannot start the compactor thread: {e}")))?;
        Ok(store)
    }

    /// Compacts history that has aged out or is beyond the budget, then packs the objects that cooled
    /// (outside the store's lock: writers and readers go on meanwhile).
    pub fn compact_now(&self) {
        let (limits, now) = (self.options.limits(), std::time::Instant::now());
        if !self.state.read().history.wants_compaction(&limits, now) {
            return;
        }
        let (to_pack, cooled) = {
            let mut state = self.state.write();
            state.history.compact(&limits, now);
            (state.history.take_to_pack(), state.history.take_cooled())
        };
        drop(cooled);
        // An object only the list holds was replaced or deleted meanwhile: nothing to save.
        for kept in to_pack.into_iter().filter(|k| Arc::strong_count(k) > 1) {
            kept.pack();
        }
    }

    /// What the revision log holds.
    pub fn history(&self) -> HistoryStats {
        let state = self.state.read();
        state.history.stats(state.revision)
    }

    /// The newest revision.
    pub fn revision(&self) -> u64 {
        self.state.read().revision
    }

    /// The oldest revision a watch can start from.
    pub fn oldest_revision(&self) -> u64 {
        self.state.read().history.start
    }

    /// A receiver that changes whenever a new revision is published.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.revision_tx.subscribe()
    }

    /// One object.
    pub fn get(&self, gr: &GroupResource, key: &str) -> Option<Obj> {
        let kept = self.state.read().objects.get(gr).and_then(|m| m.get(key)).cloned();
        kept.map(|k| k.tree())
    }

    /// One object as kept (its JSON; a tree only if it was written last).
    pub fn get_kept(&self, gr: &GroupResource, key: &str) -> Option<Arc<Kept>> {
        self.state.read().objects.get(gr).and_then(|m| m.get(key)).cloned()
    }

    /// The object with this uid, if it exists, as kept.
    pub fn lookup_uid(&self, uid: &str) -> Option<(ObjRef, Arc<Kept>)> {
        let state = self.state.read();
        state.at(state.uids.get(uid)?)
    }

    /// Objects whose ownerReferences name this uid, as kept.
    pub fn dependents(&self, owner_uid: &str) -> Vec<(ObjRef, Arc<Kept>)> {
        let state = self.state.read();
        let Some(set) = state.dependents.get(owner_uid) else {
            return Vec::new();
        };
        set.iter().filter_map(|p| state.at(p)).collect()
    }

    /// Resource types that hold at least one object.
    pub fn resource_types(&self) -> Vec<GroupResource> {
        self.state.read().objects.iter().filter(|(_, m)| !m.is_empty()).map(|(gr, _)| gr.clone()).collect()
    }

    /// Objects of a type, optionally in one namespace, sorted by key, as of revision `at` (default: now),
    /// as trees. Returns the objects and the revision they reflect.
    pub fn list(
        &self,
        gr: &GroupResource,
        namespace: Option<&str>,
        at: Option<u64>,
    ) -> Result<(Vec<(String, Obj)>, u64), StoreError> {
        let (kept, rv) = self.list_kept(gr, namespace, at)?;
        Ok((kept.into_iter().map(|(k, v)| (k, v.tree())).collect(), rv))
    }

    /// The keys of a type's objects that have a deletionTimestamp.
    pub fn deleting(&self, gr: &GroupResource) -> Vec<String> {
        let state = self.state.read();
        let objects = state.objects.get(gr).into_iter().flatten();
        objects.filter(|(_, v)| v.deleting()).map(|(k, _)| k.clone()).collect()
    }

    /// [`Store::list`] as kept: each object's JSON, decoded only where a reader needs the tree.
    pub fn list_kept(
        &self,
        gr: &GroupResource,
        namespace: Option<&str>,
        at: Option<u64>,
    ) -> Result<KeptList, StoreError> {
        let state = self.state.read();
        let empty = BTreeMap::new();
        let current = state.objects.get(gr).unwrap_or(&empty);
        let in_scope = |k: &str| {
            namespace.is_none_or(|ns| k.len() > ns.len() && k.starts_with(ns) && k.as_bytes()[ns.len()] == b'/')
        };
        let collect = |map: &BTreeMap<String, Arc<Kept>>| -> Vec<(String, Arc<Kept>)> {
            match namespace {
                Some(ns) => {
                    let start = format!("{ns}/");
                    map.range(start.clone()..)
                        .take_while(|(k, _)| k.starts_with(&start))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                }
                None => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            }
        };
        let at = match at {
            None => return Ok((collect(current), state.revision)),
            Some(at) if at >= state.revision => return Ok((collect(current), state.revision)),
            Some(at) => at,
        };
        state.history.check(at)?;
        // Rebuild the past state by undoing, newest first, every later change to this type.
        let mut past = current.clone();
        for ev in state.history.newest_first().take_while(|e| e.rv > at) {
            if ev.gr != *gr || !in_scope(&ev.key) {
                continue;
            }
            match &ev.prev {
                Some(prev) if ev.kind != EventType::Added => {
                    past.insert(ev.key.clone(), prev.clone());
                }
                _ => {
                    past.remove(&ev.key);
                }
            }
        }
        Ok((collect(&past), at))
    }

    /// Calls `f` on every logged event newer than `after`, in order. Returns the newest revision seen
    /// (or `after` when there is nothing new), or `Gone` if events after `after` were compacted.
    pub fn events_after(&self, after: u64, mut f: impl FnMut(&Arc<Event>)) -> Result<u64, StoreError> {
        let state = self.state.read();
        for ev in state.history.after(after)? {
            f(ev);
        }
        Ok(state.revision.max(after))
    }

    /// `stored` (an object a write just returned) as JSON, shared with the store and the watchers sending
    /// its event: the answer to a write and every watch event of it are the same bytes, written once. None
    /// unless `stored` is the tree its event's object still keeps.
    pub fn encoded(&self, stored: &Obj) -> Option<bytes::Bytes> {
        let rv = rv_of(stored);
        let ev = self.state.read().history.event(rv).cloned()?;
        ev.object.kept_tree().filter(|tree| Arc::ptr_eq(tree, stored)).map(|_| ev.object_json())
    }

    /// What writes fail with once the log has failed.
    fn failure(&self) -> Option<String> {
        self.failed.get().cloned()
    }

    /// Records the log's failure (the first one stays) and returns what writes fail with from now on.
    fn fail(&self, e: StoreError) -> String {
        tracing::error!(error = %e, "the storage log failed; writes fail until uc restarts");
        self.failed.get_or_init(|| format!("{e}; writes fail until uc restarts")).clone()
    }

    /// Commits one write: durable (when the store has a file) once this returns Ok.
    pub async fn write(&self, op: Op) -> Result<Obj, StoreError> {
        // Nothing is kept that the store could not read back (`crate::limits`).
        if let Op::Create { object, .. } | Op::Update { object, .. } = &op
            && let Err(e) = crate::limits::check(object)
        {
            if let Op::Create { object, .. } | Op::Update { object, .. } = op {
                crate::limits::drop_deep(object);
            }
            return Err(StoreError::Unstorable(e));
        }
        let (tx, rx) = oneshot::channel();
        match &self.writer {
            Writer::Thread(writer) => writer.send((op, tx)).map_err(|_| StoreError::Closed)?,
            Writer::Inline(turn) => {
                let _turn = turn.lock();
                commit_batch(self, None, vec![(op, tx)]);
            }
        }
        rx.await.map_err(|_| StoreError::Closed)?
    }
}

fn writer_loop(store: std::sync::Weak<Store>, mut wal: Wal, mut rx: mpsc::UnboundedReceiver<(Op, Reply)>) {
    while let Some(first) = rx.blocking_recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        let Some(store) = store.upgrade() else { return };
        if let Some(e) = store.failure() {
            for (_, reply) in batch {
                let _ = reply.send(Err(StoreError::Backend(e.clone())));
            }
            continue;
        }
        commit_batch(&store, Some(&mut wal), batch);
    }
}

struct Planned {
    event: Option<Event>,
    reply: Reply,
    result: Result<Obj, StoreError>,
}

fn commit_batch(store: &Store, wal: Option<&mut Wal>, batch: Vec<(Op, Reply)>) {
    // Phase 1: decide every write against the current state plus the earlier writes of this batch.
    let mut planned = Vec::with_capacity(batch.len());
    let mut revision;
    {
        let state = store.state.read();
        revision = state.revision;
        let mut overlay: HashMap<(GroupResource, String), Option<Arc<Kept>>> = HashMap::new();
        for (op, reply) in batch {
            let (gr, key) = op.target();
            let slot = (gr.clone(), key.to_string());
            let current = match overlay.get(&slot) {
                Some(v) => v.clone(),
                None => state.objects.get(gr).and_then(|m| m.get(key)).cloned(),
            };
            let outcome = plan(op, current.as_ref(), revision + 1);
            match outcome {
                Ok(event) => {
                    revision += 1;
                    let after = if event.kind == EventType::Deleted { None } else { Some(event.object.clone()) };
                    overlay.insert(slot, after);
                    let result = Ok(event.object.tree());
                    planned.push(Planned { event: Some(event), reply, result });
                }
                Err(e) => planned.push(Planned { event: None, reply, result: Err(e) }),
            }
        }
    }
    // Phase 2: make the batch durable.
    let mut wal = wal;
    if let Some(wal) = wal.as_deref_mut()
        && planned.iter().any(|p| p.event.is_some())
        && let Err(e) = persist(wal, &planned, revision)
    {
        let e = store.fail(e);
        for p in planned {
            let _ = p.reply.send(Err(StoreError::Backend(e.clone())));
        }
        return;
    }
    // Phase 3: publish to readers and watchers, then acknowledge.
    let cooled = {
        let mut state = store.state.write();
        for p in &planned {
            let Some(ev) = &p.event else { continue };
            let map = state.objects.entry(ev.gr.clone()).or_default();
            let old = if ev.kind == EventType::Deleted {
                map.remove(&ev.key)
            } else {
                map.insert(ev.key.clone(), ev.object.clone())
            };
            let new = if ev.kind == EventType::Deleted { None } else { Some(ev.object.clone()) };
            state.index(&ev.gr, &ev.key, old.as_deref(), new.as_deref());
        }
        for p in &mut planned {
            if let Some(ev) = p.event.take() {
                state.history.push(Arc::new(ev));
            }
        }
        state.revision = revision;
        state.history.compact(&store.options.limits(), std::time::Instant::now());
        if state.history.waiting_to_pack() >= PACK_BATCH {
            // Full: the compactor is awake already.
            let _ = store.compactor.try_send(());
        }
        state.history.take_cooled()
    };
    store.revision_tx.send_replace(revision);
    if let Some(wal) = wal
        && wal.wants_checkpoint()
    {
        let snapshot: Vec<(String, Arc<Kept>)> = {
            let state = store.state.read();
            let objects = state.objects.iter();
            objects.flat_map(|(gr, m)| m.iter().map(move |(k, v)| (db_key(gr, k), v.clone()))).collect()
        };
        if let Err(e) = wal.checkpoint(revision, snapshot) {
            tracing::error!(error = %e, "starting a snapshot failed; the log keeps growing");
        }
    }
    for p in planned {
        let _ = p.reply.send(p.result);
    }
    // The trees that cooled are freed last: outside the lock, after the writers have their answers.
    drop(cooled);
}

/// `v` as the store keeps it at revision `rv`: its resourceVersion set, its managed fields compact
/// ([`crate::wire`]).
fn with_rv(mut v: Value, rv: u64) -> Value {
    crate::wire::compact(&mut v);
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
    v
}

fn plan(op: Op, current: Option<&Arc<Kept>>, rv: u64) -> Result<Event, StoreError> {
    let stamp = |v: Value| Arc::new(Kept::new(Arc::new(with_rv(v, rv))));
    let check = |expect_rv: u64| -> Result<&Arc<Kept>, StoreError> {
        let cur = current.ok_or(StoreError::NotFound)?;
        let found = cur.rv();
        if expect_rv != 0 && found != expect_rv {
            return Err(StoreError::Conflict { expected: expect_rv, found });
        }
        Ok(cur)
    };
    match op {
        Op::Create { gr, key, object } => {
            if current.is_some() {
                return Err(StoreError::AlreadyExists);
            }
            Ok(Event::new(rv, EventType::Added, gr, key, stamp(object), None))
        }
        Op::Update { gr, key, object, expect_rv } => {
            let prev = check(expect_rv)?.clone();
            Ok(Event::new(rv, EventType::Modified, gr, key, stamp(object), Some(prev)))
        }
        Op::Delete { gr, key, expect_rv } => {
            let prev = check(expect_rv)?.clone();
            let object = stamp((*prev.tree()).clone());
            Ok(Event::new(rv, EventType::Deleted, gr, key, object, Some(prev)))
        }
    }
}

/// Appends a batch's changes to the log: the JSON the store keeps, which the answer to the write and its
/// watch events send too (a write serializes its object once).
fn persist(wal: &mut Wal, planned: &[Planned], revision: u64) -> Result<(), StoreError> {
    let events: Vec<&Event> = planned.iter().filter_map(|p| p.event.as_ref()).collect();
    let keys: Vec<String> = events.iter().map(|ev| db_key(&ev.gr, &ev.key)).collect();
    let jsons: Vec<Option<bytes::Bytes>> =
        events.iter().map(|ev| (ev.kind != EventType::Deleted).then(|| ev.object.json())).collect();
    let changes: Vec<Change<'_>> =
        keys.iter().zip(&jsons).map(|(k, json)| Change { key: k, value: json.as_deref() }).collect();
    wal.append(revision, &changes)
}

#[cfg(test)]
mod crash_tests;
#[cfg(test)]
mod tests;
