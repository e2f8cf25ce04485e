//! The engine under leader election: it stands by until it holds the lease, runs the controllers
//! while it renews it, and stops them — writes fenced first — when it cannot renew before the renew
//! deadline or when asked to stop (then it lets the reconciles under way finish and releases the
//! lease, so a standby takes over at once).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::controller::Ctx;
use crate::guard::Guard;
use crate::leader::Candidate;
use crate::metrics::DRAIN_AT_MOST;
use crate::watch_health::{Say, WARN_AFTER, WatchHealth};

/// Stands by until the lease is acquired (the time the acquiring request was sent), or `None` when asked
/// to stop first.
async fn stand_by(
    candidate: &mut Candidate,
    ctx: &Ctx,
    stopping: &mut watch::Receiver<bool>,
    lease: &str,
) -> Option<Instant> {
    // An API server restarting is routine: its failures are DEBUG lines, one WARN if they last.
    let mut health = WatchHealth::default();
    loop {
        if *stopping.borrow() {
            return None;
        }
        match candidate.try_once().await {
            Ok(answer) => {
                if health.worked() == Say::Recovered {
                    tracing::info!(%lease, "the lease can be read again");
                }
                if let Some(sent) = answer {
                    return Some(sent);
                }
                // Another engine leads: this one is ready as a standby.
                ctx.metrics.set_api_reachable(true);
                ctx.metrics.set_standby(true);
            }
            Err(e) => {
                ctx.metrics.set_api_reachable(false);
                match health.failed(Instant::now(), false) {
                    Say::Warn => {
                        tracing::warn!(%lease, error = %e, "reading the lease has failed for {} s; retrying", WARN_AFTER.as_secs())
                    }
                    _ => tracing::debug!(%lease, error = %e, "reading the lease failed; retrying"),
                }
            }
        }
        tokio::select! {
            _ = candidate.wait_for_change(candidate.next_try_in()) => {}
            _ = stopping.changed() => {}
        }
    }
}

/// Leads when elected — `start` runs the controllers — until `stopping`.
pub(crate) async fn lead(
    mut candidate: Candidate,
    guard: Option<Arc<Guard>>,
    ctx: Arc<Ctx>,
    mut stopping: watch::Receiver<bool>,
    start: impl Fn() -> tokio::task::JoinHandle<()>,
) {
    let settings = candidate.settings().clone();
    let lease = format!("{}/{}", settings.namespace, settings.name);
    let fence = |f: &dyn Fn(&crate::fenced::Fence)| {
        if let Some(g) = &guard {
            f(&g.fence)
        }
    };
    fence(&|f| f.enforce());
    loop {
        ctx.metrics.set_leader(false);
        tracing::info!(identity = %settings.identity, %lease, "standing by for the lease");
        let Some(acquired) = stand_by(&mut candidate, &ctx, &mut stopping, &lease).await else { return };
        let mut renewed = acquired;
        fence(&|f| f.hold_until(acquired + settings.renew_deadline));
        ctx.metrics.set_api_reachable(true);
        ctx.metrics.set_standby(false);
        ctx.metrics.set_leader(true);
        tracing::info!(identity = %settings.identity, %lease, "leading: the controllers run");
        let running = start();
        let stopped = loop {
            tokio::select! {
                _ = tokio::time::sleep(settings.retry_period) => {}
                _ = stopping.wait_for(|s| *s) => break true,
            }
            let left = (renewed + settings.renew_deadline).saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!(%lease, "the lease was not renewed before the renew deadline");
                break false;
            }
            match tokio::time::timeout(
                left.min(settings.retry_period.max(Duration::from_millis(100))),
                candidate.try_once(),
            )
            .await
            {
                Ok(Ok(Some(sent))) => {
                    ctx.metrics.set_api_reachable(true);
                    renewed = sent;
                    fence(&|f| f.hold_until(sent + settings.renew_deadline));
                }
                Ok(Ok(None)) => {
                    tracing::warn!(%lease, "another engine holds the lease");
                    break false;
                }
                Ok(Err(e)) => {
                    ctx.metrics.set_api_reachable(false);
                    // Retried until the renew deadline, past which the lease is given up (a WARN).
                    tracing::info!(%lease, error = %e, "renewing the lease failed; retrying");
                }
                Err(_) => {
                    ctx.metrics.set_api_reachable(false);
                    tracing::info!(%lease, "renewing the lease timed out; retrying");
                }
            }
        };
        // Stop reconciling; a stop lets the reconciles under way finish while the lease still holds.
        running.abort();
        let _ = running.await;
        ctx.metrics.set_ready(false);
        if stopped {
            ctx.metrics.wait_idle(DRAIN_AT_MOST).await;
            fence(&|f| f.close());
            ctx.metrics.set_leader(false);
            match candidate.release().await {
                Ok(()) => tracing::info!(%lease, "lease released"),
                Err(e) => tracing::warn!(%lease, error = %e, "releasing the lease failed; it expires on its own"),
            }
            return;
        }
        fence(&|f| f.close());
        tracing::warn!(identity = %settings.identity, %lease, "lost the lease: writes fenced, controllers stopped");
    }
}
