//! The pod subresources a kubelet serves — `log`, `exec`, `attach`, `portforward` — proxied to the
//! node the pod runs on, as kube-apiserver does: the node's address and port come from its Node object
//! (`status.addresses` InternalIP, `status.daemonEndpoints.kubeletEndpoint.Port`), the request goes
//! there over mutual TLS ([`crate::kubelet_tls`]: the node must prove it is the node, and the API
//! server presents a certificate, not a replayable token), and an upgraded connection (WebSocket,
//! SPDY) is spliced through unchanged.

use std::sync::Arc;

use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use uc_api::{GroupResource, Pointer};

use crate::app::{App, Body};
use crate::error::{ApiError, Subject};
use crate::storage::object_key;

/// The streaming subresources.
const SUBRESOURCES: &[&str] = &["log", "exec", "attach", "portforward"];

/// `(namespace, pod, subresource)` of a path to a streaming pod subresource.
pub fn target(path: &str) -> Option<(String, String, String)> {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["api", "v1", "namespaces", ns, "pods", name, sub] if SUBRESOURCES.contains(sub) => {
            Some((ns.to_string(), name.to_string(), sub.to_string()))
        }
        _ => None,
    }
}

fn names(pod: &Value, key: &str) -> Vec<String> {
    pod.at(&format!("/spec/{key}"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|c| c.get("name").and_then(Value::as_str).map(String::from)).collect())
        .unwrap_or_default()
}

/// The container a request is for: the one named (it must exist), or the only one.
fn container(pod: &Value, name: &str, asked: Option<&str>) -> Result<String, ApiError> {
    let containers = names(pod, "containers");
    let all: Vec<String> = containers
        .iter()
        .cloned()
        .chain(names(pod, "initContainers"))
        .chain(names(pod, "ephemeralContainers"))
        .collect();
    match asked {
        Some(c) if all.iter().any(|x| x == c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!("container {c} is not valid for pod {name}"))),
        None if containers.len() == 1 => Ok(containers[0].clone()),
        None => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {name}, choose one of: {containers:?}"
        ))),
    }
}

/// Where the node of a pod serves: `host:port`, and the host's address.
fn node_endpoint(app: &App, node: &str) -> Result<(String, std::net::IpAddr), ApiError> {
    let n = app
        .store
        .get(&GroupResource::new("", "nodes"), &object_key("", node))
        .ok_or_else(|| ApiError::unavailable(format!("node {node:?} not found")))?;
    let ip = n
        .at("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|x| x.get("type").and_then(Value::as_str) == Some("InternalIP")))
        .and_then(|a| a.get("address").and_then(Value::as_str))
        .ok_or_else(|| ApiError::unavailable(format!("node {node:?} has no InternalIP address")))?;
    let port = n
        .at("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_u64)
        .filter(|p| *p > 0)
        .ok_or_else(|| ApiError::unavailable(format!("node {node:?} serves no kubelet endpoint")))?;
    let addr: std::net::IpAddr =
        ip.parse().map_err(|_| ApiError::unavailable(format!("node {node:?} has no IP address ({ip:?})")))?;
    Ok((std::net::SocketAddr::new(addr, port as u16).to_string(), addr))
}

/// Proxies a streaming subresource request to the pod's node.
pub async fn proxy(
    app: &Arc<App>,
    mut req: Request<Incoming>,
    ns: &str,
    name: &str,
    sub: &str,
) -> Result<Response<Body>, ApiError> {
    let subject = Subject { group: String::new(), resource: "pods".into(), name: name.into() };
    let pod = app
        .store
        .get(&GroupResource::new("", "pods"), &object_key(ns, name))
        .ok_or_else(|| ApiError::not_found(&subject))?;
    let query = req.uri().query().unwrap_or_default().to_string();
    let asked: Option<String> =
        form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "container").map(|(_, v)| v.into_owned());
    let path = match sub {
        "portforward" => format!("/portForward/{ns}/{name}"),
        "log" => format!("/containerLogs/{ns}/{name}/{}", container(&pod, name, asked.as_deref())?),
        verb => format!("/{verb}/{ns}/{name}/{}", container(&pod, name, asked.as_deref())?),
    };
    let node = pod.at("/spec/nodeName").and_then(Value::as_str).unwrap_or_default();
    if node.is_empty() {
        return Err(ApiError::bad_request(format!("pod {name} does not have a host assigned")));
    }
    let (endpoint, ip) = node_endpoint(app, node)?;
    let identity = app
        .config
        .kubelet_client
        .as_ref()
        .ok_or_else(|| ApiError::unavailable("no kubelet credentials are configured"))?;
    let tls = crate::kubelet_tls::client_config(identity).map_err(ApiError::internal)?;
    let tcp = tokio::net::TcpStream::connect(&endpoint)
        .await
        .map_err(|e| ApiError::unavailable(format!("dialing the kubelet of node {node} at {endpoint}: {e}")))?;
    // Only a node whose serving certificate the kubelet CA signed is talked to.
    let tls = tokio_rustls::TlsConnector::from(tls)
        .connect(rustls::pki_types::ServerName::from(ip), tcp)
        .await
        .map_err(|e| ApiError::unavailable(format!("the kubelet of node {node} at {endpoint}: {e}")))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| ApiError::unavailable(format!("kubelet of node {node}: {e}")))?;
    tokio::spawn(conn.with_upgrades());
    let uri = if query.is_empty() { path } else { format!("{path}?{query}") };
    let mut upstream = Request::builder().method(req.method().clone()).uri(uri);
    for (k, v) in req.headers() {
        if !matches!(*k, header::AUTHORIZATION | header::HOST | header::CONTENT_LENGTH | header::TRANSFER_ENCODING) {
            upstream = upstream.header(k, v);
        }
    }
    let upstream = upstream
        .header(header::HOST, endpoint.as_str())
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let mut resp = sender
        .send_request(upstream)
        .await
        .map_err(|e| ApiError::unavailable(format!("kubelet of node {node}: {e}")))?;
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        let client_side = hyper::upgrade::on(&mut req);
        let node_side = hyper::upgrade::on(&mut resp);
        tokio::spawn(async move {
            let (Ok(a), Ok(b)) = (client_side.await, node_side.await) else { return };
            let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(a), &mut TokioIo::new(b)).await;
        });
        let mut out = Response::new(crate::app::full(bytes::Bytes::new()));
        *out.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        for (k, v) in resp.headers() {
            out.headers_mut().append(k, v.clone());
        }
        return Ok(out);
    }
    let status = resp.status();
    let content_type = resp.headers().get(header::CONTENT_TYPE).cloned();
    let body = resp.into_body().map_err(std::io::Error::other).boxed();
    let mut out = Response::new(body);
    *out.status_mut() = status;
    out.headers_mut().insert(header::CONTENT_TYPE, content_type.unwrap_or(HeaderValue::from_static("text/plain")));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn streaming_paths_and_containers() {
        assert_eq!(target("/api/v1/namespaces/ns/pods/p/exec"), Some(("ns".into(), "p".into(), "exec".into())));
        assert_eq!(target("/api/v1/namespaces/ns/pods/p/status"), None);
        assert_eq!(target("/api/v1/namespaces/ns/pods/p"), None);
        let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}], "initContainers": [{"name": "init"}]}});
        assert_eq!(container(&pod, "p", Some("init")).unwrap(), "init");
        assert!(container(&pod, "p", None).unwrap_err().0.message.contains("choose one of: [\"a\", \"b\"]"));
        assert!(container(&pod, "p", Some("c")).unwrap_err().0.message.contains("container c is not valid for pod p"));
        let one = json!({"spec": {"containers": [{"name": "only"}]}});
        assert_eq!(container(&one, "p", None).unwrap(), "only");
    }
}
