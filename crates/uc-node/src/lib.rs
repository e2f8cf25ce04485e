//! The uc node agent: registers a Node, binds unscheduled pods to it (the embedded cluster's
//! scheduler is this one line of policy), and runs the pods bound to it — as real processes when
//! every image of the pod is on the allowlist ([`allowlist`]), simulated otherwise ([`simulate`]).
//!
//! Real containers run through shims ([`container`]) and outlive the agent as containers outlive a
//! kubelet: a restarted agent re-adopts them. The agent also serves the kubelet's endpoint for logs,
//! exec, attach and port-forward ([`server`]), gives pods their volumes ([`volumes`]) and environment
//! ([`env`]), names ([`names`]) and working Service cluster IPs ([`proxy`]).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{
    Container, DaemonEndpoint, Node as NodeObject, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeStatus,
    PersistentVolumeClaim, Pod,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use parking_lot::Mutex;
use tokio::sync::watch;

pub mod allowlist;
pub mod container;
mod context;
pub mod dns;
pub mod env;
pub mod events;
pub mod exec;
mod held_pod;
pub mod host_ports;
pub mod invalid;
pub mod lease;
pub mod logs;
pub mod machine;
pub mod names;
pub mod network;
pub mod objects;
pub mod pod;
mod pod_api;
pub mod portforward;
mod prepare;
pub mod probe;
pub mod proxy;
pub mod response;
pub mod sandbox;
pub mod server;
mod services;
pub mod simulate;
pub mod spdy;
pub mod status;
pub mod volumes;
mod worker;
mod ws;

pub use simulate::{EXIT_CODE, READY_DELAY, RUN_SECONDS, START_DELAY, simulate};

use allowlist::Allowlist;
pub use context::NodeOptions;
use context::{Ctx, Ips, SharedIps};
use held_pod::HeldPod;
use pod_api::{bind, is_deleting, key_of, pod_ip, spec, uid};
use server::{PodEntry, Pods};
use worker::{grace_of, kill_containers};

/// A running node agent.
pub struct Node {
    ctx: Arc<Ctx>,
    task: tokio::task::JoinHandle<()>,
    bridge: Option<network::host::Bridge>,
    /// Where the kubelet endpoint listens.
    pub endpoint: SocketAddr,
}

impl Node {
    /// Stops the agent cleanly: every pod process gets SIGTERM and its grace period, then SIGKILL,
    /// and is marked as stopped by the node (it runs again when the node is back).
    pub async fn shutdown(self) {
        // Closing the table and raising the flag together: a worker either started its pod before (and
        // the pod is stopped here) or sees the node going (and starts nothing).
        let running = {
            let mut started = self.ctx.started.lock();
            self.ctx.shutting_down.store(true, Ordering::Release);
            started.close()
        };
        futures::future::join_all(running.iter().map(|(p, pod)| p.stop(Duration::from_secs(grace_of(pod)), true)))
            .await;
        stop_unadopted(&self.ctx.options.pods_dir).await;
        self.task.abort();
        if let Some(bridge) = self.bridge {
            // Nothing of the pod network stays behind: no pod is wired any more, the pods' namespaces go
            // (they are made again when the node is back), then the bridge, its routes and rules.
            *self.ctx.wiring.write().await = false;
            let cidr = bridge.cidr();
            let ours = pod_uids(&self.ctx.options.pods_dir);
            let detached = network::host::namespaces().into_iter().filter(|uid| ours.contains(uid));
            futures::future::join_all(detached.map(|uid| async move { network::host::detach(&cidr, &uid).await }))
                .await;
            bridge.down().await;
        }
    }
}

/// The uids of the pods with directories on this node.
fn pod_uids(pods_dir: &Path) -> HashSet<String> {
    std::fs::read_dir(pods_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The node's DNS server for pods, on the network's DNS address (port 53 needs root: without it, or
/// with the address taken, pods resolve through their hosts files alone). Pods on the machine's
/// network go on to its nameservers for names outside the cluster; pods in namespaces of their own
/// cannot reach them.
async fn start_dns(hosts: Arc<names::HostsFiles>, network: network::Network) {
    let addr = network.dns();
    match tokio::net::UdpSocket::bind(addr).await {
        Ok(socket) => {
            let machine = if network.bridged() {
                String::new()
            } else {
                std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default()
            };
            hosts.serve_dns(*addr.ip(), machine);
            tokio::spawn(dns::serve(socket, Arc::new(move |name: &str| hosts.lookup(name))));
            tracing::debug!(%addr, "cluster DNS for pods");
        }
        Err(e) => tracing::info!(%addr, error = %e, "no cluster DNS for pods: their hosts files still name everything"),
    }
}

/// The node agent's credentials: the node's own (`system:node:<name>`, which NodeRestriction limits to
/// its Node, its Lease and its pods), and the scheduler's, which binds pods to it and marks its role.
pub struct Clients {
    pub node: kube::Client,
    pub scheduler: kube::Client,
}

/// Starts the node agent.
pub async fn start(clients: Clients, options: NodeOptions) -> anyhow::Result<Node> {
    let Clients { node: client, scheduler } = clients;
    let pods: Pods = Default::default();
    let bridge = match options.network {
        network::Network::Bridged(cidr) => {
            Some(network::host::Bridge::up(cidr).await.map_err(|e| anyhow::anyhow!("the pod network: {e}"))?)
        }
        network::Network::Loopback(_) => None,
    };
    let endpoint = server::serve(options.kubelet_port, options.kubelet_callers.clone(), pods.clone()).await?;
    machine::set_node(machine::Resources::read());
    let uid = register(&client, &options.name, endpoint.port()).await?;
    // Its role, as an installer labels a node (a node may not set `node-role.kubernetes.io/` labels).
    let role = NodeObject { metadata: labelled([("node-role.kubernetes.io/uc", "")]), ..NodeObject::default() };
    Api::<NodeObject>::all(scheduler.clone())
        .patch(&options.name, &PatchParams::default(), &Patch::Merge(&role))
        .await
        .map_err(|e| anyhow::anyhow!("labelling the node's role: {e}"))?;
    tokio::spawn(lease::heartbeat(client.clone(), options.name.clone(), uid));
    let hosts = match &options.hosts_dir {
        Some(d) => Some(Arc::new(names::HostsFiles::new(d.clone())?)),
        None => None,
    };
    if let Some(h) = &hosts {
        start_dns(h.clone(), options.network).await;
    }
    tokio::spawn(services::watch(client.clone(), hosts.clone(), Arc::new(proxy::Proxy::default())));
    tokio::spawn(reclaim_claims(client.clone(), options.volumes_dir.clone()));
    let reporter = |component: &str, host: Option<&str>| events::Reporter {
        component: component.into(),
        host: host.map(String::from),
    };
    let ctx = Arc::new(Ctx {
        events: events::Recorder::new(client.clone(), reporter("kubelet", Some(&options.name))),
        scheduler_events: events::Recorder::new(scheduler.clone(), reporter("default-scheduler", None)),
        client: client.clone(),
        scheduler,
        ips: Mutex::new(Ips::new(options.network.cidr())),
        objects: objects::Objects::new(client),
        options,
        hosts,
        pods,
        shutting_down: AtomicBool::new(false),
        started: Default::default(),
        wiring: tokio::sync::RwLock::new(true),
    });
    let task = tokio::spawn(run(ctx.clone()));
    Ok(Node { ctx, task, endpoint, bridge })
}

/// A claim's volume is `<volumes>/<namespace>/<claim>`; when the claim is deleted its data goes too
/// (the Delete reclaim policy of dynamically provisioned volumes), once no pod uses it any more, so a
/// new claim of the same name never finds old data. A claim deleted while uc was down keeps its
/// directory.
async fn reclaim_claims(client: kube::Client, volumes: PathBuf) {
    let api: Api<PersistentVolumeClaim> = Api::all(client.clone());
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(ev) = stream.next().await {
        let Ok(watcher::Event::Delete(claim)) = ev else { continue };
        let (Some(ns), Some(name)) = (claim.metadata.namespace, claim.metadata.name) else { continue };
        if [&ns, &name].iter().any(|s| s.is_empty() || s.contains('/') || s.starts_with('.')) {
            continue;
        }
        let dir = volumes.join(&ns).join(&name);
        let client = client.clone();
        tokio::spawn(async move {
            let pods: Api<Pod> = Api::namespaced(client, &ns);
            loop {
                let in_use = match pods.list(&Default::default()).await {
                    Ok(list) => list.items.iter().any(|p| {
                        let finished =
                            matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"));
                        !finished
                            && p.spec.as_ref().and_then(|s| s.volumes.as_ref()).is_some_and(|vs| {
                                vs.iter()
                                    .any(|v| v.persistent_volume_claim.as_ref().is_some_and(|c| c.claim_name == name))
                            })
                    }),
                    Err(_) => true,
                };
                if !in_use {
                    let _ = std::fs::remove_dir_all(&dir);
                    return;
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        });
    }
}

/// Registers the Node and reports it ready; returns its uid.
async fn register(client: &kube::Client, name: &str, kubelet_port: u16) -> anyhow::Result<Option<String>> {
    let nodes: Api<NodeObject> = Api::all(client.clone());
    let node = NodeObject {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..labelled([("kubernetes.io/hostname", name), ("kubernetes.io/os", "linux")])
        },
        ..NodeObject::default()
    };
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    let status =
        NodeObject { status: Some(ready(name, kubelet_port, Time(Timestamp::now()))), ..NodeObject::default() };
    let node = nodes.patch_status(name, &PatchParams::default(), &Patch::Merge(&status)).await?;
    Ok(node.metadata.uid)
}

/// Metadata with these labels.
fn labelled<const N: usize>(labels: [(&str, &str); N]) -> ObjectMeta {
    let labels = labels.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }
}

/// The status a node agent reports when it starts: ready, its addresses, its kubelet's port, what the
/// machine has.
fn ready(name: &str, kubelet_port: u16, now: Time) -> NodeStatus {
    let address = |type_: &str, address: &str| NodeAddress { type_: type_.into(), address: address.into() };
    NodeStatus {
        conditions: Some(vec![NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
            reason: Some("KubeletReady".into()),
            message: Some("uc node agent is ready".into()),
            last_heartbeat_time: Some(now.clone()),
            last_transition_time: Some(now),
        }]),
        addresses: Some(vec![address("InternalIP", "127.0.0.1"), address("Hostname", name)]),
        daemon_endpoints: Some(NodeDaemonEndpoints {
            kubelet_endpoint: Some(DaemonEndpoint { port: i32::from(kubelet_port) }),
        }),
        capacity: Some(machine::node().capacity()),
        allocatable: Some(machine::node().allocatable()),
        node_info: Some(machine::info()),
        ..NodeStatus::default()
    }
}

async fn run(ctx: Arc<Ctx>) {
    let pods: Api<Pod> = Api::all(ctx.client.clone());
    let mut workers: HashMap<String, watch::Sender<Arc<HeldPod>>> = HashMap::new();
    let mut listed: Option<HashSet<String>> = None;
    // New pods seen while (re)listing: they start once every listed pod's address is taken.
    let mut deferred: Vec<Pod> = Vec::new();
    let stream = watcher(pods, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(ev) = stream.next().await {
        let pod = match ev {
            Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => lean(p),
            Ok(watcher::Event::Delete(p)) => {
                // Dropping the sender ends the pod's worker.
                forget(&ctx, &p);
                workers.remove(uid(&p));
                continue;
            }
            Ok(watcher::Event::Init) => {
                listed = Some(HashSet::new());
                continue;
            }
            Ok(watcher::Event::InitDone) => {
                // A (re)list: pods that went meanwhile go now, and so does what is left on disk of pods
                // this node no longer has.
                if let Some(seen) = listed.take() {
                    workers.retain(|uid, _| seen.contains(uid));
                    ctx.pods.lock().retain(|_, e| seen.contains(e.pod.uid()));
                    tokio::spawn(collect_garbage(ctx.options.pods_dir.clone(), seen, ctx.options.network));
                }
                for v in std::mem::take(&mut deferred) {
                    start_worker(&ctx, &mut workers, v);
                }
                continue;
            }
            Err(_) => continue,
        };
        let uid = uid(&pod).to_string();
        if let Some(h) = &ctx.hosts {
            h.set_pod(&uid, Some(&pod));
        }
        let node = spec(&pod).node_name.as_deref().unwrap_or_default();
        workers.retain(|_, tx| !tx.is_closed());
        if node.is_empty() {
            // A pod that names another scheduler waits for it to bind it (`pods/binding`), as in kube.
            let ours = spec(&pod).scheduler_name.as_deref().is_none_or(|s| s.is_empty() || s == "default-scheduler");
            if ours && !is_deleting(&pod) && bind(&ctx.scheduler, &pod, &ctx.options.name).await {
                ctx.scheduler_events.record(&pod, &events::Happened::scheduled(&pod, &ctx.options.name)).await;
            }
            continue;
        }
        if node != ctx.options.name {
            continue;
        }
        if let Some(seen) = listed.as_mut() {
            seen.insert(uid.clone());
        }
        // Addresses pods have are taken before any new pod gets one: a restarted node must not hand a
        // running pod's address to another.
        match (pod_ip(&pod), listed.is_some()) {
            (Some(ip), _) => {
                ctx.ips.lock().get(&uid, Some(ip));
            }
            (None, true) if !workers.contains_key(&uid) => {
                deferred.push(pod);
                continue;
            }
            _ => {}
        }
        start_worker(&ctx, &mut workers, pod);
    }
}

/// A pod as the node reads it: without `managedFields`, which nothing here reads (as `FieldsV1` trees,
/// 60 % of a decoded pod). It is held as JSON between uses ([`HeldPod`]).
fn lean(mut pod: Pod) -> Pod {
    pod.metadata.managed_fields = None;
    pod
}

/// Hands a pod of this node to its worker, starting one for a new pod.
fn start_worker(ctx: &Arc<Ctx>, workers: &mut HashMap<String, watch::Sender<Arc<HeldPod>>>, pod: Pod) {
    // One copy of the pod, shared by the node's table and its worker.
    let v = Arc::new(HeldPod::of(&pod));
    let uid = v.uid().to_string();
    {
        let mut pods = ctx.pods.lock();
        let entry = pods.entry(key_of(&pod)).or_insert_with(|| PodEntry {
            pod: v.clone(),
            real: false,
            procs: None,
            ip: String::new(),
        });
        entry.pod = v.clone();
    }
    match workers.get(&uid) {
        Some(tx) => {
            let _ = tx.send(v);
        }
        None => {
            let real = runs_as_processes(&pod, &ctx.options.allowlist);
            if let Some(e) = ctx.pods.lock().get_mut(&key_of(&pod)) {
                e.real = real;
            }
            let (tx, rx) = watch::channel(v);
            if real {
                tokio::spawn(worker::keep_running(ctx.clone(), rx));
            } else {
                tokio::spawn(simulate::run_pod(ctx.client.clone(), rx, Arc::new(SharedIps(ctx.clone()))));
            }
            workers.insert(uid, tx);
        }
    }
}

fn forget(ctx: &Ctx, pod: &Pod) {
    let uid = uid(pod);
    if let Some(h) = &ctx.hosts {
        h.set_pod(uid, None);
    }
    // A deleted pod's address is free again (simulated pods' workers never hand theirs back).
    ctx.ips.lock().forget(uid);
    let mut pods = ctx.pods.lock();
    if pods.get(&key_of(pod)).is_some_and(|e| e.pod.uid() == uid) {
        pods.remove(&key_of(pod));
    }
}

/// Removes what is left on disk of pods this node no longer runs: their containers (still running if
/// the pod was deleted while the node was down) are killed, their directories and network namespaces
/// removed.
async fn collect_garbage(pods_dir: PathBuf, keep: HashSet<String>, network: network::Network) {
    let Ok(entries) = std::fs::read_dir(&pods_dir) else { return };
    for e in entries.flatten() {
        let uid = e.file_name().to_string_lossy().into_owned();
        if keep.contains(&uid) || !e.path().is_dir() {
            continue;
        }
        kill_containers(&e.path(), "killing a container of a pod that is gone").await;
        let _ = std::fs::remove_dir_all(e.path());
        if let network::Network::Bridged(cidr) = network {
            network::host::detach(&cidr, &uid).await;
        }
    }
}

/// Stops the containers still running that no worker took in yet (the node went before their pods were
/// made ready again after a restart): SIGTERM, SIGKILL after 10 seconds, each marked as stopped by the
/// node so that it runs again when the node is back.
async fn stop_unadopted(pods_dir: &Path) {
    let dirs = std::fs::read_dir(pods_dir).into_iter().flatten().flatten().filter(|e| e.path().is_dir());
    let containers = dirs.flat_map(|pod| {
        let path = pod.path();
        let names = std::fs::read_dir(&path).into_iter().flatten().flatten();
        names.map(move |c| container::ContainerDir::new(&path, &c.file_name().to_string_lossy())).collect::<Vec<_>>()
    });
    let running = containers.filter(|dir| dir.locked()).filter_map(|dir| {
        let state = dir.state()?;
        let record = dir.pid(state.run).filter(container::still_running)?;
        Some((dir, state, record))
    });
    futures::future::join_all(running.map(|(dir, mut state, record)| async move {
        tracing::info!(container = %dir.path().display(), pid = record.pid, "stopping a container no pod worker took in");
        container::signal_group(container::stop_group(record.pid), rustix::process::Signal::TERM);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while container::still_running(&record) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        container::kill_leftovers(&record).await;
        state.stopped_by_node = true;
        let _ = dir.write_state(&state);
    }))
    .await;
}

/// Whether every container's image, init containers' included, is allowlisted (then the pod runs
/// real processes).
fn runs_as_processes(pod: &Pod, allow: &Allowlist) -> bool {
    let allowed = |c: &Container| c.image.as_deref().is_some_and(|i| allow.find(i).is_some());
    let spec = spec(pod);
    !spec.containers.is_empty()
        && spec.containers.iter().all(allowed)
        && spec.init_containers.iter().flatten().all(allowed)
}
