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
//!
//! The reconcile the last echo triggers is a confirmation: it shows the hook its own writes, and the
//! cluster changed only by them. It waits at low priority behind parents with news (new ones, changes
//! made by others), as controller-runtime's priority queue lets a resync wait: under load, what changed
//! converges first. A parent queued with news while it awaited its echoes is owed a reconcile at normal
//! priority, which the last echo then queues.

use std::time::{Duration, Instant};

use foldhash::HashMap;
use parking_lot::Mutex;

use crate::informer::ObjKey;
use crate::queue::Priority;

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
    /// Per parent: how many of its writes are unseen, and whether it was queued with news meanwhile.
    by_parent: HashMap<ObjKey, Waiting>,
}

#[derive(Default)]
struct Waiting {
    unseen: usize,
    owed: bool,
}

impl Inner {
    /// Clears the expectation of `object`: its parent, and — once none of the parent's writes is
    /// unseen any more — the priority its reconcile is due at.
    fn take(&mut self, object: &Written) -> Option<(ObjKey, Option<Priority>)> {
        let (parent, _) = self.by_object.remove(object)?;
        let mut due = Some(Priority::Low);
        if let Some(w) = self.by_parent.get_mut(&parent) {
            w.unseen -= 1;
            due = None;
            if w.unseen == 0 {
                due = Some(if w.owed { Priority::Normal } else { Priority::Low });
                self.by_parent.remove(&parent);
            }
        }
        Some((parent, due))
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
        e.by_parent.entry(parent.clone()).or_default().unseen += 1;
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

    /// An event for `object` arrived. When it is the echo of a write: the parent that made it, and the
    /// priority to queue that parent at — `None` while another of its writes is unseen (that one's
    /// event queues it).
    pub fn seen(&self, object: &Written) -> Option<(ObjKey, Option<Priority>)> {
        let mut e = self.0.lock();
        if e.by_object.is_empty() {
            return None;
        }
        e.take(object)
    }

    /// Whether `parent`, taken from the queue at `priority`, has a write whose event has not arrived
    /// (then it is not reconciled yet; taken at normal priority, it is owed that once its echoes are in).
    pub fn hold(&self, parent: &ObjKey, priority: Priority) -> bool {
        let mut e = self.0.lock();
        match e.by_parent.get_mut(parent) {
            Some(w) => {
                w.owed |= priority == Priority::Normal;
                true
            }
            None => false,
        }
    }

    /// Whether `parent` has a write whose event has not arrived.
    #[cfg(test)]
    fn awaited(&self, parent: &ObjKey) -> bool {
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
        let mut parents: Vec<ObjKey> = old.iter().filter_map(|o| e.take(o)).map(|(p, _)| p).collect();
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
    fn the_last_echo_queues_its_parent_low_unless_news_came_while_it_waited() {
        let e = Echoes::default();
        let now = Instant::now();
        let (p, child) = (key("p"), Written::Child(0, key("c")));
        assert_eq!(e.seen(&child), None, "nothing expected: not an echo");
        e.expect(&p, child.clone(), now);
        e.expect(&p, Written::Parent(p.clone()), now);
        assert_eq!(e.seen(&Written::Child(0, key("other"))), None, "not an echo");
        assert_eq!(e.seen(&child), Some((p.clone(), None)), "the status write is still unseen");
        assert_eq!(e.seen(&Written::Parent(p.clone())), Some((p.clone(), Some(Priority::Low))), "a confirmation");

        e.expect(&p, child.clone(), now);
        e.expect(&p, Written::Parent(p.clone()), now);
        assert!(e.hold(&p, Priority::Low), "an earlier confirmation, held: owes nothing");
        assert_eq!(e.seen(&child), Some((p.clone(), None)));
        assert!(e.hold(&p, Priority::Normal), "news, held until the echoes are in");
        assert_eq!(e.seen(&Written::Parent(p.clone())), Some((p.clone(), Some(Priority::Normal))), "owed");
        assert!(!e.hold(&p, Priority::Normal), "nothing unseen: not held");

        e.expect(&p, Written::Parent(p.clone()), now);
        assert_eq!(e.seen(&Written::Parent(p.clone())), Some((p.clone(), Some(Priority::Low))), "the debt was paid");
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
