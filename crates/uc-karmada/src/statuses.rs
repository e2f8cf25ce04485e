//! The statuses the control plane writes, with Karmada's field names: a Work's (its `Applied`
//! condition and what each manifest looks like in its member) and a ResourceBinding's (`Scheduled`,
//! `FullyApplied`, one aggregated item per target cluster). The status a member reports for an
//! object stays JSON: it is of any kind.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use uc_api::conditions::{Condition, set_in as set_condition};

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
