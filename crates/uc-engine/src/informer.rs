//! The informer hub: one watch per resource type, shared and reference-counted across every controller
//! that names it, with a cache indexed by namespace, uid, owner uid and label, and fan-out of change
//! events to subscribers. The watch closes when the last user lets go of it.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use futures::StreamExt;
use kube::api::{Api, ApiResource};
use kube::runtime::{WatchStreamExt, watcher};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use uc_api::Pointer;
use uc_api::meta::meta_str;

use crate::metrics::Metrics;
use crate::raw::RawObject;

/// An object in a cache.
pub type Obj = Arc<Value>;

/// `(namespace, name)`; namespace empty for cluster-scoped objects.
pub type ObjKey = (String, String);

/// An object's key as logs and messages write it: `namespace/name`, or `name` when cluster-scoped.
pub fn key_text((namespace, name): &ObjKey) -> String {
    if namespace.is_empty() { name.clone() } else { format!("{namespace}/{name}") }
}

/// The key of an object.
pub fn key_of(obj: &Value) -> ObjKey {
    (meta_str(obj, "namespace").to_string(), meta_str(obj, "name").to_string())
}

fn uid_of(obj: &Value) -> Option<&str> {
    obj.at("/metadata/uid").and_then(Value::as_str)
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj.at("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|r| r.get("uid").and_then(Value::as_str).map(String::from)).collect())
        .unwrap_or_default()
}

fn labels_of(obj: &Value) -> Vec<(String, String)> {
    obj.at("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string()))).collect())
        .unwrap_or_default()
}

/// A change seen by an informer.
#[derive(Clone, Debug)]
pub struct Change {
    /// The object now (for deletes: its last state).
    pub object: Obj,
    /// The object before, if it was cached.
    pub old: Option<Obj>,
    /// Whether the object is gone.
    pub deleted: bool,
    /// Whether the change is the informer's first list (every object there at its start), not news.
    pub initial: bool,
}

/// Whether two versions of an object sit in the same places of the cache's indexes: the same uid,
/// owners and labels (the key, and so the namespace, is theirs already).
fn same_indexes(a: &Value, b: &Value) -> bool {
    uid_of(a) == uid_of(b)
        && a.at("/metadata/labels") == b.at("/metadata/labels")
        && a.at("/metadata/ownerReferences") == b.at("/metadata/ownerReferences")
}

/// The cache's maps hash with foldhash (seeded per process) rather than SipHash: every event and every
/// reconcile looks objects up by key, uid, owner and label, and SipHash was 2 % of the engine's time.
type Map<K, V> = foldhash::HashMap<K, V>;
type Set<K> = foldhash::HashSet<K>;

#[derive(Default)]
struct Cache {
    objects: Map<ObjKey, Obj>,
    by_namespace: Map<String, Set<ObjKey>>,
    by_uid: Map<String, ObjKey>,
    by_owner: Map<String, Set<ObjKey>>,
    by_label: Map<(String, String), Set<ObjKey>>,
}

impl Cache {
    fn unindex(&mut self, key: &ObjKey, obj: &Value) {
        if let Some(set) = self.by_namespace.get_mut(&key.0) {
            set.remove(key);
        }
        if let Some(uid) = uid_of(obj) {
            self.by_uid.remove(uid);
        }
        for o in owner_uids(obj) {
            if let Some(set) = self.by_owner.get_mut(&o) {
                set.remove(key);
                if set.is_empty() {
                    self.by_owner.remove(&o);
                }
            }
        }
        for l in labels_of(obj) {
            if let Some(set) = self.by_label.get_mut(&l) {
                set.remove(key);
                if set.is_empty() {
                    self.by_label.remove(&l);
                }
            }
        }
    }

    fn put(&mut self, obj: Obj) -> Option<Obj> {
        let key = key_of(&obj);
        let old = self.objects.insert(key.clone(), obj.clone());
        match &old {
            // A new version in the same places (a status written, a spec changed): the indexes stand.
            Some(o) if same_indexes(o, &obj) => return old,
            Some(o) => self.unindex(&key, o),
            None => {}
        }
        self.by_namespace.entry(key.0.clone()).or_default().insert(key.clone());
        if let Some(uid) = uid_of(&obj) {
            self.by_uid.insert(uid.to_string(), key.clone());
        }
        for o in owner_uids(&obj) {
            self.by_owner.entry(o).or_default().insert(key.clone());
        }
        for l in labels_of(&obj) {
            self.by_label.entry(l).or_default().insert(key.clone());
        }
        old
    }

    fn remove(&mut self, key: &ObjKey) -> Option<Obj> {
        let old = self.objects.remove(key)?;
        self.unindex(key, &old);
        Some(old)
    }

    /// A (re)list's objects replace the cache; the changes it makes, as watch events would have told
    /// them (kube-runtime's `apply_watcher_event` for a store): objects gone are deletes (their last
    /// state), new ones and ones at another resourceVersion are changes, the rest nothing. `initial`
    /// marks the informer's first list.
    fn relist(&mut self, fresh: HashMap<ObjKey, Obj>, initial: bool) -> Vec<Change> {
        let mut changes = Vec::new();
        let gone: Vec<ObjKey> = self.objects.keys().filter(|k| !fresh.contains_key(*k)).cloned().collect();
        for k in gone {
            if let Some(old) = self.remove(&k) {
                changes.push(Change { object: old.clone(), old: Some(old), deleted: true, initial });
            }
        }
        for (_, obj) in fresh {
            let old = self.put(obj.clone());
            let same =
                old.as_ref().is_some_and(|o| o.at("/metadata/resourceVersion") == obj.at("/metadata/resourceVersion"));
            if !same {
                changes.push(Change { object: obj, old, deleted: false, initial });
            }
        }
        changes
    }
}

/// A shared watch of one resource type with its cache.
pub struct Informer {
    /// `group/version/resource`.
    pub id: String,
    cache: RwLock<Cache>,
    subscribers: Mutex<Vec<(u64, mpsc::UnboundedSender<Change>)>>,
    next_subscriber: Mutex<u64>,
    synced: watch::Receiver<bool>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    metrics: Arc<Metrics>,
}

impl Drop for Informer {
    fn drop(&mut self) {
        if let Some(t) = self.task.lock().take() {
            t.abort();
        }
        self.metrics.watch_closed(&self.id);
    }
}

/// A subscription; unsubscribes when dropped.
pub struct Subscription {
    informer: Weak<Informer>,
    id: u64,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(i) = self.informer.upgrade() {
            i.subscribers.lock().retain(|(id, _)| *id != self.id);
        }
    }
}

impl Informer {
    /// One object.
    pub fn get(&self, key: &ObjKey) -> Option<Obj> {
        self.cache.read().objects.get(key).cloned()
    }

    /// The object with a uid.
    pub fn get_by_uid(&self, uid: &str) -> Option<Obj> {
        let c = self.cache.read();
        c.by_uid.get(uid).and_then(|k| c.objects.get(k)).cloned()
    }

    /// Objects whose ownerReferences name this uid.
    pub fn owned_by(&self, uid: &str) -> Vec<Obj> {
        let c = self.cache.read();
        c.by_owner.get(uid).map(|s| s.iter().filter_map(|k| c.objects.get(k).cloned()).collect()).unwrap_or_default()
    }

    /// How many objects the cache holds.
    pub fn len(&self) -> usize {
        self.cache.read().objects.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Objects in a namespace (all objects when `None`).
    pub fn list(&self, namespace: Option<&str>) -> Vec<Obj> {
        let c = self.cache.read();
        match namespace {
            Some(ns) => c
                .by_namespace
                .get(ns)
                .map(|s| s.iter().filter_map(|k| c.objects.get(k).cloned()).collect())
                .unwrap_or_default(),
            None => c.objects.values().cloned().collect(),
        }
    }

    /// Objects carrying a label with a value.
    pub fn with_label(&self, key: &str, value: &str) -> Vec<Obj> {
        let c = self.cache.read();
        c.by_label
            .get(&(key.to_string(), value.to_string()))
            .map(|s| s.iter().filter_map(|k| c.objects.get(k).cloned()).collect())
            .unwrap_or_default()
    }

    /// Whether the initial list has arrived.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits for the initial list.
    pub async fn wait_synced(&self) {
        let mut rx = self.synced.clone();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Subscribes to changes.
    pub fn subscribe(self: &Arc<Self>) -> (Subscription, mpsc::UnboundedReceiver<Change>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = {
            let mut n = self.next_subscriber.lock();
            *n += 1;
            *n
        };
        self.subscribers.lock().push((id, tx));
        (Subscription { informer: Arc::downgrade(self), id }, rx)
    }

    fn publish(&self, change: Change) {
        for (_, tx) in self.subscribers.lock().iter() {
            let _ = tx.send(change.clone());
        }
    }
}

/// Shares informers by resource type.
pub struct InformerHub {
    client: kube::Client,
    informers: Mutex<HashMap<String, Weak<Informer>>>,
    metrics: Arc<Metrics>,
}

/// The id of a resource type: `group/version/resource`.
pub fn resource_id(ar: &ApiResource) -> String {
    format!("{}/{}/{}", ar.group, ar.version, ar.plural)
}

impl InformerHub {
    /// A hub using this client.
    pub fn new(client: kube::Client, metrics: Arc<Metrics>) -> Self {
        Self { client, informers: Mutex::new(HashMap::new()), metrics }
    }

    /// The shared informer of a resource type, started if nobody holds it yet.
    pub fn acquire(&self, ar: &ApiResource) -> Arc<Informer> {
        let id = resource_id(ar);
        let mut map = self.informers.lock();
        if let Some(i) = map.get(&id).and_then(Weak::upgrade) {
            return i;
        }
        let (synced_tx, synced) = watch::channel(false);
        let informer = Arc::new(Informer {
            id: id.clone(),
            cache: RwLock::new(Cache::default()),
            subscribers: Mutex::new(Vec::new()),
            next_subscriber: Mutex::new(0),
            synced,
            task: Mutex::new(None),
            metrics: self.metrics.clone(),
        });
        self.metrics.watch_opened(&id);
        let api: Api<RawObject> = Api::all_with(self.client.clone(), ar);
        let weak = Arc::downgrade(&informer);
        let task = tokio::spawn(run_watch(api, weak, synced_tx));
        *informer.task.lock() = Some(task);
        map.retain(|_, w| w.strong_count() > 0);
        map.insert(id, Arc::downgrade(&informer));
        informer
    }
}

/// The object as the cache keeps it: as decoded, without `managedFields` (`RawObject` skips them), moved
/// in rather than copied.
fn cached(o: RawObject) -> Value {
    o.body
}

async fn run_watch(api: Api<RawObject>, informer: Weak<Informer>, synced: watch::Sender<bool>) {
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut fresh: Option<HashMap<ObjKey, Obj>> = None;
    let mut health = crate::watch_health::WatchHealth::default();
    while let Some(ev) = stream.next().await {
        let Some(inf) = informer.upgrade() else { return };
        crate::watch_health::report(&inf.id, &mut health, ev.as_ref().map(|_| ()));
        let Ok(ev) = ev else { continue };
        match ev {
            watcher::Event::Init => fresh = Some(HashMap::new()),
            watcher::Event::InitApply(o) => {
                if let Some(f) = fresh.as_mut() {
                    let v = cached(o);
                    f.insert(key_of(&v), Arc::new(v));
                }
            }
            watcher::Event::InitDone => {
                let Some(f) = fresh.take() else { continue };
                // Replace the cache, publishing what changed since the previous list.
                let initial = !*synced.borrow();
                let changes = inf.cache.write().relist(f, initial);
                for ch in changes {
                    inf.publish(ch);
                }
                let _ = synced.send(true);
            }
            watcher::Event::Apply(o) => {
                let obj = Arc::new(cached(o));
                let old = inf.cache.write().put(obj.clone());
                inf.publish(Change { object: obj, old, deleted: false, initial: false });
            }
            watcher::Event::Delete(o) => {
                let v = cached(o);
                let key = key_of(&v);
                let old = inf.cache.write().remove(&key);
                inf.publish(Change { object: Arc::new(v), old, deleted: true, initial: false });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cm(name: &str, rv: &str, labels: Value) -> Obj {
        Arc::new(json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}"),
                                     "resourceVersion": rv, "labels": labels}}))
    }

    fn listed(objects: &[&Obj]) -> HashMap<ObjKey, Obj> {
        objects.iter().map(|o| (key_of(o), Arc::clone(o))).collect()
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
        let with = |v: &str| cache.by_label.get(&("x".into(), v.into())).map(|s| s.len()).unwrap_or(0);
        assert_eq!((with("1"), with("2")), (1, 1), "a moved from x=1 to x=2; c stays");
        assert!(cache.relist(listed(&[&a5, &c1, &d6]), false).is_empty(), "the same list again: nothing");
    }

    #[test]
    fn the_cached_object_is_the_object_without_managed_fields() {
        let obj = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "resourceVersion": "7", "labels": {"a": "b"},
                         "managedFields": [{"manager": "uc", "operation": "Apply"}]},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"readyReplicas": 1}
        });
        let o: RawObject = serde_json::from_value(obj.clone()).unwrap();
        let mut expected = obj;
        expected["metadata"].as_object_mut().unwrap().remove("managedFields");
        assert_eq!(cached(o), expected);
        // A body without type fields or anything beyond metadata.
        let bare: RawObject = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
        assert_eq!(cached(bare), json!({"metadata": {"name": "x"}}));
    }
}
