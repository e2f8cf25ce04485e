//! DaemonSet: one pod per node its template's `nodeSelector` picks (the nodes are related resources
//! named by the customize hook), bound to that node. Template changes roll through the engine's
//! RollingRecreate strategy (one node at a time, each after the previous pod is Ready); the pods carry
//! the template's hash (`controller-revision-hash`), which tells updated pods from old ones. The status
//! has every counter kube-controller-manager writes, zeros included.

use serde_json::{Value, json};

use crate::objects::{active, hash_str, is_ready, name_suffix, obj_map, set_label};

/// The label holding the hash of the template a pod was made from.
pub const HASH_LABEL: &str = "controller-revision-hash";

/// The customize hook: the nodes the DaemonSet's pods may run on.
pub fn customize(request: &Value) -> Value {
    let selector = request.pointer("/parent/spec/template/spec/nodeSelector").cloned().unwrap_or(json!({}));
    json!({"relatedResources": [{"apiVersion": "v1", "resource": "nodes", "labelSelector": {"matchLabels": selector}}]})
}

/// The hash of a DaemonSet's pod template.
pub fn template_hash(ds: &Value) -> String {
    let template = ds.pointer("/spec/template").cloned().unwrap_or(Value::Null);
    format!("{:x}", hash_str(&template.to_string()) & 0xff_ffff_ffff)
}

/// The name of the pod on `node`: stable per DaemonSet and node.
fn pod_name(ds_name: &str, node: &str) -> String {
    format!("{ds_name}-{}", name_suffix(node))
}

fn new_pod(ds: &Value, name: &str, node: &str, hash: &str) -> Value {
    let template = ds.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut meta = template.get("metadata").cloned().unwrap_or(json!({}));
    meta["name"] = json!(name);
    meta["namespace"] = ds.pointer("/metadata/namespace").cloned().unwrap_or(json!("default"));
    if let Some(m) = meta.as_object_mut() {
        m.remove("creationTimestamp");
    }
    let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
    spec["nodeName"] = json!(node);
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec});
    set_label(&mut pod, HASH_LABEL, hash);
    pod
}

/// Whether a node takes DaemonSet pods: not tainted NoSchedule/NoExecute unless tolerated.
fn schedulable(node: &Value, tolerations: &[Value]) -> bool {
    node.pointer("/spec/taints").and_then(Value::as_array).into_iter().flatten().all(|t| {
        let effect = t.get("effect").and_then(Value::as_str).unwrap_or_default();
        effect == "PreferNoSchedule"
            || tolerations.iter().any(|tol| {
                let key_ok = tol.get("key").is_none_or(|k| k == t.get("key").unwrap_or(&Value::Null))
                    || tol.get("operator").and_then(Value::as_str) == Some("Exists") && tol.get("key").is_none();
                let effect_ok = tol.get("effect").is_none_or(|e| e.as_str() == Some(effect) || e.as_str() == Some(""));
                let value_ok =
                    tol.get("operator").and_then(Value::as_str) == Some("Exists") || tol.get("value") == t.get("value");
                key_ok && effect_ok && value_ok
            })
    })
}

/// The sync hook: one pod per eligible node, and the status.
pub fn sync(request: &Value) -> Value {
    let ds = &request["parent"];
    let name = ds.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let hash = template_hash(ds);
    let tolerations =
        ds.pointer("/spec/template/spec/tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut nodes: Vec<(String, Value)> = request
        .pointer("/related/Node.v1")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, n)| schedulable(n, &tolerations))
        .map(|(k, n)| (k.clone(), n.clone()))
        .collect();
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    let pods = obj_map(request, "Pod.v1");
    let node_of = |p: &Value| p.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default().to_string();
    let mut children = Vec::new();
    let (mut current, mut ready, mut updated) = (0, 0, 0);
    for (node, _) in &nodes {
        // The pod already on the node keeps its name (a finished one is replaced by a new name).
        let existing = pods.values().find(|p| node_of(p) == *node && active(p));
        let pod_name = match existing {
            Some(p) => p.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string(),
            None => {
                let base = pod_name(name, node);
                if pods.contains_key(&base) { format!("{base}-{}", &hash[..4.min(hash.len())]) } else { base }
            }
        };
        if let Some(p) = existing {
            current += 1;
            ready += usize::from(is_ready(p));
            let labels = p.pointer("/metadata/labels");
            updated += usize::from(labels.and_then(|l| l.get(HASH_LABEL)).and_then(Value::as_str) == Some(&hash));
        }
        children.push(new_pod(ds, &pod_name, node, &hash));
    }
    let eligible: Vec<&String> = nodes.iter().map(|(n, _)| n).collect();
    let misscheduled = pods.values().filter(|p| active(p) && !eligible.contains(&&node_of(p))).count();
    for c in &mut children {
        set_label(c, "uc.njuics.cn/daemonset", name);
    }
    let desired = nodes.len();
    let status = json!({
        "currentNumberScheduled": current,
        "desiredNumberScheduled": desired,
        "numberMisscheduled": misscheduled,
        "numberReady": ready,
        "numberAvailable": ready,
        "numberUnavailable": desired.saturating_sub(ready),
        "updatedNumberScheduled": updated,
    });
    json!({"status": status, "children": children})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, labels: Value, taints: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}})
    }

    fn request(nodes: &[Value], pods: &[Value]) -> Value {
        let nodes: serde_json::Map<String, Value> =
            nodes.iter().map(|n| (n["metadata"]["name"].as_str().unwrap().to_string(), n.clone())).collect();
        let pods: serde_json::Map<String, Value> =
            pods.iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p.clone())).collect();
        json!({"parent": {"metadata": {"name": "agent", "namespace": "ns"},
                          "spec": {"selector": {"matchLabels": {"app": "agent"}},
                                   "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
               "related": {"Node.v1": nodes}, "children": {"Pod.v1": pods}})
    }

    #[test]
    fn one_pod_per_schedulable_node_with_complete_status() {
        let nodes = [
            node("a", json!({}), json!([])),
            node("b", json!({}), json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])),
        ];
        let out = sync(&request(&nodes, &[]));
        let children = out["children"].as_array().unwrap();
        assert_eq!(children.len(), 1, "the tainted node is skipped");
        assert_eq!(children[0]["spec"]["nodeName"], json!("a"));
        assert_eq!(children[0]["metadata"]["labels"]["app"], json!("agent"));
        assert_eq!(
            out["status"],
            json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 1, "numberMisscheduled": 0, "numberReady": 0,
                   "numberAvailable": 0, "numberUnavailable": 1, "updatedNumberScheduled": 0}),
            "every counter, zeros included"
        );
        let hash = template_hash(&request(&nodes, &[])["parent"]);
        let running = json!({"metadata": {"name": children[0]["metadata"]["name"], "labels": {HASH_LABEL: hash}},
                             "spec": {"nodeName": "a"},
                             "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        let out = sync(&request(&nodes, &[running]));
        assert_eq!(out["status"]["numberReady"], json!(1));
        assert_eq!(out["status"]["updatedNumberScheduled"], json!(1));
        assert_eq!(out["status"]["numberUnavailable"], json!(0));
    }

    #[test]
    fn tolerated_taints_and_node_selectors() {
        let tainted =
            node("b", json!({"disk": "ssd"}), json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]));
        let mut req = request(std::slice::from_ref(&tainted), &[]);
        req["parent"]["spec"]["template"]["spec"]["tolerations"] =
            json!([{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]);
        assert_eq!(sync(&req)["children"].as_array().unwrap().len(), 1);
        req["parent"]["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
        assert_eq!(customize(&req)["relatedResources"][0]["labelSelector"], json!({"matchLabels": {"disk": "ssd"}}));
    }
}
