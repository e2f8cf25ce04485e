//! Deployment: ReplicaSets per pod template, rolled with the RollingUpdate (maxSurge /
//! maxUnavailable) or Recreate strategy, and the status and conditions `kubectl rollout status` reads.
//! Each sync takes one step of kube's algorithm; the ReplicaSets' status changes bring the next.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};
use std::sync::Arc;
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use crate::objects::{decode, hash_str, set_label, take_children, to_value};

/// Label carrying the template hash, as kube names it.
pub const HASH_LABEL: &str = "pod-template-hash";
/// Annotation carrying the rollout revision, as kube names it.
pub const REVISION: &str = "deployment.kubernetes.io/revision";

/// `maxSurge` / `maxUnavailable` against `total` replicas: a number, or a percentage rounded up (surge)
/// or down (unavailability), as kube rounds them.
fn int_or_percent(v: Option<&IntOrString>, total: i64, round_up: bool, default: &str) -> i64 {
    let default = IntOrString::String(default.to_string());
    match v.unwrap_or(&default) {
        IntOrString::Int(n) => i64::from(*n).max(0),
        IntOrString::String(s) => match s.strip_suffix('%').and_then(|p| p.trim().parse::<f64>().ok()) {
            Some(p) => {
                let x = p * total as f64 / 100.0;
                (if round_up { x.ceil() } else { x.floor() }) as i64
            }
            None => s.parse().unwrap_or(0),
        },
    }
}

/// An observed ReplicaSet: typed for reading, the object as observed for passing back.
struct Observed {
    rs: ReplicaSet,
    object: Value,
}

impl Observed {
    fn name(&self) -> &str {
        self.rs.metadata.name.as_deref().unwrap_or_default()
    }

    fn spec_replicas(&self) -> i64 {
        self.rs.spec.as_ref().and_then(|s| s.replicas).map(i64::from).unwrap_or(0)
    }

    fn replicas(&self) -> i64 {
        self.rs.status.as_ref().map(|s| i64::from(s.replicas)).unwrap_or(0)
    }

    fn ready(&self) -> i64 {
        self.rs.status.as_ref().and_then(|s| s.ready_replicas).map(i64::from).unwrap_or(0)
    }

    fn available(&self) -> i64 {
        self.rs.status.as_ref().and_then(|s| s.available_replicas).map(i64::from).unwrap_or(0)
    }

    /// The ReplicaSet's `ReplicaFailure` condition (its controller could not create a pod), if any.
    fn replica_failure(&self) -> Option<DeploymentCondition> {
        let conditions = self.rs.status.as_ref()?.conditions.as_ref()?;
        let c = conditions.iter().find(|c| c.type_ == "ReplicaFailure")?;
        Some(DeploymentCondition {
            type_: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_update_time: c.last_transition_time.clone(),
            last_transition_time: c.last_transition_time.clone(),
        })
    }

    fn revision(&self) -> i64 {
        let annotations = self.rs.metadata.annotations.as_ref();
        annotations.and_then(|a| a.get(REVISION)).and_then(|s| s.parse().ok()).unwrap_or(0)
    }
}

/// The short hash naming a template's ReplicaSet: of the template as written, but for a null
/// `metadata.creationTimestamp`, which clients send or leave out at will (`kubectl create` leaves it out,
/// `kubectl rollout undo` sends it): the same template must name the same ReplicaSet.
pub fn template_hash(template: &Value) -> String {
    let null_stamp = template.get("metadata").and_then(|m| m.get("creationTimestamp")).is_some_and(Value::is_null);
    let text = if null_stamp {
        let mut t = template.clone();
        if let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("creationTimestamp");
        }
        t.to_string()
    } else {
        template.to_string()
    };
    let h = hash_str(&text);
    format!("{:x}", h % 0xff_ffff_ffff).chars().take(10).collect()
}

fn condition(
    type_: &str,
    ok: bool,
    reason: &str,
    message: String,
    at: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: Some(reason.into()),
        message: Some(message),
        last_update_time: at.clone(),
        last_transition_time: at.clone(),
    }
}

/// The replicas of the new ReplicaSet and of each old one after one step: Recreate scales the old ones
/// to zero and the new one up once no old pod is left; a rolling update scales the new one up within
/// maxSurge and the old ones down within maxUnavailable (unavailable old pods always go).
fn scale(
    recreate: bool,
    replicas: i64,
    surge: i64,
    unavailable: i64,
    new_rs: Option<&Observed>,
    old: &[Observed],
) -> (i64, Vec<i64>) {
    let old_spec_total: i64 = old.iter().map(Observed::spec_replicas).sum();
    let old_live: i64 = old.iter().map(Observed::replicas).sum();
    let new_spec = new_rs.map(Observed::spec_replicas).unwrap_or(0);
    let new_available = new_rs.map(Observed::available).unwrap_or(0);
    let mut new_replicas = new_spec;
    let mut old_replicas: Vec<i64> = old.iter().map(Observed::spec_replicas).collect();
    if recreate {
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
        let new_unavailable = (new_spec - new_available).max(0);
        let all_pods = new_spec + old_spec_total;
        let mut budget = (all_pods - min_available - new_unavailable).max(0);
        // Old pods that are not available can always go.
        for (i, rs) in old.iter().enumerate() {
            let unhealthy = (rs.spec_replicas() - rs.available()).max(0);
            let cut = unhealthy.min(old_replicas[i]);
            old_replicas[i] -= cut;
        }
        for r in old_replicas.iter_mut() {
            let cut = budget.min(*r);
            *r -= cut;
            budget -= cut;
        }
    }
    (new_replicas, old_replicas)
}

/// A Deployment's replica counts: wanted, in all its ReplicaSets, in the new one, Ready, available, the
/// new one's available, and maxUnavailable.
struct Counts {
    replicas: i64,
    total: i64,
    updated: i64,
    ready: i64,
    available: i64,
    new_available: i64,
    unavailable: i64,
}

/// A Deployment's status: its counts, Available (within maxUnavailable) and Progressing, and a
/// ReplicaSet's `ReplicaFailure` as kube copies it (the new one's, else an old one's).
fn status(
    c: &Counts,
    new_name: &str,
    at: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    failure: Option<DeploymentCondition>,
) -> DeploymentStatus {
    let complete = c.updated == c.replicas && c.total == c.updated && c.new_available == c.replicas;
    let available_ok = c.available >= c.replicas - c.unavailable;
    let (reason, message) = if available_ok {
        ("MinimumReplicasAvailable", "Deployment has minimum availability.")
    } else {
        ("MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
    };
    let progress = if complete { "has successfully progressed." } else { "is progressing." };
    DeploymentStatus {
        replicas: Some(c.total as i32),
        updated_replicas: Some(c.updated as i32),
        ready_replicas: Some(c.ready as i32),
        available_replicas: Some(c.available as i32),
        unavailable_replicas: Some((c.replicas - c.available).max(0) as i32),
        conditions: Some(
            [
                condition("Available", available_ok, reason, message.into(), at),
                condition(
                    "Progressing",
                    true,
                    if complete { "NewReplicaSetAvailable" } else { "ReplicaSetUpdated" },
                    format!("ReplicaSet \"{new_name}\" {progress}"),
                    at,
                ),
            ]
            .into_iter()
            .chain(failure)
            .collect(),
        ),
        ..Default::default()
    }
}

/// The sync hook: desired ReplicaSets and status of one Deployment.
pub fn sync(mut request: SyncRequest) -> Result<SyncResponse, HookError> {
    let sets = take_children(&mut request, "ReplicaSet.apps/v1");
    let d: Deployment = decode("parent", &request.parent)?;
    let spec = d.spec.unwrap_or_default();
    let template = &request.parent["spec"]["template"];
    let name = d.metadata.name.as_deref().unwrap_or_default();
    let replicas = i64::from(spec.replicas.unwrap_or(1).max(0));
    let hash = template_hash(template);
    let new_name = format!("{name}-{hash}");
    let mut all = Vec::with_capacity(sets.len());
    for (key, object) in sets {
        all.push(Observed {
            rs: decode(&format!("replica set {key}"), &object)?,
            object: Arc::unwrap_or_clone(object),
        });
    }
    let (mut old, new_rs): (Vec<Observed>, Vec<Observed>) = all.into_iter().partition(|rs| rs.name() != new_name);
    let new_rs = new_rs.into_iter().next();
    old.sort_by_key(Observed::revision);
    let strategy = spec.strategy.unwrap_or_default();
    let rolling = strategy.rolling_update.unwrap_or_default();
    let surge = int_or_percent(rolling.max_surge.as_ref(), replicas, true, "25%");
    let mut unavailable = int_or_percent(rolling.max_unavailable.as_ref(), replicas, false, "25%");
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    let recreate = strategy.type_.as_deref() == Some("Recreate");
    let (new_replicas, old_replicas) = scale(recreate, replicas, surge, unavailable, new_rs.as_ref(), &old);
    let new_available = new_rs.as_ref().map(Observed::available).unwrap_or(0);
    // The newest revision stays; a template that comes back (a rollback) is a new revision, as in kube.
    let newest = old.iter().chain(&new_rs).map(Observed::revision).max().unwrap_or(0);
    let mut rs_template = template.clone();
    set_label(&mut rs_template, HASH_LABEL, &hash)?;
    let mut selector = request.parent["spec"]["selector"].clone();
    if !selector.is_object() {
        selector = json!({});
    }
    selector["matchLabels"][HASH_LABEL] = json!(hash);
    let labels = rs_template["metadata"]["labels"].clone();
    let new_revision = match new_rs.as_ref().map(Observed::revision) {
        Some(r) if r > 0 && r == newest => r,
        _ => newest + 1,
    };
    let mut children = vec![json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": new_name, "namespace": d.metadata.namespace.as_deref().unwrap_or("default"),
                     "labels": labels, "annotations": {REVISION: new_revision.to_string()}},
        "spec": {"replicas": new_replicas, "selector": selector, "template": rs_template,
                 "minReadySeconds": spec.min_ready_seconds.unwrap_or(0)},
    })];
    // Old ReplicaSets stay (scaled to zero) for rollbacks, up to revisionHistoryLimit.
    let history = spec.revision_history_limit.unwrap_or(10).max(0) as usize;
    let sum = |f: fn(&Observed) -> i64| -> i64 { old.iter().chain(&new_rs).map(f).sum() };
    let (total, ready, available) = (sum(Observed::replicas), sum(Observed::ready), sum(Observed::available));
    let updated = new_rs.as_ref().map(Observed::replicas).unwrap_or(0);
    let failure = new_rs.iter().chain(&old).find_map(Observed::replica_failure);
    let mut empty_kept = 0;
    for (i, rs) in old.into_iter().enumerate().rev() {
        if old_replicas[i] == 0 && rs.replicas() == 0 {
            if empty_kept >= history {
                continue;
            }
            empty_kept += 1;
        }
        let mut keep = rs.object;
        keep["spec"]["replicas"] = json!(old_replicas[i]);
        children.push(keep);
    }
    let counts = Counts { replicas, total, updated, ready, available, new_available, unavailable };
    let status = status(&counts, &new_name, &d.metadata.creation_timestamp, failure);
    Ok(SyncResponse { status: Some(to_value("status", &status)?), children, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::run_json;

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
        run_json(sync, json!({"parent": d, "children": {"ReplicaSet.apps/v1": map}}))
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
    fn a_replica_sets_failure_to_make_pods_shows_in_the_deployment() {
        let d = deployment("v1", 1);
        let name = format!("web-{}", template_hash(&d["spec"]["template"]));
        let mut refused = rs(&name, 1, 0, 1);
        let failure = json!({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                             "message": "pods \"web-x\" is forbidden: no", "lastTransitionTime": "2026-12-04T16:00:00Z"});
        refused["status"]["conditions"] = json!([failure]);
        let out = run(&d, &[refused]);
        let conditions = out["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions.len(), 3, "{conditions:?}");
        assert_eq!(
            conditions[2],
            json!({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                   "message": "pods \"web-x\" is forbidden: no", "lastUpdateTime": "2026-12-04T16:00:00Z",
                   "lastTransitionTime": "2026-12-04T16:00:00Z"})
        );
        let out = run(&d, &[rs(&name, 1, 1, 1)]);
        assert_eq!(out["status"]["conditions"].as_array().unwrap().len(), 2, "cleared with the ReplicaSet's");
    }

    #[test]
    fn a_rollback_makes_the_old_replicaset_the_newest_revision() {
        let v1 = deployment("v1", 2);
        let v1_name = format!("web-{}", template_hash(&v1["spec"]["template"]));
        let v2 = deployment("v2", 2);
        let v2_name = format!("web-{}", template_hash(&v2["spec"]["template"]));
        let out = run(&v1, &[rs(&v1_name, 0, 0, 1), rs(&v2_name, 2, 2, 2)]);
        assert_eq!(out["children"][0]["metadata"]["name"], json!(v1_name));
        assert_eq!(out["children"][0]["metadata"]["annotations"][REVISION], json!("3"));
        let settled = run(&v1, &[rs(&v1_name, 2, 2, 3), rs(&v2_name, 0, 0, 2)]);
        assert_eq!(settled["children"][0]["metadata"]["annotations"][REVISION], json!("3"), "and stays so");
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
    fn a_null_creation_timestamp_does_not_change_the_hash() {
        let plain = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}});
        let mut stamped = plain.clone();
        stamped["metadata"]["creationTimestamp"] = Value::Null;
        assert_eq!(template_hash(&plain), template_hash(&stamped));
        stamped["spec"]["containers"] = json!([{"name": "c"}]);
        assert_ne!(template_hash(&plain), template_hash(&stamped));
    }

    #[test]
    fn percentages_round_like_kubernetes() {
        let pct = IntOrString::String("25%".into());
        assert_eq!(int_or_percent(Some(&pct), 3, true, "0"), 1);
        assert_eq!(int_or_percent(Some(&pct), 3, false, "0"), 0);
        assert_eq!(int_or_percent(None, 10, false, "25%"), 2);
        assert_eq!(int_or_percent(Some(&IntOrString::Int(2)), 10, false, "0"), 2);
        assert_eq!(int_or_percent(Some(&IntOrString::String("3".into())), 10, false, "0"), 3);
    }
}
