//! The tasks of a running controller part: following its parents' and children's informers into the
//! queue, the workers (after every informer's first list) and resyncs, the lapse of unseen echoes, and
//! (for a controller's first part) its hooks' sources and files.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinHandle;
use uc_api::Pointer;
use uc_api::meta::meta_str;

use super::shared::Shared;
use super::sources::SourceObjects;
use super::{echoes, exec_files, sources};
use crate::informer::{Interest, ObjKey, Subscription, key_of};
use crate::queue::{Priority, WorkQueue};

/// Starts every task of a part; `sources`: also follow its hooks' sources and files.
pub(super) fn spawn(
    shared: &Arc<Shared>,
    sources: Option<&mut SourceObjects>,
) -> (Vec<JoinHandle<()>>, Vec<Subscription>) {
    let mut tasks = Vec::new();
    let mut subscriptions = Vec::new();
    let (sub, task) = follow_parents(shared);
    subscriptions.push(sub);
    tasks.push(task);
    for i in 0..shared.children.len() {
        let (sub, task) = follow_children(shared, i);
        subscriptions.push(sub);
        tasks.push(task);
    }
    tasks.push(tokio::spawn(work_when_synced(shared.clone())));
    tasks.push(tokio::spawn(lapse_echoes(shared.clone())));
    if let Some(objects) = sources {
        tasks.extend(sources::watch(shared, objects));
        tasks.extend(exec_files::watch(shared));
    }
    (tasks, subscriptions)
}

/// Parents' events queue them; nothing about a deleted parent outlives it.
fn follow_parents(shared: &Arc<Shared>) -> (Subscription, JoinHandle<()>) {
    let (sub, mut rx) = shared.parents.subscribe();
    let s = shared.clone();
    let task = tokio::spawn(async move {
        let ignore_status = s.spec.parent_resource.ignore_status_changes == Some(true);
        while let Some(ch) = rx.recv().await {
            let key = key_of(&ch.object);
            let echo = s.echoes.seen(&echoes::Written::Parent(key.clone()));
            if ch.deleted {
                s.echoes.forget(&key);
                s.written.forget(meta_str(&ch.object, "uid"));
                s.related_rules.lock().remove(&key);
                s.vanished.forget(&key);
            } else if ignore_status && ch.old.as_ref().is_some_and(|old| only_status_changed(old, &ch.object)) {
                continue;
            }
            let echo = echo.filter(|_| !ch.deleted).map(|(_, due)| due);
            enqueue(&s.queue, key, echo, &ch);
        }
    });
    (sub, task)
}

/// Which changed children a part reads soon: those its parents own, and orphans one of its parents
/// selects, which it may adopt (a decorator's attachments, found by annotation: every one). Orphans no
/// parent selects (a cluster's pods, to a controller of a few parents) are nobody's to read.
fn reads_children(shared: &Arc<Shared>) -> crate::informer::Reads {
    let parents = shared.parents.clone();
    let weak = Arc::downgrade(shared);
    let decorator = shared.flavor == crate::flavor::Flavor::Decorator;
    Arc::new(move |child: &Value| {
        reads_child(
            decorator,
            uc_api::meta::controller_uid(child),
            |uid| parents.key_of_uid(uid).is_some(),
            || !parents.is_empty() && weak.upgrade().is_some_and(|s| !s.parents_of_object(child).is_empty()),
        )
    })
}

/// Whether a part reads a changed child soon: a decorator every one; another the children of its cached
/// parents (`cached`: a parent's uid), and orphans one of them `selects`.
fn reads_child(
    decorator: bool,
    controller: Option<&str>,
    cached: impl Fn(&str) -> bool,
    selects: impl FnOnce() -> bool,
) -> bool {
    decorator
        || match controller {
            Some(uid) => cached(uid),
            None => selects(),
        }
}

/// A child leaving the cache marks its parents vanished before any reconcile can claim without it: the mark
/// is set as the informer lets go of the child, not when its event is taken from the queue (a reconcile
/// claiming in between would make the child of a parent the garbage collector is emptying again).
fn mark_vanished(shared: &Arc<Shared>) -> crate::informer::Losing {
    let weak = Arc::downgrade(shared);
    Arc::new(move |child: &Value| {
        if let Some(s) = weak.upgrade() {
            s.vanished.mark(s.parents_of_object(child));
        }
    })
}

/// The `i`th child type's events queue the parents that own (or would own) the child.
fn follow_children(shared: &Arc<Shared>, i: usize) -> (Subscription, JoinHandle<()>) {
    let interest = Interest { reads: Some(reads_children(shared)), losing: Some(mark_vanished(shared)) };
    let (sub, mut rx) = shared.children[i].informer.subscribe_with(interest);
    let s = shared.clone();
    let task = tokio::spawn(async move {
        while let Some(ch) = rx.recv().await {
            let echo = s.echoes.seen(&echoes::Written::Child(i, key_of(&ch.object)));
            if ch.deleted {
                s.written.forget(meta_str(&ch.object, "uid"));
            }
            for k in s.parents_of_child(&ch) {
                let own = echo.as_ref().filter(|(parent, _)| *parent == k && !ch.deleted).map(|(_, due)| *due);
                enqueue(&s.queue, k, own, &ch);
            }
        }
    });
    (sub, task)
}

/// Once every informer has listed: every parent queued behind news (as in controller-runtime's priority
/// queue), the workers started, and a resync every `resyncPeriodSeconds`.
async fn work_when_synced(s: Arc<Shared>) {
    s.parents.wait_synced().await;
    for c in &s.children {
        c.informer.wait_synced().await;
    }
    for key in s.parents.keys() {
        s.queue.add_at(key, Priority::Low);
    }
    s.synced.store(true, std::sync::atomic::Ordering::Release);
    let workers = tokio::spawn(s.clone().work());
    let resync = s.spec.resync_period_seconds.filter(|p| *p > 0.0).map(Duration::from_secs_f64);
    if let Some(period) = resync {
        loop {
            tokio::time::sleep(period).await;
            s.resync();
        }
    }
    let _ = workers.await;
}

/// Parents whose writes' events never came are reconciled after all.
async fn lapse_echoes(s: Arc<Shared>) {
    loop {
        tokio::time::sleep(echoes::TTL / 3).await;
        for k in s.echoes.lapse(std::time::Instant::now()) {
            s.queue.add(k);
        }
    }
}

/// Queues the parent `key` for a watch event. The echo of its own write (`echo`: the priority that echo
/// is due at) queues it once every write of it is seen; any other event is news, except the informer's
/// first list, which waits behind news.
fn enqueue(queue: &WorkQueue<ObjKey>, key: ObjKey, echo: Option<Option<Priority>>, ch: &crate::informer::Change) {
    match echo {
        Some(Some(due)) => queue.add_at(key, due),
        Some(None) => {}
        None if ch.initial => queue.add_at(key, Priority::Low),
        None => queue.add(key),
    }
}

/// Whether an update changed a parent's status only (Metacontroller's `ignoreStatusChanges`): same
/// generation, labels, annotations and finalizers, not being deleted.
fn only_status_changed(old: &Value, new: &Value) -> bool {
    let same = |p: &str| old.at(p) == new.at(p);
    !uc_api::meta::is_deleting(new)
        && same("/metadata/generation")
        && same("/metadata/labels")
        && same("/metadata/annotations")
        && same("/metadata/finalizers")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::reads_child;

    #[test]
    fn a_part_reads_soon_its_parents_children_and_the_orphans_they_select() {
        let cached = |uid: &str| uid == "p1";
        assert!(reads_child(false, Some("p1"), cached, || unreachable!("owned: no selector asked")));
        assert!(!reads_child(false, Some("other"), cached, || true), "another controller's child");
        assert!(reads_child(false, None, cached, || true), "an orphan a parent selects");
        assert!(!reads_child(false, None, cached, || false), "an orphan nobody selects");
        assert!(reads_child(true, Some("other"), cached, || false), "a decorator reads every one");
    }

    #[test]
    fn status_only_changes() {
        let old = json!({"metadata": {"generation": 1, "labels": {"a": "1"}}, "status": {"x": 1}});
        let status = json!({"metadata": {"generation": 1, "labels": {"a": "1"}}, "status": {"x": 2}});
        assert!(super::only_status_changed(&old, &status));
        let spec = json!({"metadata": {"generation": 2, "labels": {"a": "1"}}, "status": {"x": 1}});
        assert!(!super::only_status_changed(&old, &spec));
        let labels = json!({"metadata": {"generation": 1, "labels": {"a": "2"}}});
        assert!(!super::only_status_changed(&old, &labels));
        let deleting = json!({"metadata": {"generation": 1, "labels": {"a": "1"}, "deletionTimestamp": "t"}});
        assert!(!super::only_status_changed(&old, &deleting));
    }
}
