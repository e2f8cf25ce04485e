//! A pod's Ready, Status and Restarts cells as kube-apiserver's `printPod` works them out: init
//! containers first (`Init:1/2`, `Init:CrashLoopBackOff`), then the containers from the last
//! (`CrashLoopBackOff`, `Completed`, `ExitCode:2`), `Terminating` for a pod being deleted, and restarts
//! with how long ago the last one was (`3 (5m ago)`).

use chrono::{DateTime, Utc};
use serde_json::Value;
use uc_api::Pointer;

use uc_api::meta::is_deleting;

use super::age::human_duration;
use super::cells::condition_true;

/// What a pod's row says of it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct PodSummary {
    /// `ready/total`.
    pub ready: String,
    /// The Status column.
    pub reason: String,
    /// The Restarts column.
    pub restarts: String,
}

/// One container status, as the printer reads it.
struct Status<'a>(&'a Value);

impl Status<'_> {
    fn name(&self) -> &str {
        self.0.get("name").and_then(Value::as_str).unwrap_or_default()
    }
    fn restarts(&self) -> i64 {
        self.0.get("restartCount").and_then(Value::as_i64).unwrap_or(0)
    }
    fn last_finished(&self) -> Option<DateTime<Utc>> {
        let at = self.0.at("/lastState/terminated/finishedAt")?.as_str()?;
        DateTime::parse_from_rfc3339(at).ok().map(|t| t.with_timezone(&Utc))
    }
    fn waiting_reason(&self) -> Option<&str> {
        self.0.at("/state/waiting/reason").and_then(Value::as_str).filter(|r| !r.is_empty())
    }
    fn terminated(&self) -> Option<&Value> {
        self.0.at("/state/terminated")
    }
    fn is(&self, field: &str) -> bool {
        self.0.get(field).and_then(Value::as_bool) == Some(true)
    }
}

/// Why a terminated container ended, in the printer's words (`Error`, `Signal:9`, `ExitCode:2`).
fn terminated_reason(t: &Value) -> String {
    match (t.get("reason").and_then(Value::as_str).filter(|r| !r.is_empty()), t.get("signal").and_then(Value::as_i64)) {
        (Some(reason), _) => reason.to_string(),
        (None, Some(signal)) if signal != 0 => format!("Signal:{signal}"),
        (None, _) => format!("ExitCode:{}", t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)),
    }
}

/// The reason the pod itself gives, else its phase; `SchedulingGated` while its scheduling is gated.
fn own_reason(pod: &Value) -> String {
    let conditions = pod.at("/status/conditions").and_then(Value::as_array).into_iter().flatten();
    let gated = conditions.into_iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some("PodScheduled")
            && c.get("reason").and_then(Value::as_str) == Some("SchedulingGated")
    });
    let own = pod.at("/status/reason").and_then(Value::as_str).filter(|r| !r.is_empty());
    let phase = || pod.at("/status/phase").and_then(Value::as_str).unwrap_or_default();
    if gated { "SchedulingGated" } else { own.unwrap_or_else(phase) }.to_string()
}

/// What a pod being deleted shows instead: `Unknown` when its node was lost, else `Terminating` until
/// its phase is final.
fn deleting_reason(pod: &Value) -> Option<&'static str> {
    if !is_deleting(pod) {
        return None;
    }
    let phase = pod.at("/status/phase").and_then(Value::as_str).unwrap_or_default();
    match (pod.at("/status/reason").and_then(Value::as_str), phase) {
        (Some("NodeLost"), _) => Some("Unknown"),
        (_, "Succeeded" | "Failed") => None,
        _ => Some("Terminating"),
    }
}

/// A pod's summary as of `now`.
pub(super) fn summary(pod: &Value, now: DateTime<Utc>) -> PodSummary {
    let list = |p: &str| pod.at(p).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let init_specs = list("/spec/initContainers");
    let restartable = |name: &str| {
        init_specs.iter().any(|c| {
            c.get("name").and_then(Value::as_str) == Some(name)
                && c.get("restartPolicy").and_then(Value::as_str) == Some("Always")
        })
    };
    let sidecars =
        init_specs.iter().filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always")).count();
    let total = list("/spec/containers").len() + sidecars;
    let mut reason = own_reason(pod);
    let (mut ready, mut restarts, mut last) = (0usize, 0i64, None::<DateTime<Utc>>);
    let (mut sidecar_restarts, mut sidecar_last) = (0i64, None::<DateTime<Utc>>);
    let mut initializing = false;
    for (i, status) in list("/status/initContainerStatuses").iter().map(Status).enumerate() {
        restarts += status.restarts();
        last = last.max(status.last_finished());
        let sidecar = restartable(status.name());
        if sidecar {
            sidecar_restarts += status.restarts();
            sidecar_last = sidecar_last.max(status.last_finished());
        }
        let terminated = status.terminated();
        let exit = terminated.and_then(|t| t.get("exitCode")).and_then(Value::as_i64).unwrap_or(0);
        match (terminated, status.waiting_reason()) {
            (Some(_), _) if exit == 0 => continue,
            _ if sidecar && status.is("started") => {
                ready += usize::from(status.is("ready"));
                continue;
            }
            (Some(t), _) => reason = format!("Init:{}", terminated_reason(t)),
            (None, Some(w)) if w != "PodInitializing" => reason = format!("Init:{w}"),
            _ => reason = format!("Init:{i}/{}", init_specs.len()),
        }
        initializing = true;
        break;
    }
    if !initializing || condition_true(pod, "Initialized") {
        (restarts, last) = (sidecar_restarts, sidecar_last);
        let mut running = false;
        for status in list("/status/containerStatuses").iter().rev().map(Status) {
            restarts += status.restarts();
            last = last.max(status.last_finished());
            match (status.waiting_reason(), status.terminated()) {
                (Some(w), _) => reason = w.to_string(),
                (None, Some(t)) => reason = terminated_reason(t),
                (None, None) if status.is("ready") && status.0.at("/state/running").is_some() => {
                    running = true;
                    ready += 1;
                }
                _ => {}
            }
        }
        if reason == "Completed" && running {
            reason = if condition_true(pod, "Ready") { "Running" } else { "NotReady" }.into();
        }
    }
    let reason = deleting_reason(pod).map_or(reason, str::to_string);
    let restarts = match last {
        Some(at) if restarts != 0 => format!("{restarts} ({} ago)", human_duration(now - at)),
        _ => restarts.to_string(),
    };
    PodSummary { ready: format!("{ready}/{total}"), reason, restarts }
}

/// The Readiness Gates column: how many of the pod's gates are True, `<none>` without gates.
pub(super) fn readiness_gates(pod: &Value) -> Value {
    let gates = pod.at("/spec/readinessGates").and_then(Value::as_array).filter(|g| !g.is_empty());
    let Some(gates) = gates else { return Value::String("<none>".into()) };
    let met = gates
        .iter()
        .filter_map(|g| g.get("conditionType").and_then(Value::as_str))
        .filter(|kind| condition_true(pod, kind))
        .count();
    Value::String(format!("{met}/{}", gates.len()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T01:00:00Z").unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_crashing_container_and_its_last_restart_show() {
        let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-01-01T00:55:00Z"}}}]}});
        let s = summary(&pod, now());
        assert_eq!(
            (s.ready.as_str(), s.reason.as_str(), s.restarts.as_str()),
            ("1/2", "CrashLoopBackOff", "3 (5m ago)")
        );
    }

    #[test]
    fn init_containers_show_their_progress_or_their_failure() {
        let spec = json!({"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "a"}]});
        let with =
            |statuses: Value| json!({"spec": spec, "status": {"phase": "Pending", "initContainerStatuses": statuses}});
        let running = with(
            json!([{"name": "i1", "state": {"terminated": {"exitCode": 0}}}, {"name": "i2", "state": {"running": {}}}]),
        );
        assert_eq!(summary(&running, now()).reason, "Init:1/2");
        let failed = with(json!([{"name": "i1", "state": {"terminated": {"exitCode": 2}}}]));
        assert_eq!(summary(&failed, now()).reason, "Init:ExitCode:2");
        let backoff = with(json!([{"name": "i1", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]));
        assert_eq!(summary(&backoff, now()).reason, "Init:CrashLoopBackOff");
    }

    #[test]
    fn a_sidecar_counts_among_the_containers_and_a_deleted_pod_terminates() {
        let pod = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:59:00Z"},
            "spec": {"initContainers": [{"name": "proxy", "restartPolicy": "Always"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}],
                "initContainerStatuses": [{"name": "proxy", "started": true, "ready": true, "state": {"running": {}}}],
                "containerStatuses": [{"name": "a", "ready": true, "state": {"running": {}}}]}});
        let s = summary(&pod, now());
        assert_eq!((s.ready.as_str(), s.reason.as_str(), s.restarts.as_str()), ("2/2", "Terminating", "0"));
    }

    #[test]
    fn a_finished_pod_shows_completed_or_why_it_failed() {
        let done = json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Succeeded",
            "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
        assert_eq!(summary(&done, now()).reason, "Completed");
        let killed = json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Failed",
            "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 137, "signal": 9}}}]}});
        assert_eq!(summary(&killed, now()).reason, "Signal:9");
        let gated = json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}});
        assert_eq!(summary(&gated, now()).reason, "SchedulingGated");
        let gates = json!({"spec": {"readinessGates": [{"conditionType": "x"}, {"conditionType": "y"}]},
            "status": {"conditions": [{"type": "x", "status": "True"}]}});
        assert_eq!(readiness_gates(&gates), json!("1/2"));
    }
}
