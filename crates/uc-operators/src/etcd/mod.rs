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
pub mod restore;
pub mod storage;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Map, Value, json};
use uc_engine::hooks::HookKind;
use uc_engine::hooks::native::{HookFuture, NativeRegistry};

use client::{Etcd, Member};

/// API group of the etcd operator's resources (the coreos one, so its YAML applies as written).
pub const GROUP: &str = "etcd.database.coreos.com";
/// Name of the native hook.
pub const HOOK: &str = "etcd-cluster";
/// Where a restore's seed member records the restore (`EtcdRestore` uid).
const RESTORE_ID: &str = "/metadata/annotations/etcd.database.coreos.com~1restore-id";
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
                        "pod": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                            "persistentVolumeClaimSpec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                        "restoreOnQuorumLoss": {"type": "object", "required": ["backupName"], "properties": {
                            "backupName": {"type": "string", "minLength": 1},
                            "afterSeconds": {"type": "integer", "minimum": 0}}}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}
            }]
        }
    })
}

/// The operator's CRDs.
pub fn crds() -> Vec<Value> {
    vec![crd(), backup::crd(), restore::crd()]
}

/// The operator's UniversalControllers.
pub fn controllers() -> Vec<Value> {
    vec![controller(), backup::controller(), restore::controller()]
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
                // In place: a version change sets a member's image on its running pod (nothing else of
                // a member's pod ever changes).
                {"apiVersion": "v1", "resource": "pods", "updateStrategy": {"method": "InPlace"}},
                // Members' data claims (pod.persistentVolumeClaimSpec): made once, never changed.
                {"apiVersion": "v1", "resource": "persistentvolumeclaims", "updateStrategy": {"method": "OnDelete"}}
            ],
            "hooks": {"sync": {"native": {"name": HOOK}}}
        }
    })
}

/// Registers the native hooks. `client` reaches the API server for what crosses objects: a restore
/// marks its EtcdCluster, a cluster that lost quorum reads its backup and creates an EtcdRestore.
/// `names` resolves the in-cluster names backups address etcd by.
pub fn register(natives: &mut NativeRegistry, client: kube::Client, names: Option<uc_engine::names::ClusterNames>) {
    let etcd = Etcd::default();
    let kube = client.clone();
    natives.register(
        HOOK,
        Arc::new(move |_kind: HookKind, request: Value| -> HookFuture {
            let etcd = etcd.clone();
            let kube = kube.clone();
            // Never an error: what goes wrong is reported in the cluster's status.
            Box::pin(async move { Ok(sync(&etcd, Some(&kube), &request).await) })
        }),
    );
    let restorer = client.clone();
    natives.register(
        restore::HOOK,
        Arc::new(move |_kind: HookKind, request: Value| -> HookFuture {
            let client = restorer.clone();
            Box::pin(async move { Ok(restore::sync(&client, &request).await) })
        }),
    );
    let kube = client.clone();
    natives.register(
        backup::HOOK,
        Arc::new(move |_kind: HookKind, request: Value| -> HookFuture {
            let (kube, names) = (kube.clone(), names.clone());
            Box::pin(async move { Ok(backup::sync(Some(&kube), names.as_ref(), &request).await) })
        }),
    );
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or_default()
}

/// The API of one of the operator's resources in a namespace.
fn api(client: &kube::Client, namespace: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, "v1beta2", kind);
    Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk_with_plural(&gvk, plural))
}

fn children<'a>(request: &'a Value, key: &str) -> &'a Map<String, Value> {
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
    /// Opt-in: restore from this EtcdBackup's latest snapshot once quorum has been lost this long.
    restore_on_quorum_loss: Option<(String, u64)>,
    /// coreos `PodPolicy`: what every member's pod gets.
    pod_policy: Value,
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
        let restore_on_quorum_loss = parent
            .pointer("/spec/restoreOnQuorumLoss")
            .map(|r| (s(r, "/backupName").to_string(), r.get("afterSeconds").and_then(Value::as_u64).unwrap_or(30)));
        if let Some((backup, _)) = &restore_on_quorum_loss
            && backup.is_empty()
        {
            return Err("spec.restoreOnQuorumLoss.backupName: names the EtcdBackup to restore from".into());
        }
        Ok(Spec {
            name: s(parent, "/metadata/name").into(),
            namespace: s(parent, "/metadata/namespace").into(),
            uid: s(parent, "/metadata/uid").into(),
            size,
            version,
            repository,
            restore_on_quorum_loss,
            pod_policy: parent.pointer("/spec/pod").cloned().unwrap_or(Value::Null),
        })
    }

    fn image(&self) -> String {
        format!("{}:v{}", self.repository, self.version)
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
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": member, "labels": self.labels(),
                         "annotations": {"etcd.version": self.version}},
            "spec": {
                "hostname": member, "subdomain": self.name,
                // A member that dies is replaced, not restarted: its data may be gone (coreos does the same).
                "restartPolicy": "Never",
                "containers": [{
                    "name": "etcd", "image": self.image(),
                    "command": command,
                    "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                    "ports": [{"name": "client", "containerPort": CLIENT_PORT}, {"name": "peer", "containerPort": PEER_PORT}],
                    "readinessProbe": {"httpGet": {"path": "/health", "port": CLIENT_PORT},
                                       "initialDelaySeconds": 0, "periodSeconds": 1, "failureThreshold": 3},
                    "volumeMounts": [{"name": "etcd-data", "mountPath": "/var/etcd"}]
                }],
                "volumes": [{"name": "etcd-data", "emptyDir": {}}]
            }
        });
        self.apply_pod_policy(&mut pod);
        if self.pod_policy.get("persistentVolumeClaimSpec").is_some_and(Value::is_object) {
            pod["spec"]["volumes"][0] = json!({"name": "etcd-data", "persistentVolumeClaim": {"claimName": member}});
        }
        pod
    }

    /// The data claim a member's pod names, if any (it goes with the member).
    fn claim_of(&self, pod: &Value) -> Option<Value> {
        let volumes = pod.pointer("/spec/volumes")?.as_array()?;
        let claim = volumes.iter().find_map(|v| v.pointer("/persistentVolumeClaim/claimName")?.as_str())?;
        let spec = self.pod_policy.get("persistentVolumeClaimSpec").filter(|s| s.is_object()).cloned().unwrap_or_else(
            || json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}),
        );
        Some(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": claim, "labels": self.labels()}, "spec": spec}))
    }

    /// The coreos `PodPolicy`: labels and annotations (the operator's own win), `etcdEnv`, `resources`,
    /// and the scheduling and security fields copied onto the pod as they are.
    fn apply_pod_policy(&self, pod: &mut Value) {
        let policy = &self.pod_policy;
        for (from, to) in [("labels", "labels"), ("annotations", "annotations")] {
            for (k, v) in policy.get(from).and_then(Value::as_object).into_iter().flatten() {
                let map = &mut pod["metadata"][to];
                if map.get(k).is_none() && v.is_string() {
                    map[k] = v.clone();
                }
            }
        }
        let container = &mut pod["spec"]["containers"][0];
        if let Some(env) = policy.get("etcdEnv").and_then(Value::as_array)
            && let Some(list) = container["env"].as_array_mut()
        {
            list.extend(env.iter().filter(|e| e.get("name").is_some_and(|n| n != "POD_IP")).cloned());
        }
        if let Some(r) = policy.get("resources").filter(|r| r.is_object()) {
            container["resources"] = r.clone();
        }
        for field in ["nodeSelector", "affinity", "tolerations", "securityContext", "priorityClassName"] {
            if let Some(v) = policy.get(field).filter(|v| !v.is_null()) {
                pod["spec"][field] = v.clone();
            }
        }
    }
}

impl Spec {
    /// The seed member of a restore: an init container writes its data directory from the snapshot
    /// (`etcdctl snapshot restore`, the image's own etcdctl) before etcd starts on it.
    fn restore_pod(&self, member: &str, snapshot: &std::path::Path, id: &str) -> Value {
        let mut pod = self.pod(member, &format!("{member}={}", self.peer_url(member)), "new");
        let dir = snapshot.parent().map(|d| d.display().to_string()).unwrap_or_else(|| "/".into());
        let file = snapshot.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        pod["metadata"]["annotations"]["etcd.database.coreos.com/restored-from"] =
            json!(snapshot.display().to_string());
        pod["metadata"]["annotations"]["etcd.database.coreos.com/restore-id"] = json!(id);
        pod["spec"]["initContainers"] = json!([{
            "name": "restore", "image": self.image(),
            "command": ["/usr/local/bin/etcdctl", "snapshot", "restore", format!("/var/etcd-restore/{file}"),
                format!("--name={member}"),
                format!("--initial-cluster={member}={}", self.peer_url(member)),
                format!("--initial-cluster-token={}", self.uid),
                format!("--initial-advertise-peer-urls={}", self.peer_url(member)),
                "--data-dir=/var/etcd/data"],
            "env": [{"name": "ETCDCTL_API", "value": "3"}],
            "volumeMounts": [{"name": "etcd-data", "mountPath": "/var/etcd"},
                             {"name": "backup", "mountPath": "/var/etcd-restore", "readOnly": true}]
        }]);
        if let Some(v) = pod.pointer_mut("/spec/volumes").and_then(Value::as_array_mut) {
            v.push(json!({"name": "backup", "hostPath": {"path": dir, "type": "Directory"}}));
        }
        pod
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
    /// Quorum is lost (the cluster cannot repair itself).
    quorum_lost: bool,
}

/// One sync of an EtcdCluster.
async fn sync(etcd: &Etcd, kube: Option<&kube::Client>, request: &Value) -> Value {
    let parent = &request["parent"];
    let observed_pods = children(request, "Pod.v1");
    let previous = parent.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    let spec = match Spec::from(parent) {
        Ok(s) => s,
        Err(message) => {
            // Keep whatever runs; a bad edit must not take a cluster down.
            let mut kept: Vec<Value> = children(request, "Service.v1").values().cloned().collect();
            kept.extend(observed_pods.values().cloned());
            let mut status = previous;
            status["phase"] =
                json!(if kept.is_empty() { "Failed" } else { status["phase"].as_str().unwrap_or("Failed") });
            status["reason"] = json!(message);
            status["conditions"] = json!([condition("Available", false, "InvalidSpec", &message)]);
            return json!({"status": status, "children": kept});
        }
    };
    // The next member index, kept in the status so that a removed member's name is never reused.
    let next_index = |pods: &[Value]| {
        observed_pods
            .keys()
            .map(String::as_str)
            .chain(pods.iter().map(|p| s(p, "/metadata/name")))
            .filter_map(|n| spec.index_of(n))
            .map(|i| u64::from(i) + 1)
            .chain(previous.get("nextMemberIndex").and_then(Value::as_u64))
            .max()
            .unwrap_or(0)
    };
    // A restore is done once its seed member's pod exists (the pod carries the restore's id, so a sync
    // that sees a stale status still knows) or the status says so (the seed may be gone since).
    let mut restored_from = s(&previous, "/restoredFrom").to_string();
    if let Some(r) = restore::Request::of(parent)
        && observed_pods.values().any(|p| s(p, RESTORE_ID) == r.id)
    {
        restored_from = r.id;
    }
    let pending = restore::Request::of(parent).filter(|r| r.id != restored_from);
    let mut step = match &pending {
        Some(r) => {
            let (step, seeded) = restore_step(&spec, observed_pods, r, next_index(&[]) as u32);
            if seeded {
                restored_from = r.id.clone();
            }
            step
        }
        None => plan(etcd, &spec, observed_pods, parent).await,
    };
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
    let next_index = next_index(&step.pods);
    let quorum_lost_since = if step.quorum_lost {
        let since = s(&previous, "/quorumLostSince");
        let since = chrono::DateTime::parse_from_rfc3339(since).map(|t| t.with_timezone(&chrono::Utc));
        let since = since.unwrap_or_else(|_| chrono::Utc::now());
        if let Some(c) = auto_restore(kube, &spec, since).await {
            step.conditions.push(c);
        }
        Some(since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    } else {
        None
    };
    let reason = step.conditions.first().map(|c| c["reason"].clone()).unwrap_or(Value::Null);
    let mut children = spec.services();
    children.extend(step.pods.iter().filter_map(|p| spec.claim_of(p)));
    children.extend(step.pods);
    json!({
        "status": {
            "phase": step.phase,
            "reason": reason,
            "size": members_ready.len() + members_unready.len(),
            "readyMembers": members_ready.len(),
            "members": {"ready": members_ready, "unready": members_unready},
            "currentVersion": current_version(&spec, &observed_pods.values().filter(|p| spec.index_of(s(p, "/metadata/name")).is_some()).cloned().collect::<Vec<_>>()),
            "targetVersion": spec.version,
            "serviceName": spec.name,
            "clientPort": CLIENT_PORT,
            "nextMemberIndex": next_index,
            "restoredFrom": if restored_from.is_empty() { Value::Null } else { json!(restored_from) },
            "quorumLostSince": quorum_lost_since,
            "conditions": step.conditions,
        },
        "children": children,
        "resyncAfterSeconds": if step.busy || step.quorum_lost { 1.0 } else { 10.0 },
    })
}

/// A restore the cluster has not done yet: every member goes, then one seed member starts from the
/// snapshot (its index continues the cluster's, so no name is reused). Returns whether the seed is in.
fn restore_step(spec: &Spec, observed: &Map<String, Value>, r: &restore::Request, next: u32) -> (Step, bool) {
    let members = observed.keys().filter(|n| spec.index_of(n).is_some()).count();
    let snapshot = r.snapshot.display().to_string();
    let restoring = |message: String| condition("Recovering", true, "Restoring", &message);
    if members > 0 {
        let message = format!("removing {members} member(s) before restoring from {snapshot}");
        let step = Step {
            pods: vec![],
            phase: "Restoring",
            conditions: vec![condition("Available", false, "Restoring", &message), restoring(message.clone())],
            busy: true,
            quorum_lost: false,
        };
        return (step, false);
    }
    let seed = spec.member_name(next);
    let message = format!("starting seed member {seed} from {snapshot}");
    let step = Step {
        pods: vec![spec.restore_pod(&seed, &r.snapshot, &r.id)],
        phase: "Restoring",
        conditions: vec![condition("Available", false, "Restoring", &message), restoring(message.clone())],
        busy: true,
        quorum_lost: false,
    };
    (step, true)
}

/// Opt-in automatic restore: once quorum has been lost for `afterSeconds`, an EtcdRestore from the
/// named EtcdBackup's latest snapshot (created once per loss, named after when the loss began, so it
/// is there to see in `kubectl get etcdrestores`). Returns the condition that says what happened.
async fn auto_restore(kube: Option<&kube::Client>, spec: &Spec, since: chrono::DateTime<chrono::Utc>) -> Option<Value> {
    let (backup, after) = spec.restore_on_quorum_loss.as_ref()?;
    let waited = (chrono::Utc::now() - since).num_seconds().max(0) as u64;
    if waited < *after {
        let message = format!("quorum lost {waited} s ago: restoring from EtcdBackup {backup} after {after} s");
        return Some(condition("Recovering", false, "WaitingToRestore", &message));
    }
    let kube = kube?;
    let failed = |m: String| Some(condition("Recovering", false, "AutoRestoreFailed", &m));
    let b = match api(kube, &spec.namespace, "EtcdBackup", "etcdbackups").get_opt(backup).await {
        Ok(Some(b)) => serde_json::to_value(b).unwrap_or_default(),
        Ok(None) => return failed(format!("spec.restoreOnQuorumLoss.backupName: EtcdBackup {backup} not found")),
        Err(e) => return failed(format!("reading EtcdBackup {backup}: {e}")),
    };
    let path = s(&b, "/status/backupPath");
    if path.is_empty() {
        return failed(format!("EtcdBackup {backup} has no successful backup to restore from"));
    }
    let name = format!("{}-quorum-loss-{}", spec.name, since.timestamp());
    let storage = match s(&b, "/spec/storageType") {
        "" => "Local",
        t => t,
    };
    let mut restore = json!({
        "apiVersion": format!("{GROUP}/v1beta2"), "kind": "EtcdRestore",
        "metadata": {"name": name, "namespace": spec.namespace, "labels": spec.labels()},
        "spec": {"etcdCluster": {"name": spec.name}, "backupStorageType": storage}});
    if storage == "S3" {
        restore["spec"]["s3"] = json!({"path": path, "awsSecret": b.pointer("/spec/s3/awsSecret"),
                                       "endpoint": b.pointer("/spec/s3/endpoint")});
    } else {
        restore["spec"]["local"] = json!({"path": path});
    }
    let restores = api(kube, &spec.namespace, "EtcdRestore", "etcdrestores");
    let created = match serde_json::from_value::<DynamicObject>(restore) {
        Ok(o) => restores.create(&PostParams::default(), &o).await,
        Err(e) => return failed(e.to_string()),
    };
    match created {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return failed(format!("creating EtcdRestore {name}: {e}")),
    }
    let message = format!("quorum lost since {}: EtcdRestore {name} restores from {path}", since.to_rfc3339());
    Some(condition("Recovering", true, "AutoRestore", &message))
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
    // Only a cluster that is coming up waits for its first member; one that ran has lost its quorum.
    let coming_up = matches!(s(parent, "/status/phase"), "" | "Creating" | "Restoring");
    let all: BTreeSet<String> = mine.keys().cloned().collect();

    // 1. Bootstrap, once: a cluster that ever had members is never silently started empty again.
    let bootstrapped = parent.pointer("/status/nextMemberIndex").and_then(Value::as_u64).unwrap_or(0) > 0;
    if mine.is_empty() && !bootstrapped {
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
            quorum_lost: false,
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
        // A seed member whose restore failed stays (for its logs) and says why.
        let failed_restore = mine.values().find_map(|p| {
            let statuses = p.pointer("/status/initContainerStatuses").and_then(Value::as_array)?;
            statuses.iter().find_map(|c| {
                let code = c.pointer("/state/terminated/exitCode").and_then(Value::as_i64).filter(|c| *c != 0)?;
                Some(format!(
                    "{}: the restore exited with code {code}; see kubectl logs {} -c restore",
                    s(p, "/metadata/name"),
                    s(p, "/metadata/name")
                ))
            })
        });
        if let Some(message) = failed_restore {
            return Step {
                pods: mine.values().map(strip).collect(),
                phase: "Failed",
                conditions: vec![condition("Available", false, "RestoreFailed", &message)],
                busy: false,
                quorum_lost: false,
            };
        }
        let starting = alive.len() == mine.len() && !mine.is_empty() && coming_up;
        let (phase, reason) = if starting { ("Creating", "Bootstrapping") } else { ("Failed", "QuorumLost") };
        let message = if starting {
            "waiting for the first member to become Ready".to_string()
        } else {
            format!(
                "no member answers ({last_error}); the cluster cannot be repaired without quorum: restore it from a backup"
            )
        };
        // Without quorum nothing is deleted, dead members' pods included: their data may be needed.
        return Step {
            pods: keep(&all),
            phase,
            conditions: vec![condition("Available", false, reason, &message)],
            busy: starting,
            quorum_lost: !starting,
        };
    };
    let by_peer = |m: &Member, name: &str| m.peer_urls.iter().any(|u| *u == spec.peer_url(name));
    let voting = members.iter().filter(|m| !m.is_learner).count();
    let healthy_voting =
        members.iter().filter(|m| !m.is_learner && ready.iter().any(|p| by_peer(m, s(p, "/metadata/name")))).count();
    let quorum = healthy_voting > voting / 2;
    // Pods stay until etcd no longer counts their member: a dead member's pod goes after its removal.
    let mut pods: BTreeSet<String> =
        all.iter().filter(|n| alive.contains(*n) || members.iter().any(|m| m.name == **n)).cloned().collect();
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
        quorum_lost: conditions.first().is_some_and(|c| c["reason"] == "QuorumLost"),
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
                quorum_lost: false,
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
                &all,
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
            quorum_lost: false,
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
    // 7. Upgrade: one member at a time, its image changed in place (the pod and its data stay; the
    // node restarts the container from the new image), the next only once it runs the new image and
    // is Ready again.
    let image = spec.image();
    let in_flight = mine
        .iter()
        .find(|(n, p)| alive.contains(*n) && pod_image(p) == image && running_image(p).as_deref() != Some(&image));
    let outdated = mine.iter().find(|(n, p)| alive.contains(*n) && pod_image(p) != image);
    let upgrading = |message: String| {
        vec![condition("Available", true, "Upgrading", ""), condition("Upgrading", true, "Upgrading", &message)]
    };
    if let Some((name, _)) = in_flight {
        let message = format!("waiting for {name} to run {image}");
        return done(&pods, "Upgrading", upgrading(message), true);
    }
    if let Some((name, pod)) = outdated {
        let mut out: Vec<Value> = keep(&pods).into_iter().filter(|p| s(p, "/metadata/name") != name).collect();
        let mut upgraded = strip(pod);
        upgraded["spec"]["containers"][0]["image"] = json!(image);
        upgraded["metadata"]["annotations"]["etcd.version"] = json!(spec.version);
        out.push(upgraded);
        return Step {
            pods: out,
            phase: "Upgrading",
            conditions: upgrading(format!("upgrading member {name} to {image}")),
            busy: true,
            quorum_lost: false,
        };
    }
    done(
        &pods,
        "Running",
        vec![condition("Available", true, "Available", &format!("{} members", members.len()))],
        false,
    )
}

/// The image a member's pod asks for.
fn pod_image(pod: &Value) -> String {
    s(pod, "/spec/containers/0/image").to_string()
}

/// The image a member's container runs, as the node reports it (while Ready).
fn running_image(pod: &Value) -> Option<String> {
    let statuses = pod.pointer("/status/containerStatuses")?.as_array()?;
    let c = statuses.iter().find(|c| c.get("name").and_then(Value::as_str) == Some("etcd"))?;
    c.get("ready").and_then(Value::as_bool).filter(|r| *r)?;
    c.get("image").and_then(Value::as_str).map(String::from)
}

/// The lowest version the members run (the cluster's version during an upgrade).
fn current_version(spec: &Spec, pods: &[Value]) -> String {
    let version = |p: &Value| -> Option<Vec<u32>> {
        let image = running_image(p).unwrap_or_else(|| pod_image(p));
        let tag = image.rsplit_once(':')?.1.trim_start_matches('v').to_string();
        tag.split('.').map(|x| x.parse().ok()).collect()
    };
    pods.iter()
        .filter_map(version)
        .min()
        .map(|v| v.iter().map(u32::to_string).collect::<Vec<_>>().join("."))
        .unwrap_or_else(|| spec.version.clone())
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

    #[test]
    fn the_pod_policy_reaches_every_member_pod() {
        let mut p = parent(3, "3.4.23");
        p["spec"]["pod"] = json!({"labels": {"team": "db", "app": "not-etcd"}, "annotations": {"a": "b"},
            "etcdEnv": [{"name": "ETCD_QUOTA_BACKEND_BYTES", "value": "4294967296"}],
            "resources": {"limits": {"memory": "1Gi"}}, "nodeSelector": {"disk": "ssd"}});
        let spec = Spec::from(&p).unwrap();
        let pod = spec.pod("ex-0000", "ex-0000=http://x:2380", "new");
        assert_eq!(pod["metadata"]["labels"], json!({"app": "etcd", "etcd_cluster": "ex", "team": "db"}), "ours win");
        assert_eq!(pod["metadata"]["annotations"]["a"], json!("b"));
        let env = pod["spec"]["containers"][0]["env"].as_array().unwrap();
        assert!(env.iter().any(|e| e["name"] == "ETCD_QUOTA_BACKEND_BYTES") && env[0]["name"] == "POD_IP");
        assert_eq!(pod["spec"]["containers"][0]["resources"]["limits"]["memory"], json!("1Gi"));
        assert_eq!(pod["spec"]["nodeSelector"], json!({"disk": "ssd"}));
        assert_eq!(pod["spec"]["volumes"][0], json!({"name": "etcd-data", "emptyDir": {}}));
        assert_eq!(spec.claim_of(&pod), None, "no claim unless the policy asks");
        let mut on_claims = p.clone();
        on_claims["spec"]["pod"]["persistentVolumeClaimSpec"] = json!({"resources": {"requests": {"storage": "2Gi"}}});
        let claimed = Spec::from(&on_claims).unwrap();
        let pod2 = claimed.pod("ex-0002", "x", "new");
        assert_eq!(pod2["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"], json!("ex-0002"));
        let claim = claimed.claim_of(&pod2).unwrap();
        assert_eq!(
            (claim["metadata"]["name"].clone(), claim["spec"]["resources"]["requests"]["storage"].clone()),
            (json!("ex-0002"), json!("2Gi"))
        );
        let restore = spec.restore_pod("ex-0000", std::path::Path::new("/b/snap.db"), "rid");
        assert_eq!(restore["spec"]["initContainers"][0]["command"][3], json!("/var/etcd-restore/snap.db"));
        assert_eq!(restore["spec"]["volumes"][1]["hostPath"]["path"], json!("/b"));
        assert_eq!(restore["metadata"]["labels"]["team"], json!("db"));
    }

    #[test]
    fn current_version_is_the_lowest_a_member_runs() {
        let spec = Spec::from(&parent(3, "3.5.1")).unwrap();
        let pod = |spec_image: &str, running: &str| {
            json!({"spec": {"containers": [{"image": spec_image}]},
            "status": {"containerStatuses": [{"name": "etcd", "ready": true, "image": running}]}})
        };
        let pods = vec![pod("e:v3.5.1", "e:v3.5.1"), pod("e:v3.5.1", "e:v3.4.23"), pod("e:v3.5.1", "e:v3.10.0")];
        assert_eq!(current_version(&spec, &pods), "3.4.23", "numeric, not string, order; running, not asked");
        assert_eq!(current_version(&spec, &[]), "3.5.1");
    }

    #[test]
    fn a_restore_removes_every_member_then_seeds_one_from_the_snapshot() {
        let spec = Spec::from(&parent(3, "3.4.23")).unwrap();
        let r = restore::Request { id: "rid".into(), snapshot: std::path::PathBuf::from("/b/snap.db") };
        let mut observed = Map::new();
        observed.insert("ex-0004".into(), json!({"metadata": {"name": "ex-0004"}}));
        let (step, seeded) = restore_step(&spec, &observed, &r, 5);
        assert!(!seeded && step.pods.is_empty() && step.phase == "Restoring", "members go first");
        let (step, seeded) = restore_step(&spec, &Map::new(), &r, 5);
        assert!(seeded);
        assert_eq!(step.pods.len(), 1);
        let seed = &step.pods[0];
        assert_eq!(seed["metadata"]["name"], json!("ex-0005"), "the seed continues the cluster's indexes");
        assert_eq!(seed["metadata"]["annotations"]["etcd.database.coreos.com/restore-id"], json!("rid"));
        assert!(
            seed["spec"]["containers"][0]["command"]
                .as_array()
                .unwrap()
                .contains(&json!("--initial-cluster-state=new"))
        );
    }

    #[tokio::test]
    async fn bootstrap_starts_one_seed_member_and_bad_specs_keep_what_runs() {
        let etcd = Etcd::default();
        let req = json!({"parent": parent(3, "3.2.13"), "children": {"Pod.v1": {}, "Service.v1": {}}});
        let out = sync(&etcd, None, &req).await;
        let pods: Vec<&Value> = out["children"].as_array().unwrap().iter().filter(|c| c["kind"] == "Pod").collect();
        assert_eq!(pods.len(), 1, "one seed member first");
        assert_eq!(out["status"]["phase"], json!("Creating"));
        let bad = json!({"parent": parent(3, "nope"), "children": {"Pod.v1": {"ex-0000": {"metadata": {"name": "ex-0000"}}}}});
        let out = sync(&etcd, None, &bad).await;
        assert_eq!(out["children"].as_array().unwrap().len(), 1, "a running member is kept");
        assert!(out["status"]["reason"].as_str().unwrap().contains("spec.version"));
        let mut ran = parent(3, "3.2.13");
        ran["status"] = json!({"phase": "Failed", "nextMemberIndex": 3});
        let out = sync(&etcd, None, &json!({"parent": ran, "children": {"Pod.v1": {}}})).await;
        assert!(out["children"].as_array().unwrap().iter().all(|c| c["kind"] != "Pod"), "never bootstrapped again");
        assert_eq!(out["status"]["reason"], json!("QuorumLost"));
        let bad_new = json!({"parent": parent(3, "nope"), "children": {}});
        assert_eq!(sync(&etcd, None, &bad_new).await["children"], json!([]), "no pod for an invalid spec");
    }
}
