//! Durable storage files: a write-ahead log of committed batches plus periodic snapshots.
//!
//! Each group commit appends one record to the current log segment and calls `fdatasync` once, so
//! durability costs one small sequential write per batch. When a segment grows past a threshold,
//! the writer starts a new segment and a background thread writes a snapshot of the state at that
//! revision; once the snapshot is durable, the older segments are deleted.
//!
//! Record framing: `[u32 little-endian payload length][u32 crc32 of payload][payload]`. A torn or
//! corrupt record at the end of the newest segment is a write that was never acknowledged, and is
//! cut off at startup; corruption anywhere else stops the server rather than lose data silently.
//!
//! Segments are filled with zeros ahead of the last record (`ZERO_AHEAD` at a time, made durable
//! once): a record then overwrites blocks the file already has, and `fdatasync` writes the data
//! alone rather than also the file's new size and block map (a synced append took 1.8 × as long as
//! a synced overwrite on this machine's disk). A zero header ends a segment's records; anything but
//! zeros after it is corruption.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::stored::StoreError;
use crate::wal_integrity::{Damage, Manifest, first_revision, later_record};

/// Bytes of zeros written ahead of a segment's last record at a time.
const ZERO_AHEAD: u64 = 4 << 20;

/// One change inside a record: a put (with the object's JSON) or a delete.
pub struct Change<'a> {
    /// Database key `group/resource/namespace/name`.
    pub key: &'a str,
    /// JSON of the object, or `None` for a delete.
    pub value: Option<&'a [u8]>,
}

/// A decoded record.
pub struct Record {
    /// Revision after the record.
    pub revision: u64,
    /// Changes, in order.
    pub changes: Vec<(String, Option<Vec<u8>>)>,
}

pub(crate) fn encode(revision: u64, changes: &[Change<'_>]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(
        64 + changes.iter().map(|c| c.key.len() + c.value.map_or(0, <[u8]>::len) + 9).sum::<usize>(),
    );
    payload.extend_from_slice(&revision.to_le_bytes());
    payload.extend_from_slice(&(changes.len() as u32).to_le_bytes());
    for c in changes {
        payload.extend_from_slice(&(c.key.len() as u32).to_le_bytes());
        payload.extend_from_slice(c.key.as_bytes());
        match c.value {
            Some(v) => {
                payload.push(1);
                payload.extend_from_slice(&(v.len() as u32).to_le_bytes());
                payload.extend_from_slice(v);
            }
            None => payload.push(0),
        }
    }
    let mut out = Vec::with_capacity(payload.len() + 8);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

fn decode(payload: &[u8]) -> Option<Record> {
    let mut p = payload;
    let mut take = |n: usize| -> Option<&[u8]> {
        if p.len() < n {
            return None;
        }
        let (a, b) = p.split_at(n);
        p = b;
        Some(a)
    };
    let revision = u64::from_le_bytes(take(8)?.try_into().ok()?);
    let n = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
    let mut changes = Vec::with_capacity(n.min(1 << 20));
    for _ in 0..n {
        let klen = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
        let key = String::from_utf8(take(klen)?.to_vec()).ok()?;
        let value = match take(1)?[0] {
            1 => {
                let vlen = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
                Some(take(vlen)?.to_vec())
            }
            0 => None,
            _ => return None,
        };
        changes.push((key, value));
    }
    Some(Record { revision, changes })
}

/// Reads records until the end or the first bad one; returns them and the byte length of the good prefix.
pub(crate) fn read_records(path: &Path) -> Result<(Vec<Record>, u64, bool), StoreError> {
    let file = File::open(path).map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
    let size = file.metadata().map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?.len();
    let mut r = BufReader::new(file);
    let mut records = Vec::new();
    let mut good = 0u64;
    loop {
        let mut head = [0u8; 8];
        match read_full(&mut r, &mut head) {
            Ok(0) => return Ok((records, good, true)),
            Ok(8) => {}
            Ok(_) => return Ok((records, good, false)),
            Err(e) => return Err(StoreError::Backend(format!("{}: {e}", path.display()))),
        }
        if head == [0; 8] {
            // The zeros written ahead: the end of the records, if nothing but zeros follows.
            let mut rest = Vec::new();
            r.read_to_end(&mut rest).map_err(|e| StoreError::Backend(format!("{}: {e}", path.display())))?;
            return Ok((records, good, rest.iter().all(|b| *b == 0)));
        }
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        if len as u64 > size.saturating_sub(good + 8) {
            // A length past the file's end (a torn or damaged header): nothing is allocated for it
            // (found by the `store_records` fuzz target: 4 GiB for four bad bytes).
            return Ok((records, good, false));
        }
        let mut payload = vec![0u8; len];
        match read_full(&mut r, &mut payload) {
            Ok(n) if n == len => {}
            Ok(_) => return Ok((records, good, false)),
            Err(e) => return Err(StoreError::Backend(format!("{}: {e}", path.display()))),
        }
        if crc32fast::hash(&payload) != crc {
            return Ok((records, good, false));
        }
        match decode(&payload) {
            Some(rec) => records.push(rec),
            None => return Ok((records, good, false)),
        }
        good += 8 + len as u64;
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

fn segment_name(first_revision: u64) -> String {
    format!("wal-{first_revision:020}.log")
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| StoreError::Backend(format!("{}: {e}", dir.display())))
}

/// An I/O error on `path` as a store error naming the file.
pub(crate) fn io(path: &Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |e| StoreError::Backend(format!("{}: {e}", path.display()))
}

/// What the files held at startup: a full state to load, in order.
pub struct Recovered {
    /// Snapshot records then log records, to apply in order.
    pub records: Vec<Record>,
    /// The revision of the snapshot: records after it came from the log, one event per change.
    pub snapshot_revision: u64,
}

/// The open log.
pub struct Wal {
    dir: PathBuf,
    /// The directory's lock (`LOCK`, flock'd): held by the store, and by each snapshot being written.
    lock: File,
    snapshotting: std::sync::Arc<std::sync::atomic::AtomicBool>,
    segment: BufWriter<File>,
    segment_first: u64,
    segment_bytes: u64,
    /// How far the segment is filled with zeros (durably).
    segment_zeroed: u64,
    /// Segment size that triggers a snapshot.
    pub checkpoint_bytes: u64,
}

impl Wal {
    /// Opens the storage directory: reads the snapshot and every log segment, cuts a torn tail, and
    /// starts a new segment after the last revision. Any other damage stops it, naming the damage.
    pub fn open(dir: &Path) -> Result<(Wal, Recovered), StoreError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let lock = lock(dir)?;
        let found = scan(dir)?;
        if let Some(d) = found.damage {
            return Err(StoreError::Backend(d.to_string()));
        }
        if let Some((path, good)) = &found.torn {
            // A torn final record was never acknowledged: cut it off.
            let f = OpenOptions::new().write(true).open(path).map_err(io(path))?;
            f.set_len(*good).map_err(io(path))?;
            f.sync_all().map_err(io(path))?;
            tracing::warn!(file = %path.display(), "cut a torn record off the end of the log");
        }
        let first = found.revision + 1;
        let path = dir.join(segment_name(first));
        let file = new_segment(&path)?;
        sync_dir(dir)?;
        let mut segments: Vec<u64> = found.segments.iter().map(|(f, _)| *f).filter(|f| *f > found.base).collect();
        segments.push(first);
        Manifest { segments, sealed: None }.write(dir).map_err(|e| StoreError::Backend(e.0))?;
        let wal = Wal {
            dir: dir.to_path_buf(),
            lock,
            snapshotting: Default::default(),
            segment: BufWriter::with_capacity(1 << 20, file),
            segment_first: first,
            segment_bytes: 0,
            segment_zeroed: 0,
            checkpoint_bytes: 64 << 20,
        };
        Ok((wal, Recovered { records: found.records, snapshot_revision: found.base }))
    }

    /// Appends one batch and makes it durable.
    pub fn append(&mut self, revision: u64, changes: &[Change<'_>]) -> Result<(), StoreError> {
        let rec = encode(revision, changes);
        let path = self.dir.join(segment_name(self.segment_first));
        let end = self.segment_bytes + rec.len() as u64;
        if end > self.segment_zeroed {
            let to = end + ZERO_AHEAD;
            zero_fill(self.segment.get_ref(), self.segment_zeroed, to).map_err(io(&path))?;
            self.segment.get_ref().sync_all().map_err(io(&path))?;
            self.segment_zeroed = to;
        }
        self.segment.write_all(&rec).map_err(io(&path))?;
        self.segment.flush().map_err(io(&path))?;
        self.segment.get_ref().sync_data().map_err(io(&path))?;
        self.segment_bytes = end;
        Ok(())
    }

    /// Whether the current segment is large enough to warrant a snapshot.
    pub fn wants_checkpoint(&self) -> bool {
        self.segment_bytes >= self.checkpoint_bytes && !self.snapshotting.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Starts a new segment after `revision` and writes a snapshot of `state` (the full state at
    /// that revision) on a background thread, deleting older segments once it is durable.
    pub fn checkpoint<V: SnapshotValue>(&mut self, revision: u64, state: Vec<(String, V)>) -> Result<(), StoreError> {
        let first = revision + 1;
        let path = self.dir.join(segment_name(first));
        let file = new_segment(&path)?;
        sync_dir(&self.dir)?;
        let mut manifest = Manifest::read(&self.dir).map_err(|e| StoreError::Backend(e.into()))?.unwrap_or_default();
        manifest.segments.push(first);
        manifest.write(&self.dir).map_err(|e| StoreError::Backend(e.into()))?;
        self.segment = BufWriter::with_capacity(1 << 20, file);
        self.segment_first = first;
        self.segment_bytes = 0;
        self.segment_zeroed = 0;
        let dir = self.dir.clone();
        let busy = self.snapshotting.clone();
        // The snapshot holds the lock (a duplicate of its descriptor) until it is written: a store that
        // opens the directory after this one is dropped must not read it while the snapshot replaces the
        // segments it covers (it read the old snapshot, then found the newest segment deleted).
        let held = self.lock.try_clone().map_err(io(&self.dir.join("LOCK")))?;
        busy.store(true, std::sync::atomic::Ordering::Release);
        std::thread::Builder::new()
            .name("uc-snapshot".into())
            .spawn(move || {
                let _held = held;
                if let Err(e) = write_snapshot(&dir, revision, &state) {
                    tracing::error!(error = %e, "snapshot failed; the log segments are kept");
                }
                busy.store(false, std::sync::atomic::Ordering::Release);
            })
            .map_err(|e| StoreError::Backend(format!("cannot start the snapshot thread: {e}")))?;
        Ok(())
    }
}

/// Takes the store directory's lock: one process at a time.
fn lock(dir: &Path) -> Result<File, StoreError> {
    let lock_path = dir.join("LOCK");
    let lock = OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).map_err(io(&lock_path))?;
    if lock.try_lock().is_err() {
        return Err(StoreError::Backend(format!("{} is in use by another uc process", dir.display())));
    }
    Ok(lock)
}

/// What a store's files hold, read without changing anything.
pub struct Scan {
    /// Snapshot records then log records, to apply in order (up to any damage).
    pub records: Vec<Record>,
    /// The snapshot's revision.
    pub base: u64,
    /// The last intact revision.
    pub revision: u64,
    /// The log segments, by first revision.
    pub segments: Vec<(u64, PathBuf)>,
    /// A torn record at the end of the newest segment: the file and the length of its intact prefix.
    pub torn: Option<(PathBuf, u64)>,
    /// The first damage found (the scan stops there).
    pub damage: Option<Damage>,
}

/// Reads the snapshot, every segment and the manifest of the store in `dir`.
pub fn scan(dir: &Path) -> Result<Scan, StoreError> {
    let mut found = Scan { records: Vec::new(), base: 0, revision: 0, segments: Vec::new(), torn: None, damage: None };
    let snapshot = dir.join("snapshot");
    if snapshot.exists() {
        let (recs, good, clean) = read_records(&snapshot)?;
        if !clean {
            let what = "the snapshot is damaged".to_string();
            found.damage = Some(Damage { file: snapshot, offset: good, what, intact_revision: 0 });
            return Ok(found);
        }
        found.base = recs.last().map(|r| r.revision).unwrap_or(0);
        found.records.extend(recs);
    }
    found.revision = found.base;
    found.segments = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let first = name.strip_prefix("wal-")?.strip_suffix(".log")?.parse().ok()?;
            Some((first, e.path()))
        })
        .collect();
    found.segments.sort();
    let count = found.segments.len();
    for (i, (_, path)) in found.segments.clone().iter().enumerate() {
        if !path.exists() {
            continue; // removed by a snapshot that finished while we listed the directory
        }
        let (recs, good, clean) = read_records(path)?;
        for r in recs {
            if r.revision <= found.revision {
                continue;
            }
            let first = first_revision(r.revision, r.changes.len());
            if first > found.revision + 1 {
                let what = format!("revisions {} to {} are missing before it", found.revision + 1, first - 1);
                found.damage = Some(Damage { file: path.clone(), offset: 0, what, intact_revision: found.revision });
                return Ok(found);
            }
            found.revision = r.revision;
            found.records.push(r);
        }
        if !clean {
            let bytes = std::fs::read(path).map_err(io(path))?;
            let later = later_record(&bytes, good as usize, found.revision);
            if i + 1 == count && later.is_none() {
                found.torn = Some((path.clone(), good));
            } else {
                let what = match later {
                    Some(at) => format!("a damaged record, with an intact one at byte {at} after it"),
                    None => "a damaged record in a segment that is not the newest".to_string(),
                };
                found.damage = Some(Damage { file: path.clone(), offset: good, what, intact_revision: found.revision });
                return Ok(found);
            }
        }
    }
    let manifest = Manifest::read(dir).map_err(|e| StoreError::Backend(e.into()))?;
    let firsts: Vec<u64> = found.segments.iter().map(|(f, _)| *f).collect();
    if let Some(what) = manifest.and_then(|m| m.missing(found.base, &firsts, found.revision)) {
        found.damage = Some(Damage { file: dir.join("MANIFEST"), offset: 0, what, intact_revision: found.revision });
    }
    Ok(found)
}

/// Why `uc store check` finds a store not intact: it could not be read, or it is damaged (where, and
/// the revision it is intact through).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The store could not be read.
    #[error(transparent)]
    Unreadable(#[from] StoreError),
    /// The store is damaged.
    #[error("{0}")]
    Damaged(Damage),
}

/// What `uc store check` says of the store in `dir`: Ok with a summary when it is intact (a torn tail
/// included, which the next start cuts), Err naming the damage.
pub fn check(dir: &Path) -> Result<String, CheckError> {
    let found = scan(dir)?;
    if let Some(d) = found.damage {
        return Err(CheckError::Damaged(d));
    }
    let torn = match &found.torn {
        Some((path, good)) => {
            format!("; a torn, unacknowledged record after byte {good} of {} (cut at start)", path.display())
        }
        None => String::new(),
    };
    Ok(format!(
        "intact: revisions through {} (snapshot at {}, {} log segments){torn}",
        found.revision,
        found.base,
        found.segments.len()
    ))
}

/// Keeps the intact prefix of a damaged store, as `etcdutl` does: cuts the damaged segment where its
/// intact records end, removes every later segment, and writes the manifest anew; what it did, in
/// words. A damaged snapshot cannot be repaired (the log before it is gone).
pub fn repair(dir: &Path) -> Result<String, StoreError> {
    let _lock = lock(dir)?;
    let found = scan(dir)?;
    let Some(d) = found.damage else {
        return Ok(format!("nothing to repair: the store holds revisions through {}", found.revision));
    };
    if d.file.file_name().is_some_and(|n| n == "snapshot") {
        return Err(StoreError::Backend(format!("{d} — a damaged snapshot cannot be repaired: restore a snapshot")));
    }
    let mut done = Vec::new();
    if let Some(&(first, _)) = found.segments.iter().find(|(_, p)| *p == d.file) {
        let f = OpenOptions::new().write(true).open(&d.file).map_err(io(&d.file))?;
        f.set_len(d.offset).map_err(io(&d.file))?;
        f.sync_all().map_err(io(&d.file))?;
        done.push(format!("cut {} at byte {}", d.file.display(), d.offset));
        for (_, later) in found.segments.iter().filter(|(f, _)| *f > first) {
            std::fs::remove_file(later).map_err(io(later))?;
            done.push(format!("removed {}", later.display()));
        }
    }
    let segments = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_prefix("wal-")?.strip_suffix(".log")?.parse().ok())
        .filter(|f| *f > found.base)
        .collect::<std::collections::BTreeSet<u64>>()
        .into_iter()
        .collect();
    Manifest { segments, sealed: None }.write(dir).map_err(|e| StoreError::Backend(e.0))?;
    sync_dir(dir)?;
    done.push("wrote the manifest anew".into());
    Ok(format!("{}; kept revisions through {}: {}", d.what, d.intact_revision, done.join(", ")))
}

/// Notes in the manifest of the store in `dir` that it stopped cleanly at `revision`: a log found
/// shorter at the next start is damage.
pub fn seal(dir: &Path, revision: u64) -> Result<(), StoreError> {
    let mut manifest = Manifest::read(dir).map_err(|e| StoreError::Backend(e.into()))?.unwrap_or_default();
    manifest.sealed = Some(revision);
    manifest.write(dir).map_err(|e| StoreError::Backend(e.into()))
}

/// A new, empty log segment, written from its start.
fn new_segment(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new().create(true).write(true).truncate(true).open(path).map_err(io(path))
}

/// Writes zeros over `from..to` of `file` (without moving its cursor).
fn zero_fill(file: &File, from: u64, to: u64) -> std::io::Result<()> {
    let zeros = vec![0u8; 1 << 20];
    let mut at = from;
    while at < to {
        let n = (to - at).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

/// A value of the store's state as a snapshot writes it: its JSON, read on the snapshot's thread (the
/// store hands over its kept objects; one packed at rest is unpacked a chunk at a time, not all at once).
pub trait SnapshotValue: Send + 'static {
    /// The value's JSON.
    fn json(&self) -> bytes::Bytes;
}

impl SnapshotValue for bytes::Bytes {
    fn json(&self) -> bytes::Bytes {
        self.clone()
    }
}

impl SnapshotValue for std::sync::Arc<crate::kept::Kept> {
    fn json(&self) -> bytes::Bytes {
        crate::kept::Kept::json(self)
    }
}

fn write_snapshot<V: SnapshotValue>(dir: &Path, revision: u64, state: &[(String, V)]) -> Result<(), StoreError> {
    let tmp = dir.join("snapshot.tmp");
    let file = File::create(&tmp).map_err(io(&tmp))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    // Chunks of objects, each a record; the last record carries the revision.
    for chunk in state.chunks(512) {
        let jsons: Vec<bytes::Bytes> = chunk.iter().map(|(_, v)| v.json()).collect();
        let changes: Vec<Change<'_>> =
            chunk.iter().zip(&jsons).map(|((k, _), b)| Change { key: k, value: Some(b) }).collect();
        w.write_all(&encode(0, &changes)).map_err(io(&tmp))?;
    }
    w.write_all(&encode(revision, &[])).map_err(io(&tmp))?;
    let file = w.into_inner().map_err(|e| StoreError::Backend(format!("{}: {e}", tmp.display())))?;
    file.sync_all().map_err(io(&tmp))?;
    let snapshot = dir.join("snapshot");
    std::fs::rename(&tmp, &snapshot).map_err(io(&snapshot))?;
    sync_dir(dir)?;
    for e in std::fs::read_dir(dir).map_err(io(dir))?.filter_map(|e| e.ok()) {
        let name = e.file_name().into_string().unwrap_or_default();
        if let Some(first) =
            name.strip_prefix("wal-").and_then(|n| n.strip_suffix(".log")).and_then(|n| n.parse::<u64>().ok())
            && first <= revision
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_torn_tails_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut wal, rec) = Wal::open(dir.path()).unwrap();
            assert!(rec.records.is_empty());
            wal.append(1, &[Change { key: "/configmaps/default/a", value: Some(b"{\"a\":1}") }]).unwrap();
            wal.append(
                2,
                &[
                    Change { key: "/configmaps/default/a", value: None },
                    Change { key: "/configmaps/default/b", value: Some(b"{}") },
                ],
            )
            .unwrap();
        }
        // Simulate a crash in the middle of a third append: its first bytes over the zeros ahead.
        let seg = dir.path().join(segment_name(1));
        let (_, written, _) = read_records(&seg).unwrap();
        assert!(std::fs::metadata(&seg).unwrap().len() > written, "zeros are written ahead");
        let f = OpenOptions::new().write(true).open(&seg).unwrap();
        f.write_all_at(&encode(3, &[Change { key: "/x/y/z", value: Some(b"{}") }])[..10], written).unwrap();
        drop(f);
        let (_, rec) = Wal::open(dir.path()).unwrap();
        let revs: Vec<u64> = rec.records.iter().map(|r| r.revision).collect();
        assert_eq!(revs, vec![1, 2]);
        assert_eq!(rec.records[1].changes[0], ("/configmaps/default/a".to_string(), None));
        assert_eq!(
            std::fs::metadata(&seg).unwrap().len() as usize,
            encode(1, &[Change { key: "/configmaps/default/a", value: Some(b"{\"a\":1}") }]).len()
                + encode(
                    2,
                    &[
                        Change { key: "/configmaps/default/a", value: None },
                        Change { key: "/configmaps/default/b", value: Some(b"{}") }
                    ]
                )
                .len()
        );
    }

    #[test]
    fn snapshots_replace_old_segments() {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path()).unwrap();
        wal.append(1, &[Change { key: "/c/d/a", value: Some(b"{\"v\":1}") }]).unwrap();
        let state = vec![("/c/d/a".to_string(), bytes::Bytes::from_static(b"{\"v\":1}"))];
        wal.checkpoint(1, state).unwrap();
        wal.append(2, &[Change { key: "/c/d/b", value: Some(b"{\"v\":2}") }]).unwrap();
        drop(wal);
        // The snapshot holds the directory's lock until it is written: the directory opens once it is,
        // never between the snapshot's rename and the removal of the segments it covers.
        let opened = (0..500).find_map(|_| {
            Wal::open(dir.path()).ok().or_else(|| {
                std::thread::sleep(std::time::Duration::from_millis(10));
                None
            })
        });
        let (_, rec) = opened.expect("the directory opens once the snapshot is written");
        let old = dir.path().join(segment_name(1));
        let all: Vec<(u64, usize)> = rec.records.iter().map(|r| (r.revision, r.changes.len())).collect();
        assert_eq!(all, vec![(0, 1), (1, 0), (2, 1)]);
        assert!(!old.exists(), "the snapshot replaced the old segment");
    }

    #[test]
    fn the_zeros_ahead_end_a_segment_and_garbage_after_them_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut wal, _) = Wal::open(dir.path()).unwrap();
            wal.append(1, &[Change { key: "/c/d/a", value: Some(b"{}") }]).unwrap();
        }
        let seg = dir.path().join(segment_name(1));
        // Reopened: the record is read, the zeros after it are the clean end.
        let (_, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.records.iter().map(|r| r.revision).collect::<Vec<_>>(), vec![1]);
        let (_, good, clean) = read_records(&seg).unwrap();
        assert!(clean);
        // Bytes after a zero header: not a clean end.
        let f = OpenOptions::new().write(true).open(&seg).unwrap();
        f.write_all_at(b"junk", good + 4096).unwrap();
        let (records, good_after, clean) = read_records(&seg).unwrap();
        assert_eq!((records.len() as u64, good_after, clean), (1, good, false));
    }

    /// A store of `n` revisions in one segment, stopped cleanly; its directory and that segment.
    fn sealed_store(n: u64) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path()).unwrap();
        for rev in 1..=n {
            let key = format!("/configmaps/default/c{rev}");
            wal.append(rev, &[Change { key: &key, value: Some(b"{\"data\":{}}") }]).unwrap();
        }
        drop(wal);
        seal(dir.path(), n).unwrap();
        let seg = dir.path().join(segment_name(1));
        (dir, seg)
    }

    fn refusal(dir: &Path) -> String {
        match Wal::open(dir) {
            Ok(_) => panic!("opened a damaged store"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn damage_is_refused_by_name_and_repair_keeps_the_intact_prefix() {
        // A flipped byte in the middle of the newest segment: intact records follow it.
        let (dir, seg) = sealed_store(400);
        let (_, good, _) = read_records(&seg).unwrap();
        let f = OpenOptions::new().write(true).open(&seg).unwrap();
        f.write_all_at(b"\xff", good / 2).unwrap();
        let why = refusal(dir.path());
        assert!(why.contains("wal-00000000000000000001.log") && why.contains("intact one at byte"), "{why}");
        assert!(check(dir.path()).is_err());
        let done = repair(dir.path()).unwrap();
        assert!(done.contains("cut"), "{done}");
        let (_, rec) = Wal::open(dir.path()).unwrap();
        let kept = rec.records.last().unwrap().revision;
        assert!(kept > 150 && kept < 250, "the prefix before the damage: {kept}");

        // The newest segment deleted, or emptied, after a clean stop.
        let (dir, seg) = sealed_store(50);
        std::fs::remove_file(&seg).unwrap();
        assert!(refusal(dir.path()).contains("wal-00000000000000000001.log is missing"));
        let (dir, seg) = sealed_store(50);
        OpenOptions::new().write(true).open(&seg).unwrap().set_len(0).unwrap();
        assert!(refusal(dir.path()).contains("stopped cleanly at revision 50"));
        repair(dir.path()).unwrap();
        assert!(Wal::open(dir.path()).is_ok(), "repaired: starts with what is left");

        // A segment missing between two others: a gap in the revisions.
        let (dir, _) = sealed_store(10);
        drop(Wal::open(dir.path()).unwrap()); // starts wal-11
        {
            let (mut wal, _) = Wal::open(dir.path()).unwrap(); // wal-11 is empty; this one is wal-11 again
            wal.append(11, &[Change { key: "/c/d/x", value: Some(b"{}") }]).unwrap();
        }
        let (mut wal, _) = Wal::open(dir.path()).unwrap(); // wal-12
        wal.append(12, &[Change { key: "/c/d/y", value: Some(b"{}") }]).unwrap();
        drop(wal);
        std::fs::remove_file(dir.path().join(segment_name(11))).unwrap();
        assert!(refusal(dir.path()).contains("revisions 11 to 11 are missing"), "{}", refusal(dir.path()));

        // A torn tail is still cut, and says nothing of damage.
        let (dir, seg) = sealed_store(5);
        let (_, good, _) = read_records(&seg).unwrap();
        let f = OpenOptions::new().write(true).open(&seg).unwrap();
        f.write_all_at(&[9, 0, 0, 0, 1, 2], good).unwrap();
        assert!(check(dir.path()).unwrap().contains("torn"));
        let (_, rec) = Wal::open(dir.path()).unwrap();
        assert_eq!(rec.records.last().unwrap().revision, 5);
    }

    #[test]
    fn a_length_past_the_end_allocates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let seg = dir.path().join(segment_name(1));
        let good = encode(1, &[Change { key: "/c/d/a", value: Some(b"{}") }]);
        std::fs::write(&seg, [good.clone(), vec![0xf0, 0xff, 0xff, 0xff, 1, 2, 3, 4, 9, 9]].concat()).unwrap();
        let (records, at, clean) = read_records(&seg).unwrap();
        assert_eq!((records.len(), at, clean), (1, good.len() as u64, false), "a 4 GiB length is not read");
    }
}
