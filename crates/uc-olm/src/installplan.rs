//! The InstallPlan (`operators.coreos.com/v1alpha1`) as typed objects: its spec, and the status the
//! lifecycle manager writes — the phase, the catalogs, one entry per step with its manifest, the
//! `Installed` condition and the account the steps were carried out as.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::{Deserialize, Serialize};

use crate::context::V1ALPHA1;
pub use crate::plan::{StepResource, StepStatus};

/// An InstallPlan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct InstallPlan {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: InstallPlanSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<InstallPlanStatus>,
}

/// What to install and whether that is approved.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct InstallPlanSpec {
    /// `Automatic` or `Manual`.
    pub approval: String,
    pub approved: bool,
    pub cluster_service_version_names: Vec<String>,
    pub generation: i64,
    /// The CatalogSource the plan resolved from, and its namespace.
    pub source: String,
    pub source_namespace: String,
}

/// What the lifecycle manager reports. Fields it does not set are left out (a status write merges).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct InstallPlanStatus {
    /// `RequiresApproval`, `Installing`, `Complete` or `Failed`.
    pub phase: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_sources: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Vec<StepStatus>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<InstalledCondition>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attenuated_service_account_ref: Option<ObjectReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
}

/// The plan's `Installed` condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct InstalledCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_transition_time: String,
    pub last_update_time: String,
}

impl InstallPlan {
    /// A new plan of `csvs` in `namespace`, owned by its Subscription (`subscription`: name and uid),
    /// approved at once when `approval` is `Automatic`.
    pub fn new(
        name: &str,
        namespace: &str,
        csvs: &[String],
        approval: &str,
        source: (&str, &str),
        subscription: (&str, &str),
    ) -> InstallPlan {
        let owner = OwnerReference {
            api_version: V1ALPHA1.into(),
            kind: "Subscription".into(),
            name: subscription.0.into(),
            uid: subscription.1.into(),
            controller: Some(false),
            block_owner_deletion: Some(false),
        };
        InstallPlan {
            api_version: V1ALPHA1.into(),
            kind: "InstallPlan".into(),
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                owner_references: Some(vec![owner]),
                ..Default::default()
            },
            spec: InstallPlanSpec {
                approval: approval.into(),
                approved: approval == "Automatic",
                cluster_service_version_names: csvs.to_vec(),
                generation: 1,
                source: source.1.into(),
                source_namespace: source.0.into(),
            },
            status: None,
        }
    }
}
