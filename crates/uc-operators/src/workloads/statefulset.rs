//! StatefulSet: pods `<name>-0..N-1` with stable hostnames under the governing Service, started in
//! order (OrderedReady: each only after the lower ones are Running and Ready) or all at once (Parallel),
//! scaled down from the highest ordinal, with one PersistentVolumeClaim per claim template and ordinal.
//! Template changes (the revision field, `spec.template`) roll through the engine's RollingRecreate
//! strategy and its ControllerRevisions: desired pods are listed in
//! descending ordinal, so the highest one is replaced first, one at a time, each after the previous is
//! Ready again.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::{Value, json};
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use crate::objects::{PodView, decode, pod_from_template, pod_views, set_label, take_children, to_value};

fn ordinal(set: &str, pod_name: &str) -> Option<usize> {
    pod_name.strip_prefix(set)?.strip_prefix('-')?.parse().ok()
}

fn claim_name(template: &PersistentVolumeClaim) -> &str {
    template.metadata.name.as_deref().unwrap_or("data")
}

fn pvc_name(template: &PersistentVolumeClaim, set: &str, i: usize) -> String {
    format!("{}-{set}-{i}", claim_name(template))
}

/// The pod of ordinal `i`, from the template as written.
fn pod_for(sts: &StatefulSet, template: &Value, set: &str, i: usize) -> Result<Value, HookError> {
    let name = format!("{set}-{i}");
    let mut pod = pod_from_template(template, &name, sts.metadata.namespace.as_deref());
    let spec = &mut pod["spec"];
    spec["hostname"] = json!(name);
    if let Some(svc) = sts.spec.as_ref().and_then(|s| s.service_name.as_deref()).filter(|s| !s.is_empty()) {
        spec["subdomain"] = json!(svc);
    }
    let mut volumes = spec.get("volumes").and_then(Value::as_array).cloned().unwrap_or_default();
    for t in claim_templates(sts) {
        let claim = claim_name(t);
        volumes.retain(|v| v.get("name").and_then(Value::as_str) != Some(claim));
        volumes.push(json!({"name": claim, "persistentVolumeClaim": {"claimName": pvc_name(t, set, i)}}));
    }
    if !volumes.is_empty() {
        spec["volumes"] = Value::Array(volumes);
    }
    set_label(&mut pod, "statefulset.kubernetes.io/pod-name", &name)?;
    set_label(&mut pod, "apps.kubernetes.io/pod-index", &i.to_string())?;
    Ok(pod)
}

fn claim_templates(sts: &StatefulSet) -> &[PersistentVolumeClaim] {
    sts.spec.as_ref().and_then(|s| s.volume_claim_templates.as_deref()).unwrap_or_default()
}

/// The claim of ordinal `i` from a claim template, labelled with the set's selector and its own labels.
fn pvc_for(sts: &StatefulSet, template: &PersistentVolumeClaim, set: &str, i: usize) -> Result<Value, HookError> {
    let selector = sts.spec.as_ref().and_then(|s| s.selector.match_labels.clone());
    let mut labels: BTreeMap<String, String> = selector.unwrap_or_default();
    labels.extend(template.metadata.labels.clone().unwrap_or_default());
    let mut claim =
        PersistentVolumeClaim { spec: Some(template.spec.clone().unwrap_or_default()), ..Default::default() };
    claim.metadata.name = Some(pvc_name(template, set, i));
    claim.metadata.namespace = sts.metadata.namespace.clone();
    claim.metadata.labels = Some(labels);
    // k8s-openapi writes a resource's apiVersion and kind.
    to_value("claim", &claim)
}

/// The sync hook: desired pods and claims, and status, of one StatefulSet.
pub fn sync(mut request: SyncRequest) -> Result<SyncResponse, HookError> {
    let pods = take_children(&mut request, "Pod.v1");
    let claims = take_children(&mut request, "PersistentVolumeClaim.v1");
    let sts: StatefulSet = decode("parent", &request.parent)?;
    let template = &request.parent["spec"]["template"];
    let set = sts.metadata.name.as_deref().unwrap_or_default();
    let spec = sts.spec.as_ref();
    let replicas = spec.and_then(|s| s.replicas).unwrap_or(1).max(0) as usize;
    let parallel = spec.and_then(|s| s.pod_management_policy.as_deref()) == Some("Parallel");
    let views: BTreeMap<&String, PodView<'_>> = pod_views(&pods)?.into_iter().collect();
    let by_ordinal = |i: usize| views.get(&format!("{set}-{i}"));
    let running_ready = |p: &PodView<'_>| p.active() && p.ready();

    // Which ordinals exist, which should: scale-down removes the highest first, one at a time,
    // and only while all others are Ready (unless Parallel).
    let existing: Vec<usize> = views.keys().filter_map(|n| ordinal(set, n)).collect();
    let highest = existing.iter().copied().max().map(|h| h + 1).unwrap_or(0);
    let mut keep_up_to = replicas.max(highest);
    if highest > replicas {
        let others_ready = (0..highest - 1).all(|i| by_ordinal(i).is_some_and(running_ready));
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
            Some(p) if !p.active() && !p.deleting() => {
                // A finished pod is replaced (deleted now, created on a later sync).
                continue;
            }
            Some(_) => desired_pods.push((i, pod_for(&sts, template, set, i)?)),
            None => {
                // OrderedReady: create ordinal i only once 0..i are Running and Ready.
                let lower_ready = (0..i).all(|j| by_ordinal(j).is_some_and(running_ready));
                if parallel || lower_ready {
                    desired_pods.push((i, pod_for(&sts, template, set, i)?));
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
    for t in claim_templates(&sts) {
        let mut ordinals: Vec<usize> = (0..replicas).collect();
        let prefix = format!("{}-", claim_name(t));
        ordinals.extend(claims.keys().filter_map(|name| ordinal(set, name.strip_prefix(&prefix)?)));
        ordinals.sort_unstable();
        ordinals.dedup();
        for i in ordinals {
            children.push(pvc_for(&sts, t, set, i)?);
        }
    }
    let live = views.values().filter(|p| p.active()).count() as i32;
    let ready = views.values().filter(|p| p.active() && p.ready()).count() as i32;
    let status = StatefulSetStatus {
        replicas: live,
        ready_replicas: Some(ready),
        available_replicas: Some(ready),
        current_replicas: Some(live),
        updated_replicas: Some(live),
        ..Default::default()
    };
    Ok(SyncResponse { status: Some(to_value("status", &status)?), children, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::run_json;

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
        assert_eq!(pod_names(&run_json(sync, request(3, &[], false))), vec!["web-0"]);
        assert_eq!(
            pod_names(&run_json(sync, request(3, &[pod("web-0", false)], false))),
            vec!["web-0"],
            "waits for web-0 to be Ready"
        );
        assert_eq!(pod_names(&run_json(sync, request(3, &[pod("web-0", true)], false))), vec!["web-1", "web-0"]);
        assert_eq!(pod_names(&run_json(sync, request(3, &[], true))), vec!["web-2", "web-1", "web-0"], "Parallel");
        let out = run_json(sync, request(3, &[], false));
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
        assert_eq!(pod_names(&run_json(sync, request(1, &three, false))), vec!["web-1", "web-0"], "web-2 goes first");
        let mut req = request(1, &three[..2], false);
        req["children"]["PersistentVolumeClaim.v1"] = json!({"www-web-2": {}, "www-web-1": {}, "www-web-0": {}});
        let out = run_json(sync, req);
        assert_eq!(pod_names(&out), vec!["web-0"]);
        let claims =
            out["children"].as_array().unwrap().iter().filter(|c| c["kind"] == "PersistentVolumeClaim").count();
        assert_eq!(claims, 3, "claims outlive scale-down");
    }
}
