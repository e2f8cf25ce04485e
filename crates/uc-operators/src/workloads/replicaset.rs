//! ReplicaSet: keeps `spec.replicas` running pods from the template, as a sync hook.
//!
//! Pod names are derived from the ReplicaSet's uid and a slot number, not drawn at random: a sync that
//! runs before the engine's cache shows the pods it just created asks for the same names again, and the
//! create fails instead of overshooting (what kube's controller does with "expectations").

use serde_json::{Map, Value, json};

use crate::objects::{active, is_ready, name_suffix, obj_map, set_label};

/// The deterministic name of slot `i` of a ReplicaSet.
pub fn pod_name(rs_name: &str, rs_uid: &str, i: usize) -> String {
    format!("{rs_name}-{}", name_suffix(&format!("{rs_uid}/{i}")))
}

fn new_pod(rs: &Value, name: &str) -> Value {
    let template = rs.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut meta = template.get("metadata").cloned().unwrap_or(json!({}));
    meta["name"] = json!(name);
    meta["namespace"] = rs.pointer("/metadata/namespace").cloned().unwrap_or(json!("default"));
    if let Some(m) = meta.as_object_mut() {
        m.remove("creationTimestamp");
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template.get("spec").cloned().unwrap_or(json!({}))})
}

/// The sync hook: desired pods and status of one ReplicaSet.
pub fn sync(request: Value) -> Value {
    sync_labeled(request, "uc.njuics.cn/replicaset")
}

/// The replica logic, for ReplicaSets and ReplicationControllers: `label` names the parent on its pods.
/// Takes the request: the pods it keeps are moved out of it, not copied (a request holds every pod).
pub(crate) fn sync_labeled(mut request: Value, label: &str) -> Value {
    let (want, kept, ready) = {
        let rs = &request["parent"];
        let want = rs.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1).max(0) as usize;
        // Keep running pods; when there are too many, drop not-ready ones first, then the newest.
        let mut keep: Vec<(&String, &Value)> = obj_map(&request, "Pod.v1").iter().filter(|(_, p)| active(p)).collect();
        keep.sort_by_key(|(_, p)| {
            (
                !is_ready(p),
                std::cmp::Reverse(
                    p.pointer("/metadata/creationTimestamp").and_then(Value::as_str).unwrap_or_default().to_string(),
                ),
            )
        });
        keep.truncate(want);
        let ready = keep.iter().filter(|(_, p)| is_ready(p)).count();
        // Children of a namespaced parent are keyed by name.
        let mut kept: Vec<String> = keep.into_iter().map(|(k, _)| k.clone()).collect();
        kept.sort();
        (want, kept, ready)
    };
    let mut pods = match request.pointer_mut("/children/Pod.v1").map(Value::take) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let mut children: Vec<Value> = kept.iter().filter_map(|k| pods.remove(k)).collect();
    let rs = &request["parent"];
    let name = rs.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let uid = rs.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
    let mut slot = 0;
    while children.len() < want {
        let candidate = pod_name(name, uid, slot);
        slot += 1;
        // A name still taken (a kept pod, one that finished or is being deleted) moves to the next slot.
        if pods.contains_key(&candidate) || kept.contains(&candidate) {
            continue;
        }
        children.push(new_pod(rs, &candidate));
    }
    for c in &mut children {
        set_label(c, label, name);
    }
    let status = json!({
        "replicas": kept.len(),
        "fullyLabeledReplicas": kept.len(),
        "readyReplicas": ready,
        "availableReplicas": ready,
    });
    json!({"status": status, "children": children})
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let out = sync(request(3, &[]));
        let n = names(&out);
        assert_eq!(n.len(), 3);
        assert_eq!(n, names(&sync(request(3, &[]))), "the same names on a repeated sync");
        assert_eq!(out["children"][0]["metadata"]["labels"]["app"], json!("a"));
        assert_eq!(out["children"][0]["spec"]["containers"][0]["image"], json!("i"));
        assert_eq!(out["status"]["replicas"], json!(0));
    }

    #[test]
    fn scales_down_dropping_unready_first_and_replaces_finished_pods() {
        let pods = [pod("rs-a", true, "Running"), pod("rs-b", false, "Running"), pod("rs-c", true, "Running")];
        let out = sync(request(2, &pods));
        assert_eq!(names(&out), vec!["rs-a", "rs-c"]);
        assert_eq!(
            out["status"],
            json!({"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 2})
        );
        let failed = [pod("rs-a", false, "Failed"), pod("rs-c", true, "Running")];
        let out = sync(request(2, &failed));
        let n = names(&out);
        assert!(n.contains(&"rs-c".to_string()) && !n.contains(&"rs-a".to_string()) && n.len() == 2, "{n:?}");
    }
}
