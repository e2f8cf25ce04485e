//! Sets of field paths, the unit of ownership in server-side apply, and their wire form FieldsV1.
//!
//! A set is a tree. Each node is reached by a path element written as FieldsV1 writes it: `f:<name>` (a
//! field of an object), `k:<json>` (the item of a keyed list whose key fields have these values, keys
//! sorted), `v:<json>` (the item of a set-list with this value), `i:<n>` (an item of a list by index). A
//! node is in the set itself (`own`) — a leaf value, an atomic value, a list item — or only leads to
//! nodes that are; FieldsV1 marks a node that is both with a `.` entry.

use std::cmp::Ordering;

use serde_json::{Map, Value};

/// Why a managedFields entry's fieldsV1 does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FieldsError(pub String);

impl From<String> for FieldsError {
    fn from(message: String) -> Self {
        FieldsError(message)
    }
}

impl From<&str> for FieldsError {
    fn from(message: &str) -> Self {
        FieldsError(message.to_string())
    }
}

impl From<FieldsError> for String {
    fn from(e: FieldsError) -> String {
        e.0
    }
}

/// A set of field paths.
///
/// Each level is a list of (path element, node) sorted by the element: the walks build sets in the
/// order of an object's members, so a level is appended to, not searched, and a small level (most
/// have a handful of elements) costs one allocation of its own size rather than a B-tree node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    children: Vec<(String, Node)>,
}

/// One node of a set: in the set itself, and/or leading to more.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Node {
    own: bool,
    children: FieldSet,
}

/// The path element of an object's field.
pub fn field(name: &str) -> String {
    let mut pe = String::with_capacity(name.len() + 2);
    pe.push_str("f:");
    pe.push_str(name);
    pe
}

/// The path element of a keyed list's item, from its key fields: the definition the walks' `item_key`
/// writes without building the map (their tests hold the two equal).
#[cfg(test)]
pub fn key(fields: &std::collections::BTreeMap<String, Value>) -> String {
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

    /// How many elements the set's top level has.
    pub fn len(&self) -> usize {
        self.children.len()
    }

    /// Where `pe` is, or would go, in this level.
    fn find(&self, pe: &str) -> Result<usize, usize> {
        // The common case, a set built in order: `pe` goes after the last element.
        match self.children.last() {
            Some((last, _)) if last.as_str() < pe => Err(self.children.len()),
            None => Err(0),
            _ => self.children.binary_search_by(|(k, _)| k.as_str().cmp(pe)),
        }
    }

    /// The node of `pe`, added (in no set, leading nowhere) if missing.
    fn node(&mut self, pe: String) -> &mut Node {
        let i = match self.find(&pe) {
            Ok(i) => i,
            Err(i) => {
                self.children.insert(i, (pe, Node::default()));
                i
            }
        };
        &mut self.children[i].1
    }

    /// Adds the path `pes` (the node at its end is in the set).
    pub fn insert(&mut self, pes: &[String]) {
        let Some((first, rest)) = pes.split_first() else { return };
        let node = self.node(first.clone());
        if rest.is_empty() {
            node.own = true;
        } else {
            node.children.insert(rest);
        }
    }

    /// The subtree under `pe`, if any; `own` tells whether `pe` itself is in the set.
    pub fn child(&self, pe: &str) -> Option<(bool, &FieldSet)> {
        let i = self.find(pe).ok()?;
        let n = &self.children[i].1;
        Some((n.own, &n.children))
    }

    /// Adds `pe` with the paths of `sub` under it (`own`: `pe` itself too).
    pub fn insert_child(&mut self, pe: String, own: bool, sub: FieldSet) {
        if !own && sub.is_empty() {
            return;
        }
        let node = self.node(pe);
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
        if other.children.is_empty() {
            return;
        }
        // Both levels are sorted: merge them.
        let mine = std::mem::take(&mut self.children);
        let mut out = Vec::with_capacity(mine.len() + other.children.len());
        let (mut a, mut b) = (mine.into_iter().peekable(), other.children.into_iter().peekable());
        loop {
            let order = match (a.peek(), b.peek()) {
                (Some((x, _)), Some((y, _))) => x.cmp(y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => break,
            };
            match order {
                Ordering::Less => out.extend(a.next()),
                Ordering::Greater => out.extend(b.next()),
                Ordering::Equal => {
                    if let (Some((pe, mut n)), Some((_, o))) = (a.next(), b.next()) {
                        n.own |= o.own;
                        n.children.absorb(o.children);
                        out.push((pe, n));
                    }
                }
            }
        }
        self.children = out;
    }

    /// Appends `pe`, which sorts after every element of this level (as in a walk over a sorted level).
    fn push(&mut self, pe: String, own: bool, sub: FieldSet) {
        if own || !sub.is_empty() {
            self.children.push((pe, Node { own, children: sub }));
        }
    }

    /// A level of elements given in any order, as a list's items come (`own`: the element itself is in
    /// the set; the paths under it): sorted once, an element given twice merged, so a long list costs
    /// a sort rather than an insertion in the middle for each item.
    pub fn from_elements(mut elements: Vec<(String, bool, FieldSet)>) -> FieldSet {
        elements.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = FieldSet::new();
        for (pe, own, sub) in elements {
            match out.children.last_mut() {
                Some((last, n)) if *last == pe => {
                    n.own |= own;
                    n.children.absorb(sub);
                }
                _ => out.push(pe, own, sub),
            }
        }
        out
    }

    /// Every path of either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.absorb(other.clone());
        out
    }

    /// The paths of this set that are not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        if other.is_empty() {
            return self.clone();
        }
        let mut out = FieldSet::new();
        for (pe, n) in &self.children {
            match other.child(pe) {
                None => out.push(pe.clone(), n.own, n.children.clone()),
                Some((own, sub)) => out.push(pe.clone(), n.own && !own, n.children.difference(sub)),
            }
        }
        out
    }

    /// This set with every field that leads to more in it too: structured-merge-diff's
    /// `EnsureNamedFieldsAreMembers`, by which a manager declaring `data.k` still declares `data` (an
    /// apply of `data: {}` then of `data: {k: v}` keeps the field it owned as a whole before).
    pub fn with_fields_as_members(&self) -> FieldSet {
        let children = self
            .children
            .iter()
            .map(|(pe, n)| {
                let own = n.own || (pe.starts_with("f:") && !n.children.is_empty());
                (pe.clone(), Node { own, children: n.children.with_fields_as_members() })
            })
            .collect();
        FieldSet { children }
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (pe, n) in &self.children {
            if let Some((own, sub)) = other.child(pe) {
                out.push(pe.clone(), n.own && own, n.children.intersection(sub));
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
        Value::Object(self.fields_v1())
    }

    fn fields_v1(&self) -> Map<String, Value> {
        let mut out = Map::new();
        for (pe, n) in &self.children {
            let mut inner = n.children.fields_v1();
            if n.own && !inner.is_empty() {
                inner.insert(".".into(), Value::Object(Map::new()));
            }
            out.insert(pe.clone(), Value::Object(inner));
        }
        out
    }

    /// FieldsV1 as its JSON text, written directly (the same bytes `to_fields_v1` serializes to: members
    /// in order, `.` first). The store keeps this text rather than the tree: a tree costs a B-tree
    /// node of ~600 bytes per non-empty map, the text a byte per byte (docs/benchmarks.md, issue 58).
    pub fn to_fields_v1_text(&self) -> String {
        let mut out = Vec::with_capacity(64 * self.children.len().max(1));
        self.write_fields_v1(&mut out, false);
        // Only JSON was written: string keys through serde_json, the rest ASCII punctuation.
        String::from_utf8(out).unwrap_or_default()
    }

    fn write_fields_v1(&self, out: &mut Vec<u8>, dot: bool) {
        out.push(b'{');
        if dot {
            out.extend_from_slice(b"\".\":{}");
        }
        for (i, (pe, n)) in self.children.iter().enumerate() {
            if dot || i > 0 {
                out.push(b',');
            }
            // Writing a string to a vector cannot fail.
            let _ = serde_json::to_writer(&mut *out, pe);
            out.push(b':');
            n.children.write_fields_v1(out, n.own && !n.children.is_empty());
        }
        out.push(b'}');
    }

    /// Reads FieldsV1 from its JSON text (the form the store keeps).
    pub fn from_fields_v1_text(text: &str) -> Result<FieldSet, FieldsError> {
        let tree: Value = serde_json::from_str(text).map_err(|e| FieldsError(format!("not JSON: {e}")))?;
        FieldSet::from_fields_v1(&tree)
    }

    /// Reads FieldsV1; anything that is not its shape is an error naming where.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, FieldsError> {
        let Value::Object(m) = v else { return Err(FieldsError::from(format!("expected an object, found {v}"))) };
        let mut out = FieldSet::new();
        for (pe, sub) in m {
            if pe == "." {
                continue;
            }
            if !matches!(pe.split_once(':'), Some(("f" | "k" | "v" | "i", _))) {
                return Err(FieldsError::from(format!("{pe:?} is not a path element (f:, k:, v: or i:)")));
            }
            let Value::Object(inner) = sub else {
                return Err(FieldsError::from(format!("{pe}: expected an object, found {sub}")));
            };
            let own = inner.is_empty() || inner.contains_key(".");
            let children = FieldSet::from_fields_v1(sub).map_err(|e| format!("{pe}: {e}"))?;
            // The map's keys come in order.
            out.push(pe.clone(), own, children);
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
        let text = set.to_fields_v1_text();
        assert_eq!(text, wire.to_string(), "the text is the tree's serialization, byte for byte");
        assert_eq!(FieldSet::from_fields_v1_text(&text).unwrap(), set);
        assert_eq!(FieldSet::new().to_fields_v1_text(), "{}");
        let quoted = FieldSet::from_fields_v1(&json!({"f:data": {"f:a\"b\\c": {}}})).unwrap();
        assert_eq!(quoted.to_fields_v1_text(), json!({"f:data": {"f:a\"b\\c": {}}}).to_string());
        assert!(FieldSet::from_fields_v1_text("{\"f:a\":").unwrap_err().0.starts_with("not JSON"));
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
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).unwrap_err().0.starts_with("f:a: "));
    }

    #[test]
    fn a_set_is_the_same_whatever_order_its_paths_come_in() {
        let all: Vec<Vec<String>> = [
            &["f:spec", "f:replicas"][..],
            &["f:metadata", "f:labels", "f:app"],
            &["f:spec", "k:{\"name\":\"c\"}"],
            &["f:spec", "k:{\"name\":\"c\"}", "f:image"],
            &["f:data"],
            &["f:spec", "f:paused"],
            &["f:metadata", "f:annotations", "f:a"],
        ]
        .iter()
        .map(|p| path(p))
        .collect();
        let build = |order: &mut dyn Iterator<Item = &Vec<String>>| {
            let mut s = FieldSet::new();
            order.for_each(|p| s.insert(p));
            s
        };
        let forward = build(&mut all.iter());
        let backward = build(&mut all.iter().rev());
        assert_eq!(forward, backward);
        assert_eq!(forward.to_fields_v1(), backward.to_fields_v1());
        assert_eq!(FieldSet::from_fields_v1(&forward.to_fields_v1()).unwrap(), forward);
        // Unions of interleaved halves, either way round, are the whole set.
        let (odd, even): (Vec<_>, Vec<_>) = all.iter().enumerate().partition(|(i, _)| i % 2 == 1);
        let odd = build(&mut odd.into_iter().map(|(_, p)| p));
        let even = build(&mut even.into_iter().map(|(_, p)| p));
        assert_eq!(odd.union(&even), forward);
        assert_eq!(even.union(&odd), forward);
        assert_eq!(forward.difference(&odd), even);
        assert_eq!(forward.intersection(&odd), odd);
        assert!(forward.child("f:spec").is_some_and(|(own, sub)| !own && sub.child("f:paused").is_some()));
        assert!(forward.child("f:nothing").is_none() && forward.child("a").is_none());
        // Elements in any order, one of them twice, make the level inserting them one by one makes.
        let leaf = |p: &[&str]| {
            let mut s = FieldSet::new();
            s.insert(&path(p));
            s
        };
        let elements = vec![
            ("v:3".to_string(), true, FieldSet::new()),
            ("k:{\"name\":\"b\"}".to_string(), true, leaf(&["f:image"])),
            ("v:1".to_string(), true, FieldSet::new()),
            ("k:{\"name\":\"b\"}".to_string(), false, leaf(&["f:args"])),
            ("v:2".to_string(), false, FieldSet::new()),
        ];
        let mut one_by_one = FieldSet::new();
        for (pe, own, sub) in elements.clone() {
            one_by_one.insert_child(pe, own, sub);
        }
        let bulk = FieldSet::from_elements(elements);
        assert_eq!(bulk, one_by_one);
        assert!(bulk.child("v:2").is_none(), "an element in no set and leading nowhere is left out");
        assert!(bulk.child("k:{\"name\":\"b\"}").is_some_and(|(own, sub)| own && sub.paths().len() == 2));
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
            key(&std::collections::BTreeMap::from([
                ("protocol".into(), json!("TCP")),
                ("containerPort".into(), json!(80))
            ])),
            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}"
        );
        assert_eq!(path_string(&[field("spec"), value(&json!("a"))]), ".spec[=\"a\"]");
    }
}
