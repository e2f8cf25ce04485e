//! Calling an admission webhook: `clientConfig.url`, or `clientConfig.service` reached at its
//! cluster IP with the TLS name `<service>.<namespace>.svc`, trusting `caBundle`; one POST of the
//! AdmissionReview, bounded by the webhook's timeout.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;
use serde_json::Value;
use uc_api::{GroupResource, Pointer};

use crate::storage::{Store, object_key};

/// Why a webhook could not be called, as kube-apiserver words it (`failed to call webhook: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CallError(pub String);

impl From<String> for CallError {
    fn from(message: String) -> Self {
        CallError(message)
    }
}

impl From<&str> for CallError {
    fn from(message: &str) -> Self {
        CallError(message.to_string())
    }
}

impl From<CallError> for String {
    fn from(e: CallError) -> String {
        e.0
    }
}

/// Where a webhook is served: an address to connect to, the name its certificate must carry, and
/// the path (with query) to POST to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host and port to connect to.
    pub connect: (String, u16),
    /// TLS server name.
    pub server_name: String,
    /// Path and query.
    pub path: String,
}

/// The endpoint of a client config; `service` references are looked up in `store`.
pub fn endpoint(store: &Store, client: &WebhookClientConfig) -> Result<Endpoint, CallError> {
    if let Some(url) = &client.url {
        let uri: http::Uri = url.parse().map_err(|e| format!("invalid URL {url:?}: {e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(CallError::from(format!("{url:?}: 'https' is the only allowed URL scheme")));
        }
        let host = uri.host().ok_or_else(|| format!("{url:?} has no host"))?.trim_matches(['[', ']']).to_string();
        let path = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
        return Ok(Endpoint { connect: (host.clone(), uri.port_u16().unwrap_or(443)), server_name: host, path });
    }
    let svc = client.service.as_ref().ok_or("clientConfig names neither a url nor a service")?;
    let port = svc.port.unwrap_or(443);
    let path = svc.path.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| "/".into());
    let key = object_key(&svc.namespace, &svc.name);
    let service = store
        .get(&GroupResource::new("", "services"), &key)
        .ok_or_else(|| format!("service \"{}/{}\" not found", svc.namespace, svc.name))?;
    let ip = service
        .at("/spec/clusterIP")
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty() && *ip != "None")
        .ok_or_else(|| format!("service \"{}/{}\" has no cluster IP", svc.namespace, svc.name))?;
    Ok(Endpoint {
        connect: (ip.to_string(), port as u16),
        server_name: format!("{}.{}.svc", svc.name, svc.namespace),
        path,
    })
}

/// The webhook's server verified against its `caBundle` as kube-apiserver verifies it
/// ([`uc_api::webhook_tls`]: a self-signed CA serving for itself is accepted).
fn tls_config(ca_bundle: Option<&[u8]>) -> Result<Arc<rustls::ClientConfig>, CallError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let mut config = match ca_bundle.filter(|b| !b.is_empty()) {
        Some(pem) => builder
            .dangerous()
            .with_custom_certificate_verifier(
                uc_api::webhook_tls::CaBundleVerifier::new(provider, pem).map_err(|e| CallError(e.0))?,
            )
            .with_no_client_auth(),
        None => builder.with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

async fn post(endpoint: &Endpoint, ca_bundle: Option<&[u8]>, body: Bytes) -> Result<Value, CallError> {
    let config = tls_config(ca_bundle)?;
    let (host, port) = &endpoint.connect;
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), *port))
        .await
        .map_err(|e| format!("dial tcp: lookup {host}: {e}"))?
        .collect();
    let addr = addrs.first().ok_or_else(|| format!("dial tcp: lookup {host}: no addresses"))?;
    let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| format!("dial tcp {addr}: {e}"))?;
    let name = rustls::pki_types::ServerName::try_from(endpoint.server_name.clone())
        .map_err(|e| format!("{:?} is not a valid server name: {e}", endpoint.server_name))?;
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: failed to verify certificate: {e}"))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let authority = if *port == 443 { host.clone() } else { format!("{host}:{port}") };
    let request = Request::post(endpoint.path.as_str())
        .header(header::HOST, authority)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .body(Full::new(body))
        .map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
    let status = response.status();
    let bytes = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    if !status.is_success() {
        return Err(CallError::from(format!(
            "the server responded with {status}: {}",
            String::from_utf8_lossy(&bytes)
        )));
    }
    Ok(serde_json::from_slice(&bytes).map_err(|e| format!("the response is not an AdmissionReview: {e}"))?)
}

/// POSTs `review` to the webhook; its answer, or why there is none (`failed to call webhook: …`).
pub async fn call(
    store: &Store,
    client: &WebhookClientConfig,
    timeout: Duration,
    review: &Value,
) -> Result<Value, CallError> {
    let endpoint = endpoint(store, client)?;
    let body = Bytes::from(crate::wire::to_vec(review));
    let ca = client.ca_bundle.as_ref().map(|b| b.0.as_slice());
    match tokio::time::timeout(timeout, post(&endpoint, ca, body)).await {
        Ok(r) => r,
        Err(_) => Err(CallError::from(format!(
            "Post \"https://{}:{}{}\": context deadline exceeded",
            endpoint.connect.0, endpoint.connect.1, endpoint.path
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_and_services_name_where_to_connect_and_which_certificate_to_expect() {
        let store = Store::open(None, Default::default()).unwrap();
        let url: WebhookClientConfig =
            serde_json::from_value(json!({"url": "https://127.0.0.1:9443/validate?x=1"})).unwrap();
        assert_eq!(
            endpoint(&store, &url),
            Ok(Endpoint {
                connect: ("127.0.0.1".into(), 9443),
                server_name: "127.0.0.1".into(),
                path: "/validate?x=1".into()
            })
        );
        let http: WebhookClientConfig = serde_json::from_value(json!({"url": "http://127.0.0.1/v"})).unwrap();
        assert!(endpoint(&store, &http).unwrap_err().0.contains("'https' is the only allowed URL scheme"));
        let svc: WebhookClientConfig =
            serde_json::from_value(json!({"service": {"namespace": "ops", "name": "hooks", "path": "/v"}})).unwrap();
        assert!(endpoint(&store, &svc).unwrap_err().0.contains(r#"service "ops/hooks" not found"#));
    }
}
