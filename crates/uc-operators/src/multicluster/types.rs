//! `MultiClusterZooKeeper`: one ZooKeeper ensemble over several member clusters of a Karmada
//! control plane, with the deployment records of seed 002 (`status.records`) as its status.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uc_api::conditions::Condition;
use uc_api::controller::free_form_object;
use uc_karmada::types::Placement;

use crate::zookeeper::types::ZookeeperClusterSpec;

/// API group and version of MultiClusterZooKeeper.
pub const API_VERSION: &str = "zookeeper.uc.njuics.cn/v1alpha1";

/// A ZooKeeper ensemble spread over member clusters, deployed cluster by cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, CustomResource)]
#[kube(
    group = "zookeeper.uc.njuics.cn",
    version = "v1alpha1",
    kind = "MultiClusterZooKeeper",
    doc = "A ZooKeeper ensemble spread over the member clusters of a Karmada control plane, deployed cluster by cluster.",
    plural = "multiclusterzookeepers",
    shortname = "mczk",
    namespaced,
    status = "MultiClusterZooKeeperStatus",
    printcolumn = r#"{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}"#,
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MultiClusterZooKeeperSpec {
    /// Servers in the whole ensemble (1 to 7 per cluster).
    pub replicas: i32,
    /// Where the servers go: Karmada's `Placement` (cluster affinity, replica scheduling), written into
    /// the PropagationPolicy as it is. Default: every member cluster, replicas divided evenly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "free_form_object")]
    pub placement: Option<Placement>,
    /// The ZookeeperCluster every member runs its part of the ensemble with (the pravega operator's
    /// spec; `replicas` and `ensemble` are the operator's to set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zookeeper: Option<ZookeeperClusterSpec>,
}

/// What the operator observed and did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiClusterZooKeeperStatus {
    /// The most recent generation observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` (the last record is Ready) and `Scheduled` (the binding has a scheduling result).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions")]
    pub conditions: Vec<Condition>,
    /// The deployment history: one record per deployment, the last one current.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<Record>,
}

/// One deployment, cluster by cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The generations this deployment is of: `multiclusterzookeeper` (this object's) and `zookeeper`
    /// (the control plane's ZookeeperCluster's).
    pub observed_generations: BTreeMap<String, i64>,
    /// The clusters, in the order they are deployed (the scheduling result's).
    pub order: Vec<String>,
    /// `Deploying` or `Ready`.
    pub status: String,
    /// Clusters by state: `pending`, `deploying`, `completed`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub current_state: BTreeMap<String, Vec<String>>,
    /// When the record last changed.
    pub last_transition_time: String,
}

fn conditions(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut items = free_form_object(generator);
    items.insert("type".into(), "object".into());
    schemars::json_schema!({"type": "array", "items": items})
}
