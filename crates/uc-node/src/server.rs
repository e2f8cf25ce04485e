//! The node's kubelet endpoint, which the API server proxies `pods/log`, `pods/exec`, `pods/attach`
//! and `pods/portforward` to (as kube-apiserver does to a kubelet's port 10250): on loopback, behind a
//! bearer token only the API server holds. Paths as the kubelet's:
//! `/containerLogs/{ns}/{pod}/{container}`, `/exec/{ns}/{pod}/{container}`,
//! `/attach/{ns}/{pod}/{container}`, `/portForward/{ns}/{pod}`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;

use crate::held_pod::HeldPod;
use crate::logs::{ReadOptions, Renderer};
use crate::pod::PodProcesses;
use crate::response::{Body, empty, error, full};
use crate::{exec, portforward, ws};

/// What the endpoint knows of one pod.
#[derive(Clone)]
pub struct PodEntry {
    /// The pod as last seen (shared with its worker).
    pub pod: Arc<HeldPod>,
    /// Its images are allowlisted: it runs processes (once they are started).
    pub real: bool,
    /// Its processes, once started.
    pub procs: Option<Arc<PodProcesses>>,
    /// Its address.
    pub ip: String,
}

/// The pods of this node by namespace and name.
pub type Pods = Arc<Mutex<HashMap<(String, String), PodEntry>>>;

/// Serves the endpoint on `127.0.0.1:port` (0 picks one); returns the bound address.
/// Who may call the endpoint: a client holding the API server's certificate (TLS, the way `uc up`
/// runs the node), or, over plain HTTP, one presenting the token.
#[derive(Clone)]
pub enum Callers {
    /// Mutual TLS: the configuration requires and verifies the client's certificate.
    Tls(Arc<rustls::ServerConfig>),
    /// Plain HTTP with this bearer token.
    Token(String),
}

impl std::fmt::Debug for Callers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Callers::Tls(_) => "Callers::Tls",
            Callers::Token(_) => "Callers::Token",
        })
    }
}

/// Serves the kubelet endpoint on 127.0.0.1:`port` (0 picks one).
pub async fn serve(port: u16, callers: Callers, pods: Pods) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let token: Arc<Option<String>> = Arc::new(match &callers {
        Callers::Token(t) => Some(t.clone()),
        Callers::Tls(_) => None,
    });
    let acceptor = match callers {
        Callers::Tls(config) => Some(tokio_rustls::TlsAcceptor::from(config)),
        Callers::Token(_) => None,
    };
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let (token, pods, acceptor) = (token.clone(), pods.clone(), acceptor.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let (token, pods) = (token.clone(), pods.clone());
                    async move { Ok::<_, Infallible>(handle(req, token.as_deref(), &pods).await) }
                });
                let http = hyper::server::conn::http1::Builder::new();
                match acceptor {
                    Some(acceptor) => {
                        let Ok(Ok(tls)) = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await
                        else {
                            return;
                        };
                        let _ = http.serve_connection(TokioIo::new(tls), service).with_upgrades().await;
                    }
                    None => {
                        let _ = http.serve_connection(TokioIo::new(tcp), service).with_upgrades().await;
                    }
                }
            });
        }
    });
    Ok(addr)
}

const SIMULATED: &str = "is simulated by uc-node (its images are not on the node's allowlist), so it has no process";

/// Answers one request; `token` is the one it must carry when the connection is not mutual TLS.
async fn handle(req: Request<Incoming>, token: Option<&str>, pods: &Pods) -> Response<Body> {
    if let Some(token) = token {
        let presented =
            req.headers().get(header::AUTHORIZATION).and_then(|h| h.to_str().ok()).and_then(uc_api::bearer::token);
        if presented != Some(token) {
            return error(StatusCode::UNAUTHORIZED, "Unauthorized");
        }
    }
    let path = req.uri().path().to_string();
    let query: Vec<(String, String)> =
        req.uri().query().map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let lookup = |ns: &str, name: &str| pods.lock().get(&(ns.to_string(), name.to_string())).cloned();
    match segs.as_slice() {
        ["healthz"] => Response::new(full("ok")),
        ["containerLogs", ns, name, container] => match lookup(ns, name) {
            Some(e) => logs(e, container, &query),
            None => error(StatusCode::NOT_FOUND, &format!("pod {ns}/{name} is not on this node")),
        },
        [verb @ ("exec" | "attach"), ns, name, container] => match lookup(ns, name) {
            Some(e) => exec_or_attach(req, verb, e, container, &query),
            None => error(StatusCode::NOT_FOUND, &format!("pod {ns}/{name} is not on this node")),
        },
        ["portForward", ns, name] => match lookup(ns, name) {
            Some(e) => port_forward(req, e, name, &query),
            None => error(StatusCode::NOT_FOUND, &format!("pod {ns}/{name} is not on this node")),
        },
        _ => error(StatusCode::NOT_FOUND, &format!("no such path {path}")),
    }
}

fn has_container(pod: &Pod, name: &str) -> bool {
    let spec = crate::pod_api::spec(pod);
    let mut names = spec.containers.iter().chain(spec.init_containers.iter().flatten()).map(|c| &c.name);
    names.any(|n| n == name) || spec.ephemeral_containers.iter().flatten().any(|c| c.name == name)
}

/// The answer for a pod whose processes do not run (yet): it is simulated, or still being created.
fn not_started(e: &PodEntry, pod: &str, container: &str, purpose: &str) -> Response<Body> {
    if !e.real {
        return error(StatusCode::BAD_REQUEST, format!("pod {pod} {SIMULATED} {purpose}").trim_end());
    }
    let what =
        if container.is_empty() { format!("pod {pod:?}") } else { format!("container {container:?} in pod {pod:?}") };
    error(StatusCode::BAD_REQUEST, &format!("{what} is waiting to start: ContainerCreating"))
}

fn spdy_only() -> Response<Body> {
    error(
        StatusCode::BAD_REQUEST,
        "uc serves exec and attach over WebSocket (v5.channel.k8s.io and earlier channel.k8s.io versions); this client asked for SPDY/3.1 only. Use kubectl 1.30 or later (without KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false), or a client that speaks the WebSocket protocol",
    )
}

fn exec_or_attach(
    req: Request<Incoming>,
    verb: &str,
    e: PodEntry,
    container: &str,
    query: &[(String, String)],
) -> Response<Body> {
    let pod = e.pod.pod();
    let name = crate::pod_api::name(&pod).to_string();
    if !has_container(&pod, container) {
        return error(StatusCode::BAD_REQUEST, &format!("container {container} is not valid for pod {name}"));
    }
    let Some(procs) = e.procs else {
        return not_started(&e, &name, container, &format!("to {verb}"));
    };
    let Some(target) = procs.exec_target(container) else {
        return error(StatusCode::BAD_REQUEST, &format!("container {container} in pod {name} is not running"));
    };
    if !ws::is_websocket(&req) {
        return spdy_only();
    }
    let Some(protocol) = ws::choose(&ws::offered(&req), exec::PROTOCOLS) else {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("none of the requested subprotocols is supported; supported: {:?}", exec::PROTOCOLS),
        );
    };
    let request = exec::Request::from_query(query);
    if verb == "exec" {
        if request.command.is_empty() {
            return error(StatusCode::BAD_REQUEST, "you must specify at least 1 command");
        }
        return ws::upgrade(req, &protocol.clone(), move |socket| exec::serve(socket, protocol, target, request));
    }
    let dir = procs.container_dir(container);
    let run = procs.current_run(container).unwrap_or(0);
    let containers = &crate::pod_api::spec(&pod).containers;
    let stdin = containers.iter().any(|c| c.name == container && c.stdin == Some(true));
    let fifo = stdin.then(|| dir.stdin_fifo());
    let (procs, name) = (procs.clone(), container.to_string());
    let chosen = protocol.clone();
    ws::upgrade(req, &protocol, move |socket| {
        exec::serve_attach(socket, chosen, dir.log(run), fifo, request, move || procs.current_run(&name) == Some(run))
    })
}

fn port_forward(req: Request<Incoming>, e: PodEntry, name: &str, query: &[(String, String)]) -> Response<Body> {
    if e.procs.is_none() {
        return not_started(&e, name, "", "listening to forward to");
    }
    let uid = e.pod.uid();
    let namespace = (!uid.is_empty() && crate::network::namespace_path(uid).exists()).then(|| uid.to_string());
    let (pod, ip) = (name.to_string(), portforward::Target { ip: e.ip.clone(), namespace });
    if ws::is_websocket(&req) {
        return match ws::choose(&ws::offered(&req), portforward::PROTOCOLS).as_deref() {
            Some("SPDY/3.1+portforward.k8s.io") => ws::upgrade(req, "SPDY/3.1+portforward.k8s.io", move |s| {
                portforward::serve_spdy_over_websocket(s, pod, ip)
            }),
            Some(p) => match portforward::ports(query) {
                Ok(ports) if !ports.is_empty() => {
                    let protocol = p.to_string();
                    ws::upgrade(req, p, move |s| portforward::serve_channels(s, protocol, ports, pod, ip))
                }
                Ok(_) => error(StatusCode::BAD_REQUEST, "query parameter \"port\" is required"),
                Err(e) => error(StatusCode::BAD_REQUEST, &e.to_string()),
            },
            None => error(
                StatusCode::BAD_REQUEST,
                &format!("none of the requested subprotocols is supported; supported: {:?}", portforward::PROTOCOLS),
            ),
        };
    }
    spdy_upgrade(req, pod, ip)
}

/// Port-forwarding by a plain SPDY upgrade (kubectl before 1.31, or with PORT_FORWARD_WEBSOCKETS=false).
fn spdy_upgrade(mut req: Request<Incoming>, pod: String, ip: portforward::Target) -> Response<Body> {
    let upgrade = req.headers().get(header::UPGRADE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !upgrade.eq_ignore_ascii_case("SPDY/3.1") {
        return error(StatusCode::BAD_REQUEST, "port-forward needs a WebSocket or SPDY/3.1 upgrade");
    }
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(io) = on_upgrade.await else { return };
        let (mut r, mut w) = tokio::io::split(TokioIo::new(io));
        let (tx_in, rx_in) = tokio::sync::mpsc::channel::<Bytes>(64);
        let (tx_out, mut rx_out) = tokio::sync::mpsc::channel::<Bytes>(64);
        let reader = tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut buf = vec![0u8; 32 * 1024];
            while let Ok(n) = r.read(&mut buf).await {
                if n == 0 || tx_in.send(Bytes::copy_from_slice(&buf[..n])).await.is_err() {
                    return;
                }
            }
        });
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            while let Some(b) = rx_out.recv().await {
                if w.write_all(&b).await.is_err() {
                    return;
                }
            }
        });
        let _ = portforward::serve_spdy(rx_in, tx_out, pod, ip).await;
        reader.abort();
        let _ = writer.await;
    });
    let mut r = Response::new(empty());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    r.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    r.headers_mut().insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
    r.headers_mut().insert("X-Stream-Protocol-Version", HeaderValue::from_static("portforward.k8s.io"));
    r
}

fn logs(e: PodEntry, container: &str, query: &[(String, String)]) -> Response<Body> {
    let pod = e.pod.pod();
    let name = crate::pod_api::name(&pod).to_string();
    if !has_container(&pod, container) {
        return error(StatusCode::BAD_REQUEST, &format!("container {container} is not valid for pod {name}"));
    }
    let options = match ReadOptions::from_query(query, chrono::Utc::now()) {
        Ok(o) => o,
        Err(m) => return error(StatusCode::BAD_REQUEST, &m.to_string()),
    };
    let flag = |k: &str| query.iter().any(|(n, v)| n == k && (v == "true" || v == "1"));
    let (previous, follow) = (flag("previous"), flag("follow"));
    let Some(procs) = e.procs else {
        // Simulated containers print nothing.
        return if e.real { not_started(&e, &name, container, "") } else { Response::new(empty()) };
    };
    let dir = procs.container_dir(container);
    // A container that has never run yet (being created, its sandbox being set up) has no log to
    // show or follow: a kubelet says it is waiting to start, and kubectl's `logs -f` asks again.
    let never_ran =
        procs.states.lock().get(container).is_some_and(|s| s.running_since.is_none() && s.last_exit.is_none());
    if never_ran && procs.current_run(container).is_none() && !previous {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"),
        );
    }
    let current = procs.current_run(container).or_else(|| dir.state().map(|s| s.run));
    let run = match (current, previous) {
        (Some(n), false) => n,
        (Some(n), true) if n > 0 && dir.log(n - 1).exists() => n - 1,
        (_, true) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("previous terminated container \"{container}\" in pod \"{name}\" not found"),
            );
        }
        (None, false) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"),
            );
        }
    };
    let file = dir.log(run);
    let mut renderer = Renderer::new(options);
    let data = std::fs::read(&file).unwrap_or_default();
    let start = renderer.tail_start(&data);
    let (first, used) = renderer.render(&data[start..]);
    if !follow || previous {
        return text(full(first));
    }
    // Follow: what is there, then what is appended, until this run of the container has ended (or the
    // pod has gone, or limitBytes is reached).
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    let offset = (start + used) as u64;
    let name = container.to_string();
    tokio::spawn(async move {
        if !first.is_empty() && tx.send(Bytes::from(first)).await.is_err() {
            return;
        }
        crate::logs::follow(file, offset, renderer, tx, move || procs.current_run(&name) != Some(run)).await;
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(hyper::body::Frame::data(b)), rx))
    });
    text(BodyExt::boxed(http_body_util::StreamBody::new(stream)))
}

fn text(body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}
