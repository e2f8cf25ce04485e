//! The status conditions the SDK's Ansible reconciler writes (`markRunning`, `markDone`, `markError`):
//! `Running`, `Successful` and `Failure`, with `ansibleResult` on the condition that reports a run.
//! Other status fields (those a playbook writes with `k8s_status`) are kept as they are.

use serde_json::{Map, Value, json};

use crate::events::Outcome;

pub const RUNNING: &str = "Running";
pub const SUCCESSFUL: &str = "Successful";
pub const FAILURE: &str = "Failure";
const FAILED_REASON: &str = "Failed";
const RUNNING_MESSAGE: &str = "Running reconciliation";
const AWAITING_MESSAGE: &str = "Awaiting next reconciliation";
const SUCCESSFUL_MESSAGE: &str = "Last reconciliation succeeded";

/// One condition, as the SDK's `createConditionFromMap` reads it (defaults for missing fields).
#[derive(Clone, Debug, PartialEq)]
struct Condition {
    type_: String,
    status: String,
    last_transition_time: String,
    ansible_result: Option<Value>,
    reason: String,
    message: String,
}

impl Condition {
    fn new(type_: &str, status: bool, result: Option<Value>, reason: &str, message: &str, now: &str) -> Self {
        Condition {
            type_: type_.into(),
            status: if status { "True" } else { "False" }.into(),
            last_transition_time: now.into(),
            ansible_result: result,
            reason: reason.into(),
            message: message.into(),
        }
    }

    fn read(m: &Map<String, Value>, now: &str) -> Self {
        let s = |k: &str, d: &str| m.get(k).and_then(Value::as_str).unwrap_or(d).to_string();
        Condition {
            type_: s("type", RUNNING),
            status: s("status", "True"),
            last_transition_time: s("lastTransitionTime", now),
            ansible_result: m.get("ansibleResult").filter(|v| v.is_object()).cloned(),
            reason: s("reason", ""),
            message: s("message", ""),
        }
    }

    fn to_json(&self) -> Value {
        let mut v = json!({"type": self.type_, "status": self.status, "lastTransitionTime": self.last_transition_time,
            "reason": self.reason, "message": self.message});
        if let Some(r) = &self.ansible_result {
            v["ansibleResult"] = r.clone();
        }
        v
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
        let conditions = match custom.remove("conditions") {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_object).map(|m| Condition::read(m, now)).collect(),
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
        m.insert("conditions".into(), Value::Array(self.conditions.iter().map(Condition::to_json).collect()));
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
    let result = outcome.stats.as_ref().map(|st| st.to_json());
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
    use super::*;
    use crate::events::{FailedTask, Stats};

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
    }
}
