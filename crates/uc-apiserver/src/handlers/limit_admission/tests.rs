use serde_json::json;

use super::*;
use crate::storage::{Op, object_key};

async fn with_range(app: &std::sync::Arc<App>) {
    let mut range = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "bounds", "namespace": "default"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "1", "memory": "1Gi"}},
                            {"type": "PersistentVolumeClaim", "max": {"storage": "2Gi"}}]}});
    crate::limit_ranges::apply_defaults(&mut range);
    let gr = GroupResource::new("", "limitranges");
    app.store.write(Op::Create { gr, key: object_key("default", "bounds"), object: range }).await.unwrap();
}

fn target(app: &std::sync::Arc<App>, resource: &str) -> Target {
    crate::handlers::resolve(app, "", "v1", &["namespaces", "default", resource]).unwrap()
}

#[tokio::test]
async fn a_new_pod_gets_its_namespaces_defaults_and_the_qos_class_they_make() {
    let dir = tempfile::tempdir().unwrap();
    let app = crate::server::test_app(dir.path());
    let pods = target(&app, "pods");
    let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                         "status": {"phase": "Pending"}});
    assert!(!default_pod(&app, &pods, &mut pod.clone()), "no range yet: nothing set");
    with_range(&app).await;
    assert!(default_pod(&app, &pods, &mut pod));
    assert_eq!(pod["spec"]["containers"][0]["resources"]["limits"], json!({"cpu": "1", "memory": "1Gi"}));
    check(&app, &pods, "p", &mut pod).expect("within the range");
    assert_eq!(pod["status"]["qosClass"], "Guaranteed", "the max is the default limit and request");
    let mut greedy = json!({"metadata": {"name": "g"}, "spec": {"containers": [{"name": "c",
                            "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}}]}});
    default_pod(&app, &pods, &mut greedy);
    let refused = check(&app, &pods, "g", &mut greedy).unwrap_err();
    assert_eq!(
        (refused.code(), refused.0.message.as_str()),
        (403, "pods \"g\" is forbidden: maximum cpu usage per Container is 1, but limit is 2")
    );
}

#[tokio::test]
async fn a_claim_asking_more_than_its_namespace_allows_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let app = crate::server::test_app(dir.path());
    with_range(&app).await;
    let claims = target(&app, "persistentvolumeclaims");
    let claim =
        |size: &str| json!({"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": size}}}});
    assert_eq!(check(&app, &claims, "data", &mut claim("5Gi")).unwrap_err().code(), 403);
    check(&app, &claims, "data", &mut claim("1Gi")).expect("within the range");
}
