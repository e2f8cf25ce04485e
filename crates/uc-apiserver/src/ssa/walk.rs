//! The walks of server-side apply over objects, each guided by the resource's shape: the fields a value
//! sets, the fields that differ between two values, an applied configuration merged into the live
//! object, and fields removed from it. Pure functions of JSON values.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};

use super::fields::{FieldSet, field, value};
use super::shape::{ITEM, Kind, Shape};

/// The path element of a keyed list's item: its key fields (a missing `protocol` is TCP, kube's default).
fn item_key(item: &Value, keys: &[String]) -> String {
    // As `key` writes a map of these fields (sorted, each once), without building the map.
    let mut names: Vec<&str> = keys.iter().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let mut out = b"k:{".to_vec();
    for (i, name) in names.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Writing JSON into a vector cannot fail.
        let _ = serde_json::to_writer(&mut out, name);
        out.push(b':');
        match item.get(name) {
            Some(v) if !v.is_null() => {
                let _ = serde_json::to_writer(&mut out, v);
            }
            _ if name == "protocol" => out.extend_from_slice(b"\"TCP\""),
            _ => out.extend_from_slice(b"null"),
        }
    }
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

/// The place a walk is at: field names from the root (`ITEM` for a list's item). The segments' buffers
/// are kept when the walk goes back up, so a walk allocates for a segment only the first time it goes
/// that deep, not at every place it visits.
#[derive(Default)]
struct Path {
    segments: Vec<String>,
    depth: usize,
}

impl Path {
    fn get(&self) -> &[String] {
        &self.segments[..self.depth]
    }
}

fn with<T>(path: &mut Path, segment: &str, f: impl FnOnce(&mut Path) -> T) -> T {
    if path.depth == path.segments.len() {
        path.segments.push(String::new());
    }
    let s = &mut path.segments[path.depth];
    s.clear();
    s.push_str(segment);
    path.depth += 1;
    let out = f(path);
    path.depth -= 1;
    out
}

/// What of an object a walk sees: all of it; all but some members of its top level and of its
/// `metadata` (a `metadata` left with no members is not there); or one member of its top level. The
/// walks look past the rest where they stand instead of walking a copy without it.
#[derive(Clone, Copy, Debug)]
pub enum Part<'a> {
    /// Every member.
    All,
    /// All but these.
    Without {
        /// Members of the top level left out.
        top: &'a [&'a str],
        /// Members of `metadata` left out.
        metadata: &'a [&'a str],
    },
    /// Only this member of the top level.
    Only(&'a str),
}

impl Part<'_> {
    /// The member `k` (`v`) of the object at `path`, if this part has it.
    fn member<'v>(self, path: &[String], k: &str, v: Option<&'v Value>) -> Option<&'v Value> {
        let v = v?;
        match (self, path) {
            (Part::Without { top, metadata }, []) => {
                if top.contains(&k) {
                    return None;
                }
                let left_empty = |m: &Map<String, Value>| m.keys().all(|mk| metadata.contains(&mk.as_str()));
                match v {
                    Value::Object(m) if k == "metadata" && left_empty(m) => None,
                    _ => Some(v),
                }
            }
            (Part::Without { metadata, .. }, [m]) if m == "metadata" => (!metadata.contains(&k)).then_some(v),
            (Part::Only(name), []) => (k == name).then_some(v),
            _ => Some(v),
        }
    }
}

/// What a value at a place owns: (`own`: the place itself, the paths under it). An empty object or
/// list is owned as a whole, like a scalar.
fn owned(v: &Value, shape: &dyn Shape, path: &mut Path, part: Part<'_>) -> (bool, FieldSet) {
    owned_noting(v, shape, path, part, &mut false)
}

/// [`owned`], noting in `repeated` whether a keyed list has items that share a key.
fn owned_noting(
    v: &Value,
    shape: &dyn Shape,
    path: &mut Path,
    part: Part<'_>,
    repeated: &mut bool,
) -> (bool, FieldSet) {
    let mut sub = FieldSet::new();
    match (shape.kind(path.get(), v), v) {
        (Kind::Granular, Value::Object(m)) => {
            for (k, child) in m {
                let Some(child) = part.member(path.get(), k, Some(child)) else { continue };
                let (own, s) = with(path, k, |p| owned_noting(child, shape, p, part, repeated));
                sub.insert_child(field(k), own, s);
            }
        }
        (Kind::Keyed(keys), Value::Array(items)) => {
            let mut level = Vec::with_capacity(items.len());
            for item in items {
                let (_, s) = with(path, ITEM, |p| owned_noting(item, shape, p, part, repeated));
                level.push((item_key(item, &keys), true, s));
            }
            sub = FieldSet::from_elements(level);
            // Items sharing a key were merged into one element.
            *repeated |= sub.len() < items.len();
        }
        (Kind::Set, Value::Array(items)) => {
            sub = FieldSet::from_elements(items.iter().map(|i| (value(i), true, FieldSet::new())).collect());
        }
        _ => return (true, sub),
    }
    (sub.is_empty(), sub)
}

/// The fields an object sets (what applying it claims).
pub fn fields_of(obj: &Value, shape: &dyn Shape) -> FieldSet {
    fields_of_part(obj, Part::All, shape)
}

/// The fields an applied configuration claims; or, if items of a keyed list in it share a key, where.
pub fn claimed(obj: &Value, shape: &dyn Shape) -> Result<FieldSet, Vec<Duplicate>> {
    let mut repeated = false;
    let (_, set) = owned_noting(obj, shape, &mut Path::default(), Part::All, &mut repeated);
    match repeated.then(|| duplicate_keys(obj, shape)) {
        Some(duplicates) if !duplicates.is_empty() => Err(duplicates),
        _ => Ok(set),
    }
}

/// The fields the part `part` of an object sets.
pub fn fields_of_part(obj: &Value, part: Part<'_>, shape: &dyn Shape) -> FieldSet {
    owned(obj, shape, &mut Path::default(), part).1
}

/// The paths where two versions of an object differ: `changed` (set or changed in the new one) and
/// `removed` (only in the old one).
#[derive(Debug, Default, PartialEq)]
pub struct Diff {
    /// Set or changed by the new version.
    pub changed: FieldSet,
    /// Gone from the new version.
    pub removed: FieldSet,
}

impl Diff {
    /// Both.
    pub fn all(&self) -> FieldSet {
        self.changed.union(&self.removed)
    }
}

/// A keyed list's items by key (the first of any that share one).
fn index<'a>(items: &'a [Value], keys: &[String]) -> BTreeMap<String, &'a Value> {
    let mut out = BTreeMap::new();
    for i in items {
        out.entry(item_key(i, keys)).or_insert(i);
    }
    out
}

/// Whether set-list `b` lacks a value, asked of `asked` values: for long lists the items are looked up
/// by their JSON rather than compared with every item of `b`.
fn lacks(b: &[Value], asked: usize) -> impl Fn(&Value) -> bool + '_ {
    let by_json: Option<HashSet<String>> = (b.len().saturating_mul(asked) > 256).then(|| b.iter().map(value).collect());
    move |v| match &by_json {
        Some(json) => !json.contains(&value(v)),
        None => !b.contains(v),
    }
}

/// The items of set-list `a` that `b` lacks, each as its path element.
fn only_in(a: &[Value], b: &[Value]) -> Vec<(String, bool, FieldSet)> {
    let lacked = lacks(b, a.len());
    a.iter().filter(|v| lacked(v)).map(|v| (value(v), true, FieldSet::new())).collect()
}

fn diff_at(
    old: Option<&Value>,
    new: Option<&Value>,
    shape: &dyn Shape,
    path: &mut Path,
    out: &mut Diff,
    pe: Option<String>,
    part: Part<'_>,
) {
    // `pe` is the element of this place in its parent (None at the root); results go into `out` under it.
    let mut sub = Diff::default();
    let (own_changed, own_removed) = match (old, new) {
        (None, None) => return,
        // Nothing differs below an unchanged place: no need to walk it.
        (Some(o), Some(n)) if o == n => return,
        (None, Some(n)) => {
            let (_, s) = owned(n, shape, path, part);
            sub.changed = s;
            (true, false)
        }
        (Some(o), None) => {
            let (_, s) = owned(o, shape, path, part);
            sub.removed = s;
            (false, true)
        }
        (Some(o), Some(n)) => match (shape.kind(path.get(), n), o, n) {
            (Kind::Granular, Value::Object(om), Value::Object(nm)) => {
                let keys: BTreeSet<&String> = om.keys().chain(nm.keys()).collect();
                for k in keys {
                    let (o, n) = (part.member(path.get(), k, om.get(k)), part.member(path.get(), k, nm.get(k)));
                    with(path, k, |p| diff_at(o, n, shape, p, &mut sub, Some(field(k)), part));
                }
                (false, false)
            }
            (Kind::Keyed(keys), Value::Array(oi), Value::Array(ni)) => {
                let (oi, ni) = (index(oi, &keys), index(ni, &keys));
                let all: BTreeSet<&String> = oi.keys().chain(ni.keys()).collect();
                for k in all {
                    let (o, n) = (oi.get(k).copied(), ni.get(k).copied());
                    with(path, ITEM, |p| diff_at(o, n, shape, p, &mut sub, Some(k.clone()), part));
                }
                (false, false)
            }
            (Kind::Set, Value::Array(oi), Value::Array(ni)) => {
                sub.changed = FieldSet::from_elements(only_in(ni, oi));
                sub.removed = FieldSet::from_elements(only_in(oi, ni));
                (false, false)
            }
            _ => (o != n, false),
        },
    };
    match pe {
        Some(pe) => {
            out.changed.insert_child(pe.clone(), own_changed, sub.changed);
            out.removed.insert_child(pe, own_removed, sub.removed);
        }
        None => {
            out.changed = out.changed.union(&sub.changed);
            out.removed = out.removed.union(&sub.removed);
        }
    }
}

/// Where `new` differs from `old`.
pub fn diff(old: &Value, new: &Value, shape: &dyn Shape) -> Diff {
    diff_part(old, new, Part::All, shape)
}

/// Where the part `part` of `new` differs from that of `old`.
pub fn diff_part(old: &Value, new: &Value, part: Part<'_>, shape: &dyn Shape) -> Diff {
    let mut out = Diff::default();
    diff_at(Some(old), Some(new), shape, &mut Path::default(), &mut out, None, part);
    out
}

fn merge_at(live: &Value, applied: Value, shape: &dyn Shape, path: &mut Path) -> Value {
    match (shape.kind(path.get(), &applied), live, applied) {
        (Kind::Granular, Value::Object(lm), Value::Object(am)) => {
            let mut out = lm.clone();
            for (k, av) in am {
                if av.is_null() {
                    out.remove(&k);
                    continue;
                }
                let merged = match lm.get(&k) {
                    Some(lv) => with(path, &k, |p| merge_at(lv, av, shape, p)),
                    None => av,
                };
                out.insert(k, merged);
            }
            Value::Object(out)
        }
        (Kind::Keyed(keys), Value::Array(li), Value::Array(ai)) => {
            let mut out = li.clone();
            // Where each key's item is in `out` (the first of any that share one).
            let mut at: HashMap<String, usize> = HashMap::with_capacity(out.len() + ai.len());
            for (i, l) in out.iter().enumerate() {
                at.entry(item_key(l, &keys)).or_insert(i);
            }
            for item in ai {
                let k = item_key(&item, &keys);
                match at.get(&k).copied() {
                    Some(i) => {
                        let merged = with(path, ITEM, |p| merge_at(&out[i], item, shape, p));
                        out[i] = merged;
                    }
                    None => {
                        at.insert(k, out.len());
                        out.push(item);
                    }
                }
            }
            Value::Array(out)
        }
        (Kind::Set, Value::Array(li), Value::Array(ai)) => {
            let mut out = li.clone();
            let lacked = lacks(li, ai.len());
            out.extend(ai.into_iter().filter(|v| lacked(v)));
            Value::Array(out)
        }
        (_, _, applied) => applied,
    }
}

/// `applied` merged into `live`: its values win; keyed lists merge item by item; a `null` removes.
pub fn merge(live: &Value, applied: &Value, shape: &dyn Shape) -> Value {
    merge_owned(live, applied.clone(), shape)
}

/// [`merge`] of an `applied` no longer needed: its values move into the result instead of being copied.
pub fn merge_owned(live: &Value, applied: Value, shape: &dyn Shape) -> Value {
    merge_at(live, applied, shape, &mut Path::default())
}

fn remove_at(v: &mut Value, set: &FieldSet, keep: Option<&FieldSet>, shape: &dyn Shape, path: &mut Path) {
    let kind = shape.kind(path.get(), v);
    match (kind, v) {
        (Kind::Granular, Value::Object(m)) => {
            let names: Vec<String> = m.keys().cloned().collect();
            for k in names {
                let pe = field(&k);
                let Some((own, sub)) = set.child(&pe) else { continue };
                let kept = keep.and_then(|s| s.child(&pe));
                // Whole only when no one else owns anything under it.
                if own && kept.is_none_or(|(_, s)| s.is_empty()) {
                    m.remove(&k);
                } else if let Some(child) = m.get_mut(&k) {
                    with(path, &k, |p| remove_at(child, sub, kept.map(|(_, s)| s), shape, p));
                }
            }
        }
        (Kind::Keyed(keys), Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for mut item in std::mem::take(items) {
                let pe = item_key(&item, &keys);
                match set.child(&pe) {
                    Some((own, sub)) => {
                        let kept = keep.and_then(|s| s.child(&pe));
                        if own && kept.is_none_or(|(_, s)| s.is_empty()) {
                            continue;
                        }
                        with(path, ITEM, |p| remove_at(&mut item, sub, kept.map(|(_, s)| s), shape, p));
                        out.push(item);
                    }
                    None => out.push(item),
                }
            }
            *items = out;
        }
        (Kind::Set, Value::Array(items)) => items.retain(|i| set.child(&value(i)).is_none_or(|(own, _)| !own)),
        _ => {}
    }
}

/// Removes the paths of `set` from `obj`; an object or list item goes whole unless `keep` (what other
/// managers own) has paths under it, then only the paths of `set`.
pub fn remove(obj: &mut Value, set: &FieldSet, keep: &FieldSet, shape: &dyn Shape) {
    remove_at(obj, set, Some(keep), shape, &mut Path::default());
}

/// An item of a keyed list whose key an earlier item of the list has: where it is (`spec.containers[1]`)
/// and its key as kube prints it (`[name="c"]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Duplicate {
    pub field: String,
    pub key: String,
}

/// The items of `obj`'s keyed lists that repeat a key: kube rejects such an applied configuration (it
/// could not say which item a manager owns). [`claimed`] looks for them only when its walk met one.
pub fn duplicate_keys(obj: &Value, shape: &dyn Shape) -> Vec<Duplicate> {
    let mut out = Vec::new();
    duplicates_at(obj, shape, &mut Path::default(), &mut String::new(), &mut out);
    out
}

fn duplicates_at(v: &Value, shape: &dyn Shape, path: &mut Path, at: &mut String, out: &mut Vec<Duplicate>) {
    let len = at.len();
    match (shape.kind(path.get(), v), v) {
        (Kind::Granular, Value::Object(m)) => {
            for (k, child) in m {
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(k);
                with(path, k, |p| duplicates_at(child, shape, p, at, out));
                at.truncate(len);
            }
        }
        (Kind::Keyed(keys), Value::Array(items)) => {
            let mut seen = HashSet::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                use std::fmt::Write as _;
                let _ = write!(at, "[{i}]");
                let pe = item_key(item, &keys);
                if seen.contains(&pe) {
                    out.push(Duplicate { field: at.clone(), key: super::fields::path_string(&[pe]) });
                } else {
                    seen.insert(pe);
                }
                with(path, ITEM, |p| duplicates_at(item, shape, p, at, out));
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// A copy of the part `part` of `obj` (as the walks see it in place).
pub fn copy_part(obj: &Value, part: Part<'_>) -> Value {
    let Value::Object(m) = obj else { return obj.clone() };
    let metadata = [String::from("metadata")];
    let mut out = Map::new();
    for (k, v) in m {
        let Some(v) = part.member(&[], k, Some(v)) else { continue };
        let v = match v {
            Value::Object(meta) if k == "metadata" => Value::Object(
                meta.iter()
                    .filter(|(mk, mv)| part.member(&metadata, mk, Some(mv)).is_some())
                    .map(|(mk, mv)| (mk.clone(), mv.clone()))
                    .collect(),
            ),
            v => v.clone(),
        };
        out.insert(k.clone(), v);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::fields::{key, path_string};
    use super::super::shape::Builtin;
    use super::*;

    #[test]
    fn item_keys_are_written_as_key_writes_a_map_of_the_fields() {
        let item = json!({"name": "n", "containerPort": 80, "x\"y": [1, {"b": 2, "a": "é"}], "protocol": null});
        for keys in [
            &["name"][..],
            &["containerPort", "protocol"],
            &["protocol", "containerPort", "protocol"],
            &["x\"y", "missing", "name"],
            &[],
        ] {
            let fields: BTreeMap<String, Value> = keys
                .iter()
                .map(|k| {
                    let v = item.get(*k).cloned().unwrap_or(Value::Null);
                    let v = if *k == "protocol" && v.is_null() { Value::String("TCP".into()) } else { v };
                    (k.to_string(), v)
                })
                .collect();
            let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            assert_eq!(item_key(&item, &keys), key(&fields), "{keys:?}");
        }
    }

    fn paths(s: &FieldSet) -> Vec<String> {
        let mut out: Vec<String> = s.paths().iter().map(|p| path_string(p)).collect();
        out.sort();
        out
    }

    fn deployment(image: &str, replicas: i64) -> Value {
        json!({"metadata": {"labels": {"app": "web"}},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"spec": {"containers": [{"name": "c", "image": image, "ports": [{"containerPort": 80}]}]}}}})
    }

    #[test]
    fn an_objects_fields_are_its_leaves_and_items() {
        let f = fields_of(&deployment("v1", 2), &Builtin);
        assert_eq!(
            paths(&f),
            vec![
                ".metadata.labels.app",
                ".spec.replicas",
                ".spec.selector",
                ".spec.template.spec.containers[name=\"c\"]",
                ".spec.template.spec.containers[name=\"c\"].image",
                ".spec.template.spec.containers[name=\"c\"].name",
                ".spec.template.spec.containers[name=\"c\"].ports[containerPort=80,protocol=\"TCP\"]",
                ".spec.template.spec.containers[name=\"c\"].ports[containerPort=80,protocol=\"TCP\"].containerPort",
            ]
        );
        assert_eq!(
            paths(&fields_of(&json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}), &Builtin)).len(),
            3
        );
    }

    #[test]
    fn diffs_name_what_changed_and_what_went() {
        let d = diff(&deployment("v1", 2), &deployment("v2", 2), &Builtin);
        assert_eq!(paths(&d.changed), vec![".spec.template.spec.containers[name=\"c\"].image"]);
        assert!(d.removed.is_empty());
        let mut two = deployment("v1", 2);
        two["spec"]["template"]["spec"]["containers"].as_array_mut().unwrap().push(json!({"name": "d", "image": "x"}));
        let d = diff(&two, &deployment("v1", 3), &Builtin);
        assert_eq!(paths(&d.changed), vec![".spec.replicas"]);
        assert_eq!(
            paths(&d.removed),
            vec![
                ".spec.template.spec.containers[name=\"d\"]",
                ".spec.template.spec.containers[name=\"d\"].image",
                ".spec.template.spec.containers[name=\"d\"].name"
            ]
        );
        let set = diff(
            &json!({"metadata": {"finalizers": ["a"]}}),
            &json!({"metadata": {"finalizers": ["b", "a"]}}),
            &Builtin,
        );
        assert_eq!(paths(&set.changed), vec![".metadata.finalizers[=\"b\"]"]);
    }

    fn containers(names: &[&str]) -> Value {
        let items: Vec<Value> =
            names.iter().enumerate().map(|(i, n)| json!({"name": n, "image": format!("i{i}")})).collect();
        json!({"spec": {"template": {"spec": {"containers": items}}}})
    }

    #[test]
    fn repeated_keys_are_found_and_do_not_break_the_walks() {
        let twice = containers(&["a", "b", "a", "b", "a"]);
        assert_eq!(
            duplicate_keys(&twice, &Builtin),
            vec![
                Duplicate { field: "spec.template.spec.containers[2]".into(), key: "[name=\"a\"]".into() },
                Duplicate { field: "spec.template.spec.containers[3]".into(), key: "[name=\"b\"]".into() },
                Duplicate { field: "spec.template.spec.containers[4]".into(), key: "[name=\"a\"]".into() },
            ]
        );
        assert!(duplicate_keys(&containers(&["a", "b"]), &Builtin).is_empty());
        assert_eq!(claimed(&twice, &Builtin).unwrap_err().len(), 3, "an applied configuration's claim fails");
        assert_eq!(claimed(&containers(&["a", "b"]), &Builtin), Ok(fields_of(&containers(&["a", "b"]), &Builtin)));
        let nested =
            json!({"spec": {"containers": [{"name": "c", "env": [{"name": "X"}, {"name": "X", "value": "2"}]}]}});
        let found = duplicate_keys(&nested, &Builtin);
        assert_eq!(found[0].field, "spec.containers[0].env[1]");
        // A live object may hold repeated keys (an update does not check them): an apply's merge takes
        // the first item of a key, and items an applied list repeats merge one after the other.
        let merged = merge(&containers(&["a"]), &containers(&["b", "b"]), &Builtin);
        assert_eq!(
            merged,
            json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "i0"}, {"name": "b", "image": "i1"}]}}}})
        );
        let merged = merge(&twice, &containers(&["a"]), &Builtin);
        assert_eq!(merged["spec"]["template"]["spec"]["containers"][0]["image"], json!("i0"));
        assert_eq!(merged["spec"]["template"]["spec"]["containers"].as_array().unwrap().len(), 5);
        let d = diff(&twice, &containers(&["a", "b"]), &Builtin);
        assert!(d.changed.is_empty() && d.removed.is_empty(), "the first item of each key is the one compared");
    }

    #[test]
    fn long_lists_diff_and_merge_as_short_ones_do() {
        // Past 256 item pairs set-lists are compared by their items' JSON; the result is the same.
        let set = |n: std::ops::Range<i32>| json!({"metadata": {"finalizers": n.map(|i| format!("f{i}")).collect::<Vec<_>>()}});
        let d = diff(&set(0..30), &set(10..40), &Builtin);
        let added: Vec<String> = (30..40).map(|i| format!(".metadata.finalizers[=\"f{i}\"]")).collect();
        assert_eq!(paths(&d.changed), added);
        assert_eq!(paths(&d.removed).len(), 10);
        let merged = merge(&set(0..30), &set(10..40), &Builtin);
        assert_eq!(merged, set(0..40));
        let names: Vec<String> = (0..600).map(|i| format!("c{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let (old, mut new) = (containers(&refs), containers(&refs));
        new["spec"]["template"]["spec"]["containers"][599]["image"] = json!("changed");
        let d = diff(&old, &new, &Builtin);
        assert_eq!(paths(&d.changed), vec![".spec.template.spec.containers[name=\"c599\"].image"]);
        assert_eq!(merge(&old, &new, &Builtin), new);
    }

    #[test]
    fn applied_values_merge_into_the_live_object() {
        let mut live = deployment("v1", 2);
        live["spec"]["template"]["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "1"}});
        live["status"] = json!({"replicas": 2});
        let applied = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "v2"}, {"name": "side", "image": "s"}]}}}});
        let merged = merge(&live, &applied, &Builtin);
        let c = &merged["spec"]["template"]["spec"]["containers"];
        assert_eq!(
            (c[0]["image"].clone(), c[0]["resources"]["limits"]["cpu"].clone()),
            (json!("v2"), json!("1")),
            "merged by name"
        );
        assert_eq!(c[1]["name"], json!("side"));
        assert_eq!(merged["spec"]["replicas"], json!(3));
        assert_eq!(merged["status"]["replicas"], json!(2), "what the configuration does not name stays");
        let selector = merge(&live, &json!({"spec": {"selector": {"matchLabels": {"x": "y"}}}}), &Builtin);
        assert_eq!(selector["spec"]["selector"], json!({"matchLabels": {"x": "y"}}), "atomic: replaced whole");
        let nulled = merge(&live, &json!({"metadata": {"labels": {"app": null}}}), &Builtin);
        assert_eq!(nulled["metadata"]["labels"], json!({}));
    }

    #[test]
    fn removal_spares_what_others_own() {
        let mut obj = deployment("v1", 2);
        let d_container = json!({"name": "d", "image": "x", "resources": {"cpu": "1"}});
        obj["spec"]["template"]["spec"]["containers"].as_array_mut().unwrap().push(d_container);
        let mut mine = FieldSet::new();
        let d = |x: &str| vec![field("spec"), field("template"), field("spec"), field("containers"), x.to_string()];
        let item = r#"k:{"name":"d"}"#;
        mine.insert(&d(item));
        let mut image = d(item);
        image.push(field("image"));
        mine.insert(&image);
        mine.insert(&[field("spec"), field("replicas")]);
        let mut theirs = FieldSet::new();
        let mut res = d(item);
        res.push(field("resources"));
        theirs.insert(&res);
        let mut kept = obj.clone();
        remove(&mut kept, &mine, &theirs, &Builtin);
        assert_eq!(kept["spec"].get("replicas"), None);
        assert_eq!(kept["spec"]["template"]["spec"]["containers"][1], json!({"name": "d", "resources": {"cpu": "1"}}));
        remove(&mut obj, &mine, &FieldSet::new(), &Builtin);
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"].as_array().unwrap().len(),
            1,
            "no one else: the item goes"
        );
        assert_eq!(
            copy_part(
                &json!({"apiVersion": "v1", "metadata": {"name": "x", "labels": {}}}),
                Part::Without { top: &["apiVersion"], metadata: &["name"] }
            ),
            json!({"metadata": {"labels": {}}})
        );
    }
}
