//! What a run's job events (ansible-runner's `artifacts/<ident>/job_events/*.json`) say, as the SDK's
//! reconciler reads them: the `playbook_on_stats` counts for localhost, each failed task not ignored or
//! rescued (its `res.msg`), and a `requeue_after` period asked for by the playbook.

use serde::Deserialize;
use serde_json::{Map, Value};

/// One job event, the fields read.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct JobEvent {
    #[serde(default)]
    pub counter: i64,
    #[serde(default)]
    pub event: String,
    #[serde(default)]
    pub event_data: Map<String, Value>,
    #[serde(default)]
    pub created: String,
}

/// A task that failed the run.
#[derive(Clone, Debug, PartialEq)]
pub struct FailedTask {
    pub task: String,
    pub message: String,
}

/// `ansibleResult` of the status conditions (the SDK's `AnsibleResult`). Read back from a status as
/// `NewAnsibleResultFromMap` reads it: a count that is not an integer is 0.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    pub ok: i64,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    pub changed: i64,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    pub skipped: i64,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    pub failures: i64,
    /// When the run ended, as the SDK prints it (`2006-01-02T15:04:05.99999999+00:00`).
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    pub completion: String,
}

/// What a run came to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// `None`: no `playbook_on_stats` came (the run did not finish: ansible-runner failed to start it).
    pub stats: Option<Stats>,
    pub failed: Vec<FailedTask>,
    /// A `requeue_after` task's period (a Go duration).
    pub requeue_after: Option<String>,
}

impl Outcome {
    pub fn successful(&self) -> bool {
        self.failed.is_empty()
    }

    /// The failure messages joined as the SDK's `Failure` condition shows them.
    pub fn failure_message(&self) -> String {
        self.failed.iter().map(|f| f.message.as_str()).collect::<Vec<_>>().join("\n")
    }
}

/// The SDK's completion time: the runner's `created` with at most 8 fractional digits, trailing zeros
/// dropped, and the `+00:00` offset.
fn completion(created: &str) -> String {
    let base = created.trim_end_matches("+00:00").trim_end_matches('Z');
    let (secs, frac) = base.split_once('.').unwrap_or((base, ""));
    let frac: String = frac.chars().take(8).collect::<String>().trim_end_matches('0').to_string();
    if frac.is_empty() { format!("{secs}+00:00") } else { format!("{secs}.{frac}+00:00") }
}

fn host_count(data: &Map<String, Value>, key: &str) -> i64 {
    data.get(key).and_then(|m| m.get("localhost")).and_then(Value::as_i64).unwrap_or(0)
}

/// A string field of a task's result (`res`).
fn res<'a>(data: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    data.get("res").and_then(|r| r.get(key)).and_then(Value::as_str)
}

/// Whether a failed task's event says the failure is ignored (`ignore_errors`) or rescued.
fn excused(data: &Map<String, Value>) -> bool {
    data.get("ignore_errors").and_then(Value::as_bool) == Some(true)
        || data.get("rescued").and_then(Value::as_object).is_some_and(|m| m.values().any(|v| v.as_i64() == Some(1)))
}

/// The outcome of a run's events (in any order: they are sorted by `counter`).
pub fn outcome(mut events: Vec<JobEvent>) -> Outcome {
    events.sort_by_key(|e| e.counter);
    let mut out = Outcome::default();
    for e in &events {
        let action = e.event_data.get("task_action").and_then(Value::as_str).unwrap_or_default();
        if matches!(action, "operator_sdk.util.requeue_after" | "requeue_after")
            && e.event != "runner_on_failed"
            && let Some(p) = res(&e.event_data, "period")
        {
            out.requeue_after = Some(p.to_string());
        }
        match e.event.as_str() {
            "playbook_on_stats" => {
                out.stats = Some(Stats {
                    ok: host_count(&e.event_data, "ok"),
                    changed: host_count(&e.event_data, "changed"),
                    skipped: host_count(&e.event_data, "skipped"),
                    failures: host_count(&e.event_data, "failures"),
                    completion: completion(&e.created),
                })
            }
            "runner_on_failed" if !excused(&e.event_data) => out.failed.push(FailedTask {
                task: e.event_data.get("task").and_then(Value::as_str).unwrap_or_default().to_string(),
                message: res(&e.event_data, "msg").unwrap_or("unknown playbook failure").to_string(),
            }),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(v: Value) -> JobEvent {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn stats_failures_and_requeue_as_the_sdk_reads_them() {
        let events = vec![
            event(json!({"counter": 9, "event": "playbook_on_stats", "created": "2026-11-28T20:40:12.123450+00:00",
                "event_data": {"ok": {"localhost": 4}, "changed": {"localhost": 1}, "failures": {"localhost": 1}, "skipped": {}}})),
            event(json!({"counter": 3, "event": "runner_on_failed",
                "event_data": {"task": "start memcached", "task_action": "kubernetes.core.k8s", "res": {"msg": "Failed to create object"}}})),
            event(json!({"counter": 4, "event": "runner_on_failed",
                "event_data": {"task": "ignored", "ignore_errors": true, "res": {"msg": "x"}}})),
            event(json!({"counter": 5, "event": "runner_on_failed",
                "event_data": {"task": "rescued", "rescued": {"localhost": 1}, "res": {"msg": "y"}}})),
            event(json!({"counter": 6, "event": "runner_on_failed", "event_data": {"task": "no message"}})),
            event(json!({"counter": 7, "event": "runner_on_ok",
                "event_data": {"task_action": "operator_sdk.util.requeue_after", "res": {"period": "30s"}}})),
        ];
        let o = outcome(events);
        let stats = o.stats.clone().unwrap();
        assert_eq!((stats.ok, stats.changed, stats.failures, stats.skipped), (4, 1, 1, 0));
        assert_eq!(stats.completion, "2026-11-28T20:40:12.12345+00:00");
        assert_eq!(o.failed.len(), 2, "ignored and rescued failures do not count");
        assert_eq!(
            o.failed[0],
            FailedTask { task: "start memcached".into(), message: "Failed to create object".into() }
        );
        assert_eq!(o.failure_message(), "Failed to create object\nunknown playbook failure");
        assert_eq!(o.requeue_after.as_deref(), Some("30s"));
        assert!(!o.successful());
        let none = outcome(vec![]);
        assert!(none.stats.is_none() && none.successful());
        assert_eq!(completion("2026-11-28T20:40:12.000000+00:00"), "2026-11-28T20:40:12+00:00");
    }
}
