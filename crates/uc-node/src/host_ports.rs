//! `hostPort`s of pods in network namespaces of their own: the node listens on the port on the node's
//! address (127.0.0.1, or the port's `hostIP`) and forwards each connection to the pod's address and
//! container port, while the pod runs — what the CNI `portmap` plugin does with iptables, in user
//! space, as the service proxy does for cluster IPs. (Pods on the machine's network bind their host
//! ports themselves.)

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use k8s_openapi::api::core::v1::Pod;

/// A pod's TCP host ports as `(listen address, container port)`.
pub fn host_ports(pod: &Pod) -> Vec<(SocketAddr, u16)> {
    let containers = crate::pod_api::spec(pod).containers.iter();
    containers
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| matches!(p.protocol.as_deref(), None | Some("TCP")))
        .filter_map(|p| {
            let port = |n: Option<i32>| n.and_then(|n| u16::try_from(n).ok()).filter(|n| *n > 0);
            let ip = p.host_ip.as_deref().and_then(|s| s.parse::<IpAddr>().ok());
            let ip = ip.filter(|ip| !ip.is_unspecified()).unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
            Some((SocketAddr::new(ip, port(p.host_port)?), port(Some(p.container_port))?))
        })
        .collect()
}

/// The listeners of a pod's host ports; dropping it closes them.
pub struct HostPorts(Vec<tokio::task::AbortHandle>);

impl Drop for HostPorts {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Listens on the pod's host ports, forwarding to `pod_ip`.
pub fn serve(pod: &Pod, pod_ip: IpAddr) -> HostPorts {
    let pod_name = crate::pod_api::name(pod).to_string();
    let tasks = host_ports(pod).into_iter().map(|(listen, container_port)| {
        let target = SocketAddr::new(pod_ip, container_port);
        let pod_name = pod_name.clone();
        tokio::spawn(async move {
            let listener = match tokio::net::TcpListener::bind(listen).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(pod = %pod_name, %listen, error = %e, "cannot listen on the pod's hostPort");
                    return;
                }
            };
            loop {
                let Ok((client, _)) = listener.accept().await else { continue };
                tokio::spawn(crate::proxy::forward(client, vec![target], 0));
            }
        })
        .abort_handle()
    });
    HostPorts(tasks.collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tcp_host_ports_listen_on_the_node_address_unless_they_name_one() {
        let pod = serde_json::from_value(json!({"spec": {"containers": [
            {"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 53, "hostPort": 5353, "protocol": "UDP"},
                       {"containerPort": 9090}]},
            {"name": "b", "ports": [{"containerPort": 443, "hostPort": 8443, "hostIP": "127.0.0.2"},
                       {"containerPort": 81, "hostPort": 8081, "hostIP": "0.0.0.0"}]}]}}))
        .unwrap();
        assert_eq!(
            host_ports(&pod),
            vec![
                ("127.0.0.1:8080".parse().unwrap(), 80),
                ("127.0.0.2:8443".parse().unwrap(), 443),
                ("127.0.0.1:8081".parse().unwrap(), 81)
            ]
        );
    }
}
