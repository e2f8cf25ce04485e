//! The console's HTTP server: the login page, the page application's files, the Kubernetes API passed
//! through with the user's token (`/api`, `/apis`, `/version`: the pages list as any client does, and
//! watch many collections over one connection, `/console/watch`), and the engine's hook metrics
//! summarised (`/console/hooks`). Everything but the login page and
//! the style sheet wants a token the API server accepts; without one a page gets the login page and an
//! API call 401.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::assets;
use crate::session::{self, Sessions};
use crate::wire::{Body, is_api};

/// Why a token's access to the engine's metrics could not be reviewed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MetricsAccessError(pub String);

impl From<String> for MetricsAccessError {
    fn from(message: String) -> Self {
        MetricsAccessError(message)
    }
}

impl From<&str> for MetricsAccessError {
    fn from(message: &str) -> Self {
        MetricsAccessError(message.to_string())
    }
}

impl From<MetricsAccessError> for String {
    fn from(e: MetricsAccessError) -> String {
        e.0
    }
}

/// What every request shares.
pub struct State {
    pub sessions: Sessions,
    /// The engine's metrics endpoint (`host:port`), when the engine runs here.
    pub engine_metrics: Option<SocketAddr>,
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).map_err(|never| match never {}).boxed_unsync()
}

fn respond(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r.headers_mut().insert(header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    r
}

fn redirect(to: &str, cookies: &[String]) -> Response<Body> {
    let mut r = respond(StatusCode::SEE_OTHER, "text/plain", "");
    if let Ok(v) = to.parse() {
        r.headers_mut().insert(header::LOCATION, v);
    }
    set_cookies(&mut r, cookies);
    r
}

fn set_cookies(r: &mut Response<Body>, cookies: &[String]) {
    for c in cookies.iter().filter_map(|c| c.parse().ok()) {
        r.headers_mut().append(header::SET_COOKIE, c);
    }
}

fn status_json(code: StatusCode, message: &str) -> Response<Body> {
    let status = uc_api::status::Status::failure(code.as_u16(), code.canonical_reason().unwrap_or_default(), message);
    respond(code, "application/json", serde_json::to_string(&status).unwrap_or_default())
}

async fn login(state: &State, req: Request<Incoming>) -> Response<Body> {
    let secure = session::over_https(req.headers());
    let Ok(body) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
        return respond(StatusCode::BAD_REQUEST, "text/plain", "unreadable form");
    };
    let token = form_urlencoded::parse(&body).find(|(k, _)| k == "token").map(|(_, v)| v.trim().to_string());
    match token.filter(|t| !t.is_empty()) {
        Some(t) if state.sessions.valid(&t).await => redirect("/", &session::set_cookies(&t, secure)),
        Some(_) => respond(
            StatusCode::UNAUTHORIZED,
            "text/html; charset=utf-8",
            assets::login_page(Some("The API server does not accept this token.")),
        ),
        None => {
            respond(StatusCode::BAD_REQUEST, "text/html; charset=utf-8", assets::login_page(Some("A token, please.")))
        }
    }
}

/// Passes a request to the API server as the user.
async fn proxy(state: &State, token: &str, req: Request<Incoming>) -> Response<Body> {
    let client = match state.sessions.client(token) {
        Ok(c) => c,
        Err(e) => return status_json(StatusCode::BAD_GATEWAY, &format!("no client of the API server: {e}")),
    };
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
        return status_json(StatusCode::BAD_REQUEST, "unreadable request body");
    };
    let path = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut upstream = Request::builder().method(parts.method.clone()).uri(path);
    for name in [header::ACCEPT, header::CONTENT_TYPE] {
        if let Some(v) = parts.headers.get(&name) {
            upstream = upstream.header(name, v);
        }
    }
    let Ok(upstream) = upstream.body(kube::client::Body::from(body.to_vec())) else {
        return status_json(StatusCode::BAD_REQUEST, "a request the console cannot pass on");
    };
    match client.send(upstream).await {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            let mut r =
                Response::new(body.map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>).boxed_unsync());
            *r.status_mut() = parts.status;
            for name in [header::CONTENT_TYPE, header::CONTENT_LENGTH] {
                if let Some(v) = parts.headers.get(&name) {
                    r.headers_mut().insert(name, v.clone());
                }
            }
            r
        }
        Err(e) => status_json(StatusCode::BAD_GATEWAY, &format!("the API server: {e}")),
    }
}

/// Whether the user may read metrics: kube's non-resource URL `/metrics`, asked of the API server as
/// the user (a SelfSubjectAccessReview).
async fn may_read_metrics(state: &State, token: &str) -> Result<bool, MetricsAccessError> {
    use k8s_openapi::api::authorization::v1::{
        NonResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    let client = state.sessions.client(token).map_err(|e| e.to_string())?;
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some("/metrics".into()),
                verb: Some("get".into()),
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: kube::Api<SelfSubjectAccessReview> = kube::Api::all(client);
    let answer = api.create(&Default::default(), &review).await.map_err(|e| e.to_string())?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// The engine's hooks: calls, errors, p50 and p99 — for those who may read `/metrics`.
async fn hooks(state: &State, token: &str) -> Response<Body> {
    match may_read_metrics(state, token).await {
        Ok(true) => {}
        Ok(false) => return status_json(StatusCode::FORBIDDEN, "forbidden: the engine's metrics need get on /metrics"),
        Err(e) => return status_json(StatusCode::BAD_GATEWAY, &format!("asking the API server: {e}")),
    }
    let Some(addr) = state.engine_metrics else {
        return respond(StatusCode::OK, "application/json", "[]");
    };
    let text = async {
        let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .build_http::<http_body_util::Empty<Bytes>>();
        // The engine asks the cluster about the user again: the console lends no authority of its own.
        let request = Request::get(format!("http://{addr}/metrics"))
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(http_body_util::Empty::<Bytes>::new())?;
        let resp = client.request(request).await?;
        let code = resp.status();
        let bytes = resp.into_body().collect().await?.to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        anyhow::ensure!(code.is_success(), "{code}: {text}");
        anyhow::Ok(text)
    };
    match tokio::time::timeout(std::time::Duration::from_secs(5), text).await {
        Ok(Ok(text)) => respond(
            StatusCode::OK,
            "application/json",
            serde_json::to_string(&crate::metrics::hook_stats(&text)).unwrap_or_else(|_| "[]".into()),
        ),
        Ok(Err(e)) => status_json(StatusCode::BAD_GATEWAY, &format!("the engine's metrics: {e}")),
        Err(_) => status_json(StatusCode::GATEWAY_TIMEOUT, "the engine's metrics did not answer"),
    }
}

/// Answers one request, with the headers every answer carries ([`crate::guard::HEADERS`] and the
/// content security policy).
pub async fn handle(state: Arc<State>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let mut response = match crate::guard::forged(req.method(), req.headers(), req.uri().path()) {
        Some(why) => status_json(StatusCode::FORBIDDEN, &why),
        None => answer(state, req).await,
    };
    let headers = response.headers_mut();
    for (name, value) in crate::guard::HEADERS {
        headers.insert(*name, http::HeaderValue::from_static(value));
    }
    let policy = http::HeaderValue::from_static(crate::guard::content_security_policy());
    headers.insert(http::header::CONTENT_SECURITY_POLICY, policy);
    Ok(response)
}

async fn answer(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let html = "text/html; charset=utf-8";
    match (req.method(), path.as_str()) {
        (&Method::GET, "/login") => respond(StatusCode::OK, html, assets::login_page(None)),
        (&Method::POST, "/login") => login(&state, req).await,
        (&Method::GET, "/logout") => redirect("/login", &session::clear_cookies()),
        (&Method::GET, "/static/style.css") => respond(StatusCode::OK, "text/css", assets::STYLE),
        (&Method::GET, "/static/icon.svg" | "/favicon.ico") => respond(StatusCode::OK, "image/svg+xml", assets::ICON),
        _ => {
            let token = session::token(req.headers());
            let valid = match &token {
                Some(t) => state.sessions.valid(t).await,
                None => false,
            };
            match (token.filter(|_| valid), is_api(&path)) {
                (None, true) => status_json(StatusCode::UNAUTHORIZED, "Unauthorized: log in to the console"),
                (None, false) if req.method() == Method::GET && !path.starts_with("/static/") => {
                    redirect("/login", &[])
                }
                (None, false) => status_json(StatusCode::UNAUTHORIZED, "Unauthorized: log in to the console"),
                (Some(t), true) => proxy(&state, &t, req).await,
                (Some(t), false) => match path.as_str() {
                    "/console/hooks" => hooks(&state, &t).await,
                    "/console/watch" => {
                        match (crate::watch::paths(req.uri().query().unwrap_or_default()), state.sessions.client(&t)) {
                            (Ok(paths), Ok(client)) => {
                                let mut r = Response::new(crate::watch::stream(client, paths));
                                r.headers_mut().insert(
                                    header::CONTENT_TYPE,
                                    http::HeaderValue::from_static("application/x-ndjson"),
                                );
                                r
                            }
                            (Err(e), _) => status_json(StatusCode::BAD_REQUEST, &e.0),
                            (_, Err(e)) => {
                                status_json(StatusCode::BAD_GATEWAY, &format!("no client of the API server: {e}"))
                            }
                        }
                    }
                    p => match assets::get(p) {
                        // The page (again) with the session's CSRF token, for sessions that began
                        // before the console set one.
                        Some((content_type, body)) if content_type.starts_with("text/html") => {
                            let mut r = respond(StatusCode::OK, content_type, body);
                            let secure = if session::over_https(req.headers()) { "; Secure" } else { "" };
                            set_cookies(&mut r, &[session::csrf_cookie(&t, secure)]);
                            r
                        }
                        Some((content_type, body)) => respond(StatusCode::OK, content_type, body),
                        None => respond(StatusCode::NOT_FOUND, "text/plain", "not found"),
                    },
                },
            }
        }
    }
}

/// Serves connections on `listener` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, state: Arc<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let state = state.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(state.clone(), req));
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            if let Err(e) = builder.serve_connection(TokioIo::new(stream), service).await {
                tracing::debug!(error = %e, "console connection ended");
            }
        });
    }
}
