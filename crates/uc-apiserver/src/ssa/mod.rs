//! Server-side apply, as kube-apiserver does it: field managers own the fields they set (recorded in
//! `metadata.managedFields`), an apply merges a manager's intent into the object and removes what the
//! manager stopped declaring, and changing a field another manager owns is a conflict unless forced.
//! Updates (create, update, non-apply patch) of objects with managed fields move the ownership of what
//! they change to their manager.
//!
//! `fields.rs` is the set of paths and its FieldsV1 form, `shape.rs` how each place of an object merges
//! (schemas for custom resources, merge keys for the built-ins), `walk.rs` the pure walks over values,
//! `managed.rs` the entries of `managedFields`.

pub mod fields;
pub mod managed;
pub mod shape;
pub mod walk;

use serde_json::{Value, json};

use fields::{FieldSet, path_string};
use managed::{Entry, Operation};
pub use shape::{Builtin, Shape, Structural};

/// Top-level fields no manager owns.
const IDENTITY: &[&str] = &["apiVersion", "kind"];
/// Metadata no manager owns: identity and what the server sets.
const SERVER_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// The part of an object a write may change, and so own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// All of it (a resource without a status subresource).
    Object,
    /// All but `status` (the main resource of one with a status subresource).
    AllButStatus,
    /// Only `status` (the status subresource).
    Status,
}

/// What a write's managed fields are computed from.
#[derive(Clone, Copy, Debug)]
pub struct Write<'a> {
    /// The field manager.
    pub manager: &'a str,
    /// The API version of the request.
    pub api_version: &'a str,
    /// The subresource written (`status`), if any.
    pub subresource: Option<&'a str>,
    /// What the write may change.
    pub scope: Scope,
    /// Now, RFC 3339.
    pub now: &'a str,
}

/// A field another manager owns, which an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The manager that owns it.
    pub manager: String,
    /// The field, as kube prints it (`.spec.replicas`).
    pub field: String,
}

/// Why an apply was refused.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change (409 unless forced).
    #[error("Apply failed with {} conflict{}: {}", .0.len(), if .0.len() == 1 { "" } else { "s" }, conflicts_text(.0))]
    Conflicts(Vec<Conflict>),
    /// The object's `managedFields` cannot be read.
    #[error("{0}")]
    Invalid(String),
    /// Items of a keyed list in the applied configuration share a key.
    #[error("{}", duplicates_text(.0))]
    Duplicates(Vec<walk::Duplicate>),
}

fn duplicates_text(duplicates: &[walk::Duplicate]) -> String {
    let each = duplicates.iter().map(|d| format!("{}: duplicate entries for key {}", d.field, d.key));
    each.collect::<Vec<_>>().join(", ")
}

fn conflicts_text(conflicts: &[Conflict]) -> String {
    conflicts.iter().map(|c| format!("conflict with \"{}\": {}", c.manager, c.field)).collect::<Vec<_>>().join(", ")
}

/// The part of an object that managers own under `scope`.
fn part(scope: Scope) -> walk::Part<'static> {
    match scope {
        Scope::Object => walk::Part::Without { top: IDENTITY, metadata: SERVER_META },
        Scope::AllButStatus => walk::Part::Without { top: &["apiVersion", "kind", "status"], metadata: SERVER_META },
        Scope::Status => walk::Part::Only("status"),
    }
}

/// A copy of the part of `obj` that managers own under `scope`.
fn owned_part(obj: &Value, scope: Scope) -> Value {
    walk::copy_part(obj, part(scope))
}

fn entry(w: &Write<'_>, operation: Operation, fields: FieldSet) -> Entry {
    Entry {
        manager: w.manager.to_string(),
        operation,
        api_version: w.api_version.to_string(),
        time: w.now.to_string(),
        subresource: w.subresource.map(String::from),
        fields,
    }
}

/// The entries of `live`; an object written before fields were tracked belongs to one manager,
/// `before-first-apply`, as in kube.
fn entries_of(live: &Value, shape: &dyn Shape, w: &Write<'_>) -> Result<Vec<Entry>, ApplyError> {
    let entries = managed::read(live).map_err(|e| ApplyError::Invalid(e.0))?;
    if !entries.is_empty() {
        return Ok(entries);
    }
    let fields = walk::fields_of_part(live, part(Scope::AllButStatus), shape);
    let first = Write { manager: "before-first-apply", subresource: None, ..*w };
    Ok(vec![entry(&first, Operation::Update, fields)])
}

/// Applies `applied` (a manager's intent) to `live` (None: the object does not exist yet and `applied`
/// creates it). Returns the new object, its `managedFields` updated.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    force: bool,
    shape: &dyn Shape,
    w: &Write<'_>,
) -> Result<Value, ApplyError> {
    let mut entries = match live {
        Some(l) => entries_of(l, shape, w)?,
        None => Vec::new(),
    };
    let identity;
    let base = match live {
        Some(l) => l,
        None => {
            let meta = applied.get("metadata");
            let mut created =
                json!({"apiVersion": applied.get("apiVersion"), "kind": applied.get("kind"), "metadata": {}});
            for k in ["name", "namespace", "generateName"] {
                if let Some(v) = meta.and_then(|m| m.get(k)) {
                    created["metadata"][k] = v.clone();
                }
            }
            identity = created;
            &identity
        }
    };
    let intent = owned_part(applied, w.scope);
    let claimed = walk::claimed(&intent, shape).map_err(ApplyError::Duplicates)?;
    let mine = |e: &Entry| e.is(w.manager, Operation::Apply, w.subresource);
    // What the apply changes, against which other managers' fields conflict: only worked out when
    // there are other managers (an apply that creates has none).
    let changed = if entries.iter().any(|e| !mine(e)) {
        let before = owned_part(base, w.scope);
        walk::diff(&before, &walk::merge(&before, &intent, shape), shape).all()
    } else {
        FieldSet::new()
    };
    let mut conflicts = Vec::new();
    for e in entries.iter_mut().filter(|e| !mine(e)) {
        let taken = e.fields.intersection(&changed);
        if taken.is_empty() {
            continue;
        }
        if force {
            e.fields = e.fields.difference(&taken);
        } else {
            conflicts
                .extend(taken.paths().iter().map(|p| Conflict { manager: e.manager.clone(), field: path_string(p) }));
        }
    }
    if !conflicts.is_empty() {
        return Err(ApplyError::Conflicts(conflicts));
    }
    let others = entries.iter().filter(|e| !mine(e)).fold(FieldSet::new(), |acc, e| acc.union(&e.fields));
    let previous = entries.iter().find(|e| mine(e)).map(|e| e.fields.clone()).unwrap_or_default();
    // What the manager stopped declaring goes, unless another manager owns it too. Both sets count the
    // fields on the way to what they own as members (structured-merge-diff's prune): a field declared no
    // more at all goes whole when no one else owns anything under it. An apply always names its object,
    // so it always declares `metadata` (kube leaves name and namespace out of the recorded set only
    // after pruning): only what the manager owned under it can go.
    let mut declared = claimed.with_fields_as_members();
    declared.insert(&[fields::field("metadata")]);
    let dropped = previous.with_fields_as_members().difference(&declared).difference(&others);
    let mut out = walk::merge_owned(base, intent, shape);
    walk::remove(&mut out, &dropped, &others, shape);
    // The manager's entry stays in its place, so that an apply changing nothing leaves the list as it was.
    let recorded = entry(w, Operation::Apply, claimed);
    match entries.iter().position(mine) {
        Some(i) => entries[i] = recorded,
        None => entries.push(recorded),
    }
    managed::write(&mut out, &entries);
    Ok(out)
}

/// Records an update (a create, update or non-apply patch from `old` to `new`) in `new`'s
/// `managedFields`: the writer owns what it changed (all it set, for a create), other managers lose
/// it. `new` without `managedFields` keeps `old`'s, as kube keeps them when a client leaves them out.
pub fn update(old: Option<&Value>, new: &mut Value, shape: &dyn Shape, w: &Write<'_>) -> Result<(), ApplyError> {
    let given = new.get("metadata").and_then(|m| m.get("managedFields")).is_some();
    let mut entries = match (given, old) {
        (true, _) => managed::read(new).map_err(|e| ApplyError::Invalid(e.0))?,
        (false, Some(o)) => managed::read(o).map_err(|e| ApplyError::Invalid(e.0))?,
        (false, None) => Vec::new(),
    };
    let empty = json!({});
    let d = walk::diff_part(old.unwrap_or(&empty), new, part(w.scope), shape);
    let all = d.all();
    for e in entries.iter_mut() {
        e.fields = e.fields.difference(&all);
    }
    if !d.changed.is_empty() {
        match entries.iter_mut().find(|e| e.is(w.manager, Operation::Update, w.subresource)) {
            Some(e) => {
                e.fields = e.fields.union(&d.changed);
                e.time = w.now.to_string();
                e.api_version = w.api_version.to_string();
            }
            None => entries.push(entry(w, Operation::Update, d.changed)),
        }
    }
    managed::write(new, &entries);
    Ok(())
}

/// The field manager of a write that names none: kube's default, the client's user agent up to its
/// first `/` (`kubectl/v1.32.0 (linux/amd64)` → `kubectl`).
pub fn default_manager(user_agent: &str) -> String {
    let name = user_agent.split('/').next().unwrap_or_default().trim();
    name.chars().take(128).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-01-01T00:00:00Z";

    fn w(manager: &str) -> Write<'_> {
        Write { manager, api_version: "v1", subresource: None, scope: Scope::Object, now: NOW }
    }

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": data})
    }

    fn managers(obj: &Value) -> Vec<(String, String)> {
        managed::read(obj)
            .unwrap()
            .iter()
            .map(|e| (e.manager.clone(), e.fields.paths().iter().map(|p| path_string(p)).collect::<Vec<_>>().join(" ")))
            .collect()
    }

    #[test]
    fn apply_creates_then_merges_and_records_the_manager() {
        let created = apply(None, &cm(json!({"a": "1"})), false, &Builtin, &w("alice")).unwrap();
        assert_eq!(created["data"], json!({"a": "1"}));
        assert_eq!(created["metadata"]["name"], json!("c"));
        assert_eq!(managers(&created), vec![("alice".into(), ".data.a".into())]);
        assert_eq!(created["metadata"]["managedFields"][0]["operation"], json!("Apply"));
        let both = apply(Some(&created), &cm(json!({"b": "2"})), false, &Builtin, &w("bob")).unwrap();
        assert_eq!(both["data"], json!({"a": "1", "b": "2"}));
        assert_eq!(managers(&both), vec![("alice".into(), ".data.a".into()), ("bob".into(), ".data.b".into())]);
        // alice stops declaring a: it goes; bob's b stays.
        let dropped = apply(Some(&both), &cm(json!({"x": "y"})), false, &Builtin, &w("alice")).unwrap();
        assert_eq!(dropped["data"], json!({"b": "2", "x": "y"}));
    }

    #[test]
    fn a_field_applied_empty_then_filled_stays() {
        // `podSelector: {}` owns the field itself; `podSelector: {matchLabels: …}` owns what is under
        // it: the field is still declared (kube: named fields on the way are members), so it stays.
        let empty = apply(None, &cm(json!({})), false, &Builtin, &w("alice")).unwrap();
        assert_eq!(managers(&empty), vec![("alice".into(), ".data".into())]);
        let filled = apply(Some(&empty), &cm(json!({"k": "v"})), false, &Builtin, &w("alice")).unwrap();
        assert_eq!(filled["data"], json!({"k": "v"}));
        assert_eq!(managers(&filled), vec![("alice".into(), ".data.k".into())]);
        // What it no longer declares under the field goes.
        let other = apply(Some(&filled), &cm(json!({"j": "w"})), false, &Builtin, &w("alice")).unwrap();
        assert_eq!(other["data"], json!({"j": "w"}));
    }

    #[test]
    fn a_field_declared_no_more_goes_whole_unless_another_manager_owns_under_it() {
        let filled = apply(None, &cm(json!({"k": "v"})), false, &Builtin, &w("alice")).unwrap();
        let mut bare = cm(json!({}));
        bare.as_object_mut().unwrap().remove("data");
        let left = apply(Some(&filled), &bare, false, &Builtin, &w("alice")).unwrap();
        assert_eq!(left.get("data"), None, "the field goes, not only its keys");
        assert_eq!(left["metadata"]["name"], filled["metadata"]["name"], "metadata is still declared");
        // Labels declared no more go whole; metadata, always declared by an apply, stays with its
        // managed fields.
        let mut labelled = cm(json!({"k": "v"}));
        labelled["metadata"]["labels"] = json!({"team": "a"});
        let labelled = apply(None, &labelled, false, &Builtin, &w("alice")).unwrap();
        let left = apply(Some(&labelled), &cm(json!({"k": "v"})), false, &Builtin, &w("alice")).unwrap();
        assert_eq!(left["metadata"].get("labels"), None);
        assert_eq!(managers(&left), vec![("alice".into(), ".data.k".into())]);
        // Another manager's key under it keeps the field: only alice's key goes.
        let shared = apply(Some(&filled), &cm(json!({"j": "w"})), false, &Builtin, &w("bob")).unwrap();
        let left = apply(Some(&shared), &bare, false, &Builtin, &w("alice")).unwrap();
        assert_eq!(left["data"], json!({"j": "w"}));
    }

    #[test]
    fn an_applied_list_that_repeats_a_key_is_rejected_with_where() {
        let live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                          "spec": {"containers": [{"name": "a", "image": "x"}]}});
        let applied = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                             "spec": {"containers": [{"name": "b", "image": "y"}, {"name": "b", "image": "z"}]}});
        let err = apply(Some(&live), &applied, true, &Builtin, &w("alice")).unwrap_err();
        assert_eq!(err.to_string(), "spec.containers[1]: duplicate entries for key [name=\"b\"]");
        assert!(matches!(apply(None, &applied, false, &Builtin, &w("alice")), Err(ApplyError::Duplicates(_))));
    }

    #[test]
    fn changing_another_managers_field_conflicts_unless_forced() {
        let created = apply(None, &cm(json!({"a": "1"})), false, &Builtin, &w("alice")).unwrap();
        let err = apply(Some(&created), &cm(json!({"a": "2"})), false, &Builtin, &w("bob")).unwrap_err();
        assert_eq!(err, ApplyError::Conflicts(vec![Conflict { manager: "alice".into(), field: ".data.a".into() }]));
        assert_eq!(err.to_string(), "Apply failed with 1 conflict: conflict with \"alice\": .data.a");
        // The same value is shared, not a conflict.
        let shared = apply(Some(&created), &cm(json!({"a": "1"})), false, &Builtin, &w("bob")).unwrap();
        assert_eq!(managers(&shared).len(), 2);
        // alice lets go of a shared field: it stays, bob still owns it.
        let kept = apply(Some(&shared), &cm(json!({})), false, &Builtin, &w("alice")).unwrap();
        assert_eq!(kept["data"], json!({"a": "1"}));
        let forced = apply(Some(&created), &cm(json!({"a": "2"})), true, &Builtin, &w("bob")).unwrap();
        assert_eq!(forced["data"]["a"], json!("2"));
        assert_eq!(
            managers(&forced),
            vec![("bob".into(), ".data.a".into())],
            "ownership moved; alice's entry is empty"
        );
    }

    #[test]
    fn updates_move_ownership_of_what_they_change() {
        let created = apply(None, &cm(json!({"a": "1", "b": "2"})), false, &Builtin, &w("alice")).unwrap();
        let mut edited = created.clone();
        edited["data"]["a"] = json!("9");
        edited["metadata"].as_object_mut().unwrap().remove("managedFields");
        update(Some(&created), &mut edited, &Builtin, &w("kubectl-edit")).unwrap();
        assert_eq!(
            managers(&edited),
            vec![("alice".into(), ".data.b".into()), ("kubectl-edit".into(), ".data.a".into())],
            "managedFields left out of the request are kept, and the edited field moves"
        );
        let again = apply(Some(&edited), &cm(json!({"a": "1", "b": "2"})), false, &Builtin, &w("alice")).unwrap_err();
        assert!(matches!(again, ApplyError::Conflicts(ref c) if c[0].manager == "kubectl-edit"));
        let mut created = cm(json!({"a": "1"}));
        update(None, &mut created, &Builtin, &w("kubectl-create")).unwrap();
        assert_eq!(
            managers(&created),
            vec![("kubectl-create".into(), ".data .data.a".into())],
            "a create owns what it set"
        );
        assert_eq!(created["metadata"]["managedFields"][0]["operation"], json!("Update"));
        let first = apply(Some(&created), &cm(json!({"a": "2"})), false, &Builtin, &w("alice")).unwrap_err();
        assert!(matches!(first, ApplyError::Conflicts(ref c) if c[0].manager == "kubectl-create"));
        // An object stored before fields were tracked belongs to before-first-apply on its first apply.
        let legacy = cm(json!({"a": "1"}));
        let first = apply(Some(&legacy), &cm(json!({"a": "2"})), false, &Builtin, &w("alice")).unwrap_err();
        assert!(matches!(first, ApplyError::Conflicts(ref c) if c[0].manager == "before-first-apply"));
        assert_eq!(default_manager("kubectl/v1.32.0 (linux/amd64) kubernetes/abc"), "kubectl");
    }

    #[test]
    fn status_is_owned_only_through_its_subresource() {
        let mut obj = cm(json!({"a": "1"}));
        obj["status"] = json!({"phase": "x"});
        let main = Write { scope: Scope::AllButStatus, ..w("alice") };
        let applied = apply(None, &obj, false, &Builtin, &main).unwrap();
        assert!(applied.get("status").is_none(), "status is not applied through the main resource");
        let status = Write { scope: Scope::Status, subresource: Some("status"), ..w("ctl") };
        let with_status = apply(Some(&applied), &obj, false, &Builtin, &status).unwrap();
        assert_eq!(with_status["status"], json!({"phase": "x"}));
        assert_eq!(with_status["data"], json!({"a": "1"}));
        let entries = managed::read(&with_status).unwrap();
        assert_eq!(entries[1].subresource.as_deref(), Some("status"));
    }

    #[test]
    fn walking_a_part_in_place_is_walking_a_copy_of_it() {
        let objects = [
            json!({}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "3"}}),
            json!({"apiVersion": "v1", "metadata": {}, "data": {"a": "1"}}),
            json!({"metadata": "odd", "status": {"x": 1}}),
            json!({"metadata": {"name": "c", "labels": {"app": "a"}, "managedFields": [{"manager": "m"}]},
                   "spec": {"replicas": 2, "containers": [{"name": "c", "image": "i"}]}, "status": {"ready": true}}),
            json!({"kind": "Foo", "metadata": {"name": "c", "labels": {"app": "b"}, "uid": "u"},
                   "spec": {"replicas": 3}, "status": {"ready": false, "n": 2}}),
        ];
        for scope in [Scope::Object, Scope::AllButStatus, Scope::Status] {
            for old in &objects {
                let copy = walk::fields_of(&owned_part(old, scope), &Builtin);
                assert_eq!(walk::fields_of_part(old, part(scope), &Builtin), copy, "fields of {old} under {scope:?}");
                for new in &objects {
                    let copies = walk::diff(&owned_part(old, scope), &owned_part(new, scope), &Builtin);
                    let in_place = walk::diff_part(old, new, part(scope), &Builtin);
                    assert_eq!(in_place, copies, "{old} → {new} under {scope:?}");
                }
            }
        }
    }
}
