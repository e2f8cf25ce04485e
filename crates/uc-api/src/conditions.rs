//! Status conditions (`metav1.Condition`): building one, and putting it into a status so that its
//! `lastTransitionTime` moves only when its status does — as JSON in a status of any shape, or typed
//! in a status of a known kind.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A condition (`metav1.Condition`), its time as written.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

impl Condition {
    /// A condition without a transition time ([`set_in`] gives it one).
    pub fn new(type_: &str, ok: bool, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: if ok { "True" } else { "False" }.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: None,
        }
    }

    /// Whether it is of `type_` and true.
    pub fn holds(&self, type_: &str) -> bool {
        self.type_ == type_ && self.status == "True"
    }
}

/// Puts `condition` into `conditions`, replacing one of its type; its transition time is the one
/// `previous` has for this type when the status did not change, else `now` (as [`set_condition`]).
pub fn set_in(conditions: &mut Vec<Condition>, condition: Condition, previous: &[Condition], now: &str) {
    let before = previous.iter().find(|c| c.type_ == condition.type_);
    let since = before.filter(|b| b.status == condition.status).and_then(|b| b.last_transition_time.clone());
    let condition = Condition { last_transition_time: Some(since.unwrap_or_else(|| now.to_string())), ..condition };
    conditions.retain(|c| c.type_ != condition.type_);
    conditions.push(condition);
}

/// A condition without a transition time (`set_condition` gives it one).
pub fn condition(type_: &str, ok: bool, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": if ok { "True" } else { "False" }, "reason": reason, "message": message})
}

/// Puts `condition` into `status.conditions`, replacing one of the same type. Its
/// `lastTransitionTime` is the one `previous` (the status as it was) has for this type when the
/// condition's status did not change, else `now`.
pub fn set_condition(status: &mut Value, condition: Value, previous: Option<&Value>, now: &str) {
    if !status.is_object() {
        return;
    }
    let type_ = condition.get("type").cloned();
    let before = previous
        .and_then(|p| p.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c.get("type") == type_.as_ref()));
    let mut condition = condition;
    let since = match before {
        Some(b) if b.get("status") == condition.get("status") => b.get("lastTransitionTime").cloned(),
        _ => None,
    };
    condition["lastTransitionTime"] = since.unwrap_or_else(|| Value::String(now.to_string()));
    let conds = status.as_object_mut().map(|m| m.entry("conditions").or_insert_with(|| json!([])));
    if let Some(Value::Array(cs)) = conds {
        cs.retain(|c| c.get("type") != type_.as_ref());
        cs.push(condition);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_times_move_only_with_the_status() {
        let previous = json!({"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "t0"},
            {"type": "Synced", "status": "True", "lastTransitionTime": "t0"}]});
        let mut status = json!({});
        set_condition(&mut status, condition("Ready", true, "Running", "changed message"), Some(&previous), "t1");
        set_condition(&mut status, condition("Synced", false, "SyncFailed", "x"), Some(&previous), "t1");
        set_condition(&mut status, condition("New", true, "R", ""), Some(&previous), "t1");
        let times: Vec<(&str, &str)> = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["type"].as_str().unwrap(), c["lastTransitionTime"].as_str().unwrap()))
            .collect();
        assert_eq!(times, [("Ready", "t0"), ("Synced", "t1"), ("New", "t1")]);
        set_condition(&mut status, condition("Ready", false, "Stopped", ""), None, "t2");
        assert_eq!(status["conditions"].as_array().unwrap().len(), 3, "replaced, not added");
        let mut not_an_object = json!("x");
        set_condition(&mut not_an_object, condition("Ready", true, "", ""), None, "t");
        assert_eq!(not_an_object, json!("x"));
    }

    #[test]
    fn typed_transition_times_move_only_with_the_status() {
        let previous = [
            Condition { last_transition_time: Some("t0".into()), ..Condition::new("Ready", true, "", "") },
            Condition { last_transition_time: Some("t0".into()), ..Condition::new("Synced", true, "", "") },
        ];
        let mut conditions = Vec::new();
        set_in(&mut conditions, Condition::new("Ready", true, "Running", "changed"), &previous, "t1");
        set_in(&mut conditions, Condition::new("Synced", false, "SyncFailed", "x"), &previous, "t1");
        set_in(&mut conditions, Condition::new("New", true, "R", ""), &previous, "t1");
        let times: Vec<(&str, Option<&str>)> =
            conditions.iter().map(|c| (c.type_.as_str(), c.last_transition_time.as_deref())).collect();
        assert_eq!(times, [("Ready", Some("t0")), ("Synced", Some("t1")), ("New", Some("t1"))]);
        set_in(&mut conditions, Condition::new("Ready", false, "Stopped", ""), &[], "t2");
        assert_eq!(conditions.len(), 3, "replaced, not added");
        assert_eq!(serde_json::to_value(&conditions[2]).unwrap()["type"], "Ready", "written with metav1's field names");
    }
}
