//! What the fuzz targets in `fuzz/` run on each input, here so that the stable test suite replays
//! their kept corpora (`tests/fuzz_corpus.rs`) and the targets stay one line each. Every function
//! takes any bytes and must end without panicking or overflowing the stack.

use serde_json::{Value, json};

use crate::ssa::{self, Builtin, Scope, Write};

/// A request body as the API server reads it: JSON (with duplicate fields found), YAML and protobuf,
/// then, when it reads as an object, decoded as each of a few built-in kinds, defaulted and validated
/// as each, its name checked by every kind's rule, and measured against the store's limits.
pub fn request_body(data: &[u8]) {
    let _ = crate::json_duplicates::duplicate_fields(data);
    let mut values = Vec::new();
    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        values.push(v);
    }
    if let Ok(v) = serde_yaml_ng::from_slice::<Value>(data) {
        values.push(v);
    }
    if let Ok(v) = crate::proto::decode(data) {
        values.push(v);
    }
    for v in values {
        let _ = crate::limits::check(&v);
        for (group, kind) in [("", "Pod"), ("", "ConfigMap"), ("", "Secret"), ("apps", "Deployment"), ("", "Service")] {
            let _ = crate::typed::decode(group, "v1", kind, &v);
        }
        if crate::limits::check(&v).is_ok() {
            for resource in ["pods", "deployments", "jobs", "services", "configmaps", "secrets", "roles"] {
                let mut obj = v.clone();
                crate::builtin::apply_defaults(resource, &mut obj);
                let _ = crate::builtin::validate(resource, &obj);
            }
        }
        if let Some(name) = v.pointer("/metadata/name").and_then(Value::as_str) {
            for (group, resource) in
                [("", "services"), ("", "namespaces"), ("rbac.authorization.k8s.io", "roles"), ("", "pods")]
            {
                let _ = uc_api::names::NameRule::of(group, resource).errors(name, true);
            }
        }
        crate::limits::drop_deep(v);
    }
}

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "b"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}}}})
}

/// JSON patch, JSON merge patch and strategic merge patch bodies applied to a Deployment; what they
/// make is measured without recursion.
pub fn patches(data: &[u8]) {
    let target = deployment();
    for apply in [crate::patch::json_patch, crate::patch::merge_patch, crate::patch::strategic_merge_patch] {
        let mut t = target.clone();
        if apply(&mut t, data).is_ok() {
            let _ = crate::limits::check(&t);
        }
        crate::limits::drop_deep(t);
    }
}

/// Any object (within the store's limits) applied onto a live Deployment with managed fields, and
/// onto nothing, forced and not.
pub fn server_side_apply(data: &[u8]) {
    let Ok(applied) = serde_json::from_slice::<Value>(data) else { return };
    if crate::limits::check(&applied).is_err() {
        crate::limits::drop_deep(applied);
        return;
    }
    let mut live = deployment();
    live["metadata"]["managedFields"] = json!([{"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1",
        "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]);
    let w = Write {
        manager: "fuzz",
        api_version: "apps/v1",
        subresource: None,
        scope: Scope::AllButStatus,
        now: "2026-01-01T00:00:00Z",
    };
    for force in [false, true] {
        let _ = ssa::apply(Some(&live), &applied, force, &Builtin, &w);
        let _ = ssa::apply(None, &applied, force, &Builtin, &w);
    }
}

/// Label and field selectors and qualified names, as a query string brings them.
pub fn selectors(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(s) = uc_api::LabelSelector::parse(text) {
        let _ = s.matches_value(Some(&json!({"a": "b", "app": "web"})));
    }
    let _ = uc_api::FieldSelector::parse(text);
    let _ = uc_api::names::qualified_name_errors(text);
    let _ = uc_api::quantity::parse(text);
}

/// Any bytes as the store's newest log segment, read as `uc up` and `uc store check` read it: a state
/// or a refusal naming damage. `dir` is a directory of the caller's, emptied first.
pub fn store_records(dir: &std::path::Path, data: &[u8]) {
    let _ = std::fs::remove_dir_all(dir);
    if std::fs::create_dir_all(dir).is_err() || std::fs::write(dir.join("wal-00000000000000000001.log"), data).is_err()
    {
        return;
    }
    let _ = crate::wal::scan(dir);
}
