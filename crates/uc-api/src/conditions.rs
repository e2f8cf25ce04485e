//! Status conditions (`metav1.Condition`): building one, and putting it into a status so that its
//! `lastTransitionTime` moves only when its status does.

use serde_json::{Value, json};

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
}
