//! The status a Helm operator writes on its custom resources, typed as the Operator SDK's helm-operator
//! types it (`internal/helm/internal/types`: `HelmAppStatus`, `HelmAppCondition`, `HelmAppRelease`).

use serde::{Deserialize, Serialize};

/// `status` of a resource a Helm operator reconciles.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmAppStatus {
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    pub conditions: Vec<HelmAppCondition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployed_release: Option<HelmAppRelease>,
}

/// One condition (`Initialized`, `Deployed`, `ReleaseFailed`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmAppCondition {
    #[serde(rename = "type", default)]
    pub type_: String,
    #[serde(default)]
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_transition_time: String,
}

/// The release deployed for the resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HelmAppRelease {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
}

impl HelmAppStatus {
    /// The status a resource carries, as the SDK's `StatusFor` reads it (absent or not an object: an
    /// empty status), but field by field: where `StatusFor` empties a status whose conditions do not
    /// decode, only the conditions go here, so the `deployedRelease` a failed render reports stays.
    pub fn of(status: Option<&serde_json::Value>) -> HelmAppStatus {
        status.and_then(|s| HelmAppStatus::deserialize(s).ok()).unwrap_or_default()
    }

    /// A condition set `now`, its transition time kept from the old status while its status is the same.
    pub fn condition(&self, type_: &str, status: &str, reason: &str, message: &str, now: &str) -> HelmAppCondition {
        let previous = self.conditions.iter().find(|c| c.type_ == type_);
        let since = match previous {
            Some(p) if p.status == status && !p.last_transition_time.is_empty() => p.last_transition_time.clone(),
            _ => now.to_string(),
        };
        HelmAppCondition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: since,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_sdk_writes_and_keeps_transition_times() {
        let old = HelmAppStatus::of(Some(&serde_json::json!({"conditions": [
            {"type": "Deployed", "status": "True", "reason": "InstallSuccessful", "lastTransitionTime": "t0"}],
            "deployedRelease": {"name": "r", "manifest": "m"}})));
        assert_eq!(old.deployed_release, Some(HelmAppRelease { name: "r".into(), manifest: "m".into() }));
        assert_eq!(old.condition("Deployed", "True", "UpgradeSuccessful", "", "t1").last_transition_time, "t0");
        assert_eq!(old.condition("Deployed", "False", "", "", "t1").last_transition_time, "t1");
        assert_eq!(old.condition("ReleaseFailed", "True", "", "", "t1").last_transition_time, "t1");
        let odd = HelmAppStatus::of(Some(&serde_json::json!({"conditions": 3, "deployedRelease": {"name": "r"}})));
        assert_eq!((odd.conditions.len(), odd.deployed_release.unwrap().name.as_str()), (0, "r"));
        let partial = HelmAppStatus::of(Some(
            &serde_json::json!({"conditions": [{"type": "Deployed", "lastTransitionTime": "t0"}]}),
        ));
        assert_eq!(partial.conditions[0].type_, "Deployed", "a condition without a status still reads");
        assert_eq!(HelmAppStatus::of(None), HelmAppStatus::default());
        let written = serde_json::to_value(old.condition("Initialized", "True", "", "", "t2")).unwrap();
        assert_eq!(written, serde_json::json!({"type": "Initialized", "status": "True", "lastTransitionTime": "t2"}));
    }
}
