//! The store's tests: history and compaction, group commit, durable reloads, shared JSON.

use super::*;
use serde_json::json;

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": name}})
}

fn gr() -> GroupResource {
    GroupResource::new("", "pods")
}

#[tokio::test]
async fn a_written_object_and_its_watch_event_share_one_json() {
    let store = Store::open(None, StoreOptions::default()).unwrap();
    let stored = store.write(Op::Create { gr: gr(), key: "ns/a".into(), object: pod("a") }).await.unwrap();
    let json = store.encoded(&stored).expect("the newest write has its JSON");
    assert_eq!(json, crate::kept::Encoded::of(&stored).json, "written in kube's order");
    assert!(json.starts_with(br#"{"kind":"Pod","apiVersion":"v1","metadata":"#));
    let mut shared = None;
    store.events_after(0, |ev| shared = Some(ev.object_json())).unwrap();
    assert_eq!(shared.map(|b| b.as_ptr()), Some(json.as_ptr()), "the event sends the same bytes");
    // Not the stored object (the same content elsewhere): no JSON of the store's.
    assert_eq!(store.encoded(&Arc::new((*stored).clone())), None);
    // The store keeps the JSON, and no tree once the object's event is no longer among the newest.
    for i in 0..crate::history::HOT_EVENTS {
        store.write(Op::Create { gr: gr(), key: format!("ns/p{i}"), object: pod(&format!("p{i}")) }).await.unwrap();
    }
    assert_eq!(store.encoded(&stored), None, "an event this old keeps no tree to be compared with");
    let kept = store.get_kept(&gr(), "ns/a").unwrap();
    assert_eq!((kept.json(), kept.kept_tree()), (json, None), "its JSON kept, its tree let go");
    assert_eq!(store.get(&gr(), "ns/a"), Some(stored.clone()), "and decoded on a read");
    // A durable store keeps the JSON its log wrote.
    let dir = tempfile::tempdir().unwrap();
    let durable = Store::open(Some(&dir.path().join("db")), StoreOptions::default()).unwrap();
    let stored = durable.write(Op::Create { gr: gr(), key: "ns/a".into(), object: pod("a") }).await.unwrap();
    assert_eq!(durable.encoded(&stored).unwrap(), crate::kept::Encoded::of(&stored).json);
    assert_eq!(durable.history().bytes, serde_json::to_vec(&*stored).unwrap().len(), "its exact size counted");
}

#[tokio::test]
async fn history_is_compacted_by_age_and_by_bytes() {
    let options = StoreOptions {
        retention: std::time::Duration::from_millis(200),
        log_budget_bytes: 100_000,
        ..Default::default()
    };
    let store = Store::open(None, options).unwrap();
    for i in 0..5 {
        store.write(Op::Create { gr: gr(), key: format!("ns/p{i}"), object: pod(&format!("p{i}")) }).await.unwrap();
    }
    let h = store.history();
    assert_eq!((h.events, h.oldest_revision, h.revision), (5, 0, 5));
    assert!(h.bytes > 5 * 50, "sizes are counted: {h:?}");
    assert!(store.events_after(0, |_| {}).is_ok());
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    store.compact_now();
    let h = store.history();
    assert_eq!((h.events, h.bytes, h.oldest_revision), (0, 0, 5), "aged out");
    assert!(matches!(store.events_after(2, |_| {}), Err(StoreError::Gone { requested: 2, oldest: 5 })));
    assert!(matches!(store.list(&gr(), None, Some(3)), Err(StoreError::Gone { .. })));
    assert_eq!(store.list(&gr(), None, None).unwrap().0.len(), 5, "objects stay; only history goes");
    assert!(store.events_after(5, |_| {}).is_ok(), "watching from now works");
    // The byte budget: big objects push the oldest out at once (in a store whose age limit is far
    // off, so that a slow machine's writes do not age out meanwhile).
    let options = StoreOptions {
        retention: std::time::Duration::from_secs(3600),
        log_budget_bytes: 100_000,
        ..Default::default()
    };
    let store = Store::open(None, options).unwrap();
    for i in 0..5 {
        store.write(Op::Create { gr: gr(), key: format!("ns/p{i}"), object: pod(&format!("p{i}")) }).await.unwrap();
    }
    let big = |name: &str| {
        let mut p = pod(name);
        p["data"] = json!("x".repeat(40_000));
        p
    };
    for i in 0..4 {
        store.write(Op::Create { gr: gr(), key: format!("ns/big{i}"), object: big(&format!("big{i}")) }).await.unwrap();
    }
    let h = store.history();
    assert!(h.bytes <= 100_000 && h.events == 2, "{h:?}");
    assert_eq!(h.oldest_revision, 7);
}

#[tokio::test]
async fn writes_get_consecutive_revisions_and_conflicts_are_detected() {
    let store = Store::open(None, StoreOptions::default()).unwrap();
    let a = store.write(Op::Create { gr: gr(), key: "ns/a".into(), object: pod("a") }).await.unwrap();
    assert_eq!(rv_of(&a), 1);
    let err = store.write(Op::Create { gr: gr(), key: "ns/a".into(), object: pod("a") }).await;
    assert!(matches!(err, Err(StoreError::AlreadyExists)));
    let b = store.write(Op::Update { gr: gr(), key: "ns/a".into(), object: pod("a"), expect_rv: 1 }).await.unwrap();
    assert_eq!(rv_of(&b), 2);
    let stale = store.write(Op::Update { gr: gr(), key: "ns/a".into(), object: pod("a"), expect_rv: 1 }).await;
    assert!(matches!(stale, Err(StoreError::Conflict { expected: 1, found: 2 })));
    let d = store.write(Op::Delete { gr: gr(), key: "ns/a".into(), expect_rv: 0 }).await.unwrap();
    assert_eq!(rv_of(&d), 3);
    assert!(store.get(&gr(), "ns/a").is_none());
}

#[tokio::test]
async fn lists_at_past_revisions_and_compacts() {
    let store = Store::open(None, StoreOptions { log_capacity: 3, ..Default::default() }).unwrap();
    for n in ["a", "b", "c"] {
        store.write(Op::Create { gr: gr(), key: format!("ns/{n}"), object: pod(n) }).await.unwrap();
    }
    store.write(Op::Delete { gr: gr(), key: "ns/a".into(), expect_rv: 0 }).await.unwrap();
    let (now, rv) = store.list(&gr(), Some("ns"), None).unwrap();
    assert_eq!((now.len(), rv), (2, 4));
    let (past, rv) = store.list(&gr(), Some("ns"), Some(2)).unwrap();
    let names: Vec<_> = past.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!((names, rv), (vec!["ns/a", "ns/b"], 2));
    assert!(matches!(store.list(&gr(), None, Some(0)), Err(StoreError::Gone { .. })));
    let mut seen = vec![];
    store.events_after(2, |e| seen.push((e.rv, e.kind))).unwrap();
    assert_eq!(seen, vec![(3, EventType::Added), (4, EventType::Deleted)]);
}

#[test]
fn a_log_record_names_the_revision_of_its_first_change() {
    assert_eq!(first_revision(7, 3), Some(5));
    assert_eq!(first_revision(0, 1), Some(0));
    assert_eq!(first_revision(1, 3), None, "more changes than revisions is refused, not wrapped");
}

#[tokio::test]
async fn a_snapshot_of_several_objects_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let (mut wal, _) = Wal::open(&path).unwrap();
        let json = |name: &str| bytes::Bytes::from(serde_json::to_vec(&pod(name)).unwrap());
        let state = vec![("/pods/ns/a".to_string(), json("a")), ("/pods/ns/b".to_string(), json("b"))];
        wal.checkpoint(2, state).unwrap();
    }
    // The snapshot is written on its own thread, which holds the directory until it is in place.
    let store = reopen(&path).await;
    assert!(path.join("snapshot").exists() && !path.join("snapshot.tmp").exists(), "the snapshot was written");
    assert_eq!(store.revision(), 2);
    assert!(store.get(&gr(), "ns/a").is_some() && store.get(&gr(), "ns/b").is_some());
}

/// The durable store at `path`, reopened once the writer thread of the one before has let it go (it
/// holds the database until it notices its store is gone).
async fn reopen(path: &Path) -> Arc<Store> {
    for _ in 0..100 {
        match Store::open(Some(path), StoreOptions::default()) {
            Ok(s) => return s,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    }
    panic!("{} does not reopen", path.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_writes_to_one_object_are_decided_in_order_within_and_across_batches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let store = Store::open(Some(&path), StoreOptions::default()).unwrap();
    // Each task creates and updates its object without waiting in between, and the tasks race each
    // other: the update lands in its create's batch (and must see it there) or in the next one.
    let tasks: Vec<_> = (0..16)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..40 {
                    let key = format!("ns/t{t}-{i}");
                    let (created, updated) = tokio::join!(
                        store.write(Op::Create { gr: gr(), key: key.clone(), object: pod(&key) }),
                        store.write(Op::Update { gr: gr(), key: key.clone(), object: pod(&key), expect_rv: 0 }),
                    );
                    let (created, updated) = (created.unwrap(), updated.unwrap());
                    assert!(rv_of(&updated) > rv_of(&created));
                    if i % 2 == 0 {
                        let deleted = store.write(Op::Delete { gr: gr(), key, expect_rv: rv_of(&updated) });
                        deleted.await.unwrap();
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let revision = store.revision();
    assert_eq!(revision, 16 * 40 * 2 + 16 * 20, "one revision per write");
    let mut events = Vec::new();
    store.events_after(0, |ev| events.push(ev.rv)).unwrap();
    assert_eq!(events, (1..=revision).collect::<Vec<_>>(), "published in revision order");
    drop(store);
    let store = reopen(&path).await;
    assert_eq!(store.revision(), revision);
    let (left, _) = store.list(&gr(), None, None).unwrap();
    assert_eq!(left.len(), 16 * 20, "the odd objects remain");
    assert!(
        left.iter().all(|(k, _)| k.rsplit('-').next().and_then(|i| i.parse::<u32>().ok()).is_some_and(|i| i % 2 == 1))
    );
}

#[tokio::test]
async fn once_the_log_fails_every_write_fails() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(Some(&dir.path().join("db")), StoreOptions::default()).unwrap();
    store.write(Op::Create { gr: gr(), key: "ns/a".into(), object: pod("a") }).await.unwrap();
    store.fail(StoreError::Backend("db/wal-1.log: Input/output error".into()));
    let err = store.write(Op::Create { gr: gr(), key: "ns/b".into(), object: pod("b") }).await.unwrap_err();
    assert!(err.to_string().contains("Input/output error; writes fail until uc restarts"), "{err}");
    assert!(store.get(&gr(), "ns/b").is_none() && store.get(&gr(), "ns/a").is_some());
    assert_eq!(store.revision(), 1);
}

#[tokio::test]
async fn durable_store_reloads_objects_and_revision() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    // A tiny snapshot threshold: every batch starts a snapshot, so reload goes through both.
    let options = StoreOptions { checkpoint_bytes: Some(1), ..Default::default() };
    {
        let store = Store::open(Some(&path), options.clone()).unwrap();
        assert!(Store::open(Some(&path), options.clone()).is_err(), "a second process is locked out");
        store.write(Op::Create { gr: gr(), key: "ns/a".into(), object: pod("a") }).await.unwrap();
        store.write(Op::Create { gr: gr(), key: "ns/b".into(), object: pod("b") }).await.unwrap();
        store.write(Op::Delete { gr: gr(), key: "ns/b".into(), expect_rv: 0 }).await.unwrap();
    }
    let store = reopen(&path).await;
    assert_eq!(store.revision(), 3);
    assert!(store.get(&gr(), "ns/a").is_some());
    assert!(store.get(&gr(), "ns/b").is_none());
    assert_eq!(store.lookup_uid("a").map(|(r, _)| r.1), Some("ns/a".to_string()));
}

#[tokio::test]
async fn a_watch_resumes_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let store = Store::open(Some(&path), StoreOptions::default()).unwrap();
        store.write(Op::Create { gr: gr(), key: "ns/a".into(), object: pod("a") }).await.unwrap();
        store.write(Op::Create { gr: gr(), key: "ns/b".into(), object: pod("b") }).await.unwrap();
        store.write(Op::Delete { gr: gr(), key: "ns/a".into(), expect_rv: 0 }).await.unwrap();
    }
    // The first store's writer thread lets go of the log once it has seen the store dropped.
    let mut last_error = None;
    let mut reopened = None;
    for _ in 0..500 {
        match Store::open(Some(&path), StoreOptions::default()) {
            Ok(s) => {
                reopened = Some(s);
                break;
            }
            Err(e) => last_error = Some(e),
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let store = reopened.unwrap_or_else(|| panic!("the log was not released in 10 s: {last_error:?}"));
    let mut seen = Vec::new();
    let newest =
        store.events_after(1, |ev| seen.push((ev.rv, ev.kind.as_str(), ev.key.clone(), ev.object.rv()))).unwrap();
    assert_eq!(newest, 3);
    assert_eq!(seen, vec![(2, "ADDED", "ns/b".to_string(), 2), (3, "DELETED", "ns/a".to_string(), 3)]);
    store.write(Op::Create { gr: gr(), key: "ns/c".into(), object: pod("c") }).await.unwrap();
    let mut after = Vec::new();
    store.events_after(3, |ev| after.push(ev.rv)).unwrap();
    assert_eq!(after, vec![4]);
}

#[tokio::test]
async fn the_uid_and_owner_indexes_follow_updates_that_keep_or_change_them() {
    let store = Store::open(None, StoreOptions::default()).unwrap();
    let owned = |uid: &str, owners: &[&str]| {
        let refs: Vec<Value> = owners.iter().map(|o| json!({"uid": o, "name": o, "kind": "Foo"})).collect();
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ns", "uid": uid, "ownerReferences": refs}})
    };
    let dependents_of = |owner: &str| store.dependents(owner).into_iter().map(|(r, _)| r.1).collect::<Vec<_>>();
    store.write(Op::Create { gr: gr(), key: "ns/a".into(), object: owned("u1", &["o1"]) }).await.unwrap();
    let mut rv = 1;
    // Kept (the usual update), changed owners, a changed uid, then deleted.
    // The same owner named twice lists the object once.
    for (uid, owners) in [("u1", &["o1"][..]), ("u1", &["o2", "o3", "o2"]), ("u2", &["o3"])] {
        let updated = Op::Update { gr: gr(), key: "ns/a".into(), object: owned(uid, owners), expect_rv: rv };
        rv = rv_of(&store.write(updated).await.unwrap());
        for owner in ["o1", "o2", "o3"] {
            let expected: Vec<String> = if owners.contains(&owner) { vec!["ns/a".into()] } else { vec![] };
            assert_eq!(dependents_of(owner), expected, "{owner} after an update to {uid} {owners:?}");
        }
        assert_eq!(store.lookup_uid(uid).map(|(r, _)| r.1), Some("ns/a".to_string()));
        assert!(store.lookup_uid(if uid == "u1" { "u2" } else { "u1" }).is_none());
    }
    store.write(Op::Delete { gr: gr(), key: "ns/a".into(), expect_rv: 0 }).await.unwrap();
    assert!(dependents_of("o3").is_empty() && store.lookup_uid("u2").is_none());
    assert_eq!(store.gc_suspects(), suspects::Suspects::default(), "no owner index entry left");
}

#[tokio::test]
async fn objects_at_rest_are_packed_read_as_they_were_and_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let big = |name: &str| {
        let mut p = pod(name);
        p["metadata"]["annotations"] = json!({"note": "the same words again ".repeat(40)});
        p
    };
    let options = StoreOptions { checkpoint_bytes: Some(1 << 16), ..Default::default() };
    let stored = {
        let store = Store::open(Some(&path), options).unwrap();
        let stored = store.write(Op::Create { gr: gr(), key: "ns/a".into(), object: big("a") }).await.unwrap();
        let json = store.encoded(&stored).unwrap();
        assert!(!store.get_kept(&gr(), "ns/a").unwrap().packed(), "a new object is not packed");
        // Enough writes to cool it, and to start snapshots of the store (written from its kept objects).
        for i in 0..crate::history::HOT_EVENTS {
            store.write(Op::Create { gr: gr(), key: format!("ns/p{i}"), object: big(&format!("p{i}")) }).await.unwrap();
        }
        store.compact_now();
        let kept = store.get_kept(&gr(), "ns/a").unwrap();
        assert!(kept.packed(), "cooled and compacted, it is packed");
        assert_eq!((kept.json(), store.get(&gr(), "ns/a")), (json, Some(stored.clone())), "read as it was");
        stored
    };
    let store = reopen(&path).await;
    assert_eq!(store.get(&gr(), "ns/a"), Some(stored), "the log and its snapshot hold the JSON");
    assert_eq!(store.list(&gr(), None, None).unwrap().0.len(), crate::history::HOT_EVENTS + 1);
    store.compact_now();
    assert!(store.get_kept(&gr(), "ns/a").unwrap().packed(), "objects read back are packed too");
}
