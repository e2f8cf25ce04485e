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

use crate::metrics::Metrics;
use crate::raw::{PodViewObject, Projection, RawObject, Watched};

mod cache;
mod compact;
mod object;
use cache::{Cache, Listed};
pub use object::{Change, Obj, ObjKey, key_of, key_text};

/// Which changed objects a subscriber reads soon after their change: their trees are kept in the window of
/// the newest (`cache::Hot`) only if some subscriber does. A controller following its children reads those of
/// its own parents (and orphans it may adopt), not the pods of every other controller: a pod informer
/// shared by the StatefulSet and DaemonSet controllers keeps a ReplicaSet's pods packed.
pub type Reads = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// Told of an object about to leave the cache (deleted, or gone at a relist) before any reader of the cache
/// can miss it: what a subscriber must know at once, not when its queued event is taken (a controller marks
/// the parents whose child went, so none of them makes it again before asking whether the parent is gone).
pub type Losing = Arc<dyn Fn(&Value) + Send + Sync>;

/// What a subscriber asks of the informer beside its events.
#[derive(Default)]
pub struct Interest {
    /// Which changed objects it reads soon (`None`: any).
    pub reads: Option<Reads>,
    /// Called with each object before the cache lets go of it.
    pub losing: Option<Losing>,
}

struct Subscriber {
    id: u64,
    tx: mpsc::UnboundedSender<Change>,
    interest: Interest,
}

/// A shared watch of one resource type with its cache.
pub struct Informer {
    /// `group/version/resource`.
    pub id: String,
    cache: RwLock<Cache>,
    subscribers: Mutex<Vec<Subscriber>>,
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
            i.subscribers.lock().retain(|s| s.id != self.id);
        }
    }
}

impl Informer {
    /// One object.
    pub fn get(&self, key: &ObjKey) -> Option<Obj> {
        self.cache.read().tree(key)
    }

    /// The object with a uid.
    pub fn get_by_uid(&self, uid: &str) -> Option<Obj> {
        let c = self.cache.read();
        c.by_uid.get(uid).and_then(|k| c.tree(k))
    }

    /// The key of the object with a uid.
    pub fn key_of_uid(&self, uid: &str) -> Option<ObjKey> {
        self.cache.read().by_uid.get(uid).map(|k| (**k).clone())
    }

    /// Objects whose ownerReferences name this uid.
    pub fn owned_by(&self, uid: &str) -> Vec<Obj> {
        let c = self.cache.read();
        c.by_owner.get(uid).map(|s| c.trees(s.iter())).unwrap_or_default()
    }

    /// The keys of every object, without their objects.
    pub fn keys(&self) -> Vec<ObjKey> {
        self.cache.read().objects.keys().map(|k| (**k).clone()).collect()
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
            Some(ns) => c.by_namespace.get(ns).map(|s| c.trees(s.iter())).unwrap_or_default(),
            None => c.trees(c.objects.keys()),
        }
    }

    /// The objects `uid` owns, then those carrying `label` (a key and a value) that it does not own, each
    /// once ([`cache::Cache::owned_or_labelled`]).
    pub fn owned_by_or_labelled(&self, uid: &str, label: (&str, &str)) -> Vec<Obj> {
        self.cache.read().owned_or_labelled(uid, label)
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

    /// Subscribes to changes, reading any object soon after it changes.
    pub fn subscribe(self: &Arc<Self>) -> (Subscription, mpsc::UnboundedReceiver<Change>) {
        self.subscribe_with(Interest::default())
    }

    /// Subscribes to changes with an [`Interest`].
    pub fn subscribe_with(self: &Arc<Self>, interest: Interest) -> (Subscription, mpsc::UnboundedReceiver<Change>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let id = {
            let mut n = self.next_subscriber.lock();
            *n += 1;
            *n
        };
        self.subscribers.lock().push(Subscriber { id, tx, interest });
        (Subscription { informer: Arc::downgrade(self), id }, rx)
    }

    fn publish(&self, change: Change) {
        for s in self.subscribers.lock().iter() {
            let _ = s.tx.send(change.clone());
        }
    }

    /// Whether a subscriber reads `obj` soon after this change of it (nobody subscribed: it may be).
    fn read_soon(&self, obj: &Value) -> bool {
        let subscribers = self.subscribers.lock();
        subscribers.is_empty() || subscribers.iter().any(|s| s.interest.reads.as_ref().is_none_or(|r| r(obj)))
    }

    /// The subscribers told of objects leaving the cache.
    fn losing(&self) -> Vec<Losing> {
        self.subscribers.lock().iter().filter_map(|s| s.interest.losing.clone()).collect()
    }

    /// Applies one event of the watch to the cache and tells subscribers; `fresh` gathers a (re)list.
    fn apply(
        &self,
        ev: watcher::Event<Value>,
        fresh: &mut Option<HashMap<ObjKey, Listed>>,
        synced: &watch::Sender<bool>,
    ) {
        match ev {
            watcher::Event::Init => *fresh = Some(HashMap::new()),
            watcher::Event::InitApply(v) => {
                if let Some(f) = fresh.as_mut() {
                    let key = key_of(&v);
                    let listed = Listed::of(v, |kept| {
                        let cache = self.cache.read();
                        cache.objects.get(&key).is_some_and(|o| o.resource_version == kept.resource_version)
                    });
                    f.insert(key, listed);
                }
            }
            watcher::Event::InitDone => {
                let Some(f) = fresh.take() else { return };
                // Replace the cache, publishing what changed since the previous list.
                let losing = self.losing();
                if !losing.is_empty() {
                    for gone in self.cache.read().gone(&f) {
                        losing.iter().for_each(|l| l(&gone));
                    }
                }
                let initial = !*synced.borrow();
                let changes = self.cache.write().relist(f, initial);
                for ch in changes {
                    self.publish(ch);
                }
                let _ = synced.send(true);
            }
            watcher::Event::Apply(v) => {
                let obj = Arc::new(v);
                let hot = self.read_soon(&obj);
                let old = self.cache.write().put(obj.clone(), hot);
                self.publish(Change { object: obj, old, deleted: false, initial: false });
            }
            watcher::Event::Delete(v) => {
                self.losing().iter().for_each(|l| l(&v));
                let old = self.cache.write().remove(&key_of(&v));
                self.publish(Change { object: Arc::new(v), old, deleted: true, initial: false });
            }
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
        self.acquire_as(ar, Projection::Whole)
    }

    /// The shared informer of a resource type keeping `projection` of each object (an informer per
    /// projection: one keeping less never serves a reader of the whole).
    pub fn acquire_as(&self, ar: &ApiResource, projection: Projection) -> Arc<Informer> {
        let id = projection.informer_id(&resource_id(ar));
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
        let weak = Arc::downgrade(&informer);
        let client = self.client.clone();
        let task = match projection {
            Projection::Whole => tokio::spawn(run_watch(Api::<RawObject>::all_with(client, ar), weak, synced_tx)),
            Projection::PodView => tokio::spawn(run_watch(Api::<PodViewObject>::all_with(client, ar), weak, synced_tx)),
        };
        *informer.task.lock() = Some(task);
        map.retain(|_, w| w.strong_count() > 0);
        map.insert(id, Arc::downgrade(&informer));
        informer
    }
}

/// The object as the cache keeps it: as decoded (without `managedFields`, in the informer's projection),
/// moved in rather than copied.
fn cached(o: impl Watched) -> Value {
    o.into_tree()
}

/// A watch event with `f` of its object (kube-runtime's `Event` has no `map`).
pub(crate) fn map_event<K, T>(ev: watcher::Event<K>, f: impl FnOnce(K) -> T) -> watcher::Event<T> {
    match ev {
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitApply(o) => watcher::Event::InitApply(f(o)),
        watcher::Event::InitDone => watcher::Event::InitDone,
        watcher::Event::Apply(o) => watcher::Event::Apply(f(o)),
        watcher::Event::Delete(o) => watcher::Event::Delete(f(o)),
    }
}

async fn run_watch<K: Watched>(api: Api<K>, informer: Weak<Informer>, synced: watch::Sender<bool>) {
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut fresh: Option<HashMap<ObjKey, Listed>> = None;
    let mut health = crate::watch_health::WatchHealth::default();
    while let Some(ev) = stream.next().await {
        let Some(inf) = informer.upgrade() else { return };
        crate::watch_health::report(&inf.id, &mut health, ev.as_ref().map(|_| ()));
        let Ok(ev) = ev else { continue };
        inf.apply(map_event(ev, cached), &mut fresh, &synced);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::cache::tests::cm;
    use super::*;
    use uc_api::meta::meta_str;

    #[tokio::test]
    async fn an_object_is_read_soon_when_a_subscriber_says_so_or_says_nothing() {
        let hub = InformerHub::new(
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap(),
            Default::default(),
        );
        let ar = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let informer = hub.acquire(&ar);
        let (a, b) = (cm("a", "1", json!({})), cm("b", "1", json!({})));
        assert!(informer.read_soon(&a), "no subscriber yet: kept as before");
        let only_a: Reads = Arc::new(|o: &Value| meta_str(o, "name") == "a");
        let (sub, _rx) = informer.subscribe_with(Interest { reads: Some(only_a), losing: None });
        assert!(informer.read_soon(&a) && !informer.read_soon(&b));
        let (all, _rx2) = informer.subscribe();
        assert!(informer.read_soon(&b), "a subscriber reading everything");
        drop(all);
        assert!(!informer.read_soon(&b), "gone with its subscription");
        drop(sub);
        assert!(informer.read_soon(&b));
    }

    #[tokio::test]
    async fn a_subscriber_is_told_of_a_loss_while_the_cache_still_holds_the_object() {
        let hub = InformerHub::new(
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap(),
            Default::default(),
        );
        let informer = hub.acquire(&ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()));
        let told: Arc<Mutex<Vec<(String, bool)>>> = Default::default();
        let (t, weak) = (told.clone(), Arc::downgrade(&informer));
        let losing: Losing = Arc::new(move |o: &Value| {
            let still_cached = weak.upgrade().is_some_and(|i| i.get(&key_of(o)).is_some());
            t.lock().push((meta_str(o, "name").to_string(), still_cached));
        });
        let (_sub, mut rx) = informer.subscribe_with(Interest { reads: None, losing: Some(losing) });
        let (synced, _) = watch::channel(false);
        let mut fresh = None;
        let v = |name: &str, rv: &str| Value::clone(&cm(name, rv, json!({})));
        for name in ["a", "b", "c"] {
            informer.apply(watcher::Event::Apply(v(name, "1")), &mut fresh, &synced);
        }
        informer.apply(watcher::Event::Delete(v("a", "2")), &mut fresh, &synced);
        assert_eq!(*told.lock(), [("a".to_string(), true)]);
        assert!(informer.get(&key_of(&v("a", "1"))).is_none());
        // A relist without `b`: told of `b`, not of `c`.
        for ev in [watcher::Event::Init, watcher::Event::InitApply(v("c", "1")), watcher::Event::InitDone] {
            informer.apply(ev, &mut fresh, &synced);
        }
        assert_eq!(*told.lock(), [("a".to_string(), true), ("b".to_string(), true)]);
        assert_eq!(informer.keys().len(), 1);
        let deleted: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
            .filter(|c| c.deleted)
            .map(|c| meta_str(&c.object, "name").to_string())
            .collect();
        assert_eq!(deleted, ["a", "b"], "the events follow as before");
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
