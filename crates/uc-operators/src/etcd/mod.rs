//! The etcd operator (coreos etcd-operator semantics, `etcd.database.coreos.com/v1beta2`): an
//! `EtcdCluster` becomes a headless peer Service, a `<name>-client` Service and one pod per member,
//! each running real etcd. The sync hook is native because it talks to etcd: membership changes go
//! through etcd's member API *before* a pod starts or after it stops, one change at a time.
//!
//! One sync step, from what the hook observes (pods, and etcd's member list through a Ready member):
//! 1. never bootstrapped: start every initial member at once (etcd's static bootstrap: each names them
//!    all, `--initial-cluster-state=new`, the cluster's uid as the token);
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
pub mod plan;
mod pods;
mod resources;
pub mod restore;
pub mod spec;
pub mod storage;
pub mod types;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResourceExt;
use kube::api::{Api, PostParams};
use serde::Deserialize;
use serde_json::{Value, json};
use uc_api::conditions::Condition;
use uc_api::hook::{ObjectMap, SyncRequest, SyncResponse};
use uc_engine::hooks::native::{self, AsyncSyncFn, NativeRegistry, SyncFuture};

use crate::objects::{json_of, native_spec, take_children, universal_controller};
use client::Etcd;
use plan::{Decision, MemberChange, Previous, Step, View, member_pods, plan, restore_step};
use pods::{Pods, condition, current_version, pod_ready};
pub use resources::GROUP;
#[cfg(test)]
use spec::SpecError;
use spec::{CLIENT_PORT, Spec};
use types::{
    ClusterReference, EtcdBackup, EtcdClusterStatus, EtcdRestore, EtcdRestoreSpec, LocalSource, MembersStatus,
    S3Source, StorageType,
};
use uc_api::controller::{UniversalControllerSpec, UpdateMethod};
/// Name of the native hook.
pub const HOOK: &str = "etcd-cluster";

/// The EtcdCluster CRD, derived from `types::EtcdClusterSpec`: `size` 1..7 and the version format are
/// checked by the schema.
pub fn crd() -> CustomResourceDefinition {
    types::EtcdCluster::crd()
}

/// The operator's CRDs.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![crd(), backup::crd(), restore::crd()]
}

/// The operator's UniversalControllers.
pub fn controllers() -> Vec<uc_api::controller::UniversalController> {
    vec![controller(), backup::controller(), restore::controller()]
}

/// The UniversalController of EtcdClusters.
pub fn controller() -> uc_api::controller::UniversalController {
    let children = [
        ("v1", "services", UpdateMethod::InPlace),
        // In place: a version change sets a member's image on its running pod (nothing else of a
        // member's pod ever changes).
        ("v1", "pods", UpdateMethod::InPlace),
        // Members' data claims (pod.persistentVolumeClaimSpec): made once, never changed.
        ("v1", "persistentvolumeclaims", UpdateMethod::OnDelete),
    ];
    let spec = native_spec((&format!("{GROUP}/v1beta2"), "etcdclusters"), &children, HOOK);
    let spec = UniversalControllerSpec { resync_period_seconds: Some(10.0), ..spec };
    universal_controller("etcd-operator", OPERATOR_LABEL, spec)
}

/// The label of the etcd operator's controllers.
const OPERATOR_LABEL: (&str, &str) = ("uc.njuics.cn/operator", "etcd");

/// Registers the native hooks. `client` reaches the API server for what crosses objects: a restore
/// marks its EtcdCluster, a cluster that lost quorum reads its backup and creates an EtcdRestore.
/// `names` resolves the in-cluster names backups address etcd by.
pub fn register(natives: &mut NativeRegistry, client: kube::Client, names: Option<uc_engine::names::ClusterNames>) {
    let etcd = Etcd::default();
    let kube = client.clone();
    // None of them answers with an error: what goes wrong is reported in the object's status.
    let cluster: Arc<AsyncSyncFn> = Arc::new(move |request: SyncRequest| -> SyncFuture {
        let (etcd, kube) = (etcd.clone(), kube.clone());
        Box::pin(async move { Ok(sync(&etcd, Some(&kube), request).await) })
    });
    natives.register(HOOK, native::typed_async(cluster));
    let restorer = client.clone();
    let restores: Arc<AsyncSyncFn> = Arc::new(move |request: SyncRequest| -> SyncFuture {
        let client = restorer.clone();
        Box::pin(async move { Ok(restore::sync(&client, request).await) })
    });
    natives.register(restore::HOOK, native::typed_async(restores));
    let backups: Arc<AsyncSyncFn> = Arc::new(move |request: SyncRequest| -> SyncFuture {
        let (kube, names) = (client.clone(), names.clone());
        Box::pin(async move { Ok(backup::sync(Some(&kube), names.as_ref(), request).await) })
    });
    natives.register(backup::HOOK, native::typed_async(backups));
}

/// A cluster whose spec does not read: whatever runs is kept (a bad edit must not take a cluster down),
/// and the status says why.
fn invalid_spec(request: &mut SyncRequest, observed_pods: &ObjectMap, previous: Value, message: &str) -> SyncResponse {
    let mut kept: Vec<Value> = take_children(request, "Service.v1").into_values().map(Arc::unwrap_or_clone).collect();
    kept.extend(observed_pods.values().map(|p| Value::clone(p)));
    let mut status = previous;
    status["phase"] = json!(if kept.is_empty() { "Failed" } else { status["phase"].as_str().unwrap_or("Failed") });
    status["reason"] = json!(message);
    status["conditions"] = json_of(&[condition("Available", false, "InvalidSpec", message)]);
    SyncResponse { status: Some(status), children: kept, ..Default::default() }
}

/// The members of these pods that are Ready and those that are not, each sorted.
fn readiness(pods: &[Pod], observed: &Pods) -> (Vec<String>, Vec<String>) {
    let mut ready = Vec::new();
    let mut unready = Vec::new();
    for p in pods {
        let name = pods::name(p).to_string();
        match observed.get(&name) {
            Some(o) if pod_ready(o) => ready.push(name),
            _ => unready.push(name),
        }
    }
    ready.sort();
    unready.sort();
    (ready, unready)
}

/// The restore a cluster was made from, and the restore it is asked for that is not done yet. A
/// restore is done once all its members' pods exist (they carry the restore's id, so a sync that sees
/// a stale status still knows) or the status says so (the members may be gone since).
fn restores(metadata: &ObjectMeta, previous: &Previous, observed: &Pods) -> (String, Option<restore::Request>) {
    let mut restored_from = previous.restored_from.clone().unwrap_or_default();
    let asked = restore::Request::of(metadata);
    if let Some(r) = &asked
        && plan::restore_complete(observed, &r.id)
    {
        restored_from = r.id.clone();
    }
    let pending = asked.filter(|r| r.id != restored_from);
    (restored_from, pending)
}

/// One sync of an EtcdCluster.
async fn sync(etcd: &Etcd, kube: Option<&kube::Client>, mut request: SyncRequest) -> SyncResponse {
    let children = &take_children(&mut request, "Pod.v1");
    let parent = &request.parent;
    let previous = parent.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    let spec = match Spec::from(parent) {
        Ok(s) => s,
        Err(error) => return invalid_spec(&mut request, children, previous, &error.to_string()),
    };
    let previous = Previous::deserialize(&previous).unwrap_or_default();
    let observed_pods = &pods::typed(children);
    // The next member index, kept in the status so that a removed member's name is never reused.
    let next_index = |pods: &[Pod]| {
        observed_pods
            .keys()
            .map(String::as_str)
            .chain(pods.iter().map(pods::name))
            .filter_map(|n| spec.index_of(n))
            .map(|i| u64::from(i) + 1)
            .chain(previous.next_member_index)
            .max()
            .unwrap_or(0)
    };
    let metadata = parent.get("metadata").and_then(|m| ObjectMeta::deserialize(m).ok()).unwrap_or_default();
    let (mut restored_from, pending) = restores(&metadata, &previous, observed_pods);
    let mut step = match &pending {
        Some(r) => {
            let (step, seeded) = restore_step(&spec, observed_pods, r, next_index(&[]) as u32);
            if seeded {
                restored_from = r.id.clone();
            }
            step
        }
        None => {
            let view = read_members(etcd, &spec, observed_pods).await;
            carry_out(etcd, plan(&spec, observed_pods, &previous, view)).await
        }
    };
    let (members_ready, members_unready) = readiness(&step.pods, observed_pods);
    let next_index = next_index(&step.pods);
    let quorum_lost_since = if step.quorum_lost {
        let since = previous.quorum_lost_since.as_deref().unwrap_or_default();
        let since = chrono::DateTime::parse_from_rfc3339(since).map(|t| t.with_timezone(&chrono::Utc));
        let since = since.unwrap_or_else(|_| chrono::Utc::now());
        if let Some(c) = auto_restore(kube, &spec, since).await {
            step.conditions.push(c);
        }
        Some(since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    } else {
        None
    };
    let reason = step.conditions.first().map(|c| c.reason.clone());
    let mut children: Vec<Value> = spec.services().iter().map(json_of).collect();
    children.extend(step.pods.iter().filter_map(|p| spec.claim_of(p)).map(|c| json_of(&c)));
    children.extend(step.pods.iter().map(json_of));
    let members = observed_pods.iter().filter(|(n, _)| spec.index_of(n).is_some()).map(|(_, p)| p);
    let status = EtcdClusterStatus {
        phase: step.phase.into(),
        reason,
        size: members_ready.len() + members_unready.len(),
        ready_members: members_ready.len(),
        members: MembersStatus { ready: members_ready, unready: members_unready },
        current_version: current_version(&spec, members),
        target_version: spec.version.clone(),
        service_name: spec.name.clone(),
        client_port: CLIENT_PORT,
        next_member_index: next_index,
        restored_from: Some(restored_from).filter(|r| !r.is_empty()),
        quorum_lost_since,
        conditions: step.conditions,
    };
    SyncResponse {
        status: Some(json_of(&status)),
        children,
        resync_after_seconds: Some(if step.busy || step.quorum_lost { 1.0 } else { 10.0 }),
        finalized: None,
    }
}

/// etcd's member list, through the first Ready member that answers.
async fn read_members(etcd: &Etcd, spec: &Spec, observed: &Pods) -> View {
    let mut last_error = String::from("no member is Ready");
    for p in member_pods(spec, observed).values().filter(|p| pod_ready(p)) {
        let ip = p.status.as_ref().and_then(|s| s.pod_ip.as_deref()).unwrap_or_default();
        let endpoint = format!("http://{ip}:{CLIENT_PORT}");
        match etcd.members(&endpoint).await {
            Ok(members) => return View::Members { endpoint, members },
            Err(e) => last_error = e.to_string(),
        }
    }
    View::Unreachable(last_error)
}

/// Makes the membership change a decision rests on; the decision's step, or its fallback when etcd
/// refuses.
async fn carry_out(etcd: &Etcd, decision: Decision) -> Step {
    let Some(c) = decision.change else { return decision.step };
    let result = match &c.change {
        MemberChange::AddLearner(peer_url) => etcd.add(&c.endpoint, peer_url, true).await.map(drop),
        MemberChange::Promote(id) => etcd.promote(&c.endpoint, id).await,
        MemberChange::Remove(id) => etcd.remove(&c.endpoint, id).await,
    };
    match (result, c.on_failure) {
        (Ok(()), _) => decision.step,
        (Err(e), None) => {
            tracing::debug!(change = ?c.change, error = %e, "etcd refused a membership change; asking again");
            decision.step
        }
        (Err(e), Some(fallback)) => fallback.step(&e.to_string()),
    }
}

/// Opt-in automatic restore: once quorum has been lost for `afterSeconds`, an EtcdRestore from the
/// named EtcdBackup's latest snapshot (created once per loss, named after when the loss began, so it
/// is there to see in `kubectl get etcdrestores`). Returns the condition that says what happened.
async fn auto_restore(
    kube: Option<&kube::Client>,
    spec: &Spec,
    since: chrono::DateTime<chrono::Utc>,
) -> Option<Condition> {
    let (backup, after) = spec.restore_on_quorum_loss.as_ref()?;
    let waited = (chrono::Utc::now() - since).num_seconds().max(0) as u64;
    if waited < *after {
        let message = format!("quorum lost {waited} s ago: restoring from EtcdBackup {backup} after {after} s");
        return Some(condition("Recovering", false, "WaitingToRestore", &message));
    }
    let kube = kube?;
    let failed = |m: String| Some(condition("Recovering", false, "AutoRestoreFailed", &m));
    let b = match Api::<EtcdBackup>::namespaced(kube.clone(), &spec.namespace).get_opt(backup).await {
        Ok(Some(b)) => b,
        Ok(None) => return failed(format!("spec.restoreOnQuorumLoss.backupName: EtcdBackup {backup} not found")),
        Err(e) => return failed(format!("reading EtcdBackup {backup}: {e}")),
    };
    let path = b.status.as_ref().and_then(|s| s.0.get("backupPath")).and_then(Value::as_str).unwrap_or_default();
    if path.is_empty() {
        return failed(format!("EtcdBackup {backup} has no successful backup to restore from"));
    }
    let name = format!("{}-quorum-loss-{}", spec.name, since.timestamp());
    let storage = b.spec.storage_type;
    let mut restore = EtcdRestore::new(
        &name,
        EtcdRestoreSpec {
            etcd_cluster: ClusterReference { name: spec.name.clone(), ..Default::default() },
            backup_storage_type: storage,
            ..Default::default()
        },
    );
    restore.metadata.namespace = Some(spec.namespace.clone());
    restore.metadata.labels = Some(spec.labels());
    match storage {
        StorageType::S3 => {
            restore.spec.s3 = Some(S3Source { path: path.to_string(), ..b.spec.s3.clone().unwrap_or_default() });
        }
        StorageType::Local => restore.spec.local = Some(LocalSource { path: Some(path.to_string()) }),
    }
    let created =
        Api::<EtcdRestore>::namespaced(kube.clone(), &spec.namespace).create(&PostParams::default(), &restore).await;
    match created {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return failed(format!("creating EtcdRestore {name}: {e}")),
    }
    let message = format!("quorum lost since {}: EtcdRestore {name} restores from {path}", since.to_rfc3339());
    Some(condition("Recovering", true, "AutoRestore", &message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent(size: u64, version: &str) -> Value {
        json!({"metadata": {"name": "ex", "namespace": "default", "uid": "u1"}, "spec": {"size": size, "version": version}})
    }

    #[test]
    fn specs_are_checked_and_names_derived() {
        assert_eq!(Spec::from(&parent(0, "3.2.13")).err(), Some(SpecError::Size(0)));
        assert_eq!(Spec::from(&parent(8, "3.2.13")).err(), Some(SpecError::Size(8)));
        assert_eq!(Spec::from(&parent(3, "banana")).err(), Some(SpecError::Version("banana".into())));
        assert_eq!(Spec::from(&parent(3, "4.0.0")).err(), Some(SpecError::Version("4.0.0".into())));
        let mut unreadable = parent(3, "3.2.13");
        unreadable["spec"]["size"] = json!("three");
        assert!(matches!(Spec::from(&unreadable), Err(SpecError::Unreadable(m)) if m.contains("invalid type")));
        // A pod policy that does not read says where (a field of the wrong type is not ignored).
        let mut bad_policy = parent(3, "3.2.13");
        bad_policy["spec"]["pod"] = json!({"labels": {"team": 7}});
        let why = Spec::from(&bad_policy).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(why.starts_with("spec: pod.labels.team: invalid type"), "{why}");
        let mut kept = parent(3, "3.2.13");
        kept["spec"]["pod"] = json!({"busyboxImage": "busybox:1.28.0-glibc", "antiAffinity": true});
        let policy = Spec::from(&kept).unwrap().pod_policy;
        assert_eq!(policy.other["busyboxImage"], json!("busybox:1.28.0-glibc"), "coreos's other fields are kept");
        let s = Spec::from(&parent(3, "v3.2.13")).unwrap();
        assert_eq!(s.version, "3.2.13");
        assert_eq!(s.member_name(2), "ex-0002");
        assert_eq!(s.index_of("ex-0002"), Some(2));
        assert_eq!(s.index_of("ex-client"), None);
        assert_eq!(s.peer_url("ex-0000"), "http://ex-0000.ex.default.svc:2380");
        let pod = json_of(&s.pod("ex-0000", "ex-0000=http://ex-0000.ex.default.svc:2380", "new"));
        let cmd: Vec<&str> =
            pod["spec"]["containers"][0]["command"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert!(cmd.contains(&"--initial-cluster-state=new") && cmd.contains(&"--initial-cluster-token=u1"));
        assert_eq!(pod["spec"]["containers"][0]["image"], json!("quay.io/coreos/etcd:v3.2.13"));
        let services: Vec<Value> = s.services().iter().map(json_of).collect();
        assert_eq!(services[0]["spec"]["clusterIP"], json!("None"));
        assert_eq!(services[0]["spec"]["ports"][1], json!({"name": "peer", "port": 2380, "targetPort": 2380}));
        assert_eq!(services[1]["metadata"]["name"], json!("ex-client"));
    }

    #[test]
    fn the_pod_policy_reaches_every_member_pod() {
        let mut p = parent(3, "3.4.23");
        p["spec"]["pod"] = json!({"labels": {"team": "db", "app": "not-etcd"}, "annotations": {"a": "b"},
            "etcdEnv": [{"name": "ETCD_QUOTA_BACKEND_BYTES", "value": "4294967296"}],
            "resources": {"limits": {"memory": "1Gi"}}, "nodeSelector": {"disk": "ssd"}});
        let spec = Spec::from(&p).unwrap();
        let typed = spec.pod("ex-0000", "ex-0000=http://x:2380", "new");
        let pod = json_of(&typed);
        assert_eq!(pod["metadata"]["labels"], json!({"app": "etcd", "etcd_cluster": "ex", "team": "db"}), "ours win");
        assert_eq!(pod["metadata"]["annotations"]["a"], json!("b"));
        let env = pod["spec"]["containers"][0]["env"].as_array().unwrap();
        assert!(env.iter().any(|e| e["name"] == "ETCD_QUOTA_BACKEND_BYTES") && env[0]["name"] == "POD_IP");
        assert_eq!(pod["spec"]["containers"][0]["resources"]["limits"]["memory"], json!("1Gi"));
        assert_eq!(pod["spec"]["nodeSelector"], json!({"disk": "ssd"}));
        assert_eq!(pod["spec"]["volumes"][0], json!({"name": "etcd-data", "emptyDir": {}}));
        assert_eq!(spec.claim_of(&typed), None, "no claim unless the policy asks");
        let mut on_claims = p.clone();
        on_claims["spec"]["pod"]["persistentVolumeClaimSpec"] = json!({"resources": {"requests": {"storage": "2Gi"}}});
        let claimed = Spec::from(&on_claims).unwrap();
        let typed2 = claimed.pod("ex-0002", "x", "new");
        let pod2 = json_of(&typed2);
        assert_eq!(pod2["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"], json!("ex-0002"));
        let claim = json_of(&claimed.claim_of(&typed2).unwrap());
        assert_eq!(
            (claim["metadata"]["name"].clone(), claim["spec"]["resources"]["requests"]["storage"].clone()),
            (json!("ex-0002"), json!("2Gi"))
        );
        let restore =
            json_of(&spec.restore_pod("ex-0000", "ex-0000=http://x:2380", std::path::Path::new("/b/snap.db"), "rid"));
        assert_eq!(restore["spec"]["initContainers"][0]["command"][3], json!("/var/etcd-restore/snap.db"));
        assert_eq!(restore["spec"]["volumes"][1]["hostPath"]["path"], json!("/b"));
        assert_eq!(restore["metadata"]["labels"]["team"], json!("db"));
    }

    #[test]
    fn current_version_is_the_lowest_a_member_runs() {
        let spec = Spec::from(&parent(3, "3.5.1")).unwrap();
        let pod = |spec_image: &str, running: &str| -> Pod {
            serde_json::from_value(json!({"spec": {"containers": [{"name": "etcd", "image": spec_image}]},
                "status": {"containerStatuses": [{"name": "etcd", "ready": true, "image": running,
                                                  "imageID": "", "restartCount": 0}]}}))
            .unwrap()
        };
        let pods = vec![pod("e:v3.5.1", "e:v3.5.1"), pod("e:v3.5.1", "e:v3.4.23"), pod("e:v3.5.1", "e:v3.10.0")];
        assert_eq!(current_version(&spec, &pods), "3.4.23", "numeric, not string, order; running, not asked");
        assert_eq!(current_version(&spec, &[]), "3.5.1");
    }

    #[tokio::test]
    async fn bootstrap_starts_every_initial_member_and_bad_specs_keep_what_runs() {
        let etcd = Etcd::default();
        let run = |request: Value| {
            let etcd = etcd.clone();
            async move { crate::objects::run_json_async(|r| sync(&etcd, None, r), request).await }
        };
        let out = run(json!({"parent": parent(3, "3.2.13"), "children": {"Pod.v1": {}, "Service.v1": {}}})).await;
        let pods: Vec<&Value> = out["children"].as_array().unwrap().iter().filter(|c| c["kind"] == "Pod").collect();
        assert_eq!(pods.len(), 3, "the initial members at once");
        assert_eq!((&out["status"]["phase"], &out["status"]["nextMemberIndex"]), (&json!("Creating"), &json!(3)));
        let bad = json!({"parent": parent(3, "nope"), "children": {"Pod.v1": {"ex-0000": {"metadata": {"name": "ex-0000"}}}}});
        let out = run(bad).await;
        assert_eq!(out["children"].as_array().unwrap().len(), 1, "a running member is kept");
        assert!(out["status"]["reason"].as_str().unwrap().contains("spec.version"));
        let mut ran = parent(3, "3.2.13");
        ran["status"] = json!({"phase": "Failed", "nextMemberIndex": 3});
        let out = run(json!({"parent": ran, "children": {"Pod.v1": {}}})).await;
        assert!(out["children"].as_array().unwrap().iter().all(|c| c["kind"] != "Pod"), "never bootstrapped again");
        assert_eq!(out["status"]["reason"], json!("QuorumLost"));
        let bad_new = json!({"parent": parent(3, "nope"), "children": {}});
        assert_eq!(run(bad_new).await["children"], json!([]), "no pod for an invalid spec");
    }
}
