use serde_json::json;

use super::*;

#[test]
fn a_binding_names_a_node_and_assigns_a_pod_not_yet_assigned() {
    let binding = json!({"metadata": {"name": "p", "annotations": {"scheduled-by": "mine"}},
                         "target": {"kind": "Node", "name": "n1"}});
    assert!(binding_errors(&binding).is_empty());
    let errs: Vec<String> =
        binding_errors(&json!({"target": {"kind": "Pod"}})).iter().map(ToString::to_string).collect();
    assert_eq!(
        errs,
        vec![
            "target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\"",
            "target.name: Required value"
        ]
    );
    let pod = json!({"metadata": {"name": "p"}, "spec": {"schedulerName": "mine", "containers": []}});
    let bound = assigned(&pod, &binding).unwrap();
    assert_eq!(bound["spec"]["nodeName"], "n1");
    assert_eq!(bound["metadata"]["annotations"]["scheduled-by"], "mine");
    assert_eq!(assigned(&bound, &binding), Err(Unbindable::Assigned("n1".into())), "already assigned");
    let deleting = json!({"metadata": {"name": "p", "deletionTimestamp": "2026-12-04T00:00:00Z"}, "spec": {}});
    assert_eq!(assigned(&deleting, &binding), Err(Unbindable::Deleting));
}

#[test]
fn a_binding_that_names_the_pod_it_saw_holds_the_pod_to_it() {
    let pod = json!({"metadata": {"name": "p", "uid": "u1", "resourceVersion": "7"}, "spec": {"containers": []}});
    let seen = json!({"metadata": {"name": "p", "uid": "u1", "resourceVersion": "7"}, "target": {"name": "n1"}});
    assert_eq!(assigned(&pod, &seen).unwrap()["spec"]["nodeName"], "n1");
    let recreated = json!({"metadata": {"name": "p", "uid": "u0"}, "target": {"name": "n1"}});
    assert_eq!(
        assigned(&pod, &recreated),
        Err(Unbindable::Precondition("Precondition failed: UID in precondition: u0, UID in object meta: u1".into()))
    );
    let stale = json!({"metadata": {"name": "p", "resourceVersion": "6"}, "target": {"name": "n1"}});
    assert!(matches!(assigned(&pod, &stale), Err(Unbindable::Precondition(why)) if why.contains("ResourceVersion")));
    let deleting = json!({"metadata": {"name": "p", "uid": "u1", "deletionTimestamp": "2026-12-04T00:00:00Z"}});
    assert_eq!(
        assigned(&deleting, &recreated),
        Err(Unbindable::Precondition("Precondition failed: UID in precondition: u0, UID in object meta: u1".into())),
        "preconditions first"
    );
}

#[tokio::test]
async fn the_older_bindings_resource_binds_the_pod_its_binding_is_named_after() {
    let dir = tempfile::tempdir().unwrap();
    let app = crate::server::test_app(dir.path());
    let pod = crate::handlers::resolve(&app, "", "v1", &["namespaces", "default", "pods", "p"]).unwrap();
    let object = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                        "spec": {"schedulerName": "mine", "containers": [{"name": "c", "image": "i"}]}});
    app.store.write(Op::Create { gr: pod.info.gr(), key: pod.key(), object }).await.unwrap();
    let bindings = crate::handlers::resolve(&app, "", "v1", &["namespaces", "default", "bindings"]).unwrap();
    let post = |body: serde_json::Value| Req::for_test(http::Method::POST, "application/json", &body.to_string(), &[]);
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                         "target": {"kind": "Node", "name": "n1"}});
    assert_eq!(create(&app, &mut post(binding.clone()), &bindings).await.unwrap().status(), 201);
    let stored = app.store.get(&pod.info.gr(), &pod.key()).unwrap();
    assert_eq!(stored["spec"]["nodeName"], "n1");
    let again = create(&app, &mut post(binding), &bindings).await.unwrap_err();
    assert_eq!(again.code(), 409, "a pod already assigned");
    let unnamed = json!({"metadata": {}, "target": {"name": "n1"}});
    let e = create(&app, &mut post(unnamed), &bindings).await.unwrap_err();
    assert_eq!(e.code(), 422);
    assert!(e.0.message.contains("metadata.name: Required value"), "{}", e.0.message);
    let missing = json!({"metadata": {"name": "q"}, "target": {"name": "n1"}});
    assert_eq!(create(&app, &mut post(missing), &bindings).await.unwrap_err().code(), 404);
}
