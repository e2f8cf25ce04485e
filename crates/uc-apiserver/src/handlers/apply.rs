//! Server-side apply (`PATCH` with `application/apply-patch+yaml`) and the managed fields every other
//! write keeps: the HTTP side of `crate::ssa`.

use std::sync::Arc;

use http::Response;
use serde_json::Value;

use crate::app::{App, Body, Req};
use crate::error::{ApiError, FieldError, Result};
use crate::handlers::meta::meta_str;
use crate::handlers::write::{commit_update, create_object, prepare_update};
use crate::request::{Target, dry_run, respond_object, to_version};
use crate::ssa::{self, ApplyError, Builtin, Scope, Shape, Structural};
use crate::storage::StoreError;

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// What part of the object a write to `t` may change.
fn scope(t: &Target) -> Scope {
    match t.sub.as_deref() {
        Some("status") => Scope::Status,
        _ if t.info.version(&t.version).is_some_and(|v| v.status) => Scope::AllButStatus,
        _ => Scope::Object,
    }
}

/// The shape of the target's objects: its schema for a custom resource, merge keys for the built-ins.
fn with_shape<T>(t: &Target, f: impl FnOnce(&dyn Shape) -> T) -> T {
    match t.info.version(&t.version).and_then(|v| v.schema.clone()) {
        Some(schema) => f(&Structural(&schema)),
        None => f(&Builtin),
    }
}

/// The request's field manager: `fieldManager`, else kube's default from the user agent.
fn manager(req: &Req) -> String {
    match req.params.get("fieldManager").filter(|m| !m.is_empty()) {
        Some(m) => m.clone(),
        None => ssa::default_manager(&req.user_agent),
    }
}

fn invalid_managed_fields(t: &Target, message: String) -> ApiError {
    let name = t.name.clone().unwrap_or_default();
    ApiError::invalid(
        &t.info.kind,
        &t.info.group,
        &name,
        &[FieldError::invalid("metadata.managedFields", &Value::Null, message)],
    )
}

/// Records a create, update or non-apply patch in `new`'s managed fields (objects that have them).
pub(crate) fn track_update(req: &Req, t: &Target, old: Option<&Value>, new: &mut Value) -> Result<()> {
    let manager = manager(req);
    let api_version = t.info.api_version(&t.version);
    let now = now();
    let w = ssa::Write {
        manager: &manager,
        api_version: &api_version,
        subresource: t.sub.as_deref(),
        scope: scope(t),
        now: &now,
    };
    with_shape(t, |shape| ssa::update(old, new, shape, &w)).map_err(|e| invalid_managed_fields(t, e.to_string()))
}

/// Reads an apply patch: YAML (JSON is YAML too), one object of the target's kind.
fn read_intent(req: &Req, t: &Target) -> Result<Value> {
    if req.content_type == "application/apply-patch+cbor" {
        return Err(ApiError::unsupported_media_type(
            "CBOR apply patches are not supported by the uc API server; send application/apply-patch+yaml",
        ));
    }
    let intent: Value =
        serde_yaml::from_slice(&req.body).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !intent.is_object() {
        return Err(ApiError::bad_request("an apply patch must be an object"));
    }
    let api_version = t.info.api_version(&t.version);
    let field = |f: &str| intent.get(f).and_then(Value::as_str).unwrap_or_default();
    let mut errs = Vec::new();
    if field("apiVersion") != api_version {
        errs.push(FieldError::invalid("apiVersion", &intent["apiVersion"], format!("must be {api_version}")));
    }
    if field("kind") != t.info.kind {
        errs.push(FieldError::invalid("kind", &intent["kind"], format!("must be {}", t.info.kind)));
    }
    let name = t.name.clone().unwrap_or_default();
    match meta_str(&intent, "name") {
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    if !errs.is_empty() {
        return Err(ApiError::invalid(&t.info.kind, &t.info.group, &name, &errs));
    }
    let mut intent = intent;
    intent["metadata"]["name"] = Value::String(name);
    if let Some(ns) = &t.namespace {
        intent["metadata"]["namespace"] = Value::String(ns.clone());
    }
    Ok(intent)
}

/// `PATCH` with an apply patch: merges the manager's intent into the object (creating it if it does
/// not exist), 409 on fields other managers own unless `force=true`.
pub(crate) async fn server_side_apply(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let Some(manager) = req.params.get("fieldManager").filter(|m| !m.is_empty()).cloned() else {
        return Err(ApiError::invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            &[FieldError::required("fieldManager", "is required for apply patch")],
        ));
    };
    let force = match req.params.get("force").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => return Err(ApiError::bad_request(format!("force: {other:?} is not a boolean"))),
    };
    let intent = read_intent(req, t)?;
    let api_version = t.info.api_version(&t.version);
    let key = t.key();
    let subject = t.subject();
    for _ in 0..16 {
        let now = now();
        let w = ssa::Write {
            manager: &manager,
            api_version: &api_version,
            subresource: t.sub.as_deref(),
            scope: scope(t),
            now: &now,
        };
        let old = app.store.get(&t.info.gr(), &key);
        let live = old.as_ref().map(|o| to_version(&t.info, &t.version, o));
        let applied = with_shape(t, |shape| ssa::apply(live.as_deref(), &intent, force, shape, &w));
        let new = match applied {
            Ok(v) => v,
            Err(ApplyError::Conflicts(c)) => {
                let message = ApplyError::Conflicts(c.clone()).to_string();
                return Err(ApiError::apply_conflicts(&subject, message, &c));
            }
            Err(ApplyError::Invalid(m)) => return Err(invalid_managed_fields(t, m)),
        };
        let Some(old) = old else {
            if t.sub.is_some() {
                return Err(ApiError::not_found(&subject));
            }
            return create_object(app, req, t, new, false).await;
        };
        let new = prepare_update(req, t, &old, new)?;
        if dry_run(req) {
            return Ok(respond_object(req, t, 200, &Arc::new(new)));
        }
        match commit_update(app, &t.info, &key, &old, new).await {
            Ok(stored) => return Ok(respond_object(req, t, 200, &stored)),
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(ApiError::from_store(e, &subject)),
        }
    }
    Err(ApiError::conflict(&subject, "too many concurrent updates; try again"))
}
