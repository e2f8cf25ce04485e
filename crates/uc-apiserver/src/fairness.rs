//! Fair shares of the API server, as kube-apiserver's API Priority and Fairness gives them: each
//! identity (the user after impersonation) holds at most a few requests at a time; one more waits a
//! moment in its own queue, then gets `429 TooManyRequests` with `Retry-After`. A client that holds its
//! seats open (a trickled body, a flood) stalls only itself. As in kube, `system:masters` (the `exempt`
//! priority level), the health and version probes, and long-running requests (watches, logs, exec,
//! attach, port-forward) take no seat.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use uc_api::{Status, StatusDetails};

use crate::error::ApiError;

/// How many requests of one identity are served at a time, how many more may wait, and how long.
#[derive(Clone, Copy, Debug)]
pub struct Shares {
    pub seats: usize,
    pub queue: usize,
    pub wait: Duration,
}

impl Default for Shares {
    fn default() -> Self {
        // kube's global-default level: 600 seats in all, queues of 50; a share per identity.
        Shares { seats: 100, queue: 50, wait: Duration::from_secs(5) }
    }
}

/// Who holds seats now, by identity.
pub struct Fairness {
    shares: Shares,
    flows: Mutex<HashMap<String, Flow>>,
    freed: Notify,
}

#[derive(Default)]
struct Flow {
    serving: usize,
    waiting: usize,
}

/// A seat held until dropped.
pub struct Seat {
    fairness: Arc<Fairness>,
    user: String,
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut flows = self.fairness.flows.lock();
        if let Some(f) = flows.get_mut(&self.user) {
            f.serving -= 1;
            if f.serving == 0 && f.waiting == 0 {
                flows.remove(&self.user);
            }
        }
        drop(flows);
        self.fairness.freed.notify_waiters();
    }
}

/// What a request asks of the flow table at one moment.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Seated,
    Wait,
    Reject,
}

/// The decision for one identity's flow: a seat if one is free, a place in the queue if one is, else
/// refused. `queued` says whether this request already holds a place.
fn step(flow: &Flow, shares: &Shares, queued: bool) -> Step {
    if flow.serving < shares.seats {
        Step::Seated
    } else if queued || flow.waiting < shares.queue {
        Step::Wait
    } else {
        Step::Reject
    }
}

impl Fairness {
    pub fn new(shares: Shares) -> Arc<Fairness> {
        Arc::new(Fairness { shares, flows: Mutex::new(HashMap::new()), freed: Notify::new() })
    }

    /// A seat for `user`, waiting for one at most the queue's time; else kube's 429.
    pub async fn seat(self: &Arc<Self>, user: &str) -> Result<Seat, ApiError> {
        let deadline = tokio::time::Instant::now() + self.shares.wait;
        let mut queued = false;
        loop {
            let freed = self.freed.notified();
            {
                let mut flows = self.flows.lock();
                let flow = flows.entry(user.to_string()).or_default();
                match step(flow, &self.shares, queued) {
                    Step::Seated => {
                        flow.serving += 1;
                        if queued {
                            flow.waiting -= 1;
                        }
                        return Ok(Seat { fairness: self.clone(), user: user.to_string() });
                    }
                    Step::Wait if !queued => {
                        flow.waiting += 1;
                        queued = true;
                    }
                    Step::Wait => {}
                    Step::Reject => return Err(too_many_requests()),
                }
            }
            if tokio::time::timeout_at(deadline, freed).await.is_err() {
                let mut flows = self.flows.lock();
                if let Some(flow) = flows.get_mut(user) {
                    flow.waiting -= 1;
                }
                return Err(too_many_requests());
            }
        }
    }
}

/// kube-apiserver's answer when a priority level's queue is full or its wait is over.
pub fn too_many_requests() -> ApiError {
    let mut status = Status::failure(429, "TooManyRequests", "Too many requests, please try again later.");
    status.details = Some(StatusDetails { retry_after_seconds: Some(1), ..Default::default() });
    ApiError::new(status)
}

/// Whether a request takes no seat: long-running ones (watches, and what goes on to the node), and
/// the probes kube exempts.
pub fn exempt_request(path: &str, watch: bool) -> bool {
    watch
        || path.contains("/watch/")
        || matches!(path, "/healthz" | "/livez" | "/readyz" | "/version")
        || path.starts_with("/healthz/")
        || path.starts_with("/livez/")
        || path.starts_with("/readyz/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(seats: usize, queue: usize, wait_ms: u64) -> Shares {
        Shares { seats, queue, wait: Duration::from_millis(wait_ms) }
    }

    #[test]
    fn a_flow_seats_then_queues_then_refuses() {
        let s = shares(2, 1, 0);
        assert_eq!(step(&Flow { serving: 1, waiting: 0 }, &s, false), Step::Seated);
        assert_eq!(step(&Flow { serving: 2, waiting: 0 }, &s, false), Step::Wait);
        assert_eq!(step(&Flow { serving: 2, waiting: 1 }, &s, false), Step::Reject, "the queue is full");
        assert_eq!(step(&Flow { serving: 2, waiting: 1 }, &s, true), Step::Wait, "one already queued waits on");
    }

    #[tokio::test]
    async fn one_identity_waits_for_its_own_seats_and_no_one_else_does() {
        let f = Fairness::new(shares(2, 1, 200));
        let a1 = f.seat("a").await.unwrap();
        let _a2 = f.seat("a").await.unwrap();
        // b is not held up by a's full share.
        let _b = f.seat("b").await.unwrap();
        // a's third waits and is seated when a seat is freed.
        let waiter = tokio::spawn({
            let f = f.clone();
            async move { f.seat("a").await.map(|_| ()) }
        });
        while f.flows.lock().get("a").is_none_or(|fl| fl.waiting == 0) {
            tokio::task::yield_now().await;
        }
        assert!(!waiter.is_finished(), "a full share waits");
        drop(a1);
        waiter.await.unwrap().expect("seated once a seat was freed");
    }

    #[tokio::test]
    async fn a_full_share_and_queue_answer_429_with_retry_after() {
        let f = Fairness::new(shares(1, 1, 50));
        let _held = f.seat("a").await.unwrap();
        let queued = tokio::spawn({
            let f = f.clone();
            async move { f.seat("a").await.err().map(|e| e.code()) }
        });
        // The queue holds one: the next is refused at once.
        let mut refused = None;
        for _ in 0..100 {
            if f.flows.lock().get("a").is_some_and(|fl| fl.waiting == 1) {
                refused = f.seat("a").await.err();
                break;
            }
            tokio::task::yield_now().await;
        }
        let refused = refused.expect("the queue filled");
        assert_eq!(refused.code(), 429);
        assert_eq!(refused.0.reason, "TooManyRequests");
        assert_eq!(refused.0.details.as_ref().and_then(|d| d.retry_after_seconds), Some(1));
        assert_eq!(queued.await.unwrap(), Some(429), "the queued one waited its time out");
        assert_eq!(f.flows.lock().get("a").map(|fl| fl.waiting), Some(0), "the queue is left empty");
    }

    #[test]
    fn long_running_requests_and_probes_take_no_seat() {
        assert!(exempt_request("/api/v1/pods", true));
        assert!(exempt_request("/api/v1/watch/pods", false));
        assert!(exempt_request("/readyz", false));
        assert!(!exempt_request("/api/v1/namespaces/a/configmaps", false));
    }
}
