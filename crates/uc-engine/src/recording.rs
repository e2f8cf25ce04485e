//! Recording what hooks see: a controller annotated `universalcontroller.njuics.cn/record-hooks: "N"`
//! keeps its last N sync and finalize calls — the request and the answer exactly as they went over the
//! wire, Secrets' values redacted — in memory. The engine serves them at `/debug/hooks/<controller>`
//! beside its metrics; `uc hook show` prints them and `uc hook record` saves them as test fixtures.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use uc_api::Pointer;

/// The annotation that switches recording on (the number of calls kept; absent or 0: off).
pub const RECORD_ANNOTATION: &str = "universalcontroller.njuics.cn/record-hooks";

/// The most calls a controller keeps.
pub const MAX_RECORDS: usize = 100;

/// What replaces a Secret's values in a record.
pub const REDACTED: &str = "<redacted>";

/// How many calls a controller object asks to keep (its annotation, at most [`MAX_RECORDS`]).
pub fn capacity_of(controller: &Value) -> usize {
    controller
        .at("/metadata/annotations")
        .and_then(|a| a.get(RECORD_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|n| n.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_RECORDS)
}

/// Replaces the values of every Secret in `v` (wherever it appears: children, related objects,
/// answers) with [`REDACTED`].
pub fn redact(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("kind").and_then(Value::as_str) == Some("Secret") {
                for field in ["data", "stringData"] {
                    if let Some(Value::Object(data)) = m.get_mut(field) {
                        for value in data.values_mut() {
                            *value = Value::String(REDACTED.into());
                        }
                    }
                }
            }
            for child in m.values_mut() {
                redact(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// Why a recorded call has no answer, in the words the engine logged.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct CallFailed(pub String);

/// One hook call as it went over the wire.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    /// The request.
    pub request: Value,
    /// The answer, or why there was none.
    pub answer: Result<Value, CallFailed>,
}

/// A controller's last calls.
#[derive(Default)]
pub struct HookRecorder {
    capacity: AtomicUsize,
    records: Mutex<VecDeque<Value>>,
}

impl HookRecorder {
    /// Whether calls are recorded.
    pub fn enabled(&self) -> bool {
        self.capacity.load(Ordering::Relaxed) > 0
    }

    /// Keeps the last `n` calls from now on (0: none, and forgets what was kept).
    pub fn set_capacity(&self, n: usize) {
        self.capacity.store(n.min(MAX_RECORDS), Ordering::Relaxed);
        let mut records = self.records.lock();
        while records.len() > n {
            records.pop_front();
        }
    }

    /// Records a call of `hook` for the parent `namespace/name`.
    pub fn record(&self, hook: &str, parent: &(String, String), exchange: Exchange, took: Duration) {
        let capacity = self.capacity.load(Ordering::Relaxed);
        if capacity == 0 {
            return;
        }
        let Exchange { mut request, answer } = exchange;
        redact(&mut request);
        let who = if parent.0.is_empty() { parent.1.clone() } else { format!("{}/{}", parent.0, parent.1) };
        let mut record = json!({
            "time": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "hook": hook, "parent": who, "durationSeconds": took.as_secs_f64(), "request": request,
        });
        match answer {
            Ok(mut a) => {
                redact(&mut a);
                record["response"] = a;
            }
            Err(e) => record["error"] = Value::String(e.0),
        }
        let mut records = self.records.lock();
        records.push_back(record);
        while records.len() > capacity {
            records.pop_front();
        }
    }

    /// The kept calls, oldest first.
    pub fn snapshot(&self) -> Vec<Value> {
        self.records.lock().iter().cloned().collect()
    }
}

/// Every controller's recorder, by controller name.
#[derive(Default)]
pub struct Recordings {
    by_controller: Mutex<BTreeMap<String, Arc<HookRecorder>>>,
}

impl Recordings {
    /// The recorder of a controller, made on first use.
    pub fn of(&self, controller: &str) -> Arc<HookRecorder> {
        self.by_controller.lock().entry(controller.to_string()).or_default().clone()
    }

    /// Forgets a controller's records (it stopped).
    pub fn remove(&self, controller: &str) {
        self.by_controller.lock().remove(controller);
    }

    /// A controller's kept calls, if it records them.
    pub fn get(&self, controller: &str) -> Option<Vec<Value>> {
        self.by_controller.lock().get(controller).filter(|r| r.enabled()).map(|r| r.snapshot())
    }

    /// The controllers that record calls, and how many each keeps.
    pub fn list(&self) -> Value {
        let map = self.by_controller.lock();
        Value::Object(
            map.iter()
                .filter(|(_, r)| r.enabled())
                .map(|(n, r)| (n.clone(), json!(r.capacity.load(Ordering::Relaxed))))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> (String, String) {
        ("ns".into(), "p".into())
    }

    #[test]
    fn the_annotation_switches_recording() {
        let uc = |v: &str| json!({"metadata": {"annotations": {RECORD_ANNOTATION: v}}});
        assert_eq!(capacity_of(&uc("5")), 5);
        assert_eq!(capacity_of(&uc("100000")), MAX_RECORDS);
        assert_eq!(capacity_of(&uc("many")), 0);
        assert_eq!(capacity_of(&json!({"metadata": {}})), 0);
    }

    #[test]
    fn the_last_n_calls_are_kept_with_secrets_redacted() {
        let r = HookRecorder::default();
        let call = |i: i64| Exchange { request: json!({"i": i}), answer: Ok(json!({"children": []})) };
        r.record("sync", &key(), call(0), Duration::ZERO);
        assert!(r.snapshot().is_empty(), "off until switched on");
        r.set_capacity(2);
        for i in 1..=3 {
            r.record("sync", &key(), call(i), Duration::from_millis(5));
        }
        let kept = r.snapshot();
        assert_eq!(kept.iter().map(|x| x["request"]["i"].clone()).collect::<Vec<_>>(), [json!(2), json!(3)]);
        assert_eq!((kept[0]["parent"].as_str(), kept[0]["hook"].as_str()), (Some("ns/p"), Some("sync")));
        let secret =
            json!({"children": {"Secret.v1": {"s": {"kind": "Secret", "data": {"password": "aHVudGVyMg=="}}}}});
        let answer = json!({"children": [{"kind": "Secret", "stringData": {"token": "t0ken"}}, {"kind": "ConfigMap", "data": {"a": "b"}}]});
        r.record("finalize", &key(), Exchange { request: secret, answer: Ok(answer) }, Duration::ZERO);
        let last = r.snapshot().pop().unwrap();
        assert_eq!(last["request"]["children"]["Secret.v1"]["s"]["data"]["password"], REDACTED);
        assert_eq!(last["response"]["children"][0]["stringData"]["token"], REDACTED);
        assert_eq!(last["response"]["children"][1]["data"]["a"], "b", "only Secrets");
        r.record(
            "sync",
            &key(),
            Exchange { request: json!({}), answer: Err(CallFailed("HTTP 500".into())) },
            Duration::ZERO,
        );
        assert_eq!(r.snapshot().pop().unwrap()["error"], "HTTP 500");
        r.set_capacity(0);
        assert!(r.snapshot().is_empty() && !r.enabled());
    }
}
