//! The Services, Endpoints and EndpointSlices the hosts files and the service proxy are made of,
//! watched. A watch that comes back after a gap relists, and the objects deleted meanwhile never come as
//! deletions: [`Listed`] remembers what each watch has seen, so that the end of a relist forgets what it
//! no longer holds, as a kube-proxy's or a kubelet's informer does.

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;

use crate::names::HostsFiles;
use crate::proxy::Proxy;

/// An object's namespace and name.
type Key = (Option<String>, Option<String>);

/// The objects one watch has seen, by key, so that a relist tells which of them went.
#[derive(Debug, Default)]
pub(crate) struct Listed {
    known: BTreeSet<Key>,
    /// While a relist is under way, the keys it has listed so far.
    relisted: Option<BTreeSet<Key>>,
}

impl Listed {
    /// What a watch event asks of the tables: each object to keep (`false`) or to forget (`true`).
    /// The end of a relist forgets what it did not list, as objects carrying only their name.
    pub(crate) fn on<K: Resource + Default>(&mut self, event: watcher::Event<K>) -> Vec<(K, bool)> {
        match event {
            watcher::Event::Init => {
                self.relisted = Some(BTreeSet::new());
                Vec::new()
            }
            watcher::Event::InitApply(o) | watcher::Event::Apply(o) => {
                let key = key(o.meta());
                if let Some(relisted) = &mut self.relisted {
                    relisted.insert(key.clone());
                }
                self.known.insert(key);
                vec![(o, false)]
            }
            watcher::Event::Delete(o) => {
                self.known.remove(&key(o.meta()));
                vec![(o, true)]
            }
            watcher::Event::InitDone => {
                let Some(relisted) = self.relisted.take() else { return Vec::new() };
                let gone = std::mem::replace(&mut self.known, relisted);
                gone.into_iter().filter(|k| !self.known.contains(k)).map(|k| (named(k), true)).collect()
            }
        }
    }
}

fn key(meta: &ObjectMeta) -> Key {
    (meta.namespace.clone(), meta.name.clone())
}

/// An object carrying only its namespace and name: what forgetting it needs.
fn named<K: Resource + Default>((namespace, name): Key) -> K {
    let mut o = K::default();
    *o.meta_mut() = ObjectMeta { namespace, name, ..ObjectMeta::default() };
    o
}

/// Services and Endpoints feed the hosts files and the service proxy; EndpointSlices imported from
/// other clusters, the hosts files' clusterset names.
pub(crate) async fn watch(client: kube::Client, hosts: Option<Arc<HostsFiles>>, proxy: Arc<Proxy>) {
    let services = follow(Api::<Service>::all(client.clone()), |s, gone| {
        proxy.set_service(s, gone);
        if let Some(h) = &hosts {
            h.set_service(s, gone);
        }
    });
    let endpoints = follow(Api::<Endpoints>::all(client.clone()), |e, gone| {
        proxy.set_endpoints(e, gone);
        if let Some(h) = &hosts {
            h.set_endpoints(e, gone);
        }
    });
    let slices = follow(Api::<EndpointSlice>::all(client), |s, gone| {
        if let Some(h) = &hosts {
            h.set_endpoint_slice(s, gone);
        }
    });
    tokio::join!(services, endpoints, slices);
}

/// Every object of one kind, handed to `set` as it comes and goes. An object `set` panics on is logged
/// and skipped: the node's view of every other Service goes on.
async fn follow<K>(api: Api<K>, set: impl Fn(&K, bool))
where
    K: Resource + Default + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let events = watcher(api, watcher::Config::default()).default_backoff();
    let mut events = std::pin::pin!(events);
    let mut listed = Listed::default();
    while let Some(event) = events.next().await {
        let Ok(event) = event else { continue };
        for (o, gone) in listed.on(event) {
            take_in(&o, gone, &set);
        }
    }
}

/// Hands one object to `set`; whether it was taken in (`false`: `set` panicked, which is logged).
fn take_in<K: Resource>(o: &K, gone: bool, set: &impl Fn(&K, bool)) -> bool {
    let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| set(o, gone))) else { return true };
    let (ns, name) = (o.meta().namespace.as_deref(), o.meta().name.as_deref());
    let message = uc_api::panics::message(panic.as_ref());
    tracing::error!(?ns, ?name, "taking in a {} panicked: {message}; skipped", std::any::type_name::<K>());
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(name: &str) -> Service {
        Service {
            metadata: ObjectMeta { namespace: Some("ns".into()), name: Some(name.into()), ..Default::default() },
            ..Default::default()
        }
    }

    fn names(changes: &[(Service, bool)]) -> Vec<(String, bool)> {
        changes.iter().map(|(s, gone)| (s.metadata.name.clone().unwrap_or_default(), *gone)).collect()
    }

    #[test]
    fn a_relist_forgets_what_went_while_the_watch_was_away() {
        let mut listed = Listed::default();
        assert!(listed.on::<Service>(watcher::Event::Init).is_empty());
        for name in ["a", "b", "c"] {
            assert_eq!(names(&listed.on(watcher::Event::InitApply(service(name)))), [(name.to_string(), false)]);
        }
        assert!(listed.on::<Service>(watcher::Event::InitDone).is_empty(), "the first list forgets nothing");
        assert_eq!(names(&listed.on(watcher::Event::Apply(service("d")))), [("d".to_string(), false)]);
        assert_eq!(names(&listed.on(watcher::Event::Delete(service("a")))), [("a".to_string(), true)]);
        // The watch was away: b and d were deleted meanwhile, e created.
        listed.on::<Service>(watcher::Event::Init);
        listed.on(watcher::Event::InitApply(service("c")));
        listed.on(watcher::Event::InitApply(service("e")));
        let gone = listed.on::<Service>(watcher::Event::InitDone);
        assert_eq!(names(&gone), [("b".to_string(), true), ("d".to_string(), true)]);
        assert!(gone.iter().all(|(s, _)| s.metadata.namespace.as_deref() == Some("ns")), "{gone:?}");
        // What the relist listed is what is known now.
        listed.on::<Service>(watcher::Event::Init);
        assert_eq!(names(&listed.on::<Service>(watcher::Event::InitDone)), [("c".into(), true), ("e".into(), true)]);
    }

    #[test]
    fn a_change_during_a_relist_counts_as_listed() {
        let mut listed = Listed::default();
        listed.on(watcher::Event::Apply(service("a")));
        listed.on(watcher::Event::Apply(service("b")));
        listed.on::<Service>(watcher::Event::Init);
        listed.on(watcher::Event::Apply(service("b")));
        assert_eq!(names(&listed.on::<Service>(watcher::Event::InitDone)), [("a".to_string(), true)]);
        assert!(listed.on::<Service>(watcher::Event::InitDone).is_empty(), "an InitDone without Init forgets nothing");
    }

    #[test]
    fn an_object_the_node_panics_on_is_skipped_and_the_next_taken_in() {
        let taken = std::cell::RefCell::new(Vec::new());
        let set = |s: &Service, _gone: bool| {
            let name = s.metadata.name.clone().unwrap_or_default();
            assert_ne!(name, "bad", "a Service the node cannot take in");
            taken.borrow_mut().push(name);
        };
        assert!(!take_in(&service("bad"), false, &set));
        assert!(take_in(&service("good"), false, &set));
        assert_eq!(*taken.borrow(), ["good"]);
    }
}
