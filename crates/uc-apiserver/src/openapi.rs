//! OpenAPI documents: enough of `/openapi/v3` (and `/openapi/v2`) for `kubectl explain`, kubectl's
//! server-side field validation check, and clients that read schemas.

use std::hash::{DefaultHasher, Hash, Hasher};

use http::Response;
use serde_json::{Map, Value, json};
use uc_api::Pointer;

use crate::app::{App, Body, Req, json_response};
use crate::error::{ApiError, Result};
use crate::registry::ResourceInfo;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

fn object_meta_schema() -> Value {
    let s = |d: &str| json!({"type": "string", "description": d});
    json!({
        "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
        "type": "object",
        "properties": {
            "name": s("Name must be unique within a namespace."),
            "generateName": s("GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided."),
            "namespace": s("Namespace defines the space within which each name must be unique."),
            "uid": s("UID is the unique in time and space value for this object."),
            "resourceVersion": s("An opaque value that represents the internal version of this object."),
            "generation": {"type": "integer", "format": "int64", "description": "A sequence number representing a specific generation of the desired state."},
            "creationTimestamp": s("CreationTimestamp is a timestamp representing the server time when this object was created."),
            "deletionTimestamp": s("DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted."),
            "labels": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Map of string keys and values that can be used to organize and categorize objects."},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Annotations is an unstructured key value map stored with a resource."},
            "finalizers": {"type": "array", "items": {"type": "string"}, "description": "Must be empty before the object is deleted from the registry."},
            "ownerReferences": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}, "description": "List of objects depended by this object."}
        }
    })
}

fn schema_name(info: &ResourceInfo, version: &str) -> String {
    let reversed: Vec<&str> = info.group.split('.').rev().collect();
    match info.group.as_str() {
        "" => format!("io.k8s.api.core.{version}.{}", info.kind),
        g if !g.contains('.') => format!("io.k8s.api.{g}.{version}.{}", info.kind),
        _ => format!("{}.{version}.{}", reversed.join("."), info.kind),
    }
}

/// A custom resource's schema as its CRD writes it, read from the stored CRD (the registry keeps the
/// parsed schema only, not a second copy of the text).
fn crd_schema(app: &App, info: &ResourceInfo, version: &str) -> Option<Value> {
    let crds = uc_api::GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
    let crd = app.store.get(&crds, &crate::storage::object_key("", info.crd.as_deref()?))?;
    let versions = crd.at("/spec/versions")?.as_array()?;
    let v = versions.iter().find(|v| v.get("name").and_then(Value::as_str) == Some(version))?;
    v.at("/schema/openAPIV3Schema").cloned()
}

fn kind_schema(app: &App, info: &ResourceInfo, version: &str, builtin: Option<&Value>) -> Value {
    let gvk = json!([{"group": info.group, "version": version, "kind": info.kind}]);
    let own = info.version(version).and_then(|v| v.schema.as_ref()).and_then(|_| crd_schema(app, info, version));
    let mut schema = match (own, builtin) {
        (Some(s), _) => s,
        (None, Some(b)) => {
            let mut b = b.clone();
            if let Some(m) = b.as_object_mut() {
                m.insert("x-kubernetes-group-version-kind".into(), gvk);
            }
            return b;
        }
        (None, None) => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                       "description": format!("{} is a built-in kind served by the uc API server.", info.kind)}),
    };
    if let Some(map) = schema.as_object_mut() {
        let props = map.entry("properties").or_insert_with(|| json!({}));
        if let Some(props) = props.as_object_mut() {
            props.insert("apiVersion".into(), json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}));
            props.insert("kind".into(), json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}));
            props.insert("metadata".into(), json!({"allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}], "description": "Standard object's metadata."}));
        }
        map.insert("x-kubernetes-group-version-kind".into(), gvk);
        map.entry("type").or_insert(json!("object"));
    }
    schema
}

fn operation(info: &ResourceInfo, version: &str, verb: &str, schema_ref: &str) -> Value {
    let mut params = vec![json!({"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}})];
    if matches!(verb, "post" | "put" | "patch") {
        params.push(json!({"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}}));
        params
            .push(json!({"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}}));
    }
    let kube_action = match verb {
        "get" => "get",
        "post" => "post",
        "put" => "put",
        "patch" => "patch",
        _ => "delete",
    };
    json!({
        "operationId": format!("{verb}{}", info.kind),
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": schema_ref}}}}},
        "x-kubernetes-action": kube_action,
        "x-kubernetes-group-version-kind": {"group": info.group, "version": version, "kind": info.kind},
    })
}

/// The OpenAPI v3 document of one group/version; with `builtin_schemas`, the built-in kinds'
/// full schemas (kube's, with descriptions) — without, what their hash depends on (they never change).
pub fn gv_document(app: &App, group: &str, version: &str, builtin_schemas: bool) -> Option<Value> {
    let resources: Vec<_> =
        app.registry.all().into_iter().filter(|r| r.group == group && r.version(version).is_some()).collect();
    if resources.is_empty() {
        return None;
    }
    let mut schemas = Map::new();
    schemas.insert(OBJECT_META.into(), object_meta_schema());
    let (builtin, definitions) = if builtin_schemas {
        let kinds: Vec<&str> = resources.iter().filter(|r| r.crd.is_none()).map(|r| r.kind.as_str()).collect();
        crate::builtin_schemas::schemas(group, version, &kinds)
    } else {
        Default::default()
    };
    schemas.extend(definitions);
    let mut paths = Map::new();
    let prefix = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
    for info in &resources {
        let name = schema_name(info, version);
        let schema_ref = format!("#/components/schemas/{name}");
        let b = if info.crd.is_none() { builtin.get(&info.kind) } else { None };
        schemas.insert(name, kind_schema(app, info, version, b));
        let base = if info.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", info.resource)
        } else {
            format!("{prefix}/{}", info.resource)
        };
        paths.insert(base.clone(), json!({"post": operation(info, version, "post", &schema_ref)}));
        paths.insert(
            format!("{base}/{{name}}"),
            json!({
                "get": operation(info, version, "get", &schema_ref),
                "put": operation(info, version, "put", &schema_ref),
                "patch": operation(info, version, "patch", &schema_ref),
                "delete": operation(info, version, "delete", &schema_ref),
            }),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0-uc"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

fn hash_of(v: &Value) -> String {
    let mut h = DefaultHasher::new();
    v.to_string().hash(&mut h);
    format!("{:016X}", h.finish())
}

/// `GET /openapi/v3`: the index of group/version documents.
pub fn v3_index(app: &App) -> Value {
    let mut paths = Map::new();
    for (group, versions) in app.registry.groups() {
        for v in versions {
            let rel = if group.is_empty() { format!("api/{v}") } else { format!("apis/{group}/{v}") };
            if let Some(doc) = gv_document(app, &group, &v, false) {
                paths.insert(
                    rel.clone(),
                    json!({"serverRelativeURL": format!("/openapi/v3/{rel}?hash={}", hash_of(&doc))}),
                );
            }
        }
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/<api/v1 | apis/group/version>`.
pub fn v3_doc(app: &App, rel: &str) -> Result<Response<Body>> {
    let parts: Vec<&str> = rel.split('/').collect();
    let doc = match parts.as_slice() {
        ["api", v] => gv_document(app, "", v, true),
        ["apis", g, v] => gv_document(app, g, v, true),
        _ => None,
    };
    doc.map(|d| json_response(200, &d)).ok_or_else(ApiError::no_route)
}

/// `GET /openapi/v2`: JSON, or protobuf when asked first (kubectl's client-side validation). Built-in
/// kinds are open objects here: kubectl validates them on the server (`fieldValidation`), and a
/// stricter client-side check than kube's own v2 document would refuse what kube accepts.
pub fn v2(app: &App, req: &Req) -> Result<Response<Body>> {
    let doc = v2_document(app);
    if crate::openapi_proto::wanted(&req.accept) {
        let mut r = Response::new(crate::app::full(crate::openapi_proto::document(&doc)));
        r.headers_mut()
            .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(crate::openapi_proto::MEDIA_TYPE));
        return Ok(r);
    }
    Ok(json_response(200, &doc))
}

/// The OpenAPI v2 document (JSON).
pub fn v2_document(app: &App) -> Value {
    let mut definitions = Map::new();
    definitions.insert(OBJECT_META.into(), object_meta_schema());
    for info in app.registry.all() {
        for v in &info.versions {
            let mut s = kind_schema(app, &info, &v.name, None);
            rewrite_refs(&mut s);
            // A kind known without its schema is an open object here: OpenAPI v2 has no
            // `x-kubernetes-preserve-unknown-fields`, and a client validating against the three
            // properties every kind has would refuse all the others.
            if v.schema.is_none()
                && let Some(m) = s.as_object_mut()
            {
                m.remove("properties");
            }
            definitions.insert(schema_name(&info, &v.name), s);
        }
    }
    json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.33.0-uc"}, "paths": {}, "definitions": definitions})
}

fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                *r = r.replace("#/components/schemas/", "#/definitions/");
            }
            for (_, c) in m.iter_mut() {
                rewrite_refs(c);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}
