//! How a watch's failures (or a controller's failed starts) reach the log: routine ones quietly, lasting ones once.
//!
//! A watch fails routinely — its resourceVersion compacted away (410 Gone: kube-runtime's watcher
//! relists, as client-go's reflector does), the API server restarting under it, a resource not served
//! yet while the cluster starts. Those are DEBUG lines. A watch that keeps failing for [`WARN_AFTER`]
//! gets one WARN saying so and what the last error was, and one INFO when it works again.

use std::time::{Duration, Instant};

use kube::runtime::watcher;

/// How long a watch fails before a WARN says so.
pub const WARN_AFTER: Duration = Duration::from_secs(30);

/// What the log says of one event of a watch.
#[derive(Debug, PartialEq, Eq)]
pub enum Say {
    /// Nothing: the watch works.
    Nothing,
    /// A DEBUG line: routine, or not failing long yet.
    Debug,
    /// The one WARN of a failure that lasts.
    Warn,
    /// The INFO line of a watch working again after its WARN.
    Recovered,
}

/// A watch's run of failures.
#[derive(Debug, Default)]
pub struct WatchHealth {
    failing_since: Option<Instant>,
    warned: bool,
}

impl WatchHealth {
    /// A failure at `now`; `routine` ones (410 Gone) never make a run of failures.
    pub fn failed(&mut self, now: Instant, routine: bool) -> Say {
        if routine {
            return Say::Debug;
        }
        let since = *self.failing_since.get_or_insert(now);
        if !self.warned && now.duration_since(since) >= WARN_AFTER {
            self.warned = true;
            return Say::Warn;
        }
        Say::Debug
    }

    /// An event received: the run of failures, if any, is over.
    pub fn worked(&mut self) -> Say {
        self.failing_since = None;
        if std::mem::take(&mut self.warned) { Say::Recovered } else { Say::Nothing }
    }
}

/// Whether a watch error is the routine one: its version compacted (410 Gone), so it relists.
pub fn is_routine(e: &watcher::Error) -> bool {
    matches!(e, watcher::Error::WatchError(s) if s.code == 410)
}

/// Logs one result of the watch of `what` as `health` says.
pub fn report(what: &str, health: &mut WatchHealth, result: Result<(), &watcher::Error>) {
    let e = match result {
        Ok(()) => {
            if health.worked() == Say::Recovered {
                tracing::info!(watch = what, "watch works again");
            }
            return;
        }
        Err(e) => e,
    };
    let error = crate::dynamic::watch_error(e);
    match health.failed(Instant::now(), is_routine(e)) {
        Say::Warn => tracing::warn!(
            watch = what,
            %error,
            "watch failing for {} s; still retrying (errors until it works again are at DEBUG)",
            WARN_AFTER.as_secs()
        ),
        _ if is_routine(e) => tracing::debug!(watch = what, %error, "watch relisting"),
        _ => tracing::debug!(watch = what, %error, "watch error; retrying"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_is_routine_and_never_warns() {
        let mut h = WatchHealth::default();
        let t = Instant::now();
        for s in 0..100 {
            assert_eq!(h.failed(t + Duration::from_secs(s), true), Say::Debug);
        }
        assert_eq!(h.worked(), Say::Nothing);
    }

    #[test]
    fn a_failure_warns_once_when_it_lasts_and_its_end_is_said() {
        let mut h = WatchHealth::default();
        let t = Instant::now();
        assert_eq!(h.failed(t, false), Say::Debug);
        assert_eq!(h.failed(t + WARN_AFTER / 2, false), Say::Debug);
        assert_eq!(h.failed(t + WARN_AFTER, false), Say::Warn);
        assert_eq!(h.failed(t + WARN_AFTER * 3, false), Say::Debug, "one WARN per run of failures");
        assert_eq!(h.worked(), Say::Recovered);
        assert_eq!(h.worked(), Say::Nothing);
        // A new run starts its own clock.
        assert_eq!(h.failed(t + WARN_AFTER * 4, false), Say::Debug);
        assert_eq!(h.failed(t + WARN_AFTER * 4 + Duration::from_secs(1), false), Say::Debug);
    }

    #[test]
    fn short_failures_with_work_between_them_never_warn() {
        let mut h = WatchHealth::default();
        let t = Instant::now();
        for s in 0..20 {
            assert_eq!(h.failed(t + WARN_AFTER / 2 * s, false), Say::Debug);
            assert_eq!(h.worked(), Say::Nothing);
        }
    }

    #[test]
    fn gone_is_the_routine_error() {
        let status = |code| kube::core::Status { code, ..Default::default() };
        assert!(is_routine(&watcher::Error::WatchError(Box::new(status(410)))));
        assert!(!is_routine(&watcher::Error::WatchError(Box::new(status(500)))));
    }
}
