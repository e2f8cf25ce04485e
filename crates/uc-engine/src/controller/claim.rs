//! Claiming: which children belong to a parent. Children it owns and still selects are its own;
//! orphans it selects are adopted, owned ones it no longer selects are released — both only after the
//! hook answered well (the adopt and release actions are carried out with the rest of the plan).

use std::collections::HashSet;

use serde_json::{Map, Value, json};
use uc_api::meta::{controller_uid, is_deleting, meta_str};
use uc_api::metacontroller::DECORATOR_ANNOTATION;
use uc_api::selector::{Requirement, is_label_value};
use uc_api::{LabelSelector, Pointer};

use super::errors::{SyncError, SyncReason};
use super::shared::{ChildType, Shared};
use crate::flavor::Flavor;
use crate::informer::{Change, Obj, ObjKey, key_of};
use crate::plan::Action;

/// Label uc puts on children when it generates the selector (Metacontroller's name for it).
pub const CONTROLLER_UID_LABEL: &str = "controller-uid";

/// The selector of a parent's children, and the labels uc puts on them: `controller-uid=<uid>` when
/// the controller generates selectors, else the parent's `spec.selector` (a plain label map, as a
/// ReplicationController's, means matchLabels).
pub(super) fn selector_for(
    generate_selector: bool,
    parent: &Value,
) -> Result<(LabelSelector, Map<String, Value>), SyncError> {
    let invalid = |m: String| SyncError::new(SyncReason::InvalidParent, m);
    if generate_selector {
        let uid = meta_str(parent, "uid");
        if !is_label_value(uid) {
            return Err(invalid(format!("the parent's uid {uid:?} is not a label value")));
        }
        let mut labels = Map::new();
        labels.insert(CONTROLLER_UID_LABEL.into(), Value::String(uid.to_string()));
        let requirements = vec![Requirement::Equals(CONTROLLER_UID_LABEL.into(), uid.to_string())];
        return Ok((LabelSelector { requirements, matches_nothing: false }, labels));
    }
    let Some(sel) = parent.at("/spec/selector") else {
        return Err(invalid(
            "the parent has no spec.selector; set one or set generateSelector: true on the controller".into(),
        ));
    };
    let plain = sel.as_object().is_some_and(|m| {
        !m.is_empty()
            && !m.contains_key("matchLabels")
            && !m.contains_key("matchExpressions")
            && m.values().all(Value::is_string)
    });
    let sel = if plain { &json!({"matchLabels": sel}) } else { sel };
    let parsed = LabelSelector::from_value(sel).map_err(|e| invalid(format!("spec.selector: {e}")))?;
    if parsed.is_empty() {
        return Err(invalid("spec.selector is empty and would select every object".into()));
    }
    let labels = sel.get("matchLabels").and_then(Value::as_object).cloned().unwrap_or_default();
    Ok((parsed, labels))
}

/// One child type's claim: the children that are the parent's, and the adoptions and releases.
#[derive(Debug, Default)]
pub(super) struct Claim {
    pub mine: Vec<Obj>,
    pub actions: Vec<Action>,
}

/// Sorts candidates into the parent's children, adoptions and releases. A deleting parent adopts
/// nothing; a deleting child is neither adopted nor released. With `owned_is_mine`, a child the parent
/// controls is its own whether or not the selector picks it: a selector uc generated from the parent's
/// uid finds children, it does not choose them (a Job `kubectl create job --from=cronjob/…` makes is
/// the CronJob's, as kube's CronJob controller holds it, though it carries no label of uc's). Else an
/// owned child the selector no longer picks is released, as kube's ControllerRefManager releases it.
pub(super) fn claim(
    parent_uid: &str,
    parent_deleting: bool,
    selector: &LabelSelector,
    candidates: Vec<Obj>,
    owned_is_mine: bool,
) -> Claim {
    let mut out = Claim::default();
    for c in candidates {
        let selected = selector.matches_value(c.at("/metadata/labels"));
        match controller_uid(&c) {
            Some(uid) if uid == parent_uid => {
                if selected || owned_is_mine {
                    out.mine.push(c);
                } else if !is_deleting(&c) {
                    out.actions.push(Action::Release((*c).clone()));
                }
            }
            Some(_) => {}
            None if selected && !is_deleting(&c) && !parent_deleting => {
                out.actions.push(Action::Adopt((*c).clone()));
                out.mine.push(c);
            }
            None => {}
        }
    }
    out
}

/// A decorator's claim: the objects the target owns that carry this decorator's annotation. A
/// decorator adopts and releases nothing (its attachments are not selected by labels).
pub(super) fn decorator_claim(decorator: &str, owned: Vec<Obj>) -> Claim {
    let ours = |o: &Obj| {
        o.at("/metadata/annotations").and_then(|a| a.get(DECORATOR_ANNOTATION)).and_then(Value::as_str)
            == Some(decorator)
    };
    Claim { mine: owned.into_iter().filter(ours).collect(), actions: Vec::new() }
}

impl Shared {
    /// Children that may belong to a parent: those it owns (owner index) and those its selector picks,
    /// found through the label index when the selector has an equality term, else by namespace.
    pub(super) fn child_candidates(
        &self,
        t: &ChildType,
        parent: &Value,
        selector: &LabelSelector,
        parent_uid: &str,
    ) -> Vec<Obj> {
        let ns = meta_str(parent, "namespace");
        let in_scope = |o: &Obj| !self.parent.namespaced || meta_str(o, "namespace") == ns;
        let equality = selector.requirements.iter().find_map(|r| match r {
            Requirement::Equals(k, v) => Some((k.as_str(), v.as_str())),
            _ => None,
        });
        if let (Some(label), false) = (equality, self.flavor == Flavor::Decorator) {
            return t.informer.owned_by_or_labelled(parent_uid, label).into_iter().filter(in_scope).collect();
        }
        let mut out: Vec<Obj> = t.informer.owned_by(parent_uid).into_iter().filter(in_scope).collect();
        if self.flavor == Flavor::Decorator {
            return out;
        }
        let selected = if self.parent.namespaced { t.informer.list(Some(ns)) } else { t.informer.list(None) };
        let mut seen: HashSet<String> = out.iter().map(|o| meta_str(o, "uid").to_string()).collect();
        for o in selected {
            if in_scope(&o) && seen.insert(meta_str(&o, "uid").to_string()) {
                out.push(o);
            }
        }
        out
    }

    /// The parents a child's change concerns: its controller, or (an orphan) those selecting it.
    pub(super) fn parents_of_child(&self, ch: &Change) -> Vec<ObjKey> {
        let mut out: Vec<ObjKey> =
            std::iter::once(&ch.object).chain(ch.old.iter()).flat_map(|o| self.parents_of_object(o)).collect();
        out.sort();
        out.dedup();
        out
    }

    /// The parents that own (or would own) one state of a child.
    pub(super) fn parents_of_object(&self, obj: &Value) -> Vec<ObjKey> {
        match controller_uid(obj) {
            Some(uid) => self.parents.key_of_uid(uid).into_iter().collect(),
            None if self.flavor == Flavor::Decorator => Vec::new(),
            None => {
                let ns = meta_str(obj, "namespace");
                let candidates =
                    if self.parent.namespaced { self.parents.list(Some(ns)) } else { self.parents.list(None) };
                let generate = self.spec.generate_selector == Some(true);
                let selects =
                    |p: &Obj| selector_for(generate, p).is_ok_and(|(s, _)| s.matches_value(obj.at("/metadata/labels")));
                candidates.iter().filter(|p| selects(p)).map(|p| key_of(p)).collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn parent(selector: Value) -> Value {
        json!({"metadata": {"name": "p", "uid": "pu"}, "spec": {"selector": selector}})
    }

    fn child(name: &str, labels: Value, owner: Option<&str>, deleting: bool) -> Obj {
        let mut c = json!({"metadata": {"name": name, "uid": format!("{name}-uid"), "labels": labels}});
        if let Some(o) = owner {
            c["metadata"]["ownerReferences"] = json!([{"uid": o, "controller": true}]);
        }
        if deleting {
            c["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        Arc::new(c)
    }

    fn names(objs: &[Obj]) -> Vec<&str> {
        objs.iter().map(|o| meta_str(o, "name")).collect()
    }

    fn kinds(actions: &[Action]) -> Vec<String> {
        actions
            .iter()
            .map(|a| match a {
                Action::Adopt(o) => format!("adopt {}", meta_str(o, "name")),
                Action::Release(o) => format!("release {}", meta_str(o, "name")),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn selectors_from_the_parent_or_generated() {
        let (s, labels) = selector_for(false, &parent(json!({"matchLabels": {"app": "a"}}))).unwrap();
        assert!(s.matches_value(Some(&json!({"app": "a"}))));
        assert_eq!(Value::Object(labels), json!({"app": "a"}));
        // A plain map, as a ReplicationController's selector.
        let (s, labels) = selector_for(false, &parent(json!({"app": "b"}))).unwrap();
        assert!(s.matches_value(Some(&json!({"app": "b", "x": "y"}))));
        assert_eq!(Value::Object(labels), json!({"app": "b"}));
        // matchExpressions only: selects, but gives no labels to put on children.
        let expr = json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["c"]}]});
        let (s, labels) = selector_for(false, &parent(expr)).unwrap();
        assert!(s.matches_value(Some(&json!({"app": "c"}))) && labels.is_empty());
        let (s, labels) = selector_for(true, &parent(json!({}))).unwrap();
        assert!(s.matches_value(Some(&json!({CONTROLLER_UID_LABEL: "pu"}))));
        assert_eq!(Value::Object(labels), json!({CONTROLLER_UID_LABEL: "pu"}));
        assert_eq!(s, LabelSelector::parse("controller-uid=pu").unwrap(), "as the selector's text parses");
        let mut odd = parent(json!({}));
        odd["metadata"]["uid"] = json!("a b");
        assert!(selector_for(true, &odd).is_err(), "a uid that is no label value selects nothing");
    }

    #[test]
    fn a_parent_without_a_usable_selector_is_invalid() {
        for p in [json!({"metadata": {"uid": "u"}}), parent(json!({})), parent(json!({"matchLabels": {}}))] {
            let e = selector_for(false, &p).unwrap_err();
            assert_eq!(e.reason, SyncReason::InvalidParent, "{p}");
        }
        let e = selector_for(false, &parent(json!({"matchExpressions": [{"key": "a", "operator": "Bad"}]})));
        assert!(e.unwrap_err().message.starts_with("spec.selector: "));
    }

    #[test]
    fn claims_adopts_and_releases() {
        let (sel, _) = selector_for(false, &parent(json!({"matchLabels": {"app": "a"}}))).unwrap();
        let app = json!({"app": "a"});
        let candidates = vec![
            child("owned", app.clone(), Some("pu"), false),
            child("owned-unselected", json!({}), Some("pu"), false),
            child("owned-unselected-deleting", json!({}), Some("pu"), true),
            child("orphan", app.clone(), None, false),
            child("orphan-deleting", app.clone(), None, true),
            child("orphan-unselected", json!({}), None, false),
            child("someone-elses", app.clone(), Some("other"), false),
        ];
        let c = claim("pu", false, &sel, candidates.clone(), false);
        assert_eq!(names(&c.mine), ["owned", "orphan"]);
        assert_eq!(kinds(&c.actions), ["release owned-unselected", "adopt orphan"]);
        // A parent being deleted adopts nothing, but keeps what it owns.
        let c = claim("pu", true, &sel, candidates.clone(), false);
        assert_eq!(names(&c.mine), ["owned"]);
        assert_eq!(kinds(&c.actions), ["release owned-unselected"]);
        // A generated selector: what the parent controls is its own, labelled or not.
        let c = claim("pu", false, &sel, candidates, true);
        assert_eq!(names(&c.mine), ["owned", "owned-unselected", "owned-unselected-deleting", "orphan"]);
        assert_eq!(kinds(&c.actions), ["adopt orphan"]);
    }

    #[test]
    fn a_decorator_claims_its_annotated_attachments_only() {
        let mut annotated = (*child("svc", json!({}), Some("pu"), false)).clone();
        annotated["metadata"]["annotations"] = json!({DECORATOR_ANNOTATION: "spp"});
        let mut other = annotated.clone();
        other["metadata"]["name"] = json!("other-decorators");
        other["metadata"]["annotations"] = json!({DECORATOR_ANNOTATION: "else"});
        let plain = child("plain", json!({}), Some("pu"), false);
        let c = decorator_claim("spp", vec![Arc::new(annotated), Arc::new(other), plain]);
        assert_eq!(names(&c.mine), ["svc"]);
        assert!(c.actions.is_empty(), "no adoption, no release");
    }
}
