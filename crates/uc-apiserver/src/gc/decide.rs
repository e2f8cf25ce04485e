//! The garbage collector's choices, as kube's `attemptToDeleteItem` and `processDeletingDependentsItem`
//! make them, as functions of what the GC saw: what becomes of an object whose owners are gone or going,
//! which owner references go, whether a dependent still holds its owner's foreground deletion.

use serde_json::Value;
use uc_api::Pointer;

use crate::handlers::delete::{FOREGROUND, ORPHAN, Propagation};

/// An owner as the GC finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// There, and not deleting its dependents first.
    Solid,
    /// No object has its uid.
    Gone,
    /// Being deleted in the foreground: waiting for its dependents.
    Waiting,
}

/// What the GC does with a dependent.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Nothing: every owner is there, or the object is on its way out already.
    Keep,
    /// Another owner holds it: only the references to these (gone or going) owners go.
    DropOwners(Vec<String>),
    /// No owner holds it: deleted with this propagation.
    Delete(Propagation),
}

/// The fate of an object with owners (`owners`: each reference's uid and how its owner was found;
/// `finalizers`: the object's own; `deleting`: it has a deletion timestamp). As kube's GC: an object
/// being deleted is left to its deletion; one whose owners are all there is kept; one that a solid owner
/// still holds loses only its references to the others; otherwise it is deleted — in the foreground when
/// an owner waits for it (so that its own dependents go first), else as its own finalizers ask.
pub(crate) fn dependent_fate(owners: &[(String, Owner)], finalizers: &[String], deleting: bool) -> Fate {
    if deleting || owners.iter().all(|(_, o)| *o == Owner::Solid) {
        return Fate::Keep;
    }
    if owners.iter().any(|(_, o)| *o == Owner::Solid) {
        let going = owners.iter().filter(|(_, o)| *o != Owner::Solid).map(|(uid, _)| uid.clone()).collect();
        return Fate::DropOwners(going);
    }
    let has = |f: &str| finalizers.iter().any(|x| x == f);
    Fate::Delete(if owners.iter().any(|(_, o)| *o == Owner::Waiting) {
        Propagation::Foreground
    } else if has(ORPHAN) {
        Propagation::Orphan
    } else if has(FOREGROUND) {
        Propagation::Foreground
    } else {
        Propagation::Background
    })
}

/// Removes the owner references to `uids` (and `ownerReferences` itself once empty); whether any went.
pub(crate) fn drop_owners(obj: &mut Value, uids: &[&str]) -> bool {
    retain_in(obj, "ownerReferences", |r| !r.get("uid").and_then(Value::as_str).is_some_and(|u| uids.contains(&u)))
}

/// Whether `dependent` holds back the foreground deletion of the owner `owner_uid`: its reference to it
/// sets `blockOwnerDeletion`.
pub(crate) fn blocks_deletion_of(dependent: &Value, owner_uid: &str) -> bool {
    dependent.at("/metadata/ownerReferences").and_then(Value::as_array).is_some_and(|refs| {
        refs.iter().any(|r| {
            r.get("uid").and_then(Value::as_str) == Some(owner_uid)
                && r.get("blockOwnerDeletion") == Some(&Value::Bool(true))
        })
    })
}

/// Removes the finalizer `name` (and `finalizers` itself once empty); whether it was there.
pub(crate) fn remove_finalizer(obj: &mut Value, name: &str) -> bool {
    retain_in(obj, "finalizers", |f| f.as_str() != Some(name))
}

/// Keeps the entries of the metadata list `field` that `keep` keeps, removing the field once it is empty;
/// whether any went.
fn retain_in(obj: &mut Value, field: &str, keep: impl Fn(&Value) -> bool) -> bool {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return false };
    let Some(list) = meta.get_mut(field).and_then(Value::as_array_mut) else { return false };
    let before = list.len();
    list.retain(|x| keep(x));
    let (changed, empty) = (list.len() != before, list.is_empty());
    if empty {
        meta.remove(field);
    }
    changed
}

/// Whether the object carries the finalizer `name`.
pub(crate) fn has_finalizer(obj: &Value, name: &str) -> bool {
    obj.at("/metadata/finalizers").and_then(Value::as_array).is_some_and(|a| a.iter().any(|f| f.as_str() == Some(name)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn owners(list: &[(&str, Owner)]) -> Vec<(String, Owner)> {
        list.iter().map(|(u, o)| ((*u).to_string(), *o)).collect()
    }

    #[test]
    fn an_object_goes_when_no_owner_holds_it_and_only_then() {
        let none: &[String] = &[];
        assert_eq!(dependent_fate(&owners(&[("a", Owner::Solid)]), none, false), Fate::Keep);
        assert_eq!(
            dependent_fate(&owners(&[("a", Owner::Solid), ("b", Owner::Gone), ("c", Owner::Waiting)]), none, false),
            Fate::DropOwners(vec!["b".into(), "c".into()]),
            "a solid owner keeps it; the others' references go"
        );
        assert_eq!(dependent_fate(&owners(&[("b", Owner::Gone)]), none, false), Fate::Delete(Propagation::Background));
        assert_eq!(
            dependent_fate(&owners(&[("b", Owner::Gone), ("c", Owner::Waiting)]), none, false),
            Fate::Delete(Propagation::Foreground),
            "an owner waiting for it: its own dependents go first"
        );
        assert_eq!(
            dependent_fate(&owners(&[("b", Owner::Gone)]), &[ORPHAN.to_string()], false),
            Fate::Delete(Propagation::Orphan),
            "its own finalizers ask how"
        );
        assert_eq!(dependent_fate(&owners(&[("b", Owner::Gone)]), none, true), Fate::Keep, "already deleting");
    }

    #[test]
    fn references_and_finalizers_are_removed_with_their_lists_once_empty() {
        let mut o = json!({"metadata": {"ownerReferences": [{"uid": "a"}, {"uid": "b"}], "finalizers": [ORPHAN, "x"]}});
        assert!(drop_owners(&mut o, &["a"]));
        assert_eq!(o["metadata"]["ownerReferences"], json!([{"uid": "b"}]));
        assert!(!drop_owners(&mut o, &["z"]));
        assert!(drop_owners(&mut o, &["b"]));
        assert!(o["metadata"].get("ownerReferences").is_none());
        assert!(has_finalizer(&o, ORPHAN) && remove_finalizer(&mut o, ORPHAN) && !has_finalizer(&o, ORPHAN));
        assert!(remove_finalizer(&mut o, "x"));
        assert!(o["metadata"].get("finalizers").is_none());
        assert!(!remove_finalizer(&mut o, "x"));
    }

    #[test]
    fn only_a_reference_that_blocks_holds_an_owner_back() {
        let dep = json!({"metadata": {"ownerReferences": [{"uid": "a", "blockOwnerDeletion": true}, {"uid": "b"}]}});
        assert!(blocks_deletion_of(&dep, "a"));
        assert!(!blocks_deletion_of(&dep, "b"));
        assert!(!blocks_deletion_of(&json!({"metadata": {}}), "a"));
    }
}
