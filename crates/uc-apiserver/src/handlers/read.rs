//! Reads: get and list (selectors, pagination with continue tokens, list at a resourceVersion, tables).

use base64::Engine;
use http::Response;
use serde_json::{Map, Value, json};

use crate::app::{App, Body, Render, Req, json_response};
use crate::error::{ApiError, Result};
use crate::request::{Selectors, Target, include_object, parse_rv, respond_stored, to_version};
use crate::storage::{Obj, StoreError};
use crate::table;

pub(crate) fn get(app: &App, req: &Req, t: &Target) -> Result<Response<Body>> {
    let obj = app.store.get(&t.info.gr(), &t.key()).ok_or_else(|| ApiError::not_found(&t.subject()))?;
    Ok(respond_stored(&app.store, req, t, 200, &obj))
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    start: String,
}

pub(crate) fn list(app: &App, req: &Req, t: &Target) -> Result<Response<Body>> {
    crate::request::check_list_options(&req.params)?;
    let sel = Selectors::from_req(req)?;
    let limit: usize = match req.params.get("limit") {
        Some(l) => l
            .parse::<u64>()
            .ok()
            .and_then(|l| usize::try_from(l).ok())
            .ok_or_else(|| ApiError::bad_request(format!("invalid limit {l:?}: must be a non-negative integer")))?,
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
    Ok(json_response(200, &crate::app::KubeOrder(&body)))
}
