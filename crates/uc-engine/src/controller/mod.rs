//! A parent controller: one per UniversalController object. It watches the parent and child types
//! through the shared informers, queues parents, and reconciles each one (`reconcile.rs`):
//! finalizer (`finalizer.rs`) → claim children (`claim.rs`) → related resources (`related.rs`) → hook →
//! validate (`validate.rs`) → rollout (`rollout.rs`) → plan (`crate::plan`) → execute (`execute.rs`)
//! → status (`status.rs`). A hook failure changes nothing in the cluster.

mod claim;
mod errors;
mod execute;
mod finalizer;
mod reconcile;
mod related;
mod rollout;
mod shared;
mod sources;
mod status;
mod validate;
mod written;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kube::api::Api;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::task::JoinHandle;
use uc_api::controller::{UniversalControllerSpec, UpdateMethod, UpdateStrategy};
use uc_api::meta::meta_str;

pub use claim::CONTROLLER_UID_LABEL;
pub use errors::{SourceProblem, StartError, StartReason, SyncError, SyncReason};
pub use shared::Ctx;
use shared::{ChildType, RevisionStore, Shared};

use crate::hooks::{HookError, HookImpl};
use crate::informer::{ObjKey, Subscription, key_of};
use crate::queue::WorkQueue;

/// A running controller; stops when dropped.
pub struct Running {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    _subscriptions: Vec<Subscription>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shared.queue.shutdown();
        for t in &self.tasks {
            t.abort();
        }
        self.shared.ctx.metrics.remove_controller(&self.shared.name);
    }
}

impl Running {
    /// Whether every informer has synced and workers run.
    pub fn is_synced(&self) -> bool {
        self.shared.synced.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Parents whose last reconcile failed, with the error.
    pub fn failures(&self) -> BTreeMap<ObjKey, String> {
        self.shared.failures.lock().clone()
    }

    /// The first problem with a hook's source (hot reload), if any.
    pub fn source_problem(&self) -> Option<SourceProblem> {
        self.shared.source_problems.lock().values().next().cloned()
    }

    /// Parents the controller sees.
    pub fn parents(&self) -> usize {
        self.shared.parents.len()
    }

    /// Open the queue depth to callers (tests, status).
    pub fn queue_len(&self) -> usize {
        self.shared.queue.len()
    }
}

async fn js_source(ctx: &Ctx, hook: &uc_api::controller::Hook) -> Result<Option<String>, StartError> {
    let Some(r) = hook.javascript.as_ref().and_then(|j| j.config_map_ref.as_ref()) else { return Ok(None) };
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(ctx.client.clone(), &r.namespace);
    let cm = api.get(&r.name).await.map_err(|e| {
        StartError::new(StartReason::HookUnavailable, format!("configMap {}/{}: {e}", r.namespace, r.name))
    })?;
    cm.data.and_then(|d| d.get(&r.key).cloned()).map(Some).ok_or_else(|| {
        StartError::new(
            StartReason::HookUnavailable,
            format!("configMap {}/{} has no key {:?}", r.namespace, r.name, r.key),
        )
    })
}

async fn build_hook(
    ctx: &Ctx,
    hook: &uc_api::controller::Hook,
    which: &str,
    controller: &str,
) -> Result<HookImpl, StartError> {
    let source = js_source(ctx, hook).await?;
    // Short names in a hook's URL are of the default namespace (a UniversalController has none).
    let resolver = ctx.names.as_ref().map(|n| n.resolver("default")).unwrap_or_else(crate::names::Resolver::system);
    HookImpl::from_spec(hook, source, &ctx.natives, resolver, controller).map_err(|e| {
        let reason =
            if matches!(e, HookError::Config(_)) { StartReason::InvalidSpec } else { StartReason::HookUnavailable };
        StartError::new(reason, format!("hooks.{which}: {e}"))
    })
}

/// Starts the controller of a UniversalController object.
pub async fn start(ctx: Arc<Ctx>, uc: Value) -> Result<Running, StartError> {
    let name = uc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    let spec: UniversalControllerSpec = serde_json::from_value(uc.get("spec").cloned().unwrap_or(Value::Null))
        .map_err(|e| StartError::new(StartReason::InvalidSpec, format!("spec: {e}")))?;
    let sync_spec = spec
        .hooks
        .sync
        .clone()
        .ok_or_else(|| StartError::new(StartReason::InvalidSpec, "spec.hooks.sync is required"))?;
    let parent = ctx
        .discovery
        .resolve(&spec.parent_resource.api_version, &spec.parent_resource.resource)
        .await
        .map_err(|m| StartError::new(StartReason::UnknownResource, format!("spec.parentResource: {m}")))?;
    let mut child_res = Vec::new();
    for (i, c) in spec.child_resources.iter().enumerate() {
        let res = ctx
            .discovery
            .resolve(&c.api_version, &c.resource)
            .await
            .map_err(|m| StartError::new(StartReason::UnknownResource, format!("spec.childResources[{i}]: {m}")))?;
        if parent.namespaced && !res.namespaced {
            return Err(StartError::new(
                StartReason::InvalidSpec,
                format!("spec.childResources[{i}]: a namespaced parent cannot have cluster-scoped children"),
            ));
        }
        let method = UpdateStrategy::method_of(c.update_strategy.as_ref());
        let checks = c.update_strategy.as_ref().and_then(|s| s.status_checks.clone());
        child_res.push((res, method, checks));
    }
    let revisions = if child_res
        .iter()
        .any(|(_, m, _)| matches!(m, UpdateMethod::RollingRecreate | UpdateMethod::RollingInPlace))
    {
        let res = ctx.discovery.resolve(uc_api::controller::API_VERSION, "controllerrevisions").await.map_err(|m| {
            StartError::new(StartReason::UnknownResource, format!("rolling update strategies keep their state in ControllerRevisions: {m} (install it: uc crds | kubectl apply -f -)"))
        })?;
        let mut field_paths =
            spec.parent_resource.revision_history.as_ref().map(|h| h.field_paths.clone()).unwrap_or_default();
        if let Some(i) = field_paths.iter().position(|p| p.split('.').any(str::is_empty)) {
            return Err(StartError::new(
                StartReason::InvalidSpec,
                format!(
                    "spec.parentResource.revisionHistory.fieldPaths[{i}]: {:?} is not a dotted field path",
                    field_paths[i]
                ),
            ));
        }
        if field_paths.is_empty() {
            field_paths.push("spec".into());
        }
        Some(RevisionStore { res, field_paths })
    } else {
        None
    };
    let sync = build_hook(&ctx, &sync_spec, "sync", &name).await?;
    let finalize = match &spec.hooks.finalize {
        Some(h) => Some(build_hook(&ctx, h, "finalize", &name).await?),
        None => None,
    };
    let customize = match &spec.hooks.customize {
        Some(h) => Some(build_hook(&ctx, h, "customize", &name).await?),
        None => None,
    };
    let parents = ctx.hub.acquire(&parent.ar);
    let children = child_res
        .into_iter()
        .map(|(res, method, checks)| ChildType { informer: ctx.hub.acquire(&res.ar), res, method, checks })
        .collect();
    let shared = Arc::new(Shared {
        finalizer: format!("{}/{}", uc_api::controller::GROUP, name),
        name,
        uc,
        spec,
        parent,
        parents,
        children,
        revisions,
        sync,
        finalize,
        customize,
        queue: WorkQueue::default(),
        ctx: ctx.clone(),
        related_rules: Arc::new(Mutex::new(HashMap::new())),
        related_sources: Mutex::new(HashMap::new()),
        failures: Mutex::new(BTreeMap::new()),
        synced: Default::default(),
        written: Default::default(),
        ssa_unsupported: Default::default(),
        source_problems: Default::default(),
    });
    let mut tasks = Vec::new();
    let mut subscriptions = Vec::new();
    let (sub, mut rx) = shared.parents.subscribe();
    subscriptions.push(sub);
    let s = shared.clone();
    tasks.push(tokio::spawn(async move {
        while let Some(ch) = rx.recv().await {
            let key = key_of(&ch.object);
            if ch.deleted {
                // Nothing about a deleted parent outlives it.
                s.written.forget(meta_str(&ch.object, "uid"));
                s.related_rules.lock().remove(&key);
            }
            s.queue.add(key);
        }
    }));
    for i in 0..shared.children.len() {
        let (sub, mut rx) = shared.children[i].informer.subscribe();
        subscriptions.push(sub);
        let s = shared.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(ch) = rx.recv().await {
                if ch.deleted {
                    s.written.forget(meta_str(&ch.object, "uid"));
                }
                for k in s.parents_of_child(&ch) {
                    s.queue.add(k);
                }
            }
        }));
    }
    let s = shared.clone();
    tasks.push(tokio::spawn(async move {
        s.parents.wait_synced().await;
        for c in &s.children {
            c.informer.wait_synced().await;
        }
        for p in s.parents.list(None) {
            s.queue.add(key_of(&p));
        }
        s.synced.store(true, std::sync::atomic::Ordering::Release);
        let mut workers = Vec::new();
        for _ in 0..s.ctx.workers.max(1) {
            let s = s.clone();
            workers.push(tokio::spawn(async move { s.work().await }));
        }
        let resync = s.spec.resync_period_seconds.filter(|p| *p > 0.0).map(Duration::from_secs_f64);
        if let Some(period) = resync {
            loop {
                tokio::time::sleep(period).await;
                for p in s.parents.list(None) {
                    s.queue.add(key_of(&p));
                }
            }
        }
        for w in workers {
            let _ = w.await;
        }
    }));
    tasks.extend(sources::watch(&shared));
    Ok(Running { shared, tasks, _subscriptions: subscriptions })
}
