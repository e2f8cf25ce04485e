//! The HTTPS listener, authentication, routing and content negotiation.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::app::{App, Body, Config, Params, Req, error_response, full, negotiate};
use crate::error::ApiError;
use crate::registry::Registry;
use crate::storage::Store;
use crate::tls;

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
    /// `/readyz` answers ok from now on (with [`Config::hold_readiness`]).
    pub fn mark_ready(&self) {
        self.app.ready.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Stops accepting connections and waits for the listener to close.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
        if let Err(e) = self.app.store.seal() {
            tracing::warn!(error = %e, "could not note the clean stop in the store's manifest");
        }
    }
}

/// One client connection: TLS (a client certificate names its user), then HTTP/1 or 2 until it ends or
/// the server stops.
async fn serve_connection(
    app: Arc<App>,
    acceptor: tokio_rustls::TlsAcceptor,
    tcp: tokio::net::TcpStream,
    mut stop: watch::Receiver<bool>,
) {
    let tls = match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
        Ok(Ok(s)) => s,
        _ => return,
    };
    // A client certificate the CA signed names its user (CN) and groups (O).
    let peer = tls.get_ref().1.peer_certificates().and_then(|c| c.first()).and_then(|c| tls::subject_of(c));
    let peer = peer.map(|(cn, orgs)| Arc::new(crate::auth::user_of_certificate(&cn, &orgs)));
    let service = hyper::service::service_fn(move |req| {
        let app = app.clone();
        let peer = peer.clone();
        async move { Ok::<_, Infallible>(handle(app, req, peer).await) }
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    // A client trickling its headers is cut off, as kube-apiserver's ReadHeaderTimeout does.
    builder.http1().timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT);
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
    tokio::select! {
        _ = conn => {}
        _ = stop.changed() => {}
    }
}

/// The server's state: its store opened (durable unless configured not), its signing key and audit log.
fn open_app(
    config: &Config,
    creds: &tls::Credentials,
    service_range: Option<crate::service_ips::ServiceRange>,
) -> Result<Arc<App>, StartError> {
    let db_path = config.data_dir.join("store");
    let store = Store::open(config.durable.then_some(db_path.as_path()), config.store.clone())?;
    let registry = Arc::new(Registry::new());
    Ok(Arc::new(App {
        store,
        registry,
        token: creds.token.clone(),
        token_key: crate::auth::token::Key::load_or_create(&config.data_dir)
            .map_err(|e| StartError::Io(format!("the service account signing key: {e}")))?,
        ca_pem: creds.ca_pem.clone(),
        config: config.clone(),
        traffic: Default::default(),
        fairness: crate::fairness::Fairness::new(config.shares),
        audit: match &config.audit_log_path {
            Some(p) => Some(
                crate::audit::AuditLog::open(p)
                    .map_err(|e| StartError::Io(format!("opening the audit log {}: {e}", p.display())))?,
            ),
            None => None,
        },
        service_range,
        ip_lock: tokio::sync::Mutex::new(()),
        pod_security: Default::default(),
        ready: std::sync::atomic::AtomicBool::new(!config.hold_readiness),
    }))
}

/// An API server's state for unit tests: in memory, credentials in `dir`, no listener.
#[cfg(test)]
pub(crate) fn test_app(dir: &std::path::Path) -> Arc<App> {
    let mut config = Config::new(dir);
    config.durable = false;
    let creds = tls::ensure_credentials(dir, &[]).expect("test credentials");
    open_app(&config, &creds, None).expect("an in-memory store")
}

/// Starts the API server: credentials, store, built-in objects, GC, listener.
pub async fn start(config: Config) -> Result<RunningServer, StartError> {
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| StartError::Io(format!("creating {}: {e}", config.data_dir.display())))?;
    let service_range = config
        .service_cidr
        .as_deref()
        .map(crate::service_ips::ServiceRange::parse)
        .transpose()
        .map_err(|e| StartError::Io(format!("the service range: {e}")))?;
    // Pods reach the server at the `kubernetes` Service's address (the range's first).
    let names = tls::server_names(&service_range.iter().map(|r| r.first().to_string()).collect::<Vec<_>>());
    let creds = tls::ensure_credentials(&config.data_dir, &names)?;
    let app = open_app(&config, &creds, service_range)?;
    crate::handlers::bootstrap(&app).await.map_err(|e| StartError::Io(format!("bootstrapping: {}", e.0.message)))?;
    crate::auth::defaults::ensure(&app).await.map_err(|e| StartError::Io(format!("the default RBAC roles: {e}")))?;

    let listener = TcpListener::bind(("127.0.0.1", config.port))
        .await
        .map_err(|e| StartError::Io(format!("binding 127.0.0.1:{}: {e}", config.port)))?;
    let addr = listener.local_addr().map_err(|e| StartError::Io(e.to_string()))?;
    crate::cluster_objects::ensure(&app, addr.port())
        .await
        .map_err(|e| StartError::Io(format!("creating the kubernetes Service and CA ConfigMaps: {e}")))?;
    let kubeconfig = tls::write_kubeconfig(&config.data_dir, &format!("https://{addr}"), &creds)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(creds.server_config.clone());
    let (shutdown, mut shutdown_rx) = watch::channel(false);
    tokio::spawn(crate::gc::run(app.clone(), shutdown.subscribe()));
    tokio::spawn(crate::resource_quotas::controller::run(app.clone(), shutdown.subscribe()));
    tokio::spawn(crate::event_ttl::run(app.clone(), config.event_ttl, shutdown.subscribe()));
    tokio::spawn(crate::auth::defaults::run_aggregation(app.clone(), shutdown.subscribe()));
    tokio::spawn(crate::certificates::run_signer(app.clone(), shutdown.subscribe()));
    tokio::spawn(crate::apiservices::run(app.clone(), shutdown.subscribe()));
    let app2 = app.clone();
    let connections = Arc::new(tokio::sync::Semaphore::new(config.max_connections.max(1)));
    let task = tokio::spawn(async move {
        let mut warned = None;
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
            // Past the cap a connection is closed at once: no client holds every descriptor.
            let Ok(open) = connections.clone().try_acquire_owned() else {
                if warned.is_none_or(|at: std::time::Instant| at.elapsed() > Duration::from_secs(10)) {
                    tracing::warn!(limit = app2.config.max_connections, "too many connections; closing new ones");
                    warned = Some(std::time::Instant::now());
                }
                drop(tcp);
                continue;
            };
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            let app = app2.clone();
            let stop = shutdown_rx.clone();
            tokio::spawn(async move {
                let _open = open;
                serve_connection(app, acceptor, tcp, stop).await;
            });
        }
    });
    Ok(RunningServer { addr, kubeconfig, app, shutdown, task })
}

/// How long a client may take to send a request's headers (kube-apiserver's ReadHeaderTimeout).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);

async fn handle(app: Arc<App>, req: Request<Incoming>, peer: Option<Arc<crate::auth::User>>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    let client = crate::traffic::client_name(req.headers().get(header::USER_AGENT).and_then(|h| h.to_str().ok()));
    let counters = app.traffic.request(&client);
    let audit = match &app.audit {
        Some(_) if crate::audit::audited(&method) => {
            let user = authenticate(&app, &req, peer.clone(), &path).map(|u| u.name.clone()).unwrap_or_default();
            Some((
                crate::audit::now(),
                req.uri().path_and_query().map(|p| p.to_string()).unwrap_or_else(|| path.clone()),
                user,
            ))
        }
        _ => None,
    };
    // A request that panics the server is answered as kube-apiserver's WithPanicRecovery answers it;
    // the connection and every other request go on.
    let mut response = match uc_api::panics::unwound(handle_inner(&app, req, peer)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => error_response(&e),
        Err(panic) => {
            tracing::error!(%method, %path, %panic, "a request panicked the API server");
            let text = "This request caused apiserver to panic. Look in the logs for details.\n";
            crate::app::bytes_response(500, text, "text/plain; charset=utf-8")
        }
    };
    if let (Some(log), Some((received, uri, user))) = (&app.audit, audit) {
        let r = crate::audit::Request {
            method: &method,
            uri: &uri,
            user: &user,
            user_agent: &client,
            received,
            completed: crate::audit::now(),
            code: response.status().as_u16(),
            annotations: response
                .extensions()
                .get::<crate::audit::Annotations>()
                .map(|a| a.0.as_slice())
                .unwrap_or(&[]),
        };
        log.write(&crate::audit::event(&r, &uuid::Uuid::new_v4().to_string()));
    }
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

/// Reads a request body of at most `limit` bytes. A larger one is read on (and discarded, up to a
/// bound) so that the client, still sending, receives the 413 instead of a broken connection.
async fn read_body(mut body: Incoming, limit: usize, timeout: Duration) -> Result<Bytes, ApiError> {
    const DRAIN_AT_MOST: usize = 64 * 1024 * 1024;
    let mut buf = bytes::BytesMut::new();
    let mut total = 0usize;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        // A body that stops short of its Content-Length is answered, not waited for forever.
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(_) => {
                return Err(ApiError::bad_request(format!(
                    "reading the request body: it did not arrive within {}s",
                    timeout.as_secs_f64()
                )));
            }
        };
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

async fn handle_inner(
    app: &Arc<App>,
    req: Request<Incoming>,
    peer: Option<Arc<crate::auth::User>>,
) -> Result<Response<Body>, ApiError> {
    let path = req.uri().path().to_string();
    let user = authenticate(app, &req, peer, &path)?;
    // Logs, exec, attach and port-forward go to the pod's node, upgrades and all.
    if let Some((ns, name, sub)) = crate::kubelet::target(&path)
        && (req.method() == Method::GET || req.method() == Method::POST)
    {
        let verb = crate::auth::verb_of(req.method(), true, false);
        let attrs = crate::auth::rbac::Attributes::resource(verb, "", "pods", &ns, &name).on_subresource(&sub);
        crate::auth::authorize(&app.store, &user, &attrs)?;
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
    // A seat of the identity's share, held while the request is read and answered.
    let watch = params.get("watch").and_then(|w| crate::request::parse_bool(w)) == Some(true);
    let _seat = match user.is_master() || crate::fairness::exempt_request(&path, watch) {
        true => None,
        false => Some(app.fairness.seat(&user.name).await?),
    };
    let accept = parts.headers.get(header::ACCEPT).and_then(|h| h.to_str().ok()).unwrap_or_default().to_string();
    let negotiated = negotiate(Some(accept.as_str()).filter(|a| !a.is_empty()))?;
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .map(|s| s.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
        .unwrap_or_default();
    let user_agent =
        parts.headers.get(header::USER_AGENT).and_then(|h| h.to_str().ok()).unwrap_or_default().to_string();
    let body = read_body(body, app.config.max_body_bytes, app.config.request_timeout).await?;
    let warnings = duplicate_fields(&params, &content_type, &body)?;
    let mut r = Req {
        method: parts.method,
        path,
        params,
        negotiated,
        content_type,
        body,
        warnings,
        audit_annotations: Vec::new(),
        user_agent,
        user,
        accept,
    };
    // A refusal is answered here, so that its audit annotations reach the audit event too.
    let mut response = crate::handlers::dispatch(app, &mut r).await.unwrap_or_else(|e| error_response(&e));
    if !r.audit_annotations.is_empty() {
        response.extensions_mut().insert(crate::audit::Annotations(std::mem::take(&mut r.audit_annotations)));
    }
    for w in &r.warnings {
        let text = format!("299 - {:?}", w);
        if let Ok(v) = HeaderValue::from_str(&text) {
            response.headers_mut().append("warning", v);
        }
    }
    Ok(response)
}

/// Fields a JSON body sets twice, as kube's strict decoding reports them: refused with
/// `fieldValidation=Strict`, warned of otherwise (kubectl's default), unless `Ignore`.
fn duplicate_fields(params: &Params, content_type: &str, body: &[u8]) -> Result<Vec<String>, ApiError> {
    let json = matches!(
        content_type,
        "application/json" | "application/merge-patch+json" | "application/strategic-merge-patch+json"
    );
    let mode = params.get("fieldValidation").map(String::as_str).unwrap_or("Warn");
    if !json || body.is_empty() || mode == "Ignore" {
        return Ok(Vec::new());
    }
    let found: Vec<String> =
        crate::json_duplicates::duplicate_fields(body).into_iter().map(|p| format!("duplicate field {p:?}")).collect();
    if mode == "Strict" && !found.is_empty() {
        return Err(ApiError::bad_request(format!("strict decoding error: {}", found.join(", "))));
    }
    Ok(found)
}

/// Who a request is: the bearer token's user, else the client certificate's; then whom it
/// impersonates. Public paths (health, version) need no credentials.
fn authenticate(
    app: &App,
    req: &Request<Incoming>,
    peer: Option<Arc<crate::auth::User>>,
    path: &str,
) -> Result<Arc<crate::auth::User>, ApiError> {
    let bearer = req.headers().get(header::AUTHORIZATION).and_then(|h| h.to_str().ok()).and_then(uc_api::bearer::token);
    let user = match (bearer, peer) {
        (Some(token), _) => crate::auth::user_of_token(&app.token, &app.token_key, &app.store, token)?,
        (None, Some(user)) => (*user).clone(),
        (None, None) if crate::auth::public_path(path) => crate::auth::User {
            name: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
            ..Default::default()
        },
        (None, None) => return Err(ApiError::unauthorized()),
    };
    Ok(Arc::new(crate::auth::impersonate(&app.store, user, req.headers())?))
}
