//! Rolling updates: the parent's ControllerRevisions (one per distinct value of its revision fields),
//! which revision each child of a rolling type is desired at, and the writes that record a step's
//! intent before any child changes. The decisions are `crate::revision`'s; this is their I/O.

use std::collections::BTreeMap;

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams, Preconditions};
use serde_json::{Map, Value, json};
use uc_api::hook::SyncRequest;
use uc_api::meta::{controller_owner_reference, controller_uid, meta_str};

use super::errors::{SyncError, SyncReason};
use super::shared::{RevisionStore, Shared, to_dynamic};
use super::validate::validate_children;
use crate::hooks::{HookImpl, HookKind};
use crate::informer::Obj;
use crate::plan::decorate;
use crate::revision::{self, Revision, TypeRollout};

/// One step of a parent's rollout, ready to be written.
pub(super) struct Rollout {
    pub revisions: Vec<Revision>,
    pub latest: usize,
    pub condition: Value,
    pub moved: Vec<String>,
}

/// The index of the revision named `name`, added (numbered after the others) when it is new.
pub(super) fn latest_revision(revisions: &mut Vec<Revision>, name: String, patch: Value) -> usize {
    if let Some(i) = revisions.iter().position(|r| r.name == name) {
        return i;
    }
    let next = revisions.iter().map(|r| r.revision).max().unwrap_or(0) + 1;
    revisions.push(Revision { name, patch, revision: next, children: BTreeMap::new(), stored: None });
    revisions.len() - 1
}

/// A new ControllerRevision object for `rev`, owned by the parent.
pub(super) fn revision_object(
    api_version: &str,
    rev: &Revision,
    namespace: &str,
    labels: Map<String, Value>,
    parent: &Value,
) -> Value {
    json!({
        "apiVersion": api_version, "kind": "ControllerRevision",
        "metadata": {
            "name": rev.name, "namespace": namespace, "labels": labels,
            "ownerReferences": [controller_owner_reference(parent)],
        },
        "parentPatch": rev.patch, "revision": rev.revision, "children": rev.children_value(),
    })
}

/// The status with the rollout's `Updated` condition: the hook's status if it gave one, else the
/// parent's current one.
pub(super) fn status_with_condition(hook_status: Option<Value>, parent: &Value, condition: Value, now: &str) -> Value {
    let base = hook_status.unwrap_or_else(|| parent.get("status").cloned().unwrap_or_else(|| json!({})));
    let mut s = if base.is_object() { base } else { json!({}) };
    revision::set_condition(&mut s, condition, parent.get("status"), now);
    s
}

impl Shared {
    /// A cluster-scoped parent keeps its revisions in `default`.
    fn revisions_namespace<'a>(&self, parent: &'a Value) -> &'a str {
        if self.parent.namespaced { meta_str(parent, "namespace") } else { "default" }
    }

    fn revisions_api(&self, store: &RevisionStore, parent: &Value) -> Api<DynamicObject> {
        Api::namespaced_with(self.ctx.client.clone(), self.revisions_namespace(parent), &store.res.ar)
    }

    /// One step of the parent's rollout: loads its revisions (from the API server, never from a cache, so
    /// a step always starts from the last one's intent), asks the hook for the children of every old
    /// revision that still has some, and picks per child the revision it is desired at. `desired` is
    /// rewritten for the rolling child types.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn rollout(
        &self,
        store: &RevisionStore,
        parent: &Value,
        selector_labels: &Map<String, Value>,
        observed: &[Vec<Obj>],
        desired: &mut [Vec<Value>],
        request: &SyncRequest,
        hook: &HookImpl,
    ) -> Result<Rollout, SyncError> {
        let (group, resource) = (self.parent.ar.group.as_str(), self.parent.ar.plural.as_str());
        let selector = revision::labels(store.label_keys, group, resource, selector_labels)
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(",");
        let list = self
            .revisions_api(store, parent)
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| SyncError::kube("listing the parent's ControllerRevisions", e))?;
        let parent_uid = meta_str(parent, "uid");
        let mut revisions: Vec<Revision> = list
            .items
            .into_iter()
            .filter_map(|o| serde_json::to_value(o).ok())
            .filter(|o| controller_uid(o) == Some(parent_uid))
            .map(|o| Revision::from_object(&o))
            .collect();
        let patch = revision::parent_patch(parent, &store.field_paths);
        let name = revision::revision_name(resource, group, parent_uid, &patch);
        let latest = latest_revision(&mut revisions, name, patch);
        // desired_at[revision][child type]
        let mut desired_at: Vec<Vec<Vec<Value>>> = Vec::with_capacity(revisions.len());
        for (i, rev) in revisions.iter().enumerate() {
            if i == latest {
                desired_at.push(desired.to_vec());
                continue;
            }
            if rev.is_empty() {
                desired_at.push(vec![Vec::new(); self.children.len()]);
                continue;
            }
            let old_parent = std::sync::Arc::new(revision::parent_at(parent, &rev.patch, &store.field_paths));
            let req = SyncRequest { parent: old_parent.clone(), ..request.clone() };
            let (answer, elapsed) = hook.sync_as(HookKind::Sync, req, &self.dialects.sync).await;
            self.ctx.metrics.hook_call(&self.name, HookKind::Sync.as_str(), elapsed, answer.is_ok());
            let response = answer
                .map_err(|e| SyncError::new(SyncReason::HookError, format!("revision {}: {e}", rev.name)))?
                .response;
            let types = self.children.iter().map(|t| &t.res);
            desired_at.push(validate_children(types, self.parent.namespaced, &old_parent, response.children)?);
        }
        let (mut updated, mut total, mut next, mut moved) = (0, 0, None, Vec::new());
        for (i, t) in self.children.iter().enumerate() {
            if !t.rolling() {
                continue;
            }
            let per_revision = desired_at
                .iter()
                .map(|d| d[i].iter().map(|c| decorate(parent, selector_labels, c)).collect())
                .collect();
            let outcome = revision::roll(
                &mut revisions,
                latest,
                TypeRollout {
                    group: (t.res.ar.group.clone(), t.res.ar.kind.clone()),
                    method: t.method,
                    checks: t.checks.as_ref(),
                    observed: &observed[i],
                    desired: per_revision,
                },
            );
            desired[i] = outcome.desired;
            updated += outcome.updated;
            total += outcome.total;
            if next.is_none() {
                next = outcome.next.map(|n| format!("{} {n}", t.res.ar.kind));
            }
            moved.extend(outcome.moved.map(|n| format!("{} {n}", t.res.ar.kind)));
        }
        let condition = revision::updated_condition(&revisions[latest].name, updated, total, next.as_deref());
        Ok(Rollout { revisions, latest, condition, moved })
    }

    /// Writes a rollout step's intent: the latest revision first (it gains children), then the old ones
    /// (they lose them; an old one left with none is deleted). Every write is conditioned on the
    /// resourceVersion read, so two writers cannot interleave.
    pub(super) async fn write_revisions(
        &self,
        store: &RevisionStore,
        parent: &Value,
        selector_labels: &Map<String, Value>,
        r: &Rollout,
    ) -> Result<(), SyncError> {
        let api = self.revisions_api(store, parent);
        let latest = &r.revisions[r.latest];
        match &latest.stored {
            None => {
                let (group, resource) = (self.parent.ar.group.as_str(), self.parent.ar.plural.as_str());
                let labels = revision::labels(store.label_keys, group, resource, selector_labels);
                let body = revision_object(
                    &store.res.ar.api_version,
                    latest,
                    self.revisions_namespace(parent),
                    labels,
                    parent,
                );
                api.create(&PostParams::default(), &to_dynamic(body, SyncReason::InternalError)?)
                    .await
                    .map_err(|e| SyncError::kube(&format!("creating ControllerRevision {}", latest.name), e))?;
            }
            Some(stored) if latest.needs_write() => {
                let mut body = stored.clone();
                body["children"] = latest.children_value();
                api.replace(&latest.name, &PostParams::default(), &to_dynamic(body, SyncReason::InternalError)?)
                    .await
                    .map_err(|e| SyncError::kube(&format!("updating ControllerRevision {}", latest.name), e))?;
            }
            Some(_) => {}
        }
        for (i, rev) in r.revisions.iter().enumerate() {
            let Some(stored) = rev.stored.as_ref().filter(|_| i != r.latest) else { continue };
            if rev.is_empty() {
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: None,
                        resource_version: Some(meta_str(stored, "resourceVersion").to_string()),
                    }),
                    ..Default::default()
                };
                match api.delete(&rev.name, &dp).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(SyncError::kube(&format!("deleting ControllerRevision {}", rev.name), e)),
                }
            } else if rev.needs_write() {
                let mut body = stored.clone();
                body["children"] = rev.children_value();
                api.replace(&rev.name, &PostParams::default(), &to_dynamic(body, SyncReason::InternalError)?)
                    .await
                    .map_err(|e| SyncError::kube(&format!("updating ControllerRevision {}", rev.name), e))?;
            }
        }
        for m in &r.moved {
            let msg = format!("{m} moves to revision {}", latest.name);
            self.ctx.recorder.record_as(&self.name, parent, "Normal", "RollingUpdate", &msg).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rev(name: &str, revision: i64) -> Revision {
        Revision { name: name.into(), patch: json!({}), revision, children: BTreeMap::new(), stored: None }
    }

    #[test]
    fn the_latest_revision_is_found_or_added_after_the_others() {
        let mut revs = vec![rev("a", 1), rev("b", 4)];
        assert_eq!(latest_revision(&mut revs, "a".into(), json!({})), 0);
        assert_eq!(revs.len(), 2);
        assert_eq!(latest_revision(&mut revs, "c".into(), json!({"spec": {"v": 2}})), 2);
        assert_eq!((revs[2].revision, &revs[2].patch), (5, &json!({"spec": {"v": 2}})));
        let mut none = Vec::new();
        assert_eq!(latest_revision(&mut none, "x".into(), json!({})), 0);
        assert_eq!(none[0].revision, 1);
    }

    #[test]
    fn a_revision_object_is_owned_by_its_parent() {
        let parent = json!({"apiVersion": "x/v1", "kind": "P", "metadata": {"name": "p", "uid": "pu"}});
        let mut labels = Map::new();
        labels.insert("app".into(), json!("a"));
        let o = revision_object("metacontroller.k8s.io/v1alpha1", &rev("p-1", 3), "ns", labels, &parent);
        assert_eq!(o["apiVersion"], "metacontroller.k8s.io/v1alpha1");
        assert_eq!(o["metadata"]["ownerReferences"], json!([controller_owner_reference(&parent)]));
        assert_eq!((o["revision"].clone(), o["metadata"]["namespace"].clone()), (json!(3), json!("ns")));
        assert_eq!(o["metadata"]["labels"], json!({"app": "a"}));
    }

    #[test]
    fn the_updated_condition_joins_the_status() {
        let cond = json!({"type": "Updated", "status": "True", "reason": "RolloutComplete", "message": "m"});
        let parent = json!({"status": {"kept": 1}});
        let s = status_with_condition(None, &parent, cond.clone(), "2026-01-01T00:00:00Z");
        assert_eq!(s["kept"], json!(1), "the parent's status when the hook gave none");
        assert_eq!(s["conditions"][0]["type"], json!("Updated"));
        let s = status_with_condition(Some(json!({"own": 2})), &parent, cond.clone(), "t");
        assert_eq!((s.get("kept"), &s["own"]), (None, &json!(2)));
        let s = status_with_condition(Some(json!("bad")), &parent, cond, "t");
        assert!(s.is_object(), "a non-object status is replaced");
    }
}
