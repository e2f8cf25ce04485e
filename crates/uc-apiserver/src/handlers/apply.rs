//! Server-side apply (`PATCH` with `application/apply-patch+yaml`): the HTTP side of `crate::ssa`.

use std::sync::Arc;

use http::Response;
use serde_json::Value;

use uc_api::StatusCause;

use crate::app::{App, Body, Req};
use crate::error::{ApiError, FieldError, FieldErrorKind, Result};
use crate::handlers::managed::{invalid_managed_fields, now, with_shape, write_of};
use crate::handlers::meta::meta_str;
use crate::handlers::write::{admit_update, commit_update, create_object, prepare_update};
use crate::request::{Target, dry_run, respond_object, respond_stored, to_version};
use crate::ssa::{self, ApplyError};
use crate::storage::StoreError;

/// Whether a PATCH is a server-side apply (by its media type).
pub(crate) fn is_apply(req: &Req) -> bool {
    matches!(req.content_type.as_str(), "application/apply-patch+yaml" | "application/apply-patch+cbor")
}

/// Reads an apply patch: YAML (JSON is YAML too), one object of the target's kind.
fn read_intent(req: &Req, t: &Target) -> Result<Value> {
    if req.content_type == "application/apply-patch+cbor" {
        return Err(ApiError::unsupported_media_type(
            "CBOR apply patches are not supported by the uc API server; send application/apply-patch+yaml",
        ));
    }
    // JSON is YAML, and what clients send (kube-rs, client-go, kubectl): parsed as JSON first, ten
    // times cheaper than the YAML parser (an eighth of the API server's time when every child is
    // applied, in the convergence profile of docs/benchmarks.md).
    let intent: Value = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(_) => serde_yaml_ng::from_slice(&req.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
    };
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
        let w = write_of(t, &manager, &api_version, &now);
        let old = app.store.get(&t.info.gr(), &key);
        let live = old.as_ref().map(|o| to_version(&t.info, &t.version, o));
        let applied = with_shape(t, |shape| ssa::apply(live.as_deref(), &intent, force, shape, &w));
        let new = match applied {
            Ok(v) => v,
            Err(ApplyError::Conflicts(c)) => {
                let causes = c
                    .iter()
                    .map(|c| StatusCause {
                        reason: "FieldManagerConflict".into(),
                        message: format!("conflict with {:?}", c.manager),
                        field: c.field.clone(),
                    })
                    .collect();
                let message = ApplyError::Conflicts(c).to_string();
                return Err(ApiError::conflict_with_causes(&subject, message, causes));
            }
            Err(ApplyError::Invalid(m)) => return Err(invalid_managed_fields(t, m)),
            Err(ApplyError::Duplicates(d)) => {
                let errs: Vec<FieldError> = d
                    .iter()
                    .map(|d| FieldError::new(FieldErrorKind::Duplicate, &d.field, Some(d.key.clone()), ""))
                    .collect();
                let name = t.name.clone().unwrap_or_default();
                return Err(ApiError::invalid(&t.info.kind, &t.info.group, &name, &errs));
            }
        };
        let Some(old) = old else {
            if t.sub.is_some() {
                return Err(ApiError::not_found(&subject));
            }
            match create_object(app, req, t, new, false).await {
                // Created by someone else since it was read: applied again onto theirs.
                Err(e) if e.0.reason == "AlreadyExists" => continue,
                done => return done,
            }
        };
        let mut new = prepare_update(req, t, &old, new)?;
        admit_update(app, req, t, &old, &mut new).await?;
        if dry_run(req) {
            return Ok(respond_object(req, t, 200, &Arc::new(new)));
        }
        match commit_update(app, &t.info, &key, &old, new).await {
            Ok(stored) => return Ok(respond_stored(&app.store, req, t, 200, &stored)),
            // Changed, or deleted, since it was read: read again (an apply creates what is gone, as
            // kube-apiserver's guaranteed update does; never a 404 for a race the client cannot see).
            Err(StoreError::Conflict { .. } | StoreError::NotFound) => continue,
            Err(e) => return Err(ApiError::from_store(e, &subject)),
        }
    }
    Err(ApiError::conflict(&subject, "too many concurrent updates; try again"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use http::Method;
    use uc_api::GroupResource;

    fn target(name: &str) -> Target {
        let info = Registry::new().get(&GroupResource::new("", "configmaps")).expect("built in");
        Target {
            info,
            version: "v1".into(),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            sub: None,
            watch_prefix: false,
        }
    }

    fn apply(body: &str) -> Req {
        Req::for_test(Method::PATCH, "application/apply-patch+yaml", body, &[])
    }

    #[test]
    fn an_apply_patch_is_one_object_of_the_target_kind_named_as_the_url() {
        let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n";
        let intent = read_intent(&apply(yaml), &target("c")).expect("YAML reads");
        assert_eq!((intent["metadata"]["namespace"].as_str(), intent["data"]["a"].as_str()), (Some("ns"), Some("b")));
        let json = r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}}"#;
        assert_eq!(read_intent(&apply(json), &target("c")).expect("JSON is YAML")["metadata"]["name"], "c");
        let other_kind = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"c"}}"#;
        assert_eq!(read_intent(&apply(other_kind), &target("c")).unwrap_err().code(), 422);
        let other_name = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}}"#;
        assert_eq!(read_intent(&apply(other_name), &target("c")).unwrap_err().code(), 400);
        assert_eq!(read_intent(&apply("[1, 2]"), &target("c")).unwrap_err().code(), 400);
        let cbor = Req::for_test(Method::PATCH, "application/apply-patch+cbor", "", &[]);
        assert_eq!(read_intent(&cbor, &target("c")).unwrap_err().code(), 415);
        assert!(
            is_apply(&apply("")) && !is_apply(&Req::for_test(Method::PATCH, "application/merge-patch+json", "", &[]))
        );
    }
}
