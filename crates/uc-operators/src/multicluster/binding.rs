//! What the operator reads of the ZookeeperCluster's ResourceBinding (`work.karmada.io/v1alpha2`):
//! the scheduling result and, per member cluster, the status its interpreter reflected.

use serde::Deserialize;
use uc_api::conditions::Condition;

/// A ResourceBinding, as far as the operator reads it.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Binding {
    pub spec: BindingSpec,
    pub status: BindingStatus,
}

/// The clusters the scheduler chose.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct BindingSpec {
    pub clusters: Vec<TargetCluster>,
}

/// One chosen cluster and its share of the replicas.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct TargetCluster {
    pub name: String,
    pub replicas: i32,
}

/// The binding's conditions and what each cluster reported.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct BindingStatus {
    pub conditions: Vec<Condition>,
    pub aggregated_status: Vec<AggregatedItem>,
}

/// What one member cluster reported: whether the ZookeeperCluster applied, and its status.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AggregatedItem {
    pub cluster_name: String,
    pub applied: Option<bool>,
    pub applied_message: String,
    pub status: Option<Reflected>,
}

/// A member's ZookeeperCluster status as the interpreter reflects it: with the digest of the spec
/// and the generation it is of.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Reflected {
    pub spec_digest: String,
    pub generation: Option<i64>,
    pub observed_generation: Option<i64>,
    pub replicas: i64,
    pub ready_replicas: i64,
    pub servers: Vec<ServerMode>,
    pub conditions: Vec<Condition>,
}

/// How a server of the configuration serves (`leader`, `follower`, `observer`, …).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ServerMode {
    pub mode: String,
}

impl Binding {
    /// The scheduling result, once there is one: clusters in order, with their replicas.
    pub fn schedule(&self) -> Option<Vec<(String, i32)>> {
        let scheduled = self.status.conditions.iter().any(|c| c.holds("Scheduled"));
        let clusters: Vec<(String, i32)> = self.spec.clusters.iter().map(|c| (c.name.clone(), c.replicas)).collect();
        (scheduled && !clusters.is_empty()).then_some(clusters)
    }
}
