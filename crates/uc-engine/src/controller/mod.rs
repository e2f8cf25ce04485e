//! A parent controller: one per UniversalController, CompositeController or DecoratorController
//! object (a decorator runs one part per decorated type). It watches the parent and child types
//! through the shared informers, queues parents, and reconciles each one (`reconcile.rs`):
//! finalizer (`finalizer.rs`) → claim children (`claim.rs`) → related resources (`related.rs`) → hook →
//! validate (`validate.rs`) → rollout (`rollout.rs`) → plan (`crate::plan`) → execute (`execute.rs`)
//! → status (`status.rs`). A hook failure changes nothing in the cluster.

mod claim;
mod decorate;
mod echoes;
mod errors;
mod exec_files;
mod execute;
mod finalizer;
mod kube_events;
mod reconcile;
mod related;
mod rollout;
mod shared;
mod sources;
mod status;
mod tasks;
pub mod validate;
mod vanished;
mod written;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::task::JoinHandle;
use uc_api::controller::{StatusChecks, UniversalControllerSpec, UpdateMethod, UpdateStrategy};
use uc_api::{LabelSelector, Pointer};

pub use claim::CONTROLLER_UID_LABEL;
pub use errors::{SourceProblem, StartError, StartReason, SyncError, SyncReason};
pub use shared::Ctx;
use shared::{ChildType, Dialects, RevisionStore, Shared};
use sources::SourceObjects;

use crate::flavor::Flavor;
use crate::hooks::dialect::Dialect;
use crate::hooks::{HookError, HookImpl};
use crate::informer::{ObjKey, Subscription};
use crate::queue::WorkQueue;
use crate::raw::Projection;
use crate::resources::Resolved;

/// A running controller; stops when dropped. A DecoratorController of several resource types runs as
/// one part per type.
pub struct Running {
    parts: Vec<Part>,
}

/// One parent type of a running controller.
struct Part {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    _subscriptions: Vec<Subscription>,
}

impl Drop for Part {
    fn drop(&mut self) {
        self.shared.queue.shutdown();
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // The queues first: no worker reports a depth after the gauge is removed.
        for p in &self.parts {
            p.shared.queue.shutdown();
        }
        if let Some(p) = self.parts.first() {
            p.shared.ctx.metrics.remove_controller(&p.shared.name);
        }
    }
}

impl Running {
    /// Whether every informer has synced and workers run.
    pub fn is_synced(&self) -> bool {
        self.parts.iter().all(|p| p.shared.synced.load(std::sync::atomic::Ordering::Acquire))
    }

    /// Parents whose last reconcile failed, with the error.
    pub fn failures(&self) -> BTreeMap<ObjKey, String> {
        self.parts.iter().flat_map(|p| p.shared.failures.lock().clone()).collect()
    }

    /// The first problem with a hook's source (hot reload), if any.
    pub fn source_problem(&self) -> Option<SourceProblem> {
        self.parts.iter().find_map(|p| p.shared.source_problems.lock().values().next().cloned())
    }

    /// Parents the controller sees (those its selectors select).
    pub fn parents(&self) -> usize {
        self.parts.iter().map(|p| p.shared.parent_count()).sum()
    }

    /// Reconciles only parents in `namespaces` (None: every namespace); parents that come into
    /// scope are synced at once, those that leave it are let go at their next sync.
    pub fn set_target_namespaces(&self, namespaces: Option<std::collections::BTreeSet<String>>) {
        for p in &self.parts {
            let changed = *p.shared.namespaces.read() != namespaces;
            if changed {
                *p.shared.namespaces.write() = namespaces.clone();
                for key in p.shared.parents.keys() {
                    p.shared.queue.add(key);
                }
            }
        }
    }

    /// Keeps the last `n` hook calls (the record-hooks annotation changed).
    pub fn set_record_capacity(&self, n: usize) {
        for p in &self.parts {
            p.shared.recorder.set_capacity(n);
        }
    }

    /// Open the queue depth to callers (tests, status).
    pub fn queue_len(&self) -> usize {
        self.parts.iter().map(|p| p.shared.queue.len()).sum()
    }
}

/// A hook of a controller, ready to call, and how it speaks.
/// `reader` reads the hook's source and credentials: the controller's service account.
async fn build_hook(
    (ctx, reader): (&Ctx, &kube::Client),
    spec: &UniversalControllerSpec,
    flavor: Flavor,
    hook: &uc_api::controller::Hook,
    which: &str,
    controller: &str,
    objects: &mut SourceObjects,
) -> Result<(HookImpl, Dialect), StartError> {
    let config = |e: HookError| StartError::new(StartReason::InvalidSpec, format!("spec.hooks.{which}: {e}"));
    let dialect = Dialect::new(flavor, hook).map_err(config)?;
    let source = match &hook.javascript {
        Some(js) => objects.source(reader, js).await.map_err(|m| StartError::new(StartReason::HookUnavailable, m))?,
        None => None,
    };
    let credentials = match &hook.webhook {
        Some(w) => {
            let url = crate::hooks::webhook::url_of(w).map_err(config)?;
            crate::hooks::credentials::resolve(Some(reader), w, &url, &spec.endpoint_configs).await.map_err(|m| {
                StartError::new(StartReason::HookUnavailable, format!("spec.hooks.{which}.webhook: {m}"))
            })?
        }
        None => Default::default(),
    };
    // Short names in a hook's URL are of the default namespace (a controller object has none).
    let resolver = ctx.names.as_ref().map(|n| n.resolver("default")).unwrap_or_else(crate::names::Resolver::system);
    let imp = HookImpl::from_spec(hook, source, credentials, (&ctx.natives, &ctx.exec_hooks), resolver, controller)
        .await
        .map_err(|e| {
            let reason =
                if matches!(e, HookError::Config(_)) { StartReason::InvalidSpec } else { StartReason::HookUnavailable };
            StartError::new(reason, format!("spec.hooks.{which}: {e}"))
        })?;
    Ok((imp, dialect))
}

/// A parent selector of the spec (`labelSelector`, or `annotationSelector` when `annotations`).
fn parent_selector(v: Option<&Value>, field: &str, annotations: bool) -> Result<Option<LabelSelector>, StartError> {
    let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(None) };
    let parsed = if annotations { LabelSelector::from_annotation_selector(v) } else { LabelSelector::from_value(v) };
    parsed.map(Some).map_err(|e| StartError::new(StartReason::InvalidSpec, format!("{field}: {e}")))
}

/// How a controller's spec fields are named in messages: a decorator's parent types are its
/// `resources`, its child types its `attachments`.
struct Fields {
    parent: String,
    children: &'static str,
}

/// Starts the controller of a UniversalController, CompositeController or DecoratorController object.
pub async fn start(ctx: Arc<Ctx>, controller: Value) -> Result<Running, StartError> {
    let kind = controller.get("kind").and_then(Value::as_str).unwrap_or("UniversalController");
    let flavor = Flavor::of_kind(kind).unwrap_or(Flavor::Universal);
    let raw = controller.get("spec").cloned().unwrap_or(Value::Null);
    let invalid = |e: serde_json::Error| StartError::new(StartReason::InvalidSpec, format!("spec: {e}"));
    let specs: Vec<(UniversalControllerSpec, Fields)> = match flavor {
        Flavor::Universal | Flavor::Composite => {
            let spec = serde_json::from_value(raw).map_err(invalid)?;
            vec![(spec, Fields { parent: "spec.parentResource".into(), children: "spec.childResources" })]
        }
        Flavor::Decorator => {
            let d: uc_api::metacontroller::DecoratorControllerSpec = serde_json::from_value(raw).map_err(invalid)?;
            if d.resources.is_empty() {
                return Err(StartError::new(StartReason::InvalidSpec, "spec.resources: name at least one resource"));
            }
            (d.parts().into_iter().enumerate())
                .map(|(i, s)| (s, Fields { parent: format!("spec.resources[{i}]"), children: "spec.attachments" }))
                .collect()
        }
    };
    let mut parts = Vec::new();
    let mut objects = SourceObjects::default();
    for (i, (spec, fields)) in specs.into_iter().enumerate() {
        parts.push(start_part(&ctx, &controller, flavor, spec, &fields, i == 0, &mut objects).await?);
    }
    Ok(Running { parts })
}

/// A part's hooks, built.
struct Hooks {
    sync: HookImpl,
    finalize: Option<HookImpl>,
    customize: Option<HookImpl>,
    dialects: Dialects,
}

/// Builds the sync hook and the optional finalize and customize hooks (each speaking the sync hook's
/// dialect unless it says otherwise).
async fn build_hooks(
    (ctx, reader): (&Ctx, &kube::Client),
    spec: &UniversalControllerSpec,
    flavor: Flavor,
    sync_spec: &uc_api::controller::Hook,
    controller: &str,
    objects: &mut SourceObjects,
) -> Result<Hooks, StartError> {
    let (sync, sync_dialect) = build_hook((ctx, reader), spec, flavor, sync_spec, "sync", controller, objects).await?;
    let finalize = match &spec.hooks.finalize {
        Some(h) => Some(build_hook((ctx, reader), spec, flavor, h, "finalize", controller, objects).await?),
        None => None,
    };
    let customize = match &spec.hooks.customize {
        Some(h) => Some(build_hook((ctx, reader), spec, flavor, h, "customize", controller, objects).await?),
        None => None,
    };
    let dialects = Dialects {
        sync: sync_dialect,
        finalize: finalize.as_ref().map(|(_, d)| *d).unwrap_or(sync_dialect),
        customize: customize.as_ref().map(|(_, d)| *d).unwrap_or(sync_dialect),
    };
    Ok(Hooks { sync, finalize: finalize.map(|(h, _)| h), customize: customize.map(|(h, _)| h), dialects })
}

/// The child types of a part, resolved and checked: namespaced parents have namespaced children, and
/// attachments (a decorator's) are not rolled.
async fn resolve_children(
    ctx: &Ctx,
    spec: &UniversalControllerSpec,
    fields: &Fields,
    parent: &Resolved,
    flavor: Flavor,
) -> Result<Vec<(Resolved, UpdateMethod, Option<StatusChecks>)>, StartError> {
    let mut child_res = Vec::new();
    for (i, c) in spec.child_resources.iter().enumerate() {
        let at = format!("{}[{i}]", fields.children);
        let res = ctx
            .discovery
            .resolve(&c.api_version, &c.resource)
            .await
            .map_err(|m| StartError::new(StartReason::UnknownResource, format!("{at}: {m}")))?;
        if parent.namespaced && !res.namespaced {
            return Err(StartError::new(
                StartReason::InvalidSpec,
                format!("{at}: a namespaced parent cannot have cluster-scoped children"),
            ));
        }
        let method = UpdateStrategy::method_of(c.update_strategy.as_ref());
        let rolling = matches!(method, UpdateMethod::RollingRecreate | UpdateMethod::RollingInPlace);
        if flavor == Flavor::Decorator && rolling {
            return Err(StartError::new(
                StartReason::InvalidSpec,
                format!("{at}.updateStrategy.method: attachments are updated OnDelete, Recreate or InPlace"),
            ));
        }
        let checks = c.update_strategy.as_ref().and_then(|s| s.status_checks.clone());
        child_res.push((res, method, checks));
    }
    Ok(child_res)
}

/// Where rolling updates keep their state: ControllerRevisions of the parent's revision-history fields
/// (`spec` unless named).
async fn revision_store(
    ctx: &Ctx,
    spec: &UniversalControllerSpec,
    fields: &Fields,
    flavor: Flavor,
) -> Result<RevisionStore, StartError> {
    let (api_version, label_keys) = flavor.revisions();
    let res = ctx.discovery.resolve(api_version, "controllerrevisions").await.map_err(|m| {
        StartError::new(StartReason::UnknownResource, format!("rolling update strategies keep their state in ControllerRevisions: {m} (install it: uc crds | kubectl apply -f -)"))
    })?;
    let mut field_paths =
        spec.parent_resource.revision_history.as_ref().map(|h| h.field_paths.clone()).unwrap_or_default();
    if let Some(i) = field_paths.iter().position(|p| p.split('.').any(str::is_empty)) {
        return Err(StartError::new(
            StartReason::InvalidSpec,
            format!(
                "{}.revisionHistory.fieldPaths[{i}]: {:?} is not a dotted field path",
                fields.parent, field_paths[i]
            ),
        ));
    }
    if field_paths.is_empty() {
        field_paths.push("spec".into());
    }
    Ok(RevisionStore { res, field_paths, label_keys })
}

/// What of a child type's objects a part's informer keeps: what its hooks that see children (sync,
/// finalize) read of them, when that is all the engine reads too — of a child it never updates
/// (`OnDelete`) in a part that rolls nothing, its metadata. Otherwise the whole object.
fn child_projection(hooks_read: &[Projection], method: UpdateMethod, rolling: bool) -> Projection {
    let Some(&first) = hooks_read.first() else { return Projection::Whole };
    let agreed = hooks_read.iter().all(|p| *p == first);
    if agreed && method == UpdateMethod::OnDelete && !rolling { first } else { Projection::Whole }
}

/// Starts one parent type of a controller.
async fn start_part(
    ctx: &Arc<Ctx>,
    controller: &Value,
    flavor: Flavor,
    spec: UniversalControllerSpec,
    fields: &Fields,
    watch_sources: bool,
    objects: &mut SourceObjects,
) -> Result<Part, StartError> {
    let name = controller.at("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let sync_spec = spec
        .hooks
        .sync
        .clone()
        .ok_or_else(|| StartError::new(StartReason::InvalidSpec, "spec.hooks.sync is required"))?;
    let parent = ctx
        .discovery
        .resolve(&spec.parent_resource.api_version, &spec.parent_resource.resource)
        .await
        .map_err(|m| StartError::new(StartReason::UnknownResource, format!("{}: {m}", fields.parent)))?;
    let label_selector = parent_selector(
        spec.parent_resource.label_selector.as_ref(),
        &format!("{}.labelSelector", fields.parent),
        false,
    )?;
    let annotation_selector = parent_selector(
        spec.parent_resource.annotation_selector.as_ref(),
        &format!("{}.annotationSelector", fields.parent),
        true,
    )?;
    let child_res = resolve_children(ctx, &spec, fields, &parent, flavor).await?;
    let rolling =
        child_res.iter().any(|(_, m, _)| matches!(m, UpdateMethod::RollingRecreate | UpdateMethod::RollingInPlace));
    let revisions = if rolling { Some(revision_store(ctx, &spec, fields, flavor).await?) } else { None };
    // Its children written, and its hooks' sources and credentials read, as its service account.
    let account = crate::acting::account_of(&spec, controller, ctx.default_service_account.as_ref())
        .map_err(|m| StartError::new(StartReason::InvalidSpec, m))?;
    let writer = account.as_ref().map_or_else(|| ctx.client.clone(), |a| crate::acting::impersonating(&ctx.client, a));
    let Hooks { sync, finalize, customize, dialects } =
        build_hooks((ctx, &writer), &spec, flavor, &sync_spec, name, objects).await?;
    let parents = ctx.hub.acquire(&parent.ar);
    let reads: Vec<Projection> = std::iter::once(&sync).chain(&finalize).map(HookImpl::reads).collect();
    let children = child_res
        .into_iter()
        .map(|(res, method, checks)| {
            let informer = ctx.hub.acquire_as(&res.ar, child_projection(&reads, method, rolling));
            ChildType { informer, res, method, checks }
        })
        .collect();
    let shared = Arc::new(Shared {
        finalizer: finalizer::finalizer_name(&spec, flavor, name),
        name: name.to_string(),
        uc: Arc::new(controller.clone()),
        flavor,
        dialects,
        label_selector,
        annotation_selector,
        namespaces: parking_lot::RwLock::new(scope(ctx.namespaces.as_ref(), target_namespaces(controller))),
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
        access: account.as_ref().map(|a| crate::acting::Access::new(writer.clone(), a)),
        writer,
        related_rules: Arc::new(Mutex::new(HashMap::new())),
        related_sources: Mutex::new(HashMap::new()),
        failures: Mutex::new(BTreeMap::new()),
        synced: Default::default(),
        written: Default::default(),
        echoes: Default::default(),
        vanished: Default::default(),
        ssa_unsupported: Default::default(),
        recorder: ctx.metrics.recordings.of(name),
        source_problems: Default::default(),
    });
    shared.recorder.set_capacity(crate::recording::capacity_of(controller));
    let (tasks, subscriptions) = tasks::spawn(&shared, watch_sources.then_some(objects));
    Ok(Part { shared, tasks, _subscriptions: subscriptions })
}

/// The annotation (OLM's) naming the namespaces a controller serves, comma-separated; empty or absent:
/// every namespace.
pub const TARGET_NAMESPACES_ANNOTATION: &str = "olm.targetNamespaces";

/// The namespaces a controller object serves, from its `olm.targetNamespaces` annotation.
pub fn target_namespaces(controller: &Value) -> Option<std::collections::BTreeSet<String>> {
    let value = controller.at("/metadata/annotations")?.get(TARGET_NAMESPACES_ANNOTATION)?.as_str()?;
    let set: std::collections::BTreeSet<String> =
        value.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_string).collect();
    (!set.is_empty()).then_some(set)
}

/// The namespaces a controller serves: its own targets within the engine's (None: every one).
pub fn scope(
    engine: Option<&std::collections::BTreeSet<String>>,
    controller: Option<std::collections::BTreeSet<String>>,
) -> Option<std::collections::BTreeSet<String>> {
    match (engine, controller) {
        (None, c) => c,
        (Some(e), None) => Some(e.clone()),
        (Some(e), Some(c)) => Some(c.intersection(e).cloned().collect()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn an_engine_limited_to_namespaces_limits_every_controller() {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<std::collections::BTreeSet<_>>();
        assert_eq!(super::scope(None, None), None, "every namespace");
        assert_eq!(super::scope(Some(&set(&["a", "b"])), None), Some(set(&["a", "b"])));
        assert_eq!(super::scope(None, Some(set(&["c"]))), Some(set(&["c"])));
        assert_eq!(super::scope(Some(&set(&["a", "b"])), Some(set(&["b", "c"]))), Some(set(&["b"])));
        assert_eq!(super::scope(Some(&set(&["a"])), Some(set(&["c"]))), Some(set(&[])), "none: not every one");
    }

    #[test]
    fn target_namespaces_from_olms_annotation() {
        let with = |v: &str| json!({"metadata": {"annotations": {super::TARGET_NAMESPACES_ANNOTATION: v}}});
        assert_eq!(super::target_namespaces(&with("a, b")).unwrap().into_iter().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(super::target_namespaces(&with("")), None, "every namespace");
        assert_eq!(super::target_namespaces(&json!({"metadata": {}})), None);
    }

    #[test]
    fn a_childs_informer_keeps_what_its_hooks_read_only_when_the_engine_reads_no_more() {
        use super::{Projection::*, UpdateMethod::*, child_projection};
        assert_eq!(child_projection(&[PodView], OnDelete, false), PodView);
        assert_eq!(child_projection(&[PodView, PodView], OnDelete, false), PodView, "sync and finalize");
        assert_eq!(child_projection(&[PodView, Whole], OnDelete, false), Whole, "a finalize hook reading all");
        assert_eq!(child_projection(&[Whole], OnDelete, false), Whole, "a hook that says nothing");
        for updated in [InPlace, Recreate, RollingInPlace, RollingRecreate] {
            assert_eq!(child_projection(&[PodView], updated, false), Whole, "{updated:?}: compared whole");
        }
        assert_eq!(child_projection(&[PodView], OnDelete, true), Whole, "a rollout reads every child type");
        assert_eq!(child_projection(&[], OnDelete, false), Whole);
    }
}
