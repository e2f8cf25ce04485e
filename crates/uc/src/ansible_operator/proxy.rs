//! The API proxy an Ansible run talks to, as the SDK's (`internal/ansible/proxy`): requests pass to the
//! API server with the operator's credentials; an object created on behalf of a custom resource (the
//! kubeconfig's user name carries it) gets the resource as its owner; every object the run reads or
//! writes that the resource owns is remembered as a dependent, so a change to it reconciles the
//! resource again. Unlike the SDK's (anyone on localhost may use it), the proxy serves only requests
//! with its per-process token, which only runs' kubeconfigs hold.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use parking_lot::Mutex;
use serde_json::Value;
use uc_ansible::owner::Owner;
use uc_ansible::request::{self, Target};

type Body = UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// The path `osdk_metric` posts to (and the proxy answers with its metrics).
pub const METRICS_PATH: &str = "/uc/osdk-metrics";

/// An object a custom resource's runs made or read that it owns.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dependent {
    pub api_version: String,
    pub kind: String,
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

/// The running proxy.
pub struct Proxy {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The password a run's kubeconfig carries.
    pub token: String,
    client: kube::Client,
    dependents: Mutex<HashMap<String, BTreeSet<Dependent>>>,
    metrics: Metrics,
}

/// The playbooks' metrics, shared by the proxy (which `osdk_metric` posts to) and the engine's
/// `/metrics` (which shows them).
pub type Metrics = Arc<Mutex<uc_ansible::metrics::Registry>>;

fn whole(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).map_err(|e| match e {}).boxed_unsync());
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

/// A Kubernetes `Status` answer.
fn status(code: StatusCode, reason: &str, message: &str) -> Response<Body> {
    let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
        "reason": reason, "code": code.as_u16()});
    whole(code, "application/json", body.to_string())
}

/// The user name and password of a Basic `Authorization` header.
fn basic_auth(headers: &http::HeaderMap) -> Option<(String, String)> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(v.trim()).ok()?;
    let (user, pass) = std::str::from_utf8(&decoded).ok()?.split_once(':')?;
    Some((user.to_string(), pass.to_string()))
}

/// Kinds that are requests rather than objects (reviews): nothing to own.
fn virtual_resource(t: &Target) -> bool {
    matches!(t.group(), "authorization.k8s.io" | "authentication.k8s.io") || t.resource.ends_with("reviews")
}

impl Proxy {
    /// Listens on a loopback port and serves until the process ends.
    pub async fn start(client: kube::Client, metrics: Metrics) -> anyhow::Result<Arc<Proxy>> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let token: String = {
            use rand::Rng as _;
            let bytes: [u8; 24] = rand::rng().random();
            bytes.iter().map(|b| format!("{b:02x}")).collect()
        };
        let proxy =
            Arc::new(Proxy { url: format!("http://{addr}"), token, client, dependents: Mutex::default(), metrics });
        let p = proxy.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let p = p.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let p = p.clone();
                        async move { Ok::<_, std::convert::Infallible>(p.serve(req).await) }
                    });
                    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    if let Err(e) = builder.serve_connection(TokioIo::new(stream), service).await {
                        tracing::debug!(error = %e, "ansible proxy connection ended");
                    }
                });
            }
        });
        Ok(proxy)
    }

    /// The dependents remembered for the custom resource `uid`.
    pub fn dependents_of(&self, uid: &str) -> BTreeSet<Dependent> {
        self.dependents.lock().get(uid).cloned().unwrap_or_default()
    }

    /// Forgets a custom resource that is gone.
    pub fn forget(&self, uid: &str) {
        self.dependents.lock().remove(uid);
    }

    async fn serve(&self, req: Request<Incoming>) -> Response<Body> {
        let Some((user, password)) = basic_auth(req.headers()).filter(|(_, p)| *p == self.token) else {
            return status(StatusCode::UNAUTHORIZED, "Unauthorized", "the ansible proxy serves only uc's runs");
        };
        let (parts, body) = req.into_parts();
        let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
            return status(StatusCode::BAD_REQUEST, "BadRequest", "unreadable request body");
        };
        drop(password);
        if parts.uri.path() == METRICS_PATH {
            return self.metric(&parts.method, &body);
        }
        let owner = Owner::decode(&user);
        let target = request::target(parts.uri.path());
        let mut body = body.to_vec();
        if parts.method == Method::POST
            && let (Some(owner), Some(t)) = (&owner, &target)
            && t.name.is_empty()
            && !virtual_resource(t)
            && let Ok(mut object) = serde_json::from_slice::<Value>(&body)
        {
            let ns = match t.namespace.as_str() {
                "" => object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default().to_string(),
                ns => ns.to_string(),
            };
            owner.inject(&mut object, &ns);
            body = serde_json::to_vec(&object).unwrap_or(body);
        }
        let path = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let mut upstream = Request::builder().method(parts.method.clone()).uri(path);
        for (name, value) in &parts.headers {
            if ![header::AUTHORIZATION, header::HOST, header::CONTENT_LENGTH, header::CONNECTION].contains(name) {
                upstream = upstream.header(name, value);
            }
        }
        let Ok(upstream) = upstream.body(kube::client::Body::from(body)) else {
            return status(StatusCode::BAD_REQUEST, "BadRequest", "a request the proxy cannot pass on");
        };
        let resp = match self.client.send(upstream).await {
            Ok(r) => r,
            Err(e) => return status(StatusCode::BAD_GATEWAY, "ServiceUnavailable", &format!("the API server: {e}")),
        };
        let (rparts, rbody) = resp.into_parts();
        let watching = parts.uri.query().is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
        let body: Body = match (&owner, &target) {
            (Some(owner), Some(t)) if !watching && rparts.status.is_success() => {
                let Ok(bytes) = rbody.collect().await.map(|b| b.to_bytes()) else {
                    return status(StatusCode::BAD_GATEWAY, "ServiceUnavailable", "the API server's answer broke off");
                };
                self.remember(owner, t, &bytes);
                Full::new(bytes).map_err(|e| match e {}).boxed_unsync()
            }
            _ => rbody.map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>).boxed_unsync(),
        };
        let mut r = Response::new(body);
        *r.status_mut() = rparts.status;
        for name in [header::CONTENT_TYPE, header::CONTENT_LENGTH, header::WARNING] {
            for v in rparts.headers.get_all(&name) {
                r.headers_mut().append(name.clone(), v.clone());
            }
        }
        r
    }

    /// Remembers the object of an answer if the owner owns it.
    fn remember(&self, owner: &Owner, t: &Target, answer: &[u8]) {
        let Ok(object) = serde_json::from_slice::<Value>(answer) else { return };
        if object.get("kind").and_then(Value::as_str).is_some_and(|k| k.ends_with("List") || k == "Status")
            || !owner.owns(&object)
        {
            return;
        }
        let s = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
        let d = Dependent {
            api_version: match s("/apiVersion") {
                v if v.is_empty() => t.api_version.clone(),
                v => v,
            },
            kind: s("/kind"),
            resource: t.resource.clone(),
            namespace: s("/metadata/namespace"),
            name: s("/metadata/name"),
        };
        self.dependents.lock().entry(owner.uid.clone()).or_default().insert(d);
    }

    /// `osdk_metric`'s posts, and the metrics as Prometheus text.
    fn metric(&self, method: &Method, body: &[u8]) -> Response<Body> {
        if *method == Method::GET {
            return whole(StatusCode::OK, "text/plain; version=0.0.4", self.metrics.lock().encode());
        }
        let applied = serde_json::from_slice::<uc_ansible::metrics::Post>(body)
            .map_err(|e| e.to_string())
            .and_then(|v| self.metrics.lock().apply(&v, now_seconds()).map_err(String::from));
        match applied {
            Ok(()) => whole(StatusCode::OK, "application/json", "{}"),
            Err(e) => whole(StatusCode::BAD_REQUEST, "text/plain", e),
        }
    }
}

fn now_seconds() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// The playbooks' metrics (`osdk_metric`) at the engine's `/metrics`, with the engine's `uc_` prefix
/// (OpenMetrics: a counter's sample ends in `_total`; a summary, a type the encoder lacks, is a
/// histogram with only its `+Inf` bucket).
#[derive(Debug)]
pub struct PlaybookMetrics(pub Metrics);

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("url", &self.url).finish_non_exhaustive()
    }
}

/// The encoder's buckets (each its own count, `+Inf` last) of cumulative ones.
fn per_bucket(cumulative: &[(f64, u64)], count: u64) -> Vec<(f64, u64)> {
    let mut below = 0;
    let mut out: Vec<(f64, u64)> = cumulative
        .iter()
        .map(|&(le, c)| {
            let own = c.saturating_sub(below);
            below = c;
            (le, own)
        })
        .collect();
    out.push((f64::INFINITY, count.saturating_sub(below)));
    out
}

impl prometheus_client::collector::Collector for PlaybookMetrics {
    fn encode(&self, mut encoder: prometheus_client::encoding::DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use prometheus_client::metrics::MetricType;
        use uc_ansible::metrics::Sample;
        let no_labels: Option<&prometheus_client::metrics::exemplar::Exemplar<Vec<(String, String)>, f64>> = None;
        for (name, help, sample) in self.0.lock().samples() {
            let kind = match &sample {
                Sample::Counter(_) => MetricType::Counter,
                Sample::Gauge(_) => MetricType::Gauge,
                Sample::Histogram(..) | Sample::Summary(..) => MetricType::Histogram,
            };
            let mut m = encoder.encode_descriptor(&name, &help, None, kind)?;
            match sample {
                Sample::Counter(v) => m.encode_counter(&v, no_labels)?,
                Sample::Gauge(v) => m.encode_gauge(&v)?,
                Sample::Histogram(cumulative, sum, count) => {
                    let buckets = per_bucket(&cumulative, count);
                    m.encode_histogram::<Vec<(String, String)>>(sum, count, &buckets, None)?
                }
                Sample::Summary(sum, count) => {
                    m.encode_histogram::<Vec<(String, String)>>(sum, count, &[(f64::INFINITY, count)], None)?
                }
            }
        }
        let registry = self.0.lock();
        let results = registry.run_results();
        if !results.is_empty() {
            let mut m = encoder.encode_descriptor(
                "ansible_operator_reconcile_result",
                "Gauge of reconciles and their results.",
                None,
                MetricType::Gauge,
            )?;
            for (gvk, result, n) in results {
                let labels = vec![("GVK".to_string(), gvk), ("result".to_string(), result)];
                m.encode_family(&labels)?.encode_gauge(&(n as i64))?;
            }
        }
        let durations = registry.run_durations();
        if !durations.is_empty() {
            let mut m = encoder.encode_descriptor(
                "ansible_operator_reconciles",
                "How long in seconds a reconcile takes.",
                None,
                MetricType::Histogram,
            )?;
            for (gvk, (cumulative, sum, count)) in durations {
                let labels = vec![("GVK".to_string(), gvk)];
                let buckets = per_bucket(&cumulative, count);
                m.encode_family(&labels)?.encode_histogram::<Vec<(String, String)>>(sum, count, &buckets, None)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_read_as_the_sdks_proxy_reads_them() {
        let mut h = http::HeaderMap::new();
        h.insert(header::AUTHORIZATION, "Basic dXNlcjpwYXNz".parse().unwrap());
        assert_eq!(basic_auth(&h), Some(("user".into(), "pass".into())));
        h.insert(header::AUTHORIZATION, "Bearer x".parse().unwrap());
        assert_eq!(basic_auth(&h), None);
        let review = request::target("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews").unwrap();
        assert!(virtual_resource(&review));
        assert!(!virtual_resource(&request::target("/apis/apps/v1/namespaces/n/deployments").unwrap()));
        assert_eq!(per_bucket(&[(1.0, 1), (2.0, 3)], 4), vec![(1.0, 1), (2.0, 2), (f64::INFINITY, 1)]);
    }
}
