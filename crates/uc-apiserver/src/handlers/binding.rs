//! `pods/<name>/binding` (v1 Binding): how a scheduler assigns a pod to a node — what a scheduler other
//! than uc's own (a pod's `spec.schedulerName`) posts, as kube-apiserver's `BindingREST` takes it: the
//! binding's uid and resourceVersion held to the pod's, the target checked, a pod being deleted or already assigned refused, the node name and the binding's
//! annotations set on the pod. The older `POST namespaces/<ns>/bindings` names the pod in the
//! Binding's own name (kube's `LegacyBindingREST`) and does the same.

use std::sync::Arc;

use http::Response;
use serde_json::Value;
use uc_api::{Pointer, Status, StatusDetails};

use crate::app::{App, Body, Req, status_response};
use crate::error::{ApiError, FieldError, FieldErrors, Result};
use crate::handlers::meta::{is_deleting, meta_str, precondition_failure};
use crate::request::{Target, parse_body};
use crate::storage::{Op, StoreError, rv_of};

/// kube's `ValidatePodBinding`: a target of kind Node (or none) with a name.
pub(crate) fn binding_errors(binding: &Value) -> Vec<FieldError> {
    let mut errs = FieldErrors::new();
    let kind = binding.at("/target/kind").and_then(Value::as_str).unwrap_or_default();
    if !kind.is_empty() && kind != "Node" {
        errs.not_supported("target.kind".into(), kind, &["Node", "<empty>"]);
    }
    if binding.at("/target/name").and_then(Value::as_str).is_none_or(str::is_empty) {
        errs.required("target.name", "");
    }
    errs.0
}

/// Why a pod cannot be bound.
#[derive(Debug, PartialEq)]
pub(crate) enum Unbindable {
    /// The binding's uid or resourceVersion is not the pod's (kube's words).
    Precondition(String),
    /// The pod is being deleted.
    Deleting,
    /// The pod is on this node already.
    Assigned(String),
}

/// The pod assigned by a binding (`setPodHostAndAnnotations`: the binding's uid and resourceVersion,
/// when it names them, are preconditions on the pod, as a scheduler's Binding names the pod it saw), or
/// why it cannot be.
pub(crate) fn assigned(pod: &Value, binding: &Value) -> std::result::Result<Value, Unbindable> {
    let precondition = |field: &str| meta_str(binding, field).filter(|v| !v.is_empty());
    if let Some(why) = precondition_failure(precondition("uid"), precondition("resourceVersion"), pod) {
        return Err(Unbindable::Precondition(why));
    }
    if is_deleting(pod) {
        return Err(Unbindable::Deleting);
    }
    if let Some(node) = pod.at("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        return Err(Unbindable::Assigned(node.to_string()));
    }
    let mut out = pod.clone();
    out["spec"]["nodeName"] = binding.at("/target/name").cloned().unwrap_or(Value::Null);
    if let Some(annotations) = binding.at("/metadata/annotations").and_then(Value::as_object) {
        if !out["metadata"]["annotations"].is_object() {
            out["metadata"]["annotations"] = Value::Object(serde_json::Map::new());
        }
        for (k, v) in annotations {
            out["metadata"]["annotations"][k.as_str()] = v.clone();
        }
    }
    Ok(out)
}

/// `POST namespaces/<ns>/bindings`: the pod the Binding is named after, bound.
pub(crate) async fn create(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let binding = parse_body(req)?;
    let Some(name) = meta_str(&binding, "name").filter(|n| !n.is_empty()) else {
        let mut errs = FieldErrors::new();
        errs.required("metadata.name", "name or generateName is required");
        return Err(ApiError::invalid("Binding", "", "", &errs.0));
    };
    let info = app.registry.lookup("", "v1", "pods").ok_or_else(|| ApiError::internal("pods are not served"))?;
    let pod = Target {
        info,
        version: "v1".into(),
        namespace: t.namespace.clone(),
        name: Some(name.to_string()),
        sub: Some("binding".into()),
        watch_prefix: false,
    };
    bind_pod(app, &pod, &binding).await
}

/// `POST pods/<name>/binding`.
pub(crate) async fn bind(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let binding = parse_body(req)?;
    bind_pod(app, t, &binding).await
}

/// Binds the pod `t` names as `binding` asks.
async fn bind_pod(app: &Arc<App>, t: &Target, binding: &Value) -> Result<Response<Body>> {
    let name = t.name.clone().unwrap_or_default();
    if let Some(n) = meta_str(binding, "name").filter(|n| *n != name) {
        return Err(ApiError::bad_request(format!("name in URL does not match name in Binding object: {n}")));
    }
    let errs = binding_errors(binding);
    if !errs.is_empty() {
        return Err(ApiError::invalid("Binding", "", &name, &errs));
    }
    let subject = t.subject();
    for _ in 0..16 {
        let pod = app.store.get(&t.info.gr(), &t.key()).ok_or_else(|| ApiError::not_found(&subject))?;
        let new = match assigned(&pod, binding) {
            Ok(new) => new,
            Err(Unbindable::Precondition(why)) => return Err(ApiError::conflict(&subject, &why)),
            Err(Unbindable::Deleting) => {
                return Err(ApiError::bad_request(format!(
                    "pod {name} is being deleted, cannot be assigned to a host"
                )));
            }
            Err(Unbindable::Assigned(node)) => {
                return Err(ApiError::conflict(&subject, &format!("pod {name} is already assigned to node {node:?}")));
            }
        };
        let write = Op::Update { gr: t.info.gr(), key: t.key(), object: new, expect_rv: rv_of(&pod) };
        match app.store.write(write).await {
            Ok(_) => {
                let mut done = Status::success(StatusDetails::default());
                done.code = 201;
                return Ok(status_response(201, &done));
            }
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(ApiError::from_store(e, &subject)),
        }
    }
    Err(ApiError::conflict(&subject, "the pod changed too often; try again"))
}

#[cfg(test)]
mod tests;
