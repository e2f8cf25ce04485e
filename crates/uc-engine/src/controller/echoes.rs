//! Writes whose echo the informers have not delivered yet — kube-controller-manager's "expectations".
//!
//! A reconcile that applied a child and wrote its parent's status is triggered again by the watch
//! events those writes cause. Until each of them has arrived, the caches show the state the writes
//! replaced: a hook called then answers from a parent without its own new status, and the status it
//! computes is written against a resourceVersion that is already gone (a 409, and a retry). So a parent
//! with a write still unseen is not reconciled; the event that delivers the write triggers it again, and
//! the hook sees the cluster with its writes in it — once, rather than once per event.
//!
//! An expectation is set before its write and cleared by any event for the object written (what the
//! cache holds then is at least as new as the write), by a write that failed, or by one that changed
//! nothing (the server sends no event for it). One older than [`TTL`] — an event lost to a watch that
//! relisted past an object created and deleted in between — lapses, and its parent is queued again.

use std::time::{Duration, Instant};

use foldhash::HashMap;
use parking_lot::Mutex;

use crate::informer::ObjKey;

/// How long a parent waits for an echo before it is reconciled regardless.
pub(super) const TTL: Duration = Duration::from_secs(15);

/// An object a reconcile wrote: its parent, or a child of the child type at this index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Written {
    Parent(ObjKey),
    Child(usize, ObjKey),
}

#[derive(Default)]
struct Inner {
    /// Per object written: the parent waiting for it and when the write was made.
    by_object: HashMap<Written, (ObjKey, Instant)>,
    /// Per parent: how many of its writes are unseen.
    by_parent: HashMap<ObjKey, usize>,
}

impl Inner {
    fn take(&mut self, object: &Written) -> Option<ObjKey> {
        let (parent, _) = self.by_object.remove(object)?;
        if let Some(n) = self.by_parent.get_mut(&parent) {
            *n -= 1;
            if *n == 0 {
                self.by_parent.remove(&parent);
            }
        }
        Some(parent)
    }
}

/// The unseen writes of one controller.
#[derive(Default)]
pub(super) struct Echoes(Mutex<Inner>);

impl Echoes {
    /// `parent` is about to write `object`.
    pub fn expect(&self, parent: &ObjKey, object: Written, now: Instant) {
        let mut e = self.0.lock();
        e.take(&object);
        e.by_object.insert(object, (parent.clone(), now));
        *e.by_parent.entry(parent.clone()).or_default() += 1;
    }

    /// The write of `object` failed, or changed nothing: no event will come for it.
    pub fn cancel(&self, object: &Written) {
        self.0.lock().take(object);
    }

    /// The write of `object`, made against resourceVersion `before`, is done: the server `stored` a
    /// version (None: it failed). Only a new version brings an event.
    pub fn settle(&self, object: &Written, before: &str, stored: Option<&str>) {
        if stored.is_none_or(|rv| rv == before) {
            self.cancel(object);
        }
    }

    /// An event for `object` arrived.
    pub fn seen(&self, object: &Written) {
        let mut e = self.0.lock();
        if !e.by_object.is_empty() {
            e.take(object);
        }
    }

    /// Whether `parent` has a write whose event has not arrived.
    pub fn awaited(&self, parent: &ObjKey) -> bool {
        self.0.lock().by_parent.contains_key(parent)
    }

    /// Drops the expectations of a deleted parent.
    pub fn forget(&self, parent: &ObjKey) {
        let mut e = self.0.lock();
        if e.by_parent.remove(parent).is_some() {
            e.by_object.retain(|_, (p, _)| p != parent);
        }
    }

    /// Drops expectations set before `now - TTL`; returns their parents (each once), to be queued.
    pub fn lapse(&self, now: Instant) -> Vec<ObjKey> {
        let mut e = self.0.lock();
        let old: Vec<Written> =
            e.by_object.iter().filter(|(_, (_, at))| now.duration_since(*at) >= TTL).map(|(o, _)| o.clone()).collect();
        let mut parents: Vec<ObjKey> = old.iter().filter_map(|o| e.take(o)).collect();
        parents.sort();
        parents.dedup();
        parents
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjKey {
        ("ns".into(), name.into())
    }

    #[test]
    fn a_parent_waits_until_every_write_is_seen() {
        let e = Echoes::default();
        let now = Instant::now();
        let (p, child) = (key("p"), Written::Child(0, key("c")));
        assert!(!e.awaited(&p));
        e.expect(&p, child.clone(), now);
        e.expect(&p, Written::Parent(p.clone()), now);
        assert!(e.awaited(&p));
        e.seen(&child);
        assert!(e.awaited(&p), "the status write is still unseen");
        e.seen(&Written::Child(1, key("c")));
        assert!(e.awaited(&p), "another child type's object of the same name is another object");
        e.seen(&Written::Parent(p.clone()));
        assert!(!e.awaited(&p));
    }

    #[test]
    fn failed_or_empty_writes_and_deleted_parents_wait_for_nothing() {
        let e = Echoes::default();
        let now = Instant::now();
        let (p, q) = (key("p"), key("q"));
        e.expect(&p, Written::Parent(p.clone()), now);
        e.settle(&Written::Parent(p.clone()), "5", Some("6"));
        assert!(e.awaited(&p), "a new version: its event comes");
        e.settle(&Written::Parent(p.clone()), "5", Some("5"));
        assert!(!e.awaited(&p), "nothing stored anew: no event");
        e.expect(&p, Written::Parent(p.clone()), now);
        e.settle(&Written::Parent(p.clone()), "5", None);
        assert!(!e.awaited(&p), "failed");
        e.expect(&q, Written::Child(0, key("c")), now);
        e.expect(&q, Written::Parent(q.clone()), now);
        e.forget(&q);
        assert!(!e.awaited(&q));
        e.seen(&Written::Child(0, key("c")));
        assert!(!e.awaited(&q) && e.lapse(now + TTL).is_empty(), "nothing of it is left");
    }

    #[test]
    fn one_object_written_twice_is_one_expectation() {
        let e = Echoes::default();
        let now = Instant::now();
        let p = key("p");
        e.expect(&p, Written::Parent(p.clone()), now);
        e.expect(&p, Written::Parent(p.clone()), now);
        e.seen(&Written::Parent(p.clone()));
        assert!(!e.awaited(&p), "one event shows the cache at least as new as both writes");
    }

    #[test]
    fn unseen_writes_lapse_and_their_parents_are_returned_once() {
        let e = Echoes::default();
        let now = Instant::now();
        let (p, q) = (key("p"), key("q"));
        e.expect(&p, Written::Child(0, key("a")), now);
        e.expect(&p, Written::Child(0, key("b")), now);
        e.expect(&q, Written::Parent(q.clone()), now + Duration::from_secs(10));
        assert!(e.lapse(now + TTL - Duration::from_millis(1)).is_empty());
        assert_eq!(e.lapse(now + TTL), vec![p.clone()]);
        assert!(!e.awaited(&p) && e.awaited(&q));
        assert_eq!(e.lapse(now + TTL + Duration::from_secs(10)), vec![q.clone()]);
        assert!(!e.awaited(&q));
    }
}
