//! REST handlers: routing of resource paths and the verbs get, list, watch, create, update, patch,
//! delete and deletecollection, with the status and scale subresources (`kubelet.rs` proxies the
//! streaming ones). One module per kind of verb; what they share about a request is in `request.rs`.

pub mod admission;
pub mod apply;
pub mod binding;
pub mod delete;
pub mod eviction;
pub mod limit_admission;
pub mod managed;
pub mod meta;
pub mod pod_admission;
pub mod quota_admission;
pub mod read;
pub mod review;
pub mod scale;
pub mod token;
pub mod write;

use std::sync::Arc;

use http::{Method, Response};
use serde_json::json;
use uc_api::{GroupResource, Pointer};

use crate::app::{App, Body, Req, json_response};
use crate::auth::rbac::Attributes;
use crate::error::{ApiError, Result, Subject};
use crate::handlers::meta::{init_namespace, stamp_new};
use crate::registry::crd_to_resource;
use crate::request::Target;
use crate::storage::{Op, object_key};
use crate::{discovery, openapi, watch};

/// Routes a request.
pub async fn dispatch(app: &Arc<App>, req: &mut Req) -> Result<Response<Body>> {
    let path = req.path.trim_end_matches('/').to_string();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let get = req.method == Method::GET;
    if !matches!(segs.as_slice(), ["api", _, _, ..] | ["apis", _, _, _, ..]) && !crate::auth::public_path(&path) {
        let verb = if get { "get".to_string() } else { req.method.as_str().to_ascii_lowercase() };
        let path = if path.is_empty() { "/" } else { path.as_str() };
        crate::auth::authorize(&app.store, &req.user, &Attributes::path(&verb, path))?;
    }
    match segs.as_slice() {
        [] if get => Ok(json_response(200, &discovery::root_paths())),
        ["healthz" | "livez" | "readyz", ..] if get => {
            let ready = segs[0] != "readyz" || app.ready.load(std::sync::atomic::Ordering::Acquire);
            // As kube-apiserver says it while a post-start hook has not finished.
            let body = if ready { "ok" } else { "[-]poststarthook/uc-up failed: not finished\nreadyz check failed\n" };
            let mut r = Response::new(crate::app::full(body));
            if !ready {
                *r.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            }
            r.headers_mut()
                .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
            Ok(r)
        }
        ["version"] if get => Ok(json_response(200, &discovery::version())),
        ["openapi", "v2"] if get => openapi::v2(app, req),
        ["openapi", "v3"] if get => Ok(json_response(200, &openapi::v3_index(app))),
        ["openapi", "v3", rest @ ..] if get => openapi::v3_doc(app, &rest.join("/")),
        ["api"] if get => Ok(discovery::api(app, req)),
        ["apis"] if get => Ok(discovery::apis(app, req)),
        ["api", version] if get => discovery::resource_list(app, "", version),
        ["apis", group] if get => discovery::group(app, group),
        ["apis", group, version] if get => discovery::resource_list(app, group, version),
        ["api", version, rest @ ..] => {
            let t = resolve(app, "", version, rest)?;
            resource(app, req, t).await
        }
        ["apis", group, version, rest @ ..] => {
            let t = resolve(app, group, version, rest)?;
            resource(app, req, t).await
        }
        _ if !get
            && segs
                .first()
                .is_some_and(|s| matches!(*s, "healthz" | "livez" | "readyz" | "version" | "api" | "apis")) =>
        {
            Err(ApiError::method_not_allowed(format!("method {} is not allowed on {}", req.method, req.path)))
        }
        _ => Err(ApiError::no_route()),
    }
}

fn resolve(app: &App, group: &str, version: &str, rest: &[&str]) -> Result<Target> {
    let (watch_prefix, rest) = match rest.split_first() {
        Some((&"watch", r)) => (true, r),
        _ => (false, rest),
    };
    let (namespace, rest): (Option<String>, &[&str]) = match rest {
        ["namespaces", ns, r, ..] if !(group.is_empty() && rest.len() == 3 && matches!(*r, "status" | "finalize")) => {
            (Some(ns.to_string()), &rest[2..])
        }
        _ => (None, rest),
    };
    let (resource, name, sub) = match rest {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(n.to_string()), None),
        [r, n, s] => (*r, Some(n.to_string()), Some(s.to_string())),
        _ => return Err(ApiError::no_route()),
    };
    let info = app.registry.lookup(group, version, resource).ok_or_else(ApiError::no_route)?;
    if namespace.is_some() && !info.namespaced {
        return Err(ApiError::no_route());
    }
    if info.namespaced && namespace.is_none() && name.is_some() {
        return Err(ApiError::no_route());
    }
    let v = info.version(version).ok_or_else(ApiError::no_route)?;
    if let Some(s) = &sub {
        let ok = match s.as_str() {
            "status" => v.status,
            "scale" => v.scale.is_some(),
            "log" => info.log,
            "finalize" => info.resource == "namespaces",
            "eviction" | "ephemeralcontainers" | "binding" => info.group.is_empty() && info.resource == "pods",
            "token" => info.group.is_empty() && info.resource == "serviceaccounts",
            "approval" => info.resource == "certificatesigningrequests",
            _ => false,
        };
        if !ok {
            return Err(ApiError::no_route());
        }
    }
    Ok(Target { info: info.clone(), version: version.to_string(), namespace, name, sub, watch_prefix })
}

async fn resource(app: &Arc<App>, req: &mut Req, t: Target) -> Result<Response<Body>> {
    let watching = t.watch_prefix || req.params.get("watch").and_then(|w| crate::request::parse_bool(w)) == Some(true);
    if t.info.version(&t.version).is_some_and(|v| v.deprecated) {
        req.warnings.push(if t.info.crd.is_none() && t.info.group == "apiextensions.k8s.io" {
            "apiextensions.k8s.io/v1beta1 CustomResourceDefinition is deprecated in v1.16+, unavailable in v1.22+; use apiextensions.k8s.io/v1 CustomResourceDefinition".to_string()
        } else {
            format!("{} {} is deprecated", t.info.api_version(&t.version), t.info.kind)
        });
    }
    if !req.user.is_master() {
        let verb = crate::auth::verb_of(&req.method, t.name.is_some(), watching);
        let attrs = Attributes::resource(
            verb,
            &t.info.group,
            &t.info.resource,
            t.namespace.as_deref().unwrap_or_default(),
            t.name.as_deref().unwrap_or_default(),
        )
        .on_subresource(t.sub.as_deref().unwrap_or_default());
        crate::auth::authorize(&app.store, &req.user, &attrs)?;
    }
    if t.info.is_legacy_binding() {
        return match (&req.method, &t.name, t.sub.as_deref()) {
            (&Method::POST, None, None) => binding::create(app, req, &t).await,
            _ => Err(ApiError::method_not_allowed(format!("{} can only be created", t.info.resource))),
        };
    }
    if t.info.is_component_status() {
        return component_statuses(req, &t, watching);
    }
    match (&req.method, &t.name, t.sub.as_deref()) {
        (&Method::POST, None, None) if t.info.review => review::create(app, req, &t),
        _ if t.info.review => Err(ApiError::method_not_allowed(format!("{} can only be created", t.info.resource))),
        (&Method::GET, None, _) if watching => watch::serve(app, req, &t),
        (&Method::GET, None, _) => read::list(app, req, &t),
        (&Method::GET, Some(_), _) if watching => watch::serve(app, req, &t),
        (&Method::GET, Some(_), Some("scale")) => scale::get_scale(app, &t),
        (&Method::GET, Some(_), _) => read::get(app, req, &t),
        (&Method::POST, None, None) => write::create(app, req, &t).await,
        (&Method::POST, Some(_), Some("eviction")) => eviction::evict(app, req, &t).await,
        (&Method::POST, Some(_), Some("binding")) => binding::bind(app, req, &t).await,
        (&Method::POST, Some(_), Some("token")) => token::create(app, req, &t),
        (&Method::PUT, Some(_), Some("scale")) => scale::update_scale(app, req, &t, None).await,
        (&Method::PUT, Some(_), _) => write::update(app, req, &t).await,
        (&Method::PATCH, Some(_), Some("scale")) => {
            let body = req.body.clone();
            let ct = req.content_type.clone();
            scale::update_scale(app, req, &t, Some((ct, body))).await
        }
        (&Method::PATCH, Some(_), _) if apply::is_apply(req) => apply::server_side_apply(app, req, &t).await,
        (&Method::PATCH, Some(_), _) => write::patch_object(app, req, &t).await,
        (&Method::DELETE, Some(_), None) => delete::delete(app, req, &t).await,
        (&Method::DELETE, None, None) => delete::delete_collection(app, req, &t).await,
        _ => Err(ApiError::method_not_allowed(format!("method {} is not supported on {}", req.method, req.path))),
    }
}

/// `v1 componentstatuses`: read, never stored.
fn component_statuses(req: &mut Req, t: &Target, watching: bool) -> Result<Response<Body>> {
    req.warnings.push(crate::component_status::DEPRECATION.into());
    let subject =
        Subject { group: String::new(), resource: t.info.resource.clone(), name: t.name.clone().unwrap_or_default() };
    let body = match (&req.method, &t.name, t.sub.as_deref()) {
        (&Method::GET, None, None) if !watching => crate::component_status::list(),
        (&Method::GET, Some(name), None) if !watching => {
            crate::component_status::get(name).ok_or_else(|| ApiError::not_found(&subject))?
        }
        _ => return Err(ApiError::method_not_allowed(format!("{} can only be read (get, list)", t.info.resource))),
    };
    if !matches!(req.negotiated.render, crate::app::Render::Table) {
        return Ok(crate::app::json_response(200, &body));
    }
    // `kubectl get cs`: Status, Message and Error, as kube's printer shows them.
    let items = body.get("items").and_then(serde_json::Value::as_array).cloned().unwrap_or_else(|| vec![body]);
    let include = crate::request::include_object(req);
    let rows: Vec<serde_json::Value> =
        items.iter().map(|o| crate::table::row(&t.info, &t.version, o, include)).collect();
    let table = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
        "columnDefinitions": crate::table::column_definitions(&t.info, &t.version), "rows": rows});
    Ok(crate::app::json_response(200, &table))
}

/// Startup: default namespaces, the system PriorityClasses and CRDs stored by an earlier run.
pub async fn bootstrap(app: &Arc<App>) -> Result<()> {
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let (stored, _) = app.store.list(&crds, None, None).map_err(|e| ApiError::from_store(e, &Subject::default()))?;
    for (_, crd) in stored {
        match crd_to_resource(&crd) {
            Ok(info) => app.registry.install_crd(info),
            Err(errs) => {
                let name = crd.at("/metadata/name").and_then(serde_json::Value::as_str).unwrap_or_default();
                let errors: Vec<String> = errs.iter().map(ToString::to_string).collect();
                tracing::warn!(crd = name, errors = %errors.join("; "), "stored CRD is invalid; not serving it")
            }
        }
    }
    let ns = GroupResource::new("", "namespaces");
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        if app.store.get_kept(&ns, &object_key("", name)).is_none() {
            let mut obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            stamp_new(&mut obj);
            init_namespace(&mut obj);
            app.store
                .write(Op::Create { gr: ns.clone(), key: object_key("", name), object: obj })
                .await
                .map_err(|e| ApiError::from_store(e, &Subject::default()))?;
        }
    }
    let classes = GroupResource::new("scheduling.k8s.io", "priorityclasses");
    for (name, mut class) in crate::builtin_scheduling::system_classes() {
        if app.store.get_kept(&classes, &object_key("", name)).is_none() {
            stamp_new(&mut class);
            app.store
                .write(Op::Create { gr: classes.clone(), key: object_key("", name), object: class })
                .await
                .map_err(|e| ApiError::from_store(e, &Subject::default()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_to_resources_as_kube_apiserver_routes_them() {
        let dir = tempfile::tempdir().unwrap();
        let app = crate::server::test_app(dir.path());
        let t = resolve(&app, "", "v1", &["namespaces", "ns", "configmaps", "c"]).unwrap();
        assert_eq!(
            (t.info.resource.as_str(), t.namespace.as_deref(), t.name.as_deref()),
            ("configmaps", Some("ns"), Some("c"))
        );
        let status = resolve(&app, "apps", "v1", &["namespaces", "ns", "deployments", "d", "status"]).unwrap();
        assert_eq!(status.sub.as_deref(), Some("status"));
        // A namespace's own status and finalize are the namespace's, not a resource in it.
        let finalize = resolve(&app, "", "v1", &["namespaces", "ns", "finalize"]).unwrap();
        assert_eq!(
            (finalize.info.resource.as_str(), finalize.name.as_deref(), finalize.sub.as_deref()),
            ("namespaces", Some("ns"), Some("finalize"))
        );
        let watch = resolve(&app, "", "v1", &["watch", "namespaces", "ns", "pods"]).unwrap();
        assert!(watch.watch_prefix && watch.name.is_none());
        let no_route = |rest: &[&str]| resolve(&app, "", "v1", rest).unwrap_err().code();
        assert_eq!(no_route(&["namespaces", "ns", "nodes"]), 404, "a cluster-scoped kind in a namespace");
        assert_eq!(no_route(&["configmaps", "c"]), 404, "a namespaced object without its namespace");
        assert_eq!(no_route(&["namespaces", "ns", "configmaps", "c", "scale"]), 404, "no such subresource");
        assert_eq!(no_route(&["widgets"]), 404);
        assert_eq!(resolve(&app, "apps", "v2", &["deployments"]).unwrap_err().code(), 404, "an unserved version");
    }
}
