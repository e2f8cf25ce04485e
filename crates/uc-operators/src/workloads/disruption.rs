//! PodDisruptionBudget (policy/v1): counts the healthy pods a budget's selector picks and how many of
//! them may be disrupted (`status.disruptionsAllowed`), which the API server's eviction subresource
//! reads. The pods are related resources named by the customize hook (the budget's selector); a budget
//! has no children.

use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use uc_api::hook::{CustomizeRequest, CustomizeResponse, RelatedResourceRule, SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use crate::objects::{PodView, decode, to_value};

/// The customize hook: the pods the budget selects.
pub fn customize(request: CustomizeRequest) -> Result<CustomizeResponse, HookError> {
    let selector = request.parent.pointer("/spec/selector").cloned().unwrap_or_else(|| json!({}));
    let pods = RelatedResourceRule {
        api_version: "v1".into(),
        resource: "pods".into(),
        label_selector: Some(selector),
        ..Default::default()
    };
    Ok(CustomizeResponse { related_resources: vec![pods] })
}

/// `value` of `total`: a number, or a percentage rounded up (kube rounds both minAvailable and
/// maxUnavailable percentages up).
fn scaled(value: &IntOrString, total: i32) -> i32 {
    match value {
        IntOrString::Int(n) => *n,
        IntOrString::String(s) => match s.strip_suffix('%').and_then(|p| p.trim().parse::<f64>().ok()) {
            Some(p) => (p * f64::from(total) / 100.0).ceil() as i32,
            None => s.parse().unwrap_or(0),
        },
    }
}

/// The healthy pods a budget wants, of `expected`: `minAvailable`, or `expected - maxUnavailable`
/// (neither: every pod, kube's default of minAvailable 1 aside — a budget must name one).
pub fn desired_healthy(pdb: &PodDisruptionBudget, expected: i32) -> i32 {
    let spec = pdb.spec.as_ref();
    match (spec.and_then(|s| s.min_available.as_ref()), spec.and_then(|s| s.max_unavailable.as_ref())) {
        (Some(min), _) => scaled(min, expected),
        (None, Some(max)) => (expected - scaled(max, expected)).max(0),
        (None, None) => expected,
    }
}

/// How long an evicted pod that is not yet seen going stays out of the healthy count (kube's).
const DISRUPTION_TIMEOUT_SECONDS: i64 = 120;

/// The sync hook: the budget's status.
pub fn sync(request: SyncRequest) -> Result<SyncResponse, HookError> {
    let pdb: PodDisruptionBudget = decode("parent", &request.parent)?;
    let now = Timestamp::now();
    // Pods an eviction took (the API server records them) and that are not yet seen going.
    let disrupted = pdb.status.as_ref().and_then(|s| s.disrupted_pods.clone()).unwrap_or_default();
    let mut still_disrupted = std::collections::BTreeMap::new();
    let mut expected = 0;
    let mut healthy = 0;
    for (key, pod) in request.related.get("Pod.v1").into_iter().flatten() {
        let pod = PodView::of(key, pod)?;
        if pod.deleting() || matches!(pod.phase(), "Succeeded" | "Failed") {
            continue;
        }
        expected += 1;
        let evicted =
            disrupted.get(pod.name()).filter(|t| now.duration_since(t.0).as_secs() < DISRUPTION_TIMEOUT_SECONDS);
        match evicted {
            Some(at) => {
                still_disrupted.insert(pod.name().to_string(), at.clone());
            }
            None => healthy += i32::from(pod.ready()),
        }
    }
    let desired = desired_healthy(&pdb, expected);
    let allowed = (healthy - desired).max(0);
    let previous = pdb.status.as_ref().and_then(|s| s.conditions.as_ref()).and_then(|cs| cs.first());
    let ok = if allowed > 0 { "True" } else { "False" };
    // The transition time moves only when the condition does (a status that changes on every sync
    // would be written on every sync).
    let since = match previous {
        Some(c) if c.status == ok => c.last_transition_time.clone(),
        _ => Time(Timestamp::now()),
    };
    let (reason, message) = if allowed > 0 { ("SufficientPods", "") } else { ("InsufficientPods", "") };
    let status = PodDisruptionBudgetStatus {
        current_healthy: healthy,
        desired_healthy: desired,
        disruptions_allowed: allowed,
        expected_pods: expected,
        observed_generation: pdb.metadata.generation,
        disrupted_pods: (!still_disrupted.is_empty()).then_some(still_disrupted),
        conditions: Some(vec![Condition {
            type_: "DisruptionAllowed".into(),
            status: ok.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: since,
            observed_generation: pdb.metadata.generation,
        }]),
    };
    Ok(SyncResponse { status: Some(to_value("status", &status)?), ..Default::default() })
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::objects::run_json;

    fn pod(name: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name}, "status": {"phase": "Running",
               "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    fn request(spec: Value, pods: &[Value]) -> Value {
        let pods: serde_json::Map<String, Value> =
            pods.iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p.clone())).collect();
        json!({"parent": {"metadata": {"name": "db", "namespace": "ns", "generation": 1}, "spec": spec},
               "related": {"Pod.v1": pods}})
    }

    #[test]
    fn disruptions_are_the_healthy_pods_above_what_the_budget_wants() {
        let three = [pod("a", true), pod("b", true), pod("c", false)];
        let out = run_json(sync, request(json!({"minAvailable": 1}), &three));
        let s = &out["status"];
        assert_eq!(
            (s["expectedPods"].clone(), s["currentHealthy"].clone(), s["desiredHealthy"].clone()),
            (json!(3), json!(2), json!(1))
        );
        assert_eq!(s["disruptionsAllowed"], json!(1));
        assert_eq!(s["conditions"][0]["reason"], json!("SufficientPods"));
        let out = run_json(sync, request(json!({"maxUnavailable": "50%"}), &three));
        assert_eq!(out["status"]["desiredHealthy"], json!(1), "3 - ceil(1.5)");
        let out = run_json(sync, request(json!({"minAvailable": "100%"}), &three));
        assert_eq!(
            (out["status"]["disruptionsAllowed"].clone(), out["status"]["conditions"][0]["status"].clone()),
            (json!(0), json!("False"))
        );
        // A pod an eviction took, not yet seen going, is not healthy.
        let mut evicted = request(json!({"maxUnavailable": 1}), &three);
        evicted["parent"]["status"] = json!({"disruptedPods": {"a": Timestamp::now().to_string()}});
        let out = run_json(sync, evicted);
        assert_eq!(
            (out["status"]["currentHealthy"].clone(), out["status"]["disruptionsAllowed"].clone()),
            (json!(1), json!(0))
        );
        assert!(out["status"]["disruptedPods"]["a"].is_string(), "kept while the pod is there");
        let mut gone = request(json!({"maxUnavailable": 1}), &three[1..]);
        gone["parent"]["status"] = json!({"disruptedPods": {"a": Timestamp::now().to_string()}});
        assert!(run_json(sync, gone)["status"].get("disruptedPods").is_none(), "dropped once the pod is gone");
        let rules = customize(CustomizeRequest {
            controller: json!({}),
            parent: json!({"spec": {"selector": {"matchLabels": {"app": "db"}}}}),
        })
        .unwrap()
        .related_resources;
        assert_eq!(rules[0].label_selector, Some(json!({"matchLabels": {"app": "db"}})));
    }
}
