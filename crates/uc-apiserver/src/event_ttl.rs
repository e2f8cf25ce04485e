//! Events expire: each is deleted `--event-ttl` after its last write (an hour by default), as
//! kube-apiserver stores every Event under an etcd lease of that length, renewed by each write. Without
//! it a node's Events (Scheduled, Pulled, Created, Started, Killing for every pod) piled up for ever: 2,000
//! a cycle in memory-bench's pod churn, 3 MB of RSS a cycle (docs/benchmarks.md, issue 58, step 7).
//!
//! The task follows the revision log like the garbage collector. Writes arrive in time order, so their
//! deadlines do too: a queue, not a timer per Event. An entry whose Event was written again since is
//! stale, and skipped; the Event is deleted at the resourceVersion it was last written with, so a write
//! racing the deletion wins and starts a new TTL. The deletion is the store's, below admission and
//! finalizers, as a lease's expiry is etcd's.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use uc_api::GroupResource;

use crate::app::App;
use crate::storage::{EventType, Op, StoreError};

/// When each Event expires.
#[derive(Debug)]
struct Expiry {
    ttl: Duration,
    /// (deadline, key, resourceVersion of the write), oldest first.
    queue: VecDeque<(Instant, String, u64)>,
    /// Each Event's last write.
    latest: HashMap<String, u64>,
}

impl Expiry {
    fn new(ttl: Duration) -> Self {
        Self { ttl, queue: VecDeque::new(), latest: HashMap::new() }
    }

    /// The Event at `key` was written at `now` and has resourceVersion `rv`.
    fn written(&mut self, key: &str, rv: u64, now: Instant) {
        self.latest.insert(key.to_string(), rv);
        self.queue.push_back((now + self.ttl, key.to_string(), rv));
    }

    /// The Event at `key` is gone.
    fn gone(&mut self, key: &str) {
        self.latest.remove(key);
    }

    /// The Events whose TTL has run out at `now`, each with the resourceVersion it must still have.
    fn due(&mut self, now: Instant) -> Vec<(String, u64)> {
        let mut due = Vec::new();
        while self.queue.front().is_some_and(|(deadline, _, _)| *deadline <= now) {
            let Some((_, key, rv)) = self.queue.pop_front() else { break };
            if self.latest.get(&key) == Some(&rv) {
                due.push((key, rv));
            }
        }
        due
    }

    /// When the next entry falls due (stale or not).
    fn next_due(&self) -> Option<Instant> {
        self.queue.front().map(|(deadline, _, _)| *deadline)
    }
}

fn events() -> GroupResource {
    GroupResource::new("", "events")
}

/// Every stored Event, written as of `now` (at start, or after the log was compacted under the task).
fn relist(app: &App, ttl: Duration, now: Instant) -> (Expiry, u64) {
    let mut expiry = Expiry::new(ttl);
    let (objects, rv) = app.store.list_kept(&events(), None, None).unwrap_or_default();
    for (key, kept) in objects {
        expiry.written(&key, kept.rv(), now);
    }
    (expiry, rv)
}

/// Runs until `stop` changes.
pub async fn run(app: Arc<App>, ttl: Duration, mut stop: watch::Receiver<bool>) {
    let mut revisions = app.store.subscribe();
    let (mut expiry, mut cursor) = relist(&app, ttl, Instant::now());
    loop {
        let wake = expiry.next_due().unwrap_or_else(|| Instant::now() + ttl);
        tokio::select! {
            r = revisions.changed() => if r.is_err() { return },
            _ = tokio::time::sleep_until(wake) => {}
            _ = stop.changed() => return,
        }
        let now = Instant::now();
        let mut newest = cursor;
        let res = app.store.events_after(cursor, |ev| {
            newest = ev.rv;
            if ev.gr.group.is_empty() && ev.gr.resource == "events" {
                match ev.kind {
                    EventType::Deleted => expiry.gone(&ev.key),
                    EventType::Added | EventType::Modified => expiry.written(&ev.key, ev.rv, now),
                }
            }
        });
        match res {
            Ok(_) => cursor = newest,
            Err(StoreError::Gone { .. }) => (expiry, cursor) = relist(&app, ttl, now),
            Err(_) => return,
        }
        for (key, rv) in expiry.due(now) {
            match app.store.write(Op::Delete { gr: events(), key, expect_rv: rv }).await {
                Ok(_) | Err(StoreError::Conflict { .. } | StoreError::NotFound) => {}
                Err(e) => tracing::debug!(error = %e, "event-ttl: deleting an expired Event failed"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_expires_its_ttl_after_its_last_write_and_only_at_that_write() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut e = Expiry::new(s(10));
        e.written("ns/a", 1, t0);
        e.written("ns/b", 2, t0 + s(1));
        e.written("ns/a", 3, t0 + s(5));
        e.written("ns/c", 4, t0 + s(6));
        e.gone("ns/c");
        assert_eq!(e.next_due(), Some(t0 + s(10)));
        assert!(e.due(t0 + s(9)).is_empty(), "nothing before its time");
        assert_eq!(e.due(t0 + s(11)), vec![("ns/b".to_string(), 2)], "a's first write is stale: it was written again");
        assert!(e.due(t0 + s(14)).is_empty());
        assert_eq!(e.due(t0 + s(16)), vec![("ns/a".to_string(), 3)], "at the version of its last write");
        assert!(e.due(t0 + s(60)).is_empty(), "c went by itself");
        assert_eq!(e.next_due(), None);
    }
}
