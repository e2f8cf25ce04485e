//! Sets of field paths, the unit of ownership in server-side apply, and their wire form FieldsV1.
//!
//! A set is a tree. Each node is reached by a path element written as FieldsV1 writes it: `f:<name>` (a
//! field of an object), `k:<json>` (the item of a keyed list whose key fields have these values, keys
//! sorted), `v:<json>` (the item of a set-list with this value), `i:<n>` (an item of a list by index). A
//! node is in the set itself (`own`) — a leaf value, an atomic value, a list item — or only leads to
//! nodes that are; FieldsV1 marks a node that is both with a `.` entry.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A set of field paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    children: BTreeMap<String, Node>,
}

/// One node of a set: in the set itself, and/or leading to more.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Node {
    own: bool,
    children: FieldSet,
}

/// The path element of an object's field.
pub fn field(name: &str) -> String {
    format!("f:{name}")
}

/// The path element of a keyed list's item, from its key fields.
pub fn key(fields: &BTreeMap<String, Value>) -> String {
    let map: Map<String, Value> = fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    format!("k:{}", Value::Object(map))
}

/// The path element of a set-list's item.
pub fn value(v: &Value) -> String {
    format!("v:{v}")
}

/// A path element's readable form, as kube-apiserver prints conflicts: `.name`, `[name="c"]`, `[=v]`.
fn readable(pe: &str) -> String {
    match pe.split_once(':') {
        Some(("f", name)) => format!(".{name}"),
        Some(("k", json)) => match serde_json::from_str::<Map<String, Value>>(json) {
            Ok(m) => format!("[{}]", m.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")),
            Err(_) => format!("[{json}]"),
        },
        Some(("v", json)) => format!("[={json}]"),
        Some(("i", n)) => format!("[{n}]"),
        _ => pe.to_string(),
    }
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// Whether the set has no path.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// Adds the path `pes` (the node at its end is in the set).
    pub fn insert(&mut self, pes: &[String]) {
        let Some((first, rest)) = pes.split_first() else { return };
        let node = self.children.entry(first.clone()).or_default();
        if rest.is_empty() {
            node.own = true;
        } else {
            node.children.insert(rest);
        }
    }

    /// The subtree under `pe`, if any; `own` tells whether `pe` itself is in the set.
    pub fn child(&self, pe: &str) -> Option<(bool, &FieldSet)> {
        self.children.get(pe).map(|n| (n.own, &n.children))
    }

    /// Adds `pe` with the paths of `sub` under it (`own`: `pe` itself too).
    pub fn insert_child(&mut self, pe: String, own: bool, sub: FieldSet) {
        if !own && sub.is_empty() {
            return;
        }
        let node = self.children.entry(pe).or_default();
        node.own |= own;
        node.children.absorb(sub);
    }

    /// Adds every path of `other`, taking its nodes (a subtree this set lacks is moved in whole, not
    /// copied node by node: building a set bottom-up stays linear in its size).
    fn absorb(&mut self, other: FieldSet) {
        if self.children.is_empty() {
            self.children = other.children;
            return;
        }
        for (pe, n) in other.children {
            match self.children.entry(pe) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(n);
                }
                std::collections::btree_map::Entry::Occupied(mut o) => {
                    let mine = o.get_mut();
                    mine.own |= n.own;
                    mine.children.absorb(n.children);
                }
            }
        }
    }

    /// Every path of either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.absorb(other.clone());
        out
    }

    /// The paths of this set that are not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (pe, n) in &self.children {
            match other.children.get(pe) {
                None => out.insert_child(pe.clone(), n.own, n.children.clone()),
                Some(o) => out.insert_child(pe.clone(), n.own && !o.own, n.children.difference(&o.children)),
            }
        }
        out
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (pe, n) in &self.children {
            if let Some(o) = other.children.get(pe) {
                out.insert_child(pe.clone(), n.own && o.own, n.children.intersection(&o.children));
            }
        }
        out
    }

    /// Every path in the set, each as its path elements.
    pub fn paths(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        for (pe, n) in &self.children {
            if n.own {
                out.push(vec![pe.clone()]);
            }
            for mut p in n.children.paths() {
                p.insert(0, pe.clone());
                out.push(p);
            }
        }
        out
    }

    /// The set in FieldsV1 form.
    pub fn to_fields_v1(&self) -> Value {
        let mut out = Map::new();
        for (pe, n) in &self.children {
            let Value::Object(mut inner) = n.children.to_fields_v1() else { continue };
            if n.own && !inner.is_empty() {
                inner.insert(".".into(), Value::Object(Map::new()));
            }
            out.insert(pe.clone(), Value::Object(inner));
        }
        Value::Object(out)
    }

    /// Reads FieldsV1; anything that is not its shape is an error naming where.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        let Value::Object(m) = v else { return Err(format!("expected an object, found {v}")) };
        let mut out = FieldSet::new();
        for (pe, sub) in m {
            if pe == "." {
                continue;
            }
            if !matches!(pe.split_once(':'), Some(("f" | "k" | "v" | "i", _))) {
                return Err(format!("{pe:?} is not a path element (f:, k:, v: or i:)"));
            }
            let Value::Object(inner) = sub else { return Err(format!("{pe}: expected an object, found {sub}")) };
            let own = inner.is_empty() || inner.contains_key(".");
            let children = FieldSet::from_fields_v1(sub).map_err(|e| format!("{pe}: {e}"))?;
            out.insert_child(pe.clone(), own, children);
        }
        Ok(out)
    }
}

/// A path in the form kube-apiserver prints in conflicts: `.spec.replicas`,
/// `.spec.containers[name="c"].image`.
pub fn path_string(pes: &[String]) -> String {
    pes.iter().map(|pe| readable(pe)).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn path(pes: &[&str]) -> Vec<String> {
        pes.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sets_round_trip_through_fields_v1() {
        let wire = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                          "f:spec": {"f:replicas": {}, "f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}}}}});
        let set = FieldSet::from_fields_v1(&wire).unwrap();
        assert_eq!(set.to_fields_v1(), wire);
        let mut paths: Vec<String> = set.paths().iter().map(|p| path_string(p)).collect();
        paths.sort();
        assert_eq!(
            paths,
            vec![
                ".metadata.labels",
                ".metadata.labels.app",
                ".spec.containers[name=\"c\"]",
                ".spec.containers[name=\"c\"].image",
                ".spec.replicas"
            ]
        );
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).unwrap_err().starts_with("f:a: "));
    }

    #[test]
    fn set_operations_work_on_paths() {
        let mut a = FieldSet::new();
        a.insert(&path(&["f:spec", "f:replicas"]));
        a.insert(&path(&["f:spec", "f:paused"]));
        let mut b = FieldSet::new();
        b.insert(&path(&["f:spec", "f:replicas"]));
        b.insert(&path(&["f:data", "f:x"]));
        assert_eq!(a.intersection(&b).paths(), vec![path(&["f:spec", "f:replicas"])]);
        assert_eq!(a.difference(&b).paths(), vec![path(&["f:spec", "f:paused"])]);
        assert_eq!(a.union(&b).paths().len(), 3);
        assert!(a.difference(&a).is_empty(), "no empty nodes are left behind");
        let mut item = FieldSet::new();
        item.insert(&path(&["f:spec", "k:{\"name\":\"c\"}"]));
        item.insert(&path(&["f:spec", "k:{\"name\":\"c\"}", "f:image"]));
        let only_image = {
            let mut s = FieldSet::new();
            s.insert(&path(&["f:spec", "k:{\"name\":\"c\"}", "f:image"]));
            s
        };
        assert_eq!(item.difference(&only_image).paths(), vec![path(&["f:spec", "k:{\"name\":\"c\"}"])]);
        assert_eq!(
            key(&BTreeMap::from([("protocol".into(), json!("TCP")), ("containerPort".into(), json!(80))])),
            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}"
        );
        assert_eq!(path_string(&[field("spec"), value(&json!("a"))]), ".spec[=\"a\"]");
    }
}
