//! Planning: from observed and desired children of one type to create, update and delete actions,
//! per update strategy. Pure functions over values, tested without a cluster.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};
use uc_api::Pointer;
use uc_api::controller::{StatusChecks, UpdateMethod};

use crate::apply;
use crate::informer::{Obj, ObjKey};

use uc_api::meta::{is_deleting, meta_str as meta};

/// What the plan does with one child.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create this object.
    Create(Value),
    /// Replace the object with this one (carrying the observed resourceVersion).
    Update(Value),
    /// Delete an object, if its uid is still this one.
    Delete {
        /// Name.
        name: String,
        /// Namespace.
        namespace: String,
        /// The uid the delete is conditioned on.
        uid: String,
    },
    /// Add a controller ownerReference to an orphan.
    Adopt(Value),
    /// Remove the parent's ownerReference from a child that no longer matches.
    Release(Value),
}

/// The child as uc writes it: the selector's labels and a controller ownerReference to the parent.
pub fn decorate(parent: &Value, selector_labels: &Map<String, Value>, child: &Value) -> Value {
    decorate_owned(parent, selector_labels, child.clone())
}

/// [`decorate`] of a child no longer needed otherwise: it becomes the decorated one.
pub fn decorate_owned(parent: &Value, selector_labels: &Map<String, Value>, mut c: Value) -> Value {
    let labels = c["metadata"].as_object_mut().map(|m| m.entry("labels").or_insert_with(|| json!({})));
    if let Some(Value::Object(l)) = labels {
        for (k, v) in selector_labels {
            l.insert(k.clone(), v.clone());
        }
    }
    let owner = uc_api::meta::controller_owner_reference(parent);
    let mut refs: Vec<Value> = c
        .at("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter(|r| r.get("controller") != Some(&Value::Bool(true))).cloned().collect())
        .unwrap_or_default();
    refs.push(owner);
    c["metadata"]["ownerReferences"] = Value::Array(refs);
    c
}

/// What to do with one child type: deletes of undesired children, creates of missing ones, and updates
/// of differing ones according to the update method. Rolling methods update like their one-shot forms:
/// the rollout (`crate::revision`) has already chosen, per child, the revision it is desired at.
pub fn plan(
    method: UpdateMethod,
    parent: &Value,
    selector_labels: &Map<String, Value>,
    observed: &[Obj],
    desired: Vec<Value>,
) -> Vec<Action> {
    let key = |o: &Value| (meta(o, "namespace").to_string(), meta(o, "name").to_string());
    let observed_by_key: HashMap<ObjKey, &Obj> = observed.iter().map(|o| (key(o), o)).collect();
    let desired_keys: HashSet<ObjKey> = desired.iter().map(key).collect();
    let mut actions = Vec::new();
    for o in observed {
        if !desired_keys.contains(&key(o)) && !is_deleting(o) {
            actions.push(Action::Delete {
                name: meta(o, "name").into(),
                namespace: meta(o, "namespace").into(),
                uid: meta(o, "uid").into(),
            });
        }
    }
    for d in desired {
        // Only children that may be written are decorated (decorating keeps the name and namespace, so
        // the key is the same either way).
        let observed = observed_by_key.get(&key(&d));
        if observed.is_some_and(|o| method == UpdateMethod::OnDelete || is_deleting(o)) {
            continue;
        }
        // Sanitized once: the create, the comparison and the merge all want it so.
        let d = apply::sanitize_desired_owned(decorate_owned(parent, selector_labels, d));
        let Some(o) = observed else {
            actions.push(Action::Create(apply::create_from(d)));
            continue;
        };
        if apply::unchanged_sanitized(o, &d) {
            continue;
        }
        let merged = apply::apply(o, &d);
        if merged == ***o {
            continue;
        }
        match method {
            UpdateMethod::Recreate | UpdateMethod::RollingRecreate => actions.push(Action::Delete {
                name: meta(o, "name").into(),
                namespace: meta(o, "namespace").into(),
                uid: meta(o, "uid").into(),
            }),
            _ => actions.push(Action::Update(merged)),
        }
    }
    actions
}

/// Whether a child passes the status checks of a rolling update.
pub fn passes_checks(child: &Value, checks: Option<&StatusChecks>) -> bool {
    let Some(checks) = checks else { return true };
    let conds = child.at("/status/conditions").and_then(Value::as_array);
    checks.conditions.iter().all(|want| {
        conds.is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(want.type_.as_str())
                    && want.status.as_deref().is_none_or(|s| c.get("status").and_then(Value::as_str) == Some(s))
                    && want.reason.as_deref().is_none_or(|r| c.get("reason").and_then(Value::as_str) == Some(r))
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use uc_api::controller::ConditionCheck;

    fn parent() -> Value {
        json!({"apiVersion": "x.io/v1", "kind": "P", "metadata": {"name": "p", "namespace": "ns", "uid": "pu"}})
    }

    fn labels() -> Map<String, Value> {
        json!({"controller-uid": "pu"}).as_object().cloned().unwrap()
    }

    fn desired(name: &str, image: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}, "spec": {"image": image}})
    }

    /// An observed child as uc created it earlier, with a Ready condition.
    fn observed(name: &str, image: &str, ready: bool) -> Obj {
        let mut o = apply::create(&decorate(&parent(), &labels(), &desired(name, image)));
        o["metadata"]["uid"] = json!(format!("uid-{name}"));
        o["metadata"]["resourceVersion"] = json!("1");
        o["status"] = json!({"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]});
        Arc::new(o)
    }

    fn kinds(actions: &[Action]) -> Vec<String> {
        actions
            .iter()
            .map(|a| match a {
                Action::Create(o) => format!("create {}", meta(o, "name")),
                Action::Update(o) => format!("update {}", meta(o, "name")),
                Action::Delete { name, .. } => format!("delete {name}"),
                Action::Adopt(o) => format!("adopt {}", meta(o, "name")),
                Action::Release(o) => format!("release {}", meta(o, "name")),
            })
            .collect()
    }

    #[test]
    fn decorate_adds_selector_labels_and_one_controller_reference() {
        let c = decorate(
            &parent(),
            &labels(),
            &json!({"metadata": {"name": "c", "labels": {"app": "a"},
            "ownerReferences": [{"uid": "other", "controller": true}, {"uid": "keep"}]}}),
        );
        assert_eq!(c["metadata"]["labels"], json!({"app": "a", "controller-uid": "pu"}));
        let refs = c["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(refs.len(), 2);
        assert_eq!(refs[0]["uid"], json!("keep"));
        assert_eq!(refs[1]["uid"], json!("pu"));
        assert_eq!(refs[1]["controller"], json!(true));
    }

    #[test]
    fn creates_missing_deletes_undesired_and_skips_unchanged() {
        let obs = vec![observed("a", "v1", true), observed("gone", "v1", true)];
        let des = vec![desired("a", "v1"), desired("new", "v1")];
        let actions = plan(UpdateMethod::InPlace, &parent(), &labels(), &obs, des.clone());
        assert_eq!(kinds(&actions), vec!["delete gone", "create new"]);
    }

    #[test]
    fn update_methods() {
        let obs = vec![observed("a", "v1", true), observed("b", "v1", true)];
        let des = vec![desired("a", "v2"), desired("b", "v2")];
        let p = |m| kinds(&plan(m, &parent(), &labels(), &obs, des.clone()));
        assert_eq!(p(UpdateMethod::OnDelete), Vec::<String>::new());
        assert_eq!(p(UpdateMethod::InPlace), vec!["update a", "update b"]);
        assert_eq!(p(UpdateMethod::Recreate), vec!["delete a", "delete b"]);
        assert_eq!(p(UpdateMethod::RollingInPlace), vec!["update a", "update b"], "the rollout chose the revisions");
        assert_eq!(p(UpdateMethod::RollingRecreate), vec!["delete a", "delete b"]);
        let updated = plan(UpdateMethod::InPlace, &parent(), &labels(), &obs, des.clone());
        let Action::Update(u) = &updated[0] else { panic!("an update") };
        assert_eq!(u["spec"]["image"], json!("v2"));
        assert_eq!(u["status"], obs[0]["status"], "status is never written by apply");
    }

    #[test]
    fn status_checks() {
        let checks = StatusChecks {
            conditions: vec![ConditionCheck { type_: "Ready".into(), status: Some("True".into()), reason: None }],
        };
        assert!(passes_checks(&observed("b", "v2", true), Some(&checks)));
        assert!(!passes_checks(&observed("b", "v2", false), Some(&checks)));
        assert!(!passes_checks(&json!({}), Some(&checks)));
        assert!(passes_checks(&json!({}), None));
    }

    #[test]
    fn children_being_deleted_are_left_alone() {
        let mut o = (*observed("a", "v1", true)).clone();
        o["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let obs = vec![Arc::new(o)];
        assert!(plan(UpdateMethod::InPlace, &parent(), &labels(), &obs, vec![desired("a", "v2")]).is_empty());
        assert!(plan(UpdateMethod::InPlace, &parent(), &labels(), &obs, vec![]).is_empty());
    }
}
