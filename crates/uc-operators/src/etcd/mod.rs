//! The etcd operator (coreos etcd-operator semantics, `etcd.database.coreos.com/v1beta2`): an
//! `EtcdCluster` becomes a headless peer Service, a `<name>-client` Service and one pod per member,
//! each running real etcd. The sync hook is native because it talks to etcd: membership changes go
//! through etcd's member API *before* a pod starts or after it stops, one change at a time.
//!
//! One sync step, from what the hook observes (pods, and etcd's member list through a Ready member):
//! 1. no pods and no members: start the seed member (`--initial-cluster-state=new`, the cluster's uid
//!    as the token);
//! 2. a member that etcd knows but has no pod (added, then uc stopped before creating the pod): create
//!    its pod with `--initial-cluster-state=existing`;
//! 3. wait while a pod is not Ready;
//! 4. promote a learner that has caught up;
//! 5. a started member whose pod is gone while quorum holds: remove it (it is replaced by step 6);
//! 6. fewer members than `size`: add one as a learner, then create its pod; more: remove the newest
//!    member from etcd, then its pod.
//!
//! Members are named `<cluster>-<index>` (four digits, never reused while the cluster exists); peer
//! and client URLs use pod DNS names under the headless Service.

pub mod backup;
pub mod client;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use uc_engine::hooks::HookKind;
use uc_engine::hooks::native::{HookFuture, NativeRegistry};

use client::{Etcd, Member};

/// API group of the etcd operator's resources (the coreos one, so its YAML applies as written).
pub const GROUP: &str = "etcd.database.coreos.com";
/// Name of the native hook.
pub const HOOK: &str = "etcd-cluster";
const DEFAULT_REPOSITORY: &str = "quay.io/coreos/etcd";
const CLIENT_PORT: u16 = 2379;
const PEER_PORT: u16 = 2380;

/// The EtcdCluster CRD: `size` 1..7 and the version format are checked by the schema.
pub fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("etcdclusters.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"kind": "EtcdCluster", "listKind": "EtcdClusterList", "plural": "etcdclusters",
                      "singular": "etcdcluster", "shortNames": ["etcd"]},
            "versions": [{
                "name": "v1beta2", "served": true, "storage": true, "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Ready", "type": "integer", "jsonPath": ".status.readyMembers"},
                    {"name": "Version", "type": "string", "jsonPath": ".status.currentVersion"},
                    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 7},
                        "version": {"type": "string", "pattern": "^v?3\\.[0-9]+\\.[0-9]+$"},
                        "repository": {"type": "string"},
                        "pod": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}
            }]
        }
    })
}

/// The operator's CRDs.
pub fn crds() -> Vec<Value> {
    vec![crd(), backup::crd()]
}

/// The operator's UniversalControllers.
pub fn controllers() -> Vec<Value> {
    vec![controller(), backup::controller()]
}

/// The UniversalController of EtcdClusters.
pub fn controller() -> Value {
    json!({
        "apiVersion": uc_api::controller::API_VERSION, "kind": "UniversalController",
        "metadata": {"name": "etcd-operator", "labels": {"uc.njuics.cn/operator": "etcd"}},
        "spec": {
            "generateSelector": true,
            "resyncPeriodSeconds": 10,
            "parentResource": {"apiVersion": format!("{GROUP}/v1beta2"), "resource": "etcdclusters"},
            "childResources": [
                {"apiVersion": "v1", "resource": "services", "updateStrategy": {"method": "InPlace"}},
                {"apiVersion": "v1", "resource": "pods", "updateStrategy": {"method": "OnDelete"}}
            ],
            "hooks": {"sync": {"native": {"name": HOOK}}}
        }
    })
}

/// Registers the native hook.
pub fn register(natives: &mut NativeRegistry) {
    let etcd = Etcd::default();
    natives.register(
        HOOK,
        Arc::new(move |_kind: HookKind, request: Value| -> HookFuture {
            let etcd = etcd.clone();
            // Never an error: what goes wrong is reported in the cluster's status.
            Box::pin(async move { Ok(sync(&etcd, &request).await) })
        }),
    );
    natives.register(
        backup::HOOK,
        Arc::new(|_kind: HookKind, request: Value| -> HookFuture {
            Box::pin(async move { Ok(backup::sync(&request).await) })
        }),
    );
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or_default()
}

fn children(request: &Value, key: &str) -> Map<String, Value> {
    crate::workloads::obj_map(request, key)
}

/// The cluster as the spec describes it.
struct Spec {
    name: String,
    namespace: String,
    uid: String,
    size: usize,
    version: String,
    repository: String,
}

impl Spec {
    fn from(parent: &Value) -> Result<Spec, String> {
        let size = parent.pointer("/spec/size").and_then(Value::as_u64).unwrap_or(0) as usize;
        if !(1..=7).contains(&size) {
            return Err(format!("spec.size: {size} is not between 1 and 7"));
        }
        let version = s(parent, "/spec/version").trim_start_matches('v').to_string();
        let version = if version.is_empty() { "3.2.13".to_string() } else { version };
        let parts: Vec<&str> = version.split('.').collect();
        if parts.len() != 3 || parts[0] != "3" || parts.iter().any(|p| p.parse::<u32>().is_err()) {
            return Err(format!("spec.version: {version:?} is not an etcd 3.x version"));
        }
        let repository = match s(parent, "/spec/repository") {
            "" => DEFAULT_REPOSITORY.to_string(),
            r => r.to_string(),
        };
        Ok(Spec {
            name: s(parent, "/metadata/name").into(),
            namespace: s(parent, "/metadata/namespace").into(),
            uid: s(parent, "/metadata/uid").into(),
            size,
            version,
            repository,
        })
    }

    fn host(&self, member: &str) -> String {
        format!("{member}.{}.{}.svc", self.name, self.namespace)
    }

    fn peer_url(&self, member: &str) -> String {
        format!("http://{}:{PEER_PORT}", self.host(member))
    }

    fn client_url(&self, member: &str) -> String {
        format!("http://{}:{CLIENT_PORT}", self.host(member))
    }

    fn member_name(&self, index: u32) -> String {
        format!("{}-{index:04}", self.name)
    }

    fn index_of(&self, member: &str) -> Option<u32> {
        member.strip_prefix(&self.name)?.strip_prefix('-')?.parse().ok()
    }

    fn labels(&self) -> Value {
        json!({"app": "etcd", "etcd_cluster": self.name})
    }

    fn services(&self) -> Vec<Value> {
        let ports = json!([{"name": "client", "port": CLIENT_PORT, "targetPort": CLIENT_PORT},
                           {"name": "peer", "port": PEER_PORT, "targetPort": PEER_PORT}]);
        vec![
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": self.name, "labels": self.labels()},
                   "spec": {"clusterIP": "None", "publishNotReadyAddresses": true, "selector": self.labels(), "ports": ports}}),
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": format!("{}-client", self.name), "labels": self.labels()},
                   "spec": {"selector": self.labels(),
                            "ports": [{"name": "client", "port": CLIENT_PORT, "targetPort": CLIENT_PORT}]}}),
        ]
    }

    /// A member's pod. `initial_cluster` lists `name=peerURL` of every member it starts with.
    fn pod(&self, member: &str, initial_cluster: &str, state: &str) -> Value {
        let command = vec![
            "/usr/local/bin/etcd".to_string(),
            "--data-dir=/var/etcd/data".into(),
            format!("--name={member}"),
            format!("--initial-advertise-peer-urls={}", self.peer_url(member)),
            format!("--listen-peer-urls=http://$(POD_IP):{PEER_PORT}"),
            format!("--listen-client-urls=http://$(POD_IP):{CLIENT_PORT}"),
            format!("--advertise-client-urls={}", self.client_url(member)),
            format!("--initial-cluster={initial_cluster}"),
            format!("--initial-cluster-state={state}"),
            format!("--initial-cluster-token={}", self.uid),
        ];
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": member, "labels": self.labels(),
                         "annotations": {"etcd.version": self.version}},
            "spec": {
                "hostname": member, "subdomain": self.name,
                // A member that dies is replaced, not restarted: its data may be gone (coreos does the same).
                "restartPolicy": "Never",
                "containers": [{
                    "name": "etcd", "image": format!("{}:v{}", self.repository, self.version),
                    "command": command,
                    "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                    "ports": [{"name": "client", "containerPort": CLIENT_PORT}, {"name": "peer", "containerPort": PEER_PORT}],
                    "readinessProbe": {"httpGet": {"path": "/health", "port": CLIENT_PORT},
                                       "initialDelaySeconds": 0, "periodSeconds": 1, "failureThreshold": 3},
                    "volumeMounts": [{"name": "etcd-data", "mountPath": "/var/etcd"}]
                }],
                "volumes": [{"name": "etcd-data", "emptyDir": {}}]
            }
        })
    }
}

fn pod_ready(pod: &Value) -> bool {
    crate::workloads::is_ready(pod) && pod.pointer("/metadata/deletionTimestamp").is_none()
}

fn pod_failed(pod: &Value) -> bool {
    matches!(s(pod, "/status/phase"), "Failed" | "Succeeded")
}

fn condition(type_: &str, ok: bool, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": if ok { "True" } else { "False" }, "reason": reason, "message": message})
}

/// What one sync decided.
struct Step {
    pods: Vec<Value>,
    phase: &'static str,
    conditions: Vec<Value>,
    /// Sync again soon: a change is under way.
    busy: bool,
}

/// One sync of an EtcdCluster.
async fn sync(etcd: &Etcd, request: &Value) -> Value {
    let parent = &request["parent"];
    let observed_pods = children(request, "Pod.v1");
    let spec = match Spec::from(parent) {
        Ok(s) => s,
        Err(message) => {
            // Keep whatever runs; a bad edit must not take a cluster down.
            let mut kept: Vec<Value> = children(request, "Service.v1").into_values().collect();
            kept.extend(observed_pods.into_values());
            let mut status = parent.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
            status["phase"] =
                json!(if kept.is_empty() { "Failed" } else { status["phase"].as_str().unwrap_or("Failed") });
            status["reason"] = json!(message);
            status["conditions"] = json!([condition("Available", false, "InvalidSpec", &message)]);
            return json!({"status": status, "children": kept});
        }
    };
    let step = plan(etcd, &spec, &observed_pods, parent).await;
    let mut members_ready = Vec::new();
    let mut members_unready = Vec::new();
    for p in &step.pods {
        let name = s(p, "/metadata/name").to_string();
        match observed_pods.get(&name) {
            Some(o) if pod_ready(o) => members_ready.push(name),
            _ => members_unready.push(name),
        }
    }
    members_ready.sort();
    members_unready.sort();
    // The next member index, kept in the status so that a removed member's name is never reused.
    let next_index = observed_pods
        .keys()
        .chain(step.pods.iter().map(|p| s(p, "/metadata/name")).map(String::from).collect::<Vec<_>>().iter())
        .filter_map(|n| spec.index_of(n))
        .map(|i| u64::from(i) + 1)
        .chain(parent.pointer("/status/nextMemberIndex").and_then(Value::as_u64))
        .max()
        .unwrap_or(0);
    let mut children = spec.services();
    children.extend(step.pods);
    json!({
        "status": {
            "phase": step.phase,
            "size": members_ready.len() + members_unready.len(),
            "readyMembers": members_ready.len(),
            "members": {"ready": members_ready, "unready": members_unready},
            "currentVersion": spec.version,
            "targetVersion": spec.version,
            "serviceName": spec.name,
            "clientPort": CLIENT_PORT,
            "nextMemberIndex": next_index,
            "conditions": step.conditions,
        },
        "children": children,
        "resyncAfterSeconds": if step.busy { 1.0 } else { 10.0 },
    })
}

async fn plan(etcd: &Etcd, spec: &Spec, observed: &Map<String, Value>, parent: &Value) -> Step {
    let mine: BTreeMap<String, Value> = observed
        .iter()
        .filter(|(n, p)| spec.index_of(n).is_some() && p.pointer("/metadata/deletionTimestamp").is_none())
        .map(|(n, p)| (n.clone(), p.clone()))
        .collect();
    // Pods are re-listed as they are: pods are never changed in place.
    let keep =
        |names: &BTreeSet<String>| -> Vec<Value> { names.iter().filter_map(|n| mine.get(n)).map(strip).collect() };
    let alive: BTreeSet<String> = mine.iter().filter(|(_, p)| !pod_failed(p)).map(|(n, _)| n.clone()).collect();
    let ready: Vec<&Value> = mine.values().filter(|p| pod_ready(p)).collect();
    let was_running = s(parent, "/status/phase") == "Running" || s(parent, "/status/phase") == "Scaling";

    // 1. Bootstrap.
    if mine.is_empty() && !was_running {
        let seed = spec.member_name(0);
        let pod = spec.pod(&seed, &format!("{seed}={}", spec.peer_url(&seed)), "new");
        return Step {
            pods: vec![pod],
            phase: "Creating",
            conditions: vec![condition(
                "Available",
                false,
                "Bootstrapping",
                &format!("starting the seed member {seed}"),
            )],
            busy: true,
        };
    }
    // etcd's own view, through any Ready member.
    let mut members = None;
    let mut last_error = String::from("no member is Ready");
    for p in &ready {
        let endpoint = format!("http://{}:{CLIENT_PORT}", s(p, "/status/podIP"));
        match etcd.members(&endpoint).await {
            Ok(m) => {
                members = Some((endpoint, m));
                break;
            }
            Err(e) => last_error = e,
        }
    }
    let Some((endpoint, members)) = members else {
        let starting = alive.len() == mine.len() && !mine.is_empty() && !was_running;
        let (phase, reason) = if starting { ("Creating", "Bootstrapping") } else { ("Failed", "QuorumLost") };
        let message = if starting {
            "waiting for the first member to become Ready".to_string()
        } else {
            format!(
                "no member answers ({last_error}); the cluster cannot be repaired without quorum: restore it from a backup"
            )
        };
        return Step {
            pods: keep(&alive),
            phase,
            conditions: vec![condition("Available", false, reason, &message)],
            busy: starting,
        };
    };
    let by_peer = |m: &Member, name: &str| m.peer_urls.iter().any(|u| *u == spec.peer_url(name));
    let voting = members.iter().filter(|m| !m.is_learner).count();
    let healthy_voting =
        members.iter().filter(|m| !m.is_learner && ready.iter().any(|p| by_peer(m, s(p, "/metadata/name")))).count();
    let quorum = healthy_voting > voting / 2;
    let mut pods = alive.clone();
    let initial_cluster = |extra: &str| -> String {
        let mut entries: Vec<String> = members
            .iter()
            .filter_map(|m| {
                let name = if m.name.is_empty() {
                    m.peer_urls
                        .first()
                        .and_then(|u| u.strip_prefix("http://"))
                        .and_then(|h| h.split('.').next())?
                        .to_string()
                } else {
                    m.name.clone()
                };
                Some(format!("{name}={}", m.peer_urls.first()?))
            })
            .collect();
        if !extra.is_empty() && !entries.iter().any(|e| e.starts_with(&format!("{extra}="))) {
            entries.push(format!("{extra}={}", spec.peer_url(extra)));
        }
        entries.sort();
        entries.join(",")
    };
    let scaling = |msg: String| condition("Scaling", true, "Scaling", &msg);
    let done = |pods: &BTreeSet<String>, phase: &'static str, conditions: Vec<Value>, busy: bool| Step {
        pods: keep(pods),
        phase,
        conditions,
        busy,
    };

    // 2. A member etcd knows of without a pod: added before a stop; start it now.
    for m in members.iter().filter(|m| m.name.is_empty()) {
        let Some(name) = (0..10_000u32).map(|i| spec.member_name(i)).find(|n| by_peer(m, n)) else { continue };
        if !mine.contains_key(&name) {
            let mut out = keep(&pods);
            out.push(spec.pod(&name, &initial_cluster(&name), "existing"));
            return Step {
                pods: out,
                phase: "Scaling",
                conditions: vec![
                    condition("Available", quorum, "MemberStarting", ""),
                    scaling(format!("starting member {name}")),
                ],
                busy: true,
            };
        }
    }
    // 3. Wait for every pod.
    if let Some((name, _)) = mine.iter().find(|(n, p)| alive.contains(*n) && !pod_ready(p)) {
        return done(
            &pods,
            "Scaling",
            vec![condition("Available", quorum, "MemberStarting", &format!("waiting for {name} to become Ready"))],
            true,
        );
    }
    // 4. Promote a learner.
    if let Some(l) = members.iter().find(|m| m.is_learner) {
        let busy = match etcd.promote(&endpoint, &l.id).await {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(member = %l.name, error = %e, "learner not promoted yet");
                true
            }
        };
        return done(
            &pods,
            "Scaling",
            vec![condition("Available", quorum, "Promoting", ""), scaling(format!("promoting learner {}", l.name))],
            busy,
        );
    }
    // 5. Replace dead members while quorum holds; without it, say so.
    let dead: Vec<&Member> = members.iter().filter(|m| !m.name.is_empty() && !alive.contains(&m.name)).collect();
    if let Some(d) = dead.first() {
        if !quorum {
            return done(
                &pods,
                "Failed",
                vec![condition(
                    "Available",
                    false,
                    "QuorumLost",
                    &format!("{} of {voting} voting members are healthy; restore from a backup", healthy_voting),
                )],
                false,
            );
        }
        if let Err(e) = etcd.remove(&endpoint, &d.id).await {
            return done(&pods, "Recovering", vec![condition("Recovering", true, "RemoveFailed", &e)], true);
        }
        pods.remove(&d.name);
        return done(
            &pods,
            "Recovering",
            vec![
                condition("Available", true, "Recovering", ""),
                condition("Recovering", true, "MemberDead", &format!("removed dead member {}", d.name)),
            ],
            true,
        );
    }
    // 6. Scale.
    let started: Vec<&Member> = members.iter().filter(|m| !m.name.is_empty()).collect();
    if members.len() < spec.size {
        let next = mine
            .keys()
            .chain(members.iter().map(|m| &m.name))
            .filter_map(|n| spec.index_of(n))
            .max()
            .map_or(0, |i| i + 1);
        let next = next.max(parent.pointer("/status/nextMemberIndex").and_then(Value::as_u64).unwrap_or(0) as u32);
        let name = spec.member_name(next);
        if let Err(e) = etcd.add(&endpoint, &spec.peer_url(&name), true).await {
            return done(&pods, "Scaling", vec![condition("Available", true, "AddFailed", &e)], true);
        }
        let mut out = keep(&pods);
        out.push(spec.pod(&name, &initial_cluster(&name), "existing"));
        return Step {
            pods: out,
            phase: "Scaling",
            conditions: vec![condition("Available", true, "Scaling", ""), scaling(format!("adding member {name}"))],
            busy: true,
        };
    }
    if members.len() > spec.size {
        let newest = started.iter().max_by_key(|m| spec.index_of(&m.name));
        if let Some(m) = newest {
            if let Err(e) = etcd.remove(&endpoint, &m.id).await {
                return done(&pods, "Scaling", vec![condition("Available", true, "RemoveFailed", &e)], true);
            }
            pods.remove(&m.name);
            return done(
                &pods,
                "Scaling",
                vec![condition("Available", true, "Scaling", ""), scaling(format!("removing member {}", m.name))],
                true,
            );
        }
    }
    done(
        &pods,
        "Running",
        vec![condition("Available", true, "Available", &format!("{} members", members.len()))],
        false,
    )
}

/// An observed pod, as a desired child: what uc wrote (status and server fields go).
fn strip(pod: &Value) -> Value {
    uc_engine::apply::last_applied(pod).unwrap_or_else(|| {
        let mut p = pod.clone();
        if let Some(m) = p.as_object_mut() {
            m.remove("status");
        }
        p
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent(size: u64, version: &str) -> Value {
        json!({"metadata": {"name": "ex", "namespace": "default", "uid": "u1"}, "spec": {"size": size, "version": version}})
    }

    #[test]
    fn specs_are_checked_and_names_derived() {
        assert!(Spec::from(&parent(0, "3.2.13")).is_err());
        assert!(Spec::from(&parent(8, "3.2.13")).is_err());
        assert!(Spec::from(&parent(3, "banana")).is_err());
        assert!(Spec::from(&parent(3, "4.0.0")).is_err());
        let s = Spec::from(&parent(3, "v3.2.13")).unwrap();
        assert_eq!(s.version, "3.2.13");
        assert_eq!(s.member_name(2), "ex-0002");
        assert_eq!(s.index_of("ex-0002"), Some(2));
        assert_eq!(s.index_of("ex-client"), None);
        assert_eq!(s.peer_url("ex-0000"), "http://ex-0000.ex.default.svc:2380");
        let pod = s.pod("ex-0000", "ex-0000=http://ex-0000.ex.default.svc:2380", "new");
        let cmd: Vec<&str> =
            pod["spec"]["containers"][0]["command"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert!(cmd.contains(&"--initial-cluster-state=new") && cmd.contains(&"--initial-cluster-token=u1"));
        assert_eq!(pod["spec"]["containers"][0]["image"], json!("quay.io/coreos/etcd:v3.2.13"));
        assert_eq!(s.services()[0]["spec"]["clusterIP"], json!("None"));
        assert_eq!(s.services()[1]["metadata"]["name"], json!("ex-client"));
    }

    #[tokio::test]
    async fn bootstrap_starts_one_seed_member_and_bad_specs_keep_what_runs() {
        let etcd = Etcd::default();
        let req = json!({"parent": parent(3, "3.2.13"), "children": {"Pod.v1": {}, "Service.v1": {}}});
        let out = sync(&etcd, &req).await;
        let pods: Vec<&Value> = out["children"].as_array().unwrap().iter().filter(|c| c["kind"] == "Pod").collect();
        assert_eq!(pods.len(), 1, "one seed member first");
        assert_eq!(out["status"]["phase"], json!("Creating"));
        let bad = json!({"parent": parent(3, "nope"), "children": {"Pod.v1": {"ex-0000": {"metadata": {"name": "ex-0000"}}}}});
        let out = sync(&etcd, &bad).await;
        assert_eq!(out["children"].as_array().unwrap().len(), 1, "a running member is kept");
        assert!(out["status"]["reason"].as_str().unwrap().contains("spec.version"));
        let bad_new = json!({"parent": parent(3, "nope"), "children": {}});
        assert_eq!(sync(&etcd, &bad_new).await["children"], json!([]), "no pod for an invalid spec");
    }
}
