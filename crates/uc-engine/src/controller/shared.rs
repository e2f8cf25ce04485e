//! What one parent controller holds while it runs, shared by its workers and watch tasks.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kube::api::{Api, DynamicObject};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::task::JoinHandle;
use uc_api::controller::{StatusChecks, UniversalControllerSpec, UpdateMethod};
use uc_api::hook::RelatedResourceRule;
use uc_api::meta::meta_str;
use uc_api::{LabelSelector, Pointer};

use super::errors::{SyncError, SyncReason};
use super::written::WriteMemo;
use crate::events::Recorder;
use crate::flavor::Flavor;
use crate::hooks::HookImpl;
use crate::hooks::dialect::Dialect;
use crate::hooks::native::NativeRegistry;
use crate::informer::{Informer, InformerHub, ObjKey};
use crate::metrics::Metrics;
use crate::queue::WorkQueue;
use crate::resources::Resolved;

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
    /// Which programs may serve as exec hooks, and whether they run confined.
    pub exec_hooks: crate::hooks::sandbox::ExecPolicy,
    /// In-cluster names for webhooks.
    pub names: Option<crate::names::ClusterNames>,
    /// Workers per controller.
    pub workers: usize,
    /// Apply children with server-side apply (falls back to client-side apply where unsupported).
    pub server_side_apply: bool,
    /// Discovery, cached across controllers.
    pub discovery: Arc<crate::resources::Discovery>,
    /// The namespaces every controller's parents are limited to (`uc run --watch-namespaces`).
    pub namespaces: Option<std::collections::BTreeSet<String>>,
    /// The account controllers that name none act as (`--default-service-account`; None: the
    /// engine's own identity).
    pub default_service_account: Option<crate::acting::ServiceAccount>,
}

/// A dynamic API of `res` through `client`.
fn api_with<K>(client: &kube::Client, res: &Resolved, namespace: &str) -> Api<K>
where
    K: kube::Resource<DynamicType = kube::api::ApiResource, Scope = kube::core::DynamicResourceScope>,
{
    if res.namespaced {
        Api::namespaced_with(client.clone(), namespace, &res.ar)
    } else {
        Api::all_with(client.clone(), &res.ar)
    }
}

/// One child type of the controller.
pub(super) struct ChildType {
    pub res: Resolved,
    pub method: UpdateMethod,
    pub checks: Option<StatusChecks>,
    pub informer: Arc<Informer>,
}

impl ChildType {
    pub fn rolling(&self) -> bool {
        matches!(self.method, UpdateMethod::RollingRecreate | UpdateMethod::RollingInPlace)
    }
}

/// Where the revisions of rolling child types live, which parent fields they hold, and the label
/// keys naming the parent type on them.
pub(super) struct RevisionStore {
    pub res: Resolved,
    pub field_paths: Vec<String>,
    pub label_keys: [&'static str; 2],
}

/// How each hook of the controller speaks.
#[derive(Clone, Copy)]
pub(super) struct Dialects {
    pub sync: Dialect,
    pub finalize: Dialect,
    pub customize: Dialect,
}

/// Per parent: the related-resource rules its last customize answer named, by resource id.
pub(super) type RelatedRules = Arc<Mutex<HashMap<ObjKey, Vec<(String, RelatedResourceRule)>>>>;

/// A related resource type the customize hook named: its informer, and the task that re-queues
/// parents when one of its objects changes.
pub(super) struct RelatedSource {
    pub res: Resolved,
    pub informer: Arc<Informer>,
    pub _task: AbortOnDrop,
}

pub(super) struct AbortOnDrop(pub JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(super) struct Shared {
    pub name: String,
    /// The controller object, as hooks receive it.
    pub uc: Arc<Value>,
    pub flavor: Flavor,
    pub dialects: Dialects,
    /// Only parents these select are reconciled.
    pub label_selector: Option<LabelSelector>,
    pub annotation_selector: Option<LabelSelector>,
    /// The namespaces whose parents it reconciles (an OperatorGroup's targets); None: every one.
    pub namespaces: parking_lot::RwLock<Option<std::collections::BTreeSet<String>>>,
    pub spec: UniversalControllerSpec,
    pub parent: Resolved,
    pub parents: Arc<Informer>,
    pub children: Vec<ChildType>,
    pub revisions: Option<RevisionStore>,
    pub sync: HookImpl,
    pub finalize: Option<HookImpl>,
    pub customize: Option<HookImpl>,
    pub finalizer: String,
    pub queue: WorkQueue<ObjKey>,
    pub ctx: Arc<Ctx>,
    /// Writes children and reads hook sources as the controller's service account
    /// ([`crate::acting`]); the engine's client when it names none.
    pub writer: kube::Client,
    /// What that account may read (related objects come from the engine's caches); None: the engine's
    /// own identity.
    pub access: Option<crate::acting::Access>,
    pub related_rules: RelatedRules,
    pub related_sources: Mutex<HashMap<String, Arc<RelatedSource>>>,
    pub failures: Mutex<BTreeMap<ObjKey, String>>,
    pub synced: AtomicBool,
    pub written: WriteMemo,
    /// Writes whose watch events have not arrived: their parents wait for them.
    pub echoes: super::echoes::Echoes,
    /// Parents one of whose children was deleted since they were last confirmed on the API server.
    pub vanished: super::vanished::Vanished,
    /// Set once the cluster answered a server-side apply with 415.
    pub ssa_unsupported: AtomicBool,
    /// The controller's recorded hook calls (`crate::recording`).
    pub recorder: Arc<crate::recording::HookRecorder>,
    /// Problems with hooks' sources (hot reload), by hook.
    pub source_problems: Mutex<BTreeMap<&'static str, super::errors::SourceProblem>>,
}

impl Shared {
    pub fn api(&self, res: &Resolved, namespace: &str) -> Api<DynamicObject> {
        self.api_of(res, namespace)
    }

    /// As `api`, as the controller's service account: for its children.
    pub fn child_api(&self, res: &Resolved, namespace: &str) -> Api<DynamicObject> {
        api_with(&self.writer, res, namespace)
    }

    /// As `raw_api`, as the controller's service account: for its children.
    pub fn raw_child_api(&self, res: &Resolved, namespace: &str) -> Api<crate::raw::Sent> {
        api_with(&self.writer, res, namespace)
    }

    /// As `api`, for writes whose answer is read only for its resourceVersion.
    pub fn raw_api(&self, res: &Resolved, namespace: &str) -> Api<crate::raw::Sent> {
        self.api_of(res, namespace)
    }

    fn api_of<K>(&self, res: &Resolved, namespace: &str) -> Api<K>
    where
        K: kube::Resource<DynamicType = kube::api::ApiResource, Scope = kube::core::DynamicResourceScope>,
    {
        api_with(&self.ctx.client, res, namespace)
    }

    pub fn child_type_of(&self, obj: &Value) -> Option<&ChildType> {
        self.child_index_of(obj).map(|i| &self.children[i])
    }

    /// The index of `obj`'s child type in `children`.
    pub fn child_index_of(&self, obj: &Value) -> Option<usize> {
        let av = obj.get("apiVersion").and_then(Value::as_str)?;
        let kind = obj.get("kind").and_then(Value::as_str)?;
        self.children.iter().position(|t| t.res.ar.api_version == av && t.res.ar.kind == kind)
    }

    /// Whether the controller's parent selectors and target namespaces select `parent`.
    pub fn selects(&self, parent: &Value) -> bool {
        let labels = self.label_selector.as_ref().is_none_or(|s| s.matches_value(parent.at("/metadata/labels")));
        let in_scope = !self.parent.namespaced
            || self.namespaces.read().as_ref().is_none_or(|ns| ns.contains(meta_str(parent, "namespace")));
        labels
            && in_scope
            && self.annotation_selector.as_ref().is_none_or(|s| s.matches_value(parent.at("/metadata/annotations")))
    }

    /// The parents the controller reconciles.
    pub fn parent_count(&self) -> usize {
        if self.label_selector.is_none() && self.annotation_selector.is_none() && self.namespaces.read().is_none() {
            return self.parents.len();
        }
        self.parents.list(None).iter().filter(|p| self.selects(p)).count()
    }

    /// Queues every parent behind news, as a resync does (the queue holds each once, however often
    /// this is called before a worker takes it); before the first list, that list queues them.
    pub fn resync(&self) {
        if !self.synced.load(Ordering::Acquire) {
            return;
        }
        for key in self.parents.keys() {
            self.queue.add_at(key, crate::queue::Priority::Low);
        }
    }

    pub fn use_server_side_apply(&self) -> bool {
        self.ctx.server_side_apply && !self.ssa_unsupported.load(Ordering::Acquire)
    }
}

/// An object to write, as kube's client takes it; `reason` says whose fault a malformed one is (a
/// hook's child, or uc's own revision).
pub(super) fn to_dynamic(v: Value, reason: SyncReason) -> Result<DynamicObject, SyncError> {
    serde_json::from_value(v).map_err(|e| SyncError::new(reason, e.to_string()))
}
