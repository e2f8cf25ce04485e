//! Service → Endpoints: the addresses of the pods a Service selects (ready ones, unless
//! `publishNotReadyAddresses`), with the Service's ports resolved to the pods' target ports. The pods
//! are related resources named by the customize hook (the Service's selector), not children.

use serde_json::{Value, json};

use super::is_ready;

/// The customize hook: the pods the Service selects.
pub fn customize(request: &Value) -> Value {
    match request.pointer("/parent/spec/selector").and_then(Value::as_object).filter(|s| !s.is_empty()) {
        Some(sel) => {
            json!({"relatedResources": [{"apiVersion": "v1", "resource": "pods", "labelSelector": {"matchLabels": sel}}]})
        }
        None => json!({"relatedResources": []}),
    }
}

fn target_port(port: &Value, pod: &Value) -> Option<i64> {
    match port.get("targetPort").or_else(|| port.get("port"))? {
        Value::Number(n) => n.as_i64(),
        Value::String(name) => pod
            .pointer("/spec/containers")?
            .as_array()?
            .iter()
            .filter_map(|c| c.get("ports").and_then(Value::as_array))
            .flatten()
            .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|p| p.get("containerPort").and_then(Value::as_i64)),
        _ => None,
    }
}

/// The sync hook: the Service's Endpoints.
pub fn sync(request: &Value) -> Value {
    let svc = &request["parent"];
    if svc.pointer("/spec/selector").and_then(Value::as_object).is_none_or(|s| s.is_empty()) {
        return json!({"children": []});
    }
    let publish_all = svc.pointer("/spec/publishNotReadyAddresses").and_then(Value::as_bool).unwrap_or(false);
    let mut pods: Vec<Value> = request
        .pointer("/related/Pod.v1")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.values().cloned())
        .collect();
    pods.retain(|p| {
        p.pointer("/status/podIP").and_then(Value::as_str).is_some_and(|ip| !ip.is_empty())
            && p.pointer("/metadata/deletionTimestamp").is_none()
    });
    pods.sort_by_key(|p| p.pointer("/status/podIP").and_then(Value::as_str).unwrap_or_default().to_string());
    let ports: Vec<Value> = svc.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
    let address = |p: &Value| {
        json!({"ip": p.pointer("/status/podIP"), "nodeName": p.pointer("/spec/nodeName"), "hostname": p.pointer("/spec/hostname"),
               "targetRef": {"kind": "Pod", "name": p.pointer("/metadata/name"), "namespace": p.pointer("/metadata/namespace"), "uid": p.pointer("/metadata/uid")}})
    };
    let mut ready = Vec::new();
    let mut not_ready = Vec::new();
    for p in &pods {
        if is_ready(p) || publish_all { ready.push(p) } else { not_ready.push(p) }
    }
    let resolve = |sample: Option<&&Value>| -> Vec<Value> {
        ports
            .iter()
            .map(|port| {
                let target = sample.and_then(|p| target_port(port, p)).or_else(|| port.get("port").and_then(Value::as_i64));
                json!({"name": port.get("name").cloned().unwrap_or(Value::Null), "port": target, "protocol": port.get("protocol").cloned().unwrap_or(json!("TCP"))})
            })
            .collect()
    };
    let mut subsets = Vec::new();
    if !ready.is_empty() || !not_ready.is_empty() {
        let mut subset = json!({"ports": resolve(ready.first().or(not_ready.first()))});
        if !ready.is_empty() {
            subset["addresses"] = Value::Array(ready.iter().map(|p| address(p)).collect());
        }
        if !not_ready.is_empty() {
            subset["notReadyAddresses"] = Value::Array(not_ready.iter().map(|p| address(p)).collect());
        }
        subsets.push(subset);
    }
    let endpoints = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": svc.pointer("/metadata/name"), "namespace": svc.pointer("/metadata/namespace"),
                     "labels": svc.pointer("/metadata/labels").cloned().unwrap_or(json!({}))},
        "subsets": subsets,
    });
    json!({"children": [endpoints]})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ip: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": {"containers": [{"ports": [{"name": "http", "containerPort": 8080}]}]},
               "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    #[test]
    fn ready_pods_become_addresses_with_resolved_ports() {
        let svc = json!({"metadata": {"name": "web", "namespace": "ns"},
                         "spec": {"selector": {"app": "web"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}});
        assert_eq!(
            customize(&json!({"parent": svc}))["relatedResources"][0]["labelSelector"],
            json!({"matchLabels": {"app": "web"}})
        );
        let req = json!({"parent": svc, "related": {"Pod.v1": {"a": pod("a", "127.1.0.2", true), "b": pod("b", "127.1.0.3", false)}}});
        let out = sync(&req);
        let ep = &out["children"][0];
        assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], json!("127.1.0.2"));
        assert_eq!(ep["subsets"][0]["notReadyAddresses"][0]["ip"], json!("127.1.0.3"));
        assert_eq!(ep["subsets"][0]["ports"][0]["port"], json!(8080));
        let mut publish = svc.clone();
        publish["spec"]["publishNotReadyAddresses"] = json!(true);
        let out = sync(&json!({"parent": publish, "related": req["related"]}));
        assert_eq!(out["children"][0]["subsets"][0]["addresses"].as_array().unwrap().len(), 2);
        assert_eq!(sync(&json!({"parent": {"spec": {}}}))["children"], json!([]));
    }
}
