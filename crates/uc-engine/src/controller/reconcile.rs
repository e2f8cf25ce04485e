//! One reconcile of one parent, as a pipeline: finalizer step → claim → related resources → hook →
//! validate → rollout → plan → execute → a decorator's labels and annotations → status. Everything that can fail is asked before anything is
//! written: a hook failure or an invalid answer changes nothing in the cluster.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use uc_api::hook::{ObjectMap, SyncRequest};
use uc_api::meta::{finalizers, is_deleting, meta_str};

use super::claim::{claim, decorator_claim, selector_for};
use super::decorate::{mark_attachment, metadata_patch};
use super::errors::{SyncError, SyncReason};
use super::finalizer::{FinalizerStep, finalizer_step};
use super::rollout::status_with_condition;
use super::shared::Shared;
use super::status::status_to_write;
use super::validate::validate_children;
use crate::flavor::Flavor;
use crate::hooks::HookKind;
use crate::hooks::dialect::Answer;
use crate::informer::{Obj, ObjKey};
use crate::plan::{Action, plan};
use crate::queue::Priority;

/// A parent's children as claimed: the adoptions and releases to carry out, the children it owns per
/// type (observed), and the same as the hook's request shows them.
#[derive(Default)]
struct Claimed {
    actions: Vec<Action>,
    observed: Vec<Vec<Obj>>,
    children: BTreeMap<String, ObjectMap>,
}

/// How long a deleting parent waits before its finalize hook is asked again.
const FINALIZE_RETRY: Duration = Duration::from_secs(2);

/// Conflicts in a row retried quietly before one is reported.
const CONFLICT_RETRIES: u32 = 5;

/// The longest resync a hook may ask for.
const MAX_RESYNC_SECONDS: f64 = 86_400.0;

/// How many parents a controller reconciles at once: its own `maxConcurrentReconciles`, else the
/// engine's workers; at least one.
fn worker_limit(own: Option<u32>, engine: usize) -> usize {
    own.map_or(engine, |n| n as usize).max(1)
}

impl Shared {
    /// Reconciles queued parents, up to `workers` at once (each parent one at a time: the queue hands a
    /// key to one taker until it is done). A task per reconcile rather than a standing task per worker:
    /// an idle controller holds one task, not `workers` of them.
    pub(super) async fn work(self: Arc<Self>) {
        let mut running = tokio::task::JoinSet::new();
        let limit = worker_limit(self.spec.max_concurrent_reconciles, self.ctx.workers);
        loop {
            while running.try_join_next().is_some() {}
            if running.len() >= limit {
                running.join_next().await;
                continue;
            }
            let Some((key, priority)) = self.queue.get().await else { break };
            let s = self.clone();
            running.spawn(async move { s.work_on(key, priority).await });
        }
        while running.join_next().await.is_some() {}
    }

    /// Reconciles one parent, retrying a failure with backoff.
    async fn work_on(&self, key: ObjKey, priority: Priority) {
        // Not after the controller stopped: its gauge is gone then, and stays gone.
        self.queue.report_len(|depth| self.ctx.metrics.set_queue_depth(&self.name, depth));
        if self.echoes.hold(&key, priority) {
            // The caches lack one of its last writes: the event bringing it queues it again.
            self.ctx.metrics.reconcile(&self.name, "awaiting_echo");
            self.queue.done(&key);
            return;
        }
        let _under_way = self.ctx.metrics.reconcile_started();
        let started = std::time::Instant::now();
        // A panic (a native hook's, or the engine's own) fails this reconcile, not the controller: the
        // key is released and retried with backoff like any failure.
        let result = uc_api::panics::unwound(self.reconcile(&key)).await.unwrap_or_else(|panic| {
            Err(SyncError::new(SyncReason::InternalError, format!("the reconcile panicked: {panic}")))
        });
        self.ctx.metrics.reconcile_took(&self.name, started.elapsed());
        match result {
            Ok(()) => {
                self.queue.forget(&key);
                self.failures.lock().remove(&key);
                self.ctx.metrics.reconcile(&self.name, "success");
            }
            Err(e) if e.reason == SyncReason::Conflict && self.queue.failures(&key) < CONFLICT_RETRIES => {
                // Someone wrote the object since it was read: the retry reads it again. Routine.
                tracing::debug!(controller = %self.name, parent = %crate::informer::key_text(&key), error = %e.message, "conflict; retrying");
                self.ctx.metrics.reconcile(&self.name, "conflict");
                self.queue.add_rate_limited(key.clone());
            }
            Err(e) if e.reason == SyncReason::NotLeader => {
                // Leadership lost: the controller is stopping; the next leader reconciles this.
                tracing::debug!(controller = %self.name, parent = %crate::informer::key_text(&key), error = %e.message, "not the leader");
                self.queue.add_rate_limited(key.clone());
            }
            Err(e) => {
                let reason = e.reason.as_str();
                tracing::warn!(controller = %self.name, parent = %crate::informer::key_text(&key), reason = %reason, error = %e.message, "sync failed");
                self.ctx.metrics.reconcile(&self.name, "error");
                self.failures.lock().insert(key.clone(), e.to_string());
                if let Some(p) = self.parents.get(&key).filter(|_| !e.reported) {
                    let (reason, message) = e.event(self.flavor);
                    self.ctx.recorder.record_as(&self.name, &p, "Warning", reason, &message).await;
                }
                self.queue.add_rate_limited(key.clone());
            }
        }
        self.queue.done(&key);
    }

    /// Whether the parent the cache holds still exists on the API server (the same object: its uid).
    async fn parent_still_there(&self, parent: &serde_json::Value) -> Result<bool, SyncError> {
        let api = self.api(&self.parent, meta_str(parent, "namespace"));
        match api.get_opt(meta_str(parent, "name")).await {
            Ok(Some(live)) => Ok(live.metadata.uid.as_deref() == Some(meta_str(parent, "uid"))),
            Ok(None) => Ok(false),
            Err(e) => Err(SyncError::kube("reading the parent", e)),
        }
    }

    /// False when a child of the parent at `key` was deleted since it was last confirmed and the parent
    /// is gone from the server (or replaced); true otherwise.
    async fn confirmed_if_vanished(&self, key: &ObjKey, parent: &serde_json::Value) -> Result<bool, SyncError> {
        if !self.vanished.take(key) {
            return Ok(true);
        }
        match self.parent_still_there(parent).await {
            Ok(there) => Ok(self.vanished.confirmed(key, there)),
            Err(e) => {
                self.vanished.mark([key.clone()]);
                Err(e)
            }
        }
    }

    /// Claims each child type's children for `parent`: the children it owns (as the hook sees them, and
    /// as observed) and the adoptions and releases to carry out with the plan.
    fn claim_children(
        &self,
        parent: &Obj,
        selector: &uc_api::LabelSelector,
        parent_uid: &str,
        deleting: bool,
        dialect: &crate::hooks::dialect::Dialect,
    ) -> Claimed {
        let mut out = Claimed::default();
        for t in &self.children {
            let candidates = self.child_candidates(t, parent, selector, parent_uid);
            let c = if self.flavor == Flavor::Decorator {
                decorator_claim(&self.name, candidates)
            } else {
                let generated = self.flavor == Flavor::Universal && self.spec.generate_selector == Some(true);
                claim(parent_uid, deleting, selector, candidates, generated)
            };
            out.actions.extend(c.actions);
            let map: ObjectMap = c
                .mine
                .iter()
                .map(|o| (dialect.object_key(self.parent.namespaced, t.res.namespaced, o), Arc::clone(o)))
                .collect();
            out.children.insert(t.res.type_key(), map);
            out.observed.push(c.mine);
        }
        out
    }

    /// Calls the hook (recording the exchange when recording is on) and counts the call.
    async fn ask(
        &self,
        kind: HookKind,
        hook: &crate::hooks::HookImpl,
        request: SyncRequest,
        dialect: &crate::hooks::dialect::Dialect,
        key: &ObjKey,
    ) -> Result<Answer, SyncError> {
        let (answer, elapsed) = if self.recorder.enabled() {
            let (answer, elapsed, exchange) = hook.sync_traced(kind, request, dialect).await;
            self.recorder.record(kind.as_str(), key, exchange, elapsed);
            (answer, elapsed)
        } else {
            hook.sync_as(kind, request, dialect).await
        };
        self.ctx.metrics.hook_call(&self.name, kind.as_str(), elapsed, answer.is_ok());
        Ok(answer?)
    }

    /// Writes a decorator's labels and annotations on the parent (when they changed), then its status on
    /// top of them (at the resourceVersion the labels' patch left).
    async fn write_parent(
        &self,
        parent: &Obj,
        metadata: Option<serde_json::Value>,
        status: Option<serde_json::Value>,
    ) -> Result<(), SyncError> {
        match metadata {
            Some(patch) => {
                let mut patched = (**parent).clone();
                if let Some(rv) = self.patch_parent_metadata(parent, patch).await? {
                    patched["metadata"]["resourceVersion"] = serde_json::Value::String(rv);
                }
                self.write_status(&Arc::new(patched), status).await
            }
            None => self.write_status(parent, status).await,
        }
    }

    /// What follows a written sync: a finalized parent lets go of it (one still finalizing is asked
    /// again), and a resync the hook asked for is queued.
    async fn after_sync(
        &self,
        key: &ObjKey,
        finalizing: bool,
        finalized: bool,
        resync_after: Option<f64>,
    ) -> Result<(), SyncError> {
        if finalizing && finalized {
            if let Some(p) = self.parents.get(key) {
                self.set_finalizer(&p, false).await?;
            }
        } else if finalizing {
            self.queue.add_after(key.clone(), FINALIZE_RETRY);
        }
        if let Some(after) = resync_after.filter(|s| *s > 0.0 && s.is_finite()) {
            self.queue.add_after(key.clone(), Duration::from_secs_f64(after.min(MAX_RESYNC_SECONDS)));
        }
        Ok(())
    }

    pub(super) async fn reconcile(&self, key: &ObjKey) -> Result<(), SyncError> {
        let Some(parent) = self.parents.get(key) else { return Ok(()) };
        if !self.confirmed_if_vanished(key, &parent).await? {
            // Gone (or replaced) on the server: its children are not to be made again.
            return Ok(());
        }
        let decorator = self.flavor == Flavor::Decorator;
        let deleting = is_deleting(&parent);
        let has_finalizer = finalizers(&parent).contains(&self.finalizer);
        let selected = self.selects(&parent);
        // A parent the selectors do not select is not this controller's. One that carries its
        // finalizer was: a decorator's target that opted out is finalized; another parent is let go
        // (its finalizer removed), unless it is being deleted, when its finalize hook still runs.
        if !selected && !has_finalizer {
            return Ok(());
        }
        if !selected && !decorator && !deleting {
            return self.set_finalizer(&parent, false).await;
        }
        let finalizing = deleting || !selected;
        match finalizer_step(finalizing, has_finalizer, self.finalize.is_some()) {
            FinalizerStep::Done => return Ok(()),
            FinalizerStep::Set(present) => return self.set_finalizer(&parent, present).await,
            FinalizerStep::Sync => {}
        }
        // A decorator claims by annotation, and a controller without child types claims nothing: neither
        // needs a selector (a PersistentVolumeClaim's `spec.selector` picks volumes, not children).
        let (selector, selector_labels) = if decorator || self.children.is_empty() {
            Default::default()
        } else {
            selector_for(self.spec.generate_selector == Some(true), &parent)?
        };
        let parent_uid = meta_str(&parent, "uid").to_string();
        let (kind, hook, dialect) = match (&self.finalize, finalizing) {
            (Some(f), true) => (HookKind::Finalize, f, self.dialects.finalize),
            _ => (HookKind::Sync, &self.sync, self.dialects.sync),
        };

        // Claim: adoptions and releases are carried out after a good answer, with the plan.
        let Claimed { mut actions, observed, children: children_req } =
            self.claim_children(&parent, &selector, &parent_uid, deleting, &dialect);
        let related = match &self.customize {
            Some(h) => self.related_for(key, &parent, h, &dialect).await?,
            None => BTreeMap::new(),
        };
        let request = SyncRequest {
            controller: self.uc.clone(),
            parent: parent.clone(),
            children: children_req,
            related,
            finalizing,
        };
        // A rollout asks the hook again about old revisions, starting from this request.
        let rollout_request = (self.revisions.is_some() && !finalizing).then(|| request.clone());
        let Answer { response, labels, annotations } = self.ask(kind, hook, request, &dialect, key).await?;
        let types = self.children.iter().map(|t| &t.res);
        let mut desired = validate_children(types, self.parent.namespaced, &parent, response.children)?;
        if decorator {
            for c in desired.iter_mut().flatten() {
                mark_attachment(c, &self.name);
            }
        }
        let mut status = response.status;
        let rollout = match (&self.revisions, &rollout_request) {
            (Some(store), Some(request)) => {
                let r = self.rollout(store, &parent, &selector_labels, &observed, &mut desired, request, hook).await?;
                let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                status = Some(status_with_condition(status.take(), &parent, r.condition.clone(), &now));
                Some(r)
            }
            _ => None,
        };
        // Fail before any write on a status that cannot be written.
        let status = status_to_write(&parent, status, self.parent.status_subresource)?;

        // A child deleted while the hook answered (its parent deleted meanwhile and its dependents
        // collected): the parent is confirmed on the server before anything is made again.
        if !self.confirmed_if_vanished(key, &parent).await? {
            return Ok(());
        }
        // The answer is good: now, and only now, change the cluster. A rollout's intent goes first.
        if let (Some(r), Some(store)) = (&rollout, &self.revisions) {
            self.write_revisions(store, &parent, &selector_labels, r).await?;
        }
        for ((t, observed), desired) in self.children.iter().zip(&observed).zip(desired) {
            actions.extend(plan(t.method, &parent, &selector_labels, observed, desired));
        }
        self.execute_all(&parent, actions, status.as_ref()).await?;
        self.write_parent(&parent, metadata_patch(&parent, &labels, &annotations), status).await?;
        self.after_sync(key, finalizing, response.finalized == Some(true), response.resync_after_seconds).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controllers_own_limit_wins_over_the_engines() {
        assert_eq!(worker_limit(None, 64), 64);
        assert_eq!(worker_limit(Some(2), 64), 2);
        assert_eq!(worker_limit(Some(0), 64), 1, "at least one");
        assert_eq!(worker_limit(None, 0), 1);
    }
}
