//! DaemonSet: one pod per node its template's `nodeSelector` picks (the nodes are related resources
//! named by the customize hook), bound to that node. Template changes roll through the engine's
//! RollingRecreate strategy (one node at a time, each after the previous pod is Ready); the pods carry
//! the template's hash (`controller-revision-hash`), which tells updated pods from old ones. The status
//! has every counter kube-controller-manager writes, zeros included.

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::{Node, Taint, Toleration};
use serde_json::{Value, json};
use uc_api::hook::{CustomizeRequest, CustomizeResponse, RelatedResourceRule, SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use crate::objects::{decode, hash_str, name_suffix, pod_from_template, pod_views, set_label, take_children, to_value};

/// The label holding the hash of the template a pod was made from.
pub const HASH_LABEL: &str = "controller-revision-hash";

fn pod_spec(ds: &DaemonSet) -> Option<&k8s_openapi::api::core::v1::PodSpec> {
    ds.spec.as_ref()?.template.spec.as_ref()
}

/// The customize hook: the nodes the DaemonSet's pods may run on.
pub fn customize(request: CustomizeRequest) -> Result<CustomizeResponse, HookError> {
    let ds: DaemonSet = decode("parent", &request.parent)?;
    let selector = pod_spec(&ds).and_then(|s| s.node_selector.clone()).unwrap_or_default();
    let nodes = RelatedResourceRule {
        api_version: "v1".into(),
        resource: "nodes".into(),
        label_selector: Some(json!({"matchLabels": selector})),
        ..Default::default()
    };
    Ok(CustomizeResponse { related_resources: vec![nodes] })
}

/// The hash of a DaemonSet's pod template (as written).
pub fn template_hash(template: &Value) -> String {
    format!("{:x}", hash_str(&template.to_string()) & 0xff_ffff_ffff)
}

/// The name of the pod on `node`: stable per DaemonSet and node.
fn pod_name(ds_name: &str, node: &str) -> String {
    format!("{ds_name}-{}", name_suffix(node))
}

/// Whether `toleration` lets a pod onto a node with `taint`.
fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let exists = toleration.operator.as_deref() == Some("Exists");
    let key_ok = toleration.key.as_ref().is_none_or(|k| *k == taint.key) || exists && toleration.key.is_none();
    let effect_ok = toleration.effect.as_deref().is_none_or(|e| e == taint.effect || e.is_empty());
    let value_ok = exists || toleration.value == taint.value;
    key_ok && effect_ok && value_ok
}

/// Whether a node takes DaemonSet pods: not tainted NoSchedule/NoExecute unless tolerated.
fn schedulable(node: &Node, tolerations: &[Toleration]) -> bool {
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or_default();
    taints.iter().all(|t| t.effect == "PreferNoSchedule" || tolerations.iter().any(|tol| tolerates(tol, t)))
}

/// The sync hook: one pod per eligible node, and the status.
pub fn sync(mut request: SyncRequest) -> Result<SyncResponse, HookError> {
    let pods = take_children(&mut request, "Pod.v1");
    let ds: DaemonSet = decode("parent", &request.parent)?;
    let template = &request.parent["spec"]["template"];
    let name = ds.metadata.name.as_deref().unwrap_or_default();
    let hash = template_hash(template);
    let tolerations = pod_spec(&ds).and_then(|s| s.tolerations.as_deref()).unwrap_or_default();
    let mut nodes = Vec::new();
    for (key, node) in request.related.get("Node.v1").into_iter().flatten() {
        let node: Node = decode(&format!("node {key}"), node)?;
        if schedulable(&node, tolerations) {
            nodes.push(key.clone());
        }
    }
    nodes.sort();
    let views = pod_views(&pods)?;
    let mut children = Vec::new();
    let (mut current, mut ready, mut updated) = (0, 0, 0);
    for node in &nodes {
        // The pod already on the node keeps its name (a finished one is replaced by a new name).
        let existing = views.iter().map(|(_, p)| p).find(|p| p.node() == node && p.active());
        let pod_name = match existing {
            Some(p) => p.name().to_string(),
            None => {
                let base = pod_name(name, node);
                if pods.contains_key(&base) { format!("{base}-{}", &hash[..4.min(hash.len())]) } else { base }
            }
        };
        if let Some(p) = existing {
            current += 1;
            ready += i32::from(p.ready());
            updated += i32::from(p.label(HASH_LABEL) == Some(hash.as_str()));
        }
        let mut pod = pod_from_template(template, &pod_name, ds.metadata.namespace.as_deref());
        pod["spec"]["nodeName"] = json!(node);
        set_label(&mut pod, HASH_LABEL, &hash)?;
        set_label(&mut pod, "uc.njuics.cn/daemonset", name)?;
        children.push(pod);
    }
    let misscheduled = views.iter().filter(|(_, p)| p.active() && !nodes.iter().any(|n| n == p.node())).count();
    let desired = nodes.len() as i32;
    let status = DaemonSetStatus {
        current_number_scheduled: current,
        desired_number_scheduled: desired,
        number_misscheduled: misscheduled as i32,
        number_ready: ready,
        number_available: Some(ready),
        number_unavailable: Some((desired - ready).max(0)),
        updated_number_scheduled: Some(updated),
        ..Default::default()
    };
    Ok(SyncResponse { status: Some(to_value("status", &status)?), children, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::run_json;

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
        let out = run_json(sync, request(&nodes, &[]));
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
        let hash = template_hash(&request(&nodes, &[])["parent"]["spec"]["template"]);
        let running = json!({"metadata": {"name": children[0]["metadata"]["name"], "labels": {HASH_LABEL: hash}},
                             "spec": {"nodeName": "a"},
                             "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        let out = run_json(sync, request(&nodes, &[running]));
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
        assert_eq!(run_json(sync, req.clone())["children"].as_array().unwrap().len(), 1);
        req["parent"]["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
        let rules = customize(CustomizeRequest { controller: json!({}), parent: req["parent"].clone() }).unwrap();
        assert_eq!(rules.related_resources[0].label_selector, Some(json!({"matchLabels": {"disk": "ssd"}})));
    }
}
