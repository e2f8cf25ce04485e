//! The statuses the control plane writes, with Karmada's field names: a Work's (its `Applied`
//! condition and what each manifest looks like in its member) and a ResourceBinding's (`Scheduled`,
//! `FullyApplied`, one aggregated item per target cluster). The status a member reports for an
//! object stays JSON: it is of any kind.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// A condition without a transition time ([`set_condition`] gives it one).
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

/// Puts `condition` into `conditions`, replacing one of its type. Its transition time is the one
/// `previous` has for this type when the status did not change, else `now`.
pub fn set_condition(conditions: &mut Vec<Condition>, condition: Condition, previous: &[Condition], now: &str) {
    let before = previous.iter().find(|c| c.type_ == condition.type_);
    let since = before.filter(|b| b.status == condition.status).and_then(|b| b.last_transition_time.clone());
    let condition = Condition { last_transition_time: Some(since.unwrap_or_else(|| now.to_string())), ..condition };
    conditions.retain(|c| c.type_ != condition.type_);
    conditions.push(condition);
}

/// `Work.status`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkStatus {
    pub conditions: Vec<Condition>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest_statuses: Option<Vec<ManifestStatus>>,
}

impl WorkStatus {
    /// Its `Applied` condition.
    pub fn applied(&self) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == "Applied")
    }
}

/// How one manifest of a Work looks in its member.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ManifestStatus {
    pub identifier: ResourceIdentifier,
    /// The object's status as the interpreter reflects it (of any kind).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
    /// `Healthy`, `Unhealthy` or `Unknown`.
    pub health: String,
}

/// Which manifest of a Work, and the object it is.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceIdentifier {
    pub ordinal: usize,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

/// `ResourceBinding.status`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct BindingStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_observed_generation: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_scheduled_time: Option<String>,
    pub conditions: Vec<Condition>,
    pub aggregated_status: Vec<AggregatedStatusItem>,
}

/// How a binding's resource stands in one target cluster.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct AggregatedStatusItem {
    pub cluster_name: String,
    /// The resource's status there (of any kind).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
    pub applied: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_message: Option<String>,
    pub health: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn transition_times_move_only_with_the_status() {
        let previous = [
            Condition { last_transition_time: Some("t0".into()), ..Condition::new("Ready", true, "", "") },
            Condition { last_transition_time: Some("t0".into()), ..Condition::new("Synced", true, "", "") },
        ];
        let mut conditions = Vec::new();
        set_condition(&mut conditions, Condition::new("Ready", true, "Running", "changed"), &previous, "t1");
        set_condition(&mut conditions, Condition::new("Synced", false, "SyncFailed", "x"), &previous, "t1");
        set_condition(&mut conditions, Condition::new("New", true, "R", ""), &previous, "t1");
        let times: Vec<(&str, Option<&str>)> =
            conditions.iter().map(|c| (c.type_.as_str(), c.last_transition_time.as_deref())).collect();
        assert_eq!(times, [("Ready", Some("t0")), ("Synced", Some("t1")), ("New", Some("t1"))]);
        set_condition(&mut conditions, Condition::new("Ready", false, "Stopped", ""), &[], "t2");
        assert_eq!(conditions.len(), 3, "replaced, not added");
    }

    #[test]
    fn statuses_read_and_write_with_karmadas_names() {
        let work: WorkStatus = serde_json::from_value(json!({
            "conditions": [{"type": "Applied", "status": "True", "reason": "AppliedSuccessful", "message": "ok",
                            "lastTransitionTime": "t"}],
            "manifestStatuses": [{"identifier": {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment",
                                                 "resource": "deployments", "namespace": "d", "name": "n"},
                                  "status": {"readyReplicas": 1}, "health": "Healthy"}]
        }))
        .unwrap();
        assert!(work.applied().is_some_and(|c| c.holds("Applied")));
        let item = AggregatedStatusItem {
            cluster_name: "m1".into(),
            applied: true,
            health: "Healthy".into(),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(item).unwrap(),
            json!({"clusterName": "m1", "applied": true, "health": "Healthy"})
        );
        let written = serde_json::to_value(&work).unwrap();
        assert_eq!(written["manifestStatuses"][0]["identifier"]["resource"], "deployments");
    }
}
