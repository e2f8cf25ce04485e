//! PATCH bodies: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch for the
//! built-in kinds, with the merge keys and `$patch`/`$setElementOrder`/`$retainKeys`/
//! `$deleteFromPrimitiveList` directives kubectl sends.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

/// Patch errors (answered as 400 or 422 by the caller).
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// The patch body is not valid for its type.
    #[error("the patch is malformed: {0}")]
    Malformed(String),
    /// A JSON patch operation failed (e.g. `test` or a missing path).
    #[error("the patch could not be applied: {0}")]
    Failed(String),
    /// The patch, or what it makes, is more than the server keeps (413).
    #[error("{0}")]
    TooLarge(String),
}

/// Applies an RFC 6902 JSON patch, as kube-apiserver does: at most 10,000 operations, and copies
/// adding up to at most an object's size; an operation that would nest the object deeper than the store
/// keeps stops the patch before anything walks it recursively.
pub fn json_patch(target: &mut Value, patch: &[u8]) -> Result<(), PatchError> {
    use crate::limits::{MAX_DEPTH, MAX_JSON_PATCH_OPERATIONS, MAX_OBJECT_BYTES, measure};
    use json_patch::PatchOperation as Op;
    let p: json_patch::Patch = serde_json::from_slice(patch).map_err(|e| PatchError::Malformed(e.to_string()))?;
    if p.0.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            p.0.len()
        )));
    }
    let too_deep = |depth: usize| {
        PatchError::Failed(format!("the object would nest {depth} levels deep; at most {MAX_DEPTH} can be stored"))
    };
    // An upper bound of the object's depth, made exact when it passes the limit.
    let mut depth = measure(target).0;
    let mut copied = 0usize;
    for op in p.0 {
        let bound = match &op {
            Op::Add(a) => depth.max(a.path.count() + measure(&a.value).0),
            Op::Replace(r) => depth.max(r.path.count() + measure(&r.value).0),
            Op::Move(m) => depth + m.path.count().saturating_sub(m.from.count()),
            Op::Copy(c) => {
                let from = target.pointer(c.from.as_str()).map(measure).unwrap_or_default();
                copied += from.1;
                if copied > MAX_OBJECT_BYTES {
                    return Err(PatchError::TooLarge(format!(
                        "the copies of a JSON patch add up to more than {MAX_OBJECT_BYTES} bytes"
                    )));
                }
                depth.max(c.path.count() + from.0)
            }
            Op::Remove(_) | Op::Test(_) => depth,
        };
        if bound > MAX_DEPTH && !matches!(op, Op::Move(_)) {
            return Err(too_deep(bound));
        }
        json_patch::patch(target, &[op]).map_err(|e| PatchError::Failed(e.to_string()))?;
        depth = if bound > MAX_DEPTH { measure(target).0 } else { bound };
        if depth > MAX_DEPTH {
            crate::limits::drop_deep(std::mem::take(target));
            return Err(too_deep(depth));
        }
    }
    Ok(())
}

/// Applies an RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &[u8]) -> Result<(), PatchError> {
    let p: Value = serde_json::from_slice(patch).map_err(|e| PatchError::Malformed(e.to_string()))?;
    if !p.is_object() {
        return Err(PatchError::Malformed("a merge patch must be a JSON object".into()));
    }
    json_patch::merge(target, &p);
    Ok(())
}

/// Applies a strategic merge patch to a built-in object.
pub fn strategic_merge_patch(target: &mut Value, patch: &[u8]) -> Result<(), PatchError> {
    let p: Value = serde_json::from_slice(patch).map_err(|e| PatchError::Malformed(e.to_string()))?;
    let Value::Object(p) = p else {
        return Err(PatchError::Malformed("a strategic merge patch must be a JSON object".into()));
    };
    let mut path = Vec::new();
    merge_map(target, &p, &mut path)
}

/// How a list field merges.
#[derive(Debug, PartialEq)]
pub(crate) enum ListStrategy {
    /// Objects merged by this key.
    Key(&'static str),
    /// Primitives merged as a set.
    Primitives,
    /// The patch's list replaces the original.
    Replace,
}

pub(crate) fn list_strategy<S: AsRef<str>>(path: &[S]) -> ListStrategy {
    let last = path.last().map(AsRef::as_ref).unwrap_or_default();
    let in_container =
        path.iter().any(|p| matches!(p.as_ref(), "containers" | "initContainers" | "ephemeralContainers"));
    match last {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "resourceClaims"
        | "schedulingGates" => ListStrategy::Key("name"),
        "volumeMounts" => ListStrategy::Key("mountPath"),
        "volumeDevices" => ListStrategy::Key("devicePath"),
        "ports" if in_container => ListStrategy::Key("containerPort"),
        "ports" => ListStrategy::Key("port"),
        "hostAliases" => ListStrategy::Key("ip"),
        "ownerReferences" => ListStrategy::Key("uid"),
        "webhooks" if path.len() == 1 => ListStrategy::Key("name"),
        "conditions" => ListStrategy::Key("type"),
        "topologySpreadConstraints" => ListStrategy::Key("topologyKey"),
        "addresses" if path.first().is_some_and(|p| p.as_ref() == "status") => ListStrategy::Key("type"),
        "finalizers" if path.len() == 2 && path[0].as_ref() == "metadata" => ListStrategy::Primitives,
        _ => ListStrategy::Replace,
    }
}

/// A map's own `$patch` directive: `Ok(true)` when it decided the whole map (replace, delete).
fn map_directive(target: &mut Value, patch: &Map<String, Value>) -> Result<bool, PatchError> {
    match patch.get("$patch").and_then(Value::as_str) {
        None | Some("merge") => Ok(false),
        Some("replace") => {
            *target = strip_directives(&Value::Object(patch.clone()));
            Ok(true)
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            Ok(true)
        }
        Some(other) => Err(PatchError::Malformed(format!("unknown $patch directive {other:?}"))),
    }
}

/// The directives applied after a map's fields: `$retainKeys`, then each `$setElementOrder`.
fn retain_and_order(
    target: &mut Value,
    patch: &Map<String, Value>,
    orders: Vec<(String, Vec<Value>)>,
    path: &mut Vec<String>,
) {
    if let Some(retain) = patch.get("$retainKeys").and_then(Value::as_array)
        && let Some(t) = target.as_object_mut()
    {
        let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
        t.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (field, order) in orders {
        path.push(field.clone());
        let strategy = list_strategy(path);
        path.pop();
        if let Some(Value::Array(items)) = target.get_mut(&field) {
            reorder(items, &order, &strategy);
        }
    }
}

fn merge_map(target: &mut Value, patch: &Map<String, Value>, path: &mut Vec<String>) -> Result<(), PatchError> {
    if map_directive(target, patch)? {
        return Ok(());
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let mut orders: Vec<(String, Vec<Value>)> = Vec::new();
    for (k, pv) in patch {
        if let Some(field) = k.strip_prefix("$setElementOrder/") {
            if let Some(order) = pv.as_array() {
                orders.push((field.to_string(), order.clone()));
            }
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let remove: HashSet<String> = pv.as_array().into_iter().flatten().map(Value::to_string).collect();
            if let Some(Value::Array(items)) = target.get_mut(field) {
                items.retain(|i| !remove.contains(&i.to_string()));
            }
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        let Some(t) = target.as_object_mut() else {
            break;
        };
        match pv {
            Value::Null => {
                t.remove(k);
            }
            Value::Object(po) => {
                if po.get("$patch").and_then(Value::as_str) == Some("delete") {
                    t.remove(k);
                    continue;
                }
                path.push(k.clone());
                let child = t.entry(k.clone()).or_insert(Value::Null);
                merge_map(child, po, path)?;
                path.pop();
            }
            Value::Array(pa) => {
                path.push(k.clone());
                let strategy = list_strategy(path);
                let child = t.entry(k.clone()).or_insert(Value::Null);
                merge_list(child, pa, &strategy, path)?;
                path.pop();
            }
            other => {
                t.insert(k.clone(), other.clone());
            }
        }
    }
    retain_and_order(target, patch, orders, path);
    Ok(())
}

fn merge_list(
    target: &mut Value,
    patch: &[Value],
    strategy: &ListStrategy,
    path: &mut Vec<String>,
) -> Result<(), PatchError> {
    if patch.iter().any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace")) {
        *target = Value::Array(patch.iter().filter(|i| i.get("$patch").is_none()).map(strip_directives).collect());
        return Ok(());
    }
    match strategy {
        ListStrategy::Replace => {
            *target = Value::Array(patch.iter().map(strip_directives).collect());
        }
        ListStrategy::Primitives => {
            if !target.is_array() {
                *target = Value::Array(Vec::new());
            }
            if let Value::Array(items) = target {
                // Looked up by their JSON: a long list is not scanned for every item of the patch.
                let mut present: HashSet<String> = items.iter().map(Value::to_string).collect();
                for p in patch {
                    if present.insert(p.to_string()) {
                        items.push(p.clone());
                    }
                }
            }
        }
        ListStrategy::Key(key) => {
            if !target.is_array() {
                *target = Value::Array(Vec::new());
            }
            let Value::Array(items) = target else {
                return Ok(());
            };
            // Where each merge key's item is (the first of any that share one).
            let positions = |items: &[Value]| {
                let mut at = HashMap::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    at.entry(item.get(*key).map(Value::to_string)).or_insert(i);
                }
                at
            };
            let mut at = positions(items);
            for p in patch {
                let Some(po) = p.as_object() else {
                    return Err(PatchError::Malformed(format!(
                        "{}: items must be objects merged by {key:?}",
                        path.join(".")
                    )));
                };
                let Some(kv) = po.get(*key) else {
                    return Err(PatchError::Malformed(format!(
                        "{}: an item lacks the merge key {key:?}",
                        path.join(".")
                    )));
                };
                let id = Some(kv.to_string());
                if po.get("$patch").and_then(Value::as_str) == Some("delete") {
                    if at.contains_key(&id) {
                        items.retain(|i| i.get(*key) != Some(kv));
                        at = positions(items);
                    }
                    continue;
                }
                match at.get(&id) {
                    Some(&i) => merge_map(&mut items[i], po, path)?,
                    None => {
                        at.insert(id, items.len());
                        items.push(strip_directives(p));
                    }
                }
            }
        }
    }
    Ok(())
}

fn reorder(items: &mut Vec<Value>, order: &[Value], strategy: &ListStrategy) {
    // An item's identity, as JSON text: its merge key's value, or the item itself.
    let ident = |v: &Value| -> String {
        match strategy {
            ListStrategy::Key(k) => v.get(*k).unwrap_or(&Value::Null).to_string(),
            _ => v.to_string(),
        }
    };
    let mut rank_of = HashMap::with_capacity(order.len());
    for (i, o) in order.iter().enumerate() {
        rank_of.entry(if o.is_object() { ident(o) } else { o.to_string() }).or_insert(i);
    }
    // Each item ranked once; items the order does not name keep their order, after the others.
    let mut ranked: Vec<(usize, Value)> = std::mem::take(items)
        .into_iter()
        .map(|v| (rank_of.get(&ident(&v)).copied().unwrap_or(usize::MAX), v))
        .collect();
    ranked.sort_by_key(|(rank, _)| *rank);
    *items = ranked.into_iter().map(|(_, v)| v).collect();
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter().filter(|(k, _)| !k.starts_with('$')).map(|(k, v)| (k.clone(), strip_directives(v))).collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smp(mut target: Value, patch: Value) -> Value {
        strategic_merge_patch(&mut target, patch.to_string().as_bytes()).unwrap();
        target
    }

    #[test]
    fn merges_containers_and_env_by_name() {
        let dep = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}], "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "b:1", "args": ["x", "y"]}
        ]}}}});
        let out = smp(
            dep,
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "a", "image": "a:2", "env": [{"name": "Y", "value": "2"}], "ports": [{"containerPort": 81}]},
                {"name": "b", "args": ["z"]}
            ]}}}}),
        );
        assert_eq!(
            out,
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "a", "image": "a:2", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
                 "ports": [{"containerPort": 80}, {"containerPort": 81}]},
                {"name": "b", "image": "b:1", "args": ["z"]}
            ]}}}})
        );
    }

    #[test]
    fn directives_delete_replace_order_and_retain() {
        let obj = json!({"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}], "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        let out = smp(
            obj,
            json!({
                "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["c"], "labels": {"y": null}},
                "spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
                         "containers": [{"name": "b", "$patch": "delete"}],
                         "strategy": {"$retainKeys": ["type"], "type": "Recreate"}}
            }),
        );
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["b", "c"], "labels": {"x": "1"}},
            "spec": {"containers": [{"name": "c"}, {"name": "a"}], "strategy": {"type": "Recreate"}}})
        );
        let replaced = smp(
            json!({"spec": {"volumes": [{"name": "a"}]}}),
            json!({"spec": {"volumes": [{"$patch": "replace"}, {"name": "z"}]}}),
        );
        assert_eq!(replaced, json!({"spec": {"volumes": [{"name": "z"}]}}));
    }

    #[test]
    fn items_are_found_by_key_through_deletes_additions_and_orders() {
        let env = |names: &[&str]| -> Value { names.iter().map(|n| json!({"name": n, "value": "0"})).collect() };
        let obj = json!({"metadata": {"finalizers": ["a", "b", "a"]},
                         "spec": {"containers": [{"name": "c", "env": env(&["A", "B", "C", "D"])}]}});
        let out = smp(
            obj,
            json!({"metadata": {"finalizers": ["b", "c", "c"]},
                   "spec": {"containers": [{"name": "c",
                       "$setElementOrder/env": [{"name": "E"}, {"name": "D"}, {"name": "B"}],
                       "env": [{"name": "B", "$patch": "delete"}, {"name": "D", "value": "4"}, {"name": "E", "value": "5"},
                               {"name": "B", "value": "again"}, {"name": "E", "value": "6"}]}]}}),
        );
        // B deleted then added again goes last among those the order names; A and C, unnamed, keep
        // their order after them; E given twice is merged once it exists.
        assert_eq!(
            out["spec"]["containers"][0]["env"],
            json!([{"name": "E", "value": "6"}, {"name": "D", "value": "4"}, {"name": "B", "value": "again"},
                   {"name": "A", "value": "0"}, {"name": "C", "value": "0"}])
        );
        assert_eq!(
            out["metadata"]["finalizers"],
            json!(["a", "b", "a", "c"]),
            "present ones and repeats are not added"
        );
    }

    #[test]
    fn service_ports_merge_by_port_and_unknown_lists_replace() {
        let out = smp(
            json!({"spec": {"ports": [{"port": 80, "name": "http"}], "externalIPs": ["1.1.1.1"]}}),
            json!({"spec": {"ports": [{"port": 443}], "externalIPs": ["2.2.2.2"]}}),
        );
        assert_eq!(
            out,
            json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443}], "externalIPs": ["2.2.2.2"]}})
        );
    }

    #[test]
    fn malformed_patches_are_errors() {
        let mut v = json!({});
        assert!(strategic_merge_patch(&mut v, b"[1]").is_err());
        assert!(merge_patch(&mut v, b"{").is_err());
        assert!(json_patch(&mut v, br#"[{"op": "test", "path": "/a", "value": 1}]"#).is_err());
        assert!(strategic_merge_patch(&mut json!({}), br#"{"spec": {"containers": [{"image": "x"}]}}"#).is_err());
    }

    #[test]
    fn webhook_configurations_merge_their_webhooks_by_name() {
        assert_eq!(list_strategy(&["webhooks".to_string()]), ListStrategy::Key("name"));
        assert_eq!(list_strategy(&["spec".to_string(), "webhooks".to_string()]), ListStrategy::Replace);
        let mut c = json!({"webhooks": [{"name": "a.x.io", "failurePolicy": "Fail", "sideEffects": "None"}]});
        strategic_merge_patch(&mut c, br#"{"webhooks": [{"name": "a.x.io", "failurePolicy": "Ignore"}]}"#).unwrap();
        assert_eq!(c, json!({"webhooks": [{"name": "a.x.io", "failurePolicy": "Ignore", "sideEffects": "None"}]}));
    }

    #[test]
    fn a_json_patch_cannot_outgrow_what_the_store_keeps() {
        use serde_json::json;
        let ops = |ops: Vec<Value>| serde_json::to_vec(&ops).unwrap();
        let mut doc = json!({"data": {}});
        let many: Vec<Value> =
            (0..10_001).map(|i| json!({"op": "add", "path": format!("/data/k{i}"), "value": "v"})).collect();
        let e = json_patch(&mut doc, &ops(many)).unwrap_err();
        assert_eq!(e.to_string(), "The allowed maximum operations in a JSON patch is 10000, got 10001");
        // Doubling by copies stops before the copies outgrow an object.
        let mut doc = json!({"a": "x".repeat(100_000)});
        let mut doubling = vec![json!({"op": "copy", "from": "/a", "path": "/b"})];
        for i in 0..40 {
            doubling.push(json!({"op": "copy", "from": "", "path": format!("/c{i}")}));
        }
        assert!(matches!(json_patch(&mut doc, &ops(doubling)), Err(PatchError::TooLarge(_))));
        // Nesting deeper with each copy of the object into itself stops at the limit.
        let mut doc = json!({"a": {}});
        let deeper: Vec<Value> = (0..200).map(|_| json!({"op": "copy", "from": "", "path": "/a/n"})).collect();
        let e = json_patch(&mut doc, &ops(deeper)).unwrap_err();
        assert!(e.to_string().contains("levels deep"), "{e}");
        // An ordinary patch applies.
        let mut doc = json!({"data": {"a": "1"}});
        json_patch(&mut doc, &ops(vec![json!({"op": "replace", "path": "/data/a", "value": "2"})])).unwrap();
        assert_eq!(doc, json!({"data": {"a": "2"}}));
    }

    /// A random JSON value of small depth from a seeded generator (xorshift), keys from a small set so
    /// that patches and targets overlap.
    fn next(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    fn random_value(seed: &mut u64, depth: u32) -> Value {
        match next(seed) % if depth == 0 { 4 } else { 6 } {
            0 => Value::Null,
            1 => Value::from(next(seed) % 5),
            2 => Value::from(["a", "b", ""][(next(seed) % 3) as usize]),
            3 => Value::Bool(next(seed).is_multiple_of(2)),
            4 => Value::Array((0..next(seed) % 3).map(|_| random_value(seed, depth - 1)).collect()),
            _ => {
                let mut map = Map::new();
                for _ in 0..next(seed) % 4 {
                    let key = ["x", "y", "z", "$patch"][(next(seed) % 4) as usize].to_string();
                    map.insert(key, random_value(seed, depth - 1));
                }
                Value::Object(map)
            }
        }
    }

    #[test]
    fn merge_patches_are_idempotent_and_no_patch_panics() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let target = serde_json::json!({"x": random_value(&mut seed, 3), "y": random_value(&mut seed, 3)});
            // A merge patch is an object; every third body is anything at all.
            let patch = match next(&mut seed) % 3 {
                0 => random_value(&mut seed, 3),
                _ => serde_json::json!({"x": random_value(&mut seed, 3), "z": random_value(&mut seed, 2)}),
            };
            let body = serde_json::to_vec(&patch).unwrap();
            let mut once = target.clone();
            if merge_patch(&mut once, &body).is_ok() {
                let mut twice = once.clone();
                merge_patch(&mut twice, &body).unwrap();
                assert_eq!(once, twice, "merge patch {patch} applied twice to {target}");
            }
            // Whatever the body, the other patch types answer (an error or a result), never panic.
            let mut t = target.clone();
            let _ = strategic_merge_patch(&mut t, &body);
            let mut t = target.clone();
            let _ = json_patch(&mut t, &body);
        }
    }
}
