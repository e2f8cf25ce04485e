//! The API server's shared state and the types every handler speaks: the decoded request, content
//! negotiation, response bodies.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Method, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};

use crate::error::ApiError;
use crate::registry::Registry;
use crate::storage::{Store, StoreOptions};

/// Response body type: buffered or streamed (watch).
pub type Body = BoxBody<Bytes, std::io::Error>;

/// API server configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Directory holding the database, credentials and kubeconfig.
    pub data_dir: PathBuf,
    /// Port on 127.0.0.1 (0 picks a free one).
    pub port: u16,
    /// Keep objects in a durable file (true) or in memory only.
    pub durable: bool,
    /// Storage options (revision log size).
    pub store: StoreOptions,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// How long a request's body may take to arrive (kube-apiserver's `--request-timeout`, 1m).
    pub request_timeout: std::time::Duration,
    /// The range Services' cluster IPs come from (`a.b.c.d/len`; None: Services get none).
    pub service_cidr: Option<String>,
    /// The client identity the API server presents to nodes' kubelet endpoints (logs, exec, attach,
    /// port-forward), and the CA their serving certificates must chain to.
    pub kubelet_client: Option<crate::kubelet_tls::Identity>,
    /// Where to append the audit log (writes, at the Metadata level; None: no audit log).
    pub audit_log_path: Option<PathBuf>,
    /// `/readyz` fails until [`crate::RunningServer::mark_ready`] is called: what the embedding process
    /// starts after the server (kube-apiserver's post-start hooks) is ready too.
    pub hold_readiness: bool,
    /// Pod Security admission's levels where a namespace's labels name none.
    pub pod_security: crate::pod_security::Policy,
    /// Each identity's share of the server (API Priority and Fairness' seats and queue).
    pub shares: crate::fairness::Shares,
    /// At most this many client connections open at once (more are closed as they come).
    pub max_connections: usize,
    /// How long an Event lives after its last write (kube-apiserver's `--event-ttl`).
    pub event_ttl: std::time::Duration,
}

impl Config {
    /// Defaults for a data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            port: 6443,
            durable: true,
            store: StoreOptions::default(),
            max_body_bytes: 3 * 1024 * 1024,
            request_timeout: std::time::Duration::from_secs(60),
            service_cidr: None,
            kubelet_client: None,
            audit_log_path: None,
            hold_readiness: false,
            pod_security: Default::default(),
            shares: Default::default(),
            max_connections: 4096,
            // kube-apiserver's `--event-ttl` default.
            event_ttl: std::time::Duration::from_secs(3600),
        }
    }
}

/// Shared state of the request handlers.
pub struct App {
    /// Object storage.
    pub store: Arc<Store>,
    /// Served resources.
    pub registry: Arc<Registry>,
    /// The cluster CA, PEM (published as `kube-root-ca.crt`).
    pub ca_pem: String,
    /// The admin bearer token.
    pub token: String,
    /// The key service account tokens are signed with.
    pub token_key: crate::auth::token::Key,
    /// Configuration.
    pub config: Config,
    /// Per-client request and byte counters (`/metrics`).
    pub traffic: crate::traffic::Traffic,
    /// Who holds seats now ([`crate::fairness`]).
    pub fairness: Arc<crate::fairness::Fairness>,
    /// The audit log, if one is kept.
    pub audit: Option<crate::audit::AuditLog>,
    /// Where Services' cluster IPs come from.
    pub service_range: Option<crate::service_ips::ServiceRange>,
    /// Held while a cluster IP is chosen and stored.
    pub ip_lock: tokio::sync::Mutex<()>,
    /// Pod Security verdicts and namespace policies already worked out.
    pub pod_security: crate::pod_security::memo::Memo,
    /// Whether `/readyz` answers ok (see [`Config::hold_readiness`]).
    pub ready: std::sync::atomic::AtomicBool,
}

/// Parsed query parameters.
pub type Params = HashMap<String, String>;

/// How the client wants objects rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Render {
    /// Plain JSON objects and lists.
    Json,
    /// `meta.k8s.io/v1 Table`.
    Table,
    /// `PartialObjectMetadata` / `PartialObjectMetadataList`.
    Metadata,
}

/// What a request wants back, from its Accept header.
#[derive(Debug, Clone, Copy)]
pub struct Negotiated {
    /// Rendering.
    pub render: Render,
    /// Aggregated discovery was asked for (and in which version).
    pub aggregated_discovery: Option<&'static str>,
}

pub(crate) fn negotiate(accept: Option<&str>) -> Result<Negotiated, ApiError> {
    let accept = accept.unwrap_or("application/json");
    let mut json_ok = false;
    for part in accept.split(',') {
        let mut pieces = part.split(';').map(str::trim);
        let media = pieces.next().unwrap_or_default();
        let params: HashMap<&str, &str> = pieces.filter_map(|p| p.split_once('=')).collect();
        let is_json = matches!(media, "application/json" | "*/*" | "application/*" | "")
            || media.starts_with("application/com.github.proto-openapi.spec.v2");
        if !is_json {
            continue;
        }
        match (params.get("as").copied(), params.get("g").copied(), params.get("v").copied()) {
            (Some("Table"), Some("meta.k8s.io"), Some("v1" | "v1beta1")) => {
                return Ok(Negotiated { render: Render::Table, aggregated_discovery: None });
            }
            (Some("PartialObjectMetadata" | "PartialObjectMetadataList"), Some("meta.k8s.io"), _) => {
                return Ok(Negotiated { render: Render::Metadata, aggregated_discovery: None });
            }
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some(v @ ("v2" | "v2beta1"))) => {
                let v = if v == "v2" { "v2" } else { "v2beta1" };
                return Ok(Negotiated { render: Render::Json, aggregated_discovery: Some(v) });
            }
            (None, _, _) => json_ok = true,
            _ => {}
        }
    }
    if json_ok || accept.contains("application/yaml") {
        Ok(Negotiated { render: Render::Json, aggregated_discovery: None })
    } else {
        Err(ApiError::not_acceptable(format!(
            "only the following media types are accepted: application/json, application/json;as=Table;v=v1;g=meta.k8s.io (asked for {accept:?})"
        )))
    }
}

/// A buffered JSON response.
pub fn json_response<T: serde::Serialize + ?Sized>(code: u16, v: &T) -> Response<Body> {
    json_response_typed(code, v, "application/json")
}

/// A buffered JSON response with a specific content type.
pub fn json_response_typed<T: serde::Serialize + ?Sized>(code: u16, v: &T, content_type: &str) -> Response<Body> {
    bytes_response(code, serde_json::to_vec(v).unwrap_or_default(), content_type)
}

/// An object or list written as kube-apiserver writes it: `kind`, `apiVersion`, `metadata` first
/// ([`crate::kept::in_kube_order`]), a list's items likewise; managed fields as JSON
/// ([`crate::wire`]).
pub struct KubeOrder<'a>(pub &'a serde_json::Value);

impl serde::Serialize for KubeOrder<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct Items<'a>(&'a [serde_json::Value]);
        impl serde::Serialize for Items<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for item in self.0 {
                    seq.serialize_element(&KubeOrder(item))?;
                }
                seq.end()
            }
        }
        let serde_json::Value::Object(members) = self.0 else { return crate::wire::Wire(self.0).serialize(s) };
        let mut map = s.serialize_map(Some(members.len()))?;
        for (key, value) in crate::kept::in_kube_order(members) {
            match value {
                serde_json::Value::Array(items) if key == "items" => map.serialize_entry(key, &Items(items))?,
                _ => map.serialize_entry(key, &crate::wire::Member(key, value))?,
            }
        }
        map.end()
    }
}

/// A buffered response of bytes already encoded.
pub fn bytes_response(code: u16, body: impl Into<Bytes>, content_type: &str) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(ct) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    r
}

/// A buffered body.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).map_err(|never: Infallible| match never {}).boxed()
}

/// A `Status` as kube-apiserver writes it: its fields in kube's order (kind, apiVersion, metadata,
/// status, message, reason, details, code), then a newline.
pub fn status_response(code: u16, status: &uc_api::Status) -> Response<Body> {
    let mut r = Response::new(full(status_body(status)));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(seconds) = status.details.as_ref().and_then(|d| d.retry_after_seconds) {
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    r
}

/// The bytes of a `Status` response.
pub fn status_body(status: &uc_api::Status) -> Vec<u8> {
    let mut body = serde_json::to_vec(status).unwrap_or_default();
    body.push(b'\n');
    body
}

/// The error response for an ApiError.
pub fn error_response(e: &ApiError) -> Response<Body> {
    status_response(e.code(), &e.0)
}

/// Everything a handler needs to know about the request, decoded.
pub struct Req {
    /// HTTP method.
    pub method: Method,
    /// URL path.
    pub path: String,
    /// Query parameters.
    pub params: Params,
    /// Accept negotiation.
    pub negotiated: Negotiated,
    /// Content-Type (media type only, lowercased).
    pub content_type: String,
    /// Body bytes.
    pub body: Bytes,
    /// Warnings to return in `Warning` headers.
    pub warnings: Vec<String>,
    /// Annotations for the request's audit event (`pod-security.kubernetes.io/*`).
    pub audit_annotations: Vec<(String, String)>,
    /// `User-Agent` (the default field manager).
    pub user_agent: String,
    /// Who the request acts as (after impersonation).
    pub user: Arc<crate::auth::User>,
    /// The Accept header as sent.
    pub accept: String,
}

#[cfg(test)]
impl Req {
    /// A request for unit tests: this content type and body, these query parameters, no user.
    pub(crate) fn for_test(method: Method, content_type: &str, body: &str, params: &[(&str, &str)]) -> Req {
        Req {
            method,
            path: String::new(),
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            negotiated: negotiate(None).expect("JSON is acceptable"),
            content_type: content_type.into(),
            body: Bytes::from(body.to_string()),
            warnings: Vec::new(),
            audit_annotations: Vec::new(),
            user_agent: "kubectl/v1.34.0 (linux/amd64) kubernetes/abc".into(),
            user: Arc::default(),
            accept: "application/json".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_written_as_kube_apiserver_writes_them() {
        let subject = crate::error::Subject { resource: "pods".into(), name: "x".into(), ..Default::default() };
        let body = status_body(&ApiError::not_found(&subject).0);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"pods \\\"x\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"x\",\"kind\":\"pods\"},\"code\":404}\n"
        );
    }
}
