use serde_json::json;

use super::*;

fn errors(group: &str, resource: &str, old: &Value, new: &Value) -> Vec<String> {
    update_errors(group, resource, old, new).iter().map(ToString::to_string).collect()
}

fn pod_spec() -> Value {
    json!({"spec": {"containers": [{"name": "c", "image": "nginx:1", "command": ["nginx"]}],
                    "initContainers": [{"name": "i", "image": "busybox:1"}],
                    "tolerations": [{"key": "a", "operator": "Exists"}], "terminationGracePeriodSeconds": 30,
                    "schedulingGates": [{"name": "wait"}]}})
}

#[test]
fn a_pods_spec_changes_only_where_kube_lets_it() {
    let old = pod_spec();
    let allowed = [
        ("/spec/containers/0/image", json!("nginx:2")),
        ("/spec/initContainers/0/image", json!("busybox:2")),
        ("/spec/activeDeadlineSeconds", json!(60)),
        ("/spec/tolerations", json!([{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}])),
        ("/spec/schedulingGates", json!([])),
        ("/spec/nodeName", json!("node-1")),
    ];
    for (path, value) in allowed {
        let mut new = old.clone();
        let (parent, key) = path.rsplit_once('/').unwrap();
        new.at_mut(parent).unwrap()[key] = value;
        assert_eq!(errors("", "pods", &old, &new), Vec::<String>::new(), "{path}");
    }
    let refused = [
        ("/spec/containers/0/command", json!(["sh"])),
        ("/spec/tolerations", json!([])),
        ("/spec/terminationGracePeriodSeconds", json!(5)),
        ("/spec/restartPolicy", json!("Never")),
    ];
    for (path, value) in refused {
        let mut new = old.clone();
        let (parent, key) = path.rsplit_once('/').unwrap();
        new.at_mut(parent).unwrap()[key] = value;
        let errs = errors("", "pods", &old, &new);
        assert_eq!(errs.len(), 1, "{path}");
        assert!(
            errs[0].starts_with(
                "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
            ),
            "{errs:?}"
        );
    }
    // Bound once, a pod stays on its node; a deadline is lowered, never raised or dropped.
    let mut bound = old.clone();
    bound["spec"]["nodeName"] = json!("node-1");
    bound["spec"]["activeDeadlineSeconds"] = json!(60);
    for (path, value) in
        [("nodeName", json!("node-2")), ("activeDeadlineSeconds", json!(120)), ("activeDeadlineSeconds", Value::Null)]
    {
        let mut new = bound.clone();
        new["spec"][path] = value;
        assert_eq!(errors("", "pods", &bound, &new).len(), 1, "{path}");
    }
    let mut lowered = bound.clone();
    lowered["spec"]["activeDeadlineSeconds"] = json!(30);
    assert!(errors("", "pods", &bound, &lowered).is_empty());
    let mut labelled = old.clone();
    labelled["metadata"] = json!({"labels": {"x": "y"}});
    assert!(errors("", "pods", &old, &labelled).is_empty(), "metadata is not the spec");
}

#[test]
fn immutable_config_maps_and_secrets_keep_their_data() {
    let old = json!({"immutable": true, "data": {"a": "1"}});
    assert!(errors("", "configmaps", &old, &old.clone()).is_empty());
    let changed = json!({"immutable": true, "data": {"a": "2"}});
    assert_eq!(
        errors("", "configmaps", &old, &changed),
        ["data: Forbidden: field is immutable when `immutable` is set"]
    );
    let freed = json!({"immutable": false, "data": {"a": "1"}});
    assert_eq!(
        errors("", "secrets", &old, &freed),
        ["immutable: Forbidden: field is immutable when `immutable` is set"]
    );
    let mutable = json!({"data": {"a": "1"}});
    assert!(errors("", "configmaps", &mutable, &changed).is_empty(), "not yet immutable: anything goes");
}

#[test]
fn workload_selectors_stay_and_stateful_sets_change_only_what_kube_lets() {
    let old = json!({"spec": {"selector": {"matchLabels": {"app": "a"}}, "replicas": 1, "serviceName": "web",
                              "volumeClaimTemplates": [{"metadata": {"name": "data"}}], "template": {}}});
    let mut moved = old.clone();
    moved["spec"]["selector"] = json!({"matchLabels": {"app": "b"}});
    for (group, resource) in [
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "daemonsets"),
        ("apps", "statefulsets"),
        ("batch", "jobs"),
    ] {
        let errs = errors(group, resource, &old, &moved);
        assert!(
            errs.iter().any(|e| e.starts_with("spec.selector: Invalid value") && e.ends_with("field is immutable")),
            "{resource}: {errs:?}"
        );
    }
    assert!(errors("", "replicationcontrollers", &old, &moved).is_empty(), "an RC's selector may change");
    let mut scaled = old.clone();
    scaled["spec"]["replicas"] = json!(3);
    scaled["spec"]["template"] = json!({"metadata": {"labels": {"v": "2"}}});
    assert!(errors("apps", "statefulsets", &old, &scaled).is_empty());
    let mut claims = old.clone();
    claims["spec"]["volumeClaimTemplates"] = json!([]);
    let errs = errors("apps", "statefulsets", &old, &claims);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with("spec: Forbidden: updates to statefulset spec for fields other than 'replicas'"),
        "{errs:?}"
    );
}

#[test]
fn a_jobs_template_and_completions_stay_unless_kube_lets_them_change() {
    let old = json!({"spec": {"completions": 2, "parallelism": 2, "suspend": false,
                              "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
                     "status": {"startTime": "2026-12-03T13:00:00Z"}});
    let mut image = old.clone();
    image["spec"]["template"]["spec"]["containers"][0]["image"] = json!("j");
    assert!(errors("batch", "jobs", &old, &image).iter().any(|e| e.starts_with("spec.template: Invalid value")));
    let mut more = old.clone();
    more["spec"]["completions"] = json!(5);
    assert_eq!(errors("batch", "jobs", &old, &more), ["spec.completions: Invalid value: 5: field is immutable"]);
    let mut parallel = old.clone();
    parallel["spec"]["parallelism"] = json!(1);
    assert!(errors("batch", "jobs", &old, &parallel).is_empty(), "parallelism may change");
    // Elastic Indexed Jobs: completions and parallelism together.
    let mut indexed = old.clone();
    indexed["spec"]["completionMode"] = json!("Indexed");
    let mut grown = indexed.clone();
    grown["spec"]["completions"] = json!(4);
    grown["spec"]["parallelism"] = json!(4);
    assert!(errors("batch", "jobs", &indexed, &grown).is_empty());
    // Suspended and never started, where its pods go may change.
    let mut waiting = old.clone();
    waiting["spec"]["suspend"] = json!(true);
    waiting["status"] = json!({});
    let mut placed = waiting.clone();
    placed["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
    placed["spec"]["template"]["metadata"]["labels"] = json!({"queue": "q"});
    assert!(errors("batch", "jobs", &waiting, &placed).is_empty());
    let mut rewritten = waiting.clone();
    rewritten["spec"]["template"]["spec"]["containers"][0]["image"] = json!("j");
    assert_eq!(errors("batch", "jobs", &waiting, &rewritten).len(), 1, "its containers still may not");
}

#[test]
fn a_claim_grows_and_nothing_else_changes() {
    let old = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let mut grown = old.clone();
    grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    assert!(errors("", "persistentvolumeclaims", &old, &grown).is_empty());
    let mut shrunk = old.clone();
    shrunk["spec"]["resources"]["requests"]["storage"] = json!("512Mi");
    assert_eq!(
        errors("", "persistentvolumeclaims", &old, &shrunk),
        ["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
    );
    let mut modes = old.clone();
    modes["spec"]["accessModes"] = json!(["ReadWriteMany"]);
    assert_eq!(
        errors("", "persistentvolumeclaims", &old, &modes),
        [
            "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
        ]
    );
}

#[test]
fn a_pod_stored_before_its_requests_were_defaulted_still_updates() {
    let limits = json!({"cpu": "1"});
    let old = json!({"spec": {"containers": [{"name": "c", "image": "nginx:1", "resources": {"limits": limits}}]}});
    let mut new = old.clone();
    new["spec"]["containers"][0]["resources"]["requests"] = limits.clone();
    assert_eq!(errors("", "pods", &old, &new), Vec::<String>::new(), "the default the update adds is no change");
    new["spec"]["containers"][0]["resources"]["requests"] = json!({"cpu": "500m"});
    assert_eq!(errors("", "pods", &old, &new).len(), 1, "a request of its own is");
}
