//! ReplicaSet: keeps `spec.replicas` running pods from the template, as a sync hook.
//!
//! Pod names are derived from the ReplicaSet's uid and a slot number, not drawn at random: a sync that
//! runs before the engine's cache shows the pods it just created asks for the same names again, and the
//! create fails instead of overshooting (what kube's controller does with "expectations").

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use uc_api::hook::{ObjectMap, SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use crate::objects::{
    PodView, decode, kept_pod, name_suffix, pod_from_template, pod_views, set_label, take_children, to_value,
};

/// The deterministic name of slot `i` of a ReplicaSet.
pub fn pod_name(rs_name: &str, rs_uid: &str, i: usize) -> String {
    format!("{rs_name}-{}", name_suffix(&format!("{rs_uid}/{i}")))
}

/// The counts a replica controller reports, in either kind's status.
#[derive(Debug, PartialEq)]
pub(crate) struct Counts {
    pub replicas: i32,
    pub ready: i32,
}

/// The sync hook: desired pods and status of one ReplicaSet.
pub fn sync(request: SyncRequest) -> Result<SyncResponse, HookError> {
    let status = |c: Counts| ReplicaSetStatus {
        replicas: c.replicas,
        fully_labeled_replicas: Some(c.replicas),
        ready_replicas: Some(c.ready),
        available_replicas: Some(c.ready),
        ..Default::default()
    };
    let spec: fn(&ReplicaSet) -> (&ObjectMeta, Option<i32>) =
        |rs| (&rs.metadata, rs.spec.as_ref().and_then(|s| s.replicas));
    sync_replicas(request, "uc.njuics.cn/replicaset", spec, status)
}

/// A replica controller's sync (ReplicaSets and ReplicationControllers): `parts` reads the parent's
/// metadata and `spec.replicas` (kube's default: 1), `status` writes the counts in the kind's status,
/// `label` names the parent on its pods.
pub(crate) fn sync_replicas<P: serde::de::DeserializeOwned, S: serde::Serialize>(
    mut request: SyncRequest,
    label: &str,
    parts: fn(&P) -> (&ObjectMeta, Option<i32>),
    status: impl Fn(Counts) -> S,
) -> Result<SyncResponse, HookError> {
    let pods = take_children(&mut request, "Pod.v1");
    let parent: P = decode("parent", &request.parent)?;
    let (metadata, want) = parts(&parent);
    let template = &request.parent["spec"]["template"];
    let (children, counts) = replicas(metadata, want, template, pods, label)?;
    Ok(SyncResponse { status: Some(to_value("status", &status(counts))?), children, ..Default::default() })
}

/// The replica logic, for ReplicaSets and ReplicationControllers: `label` names the parent on its pods.
/// The pods it keeps are named in its answer, not copied (a request holds every pod).
fn replicas(
    metadata: &ObjectMeta,
    replicas: Option<i32>,
    template: &Value,
    pods: ObjectMap,
    label: &str,
) -> Result<(Vec<Value>, Counts), HookError> {
    let want = replicas.unwrap_or(1).max(0) as usize;
    let (kept, ready) = {
        // Keep running pods; when there are too many, drop not-ready ones first, then the newest.
        let mut keep: Vec<(&String, PodView<'_>)> = pod_views(&pods)?.into_iter().filter(|(_, p)| p.active()).collect();
        keep.sort_by_key(|(_, p)| (!p.ready(), std::cmp::Reverse(p.created())));
        keep.truncate(want);
        let ready = keep.iter().filter(|(_, p)| p.ready()).count();
        // Children of a namespaced parent are keyed by name.
        let mut kept: Vec<String> = keep.into_iter().map(|(k, _)| k.clone()).collect();
        kept.sort();
        (kept, ready)
    };
    let name = metadata.name.as_deref().unwrap_or_default();
    let uid = metadata.uid.as_deref().unwrap_or_default();
    let namespace = metadata.namespace.as_deref();
    let mut out: Vec<Value> = kept.iter().map(|k| kept_pod(k, namespace)).collect();
    let mut slot = 0;
    while out.len() < want {
        let candidate = pod_name(name, uid, slot);
        slot += 1;
        // A name still taken (a kept pod, one that finished or is being deleted) moves to the next slot.
        if pods.contains_key(&candidate) || kept.contains(&candidate) {
            continue;
        }
        // Only a new pod carries the parent's label: a kept one is named, not written (see `kept_pod`).
        let mut pod = pod_from_template(template, &candidate, namespace);
        set_label(&mut pod, label, name)?;
        out.push(pod);
    }
    let counts = Counts { replicas: kept.len() as i32, ready: ready as i32 };
    Ok((out, counts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::run_json;
    use serde_json::json;

    fn pod(name: &str, ready: bool, phase: &str) -> Value {
        json!({"metadata": {"name": name, "creationTimestamp": format!("2026-01-01T00:00:0{}Z", name.len() % 10)},
               "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    fn request(replicas: i64, pods: &[Value]) -> Value {
        let map: serde_json::Map<String, Value> =
            pods.iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p.clone())).collect();
        json!({"parent": {"metadata": {"name": "rs", "namespace": "ns", "uid": "u1"},
                          "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
               "children": {"Pod.v1": map}})
    }

    fn names(out: &Value) -> Vec<String> {
        out["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn scales_up_with_stable_names() {
        let out = run_json(sync, request(3, &[]));
        let n = names(&out);
        assert_eq!(n.len(), 3);
        assert_eq!(n, names(&run_json(sync, request(3, &[]))), "the same names on a repeated sync");
        assert_eq!(out["children"][0]["metadata"]["labels"]["app"], json!("a"));
        assert_eq!(out["children"][0]["metadata"]["labels"]["uc.njuics.cn/replicaset"], json!("rs"));
        assert_eq!(out["children"][0]["spec"]["containers"][0]["image"], json!("i"));
        assert_eq!(out["status"]["replicas"], json!(0));
    }

    #[test]
    fn scales_down_dropping_unready_first_and_replaces_finished_pods() {
        let pods = [pod("rs-a", true, "Running"), pod("rs-b", false, "Running"), pod("rs-c", true, "Running")];
        let out = run_json(sync, request(2, &pods));
        assert_eq!(names(&out), vec!["rs-a", "rs-c"]);
        assert_eq!(
            out["children"][0],
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "rs-a", "namespace": "ns"}}),
            "a kept pod is named, not copied"
        );
        assert_eq!(
            out["status"],
            json!({"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 2})
        );
        let failed = [pod("rs-a", false, "Failed"), pod("rs-c", true, "Running")];
        let out = run_json(sync, request(2, &failed));
        let n = names(&out);
        assert!(n.contains(&"rs-c".to_string()) && !n.contains(&"rs-a".to_string()) && n.len() == 2, "{n:?}");
    }
}
