//! The Subscription (`operators.coreos.com/v1alpha1`) as typed objects: what a user asks for (a
//! package, its channel and catalog, how plans are approved) and the status the lifecycle manager
//! writes (`state`, `currentCSV`, `installedCSV`, the plan it follows, OLM's conditions).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::api::{V1ALPHA1, now};

/// A Subscription. Read leniently: fields uc does not act on are ignored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Subscription {
    /// `operators.coreos.com/v1alpha1` (empty when read from a list that left it out).
    #[serde(rename = "apiVersion", skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: SubscriptionSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<SubscriptionStatus>,
}

impl Subscription {
    /// A Subscription to write: `namespace/name`, asking for `spec`.
    pub fn new(namespace: &str, name: &str, spec: SubscriptionSpec) -> Subscription {
        Subscription {
            api_version: V1ALPHA1.into(),
            kind: "Subscription".into(),
            metadata: ObjectMeta { name: Some(name.into()), namespace: Some(namespace.into()), ..Default::default() },
            spec,
            status: None,
        }
    }
}

/// What a Subscription asks for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SubscriptionSpec {
    /// The package.
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(rename = "startingCSV", skip_serializing_if = "Option::is_none")]
    pub starting_csv: Option<String>,
    /// The CatalogSource, and its namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_namespace: Option<String>,
    /// `Automatic` (the default) or `Manual`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install_plan_approval: Option<String>,
    /// Its `config`, read where it is used (`config.rs`, whose errors name the field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
}

/// Where a Subscription is, as OLM reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SubscriptionStatus {
    /// `UpgradePending`, `UpgradeAvailable`, `AtLatestKnown`, `UpgradeFailed` or empty.
    pub state: String,
    #[serde(rename = "currentCSV")]
    pub current_csv: String,
    /// Written as `null` while nothing is installed (a status write merges).
    #[serde(rename = "installedCSV")]
    pub installed_csv: Option<String>,
    /// The plan it follows, by reference.
    pub install_plan_ref: Option<ObjectReference>,
    /// The same plan, as OLM's older field names it (with its uid as `uuid`).
    pub installplan: Option<PlanName>,
    pub conditions: Vec<SubscriptionCondition>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
}

/// `status.installplan`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PlanName {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uuid: String,
}

pub use uc_api::conditions::Condition as SubscriptionCondition;

/// A Subscription condition, true or false, noted now (OLM writes each with the time of its pass).
pub fn condition(type_: &str, status: bool, reason: &str, message: &str) -> SubscriptionCondition {
    let now = Some(now());
    SubscriptionCondition { last_transition_time: now, ..SubscriptionCondition::new(type_, status, reason, message) }
}

impl Subscription {
    /// Reads a Subscription object; `None` (logged) when it does not read as one.
    pub fn read(obj: &serde_json::Value) -> Option<Subscription> {
        Subscription::deserialize(obj).inspect_err(|e| tracing::warn!(error = %e, "a Subscription does not read")).ok()
    }

    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    pub fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or_default()
    }

    /// The status, or an empty one.
    pub fn status(&self) -> SubscriptionStatus {
        self.status.clone().unwrap_or_default()
    }

    /// Whether it installed, or is installing, `csv`.
    pub fn holds(&self, csv: &str) -> bool {
        self.status.as_ref().is_some_and(|s| s.installed_csv.as_deref() == Some(csv) || s.current_csv == csv)
    }
}

impl SubscriptionStatus {
    /// A status in `state`, naming the plan `(name, uid)` in `ns` it follows.
    pub fn new(
        ns: &str,
        state: &str,
        current: &str,
        installed: Option<&String>,
        plan: Option<(&str, &str)>,
        conditions: Vec<SubscriptionCondition>,
    ) -> SubscriptionStatus {
        let reference = |(name, uid): (&str, &str)| ObjectReference {
            api_version: Some(V1ALPHA1.into()),
            kind: Some("InstallPlan".into()),
            name: Some(name.into()),
            namespace: Some(ns.into()),
            uid: Some(uid.into()),
            ..Default::default()
        };
        let named = |(name, uid): (&str, &str)| PlanName {
            api_version: V1ALPHA1.into(),
            kind: "InstallPlan".into(),
            name: name.into(),
            uuid: uid.into(),
        };
        SubscriptionStatus {
            state: state.into(),
            current_csv: current.into(),
            installed_csv: installed.cloned(),
            install_plan_ref: plan.map(reference),
            installplan: plan.map(named),
            conditions,
            last_updated: Some(now()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_subscription_reads_and_its_status_writes_as_olm_names_it() {
        let sub = Subscription::read(&json!({
            "metadata": {"name": "etcd", "namespace": "ns"},
            "spec": {"name": "etcd", "channel": "alpha", "startingCSV": "etcd.v1", "installPlanApproval": "Manual",
                     "config": {"env": [{"name": "A", "value": "1"}]}, "unknownField": 1},
            "status": {"state": "AtLatestKnown", "currentCSV": "etcd.v1", "installedCSV": "etcd.v1",
                       "installPlanRef": {"name": "install-x", "namespace": "ns"}}
        }))
        .unwrap();
        assert_eq!(
            (sub.spec.starting_csv.as_deref(), sub.spec.install_plan_approval.as_deref()),
            (Some("etcd.v1"), Some("Manual"))
        );
        assert!(sub.holds("etcd.v1") && !sub.holds("etcd.v2"));
        assert_eq!(sub.status().install_plan_ref.and_then(|r| r.name).as_deref(), Some("install-x"));
        let status =
            SubscriptionStatus::new("ns", "UpgradePending", "etcd.v2", None, Some(("install-y", "u1")), vec![]);
        let written = serde_json::to_value(&status).unwrap();
        assert_eq!(written["currentCSV"], "etcd.v2");
        assert_eq!(written["installPlanRef"]["uid"], "u1");
        assert_eq!(written["installplan"]["uuid"], "u1");
        assert_eq!(written["installedCSV"], json!(null), "nothing installed yet");
        assert!(Subscription::read(&json!({"spec": {"name": 3}})).is_none(), "a package name that is not a string");
    }
}
