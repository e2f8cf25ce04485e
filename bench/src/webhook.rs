//! The sample-controller's sync logic in Rust behind a loopback HTTP server: the webhook the benchmarks
//! compare with the in-process JavaScript hook.

use anyhow::Result;
use serde_json::{Value, json};

/// The sample-controller's logic in Rust behind a loopback HTTP server (the webhook run).
pub async fn start_webhook() -> Result<std::net::SocketAddr> {
    use http_body_util::BodyExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let _ = tcp.set_nodelay(true);
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(|req: http::Request<hyper::body::Incoming>| async move {
                    let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                    let r: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let name = r.pointer("/parent/spec/deploymentName").cloned().unwrap_or(Value::Null);
                    let available = r
                        .pointer("/children/Deployment.apps~1v1")
                        .and_then(|m| m.get(name.as_str().unwrap_or_default()))
                        .and_then(|d| d.pointer("/status/availableReplicas"))
                        .cloned()
                        .unwrap_or(json!(0));
                    let answer = json!({"status": {"availableReplicas": available}, "children": [{
                        "apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": name, "namespace": r.pointer("/parent/metadata/namespace")},
                        "spec": {"replicas": r.pointer("/parent/spec/replicas"), "selector": {"matchLabels": {"app": "sample"}},
                                 "template": {"metadata": {"labels": {"app": "sample"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:stable"}]}}}}]});
                    let bytes = bytes::Bytes::from(serde_json::to_vec(&answer).unwrap_or_default());
                    Ok::<_, std::convert::Infallible>(http::Response::new(http_body_util::Full::new(bytes)))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    Ok(addr)
}
