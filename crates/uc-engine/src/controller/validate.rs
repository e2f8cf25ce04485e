//! Validation of a hook's desired children: each must name a child type of the controller, a name,
//! and a namespace consistent with its parent's; none may be listed twice. The children come back
//! sorted by child type, in the order the hook listed them.

use std::collections::HashSet;

use serde_json::Value;
use uc_api::Pointer;
use uc_api::meta::meta_str;

use super::errors::{SyncError, SyncReason};
use crate::resources::Resolved;

/// Checks `children` against the controller's child types and sorts them by type. Namespaced children
/// of a namespaced parent default to (and must be in) its namespace; those of a cluster-scoped parent
/// must name one; cluster-scoped children lose any namespace they carry.
pub fn validate_children<'a>(
    child_types: impl Iterator<Item = &'a Resolved> + Clone,
    parent_namespaced: bool,
    parent: &Value,
    children: Vec<Value>,
) -> Result<Vec<Vec<Value>>, SyncError> {
    let mut out: Vec<Vec<Value>> = vec![Vec::new(); child_types.clone().count()];
    let mut seen = HashSet::new();
    let parent_ns = meta_str(parent, "namespace");
    for (i, mut c) in children.into_iter().enumerate() {
        let bad = |m: String| SyncError::new(SyncReason::InvalidChild, format!("children[{i}]: {m}"));
        let av = c.get("apiVersion").and_then(Value::as_str).ok_or_else(|| bad("apiVersion is required".into()))?;
        let kind = c.get("kind").and_then(Value::as_str).ok_or_else(|| bad("kind is required".into()))?;
        let name = c
            .at("/metadata/name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| bad("metadata.name is required".into()))?
            .to_string();
        let (t, res) = child_types
            .clone()
            .enumerate()
            .find(|(_, r)| r.ar.api_version == av && r.ar.kind == kind)
            .ok_or_else(|| bad(format!("{kind}.{av} is not a child type of this controller")))?;
        let kind = kind.to_string();
        if !c.get("metadata").is_some_and(Value::is_object) {
            return Err(bad("metadata must be an object".into()));
        }
        if res.namespaced {
            let ns = meta_str(&c, "namespace").to_string();
            let ns = match (parent_namespaced, ns.is_empty()) {
                (true, true) => parent_ns.to_string(),
                (true, false) if ns != parent_ns => {
                    return Err(bad(format!("{name} is in namespace {ns:?}, but its parent is in {parent_ns:?}")));
                }
                (false, true) => {
                    return Err(bad(format!("{name} needs metadata.namespace (the parent is cluster-scoped)")));
                }
                _ => ns,
            };
            c["metadata"]["namespace"] = Value::String(ns);
        } else if let Some(m) = c.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("namespace");
        }
        if !seen.insert((t, meta_str(&c, "namespace").to_string(), name.clone())) {
            return Err(bad(format!("{kind} {name} is listed twice")));
        }
        out[t].push(c);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn resolved(api_version: &str, kind: &str, namespaced: bool) -> Resolved {
        Resolved::new(api_version, kind, &format!("{}s", kind.to_lowercase()), namespaced)
    }

    fn types() -> Vec<Resolved> {
        vec![resolved("v1", "ConfigMap", true), resolved("rbac.authorization.k8s.io/v1", "ClusterRole", false)]
    }

    fn check(parent_namespaced: bool, children: Value) -> Result<Vec<Vec<Value>>, SyncError> {
        let parent = if parent_namespaced {
            json!({"metadata": {"name": "p", "namespace": "ns"}})
        } else {
            json!({"metadata": {"name": "p"}})
        };
        let children = children.as_array().cloned().unwrap_or_default();
        validate_children(types().iter(), parent_namespaced, &parent, children)
    }

    fn message(r: Result<Vec<Vec<Value>>, SyncError>) -> String {
        let e = r.unwrap_err();
        assert_eq!(e.reason, SyncReason::InvalidChild);
        e.message
    }

    #[test]
    fn sorts_by_type_and_defaults_namespaces() {
        let out = check(
            true,
            json!([
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r", "namespace": "x"}},
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}},
            ]),
        )
        .unwrap();
        let names: Vec<Vec<(&str, &str)>> =
            out.iter().map(|t| t.iter().map(|c| (meta_str(c, "name"), meta_str(c, "namespace"))).collect()).collect();
        assert_eq!(names, vec![vec![("b", "ns"), ("a", "ns")], vec![("r", "")]]);
    }

    #[test]
    fn rejects_what_cannot_be_a_child() {
        assert_eq!(message(check(true, json!([{"kind": "ConfigMap"}]))), "children[0]: apiVersion is required");
        assert_eq!(message(check(true, json!([{"apiVersion": "v1"}]))), "children[0]: kind is required");
        assert_eq!(
            message(check(true, json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ""}}]))),
            "children[0]: metadata.name is required"
        );
        assert_eq!(
            message(check(true, json!([{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}]))),
            "children[0]: Secret.v1 is not a child type of this controller"
        );
        let twice = json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}},
        ]);
        assert_eq!(message(check(true, twice)), "children[1]: ConfigMap a is listed twice");
    }

    #[test]
    fn namespaces_follow_the_parent() {
        let other = json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "other"}}]);
        assert_eq!(
            message(check(true, other.clone())),
            "children[0]: a is in namespace \"other\", but its parent is in \"ns\""
        );
        // A cluster-scoped parent may place children in any namespace, but must name it.
        assert_eq!(meta_str(&check(false, other).unwrap()[0][0], "namespace"), "other");
        let none = json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]);
        assert_eq!(
            message(check(false, none)),
            "children[0]: a needs metadata.namespace (the parent is cluster-scoped)"
        );
    }
}
