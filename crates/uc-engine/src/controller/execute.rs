//! Carrying out a plan's actions against the API server: creates, updates (server-side apply when
//! the cluster has it), deletes conditioned on the uid, adoptions and releases conditioned on the
//! resourceVersion.

use std::sync::atomic::Ordering;
use std::time::Instant;

use kube::Resource;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy};
use serde_json::{Value, json};
use uc_api::Pointer;
use uc_api::meta::{controller_owner_reference, meta_str};

use super::echoes::Written;
use super::errors::{SyncError, SyncReason};
use super::shared::{Shared, to_dynamic};
use super::written::digest;
use crate::apply;
use crate::informer::{Obj, key_of};
use crate::plan::Action;

/// The merge patch that adopts `obj` for `parent` (adds a controller ownerReference) or releases it
/// (removes the parent's), conditioned on the child's resourceVersion and uid. Adopts when the child
/// does not name the parent yet.
pub(super) fn ownership_patch(parent: &Value, obj: &Value) -> (bool, Value) {
    let parent_uid = meta_str(parent, "uid");
    let mut refs: Vec<Value> =
        obj.at("/metadata/ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
    let before = refs.len();
    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(parent_uid));
    let adopt = refs.len() == before;
    if adopt {
        refs.push(controller_owner_reference(parent));
    }
    let patch = json!({"metadata": {
        "resourceVersion": meta_str(obj, "resourceVersion"), "uid": meta_str(obj, "uid"), "ownerReferences": refs,
    }});
    (adopt, patch)
}

impl Shared {
    /// Carries out a plan's actions in order; the first that fails stops it. A built-in ReplicaSet's
    /// (or ReplicationController's) refused pod is reported in its status too, as kube's controller
    /// reports it: `status` (what the hook computed) with a `ReplicaFailure` condition.
    pub(super) async fn execute_all(
        &self,
        parent: &Obj,
        actions: Vec<Action>,
        status: Option<&Value>,
    ) -> Result<(), SyncError> {
        for action in actions {
            let Err(e) = self.execute(parent, action).await else { continue };
            let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let failed = e.refusal.as_deref().filter(|_| e.reported).and_then(|refusal| {
                super::kube_events::replica_failure(parent, status, refusal, &now)
                    .filter(|s| parent.get("status") != Some(s))
            });
            if let Some(failed) = failed
                && let Err(w) = self.write_status(parent, Some(failed)).await
            {
                tracing::debug!(controller = %self.name, error = %w.message, "writing the ReplicaFailure condition");
            }
            return Err(e);
        }
        Ok(())
    }

    pub(super) async fn execute(&self, parent: &Value, action: Action) -> Result<(), SyncError> {
        // A create or update is expected back as a watch event (`echoes`) unless it fails or the
        // server stored nothing new.
        let echo = match &action {
            Action::Create(o) | Action::Update(o) => self
                .child_index_of(o)
                .map(|i| (Written::Child(i, key_of(o)), meta_str(o, "resourceVersion").to_string())),
            _ => None,
        };
        if let Some((e, _)) = &echo {
            self.echoes.expect(&key_of(parent), e.clone(), Instant::now());
        }
        let kube_events = super::kube_events::records_kube_events(&self.uc);
        let event = kube_events.then(|| {
            let before = match &action {
                Action::Update(o) => self.child_type_of(o).and_then(|t| t.informer.get(&key_of(o))),
                _ => None,
            };
            super::kube_events::about(parent, &action, before.as_deref())
        });
        let creating = match &action {
            Action::Create(o) if kube_events => Some(meta_str(o, "name").to_string()),
            _ => None,
        };
        let mut r = self.carry_out(parent, action).await;
        let component = super::kube_events::component(&self.name);
        match (&mut r, event, creating) {
            (Ok(_), Some(Some((reason, message))), _) => {
                self.ctx.recorder.record_as(&component, parent, "Normal", reason, &message).await;
            }
            (Err(e), _, Some(name)) => {
                let said = e.refusal.as_deref().and_then(|r| super::kube_events::failed_create(parent, &name, r));
                if let Some((reason, message)) = said {
                    self.ctx.recorder.record_as(&component, parent, "Warning", reason, &message).await;
                    e.reported = true;
                }
            }
            _ => {}
        }
        if let Some((e, before)) = echo {
            self.echoes.settle(&e, &before, r.as_ref().ok().and_then(Option::as_deref));
        }
        r.map(|_| ())
    }

    /// Carries out one action; for a create or update, the resourceVersion the server stored.
    async fn carry_out(&self, parent: &Value, action: Action) -> Result<Option<String>, SyncError> {
        match action {
            Action::Create(obj) | Action::Update(obj) if self.child_type_of(&obj).is_none() => Err(SyncError::new(
                SyncReason::InvalidChild,
                format!("{} is not a child type", obj.get("kind").and_then(Value::as_str).unwrap_or_default()),
            )),
            Action::Create(obj) if self.use_server_side_apply() => self.server_side_apply(parent, obj, true).await,
            Action::Update(obj) if self.use_server_side_apply() => self.server_side_apply(parent, obj, false).await,
            Action::Create(obj) => {
                let t = self.child_type_of(&obj).map(|t| t.res.clone()).unwrap_or_else(|| self.parent.clone());
                let api = self.child_api(&t, meta_str(&obj, "namespace"));
                let name = meta_str(&obj, "name").to_string();
                let stored = api
                    .create(&PostParams::default(), &to_dynamic(obj, SyncReason::InvalidChild)?)
                    .await
                    .map_err(|e| SyncError::kube(&format!("creating {} {name}", t.ar.kind), e))?;
                Ok(stored.metadata.resource_version)
            }
            Action::Update(obj) => {
                let sent = digest(&obj);
                if self.written.already_written(&obj, sent) {
                    return Ok(None);
                }
                let t = self.child_type_of(&obj).map(|t| t.res.clone()).unwrap_or_else(|| self.parent.clone());
                let api = self.child_api(&t, meta_str(&obj, "namespace"));
                let name = meta_str(&obj, "name").to_string();
                let uid = meta_str(&obj, "uid").to_string();
                let stored = api
                    .replace(&name, &PostParams::default(), &to_dynamic(obj, SyncReason::InvalidChild)?)
                    .await
                    .map_err(|e| SyncError::kube(&format!("updating {} {name}", t.ar.kind), e))?;
                let rv = stored.metadata.resource_version.unwrap_or_default();
                self.written.remember(&uid, sent, rv.clone());
                Ok(Some(rv))
            }
            Action::Delete { name, namespace, uid } => {
                let t = self
                    .children
                    .iter()
                    .find(|t| {
                        t.informer.get(&(namespace.clone(), name.clone())).is_some_and(|o| meta_str(&o, "uid") == uid)
                    })
                    .map(|t| t.res.clone());
                let Some(t) = t else { return Ok(None) };
                let dp = DeleteParams {
                    preconditions: Some(Preconditions { uid: Some(uid), resource_version: None }),
                    propagation_policy: Some(PropagationPolicy::Background),
                    ..Default::default()
                };
                match self.child_api(&t, &namespace).delete(&name, &dp).await {
                    Ok(_) => Ok(None),
                    Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
                    Err(e) => Err(SyncError::kube(&format!("deleting {} {name}", t.ar.kind), e)),
                }
            }
            Action::Adopt(obj) | Action::Release(obj) => {
                let Some(t) = self.child_type_of(&obj).map(|t| t.res.clone()) else { return Ok(None) };
                let (adopt, patch) = ownership_patch(parent, &obj);
                self.child_api(&t, meta_str(&obj, "namespace"))
                    .patch(meta_str(&obj, "name"), &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(|e| {
                        let verb = if adopt { "adopting" } else { "releasing" };
                        SyncError::kube(&format!("{verb} {}", meta_str(&obj, "name")), e)
                    })?;
                Ok(None)
            }
        }
    }

    /// Creates (`create`: `obj` is the plan's new child) or updates a child with server-side apply; a
    /// cluster that answers 415 gets the client-side create or update from then on.
    async fn server_side_apply(&self, parent: &Value, obj: Value, create: bool) -> Result<Option<String>, SyncError> {
        let t = self.child_type_of(&obj).map(|t| t.res.clone()).unwrap_or_else(|| self.parent.clone());
        // The body is the desired object (with uc's annotation, which keeps the diff exact), never the
        // merge: with server-side apply the server merges, and owns the other fields' fate. A new child
        // is that object already (`apply::create_from`); an update's is made again from its annotation.
        let rebuilt = if create { None } else { apply::last_applied(&obj).map(apply::create_from) };
        let body = rebuilt.as_ref().unwrap_or(&obj);
        let name = meta_str(&obj, "name").to_string();
        let params = PatchParams::apply("uc").force();
        match self.raw_child_api(&t, meta_str(&obj, "namespace")).patch(&name, &params, &Patch::Apply(body)).await {
            Ok(stored) => Ok(stored.meta().resource_version.clone()),
            Err(kube::Error::Api(s)) if s.code == 415 => {
                tracing::warn!(controller = %self.name, "the cluster does not support server-side apply; using client-side apply");
                self.ssa_unsupported.store(true, Ordering::Release);
                let action = if meta_str(&obj, "resourceVersion").is_empty() {
                    Action::Create(obj)
                } else {
                    Action::Update(obj)
                };
                Box::pin(self.carry_out(parent, action)).await
            }
            Err(e) => Err(SyncError::kube(&format!("applying {} {name}", t.ar.kind), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adopting_and_releasing_children() {
        let parent = json!({"apiVersion": "x/v1", "kind": "P", "metadata": {"name": "p", "uid": "pu"}});
        let other = json!({"uid": "o", "kind": "Other"});
        let orphan =
            json!({"metadata": {"name": "c", "uid": "cu", "resourceVersion": "7", "ownerReferences": [other]}});
        let (adopt, patch) = ownership_patch(&parent, &orphan);
        assert!(adopt);
        assert_eq!(
            patch,
            json!({"metadata": {"resourceVersion": "7", "uid": "cu", "ownerReferences": [other, controller_owner_reference(&parent)]}})
        );
        let mut owned = orphan.clone();
        owned["metadata"]["ownerReferences"] = json!([other, controller_owner_reference(&parent)]);
        let (adopt, patch) = ownership_patch(&parent, &owned);
        assert!(!adopt);
        assert_eq!(patch["metadata"]["ownerReferences"], json!([other]), "only the parent's reference goes");
    }
}
