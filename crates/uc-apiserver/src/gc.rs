//! The garbage collector and the deletion finalizers the API server owns: ownerReference garbage
//! collection (background, foreground and orphan propagation), namespace termination, and the
//! removal of a CRD's objects before the CRD itself.
//!
//! It follows the revision log: every change wakes it, and it looks only at the objects the change
//! concerns (the deleted owner's dependents, the object now being deleted, the owners of a deleted
//! dependent). A periodic full pass catches anything a compaction hid and retries what failed; it asks the
//! store for its suspects ([`crate::storage::suspects::Suspects`]: the dependents of gone or going owners and the
//! objects being deleted, which the store's indexes keep as objects change), decodes only an
//! object it has to act on, and is spaced by its own cost ([`next_full_pass`]): over a million objects, a
//! pass that looked at every dependent took a core for seconds (issue 58).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use uc_api::{GroupResource, Pointer};

use crate::app::App;
use crate::error::Subject;
use crate::handlers::delete::{self, CRD_CLEANUP, DeleteOptions, FOREGROUND, ORPHAN, Propagation};
use crate::handlers::meta::{finalizers, is_deleting};
use crate::handlers::write;
use crate::registry::ResourceInfo;
use crate::storage::{EventType, Obj, ObjRef, StoreError};

mod decide;

use decide::{Fate, Owner, blocks_deletion_of, dependent_fate, drop_owners, has_finalizer, remove_finalizer};

const FULL_PASS_EVERY: Duration = Duration::from_secs(15);

/// At most this share of the time goes to full passes: one that took `spent` waits this many times as long.
const FULL_PASS_SHARE: u32 = 20;

/// How long after a full pass that took `spent` the next one is due (within the hour).
fn next_full_pass(spent: Duration) -> Duration {
    FULL_PASS_EVERY.max(spent.saturating_mul(FULL_PASS_SHARE)).min(Duration::from_secs(3600))
}

/// Runs until `stop` changes.
pub async fn run(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    let mut revisions = app.store.subscribe();
    let mut cursor = app.store.revision();
    let mut full_due = full_pass(&app).await;
    loop {
        tokio::select! {
            r = revisions.changed() => if r.is_err() { return },
            _ = tokio::time::sleep_until(full_due) => {}
            _ = stop.changed() => return,
        }
        let mut work: Vec<Item> = Vec::new();
        let mut newest = cursor;
        let res = app.store.events_after(cursor, |ev| {
            newest = ev.rv;
            match ev.kind {
                EventType::Deleted => {
                    if let Some(uid) = ev.object.uid() {
                        work.push(Item::DependentsOf(uid.to_string()));
                    }
                    for owner in ev.object.owners() {
                        work.push(Item::Uid(owner.to_string()));
                    }
                    // A namespaced object's key starts with its namespace.
                    if let Some((ns, _)) = ev.key.split_once('/').filter(|(ns, _)| !ns.is_empty()) {
                        work.push(Item::Namespace(ns.to_string()));
                    }
                    if ev.gr.group != "apiextensions.k8s.io" {
                        work.push(Item::CrdOf(ev.gr.clone()));
                    }
                }
                EventType::Added | EventType::Modified => {
                    if ev.object.deleting() {
                        work.push(Item::Object((ev.gr.clone(), ev.key.clone())));
                    }
                    if ev.object.owners().next().is_some() {
                        work.push(Item::Dependent((ev.gr.clone(), ev.key.clone())));
                    }
                }
            }
        });
        match res {
            Ok(_) => cursor = newest,
            Err(StoreError::Gone { .. }) => {
                cursor = app.store.revision();
                full_due = full_pass(&app).await;
                continue;
            }
            Err(_) => return,
        }
        let mut seen = HashSet::new();
        for item in work {
            if seen.insert(item.clone()) {
                process(&app, item).await;
            }
        }
        if tokio::time::Instant::now() >= full_due {
            full_due = full_pass(&app).await;
        }
    }
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Item {
    /// Dependents of a (possibly gone) owner uid.
    DependentsOf(String),
    /// The object with this uid, if it is being deleted.
    Uid(String),
    /// An object (being deleted).
    Object(ObjRef),
    /// An object with owner references.
    Dependent(ObjRef),
    /// A namespace that may be terminating.
    Namespace(String),
    /// The CRD serving a resource, which may be waiting for its objects to go.
    CrdOf(GroupResource),
}

/// Looks at every dependent of a gone or going owner and every object being deleted; when the next pass
/// is due.
async fn full_pass(app: &Arc<App>) -> tokio::time::Instant {
    let started = tokio::time::Instant::now();
    let suspects = app.store.gc_suspects();
    tracing::debug!(dependents = suspects.dependents.len(), deleting = suspects.deleting.len(), "gc: a full pass");
    for r in suspects.dependents {
        process(app, Item::Dependent(r)).await;
    }
    for r in suspects.deleting {
        process(app, Item::Object(r)).await;
    }
    let spent = started.elapsed();
    if spent > Duration::from_secs(1) {
        tracing::info!(seconds = spent.as_secs_f64(), "gc: a full pass took long; the next waits longer");
    }
    tokio::time::Instant::now() + next_full_pass(spent)
}

/// Takes one item in; a step that panics is logged and left, like a step that failed, to a later
/// pass: the collector goes on (see `background.rs`).
async fn process(app: &Arc<App>, item: Item) {
    if let Err(panicked) = uc_api::panics::unwound(step(app, item.clone())).await {
        tracing::error!(?item, "gc step panicked: {panicked}; a later pass retries");
    }
}

async fn step(app: &Arc<App>, item: Item) {
    let result = match item {
        Item::DependentsOf(uid) => {
            for (r, _) in app.store.dependents(&uid) {
                if let Err(e) = attempt_dependent(app, &r).await {
                    tracing::debug!(error = ?e.0.message, "gc: dependent");
                }
            }
            if let Some((r, _)) = app.store.lookup_uid(&uid) {
                return Box::pin(process(app, Item::Object(r))).await;
            }
            Ok(())
        }
        Item::Uid(uid) => match app.store.lookup_uid(&uid) {
            Some((r, _)) => deleting(app, &r).await,
            None => Ok(()),
        },
        Item::Object(r) => deleting(app, &r).await,
        Item::Dependent(r) => attempt_dependent(app, &r).await,
        Item::Namespace(ns) => deleting(app, &(GroupResource::new("", "namespaces"), format!("/{ns}"))).await,
        Item::CrdOf(gr) => {
            let Some(info) = app.registry.get(&gr) else {
                return;
            };
            let Some(crd) = &info.crd else { return };
            deleting(app, &(GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions"), format!("/{crd}")))
                .await
        }
    };
    if let Err(e) = result {
        tracing::debug!(error = %e.0.message, "gc step failed; a later pass retries");
    }
}

fn info_of(app: &App, gr: &GroupResource) -> Option<Arc<ResourceInfo>> {
    app.registry.get(gr)
}

fn subject(gr: &GroupResource, key: &str) -> Subject {
    Subject {
        group: gr.group.clone(),
        resource: gr.resource.clone(),
        name: key.rsplit('/').next().unwrap_or_default().into(),
    }
}

/// Changes an object with `f` (a CAS loop); `f` returns false when nothing needs changing.
async fn mutate(app: &App, r: &ObjRef, f: impl Fn(&mut Value) -> bool) -> crate::error::Result<()> {
    let Some(info) = info_of(app, &r.0) else {
        return Ok(());
    };
    for _ in 0..16 {
        let Some(cur) = app.store.get(&r.0, &r.1) else {
            return Ok(());
        };
        let mut new = (*cur).clone();
        if !f(&mut new) {
            return Ok(());
        }
        match write::commit_update(app, &info, &r.1, &cur, new).await {
            Ok(_) => return Ok(()),
            Err(StoreError::Conflict { .. }) => continue,
            Err(StoreError::NotFound) => return Ok(()),
            Err(e) => return Err(crate::error::ApiError::from_store(e, &subject(&r.0, &r.1))),
        }
    }
    Ok(())
}

async fn delete(app: &App, r: &ObjRef, propagation: Propagation, uid: Option<String>) -> crate::error::Result<()> {
    let Some(info) = info_of(app, &r.0) else {
        return Ok(());
    };
    let opts = DeleteOptions { propagation, uid, ..Default::default() };
    match delete::delete_object(app, &info, &r.1, &subject(&r.0, &r.1), &opts).await {
        Ok(_) => Ok(()),
        Err(e) if e.code() == 404 || e.code() == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Decides the fate of an object with owner references, the way kube's GC `attemptToDelete` does.
/// Only an object with a gone or going owner is decoded: the owners' uids, and whether an owner is being
/// deleted, are what the store keeps beside the JSON.
async fn attempt_dependent(app: &App, r: &ObjRef) -> crate::error::Result<()> {
    let Some(kept) = app.store.get_kept(&r.0, &r.1) else {
        return Ok(());
    };
    let owners: Vec<(String, Owner)> = kept
        .owners()
        .map(|uid| {
            let owner = match app.store.lookup_uid(uid) {
                None => Owner::Gone,
                Some((_, o)) if o.deleting() && has_finalizer(&o.tree(), FOREGROUND) => Owner::Waiting,
                Some(_) => Owner::Solid,
            };
            (uid.to_string(), owner)
        })
        .collect();
    if owners.iter().all(|(_, o)| *o == Owner::Solid) {
        return Ok(()); // the common case, decided without decoding the object
    }
    match dependent_fate(&owners, &finalizers(&kept.tree()), kept.deleting()) {
        Fate::Keep => Ok(()),
        Fate::DropOwners(uids) => {
            let uids: Vec<&str> = uids.iter().map(String::as_str).collect();
            mutate(app, r, |o| drop_owners(o, &uids)).await
        }
        Fate::Delete(policy) => delete(app, r, policy, kept.uid().map(String::from)).await,
    }
}

/// Progresses an object that is being deleted and carries a finalizer the API server owns.
async fn deleting(app: &App, r: &ObjRef) -> crate::error::Result<()> {
    let Some(kept) = app.store.get_kept(&r.0, &r.1).filter(|k| k.deleting()) else {
        return Ok(());
    };
    let obj = kept.tree();
    let uid = obj.at("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
    if has_finalizer(&obj, ORPHAN) {
        for (dep, _) in app.store.dependents(&uid) {
            mutate(app, &dep, |o| drop_owners(o, &[uid.as_str()])).await?;
        }
        if app.store.dependents(&uid).is_empty() {
            mutate(app, r, |o| remove_finalizer(o, ORPHAN)).await?;
        }
    }
    if has_finalizer(&obj, FOREGROUND) {
        let deps = app.store.dependents(&uid);
        for (dep, d) in &deps {
            if !d.deleting() {
                attempt_dependent(app, dep).await?;
            }
        }
        let blocking = app.store.dependents(&uid).into_iter().any(|(_, d)| blocks_deletion_of(&d.tree(), &uid));
        if !blocking {
            mutate(app, r, |o| remove_finalizer(o, FOREGROUND)).await?;
        }
    }
    if r.0 == GroupResource::new("", "namespaces") {
        terminate_namespace(app, r, &obj).await?;
    }
    if r.0 == GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions")
        && has_finalizer(&obj, CRD_CLEANUP)
    {
        let gr = GroupResource::new(
            obj.at("/spec/group").and_then(Value::as_str).unwrap_or_default(),
            obj.at("/spec/names/plural").and_then(Value::as_str).unwrap_or_default(),
        );
        let (objects, _) =
            app.store.list(&gr, None, None).map_err(|e| crate::error::ApiError::from_store(e, &subject(&r.0, &r.1)))?;
        for (key, o) in &objects {
            if !is_deleting(o) {
                delete(app, &(gr.clone(), key.clone()), Propagation::Background, None).await?;
            }
        }
        if app.store.list(&gr, None, None).map(|(o, _)| o.is_empty()).unwrap_or(false) {
            mutate(app, r, |o| remove_finalizer(o, CRD_CLEANUP)).await?;
        }
    }
    Ok(())
}

async fn terminate_namespace(app: &App, r: &ObjRef, ns_obj: &Obj) -> crate::error::Result<()> {
    let ns = ns_obj.at("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    let has_spec_finalizer =
        ns_obj.at("/spec/finalizers").and_then(Value::as_array).is_some_and(|a| a.iter().any(|f| f == "kubernetes"));
    if !has_spec_finalizer {
        return Ok(());
    }
    let mut remaining = 0;
    for gr in app.store.resource_types() {
        if !info_of(app, &gr).is_some_and(|i| i.namespaced) {
            continue;
        }
        let Ok((objects, _)) = app.store.list(&gr, Some(&ns), None) else {
            continue;
        };
        for (key, o) in objects {
            remaining += 1;
            if !is_deleting(&o) {
                delete(app, &(gr.clone(), key), Propagation::Background, None).await?;
            }
        }
    }
    if remaining == 0 {
        mutate(app, r, |o| {
            let Some(list) = o.at_mut("/spec/finalizers").and_then(Value::as_array_mut) else {
                return false;
            };
            list.retain(|f| f != "kubernetes");
            o["status"]["phase"] = json!("Terminating");
            true
        })
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_pass_waits_its_period_or_twenty_times_what_it_took_within_the_hour() {
        assert_eq!(next_full_pass(Duration::ZERO), FULL_PASS_EVERY);
        assert_eq!(next_full_pass(Duration::from_millis(500)), FULL_PASS_EVERY, "a cheap pass keeps the period");
        assert_eq!(next_full_pass(Duration::from_secs(3)), Duration::from_secs(60), "a costly one is spaced");
        assert_eq!(next_full_pass(Duration::MAX), Duration::from_secs(3600), "within the hour, no overflow");
    }

    #[tokio::test]
    async fn a_terminating_namespace_deletes_what_is_in_it_a_null_deletion_timestamp_too() {
        let dir = tempfile::tempdir().unwrap();
        let app = crate::server::test_app(dir.path());
        let (namespaces, maps) = (GroupResource::new("", "namespaces"), GroupResource::new("", "configmaps"));
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": "t", "deletionTimestamp": "2026-12-05T00:00:00Z"},
                        "spec": {"finalizers": ["kubernetes"]}});
        app.store
            .write(crate::storage::Op::Create { gr: namespaces.clone(), key: "/t".into(), object: ns })
            .await
            .unwrap();
        for (name, meta) in [
            ("a", json!({"name": "a", "namespace": "t"})),
            ("b", json!({"name": "b", "namespace": "t", "deletionTimestamp": null})),
        ] {
            let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta});
            let op = crate::storage::Op::Create { gr: maps.clone(), key: format!("t/{name}"), object };
            app.store.write(op).await.unwrap();
        }
        deleting(&app, &(namespaces.clone(), "/t".into())).await.unwrap();
        assert!(app.store.get(&maps, "t/a").is_none());
        assert!(app.store.get(&maps, "t/b").is_none(), "`deletionTimestamp: null` is no deletion under way");
        let finalizers = |app: &App| app.store.get(&namespaces, "/t").unwrap()["spec"]["finalizers"].clone();
        assert_eq!(finalizers(&app), json!(["kubernetes"]), "kept by a pass that found objects in it");
        deleting(&app, &(namespaces.clone(), "/t".into())).await.unwrap();
        assert!(app.store.get(&namespaces, "/t").is_none(), "released by the pass that finds it empty, and gone");
    }
}
