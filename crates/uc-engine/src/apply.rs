//! Client-side apply, like `kubectl apply`: a three-way merge of the observed object, the last
//! configuration uc applied (kept in an annotation) and the newly desired one. Only fields the hook set
//! are uc's: fields others set (defaults, other controllers, status) survive; a field uc set before and
//! no longer wants is removed.
//!
//! Lists of objects merge item by item when all items share one of the keys Metacontroller uses
//! (`containerPort`, `port`, `mountPath`, `name`, `uid`, `ip`, `path`); other lists are replaced.

use serde_json::{Map, Value};
use uc_api::Pointer;

/// Annotation holding the last configuration uc applied.
pub const LAST_APPLIED: &str = "universalcontroller.njuics.cn/last-applied-configuration";

const LIST_MAP_KEYS: &[&str] = &["containerPort", "port", "mountPath", "name", "uid", "ip", "path"];

/// Strips what a desired object may not set: status and server-owned metadata.
pub fn sanitize_desired(desired: &Value) -> Value {
    sanitize_desired_owned(desired.clone())
}

/// [`sanitize_desired`] of a desired object no longer needed otherwise.
pub fn sanitize_desired_owned(mut d: Value) -> Value {
    if let Some(m) = d.as_object_mut() {
        m.remove("status");
    }
    if let Some(meta) = d.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "generation",
            "managedFields",
            "deletionTimestamp",
            "selfLink",
        ] {
            meta.remove(f);
        }
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove(LAST_APPLIED);
        }
    }
    d
}

/// The last applied configuration recorded on an observed object.
pub fn last_applied(observed: &Value) -> Option<Value> {
    let text = observed.at("/metadata/annotations")?.get(LAST_APPLIED)?.as_str()?;
    serde_json::from_str(text).ok()
}

/// The object to write so that `observed` carries `desired`: the merge plus the new annotation.
pub fn apply(observed: &Value, desired: &Value) -> Value {
    let desired = sanitize_desired(desired);
    let last = last_applied(observed).unwrap_or(Value::Null);
    let mut out = merge(Some(observed), Some(&last), &desired);
    record(&mut out, &desired);
    out
}

/// Whether `apply(observed, desired)` would give `observed` back — the question the plan asks of every
/// existing child on every sync — answered without building the merge. `false` also where it cannot
/// tell cheaply (lists whose items repeat a key); the caller then merges.
pub fn unchanged(observed: &Value, desired: &Value) -> bool {
    unchanged_sanitized(observed, &sanitize_desired(desired))
}

/// [`unchanged`] of a desired object [`sanitize_desired`] has already been through.
pub fn unchanged_sanitized(observed: &Value, desired: &Value) -> bool {
    let recorded = observed.at("/metadata/annotations").and_then(|a| a.get(LAST_APPLIED)).and_then(Value::as_str);
    // The annotation `apply` writes is the desired state's text: the same text means the last applied
    // configuration is the desired one, and the merge reduces to laying `desired` over `observed`.
    recorded.is_some_and(|r| serde_json::to_string(desired).is_ok_and(|d| d == r)) && covers(observed, desired)
}

/// Whether `merge(Some(observed), Some(desired), desired) == observed`, i.e. `observed` already holds
/// everything `desired` (also the last applied configuration) sets.
fn covers(observed: &Value, desired: &Value) -> bool {
    match (observed, desired) {
        (Value::Object(o), Value::Object(d)) => d.iter().all(|(k, dv)| o.get(k).is_some_and(|ov| covers(ov, dv))),
        (Value::Array(o), Value::Array(d)) => match list_map_key(o, d) {
            Some(key) => covers_list_map(o, d, key),
            None => o == d,
        },
        _ => observed == desired,
    }
}

/// `covers` for a list merged by `key`: the merge lists the desired items in their order, then the
/// observed ones uc never applied.
fn covers_list_map(observed: &[Value], desired: &[Value], key: &str) -> bool {
    let keys: Vec<&Value> = desired.iter().map(|d| d.get(key).unwrap_or(&Value::Null)).collect();
    let distinct = keys.iter().enumerate().all(|(i, k)| !keys[..i].contains(k));
    distinct
        && observed.len() >= desired.len()
        && desired.iter().zip(observed).all(|(d, o)| o.get(key) == d.get(key) && covers(o, d))
        && observed[desired.len()..].iter().all(|o| !keys.contains(&o.get(key).unwrap_or(&Value::Null)))
}

/// A new object for `desired`, carrying the annotation.
pub fn create(desired: &Value) -> Value {
    create_from(desired.clone())
}

/// [`create`] from a desired object no longer needed otherwise: it becomes the new object.
pub fn create_from(desired: Value) -> Value {
    let mut out = sanitize_desired_owned(desired);
    let text = serde_json::to_string(&out).unwrap_or_default();
    annotate(&mut out, text);
    out
}

fn record(obj: &mut Value, desired: &Value) {
    annotate(obj, serde_json::to_string(desired).unwrap_or_default());
}

fn annotate(obj: &mut Value, text: String) {
    if let Some(m) = obj.as_object_mut() {
        let meta = m.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            let ann = meta.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
            if let Some(ann) = ann.as_object_mut() {
                ann.insert(LAST_APPLIED.into(), Value::String(text));
            }
        }
    }
}

fn merge(observed: Option<&Value>, last: Option<&Value>, desired: &Value) -> Value {
    match (observed, desired) {
        (Some(Value::Object(o)), Value::Object(d)) => {
            let lm = last.and_then(Value::as_object);
            let mut out = o.clone();
            for (k, dv) in d {
                let merged = merge(o.get(k), lm.and_then(|l| l.get(k)), dv);
                out.insert(k.clone(), merged);
            }
            if let Some(lm) = lm {
                for k in lm.keys() {
                    if !d.contains_key(k) {
                        out.remove(k);
                    }
                }
            }
            Value::Object(out)
        }
        (Some(Value::Array(o)), Value::Array(d)) => match list_map_key(o, d) {
            Some(key) => merge_list_map(o, last.and_then(Value::as_array), d, key),
            None => desired.clone(),
        },
        _ => desired.clone(),
    }
}

fn list_map_key(observed: &[Value], desired: &[Value]) -> Option<&'static str> {
    if desired.is_empty() {
        return None;
    }
    LIST_MAP_KEYS
        .iter()
        .find(|k| {
            desired
                .iter()
                .chain(observed)
                .all(|i| i.as_object().is_some_and(|m| m.get(**k).is_some_and(|v| !v.is_null())))
        })
        .copied()
}

fn merge_list_map(observed: &[Value], last: Option<&Vec<Value>>, desired: &[Value], key: &str) -> Value {
    let find = |list: &[Value], k: &Value| list.iter().find(|i| i.get(key) == Some(k)).cloned();
    let mut out: Vec<Value> = Vec::with_capacity(desired.len());
    for d in desired {
        let k = d.get(key).cloned().unwrap_or(Value::Null);
        let o = find(observed, &k);
        let l = last.and_then(|l| find(l, &k));
        out.push(merge(o.as_ref(), l.as_ref(), d));
    }
    // Items someone else added (not desired, never applied by uc) stay.
    for o in observed {
        let k = o.get(key).cloned().unwrap_or(Value::Null);
        let desired_has = desired.iter().any(|d| d.get(key) == Some(&k));
        let uc_applied = last.is_some_and(|l| l.iter().any(|i| i.get(key) == Some(&k)));
        if !desired_has && !uc_applied {
            out.push(o.clone());
        }
    }
    Value::Array(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_set_by_others_survive_and_dropped_fields_go() {
        let first = json!({"metadata": {"name": "d", "labels": {"a": "1", "old": "x"}}, "spec": {"replicas": 1, "paused": false}});
        let observed = {
            let mut o = create(&first);
            // The server and another writer add fields.
            o["metadata"]["labels"]["other"] = json!("keep");
            o["spec"]["strategy"] = json!({"type": "RollingUpdate"});
            o["status"] = json!({"availableReplicas": 1});
            o["metadata"]["resourceVersion"] = json!("7");
            o
        };
        let desired = json!({"metadata": {"name": "d", "labels": {"a": "2"}}, "spec": {"replicas": 3}, "status": {"ignored": true}});
        let out = apply(&observed, &desired);
        assert_eq!(out["metadata"]["labels"], json!({"a": "2", "other": "keep"}));
        assert_eq!(out["spec"], json!({"replicas": 3, "strategy": {"type": "RollingUpdate"}}));
        assert_eq!(out["status"], json!({"availableReplicas": 1}), "status is never written by apply");
        assert_eq!(out["metadata"]["resourceVersion"], json!("7"));
        assert_eq!(
            last_applied(&out).unwrap(),
            json!({"metadata": {"name": "d", "labels": {"a": "2"}}, "spec": {"replicas": 3}})
        );
        // Applying the same desired state again changes nothing.
        assert_eq!(apply(&out, &desired), out);
    }

    /// A new child's object is the body a server-side apply sends for it: made again from its own
    /// annotation it comes out the same (the engine sends it as it is).
    #[test]
    fn a_created_object_is_its_own_apply_body() {
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "resourceVersion": "3", "annotations": {"a": "é\n"}, "ownerReferences": [{"uid": "p"}]},
            "spec": {"replicas": 2, "ratio": 0.1, "big": 1e300, "neg": -7, "list": [{"name": "x", "n": null}]},
            "status": {"ready": 1}});
        let created = create(&desired);
        assert_eq!(create(&last_applied(&created).unwrap()), created);
    }

    /// `unchanged` agrees with the merge wherever it answers yes, and says yes for the common case.
    #[test]
    fn unchanged_is_what_the_merge_says() {
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "1"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "app", "image": "a:1"}, {"name": "b", "image": "b"}]}}}});
        let stored = {
            let mut o = create(&desired);
            // What the server and others add: defaults, status, an injected container, metadata.
            o["metadata"]["resourceVersion"] = json!("9");
            o["metadata"]["labels"]["other"] = json!("x");
            o["spec"]["strategy"] = json!({"type": "RollingUpdate"});
            o["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
            o["spec"]["template"]["spec"]["containers"].as_array_mut().unwrap().push(json!({"name": "sidecar"}));
            o["status"] = json!({"replicas": 1});
            o
        };
        let cases = [
            (stored.clone(), desired.clone()),
            (
                stored.clone(),
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"a": "1"}}, "spec": {"replicas": 2}}),
            ),
            (
                {
                    let mut o = stored.clone();
                    o["spec"]["replicas"] = json!(3);
                    o
                },
                desired.clone(),
            ),
            (
                {
                    let mut o = stored.clone();
                    o["metadata"]["labels"].as_object_mut().unwrap().remove("a");
                    o
                },
                desired.clone(),
            ),
            (
                {
                    let mut o = stored.clone();
                    o["spec"]["template"]["spec"]["containers"].as_array_mut().unwrap().swap(0, 1);
                    o
                },
                desired.clone(),
            ),
            (
                {
                    let mut o = stored.clone();
                    o["spec"]["template"]["spec"]["containers"][2]["name"] = json!("b");
                    o
                },
                desired.clone(),
            ),
            (
                {
                    let mut o = stored.clone();
                    o["metadata"]["annotations"].as_object_mut().unwrap().remove(LAST_APPLIED);
                    o
                },
                desired.clone(),
            ),
            (stored.clone(), {
                let mut d = desired.clone();
                d["metadata"]["annotations"] = json!({"note": "n"});
                d
            }),
            (stored.clone(), {
                let mut d = desired.clone();
                d["spec"]["template"]["spec"]["containers"][1]["name"] = json!("app");
                d
            }),
            (create(&json!({"args": ["a", "b"]})), json!({"args": ["a", "b"]})),
            (create(&json!({"args": ["a", "b"]})), json!({"args": ["b", "a"]})),
        ];
        for (i, (o, d)) in cases.iter().enumerate() {
            let same = apply(o, d) == *o;
            assert!(!unchanged(o, d) || same, "case {i}: unchanged says yes, the merge no");
        }
        assert!(unchanged(&cases[0].0, &cases[0].1), "what uc applied, with what others added");
        assert!(unchanged(&cases[9].0, &cases[9].1));
        for i in [1, 2, 3, 4, 5, 6, 7, 10] {
            assert!(!unchanged(&cases[i].0, &cases[i].1), "case {i} changes");
        }
    }

    #[test]
    fn containers_merge_by_name_and_keep_injected_ones() {
        let v1 =
            json!({"spec": {"containers": [{"name": "app", "image": "a:1", "env": [{"name": "X", "value": "1"}]}]}});
        let mut observed = create(&v1);
        observed["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
        observed["spec"]["containers"].as_array_mut().unwrap().push(json!({"name": "sidecar", "image": "s"}));
        let v2 = json!({"spec": {"containers": [{"name": "app", "image": "a:2"}]}});
        let out = apply(&observed, &v2);
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "app", "image": "a:2", "imagePullPolicy": "IfNotPresent"}, {"name": "sidecar", "image": "s"}])
        );
        let scalars = apply(&create(&json!({"args": ["a", "b"]})), &json!({"args": ["c"]}));
        assert_eq!(scalars["args"], json!(["c"]));
    }
}
