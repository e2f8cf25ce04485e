//! A parent controller: one per UniversalController object. It watches the parent and child types
//! through the shared informers, queues parents, and reconciles each one:
//! claim children → (customize) → hook → validate → plan per update strategy → apply → status.
//! A hook failure changes nothing in the cluster.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::task::JoinHandle;
use uc_api::LabelSelector;
use uc_api::controller::{StatusChecks, UniversalControllerSpec, UpdateMethod, UpdateStrategy};
use uc_api::hook::{CustomizeRequest, CustomizeResponse, ObjectMap, RelatedResourceRule, SyncRequest, SyncResponse};

use crate::apply;
use crate::events::Recorder;
use crate::hooks::native::NativeRegistry;
use crate::hooks::{HookError, HookImpl, HookKind};
use crate::informer::{Change, Informer, InformerHub, Obj, ObjKey, Subscription, key_of, resource_id};
use crate::metrics::Metrics;
use crate::plan::{Action, decorate, plan};
use crate::queue::WorkQueue;
use crate::resources::Resolved;
use crate::revision::{self, Revision, TypeRollout};

/// Label uc puts on children when it generates the selector (Metacontroller's name for it).
pub const CONTROLLER_UID_LABEL: &str = "controller-uid";

/// Shared services of all controllers.
pub struct Ctx {
    /// API client.
    pub client: kube::Client,
    /// Shared informers.
    pub hub: Arc<InformerHub>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Event recorder.
    pub recorder: Arc<Recorder>,
    /// Native hooks.
    pub natives: NativeRegistry,
    /// In-cluster names for webhooks.
    pub names: Option<crate::names::ClusterNames>,
    /// Workers per controller.
    pub workers: usize,
    /// Apply children with server-side apply (falls back to client-side apply where unsupported).
    pub server_side_apply: bool,
    /// Discovery, cached across controllers.
    pub discovery: Arc<crate::resources::Discovery>,
}

/// Why a controller cannot run (reported in the UC object's `Ready` condition).
#[derive(Debug, Clone)]
pub struct StartError {
    /// Condition reason: `InvalidSpec`, `UnknownResource`, `HookUnavailable`.
    pub reason: &'static str,
    /// What is wrong.
    pub message: String,
}

fn start_err(reason: &'static str, message: impl Into<String>) -> StartError {
    StartError { reason, message: message.into() }
}

/// Why one reconcile failed.
#[derive(Debug, Clone)]
pub struct SyncError {
    /// Event reason.
    pub reason: &'static str,
    /// What failed.
    pub message: String,
}

fn sync_err(reason: &'static str, message: impl Into<String>) -> SyncError {
    SyncError { reason, message: message.into() }
}

impl From<HookError> for SyncError {
    fn from(e: HookError) -> Self {
        sync_err("HookError", e.to_string())
    }
}

fn kube_err(what: &str, e: kube::Error) -> SyncError {
    sync_err("ApplyError", format!("{what}: {e}"))
}

struct ChildType {
    res: Resolved,
    method: UpdateMethod,
    checks: Option<StatusChecks>,
    informer: Arc<Informer>,
}

impl ChildType {
    fn rolling(&self) -> bool {
        matches!(self.method, UpdateMethod::RollingRecreate | UpdateMethod::RollingInPlace)
    }
}

/// Where the revisions of rolling child types live, and which parent fields they hold.
struct RevisionStore {
    res: Resolved,
    field_paths: Vec<String>,
}

/// One step of a parent's rollout, ready to be written.
struct Rollout {
    revisions: Vec<Revision>,
    latest: usize,
    condition: Value,
    moved: Vec<String>,
}

/// Per parent: the related-resource rules its last customize answer named, by resource id.
type RelatedRules = Arc<Mutex<HashMap<ObjKey, Vec<(String, RelatedResourceRule)>>>>;

struct RelatedSource {
    res: Resolved,
    informer: Arc<Informer>,
    _task: AbortOnDrop,
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

struct Shared {
    name: String,
    uc: Value,
    spec: UniversalControllerSpec,
    parent: Resolved,
    parents: Arc<Informer>,
    children: Vec<ChildType>,
    revisions: Option<RevisionStore>,
    sync: HookImpl,
    finalize: Option<HookImpl>,
    customize: Option<HookImpl>,
    finalizer: String,
    queue: WorkQueue<ObjKey>,
    ctx: Arc<Ctx>,
    related_rules: RelatedRules,
    related_sources: Mutex<HashMap<String, Arc<RelatedSource>>>,
    failures: Mutex<BTreeMap<ObjKey, String>>,
    synced: std::sync::atomic::AtomicBool,
    /// Per object uid: a digest of the last body uc wrote and the resourceVersion the server answered.
    /// When the server normalizes a write (prunes unknown fields, applies defaults) the next plan would
    /// differ again forever; seeing the same body against the same resourceVersion breaks that loop.
    written: Mutex<HashMap<String, (u64, String)>>,
    /// Set once the cluster answered a server-side apply with 415.
    ssa_unsupported: std::sync::atomic::AtomicBool,
}

/// A digest of what a write sends, leaving out the resourceVersion it is made against.
fn digest(v: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut body = v.clone();
    if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    body.to_string().hash(&mut h);
    h.finish()
}

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

    /// Open the queue depth to callers (tests, status).
    pub fn queue_len(&self) -> usize {
        self.shared.queue.len()
    }
}

async fn js_source(ctx: &Ctx, hook: &uc_api::controller::Hook) -> Result<Option<String>, StartError> {
    let Some(r) = hook.javascript.as_ref().and_then(|j| j.config_map_ref.as_ref()) else { return Ok(None) };
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(ctx.client.clone(), &r.namespace);
    let cm = api
        .get(&r.name)
        .await
        .map_err(|e| start_err("HookUnavailable", format!("configMap {}/{}: {e}", r.namespace, r.name)))?;
    cm.data.and_then(|d| d.get(&r.key).cloned()).map(Some).ok_or_else(|| {
        start_err("HookUnavailable", format!("configMap {}/{} has no key {:?}", r.namespace, r.name, r.key))
    })
}

async fn build_hook(ctx: &Ctx, hook: &uc_api::controller::Hook, which: &str) -> Result<HookImpl, StartError> {
    let source = js_source(ctx, hook).await?;
    // Short names in a hook's URL are of the default namespace (a UniversalController has none).
    let resolver = ctx.names.as_ref().map(|n| n.resolver("default")).unwrap_or_else(crate::names::Resolver::system);
    HookImpl::from_spec(hook, source, &ctx.natives, resolver).map_err(|e| {
        let reason = if matches!(e, HookError::Config(_)) { "InvalidSpec" } else { "HookUnavailable" };
        start_err(reason, format!("hooks.{which}: {e}"))
    })
}

/// Starts the controller of a UniversalController object.
pub async fn start(ctx: Arc<Ctx>, uc: Value) -> Result<Running, StartError> {
    let name = uc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    let spec: UniversalControllerSpec = serde_json::from_value(uc.get("spec").cloned().unwrap_or(Value::Null))
        .map_err(|e| start_err("InvalidSpec", format!("spec: {e}")))?;
    let sync_spec = spec.hooks.sync.clone().ok_or_else(|| start_err("InvalidSpec", "spec.hooks.sync is required"))?;
    let parent = ctx
        .discovery
        .resolve(&spec.parent_resource.api_version, &spec.parent_resource.resource)
        .await
        .map_err(|m| start_err("UnknownResource", format!("spec.parentResource: {m}")))?;
    let mut child_res = Vec::new();
    for (i, c) in spec.child_resources.iter().enumerate() {
        let res = ctx
            .discovery
            .resolve(&c.api_version, &c.resource)
            .await
            .map_err(|m| start_err("UnknownResource", format!("spec.childResources[{i}]: {m}")))?;
        if parent.namespaced && !res.namespaced {
            return Err(start_err(
                "InvalidSpec",
                format!("spec.childResources[{i}]: a namespaced parent cannot have cluster-scoped children"),
            ));
        }
        let method = UpdateStrategy::parsed(c.update_strategy.as_ref())
            .map_err(|m| start_err("InvalidSpec", format!("spec.childResources[{i}].updateStrategy: {m}")))?;
        let checks = c.update_strategy.as_ref().and_then(|s| s.status_checks.clone());
        child_res.push((res, method, checks));
    }
    let revisions = if child_res
        .iter()
        .any(|(_, m, _)| matches!(m, UpdateMethod::RollingRecreate | UpdateMethod::RollingInPlace))
    {
        let res = ctx.discovery.resolve(uc_api::controller::API_VERSION, "controllerrevisions").await.map_err(|m| {
            start_err("UnknownResource", format!("rolling update strategies keep their state in ControllerRevisions: {m} (install it: uc crds | kubectl apply -f -)"))
        })?;
        let mut field_paths =
            spec.parent_resource.revision_history.as_ref().map(|h| h.field_paths.clone()).unwrap_or_default();
        if let Some(i) = field_paths.iter().position(|p| p.split('.').any(str::is_empty)) {
            return Err(start_err(
                "InvalidSpec",
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
    let sync = build_hook(&ctx, &sync_spec, "sync").await?;
    let finalize = match &spec.hooks.finalize {
        Some(h) => Some(build_hook(&ctx, h, "finalize").await?),
        None => None,
    };
    let customize = match &spec.hooks.customize {
        Some(h) => Some(build_hook(&ctx, h, "customize").await?),
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
        written: Mutex::new(HashMap::new()),
        ssa_unsupported: Default::default(),
    });
    let mut tasks = Vec::new();
    let mut subscriptions = Vec::new();
    let (sub, mut rx) = shared.parents.subscribe();
    subscriptions.push(sub);
    let s = shared.clone();
    tasks.push(tokio::spawn(async move {
        while let Some(ch) = rx.recv().await {
            s.queue.add(key_of(&ch.object));
        }
    }));
    for i in 0..shared.children.len() {
        let (sub, mut rx) = shared.children[i].informer.subscribe();
        subscriptions.push(sub);
        let s = shared.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(ch) = rx.recv().await {
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
    Ok(Running { shared, tasks, _subscriptions: subscriptions })
}

fn controller_ref(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller") == Some(&Value::Bool(true)))
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or_default()
}

fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null())
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|f| f.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

impl Shared {
    fn api(&self, res: &Resolved, namespace: &str) -> Api<DynamicObject> {
        if res.namespaced {
            Api::namespaced_with(self.ctx.client.clone(), namespace, &res.ar)
        } else {
            Api::all_with(self.ctx.client.clone(), &res.ar)
        }
    }

    /// The selector of a parent's children, and the labels uc puts on them.
    fn selector_for(&self, parent: &Value) -> Result<(LabelSelector, Map<String, Value>), SyncError> {
        if self.spec.generate_selector == Some(true) {
            let uid = meta(parent, "uid").to_string();
            let mut labels = Map::new();
            labels.insert(CONTROLLER_UID_LABEL.into(), Value::String(uid.clone()));
            let sel = LabelSelector::parse(&format!("{CONTROLLER_UID_LABEL}={uid}"))
                .map_err(|e| sync_err("InvalidParent", e.to_string()))?;
            return Ok((sel, labels));
        }
        let Some(sel) = parent.pointer("/spec/selector") else {
            return Err(sync_err(
                "InvalidParent",
                "the parent has no spec.selector; set one or set generateSelector: true on the controller",
            ));
        };
        // A plain map of labels (a ReplicationController's or Service's selector) means matchLabels.
        let plain = sel.as_object().is_some_and(|m| {
            !m.is_empty()
                && !m.contains_key("matchLabels")
                && !m.contains_key("matchExpressions")
                && m.values().all(Value::is_string)
        });
        let sel = if plain { &serde_json::json!({"matchLabels": sel}) } else { sel };
        let parsed =
            LabelSelector::from_value(sel).map_err(|e| sync_err("InvalidParent", format!("spec.selector: {e}")))?;
        if parsed.is_empty() {
            return Err(sync_err("InvalidParent", "spec.selector is empty and would select every object"));
        }
        let labels = sel.get("matchLabels").and_then(Value::as_object).cloned().unwrap_or_default();
        Ok((parsed, labels))
    }

    /// Children that may belong to a parent: those it owns (owner index) and those its selector picks,
    /// found through the label index when the selector has an equality term, else by namespace.
    fn child_candidates(&self, t: &ChildType, parent: &Value, selector: &LabelSelector, parent_uid: &str) -> Vec<Obj> {
        let ns = meta(parent, "namespace");
        let in_scope = |o: &Obj| !self.parent.namespaced || meta(o, "namespace") == ns;
        let mut out: Vec<Obj> = t.informer.owned_by(parent_uid).into_iter().filter(in_scope).collect();
        let equality = selector.requirements.iter().find_map(|r| match r {
            uc_api::selector::Requirement::Equals(k, v) => Some((k.clone(), v.clone())),
            _ => None,
        });
        let selected = match equality {
            Some((k, v)) => t.informer.with_label(&k, &v),
            None if self.parent.namespaced => t.informer.list(Some(ns)),
            None => t.informer.list(None),
        };
        let mut seen: std::collections::HashSet<String> = out.iter().map(|o| meta(o, "uid").to_string()).collect();
        for o in selected {
            if in_scope(&o) && seen.insert(meta(&o, "uid").to_string()) {
                out.push(o);
            }
        }
        out
    }

    fn parents_of_child(&self, ch: &Change) -> Vec<ObjKey> {
        let mut out = Vec::new();
        for obj in std::iter::once(&ch.object).chain(ch.old.iter()) {
            match controller_ref(obj) {
                Some(r) => {
                    if let Some(p) = r.get("uid").and_then(Value::as_str).and_then(|u| self.parents.get_by_uid(u)) {
                        out.push(key_of(&p));
                    }
                }
                None => {
                    let ns = meta(obj, "namespace");
                    let candidates =
                        if self.parent.namespaced { self.parents.list(Some(ns)) } else { self.parents.list(None) };
                    for p in candidates {
                        if self.selector_for(&p).is_ok_and(|(s, _)| s.matches_value(obj.pointer("/metadata/labels"))) {
                            out.push(key_of(&p));
                        }
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    async fn work(self: Arc<Self>) {
        while let Some(key) = self.queue.get().await {
            self.ctx.metrics.set_queue_depth(&self.name, self.queue.len());
            let result = self.reconcile(&key).await;
            match result {
                Ok(()) => {
                    self.queue.forget(&key);
                    self.failures.lock().remove(&key);
                    self.ctx.metrics.reconcile(&self.name, "success");
                }
                Err(e) => {
                    tracing::warn!(controller = %self.name, parent = ?key, reason = e.reason, error = %e.message, "sync failed");
                    self.ctx.metrics.reconcile(&self.name, "error");
                    self.failures.lock().insert(key.clone(), format!("{}: {}", e.reason, e.message));
                    if let Some(p) = self.parents.get(&key) {
                        self.ctx.recorder.record(&p, "Warning", e.reason, &e.message).await;
                    }
                    self.queue.add_rate_limited(key.clone());
                }
            }
            self.queue.done(&key);
        }
    }

    async fn patch_parent_meta(&self, parent: &Value, metadata: Value) -> Result<(), SyncError> {
        let api = self.api(&self.parent, meta(parent, "namespace"));
        let patch = json!({"metadata": metadata});
        api.patch(meta(parent, "name"), &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| kube_err("updating the parent's finalizers", e))?;
        Ok(())
    }

    async fn set_finalizer(&self, parent: &Value, present: bool) -> Result<(), SyncError> {
        let mut f = finalizers(parent);
        f.retain(|x| x != &self.finalizer);
        if present {
            f.push(self.finalizer.clone());
        }
        // The resourceVersion makes this a compare-and-swap: a concurrent change retries the sync.
        self.patch_parent_meta(parent, json!({"resourceVersion": meta(parent, "resourceVersion"), "finalizers": f}))
            .await
    }

    async fn reconcile(&self, key: &ObjKey) -> Result<(), SyncError> {
        let Some(parent) = self.parents.get(key) else { return Ok(()) };
        let deleting = is_deleting(&parent);
        let has_finalizer = finalizers(&parent).contains(&self.finalizer);
        if deleting && !has_finalizer {
            return Ok(());
        }
        if deleting && self.finalize.is_none() {
            return self.set_finalizer(&parent, false).await;
        }
        if !deleting && self.finalize.is_some() && !has_finalizer {
            // The update event brings the parent back with the finalizer in place.
            return self.set_finalizer(&parent, true).await;
        }
        if !deleting && self.finalize.is_none() && has_finalizer {
            return self.set_finalizer(&parent, false).await;
        }
        let (selector, selector_labels) = self.selector_for(&parent)?;
        let parent_uid = meta(&parent, "uid").to_string();

        // Claim: children we own and still select, orphans we select (adopted after a good answer),
        // owned ones we no longer select (released after a good answer).
        let mut claims: Vec<Action> = Vec::new();
        let mut observed: Vec<Vec<Obj>> = Vec::new();
        let mut children_req = BTreeMap::new();
        for t in &self.children {
            let candidates = self.child_candidates(t, &parent, &selector, &parent_uid);
            let mut mine = Vec::new();
            for c in candidates {
                let selected = selector.matches_value(c.pointer("/metadata/labels"));
                match controller_ref(&c) {
                    Some(r) if r.get("uid").and_then(Value::as_str) == Some(parent_uid.as_str()) => {
                        if selected {
                            mine.push(c.clone());
                        } else if !is_deleting(&c) {
                            claims.push(Action::Release((*c).clone()));
                        }
                    }
                    Some(_) => {}
                    None if selected && !is_deleting(&c) && !deleting => {
                        claims.push(Action::Adopt((*c).clone()));
                        mine.push(c.clone());
                    }
                    None => {}
                }
            }
            let mut map = ObjectMap::new();
            for c in &mine {
                let k = if !self.parent.namespaced && t.res.namespaced {
                    format!("{}/{}", meta(c, "namespace"), meta(c, "name"))
                } else {
                    meta(c, "name").to_string()
                };
                map.insert(k, (**c).clone());
            }
            children_req.insert(t.res.type_key(), map);
            observed.push(mine);
        }
        let related = match &self.customize {
            Some(h) => self.related_for(key, &parent, h).await?,
            None => BTreeMap::new(),
        };
        let request = SyncRequest {
            controller: self.uc.clone(),
            parent: (*parent).clone(),
            children: children_req,
            related,
            finalizing: deleting,
        }
        .into_value();
        let (kind, hook) = match (&self.finalize, deleting) {
            (Some(f), true) => (HookKind::Finalize, f),
            _ => (HookKind::Sync, &self.sync),
        };
        // A rollout asks the hook again about old revisions, starting from this request.
        let rollout_request = (self.revisions.is_some() && !deleting).then(|| request.clone());
        let (answer, elapsed) = hook.call(kind, request).await;
        self.ctx.metrics.hook_call(&self.name, kind.as_str(), elapsed, answer.is_ok());
        let answer = answer?;
        let response: SyncResponse = serde_json::from_value(answer).map_err(|e| {
            sync_err("HookError", format!("invalid hook response: {e} (a response must have a `children` list)"))
        })?;
        let mut desired = self.validate_children(&parent, response.children)?;
        let mut status = response.status;
        let rollout = match (&self.revisions, &rollout_request) {
            (Some(store), Some(request)) => {
                let r = self.rollout(store, &parent, &selector_labels, &observed, &mut desired, request, hook).await?;
                let base = status.take().unwrap_or_else(|| parent.get("status").cloned().unwrap_or_else(|| json!({})));
                let mut s = if base.is_object() { base } else { json!({}) };
                let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                revision::set_condition(&mut s, r.condition.clone(), parent.get("status"), &now);
                status = Some(s);
                Some(r)
            }
            _ => None,
        };

        // The answer is good: now, and only now, change the cluster. A rollout's intent goes first.
        if let (Some(r), Some(store)) = (&rollout, &self.revisions) {
            self.write_revisions(store, &parent, &selector_labels, r).await?;
        }
        let mut actions = claims;
        for (i, t) in self.children.iter().enumerate() {
            actions.extend(plan(t.method, &parent, &selector_labels, &observed[i], &desired[i]));
        }
        for a in actions {
            self.execute(&parent, a).await?;
        }
        self.write_status(&parent, status).await?;
        if deleting && response.finalized == Some(true) {
            if let Some(p) = self.parents.get(key) {
                self.set_finalizer(&p, false).await?;
            }
        } else if deleting {
            self.queue.add_after(key.clone(), Duration::from_secs(2));
        }
        if let Some(after) = response.resync_after_seconds.filter(|s| *s > 0.0 && s.is_finite()) {
            self.queue.add_after(key.clone(), Duration::from_secs_f64(after.min(86_400.0)));
        }
        Ok(())
    }

    /// A cluster-scoped parent keeps its revisions in `default`.
    fn revisions_namespace<'a>(&self, parent: &'a Value) -> &'a str {
        if self.parent.namespaced { meta(parent, "namespace") } else { "default" }
    }

    fn revisions_api(&self, store: &RevisionStore, parent: &Value) -> Api<DynamicObject> {
        Api::namespaced_with(self.ctx.client.clone(), self.revisions_namespace(parent), &store.res.ar)
    }

    /// One step of the parent's rollout: loads its revisions (from the API server, never from a cache, so
    /// a step always starts from the last one's intent), asks the hook for the children of every old
    /// revision that still has some, and picks per child the revision it is desired at. `desired` is
    /// rewritten for the rolling child types.
    #[allow(clippy::too_many_arguments)]
    async fn rollout(
        &self,
        store: &RevisionStore,
        parent: &Value,
        selector_labels: &Map<String, Value>,
        observed: &[Vec<Obj>],
        desired: &mut [Vec<Value>],
        request: &Value,
        hook: &HookImpl,
    ) -> Result<Rollout, SyncError> {
        let (group, resource) = (self.parent.ar.group.as_str(), self.parent.ar.plural.as_str());
        let selector = revision::labels(group, resource, selector_labels)
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(",");
        let list = self
            .revisions_api(store, parent)
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
            .map_err(|e| kube_err("listing the parent's ControllerRevisions", e))?;
        let parent_uid = meta(parent, "uid");
        let mut revisions: Vec<Revision> = list
            .items
            .into_iter()
            .filter_map(|o| serde_json::to_value(o).ok())
            .filter(|o| controller_ref(o).and_then(|r| r.get("uid")).and_then(Value::as_str) == Some(parent_uid))
            .map(|o| Revision::from_object(&o))
            .collect();
        let patch = revision::parent_patch(parent, &store.field_paths);
        let name = revision::revision_name(resource, group, parent_uid, &patch);
        let latest = match revisions.iter().position(|r| r.name == name) {
            Some(i) => i,
            None => {
                let next = revisions.iter().map(|r| r.revision).max().unwrap_or(0) + 1;
                revisions.push(Revision { name, patch, revision: next, children: BTreeMap::new(), stored: None });
                revisions.len() - 1
            }
        };
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
            let old_parent = revision::parent_at(parent, &rev.patch, &store.field_paths);
            let mut req = request.clone();
            req["parent"] = old_parent.clone();
            let (answer, elapsed) = hook.call(HookKind::Sync, req).await;
            self.ctx.metrics.hook_call(&self.name, HookKind::Sync.as_str(), elapsed, answer.is_ok());
            let response: SyncResponse = serde_json::from_value(answer?)
                .map_err(|e| sync_err("HookError", format!("invalid hook response for revision {}: {e}", rev.name)))?;
            desired_at.push(self.validate_children(&old_parent, response.children)?);
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
    async fn write_revisions(
        &self,
        store: &RevisionStore,
        parent: &Value,
        selector_labels: &Map<String, Value>,
        r: &Rollout,
    ) -> Result<(), SyncError> {
        let api = self.revisions_api(store, parent);
        let to_dynamic =
            |v: Value| serde_json::from_value::<DynamicObject>(v).map_err(|e| sync_err("InternalError", e.to_string()));
        let latest = &r.revisions[r.latest];
        match &latest.stored {
            None => {
                let (group, resource) = (self.parent.ar.group.as_str(), self.parent.ar.plural.as_str());
                let body = json!({
                    "apiVersion": uc_api::controller::API_VERSION, "kind": "ControllerRevision",
                    "metadata": {
                        "name": latest.name, "namespace": self.revisions_namespace(parent),
                        "labels": revision::labels(group, resource, selector_labels),
                        "ownerReferences": [{"apiVersion": parent.get("apiVersion"), "kind": parent.get("kind"),
                            "name": meta(parent, "name"), "uid": meta(parent, "uid"),
                            "controller": true, "blockOwnerDeletion": true}],
                    },
                    "parentPatch": latest.patch, "revision": latest.revision, "children": latest.children_value(),
                });
                api.create(&PostParams::default(), &to_dynamic(body)?)
                    .await
                    .map_err(|e| kube_err(&format!("creating ControllerRevision {}", latest.name), e))?;
            }
            Some(stored) if latest.needs_write() => {
                let mut body = stored.clone();
                body["children"] = latest.children_value();
                api.replace(&latest.name, &PostParams::default(), &to_dynamic(body)?)
                    .await
                    .map_err(|e| kube_err(&format!("updating ControllerRevision {}", latest.name), e))?;
            }
            Some(_) => {}
        }
        for (i, rev) in r.revisions.iter().enumerate() {
            let Some(stored) = rev.stored.as_ref().filter(|_| i != r.latest) else { continue };
            if rev.is_empty() {
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: None,
                        resource_version: Some(meta(stored, "resourceVersion").to_string()),
                    }),
                    ..Default::default()
                };
                match api.delete(&rev.name, &dp).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(kube_err(&format!("deleting ControllerRevision {}", rev.name), e)),
                }
            } else if rev.needs_write() {
                let mut body = stored.clone();
                body["children"] = rev.children_value();
                api.replace(&rev.name, &PostParams::default(), &to_dynamic(body)?)
                    .await
                    .map_err(|e| kube_err(&format!("updating ControllerRevision {}", rev.name), e))?;
            }
        }
        for m in &r.moved {
            let msg = format!("{m} moves to revision {}", latest.name);
            self.ctx.recorder.record(parent, "Normal", "RollingUpdate", &msg).await;
        }
        Ok(())
    }

    /// Checks the desired children and sorts them by child type, in the order the hook listed them.
    fn validate_children(&self, parent: &Value, children: Vec<Value>) -> Result<Vec<Vec<Value>>, SyncError> {
        let mut out: Vec<Vec<Value>> = vec![Vec::new(); self.children.len()];
        let mut seen = std::collections::HashSet::new();
        let parent_ns = meta(parent, "namespace");
        for (i, mut c) in children.into_iter().enumerate() {
            let bad = |m: String| sync_err("InvalidChild", format!("children[{i}]: {m}"));
            let av = c.get("apiVersion").and_then(Value::as_str).ok_or_else(|| bad("apiVersion is required".into()))?;
            let kind = c.get("kind").and_then(Value::as_str).ok_or_else(|| bad("kind is required".into()))?;
            let name = c
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| bad("metadata.name is required".into()))?
                .to_string();
            let t = self
                .children
                .iter()
                .position(|t| t.res.ar.api_version == av && t.res.ar.kind == kind)
                .ok_or_else(|| bad(format!("{kind}.{av} is not a child type of this controller")))?;
            let kind = kind.to_string();
            if !c.get("metadata").is_some_and(Value::is_object) {
                return Err(bad("metadata must be an object".into()));
            }
            if self.children[t].res.namespaced {
                let ns = c.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default().to_string();
                let ns = match (self.parent.namespaced, ns.is_empty()) {
                    (true, true) => parent_ns.to_string(),
                    (true, false) if ns != parent_ns => {
                        return Err(bad(format!("{name} is in namespace {ns:?}, but its parent is in {parent_ns:?}")));
                    }
                    (false, true) => {
                        return Err(bad(format!("{name} needs metadata.namespace (the parent is cluster-scoped)")));
                    }
                    _ => ns,
                };
                c["metadata"]["namespace"] = Value::String(ns);
            } else if let Some(m) = c.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("namespace");
            }
            let id = (t, meta(&c, "namespace").to_string(), name.clone());
            if !seen.insert(id) {
                return Err(bad(format!("{kind} {name} is listed twice")));
            }
            out[t].push(c);
        }
        Ok(out)
    }

    fn child_type_of(&self, obj: &Value) -> Option<&ChildType> {
        let av = obj.get("apiVersion").and_then(Value::as_str)?;
        let kind = obj.get("kind").and_then(Value::as_str)?;
        self.children.iter().find(|t| t.res.ar.api_version == av && t.res.ar.kind == kind)
    }

    fn use_server_side_apply(&self) -> bool {
        self.ctx.server_side_apply && !self.ssa_unsupported.load(std::sync::atomic::Ordering::Acquire)
    }

    async fn execute(&self, parent: &Value, action: Action) -> Result<(), SyncError> {
        let to_dynamic =
            |v: Value| serde_json::from_value::<DynamicObject>(v).map_err(|e| sync_err("InvalidChild", e.to_string()));
        match action {
            Action::Create(obj) | Action::Update(obj) if self.child_type_of(&obj).is_none() => Err(sync_err(
                "InvalidChild",
                format!("{} is not a child type", obj.get("kind").and_then(Value::as_str).unwrap_or_default()),
            )),
            Action::Create(obj) | Action::Update(obj) if self.use_server_side_apply() => {
                let t = self.child_type_of(&obj).map(|t| t.res.clone()).unwrap_or_else(|| self.parent.clone());
                // The body is the desired object (with uc's annotation, which keeps the diff exact), never
                // the merge: with server-side apply the server merges, and owns the other fields' fate.
                let body = match apply::last_applied(&obj) {
                    Some(desired) => apply::create(&desired),
                    None => obj.clone(),
                };
                let name = meta(&obj, "name").to_string();
                let params = PatchParams::apply("uc").force();
                match self.api(&t, meta(&obj, "namespace")).patch(&name, &params, &Patch::Apply(&body)).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(s)) if s.code == 415 => {
                        tracing::warn!(controller = %self.name, "the cluster does not support server-side apply; using client-side apply");
                        self.ssa_unsupported.store(true, std::sync::atomic::Ordering::Release);
                        Box::pin(self.execute(
                            parent,
                            if meta(&obj, "resourceVersion").is_empty() {
                                Action::Create(obj)
                            } else {
                                Action::Update(obj)
                            },
                        ))
                        .await
                    }
                    Err(e) => Err(kube_err(&format!("applying {} {name}", t.ar.kind), e)),
                }
            }
            Action::Create(obj) => {
                let t = self.child_type_of(&obj).map(|t| t.res.clone()).unwrap_or_else(|| self.parent.clone());
                let api = self.api(&t, meta(&obj, "namespace"));
                let name = meta(&obj, "name").to_string();
                api.create(&PostParams::default(), &to_dynamic(obj)?)
                    .await
                    .map_err(|e| kube_err(&format!("creating {} {name}", t.ar.kind), e))?;
                Ok(())
            }
            Action::Update(obj) => {
                if self.already_written(&obj, &obj) {
                    return Ok(());
                }
                let t = self.child_type_of(&obj).map(|t| t.res.clone()).unwrap_or_else(|| self.parent.clone());
                let api = self.api(&t, meta(&obj, "namespace"));
                let name = meta(&obj, "name").to_string();
                let (uid, sent) = (meta(&obj, "uid").to_string(), digest(&obj));
                let stored = api
                    .replace(&name, &PostParams::default(), &to_dynamic(obj)?)
                    .await
                    .map_err(|e| kube_err(&format!("updating {} {name}", t.ar.kind), e))?;
                self.remember(&uid, sent, stored.metadata.resource_version.unwrap_or_default());
                Ok(())
            }
            Action::Delete { name, namespace, uid } => {
                let t = self
                    .children
                    .iter()
                    .find(|t| {
                        t.informer.get(&(namespace.clone(), name.clone())).is_some_and(|o| meta(&o, "uid") == uid)
                    })
                    .map(|t| t.res.clone());
                let Some(t) = t else { return Ok(()) };
                let dp = DeleteParams {
                    preconditions: Some(Preconditions { uid: Some(uid), resource_version: None }),
                    propagation_policy: Some(PropagationPolicy::Background),
                    ..Default::default()
                };
                match self.api(&t, &namespace).delete(&name, &dp).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
                    Err(e) => Err(kube_err(&format!("deleting {} {name}", t.ar.kind), e)),
                }
            }
            Action::Adopt(obj) | Action::Release(obj) => {
                let adopt = obj.pointer("/metadata/ownerReferences").and_then(Value::as_array).is_none_or(|a| {
                    !a.iter().any(|r| r.get("uid").and_then(Value::as_str) == Some(meta(parent, "uid")))
                });
                let Some(t) = self.child_type_of(&obj).map(|t| t.res.clone()) else { return Ok(()) };
                let mut refs: Vec<Value> =
                    obj.pointer("/metadata/ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
                refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(meta(parent, "uid")));
                if adopt {
                    refs.push(json!({"apiVersion": parent.get("apiVersion"), "kind": parent.get("kind"), "name": meta(parent, "name"),
                                     "uid": meta(parent, "uid"), "controller": true, "blockOwnerDeletion": true}));
                }
                let patch = json!({"metadata": {"resourceVersion": meta(&obj, "resourceVersion"), "uid": meta(&obj, "uid"), "ownerReferences": refs}});
                self.api(&t, meta(&obj, "namespace"))
                    .patch(meta(&obj, "name"), &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(|e| {
                        kube_err(&format!("{} {}", if adopt { "adopting" } else { "releasing" }, meta(&obj, "name")), e)
                    })?;
                Ok(())
            }
        }
    }

    /// Whether `body` was written to `current` before and the server answered with its present state.
    fn already_written(&self, current: &Value, body: &Value) -> bool {
        let seen = self.written.lock().get(meta(current, "uid")).cloned();
        seen.is_some_and(|(d, rv)| d == digest(body) && rv == meta(current, "resourceVersion"))
    }

    fn remember(&self, uid: &str, sent: u64, rv: String) {
        let mut w = self.written.lock();
        if w.len() > 100_000 {
            w.clear();
        }
        w.insert(uid.to_string(), (sent, rv));
    }

    async fn write_status(&self, parent: &Value, status: Option<Value>) -> Result<(), SyncError> {
        let Some(mut status) = status.filter(|s| !s.is_null()) else { return Ok(()) };
        if !status.is_object() {
            return Err(sync_err("HookError", "status must be an object"));
        }
        if self.parent.status_subresource
            && let Some(g) = parent.pointer("/metadata/generation").cloned()
        {
            // Without a status subresource a status write bumps the generation, so it is not recorded there.
            status["observedGeneration"] = g;
        }
        if parent.get("status") == Some(&status) || self.already_written(parent, &status) {
            return Ok(());
        }
        let sent = digest(&status);
        let mut obj = parent.clone();
        obj["status"] = status;
        let api = self.api(&self.parent, meta(parent, "namespace"));
        let name = meta(parent, "name").to_string();
        let o: DynamicObject = serde_json::from_value(obj).map_err(|e| sync_err("InternalError", e.to_string()))?;
        let r = if self.parent.status_subresource {
            api.replace_status(&name, &PostParams::default(), &o).await
        } else {
            api.replace(&name, &PostParams::default(), &o).await
        };
        match r {
            Ok(o) => {
                self.remember(meta(parent, "uid"), sent, o.metadata.resource_version.unwrap_or_default());
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(kube_err("writing the parent's status", e)),
        }
    }

    async fn related_for(
        &self,
        key: &ObjKey,
        parent: &Value,
        hook: &HookImpl,
    ) -> Result<BTreeMap<String, ObjectMap>, SyncError> {
        let request = serde_json::to_value(CustomizeRequest { controller: self.uc.clone(), parent: parent.clone() })
            .map_err(|e| sync_err("InternalError", e.to_string()))?;
        let (answer, elapsed) = hook.call(HookKind::Customize, request).await;
        self.ctx.metrics.hook_call(&self.name, "customize", elapsed, answer.is_ok());
        let response: CustomizeResponse = serde_json::from_value(answer?)
            .map_err(|e| sync_err("HookError", format!("invalid customize response: {e}")))?;
        let mut out: BTreeMap<String, ObjectMap> = BTreeMap::new();
        let mut rules = Vec::new();
        for (i, rule) in response.related_resources.iter().enumerate() {
            if rule.label_selector.is_some() == rule.names.is_some() {
                return Err(sync_err(
                    "HookError",
                    format!("relatedResources[{i}]: set exactly one of labelSelector and names"),
                ));
            }
            let source = self.related_source(&rule.api_version, &rule.resource).await?;
            let entry = out.entry(source.res.type_key()).or_default();
            let id = resource_id(&source.res.ar);
            for o in select_related(&source, rule, parent, self.parent.namespaced)? {
                let k = if !self.parent.namespaced && source.res.namespaced {
                    format!("{}/{}", meta(&o, "namespace"), meta(&o, "name"))
                } else {
                    meta(&o, "name").to_string()
                };
                entry.insert(k, (*o).clone());
            }
            rules.push((id, rule.clone()));
        }
        self.related_rules.lock().insert(key.clone(), rules);
        Ok(out)
    }

    async fn related_source(&self, api_version: &str, resource: &str) -> Result<Arc<RelatedSource>, SyncError> {
        let cache_key = format!("{api_version}/{resource}");
        if let Some(s) = self.related_sources.lock().get(&cache_key) {
            return Ok(s.clone());
        }
        let res = self
            .ctx
            .discovery
            .resolve(api_version, resource)
            .await
            .map_err(|m| sync_err("HookError", format!("relatedResources: {m}")))?;
        let informer = self.ctx.hub.acquire(&res.ar);
        let (sub, mut rx) = informer.subscribe();
        let queue = self.queue.clone();
        let id = resource_id(&res.ar);
        // Changes of related objects re-sync the parents whose rules select them.
        let related_rules = self.related_rules.clone();
        let parent_namespaced = self.parent.namespaced;
        let task = tokio::spawn(async move {
            let _sub = sub;
            while let Some(ch) = rx.recv().await {
                let keys: Vec<ObjKey> = related_rules
                    .lock()
                    .iter()
                    .filter(|(pk, rules)| {
                        rules.iter().any(|(rid, r)| *rid == id && rule_matches(r, &ch.object, pk, parent_namespaced))
                    })
                    .map(|(pk, _)| pk.clone())
                    .collect();
                for k in keys {
                    queue.add(k);
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(30), informer.wait_synced())
            .await
            .map_err(|_| sync_err("HookError", format!("relatedResources: {resource} did not sync")))?;
        let source = Arc::new(RelatedSource { res, informer, _task: AbortOnDrop(task) });
        self.related_sources.lock().insert(cache_key, source.clone());
        Ok(source)
    }
}

fn rule_matches(rule: &RelatedResourceRule, obj: &Value, parent_key: &ObjKey, parent_namespaced: bool) -> bool {
    if let Some(names) = &rule.names {
        let ns = rule.namespace.clone().unwrap_or_else(|| parent_key.0.clone());
        return names.iter().any(|n| n == meta(obj, "name")) && (ns.is_empty() || ns == meta(obj, "namespace"));
    }
    if parent_namespaced && meta(obj, "namespace") != parent_key.0 {
        return false;
    }
    rule.label_selector
        .as_ref()
        .and_then(|s| LabelSelector::from_value(s).ok())
        .is_some_and(|s| s.matches_value(obj.pointer("/metadata/labels")))
}

fn select_related(
    source: &RelatedSource,
    rule: &RelatedResourceRule,
    parent: &Value,
    parent_namespaced: bool,
) -> Result<Vec<Obj>, SyncError> {
    if let Some(names) = &rule.names {
        let ns = rule.namespace.clone().unwrap_or_else(|| meta(parent, "namespace").to_string());
        let ns = if source.res.namespaced { ns } else { String::new() };
        return Ok(names.iter().filter_map(|n| source.informer.get(&(ns.clone(), n.clone()))).collect());
    }
    let sel = rule
        .label_selector
        .as_ref()
        .map(LabelSelector::from_value)
        .transpose()
        .map_err(|e| sync_err("HookError", format!("relatedResources labelSelector: {e}")))?
        .unwrap_or_default();
    let ns = meta(parent, "namespace");
    let candidates = if parent_namespaced && source.res.namespaced {
        source.informer.list(Some(ns))
    } else {
        source.informer.list(None)
    };
    Ok(candidates.into_iter().filter(|o| sel.matches_value(o.pointer("/metadata/labels"))).collect())
}
