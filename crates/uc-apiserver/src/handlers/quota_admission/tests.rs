use serde_json::json;
use uc_api::GroupResource;

use super::*;
use crate::storage::{Op, object_key};

async fn store(app: &std::sync::Arc<App>, resource: &str, obj: Value) {
    let gr = GroupResource::new("", resource);
    let key = object_key("default", obj["metadata"]["name"].as_str().unwrap());
    app.store.write(Op::Create { gr, key, object: obj }).await.unwrap();
}

fn target(app: &std::sync::Arc<App>, resource: &str) -> Target {
    crate::handlers::resolve(app, "", "v1", &["namespaces", "default", resource]).unwrap()
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "300m"}}}]}})
}

#[tokio::test]
async fn a_new_pod_is_held_to_what_its_namespace_already_uses() {
    let dir = tempfile::tempdir().unwrap();
    let app = crate::server::test_app(dir.path());
    let pods = target(&app, "pods");
    assert!(admit_new(&app, &pods, "a", &pod("a")).await.unwrap().is_none(), "no quota: nothing held");
    store(&app, "resourcequotas", json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": "default"}, "spec": {"hard": {"pods": "2", "requests.cpu": "500m"}}}))
    .await;
    let held = admit_new(&app, &pods, "a", &pod("a")).await.unwrap();
    assert!(held.is_some(), "held until stored");
    drop(held);
    store(&app, "pods", pod("a")).await;
    let refused = admit_new(&app, &pods, "b", &pod("b")).await.unwrap_err();
    assert_eq!(
        (refused.code(), refused.0.message.as_str()),
        (
            403,
            "pods \"b\" is forbidden: exceeded quota: compute, requested: requests.cpu=300m, used: requests.cpu=300m, limited: requests.cpu=500m"
        )
    );
    let other = crate::handlers::resolve(&app, "", "v1", &["namespaces", "elsewhere", "pods"]).unwrap();
    assert!(admit_new(&app, &other, "b", &pod("b")).await.unwrap().is_none(), "another namespace's quota");
}

#[tokio::test]
async fn a_claim_may_grow_within_its_namespaces_storage_quota_and_the_status_says_what_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let app = crate::server::test_app(dir.path());
    store(
        &app,
        "resourcequotas",
        json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "storage", "namespace": "default"}, "spec": {"hard": {"requests.storage": "2Gi"}}}),
    )
    .await;
    let claim = |size: &str| {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"}, "spec": {"resources": {"requests": {"storage": size}}}})
    };
    store(&app, "persistentvolumeclaims", claim("1Gi")).await;
    let claims = target(&app, "persistentvolumeclaims");
    admit_change(&app, &claims, "data", &claim("2Gi"), &claim("1Gi")).expect("within the quota");
    assert_eq!(admit_change(&app, &claims, "data", &claim("3Gi"), &claim("1Gi")).unwrap_err().code(), 403);
    let (_, quota, used) = with_usage(&app, "default").remove(0);
    assert_eq!(
        evaluate::status_of(&quota, &used),
        json!({"hard": {"requests.storage": "2Gi"}, "used": {"requests.storage": "1Gi"}})
    );
}
