use serde_json::{Value, json};

use super::*;

fn spec(containers: Value) -> PodSpec {
    serde_json::from_value(json!({"containers": containers})).unwrap()
}

#[test]
fn limits_stand_in_for_missing_requests() {
    let mut spec = json!({
        "containers": [
            {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}},
            {"name": "b", "resources": {}},
        ],
        "initContainers": [{"name": "i", "resources": {"limits": {"memory": "64Mi"}}}],
    });
    default_requests(&mut spec);
    assert_eq!(spec["containers"][0]["resources"]["requests"], json!({"cpu": "500m", "memory": "1Gi"}));
    assert_eq!(spec["containers"][1]["resources"], json!({}), "nothing limited, nothing requested");
    assert_eq!(spec["initContainers"][0]["resources"]["requests"], json!({"memory": "64Mi"}));
}

#[test]
fn qos_classes_are_kubes() {
    let cases = [
        (json!([{"name": "a"}]), "BestEffort"),
        (json!([{"name": "a", "resources": {"requests": {"cpu": "0"}}}]), "BestEffort"),
        (json!([{"name": "a", "resources": {"requests": {"example.com/gpu": "1"}}}]), "BestEffort"),
        (json!([{"name": "a", "resources": {"requests": {"cpu": "100m"}}}]), "Burstable"),
        (
            json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                "requests": {"cpu": "1000m", "memory": "1024Mi"}}}]),
            "Guaranteed",
        ),
        (
            json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                "requests": {"cpu": "500m", "memory": "1Gi"}}}]),
            "Burstable",
        ),
        (
            json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}},
                   {"name": "b"}]),
            "Burstable",
        ),
        (json!([{"name": "a", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}}]), "Burstable"),
    ];
    for (containers, class) in cases {
        assert_eq!(qos_class(&spec(containers.clone())), class, "{containers}");
    }
}
