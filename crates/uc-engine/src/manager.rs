//! The engine's top level: installs uc's CRDs (and Metacontroller's), watches UniversalController,
//! CompositeController and DecoratorController objects and runs one parent controller per object — started on create, restarted when its spec changes (its generation moves),
//! stopped on delete, retried while it cannot run — and reports each one's state in its status.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use uc_api::Pointer;

use uc_api::conditions::{condition, set_condition};

use crate::controller::{self, Ctx, Running, StartError, StartReason};
use crate::events::Recorder;
use crate::flavor::Flavor;
use crate::guard::Guard;
use crate::hooks::native::NativeRegistry;
use crate::informer::InformerHub;
use crate::leader::{Candidate, LeaderElection};
use crate::metrics::{self, DRAIN_AT_MOST, Metrics};

/// How often a controller that cannot start is tried again.
const RETRY_EVERY: Duration = Duration::from_secs(3);

/// Workers per controller unless configured: reconciles of different parents under way at once. A
/// reconcile mostly waits — on the API server for its child's apply and its status write — so with 8
/// the 10,000-parent benchmark left a third of the CPU idle; 64 converged it 1.3–1.4 × faster, and more
/// gave nothing (docs/benchmarks.md, "Where the time goes").
pub const DEFAULT_WORKERS: usize = 64;

/// Engine options.
#[derive(Clone)]
pub struct EngineOptions {
    /// Workers per controller.
    pub workers: usize,
    /// Where to serve `/metrics`, `/healthz`, `/readyz` (None: not served).
    pub metrics_addr: Option<SocketAddr>,
    /// Install uc's CRDs when missing.
    pub install_crds: bool,
    /// Native hooks available to UC objects.
    pub natives: NativeRegistry,
    /// Apply children with server-side apply where the cluster supports it (the default).
    pub server_side_apply: bool,
    /// The cluster's names, for webhooks addressed by in-cluster names (None: the system resolver).
    pub names: Option<crate::names::ClusterNames>,
    /// Also serve and run Metacontroller's CompositeControllers and DecoratorControllers (off where
    /// Metacontroller itself runs them).
    pub metacontroller: bool,
    /// Run only while holding a Lease (None: always, no lease).
    pub leader: Option<LeaderElection>,
    /// Limit every controller's parents to these namespaces (None: every one).
    pub namespaces: Option<std::collections::BTreeSet<String>>,
    /// The guard of the engine's client (`Guard::client`), for its fence and its counters.
    pub guard: Option<Arc<Guard>>,
    /// Which programs may serve as exec hooks, and whether they run confined.
    pub exec_hooks: crate::hooks::sandbox::ExecPolicy,
    /// The account controllers that name none act as (multi-tenant mode).
    pub default_service_account: Option<crate::acting::ServiceAccount>,
    /// More metrics served at `/metrics` (an operator's own: an Ansible playbook's `osdk_metric`s).
    pub collectors: Vec<Arc<dyn prometheus_client::collector::Collector>>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            workers: DEFAULT_WORKERS,
            metrics_addr: None,
            install_crds: true,
            natives: NativeRegistry::default(),
            server_side_apply: true,
            names: None,
            metacontroller: true,
            leader: None,
            guard: None,
            namespaces: None,
            exec_hooks: Default::default(),
            default_service_account: None,
            collectors: Vec::new(),
        }
    }
}

/// A running engine.
pub struct Engine {
    /// Bound metrics address, if served.
    pub metrics_addr: Option<SocketAddr>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    task: tokio::task::JoinHandle<()>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Engine {
    /// Stops in order: no new reconciles, those under way finish their writes (up to 10 s), the lease
    /// is released (a standby takes over at once), then the engine is gone.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        let task = std::mem::replace(&mut self.task, tokio::spawn(async {}));
        if tokio::time::timeout(DRAIN_AT_MOST + Duration::from_secs(5), task).await.is_err() {
            tracing::warn!("the engine did not stop in time");
        }
    }
}

/// Creates uc's CRDs (and Metacontroller's, with `metacontroller`) if they are missing and waits
/// until they are served. They are looked up through `discovery`, the engine's own, so the group
/// versions fetched here are the ones its controllers find first.
pub async fn install_crds(
    client: &kube::Client,
    discovery: &crate::resources::Discovery,
    metacontroller: bool,
) -> anyhow::Result<()> {
    let mut crds = vec![uc_api::crds::universal_controller_crd(), uc_api::crds::controller_revision_crd()];
    if metacontroller {
        crds.extend(uc_api::metacontroller::crds());
    }
    for crd in crds {
        install_crd(client, crd).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for f in flavors(metacontroller) {
        let ar = f.resource();
        while discovery.resolve(&ar.api_version, &ar.plural).await.is_err() {
            if Instant::now() > deadline {
                anyhow::bail!("the {} CRD is not served after 30s", f.kind());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// The kinds of controller objects the engine runs.
fn flavors(metacontroller: bool) -> Vec<Flavor> {
    if metacontroller { Flavor::ALL.to_vec() } else { vec![Flavor::Universal] }
}

/// Creates a CRD uc ships, or brings one an older uc installed up to this one's schema.
pub async fn install_crd(
    client: &kube::Client,
    crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> anyhow::Result<()> {
    let api: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    let name = crd.metadata.name.clone().unwrap_or_default();
    match api.create(&PostParams::default(), &crd).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let current = api.get(&name).await?;
            if current.spec != crd.spec {
                let mut updated = crd;
                updated.metadata.resource_version = current.metadata.resource_version;
                api.replace(&name, &PostParams::default(), &updated)
                    .await
                    .map_err(|e| anyhow::anyhow!("updating CRD {name}: {}", crate::dynamic::api_error(&e)))?;
            }
            Ok(())
        }
        Err(e) => Err(anyhow::anyhow!("installing CRD {name}: {}", crate::dynamic::api_error(&e))),
    }
}

struct Entry {
    generation: i64,
    uc: Value,
    running: Option<Running>,
    error: Option<StartError>,
    tried: Instant,
    /// Starts failing for want of a resource (quiet while the cluster's start-up order settles).
    start_failures: crate::watch_health::WatchHealth,
    /// The status last reported, without transition times (to see whether anything changed).
    reported: Option<Value>,
    /// The status last written, with them.
    written: Option<Value>,
}

impl Engine {
    /// Starts the engine against the cluster `client` talks to.
    pub async fn start(client: kube::Client, options: EngineOptions) -> anyhow::Result<Engine> {
        let candidate = match &options.leader {
            Some(settings) => {
                settings.validate().map_err(anyhow::Error::msg)?;
                let candidate = Candidate::new(settings.clone());
                if !settings.wait {
                    candidate.refuse_if_held().await?;
                }
                Some(candidate)
            }
            None => None,
        };
        let discovery = Arc::new(crate::resources::Discovery::new(client.clone()));
        if options.install_crds {
            // Every replica may install them (the same objects); a standby's writes are fenced, so
            // it uses the lease's client.
            let setup = options.leader.as_ref().map_or(&client, |l| &l.client);
            install_crds(setup, &discovery, options.metacontroller).await?;
        }
        let mut metrics = Metrics::new();
        if let Some(guard) = &options.guard {
            guard.register(metrics.registry_mut());
        }
        for c in &options.collectors {
            metrics.registry_mut().register_collector(Box::new(metrics::Shared(c.clone())));
        }
        let metrics = Arc::new(metrics);
        let metrics_addr = match options.metrics_addr {
            Some(addr) => {
                let reviewer = Arc::new(crate::metrics_auth::Reviewer::new(client.clone()));
                Some(metrics::serve(metrics.clone(), reviewer, addr).await?)
            }
            None => None,
        };
        let ctx = Arc::new(Ctx {
            client: client.clone(),
            hub: Arc::new(InformerHub::new(client.clone(), metrics.clone())),
            metrics: metrics.clone(),
            recorder: Arc::new(Recorder::new(client.clone())),
            natives: options.natives.clone(),
            exec_hooks: options.exec_hooks.clone(),
            names: options.names.clone(),
            workers: options.workers,
            server_side_apply: options.server_side_apply,
            discovery,
            namespaces: options.namespaces.clone(),
            default_service_account: options.default_service_account.clone(),
        });
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let flavors = flavors(options.metacontroller);
        let fence = options.guard.clone();
        let task = match candidate {
            Some(candidate) => {
                let start = {
                    let ctx = ctx.clone();
                    move || tokio::spawn(run(ctx.clone(), flavors.clone()))
                };
                tokio::spawn(crate::leadership::lead(candidate, fence, ctx, stopping, start))
            }
            None => tokio::spawn(run_until_stopped(ctx, flavors, stopping)),
        };
        Ok(Engine { metrics_addr, metrics, task, stop })
    }
}

/// Runs the controllers until told to stop, then lets the reconciles under way finish.
async fn run_until_stopped(ctx: Arc<Ctx>, flavors: Vec<Flavor>, mut stopping: tokio::sync::watch::Receiver<bool>) {
    let running = tokio::spawn(run(ctx.clone(), flavors));
    let _ = stopping.wait_for(|s| *s).await;
    running.abort();
    let _ = running.await;
    ctx.metrics.wait_idle(DRAIN_AT_MOST).await;
}

/// Runs the controllers (each object's), started and stopped as their objects come and go.
pub(crate) async fn run(ctx: Arc<Ctx>, flavors: Vec<Flavor>) {
    let apis: HashMap<Flavor, Api<DynamicObject>> =
        flavors.iter().map(|f| (*f, Api::all_with(ctx.client.clone(), &f.resource()))).collect();
    let streams = flavors.iter().map(|f| {
        let f = *f;
        watcher(apis[&f].clone(), watcher::Config::default()).default_backoff().map(move |ev| (f, ev)).boxed()
    });
    let mut stream = futures::stream::select_all(streams);
    let mut entries: HashMap<String, Entry> = HashMap::new();
    let mut listed: HashSet<Flavor> = HashSet::new();
    let mut initial: HashMap<Flavor, Vec<Value>> = HashMap::new();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let mut health: HashMap<Flavor, crate::watch_health::WatchHealth> = HashMap::new();
    loop {
        tokio::select! {
            ev = stream.next() => {
                let Some((flavor, ev)) = ev else { return };
                crate::watch_health::report(flavor.kind(), health.entry(flavor).or_default(), ev.as_ref().map(|_| ()));
                match ev {
                    Ok(watcher::Event::Init) => { initial.insert(flavor, Vec::new()); }
                    Ok(watcher::Event::InitApply(o)) => {
                        if let (Some(list), Ok(v)) = (initial.get_mut(&flavor), controller_value(flavor, &o)) {
                            list.push(v);
                        }
                    }
                    Ok(watcher::Event::InitDone) => {
                        let list = initial.remove(&flavor).unwrap_or_default();
                        let keys: Vec<String> = list.iter().map(key_of).collect();
                        entries.retain(|k, e| flavor_of(&e.uc) != flavor || keys.contains(k));
                        // The oldest first: of two controllers of one parent type, it is the one that runs.
                        let mut list = list;
                        list.sort_by_key(|uc| uc.at("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or_default().to_string());
                        for uc in list {
                            apply_uc(&ctx, &mut entries, uc).await;
                        }
                        listed.insert(flavor);
                    }
                    Ok(watcher::Event::Apply(o)) => {
                        if let Ok(v) = controller_value(flavor, &o) {
                            apply_uc(&ctx, &mut entries, v).await;
                        }
                    }
                    Ok(watcher::Event::Delete(o)) => {
                        let Ok(v) = controller_value(flavor, &o) else { continue };
                        if let Some(e) = entries.remove(&key_of(&v)) {
                            ctx.metrics.recordings.remove(&name_of(&v));
                            tracing::info!(controller = %key_of(&e.uc), "controller stopped (its object was deleted)");
                            // A controller refused for this one's parent type may run now.
                            let waiting: Vec<String> = entries.iter().filter(|(_, w)| w.running.is_none()).map(|(n, _)| n.clone()).collect();
                            for key in waiting {
                                start_unless_claimed(&ctx, &mut entries, &key).await;
                            }
                        }
                    }
                    Err(_) => {}
                }
            }
            _ = tick.tick() => {
                let due: Vec<String> = entries
                    .iter()
                    .filter(|(_, e)| e.running.is_none() && e.tried.elapsed() >= RETRY_EVERY)
                    .map(|(n, _)| n.clone())
                    .collect();
                for key in due {
                    start_unless_claimed(&ctx, &mut entries, &key).await;
                }
                report(&apis, &mut entries).await;
                let ready = listed.len() == flavors.len() && entries.values().all(|e| e.running.as_ref().is_none_or(Running::is_synced));
                ctx.metrics.set_ready(ready);
            }
        }
    }
}

/// A watched controller object as JSON, its kind set (as hooks receive it).
fn controller_value(flavor: Flavor, o: &DynamicObject) -> serde_json::Result<Value> {
    let mut v = serde_json::to_value(o)?;
    v["apiVersion"] = json!(flavor.resource().api_version);
    v["kind"] = json!(flavor.kind());
    Ok(v)
}

fn flavor_of(uc: &Value) -> Flavor {
    uc.get("kind").and_then(Value::as_str).and_then(Flavor::of_kind).unwrap_or(Flavor::Universal)
}

fn name_of(uc: &Value) -> String {
    uc.at("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string()
}

/// An entry's key: `Kind/name` (a CompositeController and a UniversalController may share a name).
fn key_of(uc: &Value) -> String {
    format!("{}/{}", flavor_of(uc).kind(), name_of(uc))
}

async fn apply_uc(ctx: &Arc<Ctx>, entries: &mut HashMap<String, Entry>, uc: Value) {
    let name = key_of(&uc);
    let generation = uc.at("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
    if let Some(e) = entries.get_mut(&name) {
        if e.generation == generation {
            if let Some(r) = &e.running {
                r.set_record_capacity(crate::recording::capacity_of(&uc));
                r.set_target_namespaces(controller::scope(ctx.namespaces.as_ref(), controller::target_namespaces(&uc)));
            }
            e.uc = uc;
            return;
        }
        // The spec changed: restart this controller only.
        tracing::info!(controller = %name, generation, "restarting controller for its new spec");
        e.running = None;
        e.generation = generation;
        e.uc = uc;
    } else {
        let e = Entry {
            generation,
            uc,
            running: None,
            error: None,
            tried: Instant::now(),
            start_failures: Default::default(),
            reported: None,
            written: None,
        };
        entries.insert(name.clone(), e);
    }
    start_unless_claimed(ctx, entries, &name).await;
}

/// Starts a controller, unless an older one controls its parent type.
async fn start_unless_claimed(ctx: &Arc<Ctx>, entries: &mut HashMap<String, Entry>, name: &str) {
    let Some(uc) = entries.get(name).map(|e| e.uc.clone()) else { return };
    let holder = crate::ownership::claimed_by(&uc, entries.values().map(|e| (&e.uc, e.running.is_some())));
    let Some(e) = entries.get_mut(name) else { return };
    match holder {
        Some(holder) => {
            e.tried = Instant::now();
            e.running = None;
            let refused = StartError::new(StartReason::ParentClaimed, crate::ownership::message(&uc, &holder));
            if e.error.as_ref() != Some(&refused) {
                tracing::warn!(controller = %name, holder = %holder, "controller refused: its parent type has a controller");
            }
            e.error = Some(refused);
        }
        None => try_start(ctx, e).await,
    }
}

async fn try_start(ctx: &Arc<Ctx>, e: &mut Entry) {
    e.tried = Instant::now();
    match controller::start(ctx.clone(), e.uc.clone()).await {
        Ok(r) => {
            tracing::info!(controller = %name_of(&e.uc), "controller running");
            e.start_failures.worked();
            e.running = Some(r);
            e.error = None;
        }
        Err(err) => {
            let loud = if err.reason == StartReason::UnknownResource {
                // A kind whose CRD is installed a moment later: the usual start-up order, said at
                // DEBUG unless it lasts (the status says it at once).
                e.start_failures.failed(Instant::now(), false) == crate::watch_health::Say::Warn
            } else {
                e.error.as_ref() != Some(&err)
            };
            if loud {
                tracing::warn!(controller = %name_of(&e.uc), reason = err.reason.as_str(), error = %err.message, "controller cannot run");
            } else {
                tracing::debug!(controller = %name_of(&e.uc), reason = err.reason.as_str(), error = %err.message, "controller cannot run yet");
            }
            e.running = None;
            e.error = Some(err);
        }
    }
}

fn desired_status(e: &Entry) -> Value {
    let problem = e.running.as_ref().and_then(Running::source_problem);
    let ready = match (&e.running, &e.error, problem) {
        (Some(_), _, Some(controller::SourceProblem::Gone(m))) => condition("Ready", false, "HookUnavailable", &m),
        (Some(r), _, Some(controller::SourceProblem::Broken(m))) if r.is_synced() => {
            condition("Ready", true, "HookReloadFailed", &m)
        }
        (Some(r), _, _) if r.is_synced() => condition("Ready", true, "Running", "the controller is running"),
        (Some(_), _, _) => condition("Ready", false, "Syncing", "waiting for the caches to sync"),
        (None, Some(err), _) => condition("Ready", false, err.reason.as_str(), &err.message),
        (None, None, _) => condition("Ready", false, "Starting", "starting"),
    };
    let failures = e.running.as_ref().map(Running::failures).unwrap_or_default();
    let synced = match failures.iter().next() {
        None => condition("Synced", true, "AllParentsSynced", "every parent's last sync succeeded"),
        Some(((ns, name), msg)) => {
            let who = if ns.is_empty() { name.clone() } else { format!("{ns}/{name}") };
            condition("Synced", false, "SyncFailed", &format!("{} parent(s) failing; {who}: {msg}", failures.len()))
        }
    };
    let parents = e.running.as_ref().map(Running::parents).unwrap_or_default();
    json!({"observedGeneration": e.generation, "conditions": [ready, synced], "parents": parents, "failing": failures.len()})
}

async fn report(apis: &HashMap<Flavor, Api<DynamicObject>>, entries: &mut HashMap<String, Entry>) {
    for (key, e) in entries.iter_mut() {
        let Some(api) = apis.get(&flavor_of(&e.uc)) else { continue };
        let name = name_of(&e.uc);
        let status = desired_status(e);
        if e.reported.as_ref() == Some(&status) {
            continue;
        }
        // A condition's transition time moves only when its status does (against what was last
        // written, or what the object had when this controller started).
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let previous = e.written.clone().or_else(|| e.uc.get("status").cloned());
        let mut with_time = status.clone();
        with_time["conditions"] = json!([]);
        for c in status["conditions"].as_array().into_iter().flatten() {
            set_condition(&mut with_time, c.clone(), previous.as_ref(), &now);
        }
        let patch = json!({"status": with_time});
        match api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {
                e.reported = Some(status);
                e.written = Some(with_time);
            }
            Err(err) => {
                tracing::debug!(controller = %key, error = %crate::dynamic::api_error(&err), "writing the controller status failed")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Discovery;
    use crate::testing::Cluster;

    #[tokio::test]
    async fn the_group_versions_read_while_installing_the_crds_serve_the_controllers_that_follow() {
        let cluster = Cluster::start().await;
        let discovery = Discovery::new(cluster.counted.clone());
        install_crds(&cluster.counted, &discovery, true).await.expect("CRDs installed");
        let after_install = cluster.requests().await;
        assert!(after_install >= 7, "five CRDs created, two group versions read: {after_install} requests");

        // Every controller object's type and the ControllerRevisions its rolling updates keep.
        for f in Flavor::ALL {
            let ar = f.resource();
            let found = discovery.resolve(&ar.api_version, &ar.plural).await.expect("the controller type");
            assert_eq!(found.ar.kind, f.kind());
            let (api_version, _) = f.revisions();
            let revisions = discovery.resolve(api_version, "controllerrevisions").await.expect("revisions");
            assert_eq!(revisions.ar.kind, "ControllerRevision");
        }
        assert_eq!(cluster.requests().await, after_install, "every answer came from what installing read");
    }
}
