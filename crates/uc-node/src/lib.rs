//! The uc node agent: registers a Node, binds unscheduled pods to it (the embedded cluster's
//! scheduler is this one line of policy), and runs the pods bound to it.
//!
//! Pods are simulated: Pending → ContainerCreating → Running, Ready after a delay, and, when asked by
//! annotation, containers that exit with a chosen code after a chosen run time, restarted according to
//! the pod's restartPolicy. A pod's status is a pure function of its spec, annotations, creation time
//! and the current time ([`simulate`]), so restarting uc recomputes the same status, and the agent
//! writes only when it changes. Real processes for allowlisted images come next (issue 4).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::watch;

pub mod names;
pub mod process;

use process::{Allowlist, PodProcesses};

/// Annotation: seconds from creation until containers start (default 0.2).
pub const START_DELAY: &str = "uc.njuics.cn/start-delay-seconds";
/// Annotation: seconds from a container's start until it is Ready (default 0).
pub const READY_DELAY: &str = "uc.njuics.cn/ready-delay-seconds";
/// Annotation: seconds a container runs before it exits (default: forever).
pub const RUN_SECONDS: &str = "uc.njuics.cn/run-seconds";
/// Annotation: the exit code of a container that exits (default 0).
pub const EXIT_CODE: &str = "uc.njuics.cn/exit-code";

/// Node agent options.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// The Node's name.
    pub name: String,
    /// Images whose pods run as real processes.
    pub allowlist: Allowlist,
    /// Where container output is kept (`<dir>/<pod uid>/<container>.log`), read by `kubectl logs`.
    pub logs_dir: std::path::PathBuf,
    /// The hosts file pod processes see as /etc/hosts (None: processes use the machine's).
    pub hosts_file: Option<std::path::PathBuf>,
    /// Pod IPs are `127.<pod_subnet>.x.y`; distinct per `uc up` so two on one machine do not collide.
    pub pod_subnet: u8,
    /// Where PersistentVolumeClaim directories live (`<dir>/<namespace>/<claim>`).
    pub volumes_dir: std::path::PathBuf,
}

impl Default for NodeOptions {
    fn default() -> Self {
        Self {
            name: "uc-node".into(),
            allowlist: Allowlist::default(),
            logs_dir: std::env::temp_dir().join("uc-pod-logs"),
            hosts_file: None,
            pod_subnet: 1,
            volumes_dir: std::env::temp_dir().join("uc-volumes"),
        }
    }
}

fn annotation_secs(pod: &Value, key: &str) -> Option<f64> {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|x| x.is_finite() && *x >= 0.0)
}

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn secs(x: f64) -> chrono::Duration {
    chrono::Duration::milliseconds((x * 1000.0) as i64)
}

/// The state of a simulated pod's containers at one moment.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Creating,
    Running {
        since: DateTime<Utc>,
        ready_at: DateTime<Utc>,
        restarts: u32,
        last_exit: Option<(i64, DateTime<Utc>, DateTime<Utc>)>,
    },
    BackOff {
        restarts: u32,
        last_exit: (i64, DateTime<Utc>, DateTime<Utc>),
    },
    Done {
        code: i64,
        started: DateTime<Utc>,
        finished: DateTime<Utc>,
        restarts: u32,
    },
}

/// Restart back-off of simulated containers: 1 s doubling to 10 s (kube's is 10 s to 5 min; tests
/// need it short).
fn backoff(restarts: u32) -> f64 {
    (1u64 << restarts.saturating_sub(1).min(4)) as f64
}

fn timeline(pod: &Value, created: DateTime<Utc>, now: DateTime<Utc>) -> (Phase, Option<DateTime<Utc>>) {
    let start_delay = annotation_secs(pod, START_DELAY).unwrap_or(0.2);
    let ready_delay = annotation_secs(pod, READY_DELAY).unwrap_or(0.0);
    let run = annotation_secs(pod, RUN_SECONDS);
    let code = pod
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(EXIT_CODE))
        .and_then(Value::as_str)
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or(0);
    let policy = pod.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("Always");
    let mut t = created + secs(start_delay);
    if now < t {
        return (Phase::Creating, Some(t));
    }
    let mut restarts = 0u32;
    let mut last_exit = None;
    for _ in 0..100_000 {
        let ready_at = t + secs(ready_delay);
        let Some(run) = run else {
            let next = (now < ready_at).then_some(ready_at);
            return (Phase::Running { since: t, ready_at, restarts, last_exit }, next);
        };
        let end = t + secs(run);
        if now < end {
            let next = if now < ready_at && ready_at < end { ready_at } else { end };
            return (Phase::Running { since: t, ready_at, restarts, last_exit }, Some(next));
        }
        let restart = policy == "Always" || (policy == "OnFailure" && code != 0);
        if !restart {
            return (Phase::Done { code, started: t, finished: end, restarts }, None);
        }
        restarts += 1;
        let exit = (code, t, end);
        let resume = end + secs(backoff(restarts));
        if now < resume {
            return (Phase::BackOff { restarts, last_exit: exit }, Some(resume));
        }
        last_exit = Some(exit);
        t = resume;
    }
    (Phase::BackOff { restarts, last_exit: (code, t, t) }, None)
}

fn condition(type_: &str, ok: bool, since: DateTime<Utc>) -> Value {
    json!({"type": type_, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": ts(since)})
}

/// The status of a simulated pod at `now`, and when it next changes.
pub fn simulate(pod: &Value, pod_ip: &str, now: DateTime<Utc>) -> (Value, Option<DateTime<Utc>>) {
    let created = pod
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or(now);
    let (phase, next) = timeline(pod, created, now);
    let uid = pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
    let containers: Vec<Value> = pod.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default();
    let terminated = |code: i64, started: DateTime<Utc>, finished: DateTime<Utc>| {
        json!({"terminated": {"exitCode": code, "reason": if code == 0 { "Completed" } else { "Error" },
                              "startedAt": ts(started), "finishedAt": ts(finished), "containerID": format!("uc://{uid}")}})
    };
    let (pod_phase, ready, ready_since, state, last_state, restarts) = match &phase {
        Phase::Creating => {
            ("Pending", false, created, json!({"waiting": {"reason": "ContainerCreating"}}), json!({}), 0)
        }
        Phase::Running { since, ready_at, restarts, last_exit } => {
            let ready = now >= *ready_at;
            let last = last_exit.map(|(c, s, f)| terminated(c, s, f)).unwrap_or(json!({}));
            (
                "Running",
                ready,
                if ready { *ready_at } else { *since },
                json!({"running": {"startedAt": ts(*since)}}),
                last,
                *restarts,
            )
        }
        Phase::BackOff { restarts, last_exit: (c, s, f) } => (
            "Running",
            false,
            *f,
            json!({"waiting": {"reason": "CrashLoopBackOff", "message": format!("back-off restarting failed container (exit code {c})")}}),
            terminated(*c, *s, *f),
            *restarts,
        ),
        Phase::Done { code, started, finished, restarts } => (
            if *code == 0 { "Succeeded" } else { "Failed" },
            false,
            *finished,
            terminated(*code, *started, *finished),
            json!({}),
            *restarts,
        ),
    };
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            json!({"name": c.get("name"), "image": c.get("image"), "imageID": "", "containerID": format!("uc://{uid}"),
                   "ready": ready, "started": matches!(phase, Phase::Running { .. }), "restartCount": restarts,
                   "state": state, "lastState": last_state})
        })
        .collect();
    let status = json!({
        "phase": pod_phase,
        "conditions": [
            condition("PodScheduled", true, created),
            condition("Initialized", true, created),
            condition("ContainersReady", ready, ready_since),
            condition("Ready", ready, ready_since),
        ],
        "hostIP": "127.0.0.1",
        "hostIPs": [{"ip": "127.0.0.1"}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": ts(created),
        "qosClass": "BestEffort",
        "containerStatuses": statuses,
    });
    (status, next)
}

/// Pod IPs from 127.<subnet>.0.0/16, one per pod uid.
struct Ips {
    subnet: u8,
    next: u32,
    by_uid: HashMap<String, String>,
}

impl Ips {
    fn get(&mut self, uid: &str, existing: Option<&str>) -> String {
        if let Some(ip) = self.by_uid.get(uid) {
            return ip.clone();
        }
        let prefix = format!("127.{}.", self.subnet);
        let ip = match existing.filter(|ip| ip.starts_with(&prefix)) {
            Some(ip) => ip.to_string(),
            None => {
                self.next = self.next.wrapping_add(1) % 65_534;
                let n = self.next + 1;
                format!("{prefix}{}.{}", n / 256, n % 256)
            }
        };
        self.by_uid.insert(uid.to_string(), ip.clone());
        ip
    }
}

/// Runs the node agent until the returned task is aborted.
pub async fn start(client: kube::Client, options: NodeOptions) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    register(&client, &options.name).await?;
    let hosts = match &options.hosts_file {
        Some(p) => Some(Arc::new(names::HostsFile::new(p.clone())?)),
        None => None,
    };
    if let Some(h) = &hosts {
        tokio::spawn(watch_endpoints(client.clone(), h.clone()));
    }
    tokio::spawn(reclaim_claims(client.clone(), options.volumes_dir.clone()));
    Ok(tokio::spawn(run(client, options, hosts)))
}

/// A claim's volume is `<volumes>/<namespace>/<claim>`; when the claim is deleted its data goes too
/// (the Delete reclaim policy of dynamically provisioned volumes), once no pod uses it any more, so a
/// new claim of the same name never finds old data. A claim deleted while uc was down keeps its
/// directory.
async fn reclaim_claims(client: kube::Client, volumes: std::path::PathBuf) {
    let api: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> = Api::all(client.clone());
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

async fn watch_endpoints(client: kube::Client, hosts: Arc<names::HostsFile>) {
    let api: Api<k8s_openapi::api::core::v1::Endpoints> = Api::all(client);
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(ev) = stream.next().await {
        let (obj, gone) = match ev {
            Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => (o, false),
            Ok(watcher::Event::Delete(o)) => (o, true),
            _ => continue,
        };
        let key = format!(
            "{}/{}",
            obj.metadata.namespace.clone().unwrap_or_default(),
            obj.metadata.name.clone().unwrap_or_default()
        );
        let v = serde_json::to_value(&obj).ok();
        hosts.set_endpoints(&key, if gone { None } else { v.as_ref() });
    }
}

async fn register(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "node-role.kubernetes.io/uc": ""}},
    }))?;
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    let now = ts(Utc::now());
    let status = json!({"status": {
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "uc node agent is ready",
                        "lastHeartbeatTime": now, "lastTransitionTime": now}],
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
        "capacity": {"cpu": "2", "memory": "24Gi", "pods": "10000"},
        "allocatable": {"cpu": "2", "memory": "24Gi", "pods": "10000"},
        "nodeInfo": {"kubeletVersion": "v1.33.0-uc", "operatingSystem": "linux", "architecture": std::env::consts::ARCH,
                     "containerRuntimeVersion": "uc://simulated", "osImage": "", "kernelVersion": "", "kubeProxyVersion": "",
                     "machineID": "", "systemUUID": "", "bootID": ""}}});
    nodes.patch_status(name, &PatchParams::default(), &Patch::Merge(&status)).await?;
    Ok(())
}

async fn run(client: kube::Client, options: NodeOptions, hosts: Option<Arc<names::HostsFile>>) {
    let pods: Api<Pod> = Api::all(client.clone());
    let ips = Arc::new(Mutex::new(Ips { subnet: options.pod_subnet, next: 0, by_uid: HashMap::new() }));
    let mut workers: HashMap<String, watch::Sender<Value>> = HashMap::new();
    let stream = watcher(pods, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(ev) = stream.next().await {
        let pod = match ev {
            Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => p,
            Ok(watcher::Event::Delete(p)) => {
                // Dropping the sender ends the pod's task.
                let uid = p.metadata.uid.as_deref().unwrap_or_default();
                if let Some(h) = &hosts {
                    h.set_pod(uid, None);
                }
                workers.remove(uid);
                continue;
            }
            _ => continue,
        };
        let Ok(v) = serde_json::to_value(&pod) else { continue };
        let uid = v.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
        if let Some(h) = &hosts {
            h.set_pod(&uid, Some(&v));
        }
        let node = v.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default();
        workers.retain(|_, tx| !tx.is_closed());
        if node.is_empty() {
            if v.pointer("/metadata/deletionTimestamp").is_none() {
                bind(&client, &v, &options.name).await;
            }
            continue;
        }
        if node != options.name {
            continue;
        }
        match workers.get(&uid) {
            Some(tx) => {
                let _ = tx.send(v);
            }
            None => {
                let real = runs_as_processes(&v, &options.allowlist);
                let (tx, rx) = watch::channel(v);
                if real {
                    tokio::spawn(run_process_pod(client.clone(), rx, ips.clone(), options.clone()));
                } else {
                    tokio::spawn(run_pod(client.clone(), rx, ips.clone()));
                }
                workers.insert(uid, tx);
            }
        }
    }
}

async fn bind(client: &kube::Client, pod: &Value, node: &str) {
    let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    let name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let patch =
        json!({"metadata": {"resourceVersion": pod.pointer("/metadata/resourceVersion")}, "spec": {"nodeName": node}});
    if let Err(e) = api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        tracing::debug!(pod = %name, error = %e, "binding failed; the next event retries");
    }
}

/// Whether every container's image, init containers' included, is allowlisted (then the pod runs
/// real processes).
fn runs_as_processes(pod: &Value, allow: &Allowlist) -> bool {
    let allowed = |c: &Value| c.get("image").and_then(Value::as_str).is_some_and(|i| allow.find(i).is_some());
    let list = |key: &str| pod.pointer(&format!("/spec/{key}")).and_then(Value::as_array).cloned().unwrap_or_default();
    let containers = list("containers");
    !containers.is_empty() && containers.iter().all(allowed) && list("initContainers").iter().all(allowed)
}

/// Whether the pod (as the typed watch delivers it) already carries `status`. The comparison goes
/// through the typed PodStatus, which drops what it cannot hold (`lastProbeTime: null`): comparing the
/// raw value would never match, and every write would cause the next.
fn same_status(pod: &Value, status: &Value) -> bool {
    let typed = serde_json::from_value::<k8s_openapi::api::core::v1::PodStatus>(status.clone())
        .ok()
        .and_then(|s| serde_json::to_value(s).ok());
    pod.get("status") == Some(typed.as_ref().unwrap_or(status))
}

async fn patch_status(client: &kube::Client, pod: &Value, status: Value) -> Result<(), kube::Error> {
    let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    let name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&json!({"status": status}))).await.map(|_| ())
}

/// How long a pod stays Terminating at least. A kubelet takes about this long to tear a pod down; a
/// pod that vanished at once would be recreated by its StatefulSet under the same name before a
/// `kubectl delete` had started watching for its deletion, and kubectl would wait for the new one.
const MIN_TERMINATION: Duration = Duration::from_millis(500);

async fn finish_deletion(client: &kube::Client, pod: &Value) {
    tokio::time::sleep(MIN_TERMINATION).await;
    let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    let name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let uid = pod.pointer("/metadata/uid").and_then(Value::as_str).map(String::from);
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let dp = kube::api::DeleteParams { grace_period_seconds: Some(0), ..Default::default() }
        .preconditions(kube::api::Preconditions { uid, resource_version: None });
    let _ = api.delete(name, &dp).await;
}

async fn run_process_pod(
    client: kube::Client,
    mut rx: watch::Receiver<Value>,
    ips: Arc<Mutex<Ips>>,
    options: NodeOptions,
) {
    let first = rx.borrow().clone();
    let uid = first.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
    let ip = ips.lock().get(&uid, first.pointer("/status/podIP").and_then(Value::as_str));
    let procs = PodProcesses::start(
        &first,
        &ip,
        &options.allowlist,
        &options.logs_dir,
        options.hosts_file.as_deref(),
        &options.volumes_dir,
    );
    let mut running = first.clone();
    loop {
        let pod = rx.borrow_and_update().clone();
        if pod.pointer("/spec/containers") != running.pointer("/spec/containers") {
            let dirs = (options.logs_dir.as_path(), options.hosts_file.as_deref(), options.volumes_dir.as_path());
            procs.update_images(&running, &pod, &options.allowlist, dirs, &ip);
            running = pod.clone();
        }
        if pod.pointer("/metadata/deletionTimestamp").is_some() {
            let grace = pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_u64).unwrap_or(30);
            procs.stop(Duration::from_secs(grace)).await;
            // emptyDir volumes go with the pod; claims' directories stay.
            let _ = std::fs::remove_dir_all(options.logs_dir.join(&uid).join("volumes"));
            finish_deletion(&client, &pod).await;
            return;
        }
        let status = process::status(&pod, &procs, &ip);
        if !same_status(&pod, &status)
            && let Err(e) = patch_status(&client, &pod, status).await
        {
            if matches!(&e, kube::Error::Api(s) if s.code == 404) {
                procs.stop(Duration::ZERO).await;
                return;
            }
            tracing::debug!(error = %e, "status update failed; retrying");
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { procs.stop(Duration::ZERO).await; return },
            _ = procs.changed.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

async fn run_pod(client: kube::Client, mut rx: watch::Receiver<Value>, ips: Arc<Mutex<Ips>>) {
    loop {
        let pod = rx.borrow_and_update().clone();
        let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_string();
        let name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
        let uid = pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
        if pod.pointer("/metadata/deletionTimestamp").is_some() {
            // Graceful deletion: the containers are simulated, so they stop at once.
            finish_deletion(&client, &pod).await;
            return;
        }
        let ip = ips.lock().get(&uid, pod.pointer("/status/podIP").and_then(Value::as_str));
        let (mut status, next) = simulate(&pod, &ip, Utc::now());
        status["reason"] = json!("Simulated");
        status["message"] =
            json!("simulated by uc-node: the pod's images are not all on the node's allowlist, so nothing executes");
        if !same_status(&pod, &status) {
            let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
            if let Err(e) =
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&json!({"status": status}))).await
            {
                if matches!(&e, kube::Error::Api(s) if s.code == 404) {
                    return;
                }
                tracing::debug!(pod = %name, error = %e, "status update failed; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        }
        let wait = next.map(|t| (t - Utc::now()).to_std().unwrap_or(Duration::from_millis(10)));
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(wait.unwrap_or(Duration::from_secs(3600))) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(annotations: Value, policy: &str) -> Value {
        json!({"metadata": {"uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z", "annotations": annotations},
               "spec": {"restartPolicy": policy, "containers": [{"name": "c", "image": "i"}]}})
    }

    fn at(secs: f64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().with_timezone(&Utc) + super::secs(secs)
    }

    fn phase_ready_restarts(p: &Value, t: f64) -> (String, bool, i64) {
        let (s, _) = simulate(p, "127.1.0.2", at(t));
        (
            s["phase"].as_str().unwrap().to_string(),
            s["containerStatuses"][0]["ready"].as_bool().unwrap(),
            s["containerStatuses"][0]["restartCount"].as_i64().unwrap(),
        )
    }

    #[test]
    fn long_running_pods_start_then_become_ready() {
        let p = pod(json!({READY_DELAY: "1"}), "Always");
        assert_eq!(phase_ready_restarts(&p, 0.1), ("Pending".into(), false, 0));
        assert_eq!(phase_ready_restarts(&p, 0.5), ("Running".into(), false, 0));
        assert_eq!(phase_ready_restarts(&p, 1.3), ("Running".into(), true, 0));
        let (s, next) = simulate(&p, "127.1.0.2", at(0.5));
        assert_eq!(next, Some(at(1.2)));
        assert_eq!(s["podIP"], json!("127.1.0.2"));
        assert_eq!(simulate(&p, "127.1.0.2", at(5.0)).1, None, "nothing changes any more");
        assert_eq!(
            simulate(&p, "127.1.0.2", at(5.0)).0,
            simulate(&p, "127.1.0.2", at(50.0)).0,
            "a pure function of time"
        );
    }

    #[test]
    fn exits_follow_the_restart_policy() {
        let ok = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "0"}), "Never");
        assert_eq!(phase_ready_restarts(&ok, 2.0).0, "Succeeded");
        let bad = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "3"}), "Never");
        let (s, _) = simulate(&bad, "ip", at(2.0));
        assert_eq!(s["phase"], json!("Failed"));
        assert_eq!(s["containerStatuses"][0]["state"]["terminated"]["exitCode"], json!(3));
        let retry = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "3"}), "OnFailure");
        assert_eq!(phase_ready_restarts(&retry, 1.5), ("Running".into(), false, 1), "backing off");
        assert_eq!(phase_ready_restarts(&retry, 2.3).2, 1, "running again after 1 s");
        let (s, _) = simulate(&retry, "ip", at(2.3));
        assert_eq!(s["containerStatuses"][0]["lastState"]["terminated"]["exitCode"], json!(3));
        let done = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "0"}), "OnFailure");
        assert_eq!(phase_ready_restarts(&done, 3.0).0, "Succeeded");
        let always = pod(json!({RUN_SECONDS: "1"}), "Always");
        assert_eq!(phase_ready_restarts(&always, 10.0).2, 3, "1 s runs with 1, 2, 4 s back-offs");
    }

    #[test]
    fn a_status_written_once_matches_what_the_typed_watch_brings_back() {
        let mut p = pod(json!({}), "Always");
        let (status, _) = simulate(&p, "127.1.0.2", at(5.0));
        assert!(!same_status(&p, &status));
        // What the node's watch delivers: the pod after a trip through the typed Pod.
        p["status"] = status.clone();
        let typed: Pod = serde_json::from_value(p).unwrap();
        let seen = serde_json::to_value(typed).unwrap();
        assert_ne!(seen.get("status"), Some(&status), "the typed pod drops lastProbeTime: null");
        assert!(same_status(&seen, &status), "so the comparison must go through the typed status too");
    }
}
