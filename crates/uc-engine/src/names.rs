//! In-cluster names for the clients uc runs on the host (webhook hooks, the operators' clients): one
//! table of the cluster's Services and Endpoints ([`uc_api::dns::Names`], kept by a watch of each), and
//! a DNS resolver over it for hyper's connector. `<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc`,
//! `<svc>.<ns>.svc.cluster.local` and `<pod>.<svc>.<ns>.svc...` resolve as in-cluster DNS would answer
//! a pod of the client's namespace; any other name goes to the system resolver.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::StreamExt;
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use parking_lot::RwLock;
use tokio::sync::watch;
use uc_api::dns::{CLUSTERSET_DOMAIN, DOMAIN, Names, key_of};

use crate::informer::map_event;

#[derive(Default)]
struct Objects {
    services: BTreeMap<String, Service>,
    endpoints: BTreeMap<String, Endpoints>,
    slices: BTreeMap<String, EndpointSlice>,
}

/// One of the objects the table is made of.
enum Object {
    Service(Box<Service>),
    Endpoints(Endpoints),
    Slice(EndpointSlice),
}

impl Objects {
    /// Records an object (`gone`: forgets it).
    fn set(&mut self, o: Object, gone: bool) {
        fn put<T>(map: &mut BTreeMap<String, T>, key: String, o: T, gone: bool) {
            if gone {
                map.remove(&key);
            } else {
                map.insert(key, o);
            }
        }
        match o {
            Object::Service(o) => put(&mut self.services, key_of(&o.metadata), *o, gone),
            Object::Endpoints(o) => put(&mut self.endpoints, key_of(&o.metadata), o, gone),
            Object::Slice(o) => put(&mut self.slices, key_of(&o.metadata), o, gone),
        }
    }

    /// Forgets every object of one kind (0: Services, 1: Endpoints, 2: EndpointSlices), as a relist begins.
    fn clear(&mut self, which: usize) {
        match which {
            0 => self.services.clear(),
            1 => self.endpoints.clear(),
            _ => self.slices.clear(),
        }
    }
}

/// The cluster's names, kept current.
#[derive(Clone)]
pub struct ClusterNames {
    table: Arc<RwLock<Names>>,
    synced: watch::Receiver<bool>,
}

impl ClusterNames {
    /// Starts watching the cluster's Services, Endpoints and EndpointSlices.
    pub fn start(client: kube::Client) -> ClusterNames {
        let table = Arc::new(RwLock::new(Names::default()));
        let (tx, synced) = watch::channel(false);
        let t = table.clone();
        tokio::spawn(async move {
            let services = watcher(Api::<Service>::all(client.clone()), watcher::Config::default()).default_backoff();
            let endpoints =
                watcher(Api::<Endpoints>::all(client.clone()), watcher::Config::default()).default_backoff();
            // Slices imported from other clusters (multi-cluster services) give clusterset names.
            let slices = watcher(Api::<EndpointSlice>::all(client), watcher::Config::default()).default_backoff();
            let events = futures::stream::select_all([
                services.map(|e| (0, e.map(|e| map_event(e, |s| Object::Service(Box::new(s)))))).boxed(),
                endpoints.map(|e| (1, e.map(|e| map_event(e, Object::Endpoints)))).boxed(),
                slices.map(|e| (2, e.map(|e| map_event(e, Object::Slice)))).boxed(),
            ]);
            let mut events = std::pin::pin!(events);
            let mut objects = Objects::default();
            let mut done = [false, false];
            // A kind being relisted: the table keeps what it was until the list is whole.
            let mut relisting = [false; 3];
            while let Some((which, ev)) = events.next().await {
                let Ok(ev) = ev else { continue };
                match ev {
                    watcher::Event::Apply(o) | watcher::Event::InitApply(o) => objects.set(o, false),
                    watcher::Event::Delete(o) => objects.set(o, true),
                    watcher::Event::Init => {
                        objects.clear(which);
                        relisting[which] = true;
                    }
                    watcher::Event::InitDone => {
                        relisting[which] = false;
                        if which < 2 {
                            done[which] = true;
                        }
                    }
                }
                if relisting.contains(&true) {
                    continue;
                }
                *t.write() = Names::build(objects.services.values(), &objects.endpoints, objects.slices.values());
                if done[0] && done[1] {
                    tx.send_replace(true);
                }
            }
        });
        ClusterNames { table, synced }
    }

    /// A resolver for clients in `namespace` (what short names mean).
    pub fn resolver(&self, namespace: &str) -> Resolver {
        Resolver { names: Some(self.clone()), namespace: namespace.to_string(), system: GaiResolver::new() }
    }

    /// The addresses of a cluster name, as a client in `namespace` resolves it (None: not a name of
    /// the cluster). Waits for the first list of Services and Endpoints (at most 5 s).
    pub async fn lookup(&self, name: &str, namespace: &str) -> Option<Vec<std::net::IpAddr>> {
        let mut synced = self.synced.clone();
        let _ = tokio::time::timeout(Duration::from_secs(5), synced.wait_for(|s| *s)).await;
        self.table.read().resolve(name, namespace).map(<[_]>::to_vec)
    }
}

/// Whether a name can only be a cluster name (the system resolver is not asked for it).
fn cluster_only(name: &str) -> bool {
    let n = name.trim_end_matches('.');
    n.ends_with(&format!(".svc.{DOMAIN}"))
        || n.ends_with(".svc")
        || n == DOMAIN
        || n.ends_with(&format!(".{DOMAIN}"))
        || n.ends_with(&format!(".{CLUSTERSET_DOMAIN}"))
}

/// A DNS resolver for hyper's `HttpConnector` that knows the cluster's names.
#[derive(Clone)]
pub struct Resolver {
    names: Option<ClusterNames>,
    namespace: String,
    system: GaiResolver,
}

impl Resolver {
    /// The system resolver alone (no cluster to ask).
    pub fn system() -> Resolver {
        Resolver { names: None, namespace: String::new(), system: GaiResolver::new() }
    }
}

/// Why a name did not resolve.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ResolveError(String);

impl tower_service::Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = ResolveError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let (names, namespace, mut system) = (self.names.clone(), self.namespace.clone(), self.system.clone());
        Box::pin(async move {
            let host = name.as_str().to_string();
            if let Some(names) = &names
                && let Some(ips) = names.lookup(&host, &namespace).await
            {
                return Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect::<Vec<_>>().into_iter());
            }
            if names.is_some() && cluster_only(&host) {
                return Err(ResolveError(format!("{host}: no such Service or pod in the cluster")));
            }
            let addrs = tower_service::Service::call(&mut system, name)
                .await
                .map_err(|e| ResolveError(format!("{host}: {e}")))?;
            Ok(addrs.collect::<Vec<_>>().into_iter())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_do_not_go_to_the_system_resolver() {
        assert!(cluster_only("example-client.default.svc"));
        assert!(cluster_only("example-client.default.svc.cluster.local."));
        assert!(!cluster_only("example-client"));
        assert!(!cluster_only("example.com"));
    }
}
