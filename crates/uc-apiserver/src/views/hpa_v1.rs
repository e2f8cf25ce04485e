//! `autoscaling/v1` HorizontalPodAutoscalers over the stored `autoscaling/v2` ones, converted both ways
//! as kube-apiserver converts them (`pkg/apis/autoscaling/v1/conversion.go`): v1 has only a CPU
//! utilization target and its current figure; every v2 field it has no place for travels in
//! annotations (`autoscaling.alpha.kubernetes.io/metrics`, `current-metrics`, `conditions`, `behavior`)
//! and comes back from them, so that a v1 client's read-modify-write loses nothing.

use serde_json::{Map, Value, json};

/// The annotations that carry what v1 has no field for: (annotation, the v2 path it holds).
const CARRIED: &[(&str, &str)] = &[
    ("autoscaling.alpha.kubernetes.io/metrics", "/spec/metrics"),
    ("autoscaling.alpha.kubernetes.io/behavior", "/spec/behavior"),
    ("autoscaling.alpha.kubernetes.io/current-metrics", "/status/currentMetrics"),
    ("autoscaling.alpha.kubernetes.io/conditions", "/status/conditions"),
];

/// Whether a v2 metric (spec or status) is the CPU utilization a v1 field holds.
fn cpu_utilization(metric: &Value, figure: &str) -> Option<i64> {
    let resource = metric.get("resource").filter(|_| metric.get("type") == Some(&json!("Resource")))?;
    if resource.get("name") != Some(&json!("cpu")) {
        return None;
    }
    resource.get(figure)?.get("averageUtilization")?.as_i64()
}

/// Copies the fields both versions share.
fn copy(from: &Value, to: &mut Map<String, Value>, fields: &[&str]) {
    for f in fields {
        if let Some(v) = from.get(*f).filter(|v| !v.is_null()) {
            to.insert((*f).into(), v.clone());
        }
    }
}

const STATUS_FIELDS: &[&str] = &["observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas"];
const SPEC_FIELDS: &[&str] = &["scaleTargetRef", "minReplicas", "maxReplicas"];

/// A stored v2 HorizontalPodAutoscaler as `autoscaling/v1` shows it.
pub(super) fn to_v1(obj: &Value) -> Value {
    let (spec, status) = (obj.get("spec").cloned().unwrap_or_default(), obj.get("status").cloned().unwrap_or_default());
    let metrics = spec.get("metrics").and_then(Value::as_array).cloned().unwrap_or_default();
    let target = metrics.iter().find_map(|m| cpu_utilization(m, "target"));
    let others: Vec<Value> = metrics.into_iter().filter(|m| cpu_utilization(m, "target").is_none()).collect();
    let mut carried: Vec<(&str, Value)> = Vec::new();
    if !others.is_empty() {
        carried.push((CARRIED[0].0, Value::Array(others)));
    }
    for (annotation, path) in &CARRIED[1..] {
        let v = obj.pointer(path).filter(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()));
        if let Some(v) = v {
            carried.push((annotation, v.clone()));
        }
    }
    let mut out = obj.clone();
    out["apiVersion"] = json!("autoscaling/v1");
    if !carried.is_empty() {
        let mut annotations = out["metadata"]["annotations"].as_object().cloned().unwrap_or_default();
        for (k, v) in carried {
            annotations.insert(k.into(), Value::String(v.to_string()));
        }
        out["metadata"]["annotations"] = Value::Object(annotations);
    }
    let mut v1_spec = Map::new();
    copy(&spec, &mut v1_spec, SPEC_FIELDS);
    if let Some(t) = target {
        v1_spec.insert("targetCPUUtilizationPercentage".into(), json!(t));
    }
    out["spec"] = Value::Object(v1_spec);
    {
        // Go's int32 fields without omitempty: always there, 0 before the controller's first pass.
        let mut v1_status =
            Map::from_iter([("currentReplicas".into(), json!(0)), ("desiredReplicas".into(), json!(0))]);
        copy(&status, &mut v1_status, STATUS_FIELDS);
        let current = status.get("currentMetrics").and_then(Value::as_array).into_iter().flatten();
        if let Some(c) = current.filter_map(|m| cpu_utilization(m, "current")).next() {
            v1_status.insert("currentCPUUtilizationPercentage".into(), json!(c));
        }
        out["status"] = Value::Object(v1_status);
    }
    out
}

/// An `autoscaling/v1` HorizontalPodAutoscaler as stored (v2): its CPU target first, then the metrics
/// its annotation carries; the other carried fields back in place; the annotations gone.
pub(super) fn from_v1(obj: &Value) -> Value {
    let mut annotations = obj.pointer("/metadata/annotations").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut carried = Map::new();
    for (annotation, path) in CARRIED {
        let decoded = annotations.remove(*annotation).and_then(|v| serde_json::from_str::<Value>(v.as_str()?).ok());
        if let Some(v) = decoded {
            carried.insert((*path).into(), v);
        }
    }
    let (spec, status) = (obj.get("spec").cloned().unwrap_or_default(), obj.get("status"));
    let mut out = obj.clone();
    out["apiVersion"] = json!("autoscaling/v2");
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        if annotations.is_empty() {
            meta.remove("annotations");
        } else {
            meta.insert("annotations".into(), Value::Object(annotations));
        }
    }
    let mut v2_spec = Map::new();
    copy(&spec, &mut v2_spec, SPEC_FIELDS);
    let cpu = spec.get("targetCPUUtilizationPercentage").and_then(Value::as_i64).map(|t| {
        json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": t}}})
    });
    let others = carried.get("/spec/metrics").and_then(Value::as_array).cloned().unwrap_or_default();
    let metrics: Vec<Value> = cpu.into_iter().chain(others).collect();
    if !metrics.is_empty() {
        v2_spec.insert("metrics".into(), Value::Array(metrics));
    }
    if let Some(b) = carried.get("/spec/behavior") {
        v2_spec.insert("behavior".into(), b.clone());
    }
    out["spec"] = Value::Object(v2_spec);
    if let Some(status) = status {
        let mut v2_status = Map::new();
        copy(status, &mut v2_status, STATUS_FIELDS);
        let cpu = status
            .get("currentCPUUtilizationPercentage")
            .and_then(Value::as_i64)
            .map(|c| json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": c}}}]));
        if let Some(current) = carried.get("/status/currentMetrics").cloned().or(cpu) {
            v2_status.insert("currentMetrics".into(), current);
        }
        if let Some(c) = carried.get("/status/conditions") {
            v2_status.insert("conditions".into(), c.clone());
        }
        out["status"] = Value::Object(v2_status);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored() -> Value {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                        "minReplicas": 1, "maxReplicas": 5,
                        "metrics": [
                            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}],
                        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
               "status": {"currentReplicas": 2, "desiredReplicas": 2,
                          "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}],
                          "conditions": [{"type": "AbleToScale", "status": "True"}]}})
    }

    #[test]
    fn v1_shows_the_cpu_target_and_carries_the_rest_in_annotations() {
        let v1 = to_v1(&stored());
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(
            v1["spec"],
            json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                   "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60})
        );
        assert_eq!(
            v1["status"],
            json!({"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 40})
        );
        let annotations = &v1["metadata"]["annotations"];
        assert_eq!(annotations["team"], "a");
        let carried: Value =
            serde_json::from_str(annotations["autoscaling.alpha.kubernetes.io/metrics"].as_str().unwrap()).unwrap();
        assert_eq!(carried[0]["resource"]["name"], "memory");
        assert!(annotations["autoscaling.alpha.kubernetes.io/conditions"].as_str().unwrap().contains("AbleToScale"));
    }

    #[test]
    fn a_v1_round_trip_loses_nothing_and_a_plain_v1_object_becomes_a_cpu_metric() {
        assert_eq!(from_v1(&to_v1(&stored())), stored());
        let plain = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
                           "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3,
                                    "targetCPUUtilizationPercentage": 50}});
        assert_eq!(
            from_v1(&plain)["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}])
        );
    }
}
