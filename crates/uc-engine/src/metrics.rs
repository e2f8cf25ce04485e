//! Prometheus metrics of the engine, and the `/metrics`, `/healthz`, `/readyz` endpoint (with
//! `/debug/hooks`, the recorded hook calls of `crate::recording`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::metrics_auth::{self, Reviewer};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HookLabels {
    controller: String,
    hook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    controller: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabels {
    resource: String,
}

/// The engine's metrics.
pub struct Metrics {
    registry: Registry,
    hook_duration: Family<HookLabels, Histogram>,
    hook_errors: Family<HookLabels, Counter>,
    reconciles: Family<ReconcileLabels, Counter>,
    reconcile_duration: Family<ControllerLabels, Histogram>,
    queue_depth: Family<ControllerLabels, Gauge>,
    watches_open: Family<ResourceLabels, Gauge>,
    watches_started: Family<ResourceLabels, Counter>,
    in_flight: Gauge,
    leader: Gauge,
    leader_transitions: Counter,
    ready: AtomicBool,
    /// Whether the API server answered the last time the engine asked (the lease's reads).
    api_reachable: AtomicBool,
    /// Standing by for the lease (ready, though it runs no controllers).
    standby: AtomicBool,
    /// Controllers' recorded hook calls, served at `/debug/hooks`.
    pub recordings: crate::recording::Recordings,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("uc");
        let hook_duration = Family::<HookLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.00001, 2.5, 18))
        });
        let hook_errors = Family::<HookLabels, Counter>::default();
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        let reconcile_duration = Family::<ControllerLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0001, 2.5, 16))
        });
        let queue_depth = Family::<ControllerLabels, Gauge>::default();
        let watches_open = Family::<ResourceLabels, Gauge>::default();
        let watches_started = Family::<ResourceLabels, Counter>::default();
        registry.register("hook_duration_seconds", "Hook call latency", hook_duration.clone());
        registry.register("hook_errors", "Failed hook calls", hook_errors.clone());
        registry.register("reconciles", "Parent reconciles by result", reconciles.clone());
        registry.register(
            "reconcile_duration_seconds",
            "Reconcile latency: hook calls and writes of one parent",
            reconcile_duration.clone(),
        );
        registry.register("queue_depth", "Parents waiting in a controller's work queue", queue_depth.clone());
        registry.register(
            "watches_open",
            "Open watches per resource type (shared by all controllers)",
            watches_open.clone(),
        );
        registry.register("watches_started", "Watches started per resource type", watches_started.clone());
        let in_flight = Gauge::default();
        let leader = Gauge::default();
        let leader_transitions = Counter::default();
        registry.register("reconciles_in_flight", "Reconciles under way", in_flight.clone());
        registry.register(
            "leader",
            "1 while this engine holds the leader lease (or runs without election)",
            leader.clone(),
        );
        registry.register("leader_acquisitions", "Times this engine became the leader", leader_transitions.clone());
        Self {
            registry,
            hook_duration,
            hook_errors,
            reconciles,
            reconcile_duration,
            queue_depth,
            watches_open,
            watches_started,
            in_flight,
            leader,
            leader_transitions,
            ready: AtomicBool::new(false),
            api_reachable: AtomicBool::new(true),
            standby: AtomicBool::new(false),
            recordings: Default::default(),
        }
    }

    /// Records a hook call.
    pub fn hook_call(&self, controller: &str, hook: &str, elapsed: Duration, ok: bool) {
        let l = HookLabels { controller: controller.into(), hook: hook.into() };
        self.hook_duration.get_or_create(&l).observe(elapsed.as_secs_f64());
        // The series exists from the first call (at 0), so that rate() charts it before any error.
        let errors = self.hook_errors.get_or_create(&l);
        if !ok {
            errors.inc();
        }
    }

    /// Records a reconcile.
    pub fn reconcile(&self, controller: &str, result: &str) {
        self.reconciles.get_or_create(&ReconcileLabels { controller: controller.into(), result: result.into() }).inc();
    }

    /// Records how long one reconcile took.
    pub fn reconcile_took(&self, controller: &str, elapsed: Duration) {
        self.reconcile_duration
            .get_or_create(&ControllerLabels { controller: controller.into() })
            .observe(elapsed.as_secs_f64());
    }

    /// Sets a controller's queue depth.
    pub fn set_queue_depth(&self, controller: &str, depth: usize) {
        self.queue_depth.get_or_create(&ControllerLabels { controller: controller.into() }).set(depth as i64);
    }

    /// Forgets a stopped controller's queue.
    pub fn remove_controller(&self, controller: &str) {
        self.queue_depth.remove(&ControllerLabels { controller: controller.into() });
    }

    /// A watch opened.
    pub fn watch_opened(&self, resource: &str) {
        let l = ResourceLabels { resource: resource.into() };
        self.watches_open.get_or_create(&l).inc();
        self.watches_started.get_or_create(&l).inc();
    }

    /// A watch closed.
    pub fn watch_closed(&self, resource: &str) {
        self.watches_open.get_or_create(&ResourceLabels { resource: resource.into() }).dec();
    }

    /// The registry, to add more metrics before the engine starts.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// A reconcile starts; it counts as under way until the returned guard drops.
    pub fn reconcile_started(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// Reconciles under way.
    pub fn in_flight(&self) -> i64 {
        self.in_flight.get()
    }

    /// Waits (up to `at_most`, e.g. `DRAIN_AT_MOST`) until no reconcile is under way.
    pub async fn wait_idle(&self, at_most: Duration) {
        let deadline = std::time::Instant::now() + at_most;
        while self.in_flight() > 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// This engine leads (or not).
    pub fn set_leader(&self, leading: bool) {
        if leading && self.leader.get() == 0 {
            self.leader_transitions.inc();
        }
        self.leader.set(i64::from(leading));
    }

    /// Whether the API server answers.
    pub fn set_api_reachable(&self, reachable: bool) {
        self.api_reachable.store(reachable, Ordering::Release);
    }

    /// Whether this engine stands by for the lease.
    pub fn set_standby(&self, standby: bool) {
        self.standby.store(standby, Ordering::Release);
    }

    /// `/readyz`: the API server answers, and this engine either stands by or has its caches synced.
    pub fn readiness(&self) -> Result<&'static str, &'static str> {
        if !self.api_reachable.load(Ordering::Acquire) {
            Err("the API server is not reachable")
        } else if self.standby.load(Ordering::Acquire) {
            Ok("ok (standing by for the leader lease)")
        } else if self.ready.load(Ordering::Acquire) {
            Ok("ok")
        } else {
            Err("caches not synced")
        }
    }

    /// Marks the engine ready (caches synced) or not.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// A collector shared with its owner (who changes what it reports).
#[derive(Debug)]
pub(crate) struct Shared(pub Arc<dyn prometheus_client::collector::Collector>);

impl prometheus_client::collector::Collector for Shared {
    fn encode(&self, encoder: prometheus_client::encoding::DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }
}

/// How long a stopping engine waits for the reconciles under way to finish their writes.
pub const DRAIN_AT_MOST: Duration = Duration::from_secs(10);

/// A reconcile under way (see `Metrics::reconcile_started`).
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `addr` (with `/debug/hooks`), the first and the last
/// to callers the cluster authorizes (`crate::metrics_auth`); returns the bound address.
pub async fn serve(metrics: Arc<Metrics>, reviewer: Arc<Reviewer>, addr: SocketAddr) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let (metrics, reviewer) = (metrics.clone(), reviewer.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let (metrics, reviewer) = (metrics.clone(), reviewer.clone());
                    async move { Ok::<_, Infallible>(answer(&metrics, &reviewer, &req).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    Ok(bound)
}

async fn answer<B>(metrics: &Metrics, reviewer: &Reviewer, req: &http::Request<B>) -> Response<Full<Bytes>> {
    let path = req.uri().path();
    let refused = if metrics_auth::guarded(path) {
        let token = req.headers().get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let verb = metrics_auth::verb_of(req.method());
        match reviewer.review(token.and_then(uc_api::bearer::token), &verb, path).await {
            Ok(verdict) => verdict.refusal(&verb, path),
            Err(e) => Some((StatusCode::SERVICE_UNAVAILABLE, format!("asking the cluster who the caller is: {e}"))),
        }
    } else {
        None
    };
    let (code, body) = refused.unwrap_or_else(|| match path {
        "/metrics" => (StatusCode::OK, metrics.encode()),
        "/debug/hooks" => (StatusCode::OK, metrics.recordings.list().to_string()),
        _ if path.starts_with("/debug/hooks/") => match metrics.recordings.get(&path["/debug/hooks/".len()..]) {
            Some(records) => (StatusCode::OK, serde_json::Value::from(records).to_string()),
            None => (StatusCode::NOT_FOUND, "no such controller".to_string()),
        },
        "/healthz" | "/livez" => (StatusCode::OK, "ok".to_string()),
        "/readyz" => match metrics.readiness() {
            Ok(m) => (StatusCode::OK, m.to_string()),
            Err(m) => (StatusCode::SERVICE_UNAVAILABLE, m.to_string()),
        },
        _ => (StatusCode::NOT_FOUND, "not found".to_string()),
    });
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = code;
    r
}
