use serde_json::{Value, json};

use super::*;

#[test]
fn the_bounds_come_before_the_metrics() {
    assert_eq!(step(2, 5, 1), Step::Rescale { to: 2, reason: "Current number of replicas below Spec.MinReplicas" });
    assert_eq!(step(2, 5, 9), Step::Rescale { to: 5, reason: "Current number of replicas above Spec.MaxReplicas" });
    assert_eq!(step(2, 5, 3), Step::FollowMetrics);
    assert_eq!(step(2, 5, 2), Step::FollowMetrics);
    assert_eq!(step(2, 5, 0), Step::Disabled, "a target scaled to zero is left there");
}

#[test]
fn an_unreadable_metric_is_reported_as_kube_reports_it_without_a_metrics_api() {
    let metric = |m: Value| serde_json::from_value::<MetricSpec>(m).unwrap();
    let cpu = metric(json!({"type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}));
    let (reason, why) = unreadable(&cpu);
    assert_eq!(reason, "FailedGetResourceMetric");
    assert_eq!(
        why,
        "failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from \
         resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)"
    );
    let qps = metric(json!({"type": "Pods",
        "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}));
    assert_eq!(unreadable(&qps).0, "FailedGetPodsMetric");
    let queue = metric(json!({"type": "External",
        "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "10"}}}));
    assert!(unreadable(&queue).1.contains("external.metrics.k8s.io"));
}

#[test]
fn a_condition_keeps_its_transition_time_while_its_status_stays() {
    let then = Time(Timestamp::from_second(1_700_000_000).unwrap());
    let previous = vec![HorizontalPodAutoscalerCondition {
        type_: "AbleToScale".into(),
        status: "True".into(),
        reason: Some("SucceededGetScale".into()),
        message: Some(String::new()),
        last_transition_time: Some(then.clone()),
    }];
    let same = condition(&previous, "AbleToScale", true, "SucceededRescale", "scaled".into());
    assert_eq!((same.last_transition_time, same.reason.as_deref()), (Some(then.clone()), Some("SucceededRescale")));
    let flipped = condition(&previous, "AbleToScale", false, "FailedGetScale", "gone".into());
    assert_ne!(flipped.last_transition_time, Some(then));
    let mut conditions = previous.clone();
    set(&mut conditions, flipped.clone());
    set(&mut conditions, condition(&[], "ScalingActive", false, "ScalingDisabled", String::new()));
    let types: Vec<(&str, &str)> = conditions.iter().map(|c| (c.type_.as_str(), c.status.as_str())).collect();
    assert_eq!(types, [("AbleToScale", "False"), ("ScalingActive", "False")], "replaced in place, new ones added");
}
