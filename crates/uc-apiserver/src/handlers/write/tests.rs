use super::*;
use crate::registry::Registry;

fn info(group: &str, resource: &str) -> Arc<ResourceInfo> {
    Registry::new().get(&GroupResource::new(group, resource)).expect("a built-in resource")
}

/// A ConfigMap `c` in `default` holding `k: a`, and its target.
async fn config_map(app: &Arc<App>) -> Target {
    let t = crate::handlers::resolve(app, "", "v1", &["namespaces", "default", "configmaps", "c"]).unwrap();
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "c", "namespace": "default"}, "data": {"k": "a"}});
    app.store.write(Op::Create { gr: t.info.gr(), key: t.key(), object }).await.unwrap();
    t
}

fn body(k: &str, rv: Option<u64>) -> String {
    let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "c", "namespace": "default"}, "data": {"k": k}});
    if let Some(rv) = rv {
        v["metadata"]["resourceVersion"] = json!(rv.to_string());
    }
    v.to_string()
}

#[tokio::test]
async fn an_update_holds_to_the_resource_version_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let app = crate::server::test_app(dir.path());
    let t = config_map(&app).await;
    let stored = || app.store.get(&t.info.gr(), &t.key()).unwrap();
    let first = rv_of(&stored());
    // No resourceVersion: the last writer wins.
    let mut req = Req::for_test(http::Method::PUT, "application/json", &body("b", None), &[]);
    assert_eq!(update(&app, &mut req, &t).await.unwrap().status(), 200);
    assert_eq!(stored()["data"]["k"], "b");
    // The version it was read at is gone: Conflict, and nothing stored.
    let mut req = Req::for_test(http::Method::PUT, "application/json", &body("c", Some(first)), &[]);
    assert_eq!(update(&app, &mut req, &t).await.unwrap_err().code(), 409);
    assert_eq!(stored()["data"]["k"], "b");
    // The current version: stored.
    let current = rv_of(&stored());
    let mut req = Req::for_test(http::Method::PUT, "application/json", &body("c", Some(current)), &[]);
    assert_eq!(update(&app, &mut req, &t).await.unwrap().status(), 200);
    assert_eq!(stored()["data"]["k"], "c");
    assert!(rv_of(&stored()) > current);
    // A resourceVersion that is no number: refused as such.
    let mut bad: Value = serde_json::from_str(&body("d", None)).unwrap();
    bad["metadata"]["resourceVersion"] = json!("x1");
    let mut req = Req::for_test(http::Method::PUT, "application/json", &bad.to_string(), &[]);
    assert_eq!(update(&app, &mut req, &t).await.unwrap_err().code(), 400);
}

#[tokio::test]
async fn a_patch_holds_to_a_version_it_names_and_a_dry_run_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let app = crate::server::test_app(dir.path());
    let t = config_map(&app).await;
    let stored = || app.store.get(&t.info.gr(), &t.key()).unwrap();
    let first = rv_of(&stored());
    let merge = |patch: &str, params: &[(&str, &str)]| {
        Req::for_test(http::Method::PATCH, "application/merge-patch+json", patch, params)
    };
    let mut req = merge(r#"{"data": {"k": "b"}}"#, &[]);
    assert_eq!(patch_object(&app, &mut req, &t).await.unwrap().status(), 200);
    assert_eq!(stored()["data"]["k"], "b");
    let stale = format!(r#"{{"metadata": {{"resourceVersion": "{first}"}}, "data": {{"k": "c"}}}}"#);
    assert_eq!(patch_object(&app, &mut merge(&stale, &[]), &t).await.unwrap_err().code(), 409);
    assert_eq!(stored()["data"]["k"], "b");
    let before = rv_of(&stored());
    let mut req = merge(r#"{"data": {"k": "dry"}}"#, &[("dryRun", "All")]);
    assert_eq!(patch_object(&app, &mut req, &t).await.unwrap().status(), 200);
    assert_eq!((stored()["data"]["k"].as_str(), rv_of(&stored())), (Some("b"), before), "a dry run stores nothing");
    // `force` is for server-side apply only.
    let e = patch_object(&app, &mut merge("{}", &[("force", "true")]), &t).await.unwrap_err();
    assert_eq!(e.code(), 422);
}

#[test]
fn a_new_object_takes_the_paths_namespace_and_a_generated_name() {
    let cm = info("", "configmaps");
    let mut errs = Vec::new();
    let mut obj = json!({"metadata": {"generateName": "web-"}});
    assert_eq!(place(&cm, Some("ns1"), &mut obj, &mut errs, "x2b4z").unwrap(), "web-x2b4z");
    assert_eq!(obj["metadata"]["namespace"], "ns1");
    assert!(errs.is_empty());
    let mut other = json!({"metadata": {"name": "a", "namespace": "ns2"}});
    let e = place(&cm, Some("ns1"), &mut other, &mut errs, "x").unwrap_err();
    assert_eq!(e.code(), 400);
    let mut nameless = json!({"metadata": {}});
    assert_eq!(place(&cm, Some("ns1"), &mut nameless, &mut errs, "x").unwrap(), "");
    assert_eq!(errs.len(), 1, "{errs:?}");
    // A cluster-scoped object has no namespace, whatever the body says.
    let mut ns = json!({"metadata": {"name": "n", "namespace": "stray"}});
    place(&info("", "namespaces"), None, &mut ns, &mut errs, "x").unwrap();
    assert!(ns["metadata"].get("namespace").is_none());
}

#[test]
fn creation_starts_status_afresh_and_generation_at_one() {
    let mut pod = json!({"metadata": {"name": "p"}, "status": {"phase": "Running"}});
    start_status(&info("", "pods"), "v1", &mut pod);
    assert_eq!(pod["status"]["phase"], "Pending");
    let mut deploy = json!({"metadata": {"name": "d"}, "status": {"replicas": 9}});
    start_status(&info("apps", "deployments"), "v1", &mut deploy);
    assert_ne!(deploy["status"]["replicas"], 9);
    assert_eq!(deploy["metadata"]["generation"], 1);
}

#[test]
fn a_subresource_changes_only_what_it_owns() {
    let old = json!({"metadata": {"name": "n"}, "spec": {"finalizers": ["kubernetes"], "x": 1}, "status": {"phase": "Active"}});
    let new =
        json!({"metadata": {"name": "n"}, "spec": {"finalizers": [], "x": 2}, "status": {"phase": "Terminating"}});
    let mut errs = Vec::new();
    let status = subresource_update("status", &old, &new, &mut errs);
    assert_eq!((status["status"]["phase"].as_str(), &status["spec"]), (Some("Terminating"), &old["spec"]));
    let finalized = subresource_update("finalize", &old, &new, &mut errs);
    assert_eq!(finalized["spec"], json!({"finalizers": [], "x": 1}));
    assert_eq!(finalized["status"], old["status"]);
    assert!(errs.is_empty());
}

#[test]
fn the_main_resource_keeps_system_metadata_and_status() {
    let old = json!({"metadata": {"name": "d", "uid": "u1", "generation": 3, "creationTimestamp": "t0"},
                     "spec": {"replicas": 1}, "status": {"replicas": 1}});
    let new = json!({"metadata": {"name": "d", "uid": "u1", "generation": 99, "deletionTimestamp": "t9"},
                     "spec": {"replicas": 2}, "status": {"replicas": 7}});
    let mut errs = Vec::new();
    let out = main_update(&info("apps", "deployments"), true, &old, new, &mut errs).unwrap();
    assert_eq!(out["metadata"], json!({"name": "d", "uid": "u1", "generation": 3, "creationTimestamp": "t0"}));
    assert_eq!((out["spec"]["replicas"].as_i64(), out["status"]["replicas"].as_i64()), (Some(2), Some(1)));
}

#[test]
fn no_finalizer_is_added_to_an_object_being_deleted() {
    let cm = info("", "configmaps");
    let old = json!({"metadata": {"name": "c", "deletionTimestamp": "t", "finalizers": ["a"]}});
    let fewer = json!({"metadata": {"name": "c", "finalizers": []}});
    assert!(unchangeable_errors(&cm, &old, &fewer).is_empty());
    let more = json!({"metadata": {"name": "c", "finalizers": ["a", "b"]}});
    let errs = unchangeable_errors(&cm, &old, &more);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "metadata.finalizers");
    let live = json!({"metadata": {"name": "c", "finalizers": ["a"]}});
    assert!(unchangeable_errors(&cm, &live, &more).is_empty());
}

#[tokio::test]
async fn a_field_unknown_at_the_version_written_is_found_before_it_is_converted() {
    let dir = tempfile::tempdir().unwrap();
    let app = crate::server::test_app(dir.path());
    let t = crate::handlers::resolve(&app, "autoscaling", "v1", &["namespaces", "default", "horizontalpodautoscalers"])
        .unwrap();
    let hpa = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxReplicas": 2,
                 "targetCPUUtilisationPercentage": 50}})
    .to_string();
    let mut strict = Req::for_test(http::Method::POST, "application/json", &hpa, &[("fieldValidation", "Strict")]);
    let e = create(&app, &mut strict, &t).await.unwrap_err();
    assert_eq!(e.code(), 400);
    assert!(
        e.0.message.contains(r#"strict decoding error: unknown field "spec.targetCPUUtilisationPercentage""#),
        "{}",
        e.0.message
    );
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
    let namespaces = GroupResource::new("", "namespaces");
    app.store.write(Op::Create { gr: namespaces, key: object_key("", "default"), object: namespace }).await.unwrap();
    let mut warned = Req::for_test(http::Method::POST, "application/json", &hpa, &[]);
    assert_eq!(create(&app, &mut warned, &t).await.unwrap().status(), 201);
    assert_eq!(warned.warnings, vec![r#"unknown field "spec.targetCPUUtilisationPercentage""#.to_string()]);
}
