//! StatefulSet: pods `<name>-0..N-1` with stable hostnames under the governing Service, started in
//! order (OrderedReady: each only after the lower ones are Running and Ready) or all at once (Parallel),
//! scaled down from the highest ordinal, with one PersistentVolumeClaim per claim template and ordinal.
//! Template changes (the revision field, `spec.template`) roll through the engine's RollingRecreate
//! strategy and its ControllerRevisions: desired pods are listed in
//! descending ordinal, so the highest one is replaced first, one at a time, each after the previous is
//! Ready again.

use serde_json::{Value, json};

use crate::objects::{active, is_ready, obj_map, set_label};

fn ordinal(set: &str, pod_name: &str) -> Option<usize> {
    pod_name.strip_prefix(set)?.strip_prefix('-')?.parse().ok()
}

fn claim_templates(sts: &Value) -> Vec<Value> {
    sts.pointer("/spec/volumeClaimTemplates").and_then(Value::as_array).cloned().unwrap_or_default()
}

fn pvc_name(template: &Value, set: &str, i: usize) -> String {
    format!("{}-{set}-{i}", template.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("data"))
}

fn pod_for(sts: &Value, set: &str, i: usize) -> Value {
    let template = sts.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut meta = template.get("metadata").cloned().unwrap_or(json!({}));
    let name = format!("{set}-{i}");
    meta["name"] = json!(name);
    meta["namespace"] = sts.pointer("/metadata/namespace").cloned().unwrap_or(json!("default"));
    let mut spec = template.get("spec").cloned().unwrap_or(json!({}));
    spec["hostname"] = json!(name);
    if let Some(svc) = sts.pointer("/spec/serviceName").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        spec["subdomain"] = json!(svc);
    }
    let mut volumes = spec.get("volumes").and_then(Value::as_array).cloned().unwrap_or_default();
    for t in claim_templates(sts) {
        let claim = t.pointer("/metadata/name").cloned().unwrap_or(json!("data"));
        volumes.retain(|v| v.get("name") != Some(&claim));
        volumes.push(json!({"name": claim, "persistentVolumeClaim": {"claimName": pvc_name(&t, set, i)}}));
    }
    if !volumes.is_empty() {
        spec["volumes"] = Value::Array(volumes);
    }
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec});
    set_label(&mut pod, "statefulset.kubernetes.io/pod-name", &name);
    set_label(&mut pod, "apps.kubernetes.io/pod-index", &i.to_string());
    pod
}

fn pvc_for(sts: &Value, template: &Value, set: &str, i: usize) -> Value {
    let mut labels = sts.pointer("/spec/selector/matchLabels").cloned().unwrap_or(json!({}));
    if let Some(extra) = template.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in extra {
            labels[k] = v.clone();
        }
    }
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": pvc_name(template, set, i), "namespace": sts.pointer("/metadata/namespace"), "labels": labels},
           "spec": template.get("spec").cloned().unwrap_or(json!({}))})
}

/// The sync hook: desired pods and claims, and status, of one StatefulSet.
pub fn sync(request: &Value) -> Value {
    let sts = &request["parent"];
    let set = sts.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let replicas = sts.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1).max(0) as usize;
    let parallel = sts.pointer("/spec/podManagementPolicy").and_then(Value::as_str) == Some("Parallel");
    let pods = obj_map(request, "Pod.v1");
    let claims = obj_map(request, "PersistentVolumeClaim.v1");
    let by_ordinal = |i: usize| pods.get(&format!("{set}-{i}"));
    let running_ready = |p: &Value| active(p) && is_ready(p);

    // Which ordinals exist, which should: scale-down removes the highest first, one at a time,
    // and only while all others are Ready (unless Parallel).
    let existing: Vec<usize> = pods.keys().filter_map(|n| ordinal(set, n)).collect();
    let highest = existing.iter().copied().max().map(|h| h + 1).unwrap_or(0);
    let mut keep_up_to = replicas.max(highest);
    if highest > replicas {
        let others_ready = (0..highest - 1).all(|i| by_ordinal(i).is_some_and(&running_ready));
        keep_up_to = if parallel {
            replicas
        } else if others_ready {
            highest - 1
        } else {
            highest
        };
    }
    let mut desired_pods = Vec::new();
    for i in 0..keep_up_to.min(replicas.max(keep_up_to)) {
        if i >= replicas && by_ordinal(i).is_none() {
            continue;
        }
        match by_ordinal(i) {
            Some(p) if !active(p) && p.pointer("/metadata/deletionTimestamp").is_none() => {
                // A finished pod is replaced (deleted now, created on a later sync).
                continue;
            }
            Some(_) => desired_pods.push((i, pod_for(sts, set, i))),
            None => {
                // OrderedReady: create ordinal i only once 0..i are Running and Ready.
                let lower_ready = (0..i).all(|j| by_ordinal(j).is_some_and(&running_ready));
                if parallel || lower_ready {
                    desired_pods.push((i, pod_for(sts, set, i)));
                    if !parallel {
                        // One new pod per step; its readiness brings the next.
                        let later_missing = (i + 1..replicas).any(|j| by_ordinal(j).is_none());
                        if later_missing {
                            break;
                        }
                    }
                } else {
                    break;
                }
            }
        }
    }
    // Pods listed highest ordinal first: rolling updates replace the highest first.
    desired_pods.sort_by_key(|(i, _)| std::cmp::Reverse(*i));
    let mut children: Vec<Value> = desired_pods.into_iter().map(|(_, p)| p).collect();
    // Claims: one per template and ordinal up to the largest ordinal ever used; kept on scale-down.
    for t in claim_templates(sts) {
        let mut ordinals: Vec<usize> = (0..replicas).collect();
        for name in claims.keys() {
            if let Some(i) = name
                .strip_prefix(&format!("{}-", t.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("data")))
                .and_then(|rest| ordinal(set, rest))
            {
                ordinals.push(i);
            }
        }
        ordinals.sort_unstable();
        ordinals.dedup();
        for i in ordinals {
            children.push(pvc_for(sts, &t, set, i));
        }
    }
    let live: Vec<&Value> = pods.values().filter(|p| active(p)).collect();
    let ready = live.iter().filter(|p| is_ready(p)).count();
    let status = json!({
        "replicas": live.len(),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "currentReplicas": live.len(),
        "updatedReplicas": live.len(),
    });
    json!({"status": status, "children": children})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    fn request(replicas: i64, pods: &[Value], parallel: bool) -> Value {
        let map: serde_json::Map<String, Value> =
            pods.iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p.clone())).collect();
        json!({"parent": {"metadata": {"name": "web", "namespace": "ns"},
                          "spec": {"replicas": replicas, "serviceName": "web", "podManagementPolicy": if parallel { "Parallel" } else { "OrderedReady" },
                                   "selector": {"matchLabels": {"app": "web"}},
                                   "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
                                   "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}},
               "children": {"Pod.v1": map, "PersistentVolumeClaim.v1": {}}})
    }

    fn pod_names(out: &Value) -> Vec<String> {
        out["children"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] == "Pod")
            .map(|c| c["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn ordered_ready_starts_one_at_a_time() {
        assert_eq!(pod_names(&sync(&request(3, &[], false))), vec!["web-0"]);
        assert_eq!(
            pod_names(&sync(&request(3, &[pod("web-0", false)], false))),
            vec!["web-0"],
            "waits for web-0 to be Ready"
        );
        assert_eq!(pod_names(&sync(&request(3, &[pod("web-0", true)], false))), vec!["web-1", "web-0"]);
        assert_eq!(pod_names(&sync(&request(3, &[], true))), vec!["web-2", "web-1", "web-0"], "Parallel");
        let out = sync(&request(3, &[], false));
        let p = &out["children"][0];
        assert_eq!((p["spec"]["hostname"].as_str(), p["spec"]["subdomain"].as_str()), (Some("web-0"), Some("web")));
        assert_eq!(p["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"], json!("www-web-0"));
        let claims: Vec<&str> = out["children"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] == "PersistentVolumeClaim")
            .map(|c| c["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(claims, vec!["www-web-0", "www-web-1", "www-web-2"]);
    }

    #[test]
    fn scale_down_removes_the_highest_ordinal_first_and_keeps_claims() {
        let three = [pod("web-0", true), pod("web-1", true), pod("web-2", true)];
        assert_eq!(pod_names(&sync(&request(1, &three, false))), vec!["web-1", "web-0"], "web-2 goes first");
        let mut req = request(1, &three[..2], false);
        req["children"]["PersistentVolumeClaim.v1"] = json!({"www-web-2": {}, "www-web-1": {}, "www-web-0": {}});
        let out = sync(&req);
        assert_eq!(pod_names(&out), vec!["web-0"]);
        let claims =
            out["children"].as_array().unwrap().iter().filter(|c| c["kind"] == "PersistentVolumeClaim").count();
        assert_eq!(claims, 3, "claims outlive scale-down");
    }
}
