//! The status conditions the SDK's Ansible reconciler writes (`markRunning`, `markDone`, `markError`):
//! `Running`, `Successful` and `Failure`, with `ansibleResult` on the condition that reports a run.
//! Other status fields (those a playbook writes with `k8s_status`) are kept as they are.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::events::{Outcome, Stats};

pub const RUNNING: &str = "Running";
pub const SUCCESSFUL: &str = "Successful";
pub const FAILURE: &str = "Failure";
const FAILED_REASON: &str = "Failed";
const RUNNING_MESSAGE: &str = "Running reconciliation";
const AWAITING_MESSAGE: &str = "Awaiting next reconciliation";
const SUCCESSFUL_MESSAGE: &str = "Last reconciliation succeeded";

/// One condition (the SDK's `Condition`), read as `createConditionFromMap` reads it: a field of
/// another type than the SDK's is its default (`Running`, `True`, now, no result, "").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Condition {
    #[serde(rename = "type", default = "running_type", deserialize_with = "lenient_or_running")]
    type_: String,
    #[serde(default = "true_status", deserialize_with = "lenient_or_true")]
    status: String,
    /// Empty when it did not read: [`Status::read`] makes it now.
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    last_transition_time: String,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "uc_api::lenient::or_default")]
    ansible_result: Option<Stats>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    reason: String,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    message: String,
}

fn running_type() -> String {
    RUNNING.into()
}

fn true_status() -> String {
    "True".into()
}

fn lenient_or_running<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(Value::deserialize(d)?).ok().flatten().unwrap_or_else(running_type))
}

fn lenient_or_true<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(Value::deserialize(d)?).ok().flatten().unwrap_or_else(true_status))
}

impl Condition {
    fn new(type_: &str, status: bool, result: Option<Stats>, reason: &str, message: &str, now: &str) -> Self {
        Condition {
            type_: type_.into(),
            status: if status { "True" } else { "False" }.into(),
            last_transition_time: now.into(),
            ansible_result: result,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// A status: its conditions and every other field.
struct Status {
    conditions: Vec<Condition>,
    custom: Map<String, Value>,
}

impl Status {
    fn read(status: Option<&Value>, now: &str) -> Self {
        let mut custom = status.and_then(Value::as_object).cloned().unwrap_or_default();
        // A condition that is not an object goes, as in the SDK.
        let read = |c: &Value| {
            let mut c = Condition::deserialize(c).ok()?;
            if c.last_transition_time.is_empty() {
                c.last_transition_time = now.into();
            }
            Some(c)
        };
        let conditions = match custom.remove("conditions") {
            Some(Value::Array(a)) => a.iter().filter(|c| c.is_object()).filter_map(read).collect(),
            _ => Vec::new(),
        };
        Status { conditions, custom }
    }

    fn get(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Sets a condition to false, if there is one.
    fn falsify(&mut self, type_: &str) {
        if let Some(mut c) = self.get(type_).cloned() {
            c.status = "False".into();
            self.set(c);
        }
    }

    /// The SDK's `SetCondition`: a condition (other than Failure) whose status and reason are unchanged
    /// stays as it is; the transition time moves only when the status does; a replaced condition goes
    /// last.
    fn set(&mut self, mut c: Condition) {
        if let Some(current) = self.get(&c.type_) {
            if c.type_ != FAILURE && current.status == c.status && current.reason == c.reason {
                return;
            }
            if current.status == c.status {
                c.last_transition_time = current.last_transition_time.clone();
            }
        }
        self.conditions.retain(|x| x.type_ != c.type_);
        self.conditions.push(c);
    }

    fn into_json(self) -> Value {
        let mut m = self.custom;
        m.insert("conditions".into(), serde_json::to_value(&self.conditions).unwrap_or_default());
        Value::Object(m)
    }
}

/// `markRunning`: before a run.
pub fn running(status: Option<&Value>, now: &str) -> Value {
    let mut s = Status::read(status, now);
    s.falsify(SUCCESSFUL);
    s.set(Condition::new(RUNNING, true, None, RUNNING, RUNNING_MESSAGE, now));
    s.into_json()
}

/// `markDone`: after a run that reported its stats.
pub fn done(status: Option<&Value>, outcome: &Outcome, now: &str) -> Value {
    let mut s = Status::read(status, now);
    let result = outcome.stats.clone();
    if outcome.successful() {
        s.set(Condition::new(RUNNING, true, result, SUCCESSFUL, AWAITING_MESSAGE, now));
        s.set(Condition::new(SUCCESSFUL, true, None, SUCCESSFUL, SUCCESSFUL_MESSAGE, now));
        s.set(Condition::new(FAILURE, false, None, "", "", now));
    } else {
        s.falsify(RUNNING);
        s.set(Condition::new(FAILURE, true, result, FAILED_REASON, &outcome.failure_message(), now));
        s.set(Condition::new(SUCCESSFUL, false, None, "", "", now));
    }
    s.into_json()
}

/// `markError`: a run that could not be made or did not finish.
pub fn error(status: Option<&Value>, message: &str, now: &str) -> Value {
    let mut s = Status::read(status, now);
    s.falsify(RUNNING);
    s.falsify(SUCCESSFUL);
    s.set(Condition::new(FAILURE, true, None, FAILED_REASON, message, now));
    s.into_json()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::events::FailedTask;

    fn cond<'a>(status: &'a Value, type_: &str) -> &'a Value {
        status["conditions"].as_array().unwrap().iter().find(|c| c["type"] == type_).unwrap()
    }

    #[test]
    fn a_run_then_success_then_failure() {
        let s0 = json!({"test": "hello world"});
        let s1 = running(Some(&s0), "T1");
        assert_eq!(s1["test"], "hello world", "a playbook's own status fields stay");
        assert_eq!(
            cond(&s1, RUNNING),
            &json!({"type": "Running", "status": "True", "lastTransitionTime": "T1", "reason": "Running", "message": "Running reconciliation"})
        );
        let ok = Outcome { stats: Some(Stats { ok: 3, changed: 1, ..Default::default() }), ..Default::default() };
        let s2 = done(Some(&s1), &ok, "T2");
        let r = cond(&s2, RUNNING);
        assert_eq!((r["reason"].as_str(), r["lastTransitionTime"].as_str()), (Some("Successful"), Some("T1")));
        assert_eq!(r["ansibleResult"]["ok"], 3);
        assert_eq!(cond(&s2, SUCCESSFUL)["message"], "Last reconciliation succeeded");
        assert_eq!(cond(&s2, FAILURE)["status"], "False");
        // The next run: Successful turns False while running, Running's reason goes back to Running.
        let s3 = running(Some(&s2), "T3");
        assert_eq!(
            (cond(&s3, SUCCESSFUL)["status"].as_str(), cond(&s3, RUNNING)["reason"].as_str()),
            (Some("False"), Some("Running"))
        );
        let failed = Outcome {
            stats: Some(Stats { failures: 1, ..Default::default() }),
            failed: vec![FailedTask { task: "t".into(), message: "boom".into() }],
            ..Default::default()
        };
        let s4 = done(Some(&s3), &failed, "T4");
        let f = cond(&s4, FAILURE);
        assert_eq!(
            (f["status"].as_str(), f["reason"].as_str(), f["message"].as_str()),
            (Some("True"), Some("Failed"), Some("boom"))
        );
        assert_eq!((f["ansibleResult"]["failures"].as_i64(), f["lastTransitionTime"].as_str()), (Some(1), Some("T4")));
        assert_eq!(cond(&s4, RUNNING)["status"], "False");
        assert_eq!(cond(&s4, SUCCESSFUL)["status"], "False");
    }

    #[test]
    fn an_unchanged_condition_is_left_alone_and_errors_are_failures() {
        let ok = Outcome { stats: Some(Stats::default()), ..Default::default() };
        let s = done(None, &ok, "T1");
        let again = done(Some(&s), &ok, "T2");
        assert_eq!(cond(&again, SUCCESSFUL)["lastTransitionTime"], "T1");
        assert_eq!(cond(&again, RUNNING), cond(&s, RUNNING));
        let e = error(Some(&again), "Unable to run reconciliation", "T3");
        assert_eq!(cond(&e, FAILURE)["message"], "Unable to run reconciliation");
        assert_eq!(cond(&e, RUNNING)["status"], "False");
        let odd = running(Some(&json!({"conditions": [{"type": "Running"}, "junk"]})), "T9");
        assert_eq!(
            odd["conditions"].as_array().unwrap().len(),
            1,
            "a condition that is not an object goes, as in the SDK"
        );
        let junk = json!({"conditions": [{"type": 3, "status": null, "reason": 5, "lastTransitionTime": [],
            "ansibleResult": {"ok": "many", "changed": 2, "completion": 7, "extra": 1}}, {"type": "Failure", "ansibleResult": "x"}]});
        let read = Status::read(Some(&junk), "T9");
        let first = &read.conditions[0];
        assert_eq!(
            (first.type_.as_str(), first.status.as_str(), first.reason.as_str(), first.last_transition_time.as_str()),
            (RUNNING, "True", "", "T9"),
            "createConditionFromMap's defaults for fields of another type"
        );
        assert_eq!(first.ansible_result, Some(Stats { changed: 2, ..Default::default() }));
        assert_eq!(read.conditions[1].ansible_result, None, "a result that is no map is none");
    }
}
