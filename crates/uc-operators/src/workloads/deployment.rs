//! Deployment: ReplicaSets per pod template, rolled with the RollingUpdate (maxSurge /
//! maxUnavailable) or Recreate strategy, and the status and conditions `kubectl rollout status` reads.
//! Each sync takes one step of kube's algorithm; the ReplicaSets' status changes bring the next.

use serde_json::{Value, json};

use crate::objects::{hash_str, obj_map, set_label};

/// Label carrying the template hash, as kube names it.
pub const HASH_LABEL: &str = "pod-template-hash";
/// Annotation carrying the rollout revision, as kube names it.
pub const REVISION: &str = "deployment.kubernetes.io/revision";

fn int_or_percent(v: Option<&Value>, total: i64, round_up: bool, default: &str) -> i64 {
    let v = v.cloned().unwrap_or_else(|| json!(default));
    match v {
        Value::Number(n) => n.as_i64().unwrap_or(0).max(0),
        Value::String(s) => match s.strip_suffix('%').and_then(|p| p.trim().parse::<f64>().ok()) {
            Some(p) => {
                let x = p * total as f64 / 100.0;
                (if round_up { x.ceil() } else { x.floor() }) as i64
            }
            None => s.parse().unwrap_or(0),
        },
        _ => 0,
    }
}

fn rs_int(rs: &Value, pointer: &str) -> i64 {
    rs.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn revision(rs: &Value) -> i64 {
    rs.pointer("/metadata/annotations")
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The short hash naming a template's ReplicaSet.
pub fn template_hash(template: &Value) -> String {
    let h = hash_str(&template.to_string());
    format!("{:x}", h % 0xff_ffff_ffff).chars().take(10).collect()
}

/// The sync hook: desired ReplicaSets and status of one Deployment.
pub fn sync(request: &Value) -> Value {
    let d = &request["parent"];
    let name = d.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let namespace = d.pointer("/metadata/namespace").cloned().unwrap_or(json!("default"));
    let replicas = d.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1).max(0);
    let template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let hash = template_hash(&template);
    let new_name = format!("{name}-{hash}");
    let all = obj_map(request, "ReplicaSet.apps/v1");
    let new_rs = all.get(&new_name);
    let mut old: Vec<&Value> =
        all.values().filter(|rs| rs.pointer("/metadata/name").and_then(Value::as_str) != Some(&new_name)).collect();
    old.sort_by_key(|rs| revision(rs));
    let strategy = d.pointer("/spec/strategy/type").and_then(Value::as_str).unwrap_or("RollingUpdate");
    let surge = int_or_percent(d.pointer("/spec/strategy/rollingUpdate/maxSurge"), replicas, true, "25%");
    let mut unavailable =
        int_or_percent(d.pointer("/spec/strategy/rollingUpdate/maxUnavailable"), replicas, false, "25%");
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    let spec_of = |rs: &Value| rs_int(rs, "/spec/replicas");
    let available_of = |rs: &Value| rs_int(rs, "/status/availableReplicas");
    let old_spec_total: i64 = old.iter().map(|rs| spec_of(rs)).sum();
    let old_live: i64 = old.iter().map(|rs| rs_int(rs, "/status/replicas")).sum();
    let mut new_replicas = new_rs.map(spec_of).unwrap_or(0);
    let mut old_replicas: Vec<i64> = old.iter().map(|rs| spec_of(rs)).collect();
    if strategy == "Recreate" {
        old_replicas.iter_mut().for_each(|r| *r = 0);
        new_replicas = if old_live == 0 { replicas } else { 0 };
    } else {
        // Scale up the new ReplicaSet within maxSurge.
        let max_total = replicas + surge;
        let current = new_replicas + old_spec_total;
        if new_replicas > replicas {
            new_replicas = replicas;
        } else if current < max_total {
            new_replicas += (max_total - current).min(replicas - new_replicas).max(0);
        }
        // Scale down old ones within maxUnavailable, counting the new one's unavailable pods.
        let min_available = replicas - unavailable;
        let new_unavailable = (new_rs.map(spec_of).unwrap_or(0) - new_rs.map(available_of).unwrap_or(0)).max(0);
        let all_pods = new_rs.map(spec_of).unwrap_or(0) + old_spec_total;
        let mut budget = (all_pods - min_available - new_unavailable).max(0);
        // Old pods that are not available can always go.
        for (i, rs) in old.iter().enumerate() {
            let unhealthy = (spec_of(rs) - available_of(rs)).max(0);
            let cut = unhealthy.min(old_replicas[i]);
            old_replicas[i] -= cut;
        }
        for r in old_replicas.iter_mut() {
            let cut = budget.min(*r);
            *r -= cut;
            budget -= cut;
        }
    }
    let next_revision = all.values().map(revision).max().unwrap_or(0) + i64::from(new_rs.is_none());
    let mut rs_template = template.clone();
    set_label(&mut rs_template, HASH_LABEL, &hash);
    let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    selector["matchLabels"][HASH_LABEL] = json!(hash);
    let labels = rs_template.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
    let new_revision = new_rs.map(revision).filter(|r| *r > 0).unwrap_or(next_revision);
    let mut children = vec![json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": new_name, "namespace": namespace, "labels": labels,
                     "annotations": {REVISION: new_revision.to_string()}},
        "spec": {"replicas": new_replicas, "selector": selector, "template": rs_template,
                 "minReadySeconds": d.pointer("/spec/minReadySeconds").cloned().unwrap_or(json!(0))},
    })];
    // Old ReplicaSets stay (scaled to zero) for rollbacks, up to revisionHistoryLimit.
    let history = d.pointer("/spec/revisionHistoryLimit").and_then(Value::as_i64).unwrap_or(10).max(0) as usize;
    let mut empty_kept = 0;
    for (i, rs) in old.iter().enumerate().rev() {
        if old_replicas[i] == 0 && rs_int(rs, "/status/replicas") == 0 {
            if empty_kept >= history {
                continue;
            }
            empty_kept += 1;
        }
        let mut keep = (*rs).clone();
        keep["spec"]["replicas"] = json!(old_replicas[i]);
        children.push(keep);
    }
    let sum = |p: &str| -> i64 { all.values().map(|rs| rs_int(rs, p)).sum() };
    let (total, ready, available) =
        (sum("/status/replicas"), sum("/status/readyReplicas"), sum("/status/availableReplicas"));
    let updated = new_rs.map(|rs| rs_int(rs, "/status/replicas")).unwrap_or(0);
    let complete = updated == replicas && total == updated && new_rs.map(available_of).unwrap_or(0) == replicas;
    let available_ok = available >= replicas - unavailable;
    let ts = request.pointer("/parent/metadata/creationTimestamp").cloned().unwrap_or(Value::Null);
    let status = json!({
        "replicas": total,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": available,
        "unavailableReplicas": (replicas - available).max(0),
        "conditions": [
            {"type": "Available", "status": if available_ok { "True" } else { "False" },
             "reason": if available_ok { "MinimumReplicasAvailable" } else { "MinimumReplicasUnavailable" },
             "message": if available_ok { "Deployment has minimum availability." } else { "Deployment does not have minimum availability." },
             "lastUpdateTime": ts, "lastTransitionTime": ts},
            {"type": "Progressing", "status": "True",
             "reason": if complete { "NewReplicaSetAvailable" } else { "ReplicaSetUpdated" },
             "message": format!("ReplicaSet \"{new_name}\" {}", if complete { "has successfully progressed." } else { "is progressing." }),
             "lastUpdateTime": ts, "lastTransitionTime": ts},
        ],
    });
    json!({"status": status, "children": children})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(image: &str, replicas: i64) -> Value {
        json!({"metadata": {"name": "web", "namespace": "ns"},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}}}})
    }

    fn rs(name: &str, spec: i64, available: i64, revision: i64) -> Value {
        json!({"metadata": {"name": name, "annotations": {REVISION: revision.to_string()}},
               "spec": {"replicas": spec}, "status": {"replicas": spec, "readyReplicas": available, "availableReplicas": available}})
    }

    fn run(d: &Value, sets: &[Value]) -> Value {
        let map: serde_json::Map<String, Value> =
            sets.iter().map(|s| (s["metadata"]["name"].as_str().unwrap().to_string(), s.clone())).collect();
        sync(&json!({"parent": d, "children": {"ReplicaSet.apps/v1": map}}))
    }

    fn replicas_of(out: &Value) -> Vec<(String, i64)> {
        out["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["metadata"]["name"].as_str().unwrap().to_string(), c["spec"]["replicas"].as_i64().unwrap()))
            .collect()
    }

    #[test]
    fn first_sync_creates_the_new_replicaset() {
        let d = deployment("v1", 3);
        let out = run(&d, &[]);
        let hash = template_hash(&d["spec"]["template"]);
        assert_eq!(replicas_of(&out), vec![(format!("web-{hash}"), 3)]);
        assert_eq!(out["children"][0]["spec"]["selector"]["matchLabels"][HASH_LABEL], json!(hash));
        assert_eq!(out["children"][0]["spec"]["template"]["metadata"]["labels"][HASH_LABEL], json!(hash));
        assert_eq!(out["children"][0]["metadata"]["annotations"][REVISION], json!("1"));
    }

    #[test]
    fn rolling_update_respects_surge_and_unavailability() {
        let v1 = deployment("v1", 3);
        let old_name = format!("web-{}", template_hash(&v1["spec"]["template"]));
        let v2 = deployment("v2", 3);
        let new_name = format!("web-{}", template_hash(&v2["spec"]["template"]));
        // Step 1: surge one new pod, keep all three old ones (maxUnavailable 0).
        let out = run(&v2, &[rs(&old_name, 3, 3, 1)]);
        assert_eq!(replicas_of(&out), vec![(new_name.clone(), 1), (old_name.clone(), 3)]);
        assert_eq!(out["children"][0]["metadata"]["annotations"][REVISION], json!("2"));
        // The new pod is not available yet: nothing more moves.
        let out = run(&v2, &[rs(&old_name, 3, 3, 1), rs(&new_name, 1, 0, 2)]);
        assert_eq!(replicas_of(&out), vec![(new_name.clone(), 1), (old_name.clone(), 3)]);
        // Once it is available, one old pod may go.
        let out = run(&v2, &[rs(&old_name, 3, 3, 1), rs(&new_name, 1, 1, 2)]);
        assert_eq!(replicas_of(&out), vec![(new_name.clone(), 1), (old_name.clone(), 2)]);
        // The end: all new, the old set kept at zero for history; status tells rollout status it is done.
        let out = run(&v2, &[rs(&old_name, 0, 0, 1), rs(&new_name, 3, 3, 2)]);
        assert_eq!(replicas_of(&out), vec![(new_name.clone(), 3), (old_name.clone(), 0)]);
        assert_eq!(out["status"]["updatedReplicas"], json!(3));
        assert_eq!(out["status"]["conditions"][1]["reason"], json!("NewReplicaSetAvailable"));
    }

    #[test]
    fn recreate_waits_for_old_pods() {
        let mut v2 = deployment("v2", 2);
        v2["spec"]["strategy"] = json!({"type": "Recreate"});
        let out = run(&v2, &[rs("web-old", 2, 2, 1)]);
        let new_name = format!("web-{}", template_hash(&v2["spec"]["template"]));
        assert_eq!(replicas_of(&out), vec![(new_name.clone(), 0), ("web-old".into(), 0)]);
        let out = run(&v2, &[rs("web-old", 0, 0, 1)]);
        assert_eq!(replicas_of(&out)[0], (new_name, 2));
    }

    #[test]
    fn percentages_round_like_kubernetes() {
        assert_eq!(int_or_percent(Some(&json!("25%")), 3, true, "0"), 1);
        assert_eq!(int_or_percent(Some(&json!("25%")), 3, false, "0"), 0);
        assert_eq!(int_or_percent(None, 10, false, "25%"), 2);
        assert_eq!(int_or_percent(Some(&json!(2)), 10, false, "0"), 2);
    }
}
