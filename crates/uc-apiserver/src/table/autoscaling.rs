//! The cells of a HorizontalPodAutoscaler's columns, as kube's printer writes them
//! (`printHorizontalPodAutoscaler`, `formatHPAMetrics`): its target as `Kind/name`, and each metric as
//! `current/target` (`cpu: <unknown>/80%` before a current value is known), two of them and how many more.

use serde_json::Value;
use uc_api::Pointer;

/// `Deployment/web`.
pub(super) fn reference(v: &Value) -> Value {
    let field = |k: &str| v.at(&format!("/spec/scaleTargetRef/{k}")).and_then(Value::as_str).unwrap_or_default();
    Value::String(format!("{}/{}", field("kind"), field("name")))
}

/// The least replicas, `<unset>` when none is set.
pub(super) fn min_pods(v: &Value) -> Value {
    let min = v.at("/spec/minReplicas").and_then(Value::as_i64);
    Value::String(min.map_or_else(|| "<unset>".into(), |n| n.to_string()))
}

/// Every metric as `current/target`, the first two named and how many more.
pub(super) fn targets(v: &Value) -> Value {
    let specs = v.at("/spec/metrics").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if specs.is_empty() {
        return Value::String("<none>".into());
    }
    let statuses = v.at("/status/currentMetrics").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let list: Vec<String> = specs.iter().enumerate().map(|(i, spec)| metric(spec, statuses.get(i))).collect();
    let shown = list.iter().take(2).cloned().collect::<Vec<_>>().join(", ");
    Value::String(if list.len() > 2 { format!("{shown} + {} more...", list.len() - 2) } else { shown })
}

/// One metric: what its status says now (`<unknown>` without) over its target.
fn metric(spec: &Value, status: Option<&Value>) -> String {
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => Some(s.clone()),
        Some(n @ Value::Number(_)) => Some(n.to_string()),
        _ => None,
    };
    let source = match spec.get("type").and_then(Value::as_str) {
        Some("Resource") => "resource",
        Some("ContainerResource") => "containerResource",
        Some("Pods") => "pods",
        Some("Object") => "object",
        Some("External") => "external",
        _ => return "<unknown type>".into(),
    };
    let src = spec.get(source);
    let target = src.and_then(|s| s.get("target"));
    let current = status.and_then(|s| s.get(source)).and_then(|s| s.get("current"));
    let now = |field: &str| text(current.and_then(|c| c.get(field))).unwrap_or_else(|| "<unknown>".into());
    match source {
        "resource" | "containerResource" => {
            let name = src.and_then(|s| s.get("name")).and_then(Value::as_str).unwrap_or_default();
            if let Some(average) = text(target.and_then(|t| t.get("averageValue"))) {
                return format!("{name}: {}/{average}", now("averageValue"));
            }
            let percent = |v: Option<&Value>| v.and_then(Value::as_i64).map(|p| format!("{p}%"));
            let current = percent(current.and_then(|c| c.get("averageUtilization"))).unwrap_or("<unknown>".into());
            let wanted = percent(target.and_then(|t| t.get("averageUtilization"))).unwrap_or("<auto>".into());
            format!("{name}: {current}/{wanted}")
        }
        "pods" => {
            format!("{}/{}", now("averageValue"), text(target.and_then(|t| t.get("averageValue"))).unwrap_or_default())
        }
        _ => match text(target.and_then(|t| t.get("averageValue"))) {
            Some(average) => format!("{}/{average} (avg)", now("averageValue")),
            None => format!("{}/{}", now("value"), text(target.and_then(|t| t.get("value"))).unwrap_or_default()),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn autoscalers_print_as_kubes_printer_prints_them() {
        let cpu = json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}});
        let memory = json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}});
        let qps = json!({"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}});
        let hpa = json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
                                  "metrics": [cpu, memory, qps]}});
        assert_eq!(reference(&hpa), "Deployment/web");
        assert_eq!(min_pods(&hpa), "<unset>");
        assert_eq!(targets(&hpa), "cpu: <unknown>/80%, memory: <unknown>/500Mi + 1 more...");
        let mut measured = hpa.clone();
        measured["spec"]["minReplicas"] = json!(2);
        measured["spec"]["metrics"].as_array_mut().unwrap().truncate(1);
        measured["status"] = json!({"currentMetrics": [{"type": "Resource",
            "resource": {"name": "cpu", "current": {"averageUtilization": 35, "averageValue": "7m"}}}]});
        assert_eq!((min_pods(&measured), targets(&measured)), (json!("2"), json!("cpu: 35%/80%")));
        let external = json!({"spec": {"metrics": [{"type": "External", "external": {"metric": {"name": "queue"},
            "target": {"type": "AverageValue", "averageValue": "30"}}}]}});
        assert_eq!(targets(&external), "<unknown>/30 (avg)");
        assert_eq!(targets(&json!({"spec": {}})), "<none>");
    }
}
