//! What stands between the engine and the API server: a layer on the engine's client that
//!
//! - **fences** writes: while leader election is on, a write (anything but GET/HEAD) goes out only
//!   while this process's lease is known held (`Fence`); a leader paused past its renew deadline —
//!   SIGSTOP, a stalled VM — finds its writes refused the moment it runs again, before it has learnt
//!   that another replica leads;
//! - **rate-limits** requests with a token bucket, as client-go's `--kube-api-qps`/`--kube-api-burst`
//!   do (`TokenBucket`; off unless asked for);
//! - **counts** requests per method and refused writes, for `/metrics`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

pub use crate::fenced::{Fence, NotLeader};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// A token bucket: `qps` tokens a second, at most `burst` saved up (client-go's flowcontrol).
#[derive(Debug, Clone)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(qps: f64, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        Self { qps, burst, tokens: burst, last: now }
    }

    /// Takes a token at `now`: `None` when one was there, else how long until one is.
    pub fn take(&mut self, now: Instant) -> Option<Duration> {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            None
        } else {
            Some(Duration::from_secs_f64((1.0 - self.tokens) / self.qps))
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    method: String,
}

/// The engine client's guard: its fence, its rate limit, its counters. One per process.
#[derive(Debug, Default)]
pub struct Guard {
    /// The write fence (open unless leader election enforces it).
    pub fence: Arc<Fence>,
    bucket: Option<Mutex<TokenBucket>>,
    requests: Family<MethodLabels, Counter>,
    refused: Counter,
}

/// Whether a request writes.
pub fn is_write(method: &http::Method) -> bool {
    !matches!(*method, http::Method::GET | http::Method::HEAD | http::Method::OPTIONS)
}

impl Guard {
    /// A guard limiting requests to `qps` a second with bursts of `burst` (`qps` ≤ 0: no limit).
    pub fn new(qps: f64, burst: u32) -> Arc<Self> {
        let bucket = (qps > 0.0).then(|| Mutex::new(TokenBucket::new(qps, burst, Instant::now())));
        Arc::new(Self { bucket, ..Default::default() })
    }

    /// A client of `config` whose requests pass this guard: reads and watches over ordinary
    /// connections, writes over fenced ones (`crate::fenced`).
    pub fn client(self: &Arc<Self>, config: kube::Config) -> Result<kube::Client, kube::Error> {
        let namespace = config.default_namespace.clone();
        let writes = crate::fenced::client(&config, self.fence.clone())?;
        let reads = kube::Client::try_from(config)?;
        let split = Split { reads, writes, guard: self.clone(), sleep: None };
        Ok(kube::client::ClientBuilder::new(split, namespace).build())
    }

    /// Registers the counters (`uc_client_requests_total{method}`, `uc_client_writes_refused_total`).
    pub fn register(&self, registry: &mut prometheus_client::registry::Registry) {
        registry.register(
            "client_requests",
            "Requests the engine made to the API server, per method",
            self.requests.clone(),
        );
        registry.register(
            "client_writes_refused",
            "Writes the engine did not send because it did not hold the leader lease",
            self.refused.clone(),
        );
    }
}

/// The engine client's service: each request through the rate limit, writes through the fence (here,
/// and again at the socket), to the reading or the writing client.
struct Split {
    reads: kube::Client,
    writes: kube::Client,
    guard: Arc<Guard>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower_service::Service<http::Request<kube::client::Body>> for Split {
    type Response = http::Response<kube::client::Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // The rate limit: no request is taken until a token is there.
        if let Some(bucket) = &self.guard.bucket {
            loop {
                if let Some(sleep) = &mut self.sleep {
                    if sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    self.sleep = None;
                }
                match bucket.lock().take(Instant::now()) {
                    None => break,
                    Some(wait) => self.sleep = Some(Box::pin(tokio::time::sleep(wait))),
                }
            }
        }
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<kube::client::Body>) -> Self::Future {
        let method = req.method().clone();
        let write = is_write(&method);
        let guard = self.guard.clone();
        let client = if write { self.writes.clone() } else { self.reads.clone() };
        Box::pin(async move {
            if write && !guard.fence.open() {
                guard.refused.inc();
                return Err(Box::new(NotLeader) as BoxError);
            }
            guard.requests.get_or_create(&MethodLabels { method: method.as_str().into() }).inc();
            client.send(req).await.map_err(|e| Box::new(e) as BoxError)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_gives_its_burst_then_qps() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(10.0, 3, t0);
        assert_eq!((b.take(t0), b.take(t0), b.take(t0)), (None, None, None));
        let wait = b.take(t0).expect("the burst is spent");
        assert!((wait.as_secs_f64() - 0.1).abs() < 1e-6, "{wait:?}");
        assert_eq!(b.take(t0 + Duration::from_millis(100)), None, "one token after 1/qps");
        // Idle for long: saved up to the burst, no more.
        let later = t0 + Duration::from_secs(100);
        for _ in 0..3 {
            assert_eq!(b.take(later), None);
        }
        assert!(b.take(later).is_some());
    }

    #[test]
    fn writes_are_every_method_but_reads() {
        assert!(!is_write(&http::Method::GET));
        assert!(is_write(&http::Method::PATCH));
        assert!(is_write(&http::Method::DELETE));
    }
}
