//! The HTTPS listener, authentication, routing and content negotiation.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::error::ApiError;
use crate::registry::Registry;
use crate::storage::{Store, StoreOptions};
use crate::tls;

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
    /// The range Services' cluster IPs come from (`a.b.c.d/len`; None: Services get none).
    pub service_cidr: Option<String>,
    /// The bearer token the API server presents to nodes' kubelet endpoints (logs, exec, attach,
    /// port-forward).
    pub kubelet_token: Option<String>,
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
            service_cidr: None,
            kubelet_token: None,
        }
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Credentials could not be prepared.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// The store could not be opened.
    #[error("opening the object store: {0}")]
    Store(#[from] crate::storage::StoreError),
    /// Binding or file system failure.
    #[error("{0}")]
    Io(String),
}

/// Shared state of the request handlers.
pub struct App {
    /// Object storage.
    pub store: Arc<Store>,
    /// Served resources.
    pub registry: Arc<Registry>,
    /// The bearer token.
    pub token: String,
    /// Configuration.
    pub config: Config,
    /// Per-client request and byte counters (`/metrics`).
    pub traffic: crate::traffic::Traffic,
    /// Where Services' cluster IPs come from.
    pub service_range: Option<crate::service_ips::ServiceRange>,
    /// Held while a cluster IP is chosen and stored.
    pub ip_lock: tokio::sync::Mutex<()>,
}

/// A running API server.
pub struct RunningServer {
    /// Bound address.
    pub addr: SocketAddr,
    /// Path of the kubeconfig written for it.
    pub kubeconfig: PathBuf,
    /// Handler state (for embedding components in the same process).
    pub app: Arc<App>,
    shutdown: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningServer {
    /// Stops accepting connections and waits for the listener to close.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
    }
}

/// Starts the API server: credentials, store, built-in objects, GC, listener.
pub async fn start(config: Config) -> Result<RunningServer, StartError> {
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| StartError::Io(format!("creating {}: {e}", config.data_dir.display())))?;
    let creds = tls::ensure_credentials(&config.data_dir)?;
    let db_path = config.data_dir.join("store");
    let store = Store::open(config.durable.then_some(db_path.as_path()), config.store.clone())?;
    let registry = Arc::new(Registry::new());
    let service_range = config
        .service_cidr
        .as_deref()
        .map(crate::service_ips::ServiceRange::parse)
        .transpose()
        .map_err(|e| StartError::Io(format!("the service range: {e}")))?;
    let app = Arc::new(App {
        store,
        registry,
        token: creds.token.clone(),
        config: config.clone(),
        traffic: Default::default(),
        service_range,
        ip_lock: tokio::sync::Mutex::new(()),
    });
    crate::handlers::bootstrap(&app).await.map_err(|e| StartError::Io(format!("bootstrapping: {}", e.0.message)))?;

    let listener = TcpListener::bind(("127.0.0.1", config.port))
        .await
        .map_err(|e| StartError::Io(format!("binding 127.0.0.1:{}: {e}", config.port)))?;
    let addr = listener.local_addr().map_err(|e| StartError::Io(e.to_string()))?;
    let kubeconfig = tls::write_kubeconfig(&config.data_dir, &format!("https://{addr}"), &creds)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(creds.server_config.clone());
    let (shutdown, mut shutdown_rx) = watch::channel(false);
    tokio::spawn(crate::gc::run(app.clone(), shutdown.subscribe()));
    let app2 = app.clone();
    let task = tokio::spawn(async move {
        loop {
            let (tcp, _) = tokio::select! {
                r = listener.accept() => match r {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = shutdown_rx.changed() => break,
            };
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            let app = app2.clone();
            let mut stop = shutdown_rx.clone();
            tokio::spawn(async move {
                let tls = match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(s)) => s,
                    _ => return,
                };
                let service = hyper::service::service_fn(move |req| {
                    let app = app.clone();
                    async move { Ok::<_, Infallible>(handle(app, req).await) }
                });
                let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
                tokio::select! {
                    _ = conn => {}
                    _ = stop.changed() => {}
                }
            });
        }
    });
    Ok(RunningServer { addr, kubeconfig, app, shutdown, task })
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

fn negotiate(accept: Option<&str>) -> Result<Negotiated, ApiError> {
    let accept = accept.unwrap_or("application/json");
    let mut json_ok = false;
    for part in accept.split(',') {
        let mut pieces = part.split(';').map(str::trim);
        let media = pieces.next().unwrap_or_default();
        let params: HashMap<&str, &str> = pieces.filter_map(|p| p.split_once('=')).collect();
        let is_json = matches!(media, "application/json" | "*/*" | "application/*" | "");
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
pub fn json_response(code: u16, v: &Value) -> Response<Body> {
    json_response_typed(code, v, "application/json")
}

/// A buffered JSON response with a specific content type.
pub fn json_response_typed(code: u16, v: &Value, content_type: &str) -> Response<Body> {
    let body = serde_json::to_vec(v).unwrap_or_default();
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

/// The error response for an ApiError.
pub fn error_response(e: &ApiError) -> Response<Body> {
    json_response(e.code(), &serde_json::to_value(&e.0).unwrap_or(Value::Null))
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
}

async fn handle(app: Arc<App>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    let client = crate::traffic::client_name(req.headers().get(header::USER_AGENT).and_then(|h| h.to_str().ok()));
    let counters = app.traffic.request(&client);
    let mut response = match handle_inner(&app, req).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    };
    tracing::debug!(%method, %path, %client, status = response.status().as_u16(), "request");
    response.headers_mut().insert("cache-control", HeaderValue::from_static("no-cache, private"));
    // Bytes are counted as they are written, so a watch stream counts what it has sent so far.
    response.map(|body| {
        body.map_frame(move |frame| {
            if let Some(data) = frame.data_ref() {
                counters.bytes.fetch_add(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
            }
            frame
        })
        .boxed()
    })
}

fn public_path(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/livez" | "/version" | "/version/")
        || path.starts_with("/healthz/")
        || path.starts_with("/readyz/")
        || path.starts_with("/livez/")
}

/// Reads a request body of at most `limit` bytes. A larger one is read on (and discarded, up to a
/// bound) so that the client, still sending, receives the 413 instead of a broken connection.
async fn read_body(mut body: Incoming, limit: usize) -> Result<Bytes, ApiError> {
    const DRAIN_AT_MOST: usize = 64 * 1024 * 1024;
    let mut buf = bytes::BytesMut::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            total += data.len();
            if total <= limit {
                buf.extend_from_slice(&data);
            } else if total > DRAIN_AT_MOST {
                break;
            }
        }
    }
    if total > limit {
        return Err(ApiError::too_large(limit));
    }
    Ok(buf.freeze())
}

async fn handle_inner(app: &Arc<App>, req: Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let path = req.uri().path().to_string();
    if !public_path(&path) {
        let presented = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim);
        if presented != Some(app.token.as_str()) {
            return Err(ApiError::unauthorized());
        }
    }
    // Logs, exec, attach and port-forward go to the pod's node, upgrades and all.
    if let Some((ns, name, sub)) = crate::kubelet::target(&path)
        && (req.method() == Method::GET || req.method() == Method::POST)
    {
        return crate::kubelet::proxy(app, req, &ns, &name, &sub).await;
    }
    let (parts, body) = req.into_parts();
    if path == "/metrics" && parts.method == Method::GET {
        let h = app.store.history();
        let history = format!(
            "# HELP apiserver_watch_history_events Changes kept for watches and lists at a past revision.\n\
             # TYPE apiserver_watch_history_events gauge\napiserver_watch_history_events {}\n\
             # HELP apiserver_watch_history_bytes Size of the kept changes as JSON.\n\
             # TYPE apiserver_watch_history_bytes gauge\napiserver_watch_history_bytes {}\n\
             # HELP apiserver_watch_history_oldest_revision The oldest revision a watch can start from.\n\
             # TYPE apiserver_watch_history_oldest_revision gauge\napiserver_watch_history_oldest_revision {}\n\
             # HELP apiserver_revision The newest revision.\n\
             # TYPE apiserver_revision gauge\napiserver_revision {}\n",
            h.events, h.bytes, h.oldest_revision, h.revision
        );
        let mut r = Response::new(full(app.traffic.render() + &history));
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
        return Ok(r);
    }
    let params: Params =
        parts.uri.query().map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default();
    let negotiated = negotiate(parts.headers.get(header::ACCEPT).and_then(|h| h.to_str().ok()))?;
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .map(|s| s.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
        .unwrap_or_default();
    let body = read_body(body, app.config.max_body_bytes).await?;
    let mut r = Req { method: parts.method, path, params, negotiated, content_type, body, warnings: Vec::new() };
    let mut response = crate::handlers::dispatch(app, &mut r).await?;
    for w in &r.warnings {
        let text = format!("299 - {:?}", w);
        if let Ok(v) = HeaderValue::from_str(&text) {
            response.headers_mut().append("warning", v);
        }
    }
    Ok(response)
}
