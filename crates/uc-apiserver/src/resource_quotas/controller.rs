//! kube's ResourceQuota controller, inside the API server: each quota's `status` — what it holds and
//! what its namespace's objects use of it — written again whenever an object of its namespace is made,
//! changed or deleted (the store's history says which namespaces changed), and at start.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ResourceQuota;
use serde_json::Value;
use tokio::sync::watch;
use uc_api::GroupResource;

use super::Usage;
use super::evaluate;
use crate::app::App;
use crate::storage::{Op, StoreError, object_key};

fn quotas() -> GroupResource {
    GroupResource::new("", "resourcequotas")
}

/// The quotas of a namespace as stored, each read and beside what the namespace's objects use of it now.
pub(crate) fn with_usage(app: &App, namespace: &str) -> Vec<(Arc<Value>, ResourceQuota, Usage)> {
    let Ok((stored, _)) = app.store.list(&quotas(), Some(namespace), None) else { return Vec::new() };
    let read: Vec<(Arc<Value>, ResourceQuota)> = stored
        .into_iter()
        .filter_map(|(_, o)| Some((o.clone(), serde_json::from_value(o.as_ref().clone()).ok()?)))
        .collect();
    let types: BTreeSet<GroupResource> =
        read.iter().flat_map(|(_, q)| evaluate::hard_of(q).into_keys()).filter_map(|k| super::type_of(&k)).collect();
    let objects: Vec<(GroupResource, Arc<Value>)> = types
        .into_iter()
        .flat_map(|gr| {
            let (listed, _) = app.store.list(&gr, Some(namespace), None).unwrap_or_default();
            listed.into_iter().map(move |(_, o)| (gr.clone(), o))
        })
        .collect();
    read.into_iter()
        .map(|(o, q)| {
            let used = evaluate::used(&q, objects.iter().map(|(gr, o)| (gr, o.as_ref())));
            (o, q, used)
        })
        .collect()
}

/// Writes the status of each quota of a namespace that does not hold what it should.
async fn sync(app: &App, namespace: &str) {
    for (stored, quota, used) in with_usage(app, namespace) {
        let status = evaluate::status_of(&quota, &used);
        if stored.get("status") == Some(&status) {
            continue;
        }
        let mut new = stored.as_ref().clone();
        new["status"] = status;
        let key = object_key(namespace, quota.metadata.name.as_deref().unwrap_or_default());
        let expect_rv = crate::storage::rv_of(&stored);
        match app.store.write(Op::Update { gr: quotas(), key, object: new, expect_rv }).await {
            // A conflict or a delete is a write of the namespace: it brings this quota back here.
            Ok(_) | Err(StoreError::Conflict { .. } | StoreError::NotFound) => {}
            Err(e) => tracing::debug!(error = %e, namespace, "resource quota: writing a status failed"),
        }
    }
}

/// Whether a namespace holds a quota.
pub(crate) fn any(app: &App, namespace: &str) -> bool {
    app.store.list(&quotas(), Some(namespace), None).is_ok_and(|(stored, _)| !stored.is_empty())
}

/// The namespaces that hold a quota.
fn quota_namespaces(app: &App) -> BTreeSet<String> {
    let (all, _) = app.store.list(&quotas(), None, None).unwrap_or_default();
    all.into_iter().filter_map(|(key, _)| key.split_once('/').map(|(ns, _)| ns.to_string())).collect()
}

/// Runs until `stop` changes.
pub async fn run(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    let mut revisions = app.store.subscribe();
    let mut cursor = app.store.revision();
    let mut dirty = quota_namespaces(&app);
    loop {
        for namespace in std::mem::take(&mut dirty) {
            sync(&app, &namespace).await;
        }
        tokio::select! {
            r = revisions.changed() => if r.is_err() { return },
            _ = stop.changed() => return,
        }
        let seen = app.store.events_after(cursor, |ev| {
            if let Some((namespace, _)) = ev.key.split_once('/').filter(|(ns, _)| !ns.is_empty()) {
                dirty.insert(namespace.to_string());
            }
        });
        cursor = match seen {
            Ok(rv) => rv,
            // History compacted under the task: every namespace with a quota.
            Err(_) => {
                dirty = quota_namespaces(&app);
                app.store.revision()
            }
        };
    }
}
