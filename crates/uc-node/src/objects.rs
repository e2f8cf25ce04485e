//! The ConfigMaps and Secrets that running pods name, each watched on its own (a field-selected watch,
//! the kubelet's "Watch" strategy) for as long as some pod needs it, so volumes and environments are
//! built from current data and volumes follow changes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::env::{Data, Kind, config_map_data, secret_data};

/// What is known of one object: None until its first list arrived.
pub type Known = Option<Data>;

type Key = (Kind, String, String);

/// The keys and values of an object.
type Map = std::collections::BTreeMap<String, Vec<u8>>;

/// The watched objects.
#[derive(Clone)]
pub struct Objects {
    client: kube::Client,
    entries: Arc<Mutex<HashMap<Key, watch::Sender<Known>>>>,
}

impl Objects {
    /// Objects read through `client`.
    pub fn new(client: kube::Client) -> Objects {
        Objects { client, entries: Arc::new(Mutex::new(HashMap::new())) }
    }

    /// Follows one object (its watch starts with the first follower and ends with the last).
    pub fn subscribe(&self, kind: Kind, namespace: &str, name: &str) -> watch::Receiver<Known> {
        let key = (kind, namespace.to_string(), name.to_string());
        let mut entries = self.entries.lock();
        if let Some(tx) = entries.get(&key) {
            return tx.subscribe();
        }
        let (tx, rx) = watch::channel(None);
        entries.insert(key.clone(), tx.clone());
        tokio::spawn(follow(self.client.clone(), self.entries.clone(), key, tx));
        rx
    }

    /// The current data of an object (waiting up to 10 s for a first answer; no answer counts as
    /// missing).
    pub async fn get(&self, kind: Kind, namespace: &str, name: &str) -> Data {
        let mut rx = self.subscribe(kind, namespace, name);
        let known = tokio::time::timeout(Duration::from_secs(10), rx.wait_for(Option::is_some)).await;
        match known {
            Ok(Ok(v)) => v.clone().flatten(),
            _ => None,
        }
    }
}

/// Follows one object while somebody does (`tx` has receivers).
async fn follow(
    client: kube::Client,
    entries: Arc<Mutex<HashMap<Key, watch::Sender<Known>>>>,
    key: Key,
    tx: watch::Sender<Known>,
) {
    let namespace = key.1.clone();
    match key.0 {
        Kind::ConfigMap => {
            follow_kind(Api::<ConfigMap>::namespaced(client, &namespace), config_map_data, entries, key, tx).await;
        }
        Kind::Secret => {
            follow_kind(Api::<Secret>::namespaced(client, &namespace), secret_data, entries, key, tx).await;
        }
    }
}

/// Follows one object of kind `K`, its data as `data` reads it.
async fn follow_kind<K>(
    api: Api<K>,
    data: fn(&K) -> Map,
    entries: Arc<Mutex<HashMap<Key, watch::Sender<Known>>>>,
    key: Key,
    tx: watch::Sender<Known>,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let config = watcher::Config::default().fields(&format!("metadata.name={}", key.2));
    let events = watcher(api, config).default_backoff();
    let mut events = std::pin::pin!(events);
    let mut seen = false;
    loop {
        tokio::select! {
            _ = tx.closed() => {
                // Nobody follows it any more (unless somebody just started to: then go on).
                let mut entries = entries.lock();
                if tx.is_closed() {
                    entries.remove(&key);
                    return;
                }
            }
            ev = events.next() => match ev {
                Some(Ok(watcher::Event::Init)) => seen = false,
                Some(Ok(watcher::Event::InitApply(o) | watcher::Event::Apply(o))) => {
                    seen = true;
                    tx.send_replace(Some(Some(data(&o))));
                }
                Some(Ok(watcher::Event::InitDone)) if !seen => {
                    tx.send_replace(Some(None));
                }
                Some(Ok(watcher::Event::Delete(_))) => {
                    tx.send_replace(Some(None));
                }
                Some(_) => {}
                None => break,
            },
        }
    }
    entries.lock().remove(&key);
}
