use serde_json::json;

use super::*;

fn hpa(spec: Value) -> Value {
    json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"}, "spec": spec})
}

fn target() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
}

fn fields(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(|e| format!("{}: {}", e.field, e.detail)).collect()
}

#[test]
fn defaults_are_kubes() {
    let mut obj = hpa(json!({"scaleTargetRef": target(), "maxReplicas": 5}));
    apply_defaults(&mut obj);
    assert_eq!(obj["spec"]["minReplicas"], json!(1));
    assert_eq!(
        obj["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    assert!(obj["spec"].get("behavior").is_none(), "no behavior given, none defaulted");
    // A behavior given has what it leaves out filled in, and keeps what it says.
    let mut obj = hpa(json!({"scaleTargetRef": target(), "maxReplicas": 5, "minReplicas": 2,
        "metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}));
    apply_defaults(&mut obj);
    assert_eq!(obj["spec"]["minReplicas"], json!(2));
    assert_eq!(obj["spec"]["metrics"][0]["type"], json!("Pods"));
    assert_eq!(
        obj["spec"]["behavior"],
        json!({"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                           "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                        {"type": "Percent", "value": 100, "periodSeconds": 15}]},
               "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max",
                             "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}})
    );
}

#[test]
fn what_kubectl_autoscale_and_helm_create_send_is_valid() {
    let mut autoscale = hpa(json!({"scaleTargetRef": target(), "minReplicas": 2, "maxReplicas": 5,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}));
    apply_defaults(&mut autoscale);
    assert_eq!(fields(&validate(&autoscale)), Vec::<String>::new());
    let chart = hpa(json!({"scaleTargetRef": target(), "minReplicas": 1, "maxReplicas": 100, "metrics": [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
        {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}}]}));
    assert_eq!(fields(&validate(&chart)), Vec::<String>::new());
}

#[test]
fn bounds_and_the_target_are_refused_in_kubes_words() {
    let errs =
        validate(&hpa(json!({"scaleTargetRef": {"kind": "", "name": "a/b"}, "minReplicas": 0, "maxReplicas": 0})));
    assert_eq!(
        fields(&errs),
        [
            "spec.minReplicas: must be greater than or equal to 1",
            "spec.maxReplicas: must be greater than 0",
            "spec.scaleTargetRef.kind: ",
            "spec.scaleTargetRef.name: may not contain '/'",
        ]
    );
    let errs = validate(&hpa(json!({"scaleTargetRef": target(), "minReplicas": 5, "maxReplicas": 2})));
    assert_eq!(fields(&errs), ["spec.maxReplicas: must be greater than or equal to `minReplicas`"]);
}

#[test]
fn metrics_are_checked_by_their_source() {
    let metric = |m: Value| hpa(json!({"scaleTargetRef": target(), "maxReplicas": 3, "metrics": [m]}));
    let errs =
        validate(&metric(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}})));
    assert_eq!(
        fields(&errs),
        [
            "spec.metrics[0].resource.target.averageUtilization: must set either a target raw value or a target utilization"
        ]
    );
    let both = json!({"type": "Utilization", "averageUtilization": 0, "averageValue": "-1"});
    let errs = validate(&metric(json!({"type": "Resource", "resource": {"name": "cpu", "target": both}})));
    assert_eq!(
        fields(&errs),
        [
            "spec.metrics[0].resource.target.averageValue: must be positive",
            "spec.metrics[0].resource.target.averageUtilization: must be greater than 0",
            "spec.metrics[0].resource.target.averageValue: may not set both a target raw value and a target utilization",
        ]
    );
    // The type's source missing, another given instead; or given beside another.
    let pods = json!({"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1"}});
    let errs = validate(&metric(json!({"type": "Resource", "pods": pods})));
    assert_eq!(fields(&errs), ["spec.metrics[0].resource: must populate information for the given metric source"]);
    let cpu = json!({"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}});
    let errs = validate(&metric(json!({"type": "Resource", "resource": cpu, "pods": pods})));
    assert_eq!(fields(&errs), ["spec.metrics[0].pods: must populate the given metric source only"]);
    let errs = validate(&metric(json!({"type": "Cpu"})));
    assert_eq!(
        fields(&errs),
        [r#"spec.metrics[0].type: supported values: "ContainerResource", "External", "Object", "Pods", "Resource""#]
    );
    let external = json!({"metric": {"name": "queue"}, "target": {"type": "Value", "value": "5", "averageValue": "1"}});
    let errs = validate(&metric(json!({"type": "External", "external": external})));
    assert_eq!(
        fields(&errs),
        ["spec.metrics[0].external.target.value: may not set both a target value for metric and a per-pod target"]
    );
}

#[test]
fn behavior_rules_are_bounded() {
    let rules = json!({"stabilizationWindowSeconds": 3601, "selectPolicy": "Fastest",
                       "policies": [{"type": "Nodes", "value": 0, "periodSeconds": 1801}]});
    let errs = validate(&hpa(json!({"scaleTargetRef": target(), "maxReplicas": 3,
                                    "behavior": {"scaleUp": rules, "scaleDown": {"policies": []}}})));
    assert_eq!(
        fields(&errs),
        [
            "spec.behavior.scaleUp.stabilizationWindowSeconds: must be less than or equal to 3600",
            r#"spec.behavior.scaleUp.selectPolicy: supported values: "Disabled", "Max", "Min""#,
            r#"spec.behavior.scaleUp.policies[0].type: supported values: "Percent", "Pods""#,
            "spec.behavior.scaleUp.policies[0].value: must be greater than zero",
            "spec.behavior.scaleUp.policies[0].periodSeconds: must be less than or equal to 1800",
            "spec.behavior.scaleDown.policies: must specify at least one Policy",
        ]
    );
}

#[test]
fn a_status_write_may_not_make_replicas_negative() {
    let obj = json!({"status": {"currentReplicas": -1, "desiredReplicas": 2}});
    assert_eq!(fields(&status_errors(&obj)), ["status.currentReplicas: must be greater than or equal to 0"]);
}
