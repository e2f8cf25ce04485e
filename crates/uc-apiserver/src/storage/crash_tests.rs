//! A property of the durable store: after any sequence of writes — creates, updates and deletes,
//! alone and group-committed together, across segments and snapshots — a crash that leaves the
//! newest log segment cut at any byte reopens at exactly the acknowledged prefix: the state after
//! the last record wholly written, no more and no less.

use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::*;

fn gr() -> GroupResource {
    GroupResource::new("", "configmaps")
}

/// Every acknowledged write: its revision, key, and the object after it (`None` for a delete).
type Acknowledged = Vec<(u64, String, Option<Value>)>;

/// The state the acknowledged writes up to revision `at` leave.
fn state_at(acked: &Acknowledged, at: u64) -> BTreeMap<String, Value> {
    let mut sorted: Vec<_> = acked.iter().filter(|(rv, _, _)| *rv <= at).collect();
    sorted.sort_by_key(|(rv, _, _)| *rv);
    let mut state = BTreeMap::new();
    for (_, key, obj) in sorted {
        match obj {
            Some(o) => state.insert(key.clone(), o.clone()),
            None => state.remove(key),
        };
    }
    state
}

fn state_of(store: &Store) -> (BTreeMap<String, Value>, u64) {
    let (objects, rv) = store.list(&gr(), None, None).unwrap();
    (objects.into_iter().map(|(k, o)| (k, (*o).clone())).collect(), rv)
}

/// Random writes to a few keys: mostly one at a time, sometimes three at once (one batch).
async fn random_writes(store: &Store, rng: &mut StdRng, count: usize, acked: &mut Acknowledged) {
    for _ in 0..count {
        let together = if rng.random_bool(0.3) { 3 } else { 1 };
        let mut keys: Vec<String> = Vec::new();
        while keys.len() < together {
            let key = format!("ns/k{}", rng.random_range(0..8));
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let ops: Vec<Op> = keys
            .iter()
            .map(|key| {
                let (data, name) = ("x".repeat(rng.random_range(0..400)), &key[3..]);
                let object =
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"d": data}});
                match (store.get(&gr(), key).is_some(), rng.random_range(0..3)) {
                    (false, _) => Op::Create { gr: gr(), key: key.clone(), object },
                    (true, 0) => Op::Delete { gr: gr(), key: key.clone(), expect_rv: 0 },
                    (true, _) => Op::Update { gr: gr(), key: key.clone(), object, expect_rv: 0 },
                }
            })
            .collect();
        let deletes: Vec<bool> = ops.iter().map(|op| matches!(op, Op::Delete { .. })).collect();
        let results = futures::future::join_all(ops.into_iter().map(|op| store.write(op))).await;
        for ((key, delete), result) in keys.into_iter().zip(deletes).zip(results) {
            let obj = result.unwrap();
            acked.push((rv_of(&obj), key, (!delete).then(|| (*obj).clone())));
        }
    }
}

/// The durable store at `path` once the one before has let it go.
async fn reopen(path: &Path, options: StoreOptions) -> Arc<Store> {
    for _ in 0..500 {
        if let Ok(s) = Store::open(Some(path), options.clone()) {
            return s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("{} does not reopen", path.display())
}

/// The newest segment and the revision before its first record.
fn newest_segment(dir: &Path) -> (std::path::PathBuf, u64) {
    let first = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_prefix("wal-")?.strip_suffix(".log")?.parse::<u64>().ok())
        .max()
        .unwrap();
    (dir.join(format!("wal-{first:020}.log")), first - 1)
}

/// Waits until the last snapshot is written and the segments it covers are gone: only the newest
/// segment is left, and the snapshot is at the revision before it.
async fn settle(dir: &Path) {
    for _ in 0..500 {
        let (_, before) = newest_segment(dir);
        let segments = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("wal-"));
        let snapshot_at = crate::wal::scan(dir).ok().map(|s| s.base);
        if !dir.join("snapshot.tmp").exists() && segments.count() == 1 && (before == 0 || snapshot_at == Some(before)) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the snapshot of {} was not written in 10 s", dir.display())
}

/// Where each record of a segment ends, and the revision it brings the store to.
fn record_ends(bytes: &[u8]) -> Vec<(usize, u64)> {
    let mut ends = Vec::new();
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        if len == 0 {
            break;
        }
        let revision = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap());
        at += 8 + len;
        ends.push((at, revision));
    }
    ends
}

/// A copy of a store directory, its segments without the zeros ahead of their records (a zero
/// header ends a segment either way).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let mut bytes = std::fs::read(e.path()).unwrap();
        if e.file_name().to_string_lossy().starts_with("wal-") {
            bytes.truncate(record_ends(&bytes).last().map_or(0, |(end, _)| *end));
        }
        std::fs::write(to.join(e.file_name()), bytes).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_any_byte_after_any_writes_reopens_at_the_acknowledged_prefix() {
    for seed in 0..6u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let mut acked = Acknowledged::new();
        // Small segments first, so that the writes span snapshots and deleted segments; then a
        // segment that no snapshot ends, to cut.
        let small = StoreOptions { checkpoint_bytes: Some(3000), ..Default::default() };
        let store = Store::open(Some(&path), small).unwrap();
        random_writes(&store, &mut rng, 40, &mut acked).await;
        drop(store);
        settle(&path).await;
        let store = reopen(&path, StoreOptions::default()).await;
        random_writes(&store, &mut rng, 25, &mut acked).await;
        let last = acked.iter().map(|(rv, _, _)| *rv).max().unwrap();
        assert_eq!(state_of(&store), (state_at(&acked, last), last), "seed {seed}: the live store");
        drop(store);

        let (segment, before) = newest_segment(&path);
        let bytes = std::fs::read(&segment).unwrap();
        let ends = record_ends(&bytes);
        let length = ends.last().unwrap().0;
        let cuts = (0..30).map(|_| rng.random_range(0..=length)).chain([0, length]).chain(ends.iter().map(|(e, _)| *e));
        for (i, cut) in cuts.enumerate() {
            let crashed = dir.path().join(format!("crash-{i}"));
            copy_dir(&path, &crashed);
            let (segment, _) = newest_segment(&crashed);
            // Half the time zeros ahead of the records stay; half the time the file ends there.
            let mut cut_bytes = bytes[..cut].to_vec();
            if i % 2 == 0 {
                cut_bytes.resize(cut + 4096, 0);
            }
            std::fs::write(&segment, cut_bytes).unwrap();
            let expected = ends.iter().take_while(|(end, _)| *end <= cut).last().map_or(before, |(_, rv)| *rv);
            let store = Store::open(Some(&crashed), StoreOptions::default())
                .unwrap_or_else(|e| panic!("seed {seed}, cut at byte {cut}: {e}"));
            assert_eq!(state_of(&store), (state_at(&acked, expected), expected), "seed {seed}, cut at byte {cut}");
            drop(store);
            std::fs::remove_dir_all(&crashed).unwrap();
        }
    }
}
