//! Service cluster IPs that work: the node listens on every Service's cluster IP and TCP port (in the
//! Services' range, delivered to the machine's own sockets) and on its node ports (on the node's
//! address, 127.0.0.1), and forwards each connection to a ready endpoint, on the endpoint's port for
//! that Service port — kube-proxy's userspace mode. With it, `http://<svc>.<ns>/` reaches a pod
//! listening on its targetPort, from pods and from the machine.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::{Endpoints, Service};
use parking_lot::Mutex;
use tokio::net::{TcpListener, TcpStream};
use uc_api::dns::key_of;

/// The ready backends of a Service port: the Endpoints' addresses, on the port named like the
/// Service port (or the only port).
pub fn backends(endpoints: &Endpoints, port_name: &str) -> Vec<SocketAddr> {
    let mut out = Vec::new();
    for subset in endpoints.subsets.iter().flatten() {
        let ports = subset.ports.as_deref().unwrap_or_default();
        let named = ports.iter().find(|p| p.name.as_deref().unwrap_or_default() == port_name);
        let port = named.or(if ports.len() == 1 { ports.first() } else { None });
        let Some(port) = port.and_then(|p| u16::try_from(p.port).ok()) else { continue };
        for a in subset.addresses.iter().flatten() {
            if let Ok(ip) = a.ip.parse::<IpAddr>() {
                out.push(SocketAddr::new(ip, port));
            }
        }
    }
    out
}

/// The TCP ports a Service listens on: `(address, port, port name)` — its cluster IP and ports, and
/// its node ports on the node's address (127.0.0.1).
pub fn listeners(svc: &Service) -> Vec<(IpAddr, u16, String)> {
    let Some(spec) = &svc.spec else { return Vec::new() };
    let Ok(ip) = spec.cluster_ip.as_deref().unwrap_or_default().parse::<IpAddr>() else { return Vec::new() };
    let node = IpAddr::from([127, 0, 0, 1]);
    let number = |n: Option<i32>| n.and_then(|n| u16::try_from(n).ok());
    spec.ports
        .iter()
        .flatten()
        .filter(|p| matches!(p.protocol.as_deref(), None | Some("TCP")))
        .flat_map(|p| {
            let name = p.name.clone().unwrap_or_default();
            let cluster = number(Some(p.port)).map(|port| (ip, port, name.clone()));
            let node_port = number(p.node_port).filter(|n| *n > 0).map(|port| (node, port, name));
            cluster.into_iter().chain(node_port)
        })
        .collect()
}

/// The node's service proxy.
#[derive(Default)]
pub struct Proxy {
    listening: Mutex<HashMap<(String, IpAddr, u16, String), tokio::task::AbortHandle>>,
    endpoints: Arc<Mutex<HashMap<String, Endpoints>>>,
    next: Arc<AtomicUsize>,
}

impl Proxy {
    /// Opens, keeps or closes a Service's listeners.
    pub fn set_service(&self, svc: &Service, gone: bool) {
        let key = key_of(&svc.metadata);
        let want: Vec<(IpAddr, u16, String)> = if gone { Vec::new() } else { listeners(svc) };
        let mut listening = self.listening.lock();
        listening.retain(|(k, ip, port, name), task| {
            let keep = k != &key || want.iter().any(|w| (&w.0, &w.1, &w.2) == (ip, port, name));
            if !keep {
                task.abort();
            }
            keep
        });
        for (ip, port, name) in want {
            let id = (key.clone(), ip, port, name.clone());
            if listening.contains_key(&id) {
                continue;
            }
            let (endpoints, next, svc_key) = (self.endpoints.clone(), self.next.clone(), key.clone());
            let task = tokio::spawn(async move {
                let listener = match TcpListener::bind((ip, port)).await {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!(service = %svc_key, %ip, port, error = %e, "cannot listen on the Service's cluster IP");
                        return;
                    }
                };
                loop {
                    let Ok((client, _)) = listener.accept().await else { continue };
                    let candidates = endpoints.lock().get(&svc_key).map(|e| backends(e, &name)).unwrap_or_default();
                    let start = next.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(forward(client, candidates, start));
                }
            });
            listening.insert(id, task.abort_handle());
        }
    }

    /// Records a Service's Endpoints.
    pub fn set_endpoints(&self, endpoints: &Endpoints, gone: bool) {
        let key = key_of(&endpoints.metadata);
        if gone {
            self.endpoints.lock().remove(&key);
        } else {
            self.endpoints.lock().insert(key, endpoints.clone());
        }
    }
}

/// One connection: to the first backend (round robin) that accepts it.
pub(crate) async fn forward(mut client: TcpStream, backends: Vec<SocketAddr>, start: usize) {
    let n = backends.len();
    for i in 0..n {
        if let Ok(mut upstream) = TcpStream::connect(backends[(start + i) % n]).await {
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn service_ports_map_to_endpoint_ports() {
        let svc = json!({"spec": {"clusterIP": "127.3.240.9", "ports": [{"name": "http", "port": 80, "targetPort": 8000},
                                                                       {"name": "dns", "port": 53, "protocol": "UDP"}]}});
        assert_eq!(listeners(&typed(svc)), vec![("127.3.240.9".parse().unwrap(), 80, "http".to_string())]);
        let node_port =
            json!({"spec": {"clusterIP": "10.3.240.9", "ports": [{"name": "web", "port": 80, "nodePort": 30080}]}});
        assert_eq!(
            listeners(&typed(node_port)),
            vec![
                ("10.3.240.9".parse().unwrap(), 80, "web".to_string()),
                ("127.0.0.1".parse().unwrap(), 30080, "web".to_string())
            ]
        );
        assert!(listeners(&typed(json!({"spec": {"clusterIP": "None", "ports": [{"port": 80}]}}))).is_empty());
        let ep: Endpoints = typed(json!({"subsets": [{"addresses": [{"ip": "127.3.0.2"}, {"ip": "127.3.0.3"}],
                                     "ports": [{"name": "http", "port": 8000}, {"name": "metrics", "port": 9090}]}]}));
        assert_eq!(backends(&ep, "http"), vec!["127.3.0.2:8000".parse().unwrap(), "127.3.0.3:8000".parse().unwrap()]);
        assert!(backends(&ep, "other").is_empty());
    }

    #[tokio::test]
    async fn connections_reach_a_ready_endpoint() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let backend = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let backend_port = backend.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut s, _) = backend.accept().await.unwrap();
            s.write_all(b"from the pod").await.unwrap();
        });
        // A free port on a loopback address of the test's own.
        let probe = TcpListener::bind("127.77.240.1:0").await.unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        let proxy = Proxy::default();
        proxy.set_endpoints(&typed(json!({"metadata": {"name": "s", "namespace": "n"}, "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": backend_port}]}]})), false);
        proxy.set_service(&typed(json!({"metadata": {"name": "s", "namespace": "n"}, "spec": {"clusterIP": "127.77.240.1", "ports": [{"port": port}]}})), false);
        let mut got = String::new();
        for _ in 0..100 {
            if let Ok(mut c) = TcpStream::connect(("127.77.240.1", port)).await {
                c.read_to_string(&mut got).await.unwrap();
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(got, "from the pod");
        proxy.set_service(&typed(json!({"metadata": {"name": "s", "namespace": "n"}, "spec": {}})), true);
        assert!(proxy.listening.lock().is_empty());
    }
}
