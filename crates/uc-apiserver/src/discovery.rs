//! Discovery: `/api`, `/apis`, `/apis/<group>[/<version>]`, the aggregated (apidiscovery.k8s.io)
//! forms kubectl and kube-rs ask for, and `/version`.

use http::Response;
use serde_json::{Value, json};

use crate::app::{App, Body, Req, json_response, json_response_typed};
use crate::error::{ApiError, Result};
use crate::registry::ResourceInfo;

/// The version this server reports.
pub fn version() -> Value {
    json!({
        "major": "1", "minor": "33", "gitVersion": "v1.33.0-uc", "gitCommit": env!("CARGO_PKG_VERSION"),
        "gitTreeState": "clean", "buildDate": "2026-11-22T00:00:00Z", "goVersion": "rust",
        "compiler": "rustc", "platform": "linux/amd64"
    })
}

/// `GET /`: the served root paths.
pub fn root_paths() -> Value {
    json!({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v2", "/openapi/v3", "/readyz", "/version"]})
}

fn verbs(info: &ResourceInfo) -> Vec<&'static str> {
    if info.review || info.is_legacy_binding() {
        return vec!["create"];
    }
    if info.is_component_status() {
        return vec!["get", "list"];
    }
    vec!["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
        .into_iter()
        .filter(|_| !info.resource.is_empty())
        .collect()
}

fn subresources(info: &ResourceInfo, version: &str) -> Vec<(String, String, String, Vec<&'static str>)> {
    let mut subs = Vec::new();
    if let Some(v) = info.version(version) {
        if v.status {
            subs.push(("status".into(), info.group.clone(), info.kind.clone(), vec!["get", "patch", "update"]));
        }
        if v.scale.is_some() {
            subs.push(("scale".into(), "autoscaling".into(), "Scale".into(), vec!["get", "patch", "update"]));
        }
    }
    if info.log {
        subs.push(("log".into(), String::new(), "Pod".into(), vec!["get"]));
    }
    if info.resource == "namespaces" {
        subs.push(("finalize".into(), String::new(), "Namespace".into(), vec!["update"]));
    }
    if info.group.is_empty() && info.resource == "pods" {
        subs.push(("binding".into(), String::new(), "Binding".into(), vec!["create"]));
        subs.push(("eviction".into(), "policy".into(), "Eviction".into(), vec!["create"]));
        subs.push(("ephemeralcontainers".into(), String::new(), "Pod".into(), vec!["get", "patch", "update"]));
    }
    if info.resource == "certificatesigningrequests" {
        subs.push(("approval".into(), info.group.clone(), info.kind.clone(), vec!["get", "patch", "update"]));
    }
    if info.group.is_empty() && info.resource == "serviceaccounts" {
        subs.push(("token".into(), "authentication.k8s.io".into(), "TokenRequest".into(), vec!["create"]));
    }
    subs
}

/// `GET /api/v1`, `GET /apis/<group>/<version>`: an APIResourceList.
pub fn resource_list(app: &App, group: &str, version: &str) -> Result<Response<Body>> {
    let mut resources = Vec::new();
    for info in app.registry.all().into_iter().filter(|r| r.group == group && r.version(version).is_some()) {
        resources.push(json!({
            "name": info.resource, "singularName": info.singular, "namespaced": info.namespaced,
            "kind": info.kind, "verbs": verbs(&info), "shortNames": info.short_names, "categories": info.categories,
            "storageVersionHash": "",
        }));
        for (sub, g, kind, vs) in subresources(&info, version) {
            let mut r = json!({"name": format!("{}/{}", info.resource, sub), "singularName": "", "namespaced": info.namespaced, "kind": kind, "verbs": vs});
            if !g.is_empty() && g != info.group {
                r["group"] = json!(g);
                r["version"] = json!("v1");
            }
            resources.push(r);
        }
    }
    if resources.is_empty() {
        return Err(ApiError::no_route());
    }
    Ok(json_response(
        200,
        &json!({
            "kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": uc_api::resource::api_version(group, version), "resources": resources
        }),
    ))
}

fn group_object(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> =
        versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
    json!({"name": group, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

/// `GET /apis/<group>`.
pub fn group(app: &App, group: &str) -> Result<Response<Body>> {
    let groups = app.registry.groups();
    let (_, versions) = groups.iter().find(|(g, _)| g == group).ok_or_else(ApiError::no_route)?;
    let mut g = group_object(group, versions);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Ok(json_response(200, &g))
}

fn aggregated(app: &App, legacy: bool, version: &str) -> Response<Body> {
    let mut items = Vec::new();
    for (group, versions) in app.registry.groups() {
        if legacy != group.is_empty() {
            continue;
        }
        let mut vitems = Vec::new();
        for v in &versions {
            let mut resources = Vec::new();
            for info in app.registry.all().into_iter().filter(|r| r.group == group && r.version(v).is_some()) {
                let subs: Vec<Value> = subresources(&info, v)
                    .into_iter()
                    .map(|(sub, g, kind, vs)| {
                        let gv_version = if g == info.group { v.clone() } else { "v1".into() };
                        json!({"subresource": sub, "responseKind": {"group": g, "version": gv_version, "kind": kind}, "verbs": vs})
                    })
                    .collect();
                resources.push(json!({
                    "resource": info.resource,
                    "responseKind": {"group": info.group, "version": v, "kind": info.kind},
                    "scope": if info.namespaced { "Namespaced" } else { "Cluster" },
                    "singularResource": info.singular,
                    "verbs": verbs(&info),
                    "shortNames": info.short_names,
                    "categories": info.categories,
                    "subresources": subs,
                }));
            }
            vitems.push(json!({"version": v, "resources": resources, "freshness": "Current"}));
        }
        items.push(json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": vitems}));
    }
    let body = json!({"kind": "APIGroupDiscoveryList", "apiVersion": format!("apidiscovery.k8s.io/{version}"), "metadata": {}, "items": items});
    json_response_typed(
        200,
        &body,
        &format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"),
    )
}

/// `GET /api`.
pub fn api(app: &App, req: &Req) -> Response<Body> {
    if let Some(v) = req.negotiated.aggregated_discovery {
        return aggregated(app, true, v);
    }
    json_response(
        200,
        &json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
    )
}

/// `GET /apis`.
pub fn apis(app: &App, req: &Req) -> Response<Body> {
    if let Some(v) = req.negotiated.aggregated_discovery {
        return aggregated(app, false, v);
    }
    let groups: Vec<Value> =
        app.registry.groups().into_iter().filter(|(g, _)| !g.is_empty()).map(|(g, vs)| group_object(&g, &vs)).collect();
    json_response(200, &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}
