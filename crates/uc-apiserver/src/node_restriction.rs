//! kube-apiserver's NodeRestriction admission: a node's credential (user `system:node:<name>` in group
//! `system:nodes`) changes only its own Node (never its taints, nor labels outside the kubelet's
//! set), its own Lease in `kube-node-lease`, the status of pods bound to it, deletes and evicts only
//! those pods, creates only mirror pods bound to it, and asks tokens only for pods bound to it. The
//! decisions are pure: callers pass the object written and the one stored.

use serde_json::Value;

use crate::auth::User;

/// The node a user is, if it is one: `system:node:<name>` in `system:nodes`.
pub fn node_of(user: &User) -> Option<&str> {
    let name = user.name.strip_prefix("system:node:")?;
    user.groups.iter().any(|g| g == "system:nodes").then_some(name)
}

/// What a write does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    fn word(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// One write as the plugin sees it.
#[derive(Clone, Copy, Debug)]
pub struct Write<'a> {
    pub operation: Operation,
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: Option<&'a str>,
    pub namespace: &'a str,
    /// The object's name (on create, the new object's).
    pub name: &'a str,
    /// The object sent (create, update).
    pub object: Option<&'a Value>,
    /// The object stored (update, delete), or the pod a subresource acts on.
    pub old: Option<&'a Value>,
}

/// The namespace of nodes' heartbeat Leases.
const NODE_LEASES: &str = "kube-node-lease";
const MIRROR: &str = "kubernetes.io/config.mirror";

/// Ok when `node` may make `w`; else why not, in kube's words.
/// Why NodeRestriction refuses a node's request, in kube-apiserver's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

fn refuse<T>(why: impl Into<String>) -> Result<T, Refused> {
    Err(Refused(why.into()))
}

pub fn check(node: &str, w: &Write) -> Result<(), Refused> {
    match (w.group, w.resource) {
        ("", "pods") => pod(node, w),
        ("", "nodes") => node_object(node, w),
        ("", "serviceaccounts") if w.operation == Operation::Create && w.subresource == Some("token") => {
            token(node, w.object, w.old)
        }
        ("coordination.k8s.io", "leases") => lease(node, w),
        _ => Ok(()),
    }
}

fn node_name_of(pod: Option<&Value>) -> &str {
    pod.and_then(|p| p.pointer("/spec/nodeName")).and_then(Value::as_str).unwrap_or_default()
}

fn pod(node: &str, w: &Write) -> Result<(), Refused> {
    let bound = node_name_of(w.old) == node;
    match (w.subresource, w.operation) {
        (None, Operation::Create) => {
            let mirror = w.object.and_then(|o| o.pointer("/metadata/annotations")).and_then(|a| a.get(MIRROR));
            if mirror.is_none() {
                return refuse(format!(
                    "pod does not have {MIRROR:?} annotation, node {node:?} can only create mirror pods"
                ));
            }
            if node_name_of(w.object) != node {
                return refuse(format!("node {node:?} can only create pods with spec.nodeName set to itself"));
            }
            Ok(())
        }
        (None, Operation::Delete) if !bound => {
            refuse(format!("node {node:?} can only delete pods with spec.nodeName set to itself"))
        }
        (None, Operation::Delete) => Ok(()),
        (None, op) => refuse(format!(
            "unexpected operation {:?}, node {node:?} can only create and delete mirror pods",
            op.word()
        )),
        (Some("status"), Operation::Update) => {
            if !bound {
                return refuse(format!(
                    "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
                ));
            }
            let labels = |p: Option<&Value>| p.and_then(|p| p.pointer("/metadata/labels")).cloned();
            if labels(w.old) != labels(w.object) {
                return refuse(format!("node {node:?} cannot update labels through pod status"));
            }
            Ok(())
        }
        (Some("status"), op) => refuse(format!("unexpected operation {:?}", op.word())),
        (Some("eviction"), Operation::Create) if !bound => {
            refuse(format!("node {node} can only evict pods with spec.nodeName set to itself"))
        }
        (Some("eviction"), Operation::Create) => Ok(()),
        (Some("eviction"), op) => refuse(format!("unexpected operation {}", op.word())),
        (Some(other), _) => {
            refuse(format!("unexpected pod subresource {other:?}, only 'status' and 'eviction' are allowed"))
        }
    }
}

fn node_object(node: &str, w: &Write) -> Result<(), Refused> {
    if w.name != node {
        return refuse(format!("node {node:?} is not allowed to modify node {:?}", w.name));
    }
    let labels = |o: Option<&Value>| o.and_then(|o| o.pointer("/metadata/labels")).and_then(Value::as_object).cloned();
    match w.operation {
        Operation::Create => {
            let forbidden = forbidden_labels(&labels(w.object).unwrap_or_default(), &Default::default());
            if !forbidden.is_empty() {
                return refuse(format!(
                    "node {node:?} is not allowed to set the following labels: {}",
                    forbidden.join(", ")
                ));
            }
        }
        Operation::Update => {
            let taints = |o: Option<&Value>| o.and_then(|o| o.pointer("/spec/taints")).cloned();
            if taints(w.object) != taints(w.old) {
                return refuse(format!("node {node:?} is not allowed to modify taints"));
            }
            let forbidden = forbidden_labels(&labels(w.object).unwrap_or_default(), &labels(w.old).unwrap_or_default());
            if !forbidden.is_empty() {
                return refuse(format!("is not allowed to modify labels: {}", forbidden.join(", ")));
            }
        }
        Operation::Delete => {}
    }
    Ok(())
}

/// The label keys that differ between `new` and `old` and that a node may not set: those of the
/// `node-restriction.kubernetes.io` namespace, and `kubernetes.io`/`k8s.io` ones that are not the
/// kubelet's own. Sorted.
fn forbidden_labels(new: &serde_json::Map<String, Value>, old: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut changed: Vec<&String> = new.keys().chain(old.keys()).filter(|k| new.get(*k) != old.get(*k)).collect();
    changed.sort();
    changed.dedup();
    changed.into_iter().filter(|k| forbidden_label(k)).cloned().collect()
}

fn forbidden_label(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else { return false };
    let under = |domain: &str| prefix == domain || prefix.ends_with(&format!(".{domain}"));
    if under("node-restriction.kubernetes.io") {
        return true;
    }
    (under("kubernetes.io") || under("k8s.io")) && !kubelet_label(key, prefix)
}

/// The labels a kubelet sets on its own Node.
fn kubelet_label(key: &str, prefix: &str) -> bool {
    const KEYS: &[&str] = &[
        "kubernetes.io/hostname",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
    ];
    KEYS.contains(&key)
        || ["kubelet.kubernetes.io", "node.kubernetes.io"]
            .iter()
            .any(|d| prefix == *d || prefix.ends_with(&format!(".{d}")))
}

fn token(node: &str, request: Option<&Value>, pod: Option<&Value>) -> Result<(), Refused> {
    let reference = request.and_then(|r| r.pointer("/spec/boundObjectRef"));
    let field = |k: &str| reference.and_then(|r| r.get(k)).and_then(Value::as_str).unwrap_or_default();
    if field("apiVersion") != "v1" || field("kind") != "Pod" || field("name").is_empty() {
        return refuse("node requested token not bound to a pod");
    }
    if field("uid").is_empty() {
        return refuse("node requested token with a pod binding without a uid");
    }
    let uid = pod.and_then(|p| p.pointer("/metadata/uid")).and_then(Value::as_str).unwrap_or_default();
    if uid != field("uid") {
        return refuse(format!(
            "the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated",
            field("uid")
        ));
    }
    if node_name_of(pod) != node {
        return refuse("node requested token bound to a pod scheduled on a different node");
    }
    Ok(())
}

fn lease(node: &str, w: &Write) -> Result<(), Refused> {
    if w.namespace != NODE_LEASES {
        return refuse(format!("can only access leases in the {NODE_LEASES:?} system namespace"));
    }
    if w.name != node {
        return refuse("can only access node lease with the same name as the requesting node");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn write<'a>(operation: Operation, resource: &'a str, sub: Option<&'a str>, name: &'a str) -> Write<'a> {
        Write { operation, group: "", resource, subresource: sub, namespace: "default", name, object: None, old: None }
    }

    #[test]
    fn a_node_is_named_by_its_user_and_group() {
        let user = |name: &str, groups: &[&str]| User {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        };
        assert_eq!(node_of(&user("system:node:a", &["system:nodes"])), Some("a"));
        assert_eq!(node_of(&user("system:node:a", &["system:authenticated"])), None, "not in system:nodes");
        assert_eq!(node_of(&user("alice", &["system:nodes"])), None);
    }

    #[test]
    fn a_node_changes_only_its_own_node_and_never_its_taints_or_foreign_labels() {
        let other = write(Operation::Update, "nodes", Some("status"), "b");
        assert_eq!(check("a", &other).unwrap_err().0, r#"node "a" is not allowed to modify node "b""#);
        let old = json!({"metadata": {"labels": {"kubernetes.io/hostname": "a"}}});
        let mut own = write(Operation::Update, "nodes", None, "a");
        own.old = Some(&old);
        let relabelled = json!({"metadata": {"labels": {"kubernetes.io/hostname": "a", "node-role.kubernetes.io/master": "",
                                                        "node-restriction.kubernetes.io/pool": "x", "team": "y"}}});
        own.object = Some(&relabelled);
        assert_eq!(
            check("a", &own).unwrap_err().0,
            "is not allowed to modify labels: node-restriction.kubernetes.io/pool, node-role.kubernetes.io/master"
        );
        let untainted = json!({"metadata": old["metadata"].clone(), "spec": {"taints": []}});
        own.object = Some(&untainted);
        assert_eq!(check("a", &own).unwrap_err().0, r#"node "a" is not allowed to modify taints"#);
        let fine = json!({"metadata": {"labels": {"kubernetes.io/hostname": "a", "topology.kubernetes.io/zone": "z",
                                                  "node.kubernetes.io/exclude-from-external-load-balancers": ""}}});
        own.object = Some(&fine);
        assert!(check("a", &own).is_ok());
        let mut create = write(Operation::Create, "nodes", None, "a");
        let labelled = json!({"metadata": {"labels": {"node-role.kubernetes.io/uc": ""}}});
        create.object = Some(&labelled);
        assert_eq!(
            check("a", &create).unwrap_err().0,
            r#"node "a" is not allowed to set the following labels: node-role.kubernetes.io/uc"#
        );
    }

    #[test]
    fn a_node_touches_only_pods_bound_to_it() {
        let mine = json!({"metadata": {"uid": "u1", "labels": {"app": "x"}}, "spec": {"nodeName": "a"}});
        let theirs = json!({"metadata": {"uid": "u2"}, "spec": {"nodeName": "b"}});
        let mut status = write(Operation::Update, "pods", Some("status"), "p");
        status.old = Some(&theirs);
        status.object = Some(&theirs);
        assert_eq!(
            check("a", &status).unwrap_err().0,
            r#"node "a" can only update pod status for pods with spec.nodeName set to itself"#
        );
        status.old = Some(&mine);
        status.object = Some(&mine);
        assert!(check("a", &status).is_ok());
        let relabelled = json!({"metadata": {"labels": {"app": "y"}}, "spec": {"nodeName": "a"}});
        status.object = Some(&relabelled);
        assert_eq!(check("a", &status).unwrap_err().0, r#"node "a" cannot update labels through pod status"#);
        let mut delete = write(Operation::Delete, "pods", None, "p");
        delete.old = Some(&theirs);
        assert!(check("a", &delete).unwrap_err().0.contains("can only delete pods with spec.nodeName set to itself"));
        delete.old = Some(&mine);
        assert!(check("a", &delete).is_ok());
        let mut evict = write(Operation::Create, "pods", Some("eviction"), "p");
        evict.old = Some(&theirs);
        assert_eq!(check("a", &evict).unwrap_err().0, "node a can only evict pods with spec.nodeName set to itself");
        let mut update = write(Operation::Update, "pods", None, "p");
        update.old = Some(&mine);
        assert_eq!(
            check("a", &update).unwrap_err().0,
            r#"unexpected operation "UPDATE", node "a" can only create and delete mirror pods"#
        );
        let mut create = write(Operation::Create, "pods", None, "p");
        let plain = json!({"spec": {"nodeName": "a"}});
        create.object = Some(&plain);
        assert!(check("a", &create).unwrap_err().0.contains("can only create mirror pods"));
        let binding = write(Operation::Create, "pods", Some("binding"), "p");
        assert!(check("a", &binding).unwrap_err().0.contains("only 'status' and 'eviction' are allowed"));
    }

    #[test]
    fn tokens_only_for_its_pods_and_only_its_own_lease() {
        let pod = json!({"metadata": {"uid": "u1"}, "spec": {"nodeName": "b"}});
        let request = |uid: &str| json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": uid}}});
        let mut w = write(Operation::Create, "serviceaccounts", Some("token"), "default");
        let unbound = json!({"spec": {}});
        w.object = Some(&unbound);
        assert_eq!(check("a", &w).unwrap_err().0, "node requested token not bound to a pod");
        let bound = request("u1");
        w.object = Some(&bound);
        w.old = Some(&pod);
        assert_eq!(check("a", &w).unwrap_err().0, "node requested token bound to a pod scheduled on a different node");
        assert!(check("b", &w).is_ok());
        let stale = request("u0");
        w.object = Some(&stale);
        assert!(check("b", &w).unwrap_err().0.contains("does not match the UID in record"));
        let mut l = Write { group: "coordination.k8s.io", ..write(Operation::Update, "leases", None, "b") };
        l.namespace = NODE_LEASES;
        assert_eq!(
            check("a", &l).unwrap_err().0,
            "can only access node lease with the same name as the requesting node"
        );
        assert!(check("b", &l).is_ok());
        l.namespace = "default";
        assert!(check("b", &l).unwrap_err().0.contains("can only access leases in the \"kube-node-lease\""));
    }
}
