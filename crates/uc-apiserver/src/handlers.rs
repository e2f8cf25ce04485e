//! REST handlers: routing of resource paths and the verbs get, list, watch, create, update, patch,
//! delete and deletecollection, with the status and scale subresources (`kubelet.rs` proxies the
//! streaming ones).

use std::sync::Arc;

use base64::Engine;
use chrono::{SecondsFormat, Utc};
use http::{Method, Response};
use serde_json::{Map, Value, json};
use uc_api::{FieldSelector, GroupResource, LabelSelector, StatusDetails};

use crate::error::{ApiError, FieldError, FieldErrorKind, Result, Subject};
use crate::registry::{ResourceInfo, ScalePaths, crd_to_resource, is_dns_label, is_dns_subdomain};
use crate::server::{App, Body, Render, Req, json_response};
use crate::storage::{Obj, Op, StoreError, object_key, rv_of};
use crate::{builtin, discovery, openapi, patch, table, watch};

/// The finalizer that makes the GC delete dependents before their owner.
pub const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer that makes the GC orphan dependents.
pub const ORPHAN: &str = "orphan";
/// The finalizer apiextensions puts on CRDs so their objects are deleted first.
pub const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

/// A request for a resource path.
#[derive(Debug, Clone)]
pub struct Target {
    /// The resource.
    pub info: Arc<ResourceInfo>,
    /// Requested version.
    pub version: String,
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Object name from the path.
    pub name: Option<String>,
    /// Subresource.
    pub sub: Option<String>,
    /// Legacy `/watch/` path prefix.
    pub watch_prefix: bool,
}

impl Target {
    /// The storage key of the named object.
    pub fn key(&self) -> String {
        object_key(self.namespace.as_deref().unwrap_or_default(), self.name.as_deref().unwrap_or_default())
    }

    /// Error subject.
    pub fn subject(&self) -> Subject {
        Subject {
            group: self.info.group.clone(),
            resource: self.info.resource.clone(),
            name: self.name.clone().unwrap_or_default(),
        }
    }
}

/// Routes a request.
pub async fn dispatch(app: &Arc<App>, req: &mut Req) -> Result<Response<Body>> {
    let path = req.path.trim_end_matches('/').to_string();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let get = req.method == Method::GET;
    match segs.as_slice() {
        [] if get => Ok(json_response(200, &discovery::root_paths())),
        ["healthz" | "livez" | "readyz", ..] if get => {
            let mut r = Response::new(crate::server::full("ok"));
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
            _ => false,
        };
        if !ok {
            return Err(ApiError::no_route());
        }
    }
    Ok(Target { info: info.clone(), version: version.to_string(), namespace, name, sub, watch_prefix })
}

async fn resource(app: &Arc<App>, req: &mut Req, t: Target) -> Result<Response<Body>> {
    let watching = t.watch_prefix || matches!(req.params.get("watch").map(String::as_str), Some("true" | "1"));
    match (&req.method, &t.name, t.sub.as_deref()) {
        (&Method::GET, None, _) if watching => watch::serve(app, req, &t),
        (&Method::GET, None, _) => list(app, req, &t),
        (&Method::GET, Some(_), _) if watching => watch::serve(app, req, &t),
        (&Method::GET, Some(_), Some("scale")) => get_scale(app, &t),
        (&Method::GET, Some(_), _) => get(app, req, &t),
        (&Method::POST, None, None) => create(app, req, &t).await,
        (&Method::PUT, Some(_), Some("scale")) => update_scale(app, req, &t, None).await,
        (&Method::PUT, Some(_), _) => update(app, req, &t).await,
        (&Method::PATCH, Some(_), Some("scale")) => {
            let body = req.body.clone();
            let ct = req.content_type.clone();
            update_scale(app, req, &t, Some((ct, body))).await
        }
        (&Method::PATCH, Some(_), _) => patch_object(app, req, &t).await,
        (&Method::DELETE, Some(_), None) => delete(app, req, &t).await,
        (&Method::DELETE, None, None) => delete_collection(app, req, &t).await,
        _ => Err(ApiError::method_not_allowed(format!("method {} is not supported on {}", req.method, req.path))),
    }
}

/// Startup: default namespaces and CRDs stored by an earlier run.
pub async fn bootstrap(app: &Arc<App>) -> Result<()> {
    let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let (stored, _) = app.store.list(&crds, None, None).map_err(|e| ApiError::from_store(e, &Subject::default()))?;
    for (_, crd) in stored {
        match crd_to_resource(&crd) {
            Ok(info) => app.registry.install_crd(info),
            Err(errs) => {
                tracing::warn!(crd = ?crd.pointer("/metadata/name"), errors = ?errs, "stored CRD is invalid; not serving it")
            }
        }
    }
    let ns = GroupResource::new("", "namespaces");
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        if app.store.get(&ns, &object_key("", name)).is_none() {
            let mut obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            stamp_new(&mut obj);
            init_namespace(&mut obj);
            app.store
                .write(Op::Create { gr: ns.clone(), key: object_key("", name), object: obj })
                .await
                .map_err(|e| ApiError::from_store(e, &Subject::default()))?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Current time as Kubernetes writes it.
pub fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn stamp_new(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("uid".into(), Value::String(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), Value::String(now()));
        meta.remove("resourceVersion");
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
    }
}

fn init_namespace(obj: &mut Value) {
    obj["spec"] = json!({"finalizers": ["kubernetes"]});
    obj["status"] = json!({"phase": "Active"});
    if let Some(labels) = obj.pointer_mut("/metadata").and_then(Value::as_object_mut) {
        let name = labels.get("name").cloned().unwrap_or(Value::Null);
        let l = labels.entry("labels").or_insert_with(|| json!({}));
        if let Some(l) = l.as_object_mut() {
            l.insert("kubernetes.io/metadata.name".into(), name);
        }
    }
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str)
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|f| f.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

fn set_finalizers(obj: &mut Value, f: Vec<String>) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if f.is_empty() {
            meta.remove("finalizers");
        } else {
            meta.insert("finalizers".into(), json!(f));
        }
    }
}

fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some()
}

/// True once nothing holds a deleting object back: no finalizers (and for namespaces, no spec finalizers).
fn ready_to_vanish(info: &ResourceInfo, obj: &Value) -> bool {
    // A pod in graceful deletion waits for its kubelet's delete with grace 0, whatever else changes.
    let graceful = obj.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).is_some_and(|g| g > 0);
    is_deleting(obj)
        && !graceful
        && finalizers(obj).is_empty()
        && !(info.resource == "namespaces"
            && obj.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|a| !a.is_empty()))
}

fn parse_body(req: &Req) -> Result<Value> {
    if req.body.is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    let v: Value = match req.content_type.as_str() {
        "application/yaml" | "application/x-yaml" | "text/yaml" => serde_yaml::from_slice(&req.body)
            .map_err(|e| ApiError::bad_request(format!("the body is not valid YAML: {e}")))?,
        "application/vnd.kubernetes.protobuf" => {
            crate::proto::decode(&req.body).map_err(|e| ApiError::bad_request(e.to_string()))?
        }
        "" | "application/json" | "*/*" => serde_json::from_slice(&req.body)
            .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?,
        other => {
            return Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format ({other}) - accepted media types include: application/json, application/yaml"
            )));
        }
    };
    if !v.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    Ok(v)
}

fn dry_run(req: &Req) -> bool {
    req.params.get("dryRun").is_some_and(|v| v == "All")
}

/// The object as served at `version` (conversion strategy None: only apiVersion changes).
pub fn to_version(info: &ResourceInfo, version: &str, obj: &Obj) -> Obj {
    let api_version = info.api_version(version);
    if obj.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str()) {
        return obj.clone();
    }
    let mut v = (**obj).clone();
    v["apiVersion"] = Value::String(api_version);
    Arc::new(v)
}

fn respond_object(req: &Req, t: &Target, code: u16, obj: &Obj) -> Response<Body> {
    let obj = to_version(&t.info, &t.version, obj);
    match req.negotiated.render {
        Render::Json => json_response(code, &obj),
        Render::Metadata => json_response(
            code,
            &json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata")}),
        ),
        Render::Table => {
            let include = include_object(req);
            let table = json!({
                "kind": "Table", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": meta_str(&obj, "resourceVersion").unwrap_or_default()},
                "columnDefinitions": table::column_definitions(&t.info, &t.version),
                "rows": [table::row(&t.info, &t.version, &obj, include)],
            });
            json_response(code, &table)
        }
    }
}

/// `?includeObject=` for tables.
pub fn include_object(req: &Req) -> table::IncludeObject {
    match req.params.get("includeObject").map(String::as_str) {
        Some("None") => table::IncludeObject::None,
        Some("Object") => table::IncludeObject::Object,
        _ => table::IncludeObject::Metadata,
    }
}

// ---------------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------------

fn get(app: &App, req: &Req, t: &Target) -> Result<Response<Body>> {
    let obj = app.store.get(&t.info.gr(), &t.key()).ok_or_else(|| ApiError::not_found(&t.subject()))?;
    Ok(respond_object(req, t, 200, &obj))
}

/// Parsed label and field selectors of a request.
pub struct Selectors {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
}

impl Selectors {
    /// From the query parameters.
    pub fn from_req(req: &Req) -> Result<Self> {
        let labels = LabelSelector::parse(req.params.get("labelSelector").map(String::as_str).unwrap_or_default())
            .map_err(|e| ApiError::bad_request(format!("invalid labelSelector: {e}")))?;
        let fields = FieldSelector::parse(req.params.get("fieldSelector").map(String::as_str).unwrap_or_default())
            .map_err(|e| ApiError::bad_request(format!("invalid fieldSelector: {e}")))?;
        Ok(Self { labels, fields })
    }

    /// Whether an object matches both selectors.
    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.matches_value(obj.pointer("/metadata/labels"))
            && self.fields.matches(|f| {
                let pointer = format!("/{}", f.replace('.', "/"));
                obj.pointer(&pointer).map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            })
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    start: String,
}

fn list(app: &App, req: &Req, t: &Target) -> Result<Response<Body>> {
    let sel = Selectors::from_req(req)?;
    let limit: usize = match req.params.get("limit") {
        Some(l) => l.parse::<i64>().map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?.max(0) as usize,
        None => 0,
    };
    let token = match req.params.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => Some(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(c)
                .ok()
                .and_then(|b| serde_json::from_slice::<ContinueToken>(&b).ok())
                .ok_or_else(|| ApiError::bad_request("invalid continue token"))?,
        ),
        None => None,
    };
    let at = match (
        &token,
        req.params.get("resourceVersion").map(String::as_str),
        req.params.get("resourceVersionMatch").map(String::as_str),
    ) {
        (Some(tok), _, _) => Some(tok.rv),
        (None, Some(rv), Some("Exact")) => Some(parse_rv(rv)?),
        (None, Some(rv), Some("NotOlderThan") | None) if !rv.is_empty() && rv != "0" => {
            let rv = parse_rv(rv)?;
            if rv > app.store.revision() {
                return Err(ApiError::new(uc_api::Status::failure(
                    504,
                    "Timeout",
                    format!("Too large resource version: {rv}, current: {}", app.store.revision()),
                )));
            }
            None
        }
        (None, _, Some(m)) if !matches!(m, "NotOlderThan" | "Exact") => {
            return Err(ApiError::bad_request(format!("resourceVersionMatch: Unsupported value: {m:?}")));
        }
        _ => None,
    };
    let (objects, rv) = app.store.list(&t.info.gr(), t.namespace.as_deref(), at).map_err(|e| match (e, &token) {
        (StoreError::Gone { .. }, Some(_)) => ApiError::gone(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        ),
        (e, _) => ApiError::from_store(e, &t.subject()),
    })?;
    let start = token.as_ref().map(|t| t.start.as_str());
    let mut items: Vec<Obj> = Vec::new();
    let mut next: Option<String> = None;
    let mut remaining = 0usize;
    for (key, obj) in objects.iter().filter(|(k, _)| start.is_none_or(|s| k.as_str() > s)) {
        if !sel.matches(obj) {
            continue;
        }
        if limit > 0 && items.len() >= limit {
            remaining += 1;
            continue;
        }
        items.push(obj.clone());
        if limit > 0 && items.len() == limit {
            next = Some(key.clone());
        }
    }
    let cont = match next {
        Some(k) if remaining > 0 => {
            let tok = serde_json::to_vec(&ContinueToken { rv, start: k }).unwrap_or_default();
            Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tok))
        }
        _ => None,
    };
    let mut meta = Map::new();
    meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    if let Some(c) = &cont {
        meta.insert("continue".into(), Value::String(c.clone()));
        if !req.params.contains_key("labelSelector") && !req.params.contains_key("fieldSelector") {
            meta.insert("remainingItemCount".into(), Value::from(remaining));
        }
    }
    let body = match req.negotiated.render {
        Render::Table => {
            let include = include_object(req);
            let rows: Vec<Value> = items
                .iter()
                .map(|o| table::row(&t.info, &t.version, &to_version(&t.info, &t.version, o), include))
                .collect();
            json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                   "columnDefinitions": table::column_definitions(&t.info, &t.version), "rows": rows})
        }
        Render::Metadata => {
            let items: Vec<Value> = items
                .iter()
                .map(|o| json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o.get("metadata")}))
                .collect();
            json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "items": items})
        }
        Render::Json => {
            let items: Vec<Obj> = items.iter().map(|o| to_version(&t.info, &t.version, o)).collect();
            json!({"kind": t.info.list_kind, "apiVersion": t.info.api_version(&t.version), "metadata": meta, "items": items})
        }
    };
    Ok(json_response(200, &body))
}

/// Parses a resourceVersion parameter.
pub fn parse_rv(rv: &str) -> Result<u64> {
    rv.parse().map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}: must be an integer")))
}

// ---------------------------------------------------------------------------------------------
// Admission: checks and defaults shared by create and update
// ---------------------------------------------------------------------------------------------

fn check_type_meta(info: &ResourceInfo, version: &str, obj: &mut Value) -> Result<()> {
    let expected_av = info.api_version(version);
    match obj.get("apiVersion") {
        None => obj["apiVersion"] = Value::String(expected_av.clone()),
        Some(Value::String(av)) if *av == expected_av => {}
        Some(Value::String(av))
            if info.version(uc_api::resource::split_api_version(av).1).is_some()
                && uc_api::resource::split_api_version(av).0 == info.group => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({}) does not match the expected API version ({expected_av})",
                other.as_str().map(String::from).unwrap_or_else(|| other.to_string())
            )));
        }
    }
    match obj.get("kind") {
        None => obj["kind"] = Value::String(info.kind.clone()),
        Some(Value::String(k)) if *k == info.kind => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({}) does not match the kind of the resource {} ({})",
                other.as_str().map(String::from).unwrap_or_else(|| other.to_string()),
                info.gr(),
                info.kind
            )));
        }
    }
    Ok(())
}

fn check_object_meta(info: &ResourceInfo, obj: &mut Value) -> Result<Vec<FieldError>> {
    if obj.get("metadata").is_none() || obj["metadata"].is_null() {
        obj["metadata"] = json!({});
    }
    let Some(meta) = obj["metadata"].as_object_mut() else {
        return Err(ApiError::bad_request("metadata: must be an object"));
    };
    meta.remove("managedFields");
    let mut errs = Vec::new();
    for field in ["labels", "annotations"] {
        match meta.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
            }
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    if !v.is_string() {
                        return Err(ApiError::bad_request(format!("metadata.{field}.{k}: must be a string, not {v}")));
                    }
                    if field == "labels" && !is_label_value(v.as_str().unwrap_or_default()) {
                        errs.push(FieldError::invalid("metadata.labels", v, "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"));
                    }
                    let name_part = k.rsplit('/').next().unwrap_or(k);
                    if name_part.is_empty()
                        || name_part.len() > 63
                        || !name_part.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                    {
                        errs.push(FieldError::invalid(
                            format!("metadata.{field}"),
                            &Value::from(k.clone()),
                            "name part must consist of alphanumeric characters, '-', '_' or '.'",
                        ));
                    }
                }
            }
            Some(other) => {
                return Err(ApiError::bad_request(format!("metadata.{field}: must be a map of strings, not {other}")));
            }
        }
    }
    match meta.get("finalizers") {
        None => {}
        Some(Value::Null) => {
            meta.remove("finalizers");
        }
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!("metadata.finalizers: must be a list of strings, not {other}")));
        }
    }
    match meta.get("ownerReferences") {
        None => {}
        Some(Value::Null) => {
            meta.remove("ownerReferences");
        }
        Some(Value::Array(refs)) => {
            let mut controllers = 0;
            for (i, r) in refs.iter().enumerate() {
                for f in ["apiVersion", "kind", "name", "uid"] {
                    if r.get(f).and_then(Value::as_str).is_none_or(str::is_empty) {
                        errs.push(FieldError::required(format!("metadata.ownerReferences[{i}].{f}"), ""));
                    }
                }
                if r.get("controller") == Some(&Value::Bool(true)) {
                    controllers += 1;
                }
            }
            if controllers > 1 {
                errs.push(FieldError::invalid(
                    "metadata.ownerReferences",
                    &Value::Null,
                    "Only one reference can have Controller set to true",
                ));
            }
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!("metadata.ownerReferences: must be a list, not {other}")));
        }
    }
    for f in ["name", "generateName", "namespace", "resourceVersion", "uid"] {
        if let Some(v) = meta.get(f)
            && !v.is_string()
            && !v.is_null()
        {
            return Err(ApiError::bad_request(format!("metadata.{f}: must be a string, not {v}")));
        }
    }
    if let Some(name) = meta.get("name").and_then(Value::as_str) {
        let ok = if matches!(info.resource.as_str(), "namespaces" | "services") {
            is_dns_label(name)
        } else {
            is_dns_subdomain(name)
        };
        if !ok {
            errs.push(FieldError::invalid(
                "metadata.name",
                &Value::from(name),
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            ));
        }
    }
    Ok(errs)
}

/// A label value: empty, or ≤ 63 alphanumerics, '-', '_', '.', starting and ending alphanumeric.
fn is_label_value(s: &str) -> bool {
    let edge_ok = |c: Option<char>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    s.len() <= 63
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && edge_ok(s.chars().next())
        && edge_ok(s.chars().last())
}

/// Field validation mode (`?fieldValidation=`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FieldValidation {
    /// Unknown fields are an error.
    Strict,
    /// Unknown fields are dropped with a warning.
    Warn,
    /// Unknown fields are dropped silently.
    Ignore,
}

fn field_validation(req: &Req) -> Result<FieldValidation> {
    match req.params.get("fieldValidation").map(String::as_str) {
        None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
        Some("Strict") => Ok(FieldValidation::Strict),
        Some("Ignore") => Ok(FieldValidation::Ignore),
        Some(other) => Err(ApiError::bad_request(format!(
            "fieldValidation: unsupported value {other:?}: must be Ignore, Warn or Strict"
        ))),
    }
}

/// Runs schema defaulting, pruning and validation (CRDs) or built-in defaulting and validation.
fn validate_body(
    req: &mut Req,
    info: &ResourceInfo,
    version: &str,
    obj: &mut Value,
    errs: &mut Vec<FieldError>,
) -> Result<()> {
    let mode = field_validation(req)?;
    match info.version(version).and_then(|v| v.schema.clone()) {
        Some(schema) => {
            let Some(map) = obj.as_object_mut() else {
                return Ok(());
            };
            let kept: Vec<(String, Value)> = ["apiVersion", "kind", "metadata"]
                .iter()
                .filter_map(|k| map.remove(*k).map(|v| (k.to_string(), v)))
                .collect();
            schema.apply_defaults(obj);
            let mut pruned = Vec::new();
            schema.prune(obj, "", &mut pruned);
            schema.validate(obj, "", errs);
            if let Some(map) = obj.as_object_mut() {
                for (k, v) in kept {
                    map.insert(k, v);
                }
            }
            if !pruned.is_empty() {
                match mode {
                    FieldValidation::Strict => {
                        let list: Vec<String> = pruned.iter().map(|p| format!("unknown field {p:?}")).collect();
                        return Err(ApiError::bad_request(format!(
                            "{} in version {:?} cannot be handled as a {}: strict decoding error: {}",
                            info.kind,
                            version,
                            info.kind,
                            list.join(", ")
                        )));
                    }
                    FieldValidation::Warn => req.warnings.extend(pruned.iter().map(|p| format!("unknown field {p:?}"))),
                    FieldValidation::Ignore => {}
                }
            }
        }
        None if info.crd.is_none() => {
            builtin::apply_defaults(&info.resource, obj);
            errs.extend(builtin::validate(&info.resource, obj));
        }
        None => {}
    }
    Ok(())
}

fn invalid(info: &ResourceInfo, name: &str, errs: &[FieldError]) -> ApiError {
    ApiError::invalid(&info.kind, &info.group, name, errs)
}

/// Whether the parts of an object that `generation` tracks differ.
fn spec_changed(info: &ResourceInfo, version: &str, old: &Value, new: &Value) -> bool {
    let has_status = info.version(version).is_some_and(|v| v.status);
    let strip = |v: &Value| -> Value {
        let mut m = v.as_object().cloned().unwrap_or_default();
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if has_status {
            m.remove("status");
        }
        Value::Object(m)
    };
    strip(old) != strip(new)
}

fn namespace_check(app: &App, t: &Target, ns: &str) -> Result<()> {
    let nso = app.store.get(&GroupResource::new("", "namespaces"), &object_key("", ns));
    let subject = Subject { group: String::new(), resource: "namespaces".into(), name: ns.into() };
    match nso {
        None => Err(ApiError::not_found(&subject)),
        Some(o) if is_deleting(&o) => Err(ApiError::forbidden(
            &Subject { name: meta_str(&o, "name").unwrap_or_default().into(), ..t.subject() },
            format!("unable to create new content in namespace {ns} because it is being terminated"),
        )),
        Some(_) => Ok(()),
    }
}

/// Fills status and stored versions of a CRD, checking it first.
fn admit_crd(obj: &mut Value, old: Option<&Value>) -> Result<crate::registry::ResourceInfo> {
    let name = meta_str(obj, "name").unwrap_or_default().to_string();
    let info = crd_to_resource(obj)
        .map_err(|errs| ApiError::invalid("CustomResourceDefinition", "apiextensions.k8s.io", &name, &errs))?;
    let mut stored: Vec<String> = old
        .and_then(|o| o.pointer("/status/storedVersions"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
        .unwrap_or_default();
    if !stored.contains(&info.storage_version) {
        stored.push(info.storage_version.clone());
    }
    let ts = now();
    obj["status"] = json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": ts},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": ts},
        ],
        "acceptedNames": obj.pointer("/spec/names").cloned().unwrap_or(Value::Null),
        "storedVersions": stored,
    });
    Ok(info)
}

// ---------------------------------------------------------------------------------------------
// Writes
// ---------------------------------------------------------------------------------------------

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char).collect()
}

async fn create(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let mut obj = parse_body(req)?;
    let info = t.info.clone();
    if let Some(crd) = &info.crd {
        let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
        if app.store.get(&crds, &object_key("", crd)).is_some_and(|c| is_deleting(&c)) {
            return Err(ApiError::method_not_allowed(format!(
                "create not allowed while custom resource definition {crd} is terminating"
            )));
        }
    }
    check_type_meta(&info, &t.version, &mut obj)?;
    let mut errs = check_object_meta(&info, &mut obj)?;
    let meta = obj["metadata"].as_object_mut().ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
    // Namespace: from the path; the body may repeat it but not contradict it.
    if info.namespaced {
        let ns = t.namespace.clone().unwrap_or_default();
        match meta.get("namespace").and_then(Value::as_str) {
            Some(n) if !n.is_empty() && n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), Value::String(ns));
            }
        }
    } else {
        meta.remove("namespace");
    }
    if meta.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
        match meta.get("generateName").and_then(Value::as_str).filter(|g| !g.is_empty()) {
            Some(prefix) => {
                let prefix: String = prefix.chars().take(58).collect();
                meta.insert("name".into(), Value::String(format!("{prefix}{}", random_suffix())));
            }
            None => errs.push(FieldError::required("metadata.name", "name or generateName is required")),
        }
    }
    let name = meta.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    stamp_new(&mut obj);
    if info.namespaced && !dry_run(req) {
        namespace_check(app, t, t.namespace.as_deref().unwrap_or_default())?;
    }
    validate_body(req, &info, &t.version, &mut obj, &mut errs)?;
    if !errs.is_empty() {
        return Err(invalid(&info, &name, &errs));
    }
    // Status is owned by the status subresource; creation starts it afresh.
    if info.version(&t.version).is_some_and(|v| v.status) {
        match info.resource.as_str() {
            "pods" => obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"}),
            "namespaces" => init_namespace(&mut obj),
            "customresourcedefinitions" => {}
            _ if info.crd.is_some() => {
                if let Some(m) = obj.as_object_mut() {
                    m.remove("status");
                }
            }
            _ => obj["status"] = json!({}),
        }
    }
    if info.generation {
        obj["metadata"]["generation"] = json!(1);
    }
    let crd_info = if info.resource == "customresourcedefinitions" && info.group == "apiextensions.k8s.io" {
        let ci = admit_crd(&mut obj, None)?;
        let mut f = finalizers(&obj);
        if !f.iter().any(|x| x == CRD_CLEANUP) {
            f.push(CRD_CLEANUP.into());
        }
        set_finalizers(&mut obj, f);
        Some(ci)
    } else {
        None
    };
    obj["apiVersion"] = Value::String(info.api_version(&info.storage_version));
    let subject = Subject { name: name.clone(), ..t.subject() };
    // A Service's cluster IP is chosen under a lock held until it is stored, so two never share one.
    let _allocating = match (&app.service_range, info.group.is_empty() && info.resource == "services") {
        (Some(range), true) => {
            let guard = app.ip_lock.lock().await;
            let (services, _) =
                app.store.list(&info.gr(), None, None).map_err(|e| ApiError::from_store(e, &subject))?;
            let used = crate::service_ips::in_use(services.iter().map(|(_, o)| o.as_ref()));
            crate::service_ips::assign(range, &mut obj, &used, rand::random())
                .map_err(|e| invalid(&info, &name, &[e]))?;
            Some(guard)
        }
        _ => None,
    };
    if dry_run(req) {
        return Ok(respond_object(req, t, 201, &Arc::new(obj)));
    }
    let key = object_key(t.namespace.as_deref().unwrap_or_default(), &name);
    let stored = app
        .store
        .write(Op::Create { gr: info.gr(), key, object: obj })
        .await
        .map_err(|e| ApiError::from_store(e, &subject))?;
    if let Some(ci) = crd_info {
        app.registry.install_crd(ci);
    }
    Ok(respond_object(req, t, 201, &stored))
}

/// Prepares an update of `old` to `new` through the main resource or a subresource; returns the
/// object to store (in the storage version).
fn prepare_update(req: &mut Req, t: &Target, old: &Obj, mut new: Value) -> Result<Value> {
    let info = &t.info;
    let name = t.name.clone().unwrap_or_default();
    check_type_meta(info, &t.version, &mut new)?;
    let mut errs = check_object_meta(info, &mut new)?;
    match meta_str(&new, "name") {
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => new["metadata"]["name"] = Value::String(name.clone()),
    }
    if let Some(ns) = &t.namespace {
        match meta_str(&new, "namespace") {
            Some(n) if !n.is_empty() && n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => new["metadata"]["namespace"] = Value::String(ns.clone()),
        }
    }
    if let Some(uid) = meta_str(&new, "uid")
        && Some(uid) != meta_str(old, "uid")
    {
        return Err(ApiError::conflict(
            &t.subject(),
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta_str(old, "uid").unwrap_or_default()
            ),
        ));
    }
    let has_status = info.version(&t.version).is_some_and(|v| v.status);
    let mut result = match t.sub.as_deref() {
        Some("status") => {
            // Only status changes through /status.
            let mut merged = (**old).clone();
            match new.get("status") {
                Some(s) => merged["status"] = s.clone(),
                None => {
                    if let Some(m) = merged.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            merged
        }
        Some("finalize") => {
            let mut merged = (**old).clone();
            merged["spec"]["finalizers"] = new.pointer("/spec/finalizers").cloned().unwrap_or(json!([]));
            merged
        }
        _ => {
            let meta =
                new["metadata"].as_object_mut().ok_or_else(|| ApiError::bad_request("metadata must be an object"))?;
            for f in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"] {
                match old.pointer(&format!("/metadata/{f}")) {
                    Some(v) => meta.insert(f.into(), v.clone()),
                    None => meta.remove(f),
                };
            }
            if has_status {
                match old.get("status") {
                    Some(s) => new["status"] = s.clone(),
                    None => {
                        if let Some(m) = new.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            if info.resource == "namespaces" {
                new["spec"] = old.get("spec").cloned().unwrap_or(json!({}));
            }
            if info.resource == "services"
                && info.group.is_empty()
                && let Err(e) = crate::service_ips::keep(old, &mut new)
            {
                errs.push(e);
            }
            new
        }
    };
    if is_deleting(old) {
        let before = finalizers(old);
        if let Some(added) = finalizers(&result).into_iter().find(|f| !before.contains(f)) {
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers [{added:?}]"
                ),
            ));
        }
    }
    validate_body(req, info, &t.version, &mut result, &mut errs)?;
    if !errs.is_empty() {
        return Err(invalid(info, &name, &errs));
    }
    if info.generation {
        let g = old.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
        let g = if spec_changed(info, &t.version, old, &result) { g + 1 } else { g };
        result["metadata"]["generation"] = json!(g);
    }
    if info.resource == "customresourcedefinitions" && info.group == "apiextensions.k8s.io" && t.sub.is_none() {
        admit_crd(&mut result, Some(old))?;
    }
    result["apiVersion"] = Value::String(info.api_version(&info.storage_version));
    Ok(result)
}

/// Stores an update prepared from `old`: a CAS on its resourceVersion. An object being deleted
/// whose last finalizer is gone is removed instead.
pub async fn commit_update(
    app: &App,
    info: &ResourceInfo,
    key: &str,
    old: &Obj,
    new: Value,
) -> Result<Obj, StoreError> {
    let gr = info.gr();
    let expect_rv = rv_of(old);
    let stored = if ready_to_vanish(info, &new) {
        app.store.write(Op::Delete { gr, key: key.to_string(), expect_rv }).await?
    } else {
        app.store.write(Op::Update { gr, key: key.to_string(), object: new, expect_rv }).await?
    };
    sync_crd(app, info, &stored, key);
    Ok(stored)
}

/// Keeps the registry in step with a CRD write.
fn sync_crd(app: &App, info: &ResourceInfo, stored: &Obj, key: &str) {
    if info.resource != "customresourcedefinitions" || info.group != "apiextensions.k8s.io" {
        return;
    }
    let exists = app.store.get(&info.gr(), key).is_some();
    match crd_to_resource(stored) {
        Ok(ci) if exists => app.registry.install_crd(ci),
        Ok(ci) => app.registry.remove_crd(&ci.gr()),
        Err(_) => {}
    }
}

async fn update(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let body = parse_body(req)?;
    let body_rv = match meta_str(&body, "resourceVersion") {
        Some(rv) if !rv.is_empty() => Some(parse_rv(rv)?),
        _ => None,
    };
    let key = t.key();
    for _ in 0..16 {
        let old = app.store.get(&t.info.gr(), &key).ok_or_else(|| ApiError::not_found(&t.subject()))?;
        if let Some(rv) = body_rv
            && rv != rv_of(&old)
        {
            return Err(ApiError::from_store(StoreError::Conflict { expected: rv, found: rv_of(&old) }, &t.subject()));
        }
        let new = prepare_update(req, t, &old, body.clone())?;
        if dry_run(req) {
            return Ok(respond_object(req, t, 200, &Arc::new(new)));
        }
        match commit_update(app, &t.info, &key, &old, new).await {
            Ok(stored) => return Ok(respond_object(req, t, 200, &stored)),
            Err(StoreError::Conflict { .. }) if body_rv.is_none() => continue,
            Err(e) => return Err(ApiError::from_store(e, &t.subject())),
        }
    }
    Err(ApiError::conflict(&t.subject(), "too many concurrent updates; try again"))
}

fn apply_patch(req: &Req, t: &Target, target: &mut Value) -> Result<()> {
    let r = match req.content_type.as_str() {
        "application/json-patch+json" => patch::json_patch(target, &req.body),
        "application/merge-patch+json" => patch::merge_patch(target, &req.body),
        "application/strategic-merge-patch+json" if t.info.crd.is_none() => {
            patch::strategic_merge_patch(target, &req.body)
        }
        "application/strategic-merge-patch+json" => {
            return Err(ApiError::unsupported_media_type(
                "strategic merge patch is not supported for custom resources; use application/merge-patch+json or application/json-patch+json",
            ));
        }
        "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
            return Err(ApiError::unsupported_media_type(
                "server-side apply is not supported by the uc API server yet; use client-side apply (kubectl apply without --server-side) or a merge patch",
            ));
        }
        other => {
            return Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format ({other}) - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json"
            )));
        }
    };
    r.map_err(|e| match e {
        patch::PatchError::Malformed(m) => ApiError::bad_request(m),
        patch::PatchError::Failed(m) => ApiError::invalid(
            &t.info.kind,
            &t.info.group,
            t.name.as_deref().unwrap_or_default(),
            &[FieldError::new(FieldErrorKind::Invalid, "", None, m)],
        ),
    })
}

async fn patch_object(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    // The patch type is judged before the object's existence (server-side apply would create it).
    if matches!(req.content_type.as_str(), "application/apply-patch+yaml" | "application/apply-patch+cbor") {
        let mut probe = json!({});
        apply_patch(req, t, &mut probe)?;
    }
    let key = t.key();
    for _ in 0..16 {
        let old = app.store.get(&t.info.gr(), &key).ok_or_else(|| ApiError::not_found(&t.subject()))?;
        let mut working = (*to_version(&t.info, &t.version, &old)).clone();
        apply_patch(req, t, &mut working)?;
        let patched_rv = meta_str(&working, "resourceVersion").filter(|s| !s.is_empty()).map(parse_rv).transpose()?;
        if let Some(rv) = patched_rv
            && rv != rv_of(&old)
        {
            return Err(ApiError::from_store(StoreError::Conflict { expected: rv, found: rv_of(&old) }, &t.subject()));
        }
        let new = prepare_update(req, t, &old, working)?;
        if dry_run(req) {
            return Ok(respond_object(req, t, 200, &Arc::new(new)));
        }
        match commit_update(app, &t.info, &key, &old, new).await {
            Ok(stored) => return Ok(respond_object(req, t, 200, &stored)),
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(ApiError::from_store(e, &t.subject())),
        }
    }
    Err(ApiError::conflict(&t.subject(), "too many concurrent updates; try again"))
}

// ---------------------------------------------------------------------------------------------
// Scale and log subresources
// ---------------------------------------------------------------------------------------------

fn path_pointer(json_path: &str) -> String {
    json_path.trim_start_matches('.').split('.').fold(String::new(), |acc, s| format!("{acc}/{s}"))
}

fn scale_view(paths: &ScalePaths, obj: &Value) -> Value {
    let spec = obj.pointer(&path_pointer(&paths.spec_replicas)).and_then(Value::as_i64).unwrap_or(0);
    let status = obj.pointer(&path_pointer(&paths.status_replicas)).and_then(Value::as_i64).unwrap_or(0);
    let mut st = json!({"replicas": status});
    if let Some(sel) = paths.label_selector.as_ref().and_then(|p| obj.pointer(&path_pointer(p))) {
        st["selector"] = sel.clone();
    } else if let Some(sel) = obj.pointer("/spec/selector") {
        // Built-ins publish the selector in string form.
        if let Ok(ls) = uc_api::LabelSelector::from_value(sel) {
            let s: Vec<String> = ls
                .requirements
                .iter()
                .filter_map(|r| match r {
                    uc_api::selector::Requirement::Equals(k, v) => Some(format!("{k}={v}")),
                    _ => None,
                })
                .collect();
            st["selector"] = Value::String(s.join(","));
        }
    }
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": obj.pointer("/metadata/name"), "namespace": obj.pointer("/metadata/namespace"),
                     "uid": obj.pointer("/metadata/uid"), "resourceVersion": obj.pointer("/metadata/resourceVersion"),
                     "creationTimestamp": obj.pointer("/metadata/creationTimestamp")},
        "spec": {"replicas": spec}, "status": st,
    })
}

fn get_scale(app: &App, t: &Target) -> Result<Response<Body>> {
    let obj = app.store.get(&t.info.gr(), &t.key()).ok_or_else(|| ApiError::not_found(&t.subject()))?;
    let paths = t.info.version(&t.version).and_then(|v| v.scale.clone()).ok_or_else(ApiError::no_route)?;
    Ok(json_response(200, &scale_view(&paths, &obj)))
}

async fn update_scale(
    app: &Arc<App>,
    req: &mut Req,
    t: &Target,
    patch_body: Option<(String, bytes::Bytes)>,
) -> Result<Response<Body>> {
    let paths = t.info.version(&t.version).and_then(|v| v.scale.clone()).ok_or_else(ApiError::no_route)?;
    let key = t.key();
    for _ in 0..16 {
        let old = app.store.get(&t.info.gr(), &key).ok_or_else(|| ApiError::not_found(&t.subject()))?;
        let mut scale = scale_view(&paths, &old);
        match &patch_body {
            Some(_) => {
                let scale_target = Target { sub: Some("scale".into()), ..t.clone() };
                apply_patch(req, &scale_target, &mut scale)?;
            }
            None => scale = parse_body(req)?,
        }
        let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
        if replicas.as_i64().is_none_or(|r| r < 0) {
            return Err(ApiError::invalid(
                "Scale",
                "autoscaling",
                t.name.as_deref().unwrap_or_default(),
                &[FieldError::invalid("spec.replicas", &replicas, "must be greater than or equal to 0")],
            ));
        }
        if let Some(rv) = scale.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|s| !s.is_empty()) {
            let rv = parse_rv(rv)?;
            if rv != rv_of(&old) {
                return Err(ApiError::from_store(
                    StoreError::Conflict { expected: rv, found: rv_of(&old) },
                    &t.subject(),
                ));
            }
        }
        let mut new = (*old).clone();
        let pointer = path_pointer(&paths.spec_replicas);
        let (parent, leaf) = pointer.rsplit_once('/').unwrap_or(("", &pointer));
        match new.pointer_mut(parent).and_then(Value::as_object_mut) {
            Some(m) => {
                m.insert(leaf.to_string(), replicas);
            }
            None => {
                return Err(ApiError::internal(format!("the object has no {} to scale", paths.spec_replicas)));
            }
        }
        let mut main = Target { sub: None, ..t.clone() };
        main.sub = None;
        let new = prepare_update(req, &main, &old, new)?;
        match commit_update(app, &t.info, &key, &old, new).await {
            Ok(stored) => return Ok(json_response(200, &scale_view(&paths, &stored))),
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(ApiError::from_store(e, &t.subject())),
        }
    }
    Err(ApiError::conflict(&t.subject(), "too many concurrent updates; try again"))
}

// ---------------------------------------------------------------------------------------------
// Deletes
// ---------------------------------------------------------------------------------------------

/// How dependents are treated when their owner is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Delete the owner now; the GC deletes dependents afterwards.
    Background,
    /// Delete dependents first, then the owner.
    Foreground,
    /// Leave dependents, removing their owner references.
    Orphan,
}

/// Parsed DeleteOptions.
#[derive(Debug, Clone)]
pub struct DeleteOptions {
    /// Propagation policy.
    pub propagation: Propagation,
    /// Precondition on uid.
    pub uid: Option<String>,
    /// Precondition on resourceVersion.
    pub resource_version: Option<u64>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `gracePeriodSeconds` (pods): None uses the pod's terminationGracePeriodSeconds.
    pub grace_period: Option<i64>,
}

impl Default for DeleteOptions {
    fn default() -> Self {
        Self {
            propagation: Propagation::Background,
            uid: None,
            resource_version: None,
            dry_run: false,
            grace_period: None,
        }
    }
}

fn delete_options(req: &Req) -> Result<DeleteOptions> {
    let body: Value = if req.body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&req.body)
            .map_err(|e| ApiError::bad_request(format!("the DeleteOptions body is not valid JSON: {e}")))?
    };
    let policy = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(String::from)
        .or_else(|| req.params.get("propagationPolicy").cloned());
    let orphan = body
        .get("orphanDependents")
        .and_then(Value::as_bool)
        .or_else(|| req.params.get("orphanDependents").map(|v| v == "true"));
    let propagation = match (policy.as_deref(), orphan) {
        (Some("Foreground"), _) => Propagation::Foreground,
        (Some("Orphan"), _) => Propagation::Orphan,
        (Some("Background"), _) => Propagation::Background,
        (Some(other), _) => {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: unsupported value {other:?}: must be Foreground, Background or Orphan"
            )));
        }
        (None, Some(true)) => Propagation::Orphan,
        (None, _) => Propagation::Background,
    };
    let uid = body.pointer("/preconditions/uid").and_then(Value::as_str).map(String::from);
    let resource_version =
        body.pointer("/preconditions/resourceVersion").and_then(Value::as_str).map(parse_rv).transpose()?;
    let dry_run =
        dry_run(req) || body.get("dryRun").and_then(Value::as_array).is_some_and(|a| a.iter().any(|x| x == "All"));
    let grace_period = match body.get("gracePeriodSeconds").and_then(Value::as_i64) {
        Some(g) => Some(g),
        None => req
            .params
            .get("gracePeriodSeconds")
            .map(|g| g.parse::<i64>().map_err(|_| ApiError::bad_request(format!("invalid gracePeriodSeconds {g:?}"))))
            .transpose()?,
    };
    Ok(DeleteOptions { propagation, uid, resource_version, dry_run, grace_period })
}

/// The grace period a pod's deletion gets: graceful (a kubelet stops its containers, then deletes it
/// with grace 0) only for a pod bound to a node and not finished; kube deletes the others at once.
fn pod_grace(info: &ResourceInfo, pod: &Value, opts: &DeleteOptions) -> i64 {
    if info.resource != "pods" || !info.group.is_empty() {
        return 0;
    }
    let bound = pod.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let finished = matches!(pod.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed"));
    if !bound || finished {
        return 0;
    }
    let default = pod.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(30);
    let grace = opts.grace_period.unwrap_or(default).max(0);
    // A repeated delete may shorten the grace period, never lengthen it.
    match pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64) {
        Some(current) if is_deleting(pod) => grace.min(current),
        _ => grace,
    }
}

/// What a delete did.
pub enum Deleted {
    /// The object is gone.
    Gone(Obj),
    /// The object is marked for deletion and waits for finalizers.
    Pending(Obj),
}

/// Deletes an object by key, honouring preconditions, finalizers and propagation.
pub async fn delete_object(
    app: &App,
    info: &ResourceInfo,
    key: &str,
    subject: &Subject,
    opts: &DeleteOptions,
) -> Result<Deleted> {
    for _ in 0..16 {
        let cur = app.store.get(&info.gr(), key).ok_or_else(|| ApiError::not_found(subject))?;
        if let Some(uid) = &opts.uid
            && Some(uid.as_str()) != meta_str(&cur, "uid")
        {
            return Err(ApiError::conflict(
                subject,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta_str(&cur, "uid").unwrap_or_default()
                ),
            ));
        }
        if let Some(rv) = opts.resource_version
            && rv != rv_of(&cur)
        {
            return Err(ApiError::conflict(
                subject,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    rv_of(&cur)
                ),
            ));
        }
        let mut f = finalizers(&cur);
        let wanted = match opts.propagation {
            Propagation::Foreground => Some(FOREGROUND),
            Propagation::Orphan => Some(ORPHAN),
            Propagation::Background => None,
        };
        // A repeated delete may switch between orphan and foreground, as kube-apiserver allows.
        if let Some(w) = wanted {
            f.retain(|x| !(x == FOREGROUND || x == ORPHAN) || x == w);
            if !f.iter().any(|x| x == w) {
                f.push(w.to_string());
            }
        }
        let spec_finalizers = info.resource == "namespaces"
            && cur.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
        let grace = pod_grace(info, &cur, opts);
        if f.is_empty() && !spec_finalizers && grace == 0 {
            if opts.dry_run {
                return Ok(Deleted::Gone(cur));
            }
            match app.store.write(Op::Delete { gr: info.gr(), key: key.to_string(), expect_rv: rv_of(&cur) }).await {
                Ok(gone) => {
                    sync_crd(app, info, &gone, key);
                    return Ok(Deleted::Gone(gone));
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(ApiError::from_store(e, subject)),
            }
        }
        let mut new = (*cur).clone();
        if grace > 0 {
            let at = Utc::now() + chrono::Duration::seconds(grace);
            new["metadata"]["deletionTimestamp"] = Value::String(at.to_rfc3339_opts(SecondsFormat::Secs, true));
            new["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
        } else if !is_deleting(&new) {
            new["metadata"]["deletionTimestamp"] = Value::String(now());
            new["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            if info.resource == "namespaces" {
                new["status"]["phase"] = json!("Terminating");
            }
            if info.crd.is_none()
                && info.resource == "customresourcedefinitions"
                && let Some(conds) = new.pointer_mut("/status/conditions").and_then(Value::as_array_mut)
            {
                {
                    conds.push(json!({"type": "Terminating", "status": "True", "reason": "InstanceDeletionPending", "message": "CustomResourceDefinition marked for deletion; instances are being deleted", "lastTransitionTime": now()}));
                }
            }
        }
        set_finalizers(&mut new, f);
        if new == *cur {
            return Ok(Deleted::Pending(cur));
        }
        if opts.dry_run {
            return Ok(Deleted::Pending(Arc::new(new)));
        }
        match app
            .store
            .write(Op::Update { gr: info.gr(), key: key.to_string(), object: new, expect_rv: rv_of(&cur) })
            .await
        {
            Ok(stored) => return Ok(Deleted::Pending(stored)),
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(ApiError::from_store(e, subject)),
        }
    }
    Err(ApiError::conflict(subject, "too many concurrent updates; try again"))
}

async fn delete(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let opts = delete_options(req)?;
    let subject = t.subject();
    match delete_object(app, &t.info, &t.key(), &subject, &opts).await? {
        Deleted::Pending(obj) => Ok(respond_object(req, t, 200, &obj)),
        Deleted::Gone(obj) if t.info.resource == "pods" => Ok(respond_object(req, t, 200, &obj)),
        Deleted::Gone(obj) => {
            let details = StatusDetails {
                name: subject.name.clone(),
                group: t.info.group.clone(),
                kind: t.info.resource.clone(),
                uid: meta_str(&obj, "uid").unwrap_or_default().to_string(),
                ..Default::default()
            };
            Ok(json_response(200, &serde_json::to_value(uc_api::Status::success(details)).unwrap_or(Value::Null)))
        }
    }
}

async fn delete_collection(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let opts = delete_options(req)?;
    let sel = Selectors::from_req(req)?;
    let (objects, _) = app
        .store
        .list(&t.info.gr(), t.namespace.as_deref(), None)
        .map_err(|e| ApiError::from_store(e, &t.subject()))?;
    let mut items = Vec::new();
    for (key, obj) in objects {
        if !sel.matches(&obj) {
            continue;
        }
        let subject = Subject { name: meta_str(&obj, "name").unwrap_or_default().into(), ..t.subject() };
        match delete_object(app, &t.info, &key, &subject, &opts).await {
            Ok(Deleted::Gone(o) | Deleted::Pending(o)) => items.push(to_version(&t.info, &t.version, &o)),
            Err(e) if e.code() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(json_response(
        200,
        &json!({"kind": t.info.list_kind, "apiVersion": t.info.api_version(&t.version), "metadata": {}, "items": items}),
    ))
}
