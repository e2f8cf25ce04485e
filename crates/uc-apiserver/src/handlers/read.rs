//! Reads: get and list (selectors, pagination with continue tokens, list at a resourceVersion, tables).

use base64::Engine;
use http::Response;
use serde_json::{Map, Value, json};

use crate::app::{App, Body, Render, Req, json_response};
use crate::error::{ApiError, Result};
use std::sync::Arc;

use crate::request::{Selectors, Target, include_object, parse_rv, respond_object, served_as_stored, to_version};
use crate::storage::{Kept, Obj, StoreError};
use crate::table;

pub(crate) fn get(app: &App, req: &Req, t: &Target) -> Result<Response<Body>> {
    let kept = app.store.get_kept(&t.info.gr(), &t.key()).ok_or_else(|| ApiError::not_found(&t.subject()))?;
    // Served as stored, the object's JSON is the store's, sent as it is.
    if matches!(req.negotiated.render, Render::Json) && served_as_stored(&t.info, &t.version, kept.api_version()) {
        return Ok(crate::app::bytes_response(200, kept.json(), "application/json"));
    }
    Ok(respond_object(req, t, 200, &kept.tree()))
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    start: String,
}

/// `limit` (0: none) and the `continue` token of a list request.
fn paging(params: &crate::app::Params) -> Result<(usize, Option<ContinueToken>)> {
    let limit: usize = match params.get("limit") {
        Some(l) => l
            .parse::<u64>()
            .ok()
            .and_then(|l| usize::try_from(l).ok())
            .ok_or_else(|| ApiError::bad_request(format!("invalid limit {l:?}: must be a non-negative integer")))?,
        None => 0,
    };
    let token = match params.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => Some(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(c)
                .ok()
                .and_then(|b| serde_json::from_slice::<ContinueToken>(&b).ok())
                .ok_or_else(|| ApiError::bad_request("invalid continue token"))?,
        ),
        None => None,
    };
    Ok((limit, token))
}

/// The revision a list reads at (`None`: the newest), as kube-apiserver chooses it: a continue token's,
/// an `Exact` resourceVersion; a `NotOlderThan` one must not be in the future (504, as kube answers).
fn read_revision(
    token: Option<&ContinueToken>,
    rv: Option<&str>,
    rv_match: Option<&str>,
    current: u64,
) -> Result<Option<u64>> {
    match (token, rv, rv_match) {
        (Some(tok), _, _) => Ok(Some(tok.rv)),
        (None, Some(rv), Some("Exact")) => Ok(Some(parse_rv(rv)?)),
        (None, Some(rv), Some("NotOlderThan") | None) if !rv.is_empty() && rv != "0" => {
            let rv = parse_rv(rv)?;
            if rv > current {
                return Err(ApiError::new(uc_api::Status::failure(
                    504,
                    "Timeout",
                    format!("Too large resource version: {rv}, current: {current}"),
                )));
            }
            Ok(None)
        }
        (None, _, Some(m)) if !matches!(m, "NotOlderThan" | "Exact") => {
            Err(ApiError::bad_request(format!("resourceVersionMatch: Unsupported value: {m:?}")))
        }
        _ => Ok(None),
    }
}

/// One page of a list: the matching objects after `start` (a continue token's key), at most `limit`
/// (0: all); the key to continue after and how many matching objects remain past it.
fn page<'a, T>(
    objects: &'a [(String, T)],
    start: Option<&str>,
    matches: impl Fn(&T) -> bool,
    limit: usize,
) -> (Vec<&'a T>, Option<&'a str>, usize) {
    let mut items = Vec::new();
    let mut next = None;
    let mut remaining = 0usize;
    for (key, obj) in objects.iter().filter(|(k, _)| start.is_none_or(|s| k.as_str() > s)) {
        if !matches(obj) {
            continue;
        }
        if limit > 0 && items.len() >= limit {
            remaining += 1;
            continue;
        }
        items.push(obj);
        if limit > 0 && items.len() == limit {
            next = Some(key.as_str());
        }
    }
    (items, next.filter(|_| remaining > 0), remaining)
}

pub(crate) fn list(app: &App, req: &Req, t: &Target) -> Result<Response<Body>> {
    crate::request::check_list_options(&req.params)?;
    let sel = Selectors::from_req(req)?;
    let (limit, token) = paging(&req.params)?;
    let param = |k: &str| req.params.get(k).map(String::as_str);
    let at =
        read_revision(token.as_ref(), param("resourceVersion"), param("resourceVersionMatch"), app.store.revision())?;
    let (objects, rv) = app.store.list_kept(&t.info.gr(), t.namespace.as_deref(), at).map_err(|e| match (e, &token) {
        (StoreError::Gone { .. }, Some(_)) => ApiError::gone(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        ),
        (e, _) => ApiError::from_store(e, &t.subject()),
    })?;
    let start = token.as_ref().map(|t| t.start.as_str());
    let (items, next, remaining) = page(&objects, start, |o| sel.matches_kept(o), limit);
    let mut meta = Map::new();
    meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    if let Some(k) = next {
        let tok = serde_json::to_vec(&ContinueToken { rv, start: k.to_string() }).unwrap_or_default();
        meta.insert("continue".into(), Value::String(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tok)));
        if !req.params.contains_key("labelSelector") && !req.params.contains_key("fieldSelector") {
            meta.insert("remainingItemCount".into(), Value::from(remaining));
        }
    }
    Ok(list_response(req, t, &items, &meta))
}

/// A list in the form the client negotiated: a Table, PartialObjectMetadata, or the kind's list. The
/// items served as stored are written as the JSON the store keeps; the others from a tree decoded for
/// the purpose.
fn list_response(req: &Req, t: &Target, items: &[&Arc<Kept>], meta: &Map<String, Value>) -> Response<Body> {
    let as_stored = |k: &Kept| served_as_stored(&t.info, &t.version, k.api_version());
    match req.negotiated.render {
        Render::Table => {
            let include = include_object(req);
            let rows: Vec<Value> = items
                .iter()
                .map(|o| table::row(&t.info, &t.version, &to_version(&t.info, &t.version, &o.tree()), include))
                .collect();
            let table = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                   "columnDefinitions": table::column_definitions(&t.info, &t.version), "rows": rows});
            json_response(200, &crate::app::KubeOrder(&table))
        }
        Render::Metadata => {
            let body = list_body("PartialObjectMetadataList", "meta.k8s.io/v1", meta, items, |out, kept| {
                crate::request::write_partial_metadata(out, kept.metadata_json().as_deref());
            });
            crate::app::bytes_response(200, body, "application/json")
        }
        Render::Json => {
            let body = list_body(&t.info.list_kind, &t.info.api_version(&t.version), meta, items, |out, kept| {
                if as_stored(kept) {
                    kept.write_json(out);
                } else {
                    write_json(out, &crate::app::KubeOrder(&to_version(&t.info, &t.version, &kept.tree())));
                }
            });
            crate::app::bytes_response(200, body, "application/json")
        }
    }
}

/// The list of `objects` (already at the target's version), as [`list_body`] writes it.
pub(crate) fn objects_response(t: &Target, objects: &[Obj], meta: &Map<String, Value>) -> Response<Body> {
    let api_version = t.info.api_version(&t.version);
    let body = list_body(&t.info.list_kind, &api_version, meta, objects, |out, o| {
        write_json(out, &crate::app::KubeOrder(o));
    });
    crate::app::bytes_response(200, body, "application/json")
}

/// Appends `v` as JSON.
fn write_json(out: &mut Vec<u8>, v: &impl serde::Serialize) {
    // Writing to a vector fails only for a value serde_json cannot write, which none of these is.
    let _ = serde_json::to_writer(out, v);
}

/// A list as kube-apiserver writes it (`kind`, `apiVersion`, `metadata`, `items`), each item appended
/// where it lies by `item`: copying the items into one tree first cost a deep copy of every object
/// listed (a list of 100,000 objects, as an informer's first one, held them all twice; issue 58).
fn list_body<T>(
    kind: &str,
    api_version: &str,
    meta: &Map<String, Value>,
    items: &[T],
    mut item: impl FnMut(&mut Vec<u8>, &T),
) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"kind\":");
    write_json(&mut out, &kind);
    out.extend_from_slice(b",\"apiVersion\":");
    write_json(&mut out, &api_version);
    out.extend_from_slice(b",\"metadata\":");
    write_json(&mut out, meta);
    out.extend_from_slice(b",\"items\":[");
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        item(&mut out, it);
    }
    out.extend_from_slice(b"]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(names: &[&str]) -> Vec<(String, Obj)> {
        names.iter().map(|n| (format!("ns/{n}"), Arc::new(json!({"metadata": {"name": n}})))).collect()
    }

    fn names(items: &[&Obj]) -> Vec<String> {
        items.iter().map(|o| o["metadata"]["name"].as_str().unwrap_or_default().to_string()).collect()
    }

    #[test]
    fn a_list_is_written_from_its_items_as_the_tree_of_it_would_be() {
        let objects: Vec<Obj> = vec![
            Arc::new(
                json!({"metadata": {"name": "a", "managedFields": [{"manager": "m", "fieldsV1": "{\"f:data\":{}}"}]},
                            "data": {"k": "v"}, "kind": "ConfigMap", "apiVersion": "v1"}),
            ),
            Arc::new(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}})),
        ];
        let kept: Vec<Arc<Kept>> = objects.iter().map(|o| Arc::new(Kept::cold(o))).collect();
        let meta: Map<String, Value> = [("resourceVersion".to_string(), json!("7"))].into_iter().collect();
        let mut first = (*objects[0]).clone();
        crate::wire::expand(&mut first);
        let tree =
            json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": [first, *objects[1]]});
        let from_trees = list_body("ConfigMapList", "v1", &meta, &objects, |out, o| {
            write_json(out, &crate::app::KubeOrder(o));
        });
        let from_json = list_body("ConfigMapList", "v1", &meta, &kept, |out, k| k.write_json(out));
        assert_eq!(serde_json::from_slice::<Value>(&from_trees).unwrap(), tree);
        assert_eq!(from_json, from_trees, "the kept JSON is the bytes a tree writes");
        let empty = list_body("ConfigMapList", "v1", &meta, &[] as &[Obj], |_, _| {});
        assert_eq!(serde_json::from_slice::<Value>(&empty).unwrap()["items"], json!([]));
    }

    #[test]
    fn pages_continue_after_the_last_key_and_count_what_remains() {
        let all = objects(&["a", "b", "c", "d", "e"]);
        let (items, next, remaining) = page(&all, None, |_| true, 2);
        assert_eq!((names(&items), next, remaining), (vec!["a".into(), "b".into()], Some("ns/b"), 3));
        let (items, next, remaining) = page(&all, next, |_| true, 2);
        assert_eq!((names(&items), next, remaining), (vec!["c".into(), "d".into()], Some("ns/d"), 1));
        // The last page, exactly full, has no continue token.
        let (items, next, _) = page(&all, Some("ns/c"), |_| true, 2);
        assert_eq!((names(&items), next), (vec!["d".into(), "e".into()], None));
        // A selector filters before the limit counts.
        let (items, _, remaining) = page(&all, None, |o| o["metadata"]["name"] != "b", 2);
        assert_eq!((names(&items), remaining), (vec!["a".into(), "c".into()], 2));
        assert_eq!(page(&all, None, |_| true, 0).0.len(), 5);
    }

    #[test]
    fn the_revision_read_follows_the_token_and_the_match_rule() {
        let tok = ContinueToken { rv: 5, start: "k".into() };
        assert_eq!(read_revision(Some(&tok), Some("9"), Some("Exact"), 10).unwrap(), Some(5));
        assert_eq!(read_revision(None, Some("7"), Some("Exact"), 10).unwrap(), Some(7));
        assert_eq!(read_revision(None, Some("7"), None, 10).unwrap(), None);
        assert_eq!(read_revision(None, Some("0"), None, 10).unwrap(), None);
        assert_eq!(read_revision(None, Some("11"), Some("NotOlderThan"), 10).unwrap_err().code(), 504);
        assert_eq!(read_revision(None, Some("1"), Some("Newest"), 10).unwrap_err().code(), 400);
    }

    #[test]
    fn limits_and_tokens_are_checked() {
        let params = |kv: &[(&str, &str)]| kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        assert_eq!(paging(&params(&[])).unwrap().0, 0);
        assert_eq!(paging(&params(&[("limit", "3")])).unwrap().0, 3);
        assert_eq!(paging(&params(&[("limit", "-1")])).unwrap_err().code(), 400);
        assert_eq!(paging(&params(&[("continue", "not a token")])).unwrap_err().code(), 400);
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"rv":4,"start":"ns/x"}"#);
        let (_, tok) = paging(&params(&[("continue", &token)])).unwrap();
        assert_eq!(tok.map(|t| (t.rv, t.start)), Some((4, "ns/x".to_string())));
    }
}
