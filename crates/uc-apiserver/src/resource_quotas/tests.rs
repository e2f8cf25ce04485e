use serde_json::json;

use super::evaluate::{Refusal, admit, matches, status_of, usage_of, used};
use super::*;

fn quota(name: &str, spec: Value) -> ResourceQuota {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns"}, "spec": spec})).unwrap()
}

fn pods() -> GroupResource {
    GroupResource::new("", "pods")
}

fn pod(containers: Value) -> Value {
    json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": containers}})
}

fn shown(u: &Usage) -> BTreeMap<String, String> {
    u.iter().map(|(k, a)| (k.clone(), a.to_string())).collect()
}

#[test]
fn quotas_are_refused_in_kubes_words() {
    let errors = |spec: Value| -> Vec<String> {
        validate(&json!({"metadata": {"name": "q"}, "spec": spec})).iter().map(ToString::to_string).collect()
    };
    assert_eq!(
        errors(json!({"hard": {"pods": "10", "requests.cpu": "1500m", "count/deployments.apps": "2"}})),
        Vec::<String>::new()
    );
    assert_eq!(
        errors(json!({"hard": {"pods": "1500m", "cpus": "1", "memory": "-1"}})),
        vec![
            "spec.hard[cpus]: Invalid value: \"cpus\": must be a standard resource for quota",
            "spec.hard[memory]: Invalid value: \"-1\": must be greater than or equal to 0",
            "spec.hard[pods]: Invalid value: \"1500m\": must be an integer",
        ]
    );
    assert_eq!(
        errors(json!({"hard": {"services": "1"}, "scopes": ["BestEffort"]})),
        vec!["spec.scopes: Invalid value: [\"BestEffort\"]: unsupported scope applied to resource"]
    );
    assert_eq!(
        errors(json!({"hard": {"pods": "1"}, "scopes": ["Terminating", "NotTerminating", "Sometimes"]})),
        vec![
            "spec.scopes: Invalid value: [\"Terminating\",\"NotTerminating\",\"Sometimes\"]: unsupported scope",
            "spec.scopes: Invalid value: [\"Terminating\",\"NotTerminating\",\"Sometimes\"]: conflicting scopes",
        ]
    );
}

#[test]
fn a_pod_uses_its_requests_and_limits_with_its_init_containers_and_sidecars() {
    let p = json!({"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m"}}},
                       {"name": "b", "resources": {"requests": {"cpu": "100m", "memory": "64Mi", "example.com/gpu": "1"}}}],
        "initContainers": [{"name": "setup", "resources": {"requests": {"cpu": "1"}}},
                           {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"memory": "32Mi"}}}]}});
    assert_eq!(
        shown(&usage_of(&pods(), &p)),
        BTreeMap::from([
            ("count/pods".into(), "1".into()),
            ("cpu".into(), "1".into()),
            ("limits.cpu".into(), "200m".into()),
            ("memory".into(), "160Mi".into()),
            ("pods".into(), "1".into()),
            ("requests.cpu".into(), "1".into()),
            ("requests.example.com/gpu".into(), "1".into()),
            ("requests.memory".into(), "160Mi".into()),
        ])
    );
    let mut done = p.clone();
    done["status"] = json!({"phase": "Succeeded"});
    assert_eq!(shown(&usage_of(&pods(), &done)), BTreeMap::from([("count/pods".into(), "1".into())]), "finished");
}

#[test]
fn services_claims_and_other_objects_use_their_counts() {
    let services = GroupResource::new("", "services");
    let lb =
        json!({"metadata": {"name": "s"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
    assert_eq!(
        shown(&usage_of(&services, &lb)),
        BTreeMap::from([
            ("count/services".into(), "1".into()),
            ("services".into(), "1".into()),
            ("services.loadbalancers".into(), "1".into()),
            ("services.nodeports".into(), "2".into()),
        ])
    );
    let claims = GroupResource::new("", "persistentvolumeclaims");
    let claim = json!({"metadata": {"name": "c"}, "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "2Gi"}}}});
    let u = shown(&usage_of(&claims, &claim));
    assert_eq!(u["requests.storage"], "2Gi");
    assert_eq!(u["fast.storageclass.storage.k8s.io/requests.storage"], "2Gi");
    assert_eq!(u["fast.storageclass.storage.k8s.io/persistentvolumeclaims"], "1");
    let deployments = GroupResource::new("apps", "deployments");
    assert_eq!(
        shown(&usage_of(&deployments, &json!({}))),
        BTreeMap::from([("count/deployments.apps".into(), "1".into())])
    );
    assert_eq!(type_of("count/deployments.apps"), Some(deployments));
    assert_eq!(type_of("requests.storage"), Some(claims));
    assert_eq!(type_of("limits.memory"), Some(pods()));
}

#[test]
fn scopes_choose_the_pods_a_quota_counts() {
    let best_effort = quota("be", json!({"hard": {"pods": "1"}, "scopes": ["BestEffort"]}));
    let plain = pod(json!([{"name": "c"}]));
    let sized = pod(json!([{"name": "c", "resources": {"requests": {"cpu": "1"}}}]));
    assert!(matches(&best_effort, &pods(), &plain) && !matches(&best_effort, &pods(), &sized));
    let high = quota(
        "high",
        json!({"hard": {"pods": "1"},
        "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}),
    );
    let mut urgent = plain.clone();
    urgent["spec"]["priorityClassName"] = json!("high");
    assert!(matches(&high, &pods(), &urgent) && !matches(&high, &pods(), &plain));
    let terminating = quota("t", json!({"hard": {"pods": "1"}, "scopes": ["Terminating"]}));
    let mut deadline = plain.clone();
    deadline["spec"]["activeDeadlineSeconds"] = json!(60);
    assert!(matches(&terminating, &pods(), &deadline) && !matches(&terminating, &pods(), &plain));
    assert!(!matches(&quota("s", json!({"hard": {"services": "1"}})), &pods(), &plain), "holds nothing pods use");
    let scoped_services = quota("x", json!({"hard": {"count/services": "1"}, "scopes": ["NotTerminating"]}));
    assert!(!matches(&scoped_services, &GroupResource::new("", "services"), &json!({})), "only pods meet scopes");
}

#[test]
fn a_new_object_beyond_a_quota_is_refused_in_the_plugins_words() {
    let q = quota("compute", json!({"hard": {"pods": "2", "requests.cpu": "1", "requests.memory": "1Gi"}}));
    let running = pod(json!([{"name": "c", "resources": {"requests": {"cpu": "600m", "memory": "512Mi"}}}]));
    let now = used(&q, [(&pods(), &running)].into_iter());
    assert_eq!(
        shown(&now),
        BTreeMap::from([
            ("pods".into(), "1".into()),
            ("requests.cpu".into(), "600m".into()),
            ("requests.memory".into(), "512Mi".into())
        ])
    );
    assert_eq!(
        status_of(&q, &now),
        json!({"hard": {"pods": "2", "requests.cpu": "1", "requests.memory": "1Gi"},
               "used": {"pods": "1", "requests.cpu": "600m", "requests.memory": "512Mi"}})
    );
    let quotas = [(q, now)];
    let big = pod(json!([{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]));
    assert_eq!(
        admit(&quotas, &pods(), &big, None),
        Err(Refusal::Exceeded {
            quota: "compute".into(),
            requested: "requests.cpu=500m".into(),
            used: "requests.cpu=600m".into(),
            limited: "requests.cpu=1".into()
        })
    );
    assert_eq!(
        admit(&quotas, &pods(), &big, None).unwrap_err().to_string(),
        "exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1"
    );
    let fits = pod(json!([{"name": "c", "resources": {"requests": {"cpu": "400m", "memory": "512Mi"}}}]));
    assert_eq!(admit(&quotas, &pods(), &fits, None), Ok(()), "exactly at the quota");
    let unstated = pod(json!([{"name": "app"}, {"name": "log", "resources": {"requests": {"cpu": "100m"}}}]));
    assert_eq!(
        admit(&quotas, &pods(), &unstated, None).unwrap_err().to_string(),
        "failed quota: compute: must specify requests.cpu for: app; requests.memory for: app,log"
    );
    assert_eq!(admit(&quotas, &pods(), &big, Some(&running)), Ok(()), "a pod's update is not counted");
}

#[test]
fn a_change_is_charged_what_it_adds() {
    let claims = GroupResource::new("", "persistentvolumeclaims");
    let claim = |size: &str| json!({"metadata": {"name": "c"}, "spec": {"resources": {"requests": {"storage": size}}}});
    let q = quota("storage", json!({"hard": {"requests.storage": "3Gi", "persistentvolumeclaims": "1"}}));
    let now = used(&q, [(&claims, &claim("1Gi"))].into_iter());
    let quotas = [(q, now)];
    assert_eq!(admit(&quotas, &claims, &claim("3Gi"), Some(&claim("1Gi"))), Ok(()), "2Gi more fits");
    assert_eq!(
        admit(&quotas, &claims, &claim("5Gi"), Some(&claim("1Gi"))).unwrap_err().to_string(),
        "exceeded quota: storage, requested: requests.storage=4Gi, used: requests.storage=1Gi, limited: requests.storage=3Gi"
    );
    assert_eq!(
        admit(&quotas, &claims, &claim("1Gi"), None).unwrap_err().to_string(),
        "exceeded quota: storage, requested: persistentvolumeclaims=1, used: persistentvolumeclaims=1, limited: persistentvolumeclaims=1"
    );
}
