//! Rolling updates driven by `ControllerRevision` objects (`universalcontroller.njuics.cn/v1alpha1`,
//! thesis listing 4.7).
//!
//! A revision holds the parent's revision fields (`parentPatch`, the paths of `revisionHistory.fieldPaths`,
//! default `spec`) and the names of the children that belong to it. Every child of a rolling type belongs
//! to exactly one revision; its desired state is what the hook answers for the parent *as it was at that
//! revision*. A rollout moves one child at a time from an old revision to the latest one, in the order the
//! latest answer lists them, and only while every child already at the latest revision is up to date and
//! passes its status checks. The move is written to the revisions before the child changes, so a
//! controller restarted mid-rollout resumes where it stopped, and a not-yet-moved child that a user deletes
//! comes back at its old revision.
//!
//! Everything here is pure; the controller loads and writes the objects.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value, json};
use uc_api::Pointer;
use uc_api::controller::{StatusChecks, UpdateMethod};

use crate::apply;
use crate::informer::Obj;
use crate::plan::passes_checks;

/// Label naming the API group of the parent a revision belongs to.
pub const LABEL_API_GROUP: &str = "universalcontroller.njuics.cn/apiGroup";
/// Label naming the resource of the parent a revision belongs to.
pub const LABEL_RESOURCE: &str = "universalcontroller.njuics.cn/resource";

/// Children of one type: `(apiGroup, kind)`.
pub type ChildGroup = (String, String);

/// One revision of a parent.
#[derive(Clone, Debug, PartialEq)]
pub struct Revision {
    /// Object name: `<resource>.<group>-<hash of the parent uid and the patch>`.
    pub name: String,
    /// The parent's revision fields at this revision.
    pub patch: Value,
    /// Sequence number: higher is newer.
    pub revision: i64,
    /// Names of the children that belong to this revision, per child type.
    pub children: BTreeMap<ChildGroup, BTreeSet<String>>,
    /// The stored object, when there is one.
    pub stored: Option<Value>,
}

impl Revision {
    /// Reads a stored ControllerRevision.
    pub fn from_object(obj: &Value) -> Revision {
        let mut children: BTreeMap<ChildGroup, BTreeSet<String>> = BTreeMap::new();
        for g in obj.get("children").and_then(Value::as_array).into_iter().flatten() {
            let s = |f: &str| g.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
            let names = g.get("names").and_then(Value::as_array).into_iter().flatten();
            children
                .entry((s("apiGroup"), s("kind")))
                .or_default()
                .extend(names.filter_map(|n| n.as_str().map(String::from)));
        }
        Revision {
            name: obj.at("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string(),
            patch: obj.get("parentPatch").cloned().unwrap_or_else(|| json!({})),
            revision: obj.get("revision").and_then(Value::as_i64).unwrap_or(0),
            children,
            stored: Some(obj.clone()),
        }
    }

    /// The `children` field as stored: groups with at least one name, sorted.
    pub fn children_value(&self) -> Value {
        let groups: Vec<Value> = self
            .children
            .iter()
            .filter(|(_, names)| !names.is_empty())
            .map(|((group, kind), names)| json!({"apiGroup": group, "kind": kind, "names": names}))
            .collect();
        Value::Array(groups)
    }

    /// Whether no child belongs to this revision.
    pub fn is_empty(&self) -> bool {
        self.children.values().all(BTreeSet::is_empty)
    }

    /// Whether the stored object differs from this revision's children (or there is none).
    pub fn needs_write(&self) -> bool {
        match &self.stored {
            None => true,
            Some(s) => s.get("children").cloned().unwrap_or_else(|| json!([])) != self.children_value(),
        }
    }
}

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('.').filter(|s| !s.is_empty())
}

/// The parent's revision fields: only the `field_paths` (dotted) and what is nested in them.
pub fn parent_patch(parent: &Value, field_paths: &[String]) -> Value {
    let mut out = json!({});
    for path in field_paths {
        let segs: Vec<&str> = segments(path).collect();
        let mut src = parent;
        let found = segs.iter().all(|s| match src.get(s) {
            Some(v) => {
                src = v;
                true
            }
            None => false,
        });
        if found && !segs.is_empty() {
            set_path(&mut out, &segs, src.clone());
        }
    }
    out
}

fn set_path(target: &mut Value, segs: &[&str], value: Value) {
    let mut cur = target;
    for s in &segs[..segs.len() - 1] {
        if !cur.get(s).is_some_and(Value::is_object) {
            cur[*s] = json!({});
        }
        cur = &mut cur[*s];
    }
    cur[segs[segs.len() - 1]] = value;
}

fn remove_path(target: &mut Value, segs: &[&str]) {
    let mut cur = target;
    for s in &segs[..segs.len() - 1] {
        match cur.get_mut(s) {
            Some(v) => cur = v,
            None => return,
        }
    }
    if let Some(m) = cur.as_object_mut() {
        m.remove(segs[segs.len() - 1]);
    }
}

/// The parent as it was at a revision: the revision's fields in place of the parent's; every other field
/// is the parent's present one (fields outside the revision history apply at once).
pub fn parent_at(parent: &Value, patch: &Value, field_paths: &[String]) -> Value {
    let mut out = parent.clone();
    for path in field_paths {
        let segs: Vec<&str> = segments(path).collect();
        if segs.is_empty() {
            continue;
        }
        remove_path(&mut out, &segs);
        let mut src = patch;
        if segs.iter().all(|s| match src.get(s) {
            Some(v) => {
                src = v;
                true
            }
            None => false,
        }) {
            set_path(&mut out, &segs, src.clone());
        }
    }
    out
}

/// The revision name for a parent's patch, as in thesis listing 4.7: `<resource>.<group>-<hash>`.
pub fn revision_name(resource: &str, group: &str, parent_uid: &str, patch: &Value) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(parent_uid.as_bytes());
    ctx.update(b"\n");
    ctx.update(patch.to_string().as_bytes());
    let hash: String = ctx.finish().as_ref()[..20].iter().map(|b| format!("{b:02x}")).collect();
    let mut prefix = if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") };
    prefix.truncate(253 - hash.len() - 1);
    format!("{}-{hash}", prefix.trim_end_matches(['.', '-']))
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or_default()
}

/// One rolling child type as the rollout sees it.
pub struct TypeRollout<'a> {
    /// Child type.
    pub group: ChildGroup,
    /// `RollingRecreate` or `RollingInPlace`.
    pub method: UpdateMethod,
    /// Checks a child at the latest revision must pass before the next one moves.
    pub checks: Option<&'a StatusChecks>,
    /// The children of this type the parent has.
    pub observed: &'a [Obj],
    /// Per revision (same index as the revisions), the desired children of this type, decorated.
    pub desired: Vec<Vec<Value>>,
}

/// What the rollout decided for one child type.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    /// The desired children, in the latest answer's order, each at the revision it belongs to.
    pub desired: Vec<Value>,
    /// The child that moved to the latest revision in this step.
    pub moved: Option<String>,
    /// Children at the latest revision, up to date and passing their checks.
    pub updated: usize,
    /// Children the latest answer wants.
    pub total: usize,
    /// The first child still waiting for its move.
    pub next: Option<String>,
}

/// Whether an observed child carries its desired state and passes the checks of its rollout.
pub fn is_updated(observed: &Value, desired: &Value, method: UpdateMethod, checks: Option<&StatusChecks>) -> bool {
    if uc_api::meta::is_deleting(observed) {
        return false;
    }
    if apply::apply(observed, desired) != *observed || !passes_checks(observed, checks) {
        return false;
    }
    if method == UpdateMethod::RollingInPlace {
        // A controller of the child must have seen its latest spec, when it reports what it saw.
        let generation = observed.at("/metadata/generation").and_then(Value::as_i64);
        let seen = observed.at("/status/observedGeneration").and_then(Value::as_i64);
        if let (Some(g), Some(s)) = (generation, seen) {
            return s >= g;
        }
    }
    true
}

/// One step of a rollout of one child type. `revisions[latest]` is the latest revision; the children
/// lists of `revisions` are updated to say where every child belongs after this step.
pub fn roll(revisions: &mut [Revision], latest: usize, t: TypeRollout) -> Outcome {
    let observed: HashMap<&str, &Obj> = t.observed.iter().map(|o| (meta(o, "name"), o)).collect();
    let latest_desired = &t.desired[latest];
    let wanted: BTreeSet<&str> = latest_desired.iter().map(|d| meta(d, "name")).collect();

    // Where each child belongs: the latest revision wins, then the newest old one (a move interrupted
    // between its two writes leaves the name in both).
    let mut order: Vec<usize> = (0..revisions.len()).collect();
    order.sort_by_key(|&i| (i != latest, std::cmp::Reverse(revisions[i].revision)));
    let mut owner: BTreeMap<String, usize> = BTreeMap::new();
    for &i in &order {
        for name in revisions[i].children.get(&t.group).into_iter().flatten() {
            if observed.contains_key(name.as_str()) || wanted.contains(name.as_str()) {
                owner.entry(name.clone()).or_insert(i);
            }
        }
    }
    let desired_at = |rev: usize, name: &str| t.desired[rev].iter().find(|d| meta(d, "name") == name);
    for d in latest_desired {
        let name = meta(d, "name");
        let at = owner.get(name).copied().unwrap_or(latest);
        // A child the old revision does not want any more (or a new one) belongs to the latest.
        if at == latest || desired_at(at, name).is_none() {
            owner.insert(name.to_string(), latest);
        }
    }

    let latest_ok = latest_desired
        .iter()
        .filter(|d| owner.get(meta(d, "name")) == Some(&latest))
        .all(|d| observed.get(meta(d, "name")).is_some_and(|o| is_updated(o, d, t.method, t.checks)));
    let pending: Vec<&str> =
        latest_desired.iter().map(|d| meta(d, "name")).filter(|n| owner.get(*n) != Some(&latest)).collect();
    let mut outcome = Outcome { total: latest_desired.len(), ..Default::default() };
    if latest_ok && let Some(first) = pending.first() {
        owner.insert(first.to_string(), latest);
        outcome.moved = Some(first.to_string());
    }
    outcome.next = pending.iter().find(|n| Some(**n) != outcome.moved.as_deref()).map(|n| n.to_string());

    for d in latest_desired {
        let name = meta(d, "name");
        let at = owner[name];
        if at == latest && observed.get(name).is_some_and(|o| is_updated(o, d, t.method, t.checks)) {
            outcome.updated += 1;
        }
        outcome.desired.push(desired_at(at, name).unwrap_or(d).clone());
    }
    for (i, rev) in revisions.iter_mut().enumerate() {
        let names: BTreeSet<String> = owner.iter().filter(|(_, r)| **r == i).map(|(n, _)| n.clone()).collect();
        if names.is_empty() {
            rev.children.remove(&t.group);
        } else {
            rev.children.insert(t.group.clone(), names);
        }
    }
    outcome
}

/// The `Updated` condition of a parent: whether every rolling child is at the latest revision.
pub fn updated_condition(latest: &str, updated: usize, total: usize, next: Option<&str>) -> Value {
    if updated == total && next.is_none() {
        json!({"type": "Updated", "status": "True", "reason": "RolloutComplete",
               "message": format!("{updated} of {total} children at revision {latest}")})
    } else {
        let next = next.map(|n| format!("; next: {n}")).unwrap_or_default();
        json!({"type": "Updated", "status": "False", "reason": "RollingUpdate",
               "message": format!("{updated} of {total} children at revision {latest}{next}")})
    }
}

pub use uc_api::conditions::set_condition;

/// The labels of a parent's revisions: the parent's group and resource (under `keys`:
/// [`LABEL_API_GROUP`], [`LABEL_RESOURCE`] or Metacontroller's), and the selector's labels.
pub fn labels(
    keys: [&str; 2],
    group: &str,
    resource: &str,
    selector_labels: &Map<String, Value>,
) -> Map<String, Value> {
    let mut l = selector_labels.clone();
    l.insert(keys[0].into(), Value::String(group.into()));
    l.insert(keys[1].into(), Value::String(resource.into()));
    l
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use uc_api::controller::ConditionCheck;

    fn pod(name: &str, image: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}, "spec": {"image": image}})
    }

    fn observed(name: &str, image: &str, ready: bool) -> Obj {
        let mut o = apply::create(&pod(name, image));
        o["metadata"]["uid"] = json!(format!("uid-{name}"));
        o["status"] = json!({"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]});
        Arc::new(o)
    }

    fn rev(name: &str, n: i64, children: &[&str]) -> Revision {
        let mut c = BTreeMap::new();
        if !children.is_empty() {
            c.insert(group(), children.iter().map(|s| s.to_string()).collect());
        }
        Revision { name: name.into(), patch: json!({}), revision: n, children: c, stored: None }
    }

    fn group() -> ChildGroup {
        (String::new(), "Pod".into())
    }

    fn names(r: &Revision) -> Vec<String> {
        r.children.get(&group()).map(|s| s.iter().cloned().collect()).unwrap_or_default()
    }

    fn ready() -> StatusChecks {
        StatusChecks {
            conditions: vec![ConditionCheck { type_: "Ready".into(), status: Some("True".into()), reason: None }],
        }
    }

    /// Desired pods p2, p1, p0 (descending, as CatSet lists them) at image `v`.
    fn desired(v: &str) -> Vec<Value> {
        ["p2", "p1", "p0"].iter().map(|n| pod(n, v)).collect()
    }

    #[test]
    fn patch_and_parent_at_revision() {
        let parent = json!({"metadata": {"name": "x"}, "spec": {"replicas": 3, "template": {"image": "v2"}}});
        let paths = vec!["spec.template".to_string()];
        let patch = parent_patch(&parent, &paths);
        assert_eq!(patch, json!({"spec": {"template": {"image": "v2"}}}));
        let old = parent_at(&parent, &json!({"spec": {"template": {"image": "v1"}}}), &paths);
        assert_eq!(old["spec"], json!({"replicas": 3, "template": {"image": "v1"}}), "other fields stay current");
        assert_eq!(parent_patch(&parent, &["spec".into()]), json!({"spec": parent["spec"]}));
        assert_eq!(parent_at(&parent, &json!({}), &paths)["spec"], json!({"replicas": 3}));
        let a = revision_name("catsets", "mlhub.njuics.cn", "u1", &patch);
        assert!(a.starts_with("catsets.mlhub.njuics.cn-") && a.len() == "catsets.mlhub.njuics.cn-".len() + 40);
        assert_eq!(a, revision_name("catsets", "mlhub.njuics.cn", "u1", &patch), "stable");
        assert_ne!(a, revision_name("catsets", "mlhub.njuics.cn", "u2", &patch), "per parent");
        assert!(revision_name("things", "", "u", &patch).starts_with("things-"));
    }

    #[test]
    fn first_sync_puts_every_child_in_the_latest_revision() {
        let mut revs = vec![rev("r1", 1, &[])];
        let obs = vec![observed("p0", "v1", true)];
        let out = roll(
            &mut revs,
            0,
            TypeRollout {
                group: group(),
                method: UpdateMethod::RollingRecreate,
                checks: Some(&ready()),
                observed: &obs,
                desired: vec![desired("v1")],
            },
        );
        assert_eq!(names(&revs[0]), vec!["p0", "p1", "p2"]);
        assert_eq!(out.desired, desired("v1"));
        assert_eq!((out.updated, out.total, out.moved), (1, 3, None));
        assert!(revs[0].needs_write());
    }

    fn step(revs: &mut [Revision], obs: &[Obj]) -> Outcome {
        roll(
            revs,
            1,
            TypeRollout {
                group: group(),
                method: UpdateMethod::RollingRecreate,
                checks: Some(&ready()),
                observed: obs,
                desired: vec![desired("v1"), desired("v2")],
            },
        )
    }

    fn images(out: &Outcome) -> Vec<String> {
        out.desired.iter().map(|d| format!("{}={}", meta(d, "name"), d["spec"]["image"].as_str().unwrap())).collect()
    }

    #[test]
    fn rollout_moves_one_child_at_a_time_in_answer_order() {
        let mut revs = vec![rev("old", 1, &["p0", "p1", "p2"]), rev("new", 2, &[])];
        let obs = vec![observed("p0", "v1", true), observed("p1", "v1", true), observed("p2", "v1", true)];
        let out = step(&mut revs, &obs);
        assert_eq!(out.moved.as_deref(), Some("p2"), "the first one the latest answer lists");
        assert_eq!(images(&out), vec!["p2=v2", "p1=v1", "p0=v1"]);
        assert_eq!((names(&revs[0]), names(&revs[1])), (vec!["p0".to_string(), "p1".into()], vec!["p2".to_string()]));
        assert_eq!(out.next.as_deref(), Some("p1"));

        // p2 still runs the old image (its delete is under way): nothing else moves.
        let out = step(&mut revs, &obs);
        assert_eq!(out.moved, None);
        assert_eq!(images(&out), vec!["p2=v2", "p1=v1", "p0=v1"]);

        // p2 is back at v2 but not Ready: still nothing.
        let obs = vec![observed("p0", "v1", true), observed("p1", "v1", true), observed("p2", "v2", false)];
        assert_eq!(step(&mut revs, &obs).moved, None);
        // Ready: p1 moves.
        let obs = vec![observed("p0", "v1", true), observed("p1", "v1", true), observed("p2", "v2", true)];
        let out = step(&mut revs, &obs);
        assert_eq!(out.moved.as_deref(), Some("p1"));
        assert_eq!(out.updated, 1);
        assert_eq!(names(&revs[0]), vec!["p0"]);
    }

    #[test]
    fn a_deleted_child_not_yet_moved_returns_at_its_old_revision() {
        let mut revs = vec![rev("old", 1, &["p0", "p1"]), rev("new", 2, &["p2"])];
        // p2 was moved and is not Ready yet; the user deleted p0.
        let obs = vec![observed("p1", "v1", true), observed("p2", "v2", false)];
        let out = step(&mut revs, &obs);
        assert_eq!(out.moved, None);
        assert_eq!(images(&out), vec!["p2=v2", "p1=v1", "p0=v1"], "p0 comes back at the old revision");
        assert_eq!(names(&revs[0]), vec!["p0", "p1"]);
    }

    #[test]
    fn an_interrupted_move_counts_for_the_latest_revision() {
        // Crash between "add to latest" and "remove from old".
        let mut revs = vec![rev("old", 1, &["p0", "p1", "p2"]), rev("new", 2, &["p2"])];
        let obs = vec![observed("p0", "v1", true), observed("p1", "v1", true), observed("p2", "v1", true)];
        let out = step(&mut revs, &obs);
        assert_eq!(out.moved, None, "p2 at the latest revision is not updated yet");
        assert_eq!(images(&out), vec!["p2=v2", "p1=v1", "p0=v1"]);
        assert_eq!(names(&revs[0]), vec!["p0", "p1"]);
        assert!(revs[0].needs_write());
    }

    #[test]
    fn rollout_completes_and_old_revision_empties() {
        let mut revs = vec![rev("old", 1, &["p0"]), rev("new", 2, &["p1", "p2"])];
        let obs = vec![observed("p0", "v1", true), observed("p1", "v2", true), observed("p2", "v2", true)];
        let out = step(&mut revs, &obs);
        assert_eq!(out.moved.as_deref(), Some("p0"));
        assert!(revs[0].is_empty());
        let obs = vec![observed("p0", "v2", true), observed("p1", "v2", true), observed("p2", "v2", true)];
        let out = step(&mut revs, &obs);
        assert_eq!((out.updated, out.total, out.next), (3, 3, None));
        assert_eq!(updated_condition("new", 3, 3, None)["status"], json!("True"));
        assert_eq!(updated_condition("new", 1, 3, Some("p0"))["reason"], json!("RollingUpdate"));
    }

    #[test]
    fn scale_down_drops_names_that_are_gone() {
        let mut revs = vec![rev("old", 1, &["p0", "p1", "p2", "p3"]), rev("new", 2, &[])];
        let obs = vec![observed("p0", "v1", true), observed("p1", "v1", true), observed("p2", "v1", true)];
        step(&mut revs, &obs);
        assert!(!names(&revs[0]).contains(&"p3".to_string()), "neither observed nor wanted");
    }

    #[test]
    fn in_place_waits_for_observed_generation() {
        let mut o = (*observed("d", "v2", true)).clone();
        o["metadata"]["generation"] = json!(2);
        o["status"]["observedGeneration"] = json!(1);
        let d = pod("d", "v2");
        assert!(!is_updated(&o, &d, UpdateMethod::RollingInPlace, Some(&ready())));
        assert!(is_updated(&o, &d, UpdateMethod::RollingRecreate, Some(&ready())));
        o["status"]["observedGeneration"] = json!(2);
        assert!(is_updated(&o, &d, UpdateMethod::RollingInPlace, Some(&ready())));
    }

    #[test]
    fn conditions_keep_their_transition_time() {
        let mut status = json!({"replicas": 1});
        let prev = json!({"conditions": [{"type": "Updated", "status": "True", "lastTransitionTime": "t0"}]});
        set_condition(&mut status, updated_condition("r", 1, 1, None), Some(&prev), "t1");
        assert_eq!(status["conditions"][0]["lastTransitionTime"], json!("t0"));
        let mut status = json!({});
        set_condition(&mut status, updated_condition("r", 0, 1, Some("a")), Some(&prev), "t1");
        assert_eq!(status["conditions"][0]["lastTransitionTime"], json!("t1"));
    }
}
