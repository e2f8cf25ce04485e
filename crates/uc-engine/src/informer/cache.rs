//! An informer's cache: each object's bytes (compact, packed) with the indexes, and the window of the
//! newest trees.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use uc_api::packed::Packed;

use super::object::{Change, Obj, ObjKey, key_of};
use crate::key_set::KeySet;

/// An object as the cache keeps it: its tree written compact ([`super::compact`], packed: [`Packed`])
/// and what the indexes read, decoded into a tree when it is asked for. A `Value` tree costs ~7 KB for an object of ~1 KB of JSON (a B-tree
/// node per map, docs/benchmarks.md, issue 58); the objects changed most recently are kept as trees
/// instead ([`Hot`]), so that the reconcile an event queues reads them without decoding, and are written
/// out only once they leave that window (a version replaced while it is there never is).
#[derive(Debug)]
pub(super) struct Kept {
    body: Body,
    /// Shared with the uid index.
    uid: Option<Arc<str>>,
    pub(super) resource_version: Box<str>,
    /// Shared with the label index.
    labels: Box<[Label]>,
    /// Shared with the owner index (an owner's entry keeps the uid of the child that made it).
    owners: Box<[Arc<str>]>,
}

impl Kept {
    fn of(obj: &Value) -> Kept {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(Box::from);
        let meta = obj.get("metadata");
        let labels = meta
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .map(|m| m.iter().filter_map(|(k, v)| Some((Arc::from(k.as_str()), Arc::from(v.as_str()?)))).collect())
            .unwrap_or_default();
        let owners = meta
            .and_then(|m| m.get("ownerReferences"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|r| r.get("uid").and_then(Value::as_str).map(Arc::from)).collect())
            .unwrap_or_default();
        Kept {
            body: Body::InHot,
            uid: meta.and_then(|m| m.get("uid")).and_then(Value::as_str).map(Arc::from),
            resource_version: text(meta.and_then(|m| m.get("resourceVersion"))).unwrap_or_default(),
            labels,
            owners,
        }
    }

    /// `obj` as the cache keeps it outside the window of trees: written out compact, packed.
    fn at_rest(obj: &Value) -> Kept {
        let mut kept = Kept::of(obj);
        kept.body = Body::of(obj);
        kept
    }

    /// The object as a tree, decoded from its bytes (which `Body::of` wrote, so they decode). An object
    /// whose tree is in the window is read from there ([`Cache::tree`]); asked here, it reads as null.
    fn decode(&self) -> Obj {
        let tree = match &self.body {
            Body::InHot => None,
            Body::Plain(bytes) => super::compact::read(bytes),
            Body::Packed(packed) => super::compact::read(&packed.unpack()),
        };
        Arc::new(tree.unwrap_or_default())
    }

    fn label_pairs(&self) -> impl Iterator<Item = &Label> + '_ {
        self.labels.iter()
    }
}

/// Where a kept object's bytes are.
#[derive(Debug)]
enum Body {
    /// Nowhere yet: its tree is in the window of the newest ([`Hot`]), and is written when it leaves.
    InHot,
    /// Its tree written compact ([`super::compact`]), which packing would hardly shrink.
    Plain(Box<[u8]>),
    /// Its tree written compact, packed.
    Packed(Packed),
}

impl Body {
    /// `obj` written out compact (into a buffer kept per thread: one grown once, not a vector grown and
    /// copied for every object) and packed if that pays.
    fn of(obj: &Value) -> Body {
        thread_local! {
            static BYTES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        BYTES.with_borrow_mut(|bytes| {
            bytes.clear();
            super::compact::write(obj, bytes);
            let body = match Packed::of(bytes) {
                Some(packed) => Body::Packed(packed),
                None => Body::Plain(bytes.as_slice().into()),
            };
            // A rare large object does not hold its buffer's size for good.
            if bytes.capacity() > 1 << 20 {
                *bytes = Vec::new();
            }
            body
        })
    }
}

/// The trees of the objects changed last, at most [`HOT`] objects: a bounded window, so that memory grows
/// with the objects' bytes, not with their trees. The window counts objects, not changes: a pod that
/// changes five times on its way to ready stays in it while fewer than [`HOT`] other objects change
/// (counting changes pushed 1,000 pods of one ReplicaSet out of it, each then written, packed and decoded
/// again for every sync of the ReplicaSet).
#[derive(Default)]
struct Hot {
    trees: Map<ObjKey, (u64, Obj)>,
    /// Objects by the number of their change, oldest first; an entry whose object changed again (or
    /// left) since is stale, and skipped.
    order: std::collections::VecDeque<(u64, ObjKey)>,
    next: u64,
}

/// How many objects' trees [`Hot`] keeps (~7 KB each for a Deployment).
const HOT: usize = 2048;

impl Hot {
    /// Keeps `obj`'s tree; the trees that left the window to make room for it.
    fn insert(&mut self, key: ObjKey, obj: Obj) -> Vec<(ObjKey, Obj)> {
        self.next += 1;
        self.trees.insert(key.clone(), (self.next, obj));
        self.order.push_back((self.next, key));
        let mut left = Vec::new();
        while self.trees.len() > HOT
            && let Some((n, k)) = self.order.pop_front()
        {
            if self.trees.get(&k).is_some_and(|(m, _)| *m == n)
                && let Some((_, tree)) = self.trees.remove(&k)
            {
                left.push((k, tree));
            }
        }
        // Stale entries go once they outnumber the trees: the order stays within twice the window, at a
        // cost spread over the changes that made them.
        if self.order.len() > 2 * HOT {
            let trees = &self.trees;
            self.order.retain(|(n, k)| trees.get(k).is_some_and(|(m, _)| m == n));
        }
        left
    }

    fn get(&self, key: &ObjKey) -> Option<Obj> {
        self.trees.get(key).map(|(_, o)| o.clone())
    }

    fn remove(&mut self, key: &ObjKey) -> Option<Obj> {
        self.trees.remove(key).map(|(_, o)| o)
    }
}

/// Whether two versions of an object sit in the same places of the cache's indexes: the same uid,
/// owners and labels (the key, and so the namespace, is theirs already).
fn same_indexes(a: &Kept, b: &Kept) -> bool {
    a.uid == b.uid && a.labels == b.labels && a.owners == b.owners
}

/// The cache's maps hash with foldhash (seeded per process) rather than SipHash: every event and every
/// reconcile looks objects up by key, uid, owner and label, and SipHash was 2 % of the engine's time
/// (the index entries' sets too: [`KeySet`]).
type Map<K, V> = foldhash::HashMap<K, V>;

/// A label (key and value) as an object's `Kept` and the label index share it.
type Label = (Arc<str>, Arc<str>);

/// A key as the cache and its indexes hold it: one allocation per object, shared by every index.
type Key = Arc<ObjKey>;

#[derive(Default)]
pub(super) struct Cache {
    pub(super) objects: Map<Key, Kept>,
    hot: Hot,
    pub(super) by_namespace: Map<String, KeySet<ObjKey>>,
    pub(super) by_uid: Map<Arc<str>, Key>,
    pub(super) by_owner: Map<Arc<str>, KeySet<ObjKey>>,
    pub(super) by_label: Map<Label, KeySet<ObjKey>>,
}

impl Cache {
    /// The object at `key` as a tree: the hot one, else decoded.
    pub(super) fn tree(&self, key: &ObjKey) -> Option<Obj> {
        self.hot.get(key).or_else(|| self.objects.get(key).map(Kept::decode))
    }

    pub(super) fn trees<'a>(&self, keys: impl IntoIterator<Item = &'a Key>) -> Vec<Obj> {
        keys.into_iter().filter_map(|k| self.tree(k)).collect()
    }

    /// The objects `uid` owns, then those carrying `label` (a key and a value) that it does not own:
    /// each once, and read (decoded, when out of the window of trees) once — a parent's generated
    /// selector names the very children it owns.
    pub(super) fn owned_or_labelled(&self, uid: &str, label: (&str, &str)) -> Vec<Obj> {
        let owned = self.by_owner.get(uid);
        let labelled = self.by_label.get(&(Arc::from(label.0), Arc::from(label.1)));
        let others = labelled.into_iter().flat_map(|s| s.iter()).filter(|k| !owned.is_some_and(|o| o.contains(k)));
        self.trees(owned.into_iter().flat_map(|s| s.iter()).chain(others))
    }

    fn unindex(&mut self, key: &ObjKey, kept: &Kept) {
        if let Some(set) = self.by_namespace.get_mut(&key.0) {
            set.remove(key);
        }
        if let Some(uid) = &kept.uid {
            self.by_uid.remove(&**uid);
        }
        for o in &kept.owners {
            if let Some(set) = self.by_owner.get_mut(&**o) {
                set.remove(key);
                if set.is_empty() {
                    self.by_owner.remove(&**o);
                }
            }
        }
        for l in kept.label_pairs() {
            if let Some(set) = self.by_label.get_mut(l) {
                set.remove(key);
                if set.is_empty() {
                    self.by_label.remove(l);
                }
            }
        }
    }

    /// Keeps `obj`, its tree in the window when `hot` (else only its bytes); the version it replaces, if any.
    pub(super) fn put(&mut self, obj: Obj, hot: bool) -> Option<Obj> {
        let key = key_of(&obj);
        let kept = if hot { Kept::of(&obj) } else { Kept::at_rest(&obj) };
        let old = self.put_kept(key.clone(), kept);
        let old_tree = old.map(|(tree, kept)| tree.unwrap_or_else(|| kept.decode()));
        if !hot {
            return old_tree;
        }
        for (key, tree) in self.hot.insert(key, obj) {
            if let Some(kept) = self.objects.get_mut(&key) {
                kept.body = Body::of(&tree);
            }
        }
        old_tree
    }

    /// Keeps `kept` at `key`; what was there (its tree if hot, and its kept form).
    fn put_kept(&mut self, key: ObjKey, kept: Kept) -> Option<(Option<Obj>, Kept)> {
        let old_tree = self.hot.remove(&key);
        let (key, old) = match self.objects.remove_entry(&key) {
            Some((shared, old)) => (shared, Some(old)),
            None => (Arc::new(key), None),
        };
        match &old {
            // A new version in the same places (a status written, a spec changed): the indexes stand.
            Some(o) if same_indexes(o, &kept) => {}
            Some(o) => {
                self.unindex(&key, o);
                self.index(&key, &kept);
            }
            None => self.index(&key, &kept),
        }
        self.objects.insert(key, kept);
        old.map(|o| (old_tree, o))
    }

    fn index(&mut self, key: &Key, kept: &Kept) {
        self.by_namespace.entry(key.0.clone()).or_default().insert(key.clone());
        if let Some(uid) = &kept.uid {
            self.by_uid.insert(uid.clone(), key.clone());
        }
        for o in &kept.owners {
            self.by_owner.entry(o.clone()).or_default().insert(key.clone());
        }
        for l in kept.label_pairs() {
            self.by_label.entry(l.clone()).or_default().insert(key.clone());
        }
    }

    pub(super) fn remove(&mut self, key: &ObjKey) -> Option<Obj> {
        let old = self.objects.remove(key)?;
        self.unindex(key, &old);
        Some(self.hot.remove(key).unwrap_or_else(|| old.decode()))
    }

    /// The keys a (re)list no longer has.
    fn gone_keys(&self, fresh: &HashMap<ObjKey, Listed>) -> Vec<ObjKey> {
        self.objects.keys().filter(|k| !fresh.contains_key(k.as_ref())).map(|k| (**k).clone()).collect()
    }

    /// The objects a (re)list no longer has, as last seen.
    pub(super) fn gone(&self, fresh: &HashMap<ObjKey, Listed>) -> Vec<Obj> {
        self.gone_keys(fresh).iter().filter_map(|k| self.tree(k)).collect()
    }

    /// A (re)list's objects replace the cache; the changes it makes, as watch events would have told
    /// them (kube-runtime's `apply_watcher_event` for a store): objects gone are deletes (their last
    /// state), new ones and ones at another resourceVersion are changes, the rest nothing. `initial`
    /// marks the informer's first list.
    pub(super) fn relist(&mut self, fresh: HashMap<ObjKey, Listed>, initial: bool) -> Vec<Change> {
        let mut changes = Vec::new();
        for k in self.gone_keys(&fresh) {
            if let Some(old) = self.remove(&k) {
                changes.push(Change { object: old.clone(), old: Some(old), deleted: true, initial });
            }
        }
        for (key, Listed { kept, tree }) in fresh {
            // Only a change has a tree (the list's, else decoded): a relist of objects the cache has costs none.
            let changed = self.objects.get(&key).is_none_or(|o| o.resource_version != kept.resource_version);
            let object = changed.then(|| tree.unwrap_or_else(|| kept.decode()));
            let old = self.put_kept(key, kept);
            if let Some(object) = object {
                let old = old.map(|(tree, kept)| tree.unwrap_or_else(|| kept.decode()));
                changes.push(Change { object, old, deleted: false, initial });
            }
        }
        changes
    }
}

/// An object of a (re)list as the cache will keep it, with its tree if it is news to the cache (a new
/// object, or one at another resourceVersion): the change the relist tells is that tree, not one
/// decoded again from the bytes just written.
pub(super) struct Listed {
    pub(super) kept: Kept,
    pub(super) tree: Option<Obj>,
}

impl Listed {
    /// `obj` listed; `known`: the cache holds it at the same resourceVersion.
    pub(super) fn of(obj: Value, known: impl FnOnce(&Kept) -> bool) -> Listed {
        let kept = Kept::at_rest(&obj);
        let tree = (!known(&kept)).then(|| Arc::new(obj));
        Listed { kept, tree }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use serde_json::json;

    use super::*;
    use uc_api::meta::meta_str;

    pub(in crate::informer) fn cm(name: &str, rv: &str, labels: Value) -> Obj {
        Arc::new(json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}"),
                                     "resourceVersion": rv, "labels": labels}}))
    }

    /// A list as `run_watch` makes it, each object news to the cache (its tree kept) or not.
    fn listed_against(cache: &Cache, objects: &[&Obj]) -> HashMap<ObjKey, Listed> {
        let listed = |o: &Obj| {
            let key = key_of(o);
            let known = |k: &Kept| cache.objects.get(&key).is_some_and(|c| c.resource_version == k.resource_version);
            (key.clone(), Listed::of(Value::clone(o), known))
        };
        objects.iter().map(|o| listed(o)).collect()
    }

    /// A list of objects whose trees were not kept: every change is decoded from their bytes.
    fn listed(objects: &[&Obj]) -> HashMap<ObjKey, Listed> {
        objects.iter().map(|o| (key_of(o), Listed { kept: Kept::at_rest(o), tree: None })).collect()
    }

    fn said(changes: &[Change]) -> Vec<(String, bool, bool, Option<String>)> {
        let mut v: Vec<_> = changes
            .iter()
            .map(|c| {
                let old = c.old.as_ref().map(|o| meta_str(o, "resourceVersion").to_string());
                (meta_str(&c.object, "name").to_string(), c.deleted, c.initial, old)
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_relist_tells_what_changed_since_the_last_one_and_keeps_the_indexes_true() {
        let mut cache = Cache::default();
        let (a1, b1, c1) = (cm("a", "1", json!({"x": "1"})), cm("b", "2", json!({})), cm("c", "3", json!({"x": "1"})));
        let first = cache.relist(listed(&[&a1, &b1, &c1]), true);
        assert_eq!(
            said(&first),
            [("a".into(), false, true, None), ("b".into(), false, true, None), ("c".into(), false, true, None)]
        );
        // While the watch was down: a changed (and relabelled), b deleted, c untouched, d created.
        let (a5, d6) = (cm("a", "5", json!({"x": "2"})), cm("d", "6", json!({})));
        let second = cache.relist(listed(&[&a5, &c1, &d6]), false);
        assert_eq!(
            said(&second),
            [
                ("a".into(), false, false, Some("1".into())),
                ("b".into(), true, false, Some("2".into())),
                ("d".into(), false, false, None)
            ],
            "c, at the same resourceVersion, is no change"
        );
        assert!(!cache.by_uid.contains_key("u-b") && cache.objects.len() == 3);
        let with = |v: &str| cache.by_label.get(&(Arc::from("x"), Arc::from(v))).map(|s| s.len()).unwrap_or(0);
        assert_eq!((with("1"), with("2")), (1, 1), "a moved from x=1 to x=2; c stays");
        assert!(cache.relist(listed(&[&a5, &c1, &d6]), false).is_empty(), "the same list again: nothing");
    }

    #[test]
    fn objects_are_kept_as_bytes_with_the_newest_as_trees() {
        let mut cache = Cache::default();
        let first = cm("a", "1", json!({"x": "1"}));
        assert!(cache.put(first.clone(), true).is_none());
        assert!(Arc::ptr_eq(&cache.tree(&key_of(&first)).unwrap(), &first), "the newest is read as it came");
        let objects: Vec<Obj> = (0..HOT + 10).map(|i| cm(&format!("o{i}"), "2", json!({"n": i.to_string()}))).collect();
        for o in &objects {
            cache.put(o.clone(), true);
        }
        assert!(cache.hot.trees.len() <= HOT && cache.hot.order.len() <= 2 * HOT, "the trees kept are bounded");
        let decoded = cache.tree(&key_of(&first)).unwrap();
        assert!(!Arc::ptr_eq(&decoded, &first) && decoded == first, "an older one is decoded, the same object");
        let relabelled = cm("a", "3", json!({"x": "2"}));
        assert_eq!(cache.put(relabelled.clone(), true), Some(first.clone()), "the version replaced");
        let with = |v: &str| cache.by_label.get(&(Arc::from("x"), Arc::from(v))).map(|s| s.len()).unwrap_or(0);
        assert_eq!((with("1"), with("2")), (0, 1), "indexes follow the labels");
        assert_eq!(cache.trees(cache.by_uid.get("u-o3")), vec![objects[3].clone()]);
        assert_eq!(cache.remove(&key_of(&relabelled)), Some(relabelled));
        assert!(cache.tree(&key_of(&first)).is_none() && !cache.by_uid.contains_key("u-a"));
    }

    #[test]
    fn the_window_counts_objects_not_changes() {
        let mut cache = Cache::default();
        let first = cm("first", "1", json!({}));
        cache.put(first.clone(), true);
        // Fewer objects than the window, each changed many times: all stay trees, none is written.
        for round in 0..4 {
            for i in 0..HOT - 1 {
                cache.put(cm(&format!("o{i}"), &(round + 2).to_string(), json!({})), true);
            }
        }
        assert!(Arc::ptr_eq(&cache.tree(&key_of(&first)).unwrap(), &first), "the first is still the tree it was");
        assert!(cache.objects.values().all(|k| matches!(k.body, Body::InHot)), "nothing was written out");
        assert!(cache.hot.order.len() <= 2 * HOT, "stale entries are dropped: {}", cache.hot.order.len());
        // One more object: the one changed longest ago leaves the window.
        cache.put(cm("last", "9", json!({})), true);
        assert_eq!(cache.hot.trees.len(), HOT);
        assert!(!matches!(cache.objects.get(&key_of(&first)).unwrap().body, Body::InHot), "first left, written");
        assert_eq!(cache.tree(&key_of(&first)), Some(first), "and reads back the same");
    }

    #[test]
    fn an_object_is_written_out_packed_when_its_tree_leaves_the_window_and_reads_back_the_same() {
        let mut cache = Cache::default();
        let big = |name: &str, rv: &str| {
            let mut o = (*cm(name, rv, json!({"x": "1"}))).clone();
            o["data"] = json!({"text": "the same words again ".repeat(30)});
            Arc::new(o)
        };
        let (a1, a2) = (big("a", "1"), big("a", "2"));
        cache.put(a1, true);
        cache.put(a2.clone(), true);
        let in_hot = |c: &Cache| c.objects.values().filter(|k| matches!(k.body, Body::InHot)).count();
        assert_eq!(in_hot(&cache), 1, "a version replaced in the window is never written");
        for i in 0..=HOT {
            cache.put(cm(&format!("o{i}"), "1", json!({})), true);
        }
        assert_eq!(in_hot(&cache), cache.hot.trees.len(), "every object out of the window has its bytes");
        let a = cache.objects.get(&key_of(&a2)).unwrap();
        assert!(matches!(a.body, Body::Packed(_)), "text that compresses is packed: {:?}", a.body);
        assert_eq!(cache.tree(&key_of(&a2)), Some(a2.clone()), "and decodes to the object");
        assert!(matches!(cache.objects.get(&key_of(&cm("o0", "1", json!({})))).unwrap().body, Body::Plain(_)));
        let listed = cache.relist(listed(&[&a2, &big("b", "3")]), false);
        assert_eq!(said(&listed).len(), HOT + 2, "the small ones deleted, b new; a unchanged");
        assert_eq!(cache.tree(&key_of(&big("b", "3"))), Some(big("b", "3")), "a listed object is kept packed");
    }

    #[test]
    fn an_object_nobody_reads_soon_is_kept_as_bytes_and_its_old_tree_leaves_the_window() {
        let mut cache = Cache::default();
        let (a1, a2, a3) = (cm("a", "1", json!({"x": "1"})), cm("a", "2", json!({"x": "2"})), cm("a", "3", json!({})));
        cache.put(a1.clone(), true);
        assert_eq!(cache.put(a2.clone(), false), Some(a1), "the version replaced, from the window");
        let key = key_of(&a2);
        let kept = |c: &Cache| matches!(c.objects.get(&key).unwrap().body, Body::InHot);
        assert!(!kept(&cache) && cache.hot.trees.is_empty(), "written out, no tree kept");
        assert_eq!(cache.tree(&key_of(&a2)), Some(a2.clone()), "and reads back the same");
        assert!(cache.by_label.contains_key(&(Arc::from("x"), Arc::from("2"))), "indexed as any other");
        assert_eq!(cache.put(a3.clone(), true), Some(a2), "the version replaced, decoded");
        assert!(kept(&cache), "read soon: its tree is kept");
    }

    #[test]
    fn a_relist_tells_its_news_with_the_listed_trees_and_keeps_none_of_what_it_knew() {
        let mut cache = Cache::default();
        let (a1, b1) = (cm("a", "1", json!({})), cm("b", "2", json!({})));
        let first = listed_against(&cache, &[&a1, &b1]);
        assert!(first.values().all(|l| l.tree.is_some()), "an empty cache: all news");
        let changes = cache.relist(first, true);
        assert!(changes.iter().any(|c| c.object == a1), "a told, as listed");
        let a2 = cm("a", "5", json!({}));
        let second = listed_against(&cache, &[&a2, &b1]);
        let tree = |name: &str| second.get(&key_of(&cm(name, "0", json!({})))).map(|l| l.tree.clone());
        assert_eq!(tree("a"), Some(Some(a2.clone())), "a changed: its tree is the list's");
        assert_eq!(tree("b"), Some(None), "b unchanged: no tree kept");
        let changes = cache.relist(second, false);
        assert_eq!(said(&changes), [("a".into(), false, false, Some("1".into()))]);
        assert_eq!(changes[0].object, a2);
        assert_eq!(cache.tree(&key_of(&a2)), Some(a2), "and the cache reads the new version");
    }

    #[test]
    fn a_parents_children_are_those_it_owns_then_those_its_label_selects_each_once() {
        let mut cache = Cache::default();
        let child = |name: &str, owned: bool, labelled: bool| {
            let mut o = Value::clone(&cm(name, "1", if labelled { json!({"uid": "p"}) } else { json!({}) }));
            if owned {
                o["metadata"]["ownerReferences"] = json!([{"uid": "p", "controller": true}]);
            }
            Arc::new(o)
        };
        for (name, owned, labelled) in [("both", true, true), ("owned", true, false), ("labelled", false, true)] {
            cache.put(child(name, owned, labelled), false);
        }
        cache.put(child("neither", false, false), true);
        let names = |objects: Vec<Obj>| objects.iter().map(|o| meta_str(o, "name").to_string()).collect::<Vec<_>>();
        let mut found = names(cache.owned_or_labelled("p", ("uid", "p")));
        found[..2].sort();
        assert_eq!(found, ["both", "owned", "labelled"], "owned first, the labelled one it does not own after");
        let mut selected = names(cache.owned_or_labelled("q", ("uid", "p")));
        selected.sort();
        assert_eq!(selected, ["both", "labelled"]);
        assert!(cache.owned_or_labelled("q", ("uid", "q")).is_empty());
    }
}
