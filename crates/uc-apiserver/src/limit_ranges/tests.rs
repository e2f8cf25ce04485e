use serde_json::json;

use super::admission::{check_claim, check_pod, default_pod};
use super::*;

fn errors(range: Value) -> Vec<String> {
    let mut range = json!({"metadata": {"name": "r"}, "spec": {"limits": range}});
    apply_defaults(&mut range);
    validate(&range).iter().map(|e| format!("{}: {}", e.field, e.detail)).collect()
}

#[test]
fn a_container_items_defaults_come_from_its_max_and_min() {
    let mut range = json!({"spec": {"limits": [
        {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m"}, "default": {"memory": "512Mi"}},
        {"type": "Pod", "max": {"cpu": "4"}},
    ]}});
    apply_defaults(&mut range);
    let container = &range["spec"]["limits"][0];
    assert_eq!(container["default"], json!({"cpu": "2", "memory": "512Mi"}), "the max where no default is given");
    assert_eq!(container["defaultRequest"], json!({"cpu": "2", "memory": "512Mi"}), "the default limit first");
    let mut only_min = json!({"spec": {"limits": [{"type": "Container", "min": {"cpu": "100m"}}]}});
    apply_defaults(&mut only_min);
    assert_eq!(only_min["spec"]["limits"][0]["defaultRequest"], json!({"cpu": "100m"}));
    assert!(only_min["spec"]["limits"][0].get("default").is_none(), "nothing to default a limit from");
    assert!(range["spec"]["limits"][1].get("default").is_none(), "a Pod item gets no defaults");
}

#[test]
fn ranges_are_refused_in_kubes_words() {
    assert_eq!(
        errors(json!([{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "2"}}])),
        [
            "spec.limits[0].min[cpu]: min value 2 is greater than max value 1",
            // The defaults (from the max) then sit below the min as well.
            "spec.limits[0].defaultRequest[cpu]: min value 2 is greater than default request value 1",
            "spec.limits[0].default[cpu]: min value 2 is greater than default value 1",
        ]
    );
    assert_eq!(
        errors(json!([{"type": "Pod", "default": {"cpu": "1"}}])),
        ["spec.limits[0].default: may not be specified when `type` is 'Pod'"]
    );
    assert_eq!(
        errors(json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "500m"}}])),
        ["spec.limits[0].maxLimitRequestRatio[cpu]: ratio 500m is less than 1"]
    );
    assert_eq!(
        errors(
            json!([{"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}}])
        ),
        ["spec.limits[0].maxLimitRequestRatio[cpu]: ratio 3 is greater than max/min = 2.000000"]
    );
    assert_eq!(
        errors(json!([{"type": "PersistentVolumeClaim"}])),
        ["spec.limits[0].limits: either minimum or maximum storage value is required, but neither was provided"]
    );
    assert_eq!(
        errors(json!([{"type": "Box"}, {"type": "Pod"}, {"type": "Pod"}])),
        ["spec.limits[0].type: must be a standard limit type or fully qualified", "spec.limits[2].type: ",]
    );
    assert_eq!(errors(json!([{"type": "Container", "max": {"cpuu": "1"}}])).len(), 3, "max, default, default request");
    assert_eq!(
        errors(
            json!([{"type": "Container", "default": {"example.com/gpu": "2"}, "defaultRequest": {"example.com/gpu": "1"}}])
        ),
        [
            "spec.limits[0].defaultRequest[example.com/gpu]: default value 2 must equal to defaultRequest value 1 in example.com/gpu"
        ]
    );
    assert!(errors(json!([{"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "1Gi"}}])).is_empty());
}

fn ranges(items: Value) -> Vec<LimitRange> {
    let mut range = json!({"metadata": {"name": "r"}, "spec": {"limits": items}});
    apply_defaults(&mut range);
    vec![serde_json::from_value(range).unwrap()]
}

fn pod_spec(pod: &Value) -> PodSpec {
    serde_json::from_value(pod["spec"].clone()).unwrap()
}

#[test]
fn a_new_pods_containers_get_the_defaults_they_leave_out_and_the_annotation_says_which() {
    let limits = ranges(
        json!([{"type": "Container", "default": {"cpu": "1", "memory": "256Mi"}, "defaultRequest": {"cpu": "250m"}}]),
    );
    let mut pod = json!({"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "app", "resources": {"limits": {"memory": "512Mi"}, "requests": {"memory": "512Mi"}}},
                       {"name": "side"}],
        "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "100m"}}}]}});
    default_pod(&mut pod, &limits);
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "1", "memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "512Mi"}})
    );
    assert_eq!(
        pod["spec"]["containers"][1]["resources"],
        json!({"limits": {"cpu": "1", "memory": "256Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}}),
        "the default request of memory is its default limit"
    );
    assert_eq!(
        pod["metadata"]["annotations"][ANNOTATION],
        "LimitRanger plugin set: cpu request for container app; cpu limit for container app; \
         cpu, memory request for container side; cpu, memory limit for container side; \
         memory request for init container init; cpu, memory limit for init container init"
    );
    let mut untouched = json!({"metadata": {}, "spec": {"containers": [{"name": "c"}]}});
    default_pod(&mut untouched, &ranges(json!([{"type": "Pod", "max": {"cpu": "1"}}])));
    assert!(untouched["metadata"].get("annotations").is_none(), "a range without Container defaults sets nothing");
}

#[test]
fn pods_outside_a_ranges_bounds_are_refused_in_the_plugins_words() {
    let limits = ranges(json!([{"type": "Container", "max": {"cpu": "800m"}, "min": {"cpu": "200m"}}]));
    let pod = |cpu_limit: &str, cpu_request: &str| json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": cpu_limit}, "requests": {"cpu": cpu_request}}}]}});
    let refusal = |p: &Value| check_pod(&pod_spec(p), &limits).map_err(|e| e.to_string());
    assert_eq!(
        refusal(&pod("1500m", "500m")),
        Err("maximum cpu usage per Container is 800m, but limit is 1500m".into())
    );
    assert_eq!(
        refusal(&pod("800m", "100m")),
        Err("minimum cpu usage per Container is 200m, but request is 100m".into())
    );
    assert_eq!(refusal(&pod("800m", "0.5")), Ok(()));
    let none = json!({"spec": {"containers": [{"name": "c"}]}});
    assert_eq!(
        refusal(&none),
        Err("[minimum cpu usage per Container is 200m.  No request is specified, \
             maximum cpu usage per Container is 800m.  No limit is specified]"
            .into())
    );
    let ratio = ranges(json!([{"type": "Container", "maxLimitRequestRatio": {"memory": "2"}}]));
    let p = json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"memory": "1Gi"}, "requests": {"memory": "256Mi"}}}]}});
    assert_eq!(
        check_pod(&pod_spec(&p), &ratio).unwrap_err().to_string(),
        "memory max limit to request ratio per Container is 2, but provided ratio is 4.000000"
    );
}

#[test]
fn a_pod_item_bounds_the_containers_sum_or_an_init_containers_own_figure() {
    let limits = ranges(json!([{"type": "Pod", "max": {"cpu": "2"}}]));
    let c =
        |name: &str, cpu: &str| json!({"name": name, "resources": {"limits": {"cpu": cpu}, "requests": {"cpu": cpu}}});
    let two = json!({"spec": {"containers": [c("a", "1500m"), c("b", "1")]}});
    assert_eq!(
        check_pod(&pod_spec(&two), &limits).unwrap_err().to_string(),
        "maximum cpu usage per Pod is 2, but limit is 2500m"
    );
    let init = json!({"spec": {"containers": [c("a", "1")], "initContainers": [c("i", "3")]}});
    assert_eq!(
        check_pod(&pod_spec(&init), &limits).unwrap_err().to_string(),
        "maximum cpu usage per Pod is 2, but limit is 3"
    );
    let fits = json!({"spec": {"containers": [c("a", "1"), c("b", "1")], "initContainers": [c("i", "2")]}});
    assert_eq!(check_pod(&pod_spec(&fits), &limits), Ok(()));
}

#[test]
fn a_claims_storage_request_is_held_to_its_bounds() {
    let limits =
        ranges(json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "2Gi"}}]));
    let claim = |size: &str| -> PersistentVolumeClaimSpec {
        serde_json::from_value(json!({"resources": {"requests": {"storage": size}}})).unwrap()
    };
    assert_eq!(
        check_claim(&claim("5Gi"), &limits).unwrap_err().to_string(),
        "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"
    );
    assert_eq!(
        check_claim(&claim("500Mi"), &limits).unwrap_err().to_string(),
        "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"
    );
    assert_eq!(check_claim(&claim("1536Mi"), &limits), Ok(()));
}
