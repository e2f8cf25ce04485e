//! Webhook hooks: JSON over HTTP POST, to a URL or a Service, with a timeout, https with a CA bundle,
//! and an optional bearer token.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use uc_api::controller::{Webhook, parse_duration};

use super::protocol::HookError;
use crate::names::Resolver;

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector<Resolver>>, Full<Bytes>>;

/// A webhook.
pub struct WebhookHook {
    url: String,
    timeout: Duration,
    token: Option<String>,
    client: HttpsClient,
}

/// Largest answer accepted from a hook.
const MAX_RESPONSE: usize = 64 << 20;

impl WebhookHook {
    /// From the spec: `url` wins over `service` + `path`. Host names go through `resolver` (so
    /// in-cluster names reach Services).
    pub fn new(spec: &Webhook, resolver: Resolver) -> Result<Self, HookError> {
        let url = match (&spec.url, &spec.service) {
            (Some(u), _) => u.clone(),
            (None, Some(s)) => {
                let protocol = s.protocol.clone().unwrap_or_else(|| "http".into());
                let port = s.port.unwrap_or(if protocol == "https" { 443 } else { 80 });
                let path = spec.path.clone().unwrap_or_default();
                let path = if path.is_empty() || path.starts_with('/') { path } else { format!("/{path}") };
                format!("{protocol}://{}.{}.svc:{port}{path}", s.name, s.namespace)
            }
            (None, None) => return Err(HookError::Config("webhook needs url or service".into())),
        };
        let uri: http::Uri = url.parse().map_err(|e| HookError::Config(format!("invalid webhook url {url:?}: {e}")))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) {
            return Err(HookError::Config(format!("webhook url {url:?} must be http or https")));
        }
        let timeout = match &spec.timeout {
            Some(t) => parse_duration(t).map_err(|e| HookError::Config(e.to_string()))?,
            None => Duration::from_secs(10),
        };
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| HookError::Config(e.to_string()))?;
        let tls = match &spec.ca_bundle {
            Some(pem) => {
                let mut roots = rustls::RootCertStore::empty();
                let pem = decode_ca_bundle(pem);
                for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                    let cert = cert.map_err(|e| HookError::Config(format!("caBundle: {e}")))?;
                    roots.add(cert).map_err(|e| HookError::Config(format!("caBundle: {e}")))?;
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            None => {
                let roots = rustls::RootCertStore { roots: webpki_roots().to_vec() };
                builder.with_root_certificates(roots).with_no_client_auth()
            }
        };
        let mut http = HttpConnector::new_with_resolver(resolver);
        http.enforce_http(false);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(60)).build(https);
        Ok(Self { url, timeout, token: spec.bearer_token.clone(), client })
    }

    /// POSTs the request and decodes the JSON answer.
    pub async fn call(&self, request: &Value) -> Result<Value, HookError> {
        let body = serde_json::to_vec(request).map_err(|e| HookError::InvalidResponse(e.to_string()))?;
        let mut req = Request::post(&self.url)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json");
        if let Some(t) = &self.token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let req = req.body(Full::new(Bytes::from(body))).map_err(|e| HookError::Config(e.to_string()))?;
        let call = async {
            let resp =
                self.client.request(req).await.map_err(|e| HookError::Unreachable(format!("{}: {e}", self.url)))?;
            let status = resp.status().as_u16();
            let body = http_body_util::Limited::new(resp.into_body(), MAX_RESPONSE)
                .collect()
                .await
                .map_err(|e| HookError::Unreachable(format!("reading the answer: {e}")))?
                .to_bytes();
            if !(200..300).contains(&status) {
                let text = String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned();
                return Err(HookError::Status { status, body: text });
            }
            serde_json::from_slice(&body)
                .map_err(|e| HookError::InvalidResponse(format!("the answer is not JSON: {e}")))
        };
        tokio::time::timeout(self.timeout, call).await.map_err(|_| HookError::Timeout(self.timeout))?
    }
}

fn decode_ca_bundle(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    if s.contains("-----BEGIN") {
        return s.as_bytes().to_vec();
    }
    base64::engine::general_purpose::STANDARD.decode(s.trim()).unwrap_or_else(|_| s.as_bytes().to_vec())
}

fn webpki_roots() -> &'static [rustls::pki_types::TrustAnchor<'static>] {
    webpki_roots::TLS_SERVER_ROOTS
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A one-route HTTPS server: answers `{"children": []}` to requests bearing `token`, 401 otherwise;
    /// waits `delay` before answering.
    async fn tls_server(token: &'static str, delay: Duration) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        let pem = cert.pem();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    let mut buf = vec![0u8; 65536];
                    let n = tls.read(&mut buf).await.unwrap_or(0);
                    let req = String::from_utf8_lossy(&buf[..n]).to_string();
                    tokio::time::sleep(delay).await;
                    let authorized =
                        req.lines().any(|l| l.eq_ignore_ascii_case(&format!("authorization: Bearer {token}")));
                    let (status, body) =
                        if authorized { ("200 OK", r#"{"children": []}"#) } else { ("401 Unauthorized", "no") };
                    let resp = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tls.write_all(resp.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        (format!("https://localhost:{port}/sync"), pem)
    }

    fn hook(url: &str, ca: Option<&str>, token: Option<&str>, timeout: &str) -> WebhookHook {
        WebhookHook::new(
            &Webhook {
                url: Some(url.into()),
                ca_bundle: ca.map(String::from),
                bearer_token: token.map(String::from),
                timeout: Some(timeout.into()),
                ..Default::default()
            },
            Resolver::system(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn https_with_ca_bundle_and_bearer_token() {
        let (url, ca) = tls_server("s3cret", Duration::ZERO).await;
        let ok = hook(&url, Some(&ca), Some("s3cret"), "5s").call(&json!({})).await.unwrap();
        assert_eq!(ok, json!({"children": []}));
        let denied = hook(&url, Some(&ca), Some("wrong"), "5s").call(&json!({})).await;
        assert!(matches!(denied, Err(HookError::Status { status: 401, .. })), "{denied:?}");
        let untrusted = hook(&url, None, Some("s3cret"), "5s").call(&json!({})).await;
        assert!(matches!(untrusted, Err(HookError::Unreachable(_))), "{untrusted:?}");
    }

    #[tokio::test]
    async fn slow_hooks_time_out() {
        let (url, ca) = tls_server("t", Duration::from_secs(3)).await;
        let started = std::time::Instant::now();
        let r = hook(&url, Some(&ca), Some("t"), "300ms").call(&json!({})).await;
        assert!(matches!(r, Err(HookError::Timeout(_))), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn service_references_and_bad_specs() {
        let spec = Webhook {
            service: Some(uc_api::controller::ServiceReference {
                name: "ctl".into(),
                namespace: "ns".into(),
                port: Some(8080),
                protocol: None,
            }),
            path: Some("sync".into()),
            ..Default::default()
        };
        assert_eq!(WebhookHook::new(&spec, Resolver::system()).unwrap().url, "http://ctl.ns.svc:8080/sync");
        assert!(WebhookHook::new(&Webhook::default(), Resolver::system()).is_err());
        assert!(
            WebhookHook::new(&Webhook { url: Some("ftp://x".into()), ..Default::default() }, Resolver::system())
                .is_err()
        );
        assert!(
            WebhookHook::new(
                &Webhook { url: Some("http://x".into()), timeout: Some("soon".into()), ..Default::default() },
                Resolver::system()
            )
            .is_err()
        );
    }
}
