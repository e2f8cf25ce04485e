//! Webhook hooks: JSON over HTTP POST, to a URL or a Service, with a timeout, https with a CA bundle
//! and an optional client certificate, an `Authorization` header, and ETag caching.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use parking_lot::Mutex;
use serde_json::Value;
use uc_api::Pointer;
use uc_api::controller::{Webhook, parse_duration};

use super::close_delimited::CloseDelimited;
use super::credentials::Credentials;
use super::protocol::HookError;
use crate::names::Resolver;

type HttpsClient = Client<CloseDelimited<hyper_rustls::HttpsConnector<HttpConnector<Resolver>>>, Full<Bytes>>;

/// A webhook.
pub struct WebhookHook {
    url: String,
    timeout: Duration,
    authorization: Option<String>,
    client: HttpsClient,
    etags: Option<EtagCache>,
}

/// Largest answer accepted from a hook.
const MAX_RESPONSE: usize = 64 << 20;

/// The most answers an ETag cache keeps.
const MAX_ETAGS: usize = 10_000;

/// A parent's kind, namespace and name.
type RootKey = (String, String, String);

/// The last answer with an ETag per parent, as Metacontroller keeps them: ETag, body, when.
struct EtagCache {
    ttl: Duration,
    entries: Mutex<HashMap<RootKey, (String, Bytes, Instant)>>,
}

impl EtagCache {
    fn get(&self, key: &RootKey) -> Option<(String, Bytes)> {
        let mut entries = self.entries.lock();
        match entries.get(key) {
            Some((_, _, at)) if at.elapsed() > self.ttl => {
                entries.remove(key);
                None
            }
            Some((etag, body, _)) => Some((etag.clone(), body.clone())),
            None => None,
        }
    }

    fn put(&self, key: RootKey, etag: String, body: Bytes) {
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_ETAGS {
            let ttl = self.ttl;
            entries.retain(|_, (_, _, at)| at.elapsed() <= ttl);
            if entries.len() >= MAX_ETAGS {
                entries.clear();
            }
        }
        entries.insert(key, (etag, body, Instant::now()));
    }
}

/// The parent (a decorator's target) a request is about: the ETag cache's key.
fn root_key(root: &Value) -> RootKey {
    let s = |p: &str| root.at(p).and_then(Value::as_str).unwrap_or_default().to_string();
    (s("/kind"), s("/metadata/namespace"), s("/metadata/name"))
}

/// An answer's body, at most [`MAX_RESPONSE`] bytes.
async fn read_body(resp: http::Response<hyper::body::Incoming>) -> Result<Bytes, HookError> {
    Ok(http_body_util::Limited::new(resp.into_body(), MAX_RESPONSE)
        .collect()
        .await
        .map_err(|e| HookError::Unreachable(format!("reading the answer: {e}")))?
        .to_bytes())
}

/// A non-2xx answer as an error, with the start of its body.
fn status_error(status: u16, body: &[u8]) -> HookError {
    HookError::Status {
        status,
        body: super::protocol::excerpt(&String::from_utf8_lossy(&body[..body.len().min(4096)])),
    }
}

/// A webhook's URL: `url` wins over `service` + `path`.
pub fn url_of(spec: &Webhook) -> Result<String, HookError> {
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
    Ok(url)
}

/// The client certificate a webhook asks for: always the one configured. Given to rustls as is, as
/// Go's TLS presents it — rustls's own `with_client_auth_cert` parses the certificate with webpki,
/// which refuses X.509 v1 certificates (what `openssl x509 -req` makes without extensions, as
/// Metacontroller's webhook-auth example does) that Go and the servers behind webhooks accept.
#[derive(Debug)]
struct ClientIdentity(std::sync::Arc<rustls::sign::CertifiedKey>);

impl rustls::client::ResolvesClientCert for ClientIdentity {
    fn resolve(
        &self,
        _acceptable_issuers: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<std::sync::Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

fn tls_config(credentials: &Credentials) -> Result<rustls::ClientConfig, HookError> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let key_provider = provider.key_provider;
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| HookError::Config(e.to_string()))?;
    // A caBundle is read as kube-apiserver reads one (uc_api::webhook_tls: a self-signed CA serving for
    // itself is accepted); without one, the public roots.
    let builder = match &credentials.ca_pem {
        Some(pem) => builder.dangerous().with_custom_certificate_verifier(
            uc_api::webhook_tls::CaBundleVerifier::new(provider, pem).map_err(|e| HookError::Config(e.0))?,
        ),
        None => builder.with_root_certificates(rustls::RootCertStore { roots: webpki_roots().to_vec() }),
    };
    match &credentials.client_identity {
        None => Ok(builder.with_no_client_auth()),
        Some((cert, key)) => {
            let chain: Vec<_> = rustls_pemfile::certs(&mut cert.as_slice())
                .collect::<Result<_, _>>()
                .map_err(|e| HookError::Config(format!("clientTLS certificate: {e}")))?;
            let key = rustls_pemfile::private_key(&mut key.as_slice())
                .map_err(|e| HookError::Config(format!("clientTLS key: {e}")))?
                .ok_or_else(|| HookError::Config("clientTLS key: no PEM private key in it".into()))?;
            if chain.is_empty() {
                return Err(HookError::Config("clientTLS certificate: no PEM certificate in it".into()));
            }
            let signer =
                key_provider.load_private_key(key).map_err(|e| HookError::Config(format!("clientTLS key: {e}")))?;
            let identity = rustls::sign::CertifiedKey::new(chain, signer);
            Ok(builder.with_client_cert_resolver(std::sync::Arc::new(ClientIdentity(std::sync::Arc::new(identity)))))
        }
    }
}

/// An HTTP/1 client over plain TCP or TLS (`tls`), host names through `resolver`, answers delimited
/// by a close read as Go reads them.
fn client(tls: rustls::ClientConfig, resolver: Resolver) -> HttpsClient {
    let mut http = HttpConnector::new_with_resolver(resolver);
    http.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(60)).build(CloseDelimited(https))
}

/// GETs a URL (http or https, the public CA roots or `ca_pem`), for documents such as catalogs served
/// over HTTP; the body of a 2xx answer.
pub async fn fetch(
    url: &str,
    resolver: Resolver,
    ca_pem: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<Bytes, HookError> {
    let client = client(tls_config(&Credentials { ca_pem, ..Default::default() })?, resolver);
    let req = Request::get(url).body(Full::new(Bytes::new())).map_err(|e| HookError::Config(format!("{url}: {e}")))?;
    let call = async {
        let resp = client.request(req).await.map_err(|e| HookError::Unreachable(format!("{url}: {e}")))?;
        let status = resp.status().as_u16();
        let body = read_body(resp).await?;
        if !(200..300).contains(&status) {
            return Err(status_error(status, &body));
        }
        Ok(body)
    };
    tokio::time::timeout(timeout, call).await.map_err(|_| HookError::Timeout(timeout))?
}

impl WebhookHook {
    /// From the spec and its credentials. Host names go through `resolver` (so in-cluster names reach
    /// Services).
    pub fn new(spec: &Webhook, resolver: Resolver, credentials: Credentials) -> Result<Self, HookError> {
        let url = url_of(spec)?;
        let timeout = match &spec.timeout {
            Some(t) => parse_duration(t).map_err(|e| HookError::Config(e.to_string()))?,
            None => Duration::from_secs(10),
        };
        let client = client(tls_config(&credentials)?, resolver);
        let etags = spec.etag.as_ref().filter(|e| e.enabled == Some(true)).map(|e| EtagCache {
            ttl: Duration::from_secs(e.cache_timeout_seconds.filter(|s| *s > 0).unwrap_or(600) as u64),
            entries: Mutex::new(HashMap::new()),
        });
        Ok(Self { url, timeout, authorization: credentials.authorization, client, etags })
    }

    /// POSTs the request and decodes the JSON answer.
    pub async fn call(&self, request: &Value) -> Result<Value, HookError> {
        let root = request.get("parent").or_else(|| request.get("object"));
        self.call_with(request, root).await
    }

    /// POSTs `request`, whose parent (or decorated object) is `root` — what answers are cached by
    /// when ETags are on — and decodes the JSON answer.
    pub async fn call_with<T: serde::Serialize + ?Sized>(
        &self,
        request: &T,
        root: Option<&Value>,
    ) -> Result<Value, HookError> {
        let body = serde_json::to_vec(request).map_err(|e| HookError::InvalidResponse(e.to_string()))?;
        let mut req = Request::post(&self.url)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json");
        if let Some(a) = &self.authorization {
            req = req.header(header::AUTHORIZATION, a);
        }
        let key = self.etags.as_ref().and_then(|_| root.map(root_key));
        let cached = match (&self.etags, &key) {
            (Some(cache), Some(k)) => cache.get(k),
            _ => None,
        };
        if let Some((etag, _)) = &cached {
            req = req.header(header::IF_NONE_MATCH, etag);
        }
        let req = req.body(Full::new(Bytes::from(body))).map_err(|e| HookError::Config(e.to_string()))?;
        let call = async {
            let resp =
                self.client.request(req).await.map_err(|e| HookError::Unreachable(format!("{}: {e}", self.url)))?;
            let status = resp.status().as_u16();
            let etag = resp.headers().get(header::ETAG).and_then(|v| v.to_str().ok()).map(str::to_string);
            let body = read_body(resp).await?;
            let body = match (status, cached) {
                (304 | 412, Some((_, cached))) => cached,
                (200..=299, _) => {
                    if let (Some(cache), Some(k), Some(etag)) = (&self.etags, key, etag) {
                        cache.put(k, etag, body.clone());
                    }
                    body
                }
                _ => return Err(status_error(status, &body)),
            };
            serde_json::from_slice(&body)
                .map_err(|e| HookError::InvalidResponse(format!("the answer is not JSON: {e}")))
        };
        tokio::time::timeout(self.timeout, call).await.map_err(|_| HookError::Timeout(self.timeout))?
    }
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

    /// How the test server ends an answer.
    #[derive(Clone, Copy)]
    enum Ending {
        /// HTTP/1.1 with `Content-Length`, then `close_notify`.
        Length,
        /// HTTP/1.0 without a length, then the TCP connection closed without `close_notify` (Python's
        /// `http.server` behind `ssl.wrap_socket`).
        Close,
        /// A `Content-Length` longer than the body sent, then the TCP connection closed without
        /// `close_notify`: a truncated answer.
        Short,
    }

    /// A one-route HTTPS server: answers `{"children": []}` to requests bearing `token`, 401 otherwise;
    /// waits `delay` before answering.
    async fn tls_server(token: &'static str, delay: Duration) -> (String, String) {
        tls_server_ending(token, delay, Ending::Length).await
    }

    async fn tls_server_ending(token: &'static str, delay: Duration, ending: Ending) -> (String, String) {
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
                    let resp = match ending {
                        Ending::Length => format!(
                            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        ),
                        Ending::Close => format!("HTTP/1.0 {status}\r\ncontent-type: application/json\r\n\r\n{body}"),
                        Ending::Short => format!(
                            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len() + 100
                        ),
                    };
                    let _ = tls.write_all(resp.as_bytes()).await;
                    match ending {
                        Ending::Length => drop(tls.shutdown().await),
                        Ending::Close | Ending::Short => {
                            let _ = tls.flush().await;
                            drop(tls.into_inner().0);
                        }
                    }
                });
            }
        });
        (format!("https://localhost:{port}/sync"), pem)
    }

    fn hook(url: &str, ca: Option<&str>, token: Option<&str>, timeout: &str) -> WebhookHook {
        let credentials = Credentials {
            ca_pem: ca.map(|c| c.as_bytes().to_vec()),
            authorization: token.map(|t| format!("Bearer {t}")),
            client_identity: None,
        };
        let spec = Webhook { url: Some(url.into()), timeout: Some(timeout.into()), ..Default::default() };
        WebhookHook::new(&spec, Resolver::system(), credentials).unwrap()
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
    async fn answers_ended_by_a_close_without_close_notify_are_read_whole() {
        let (url, ca) = tls_server_ending("s3cret", Duration::ZERO, Ending::Close).await;
        let ok = hook(&url, Some(&ca), Some("s3cret"), "5s").call(&json!({})).await.unwrap();
        assert_eq!(ok, json!({"children": []}));
        let denied = hook(&url, Some(&ca), Some("wrong"), "5s").call(&json!({})).await;
        assert!(matches!(denied, Err(HookError::Status { status: 401, .. })), "{denied:?}");
        // A close before the length it announced is still a truncated answer.
        let (url, ca) = tls_server_ending("s3cret", Duration::ZERO, Ending::Short).await;
        let cut = hook(&url, Some(&ca), Some("s3cret"), "5s").call(&json!({})).await;
        assert!(matches!(cut, Err(HookError::Unreachable(_))), "{cut:?}");
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
        let new = |spec: &Webhook| WebhookHook::new(spec, Resolver::system(), Credentials::default());
        assert_eq!(new(&spec).unwrap().url, "http://ctl.ns.svc:8080/sync");
        assert!(new(&Webhook::default()).is_err());
        assert!(new(&Webhook { url: Some("ftp://x".into()), ..Default::default() }).is_err());
        assert!(
            new(&Webhook { url: Some("http://x".into()), timeout: Some("soon".into()), ..Default::default() }).is_err()
        );
    }

    /// A plain HTTP server that answers with ETag "v1" and, to a request carrying `If-None-Match: "v1"`,
    /// 304 without a body; it counts the conditional requests.
    async fn etag_server() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        let conditional = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = conditional.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut tcp, _)) = listener.accept().await else { return };
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 65536];
                    let n = tcp.read(&mut buf).await.unwrap_or(0);
                    let req = String::from_utf8_lossy(&buf[..n]).to_lowercase();
                    let resp = if req.contains("if-none-match: \"v1\"") {
                        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        "HTTP/1.1 304 Not Modified\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string()
                    } else {
                        let body = r#"{"children": [{"kind": "ConfigMap"}]}"#;
                        format!(
                            "HTTP/1.1 200 OK\r\netag: \"v1\"\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    };
                    let _ = tcp.write_all(resp.as_bytes()).await;
                });
            }
        });
        (format!("http://127.0.0.1:{port}/sync"), conditional)
    }

    #[tokio::test]
    async fn etags_reuse_the_cached_answer_per_parent() {
        let (url, conditional) = etag_server().await;
        let spec: Webhook = serde_json::from_value(json!({"url": url, "etag": {"enabled": true}})).unwrap();
        let hook = WebhookHook::new(&spec, Resolver::system(), Credentials::default()).unwrap();
        let request = |name: &str| json!({"parent": {"kind": "Foo", "metadata": {"namespace": "ns", "name": name}}});
        let first = hook.call(&request("a")).await.unwrap();
        let again = hook.call(&request("a")).await.unwrap();
        assert_eq!(again, first, "the 304 answered with the cached body");
        assert_eq!(conditional.load(std::sync::atomic::Ordering::SeqCst), 1);
        hook.call(&request("b")).await.unwrap();
        assert_eq!(conditional.load(std::sync::atomic::Ordering::SeqCst), 1, "another parent has no ETag yet");
        let off: Webhook = serde_json::from_value(json!({"url": url})).unwrap();
        let plain = WebhookHook::new(&off, Resolver::system(), Credentials::default()).unwrap();
        plain.call(&request("a")).await.unwrap();
        plain.call(&request("a")).await.unwrap();
        assert_eq!(conditional.load(std::sync::atomic::Ordering::SeqCst), 1, "no If-None-Match unless enabled");
    }

    #[tokio::test]
    async fn client_certificates_for_mutual_tls() {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let server_key = KeyPair::generate().unwrap();
        let server = CertificateParams::new(vec!["localhost".to_string()]).unwrap().self_signed(&server_key).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca.clone().self_signed(&ca_key).unwrap();
        let client_key = KeyPair::generate().unwrap();
        let client = CertificateParams::new(vec!["hook-client".to_string()])
            .unwrap()
            .signed_by(&client_key, &Issuer::new(ca, &ca_key))
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca_cert.der().clone()).unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![server.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into()),
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
                    let _ = tls.read(&mut buf).await;
                    let body = r#"{"children": []}"#;
                    let resp =
                        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
                    let _ = tls.write_all(resp.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        let spec = Webhook { url: Some(format!("https://localhost:{port}/sync")), ..Default::default() };
        let credentials = |identity: bool| Credentials {
            ca_pem: Some(server.pem().into_bytes()),
            authorization: None,
            client_identity: identity.then(|| (client.pem().into_bytes(), client_key.serialize_pem().into_bytes())),
        };
        let with = WebhookHook::new(&spec, Resolver::system(), credentials(true)).unwrap();
        assert_eq!(with.call(&json!({})).await.unwrap(), json!({"children": []}));
        let without = WebhookHook::new(&spec, Resolver::system(), credentials(false)).unwrap();
        assert!(matches!(without.call(&json!({})).await, Err(HookError::Unreachable(_))), "no client certificate");
    }
}
