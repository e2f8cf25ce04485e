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

use super::HookError;

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

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
    /// From the spec: `url` wins over `service` + `path`.
    pub fn new(spec: &Webhook) -> Result<Self, HookError> {
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
            Some(t) => parse_duration(t).map_err(HookError::Config)?,
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
        let https =
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http().enable_http1().build();
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
