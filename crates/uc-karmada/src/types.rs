//! The parts of Karmada's types the control plane acts on, with Karmada's field names (the CRDs in
//! `crds/` validate the rest; unknown fields are kept in the stored objects, and ignored here).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::statuses::{BindingStatus, WorkStatus};

/// A Karmada object as uc writes it (the multi-cluster operator's policies, MCS objects) and the
/// control plane reads it (policies): its kind, metadata and spec.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Object<S> {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<S>,
}

impl<S> Object<S> {
    /// `kind` `namespace/name` of `api_version`, with `spec`.
    pub fn new(api_version: &str, kind: &str, (namespace, name): (&str, &str), spec: Option<S>) -> Object<S> {
        let metadata = ObjectMeta { name: Some(name.into()), namespace: Some(namespace.into()), ..Default::default() };
        Object { api_version: api_version.into(), kind: kind.into(), metadata, spec }
    }
}

/// A PropagationPolicy.
pub type PropagationPolicy = Object<PropagationSpec>;
/// An OverridePolicy.
pub type OverridePolicy = Object<OverrideSpec>;

/// `ServiceImport.spec` (the MCS API): the imported Service's type and ports.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceImportSpec {
    #[serde(rename = "type")]
    pub type_: String,
    pub ports: Vec<k8s_openapi::api::core::v1::ServicePort>,
}

/// `PropagationPolicy.spec` / `ClusterPropagationPolicy.spec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct PropagationSpec {
    pub resource_selectors: Vec<ResourceSelector>,
    pub placement: Placement,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
}

/// `ResourceSelector`: which resource templates a policy takes.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceSelector {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// `Placement`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Placement {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_affinity: Option<ClusterAffinity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_scheduling: Option<ReplicaScheduling>,
    /// Everything else Karmada's placement has (spread constraints, tolerations, affinities), kept
    /// so that the binding carries the policy's placement as written.
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

/// `ClusterAffinity`: clusters by name, label, exclusion.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterAffinity {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

/// `ReplicaSchedulingStrategy`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicaScheduling {
    /// `Duplicated` (the default) or `Divided`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_scheduling_type: Option<String>,
    /// `Aggregated` or `Weighted`, for `Divided`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica_division_preference: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_preference: Option<WeightPreference>,
}

/// `ClusterPreferences`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct WeightPreference {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub static_weight_list: Vec<StaticClusterWeight>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_weight: Option<String>,
}

/// `StaticClusterWeight`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct StaticClusterWeight {
    pub target_cluster: ClusterAffinity,
    pub weight: i64,
}

/// `OverridePolicy.spec` / `ClusterOverridePolicy.spec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct OverrideSpec {
    pub resource_selectors: Vec<ResourceSelector>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub override_rules: Vec<RuleWithCluster>,
    /// Deprecated in Karmada, still honoured: one target and its overriders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_cluster: Option<ClusterAffinity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overriders: Option<Overriders>,
}

/// `RuleWithCluster`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct RuleWithCluster {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_cluster: Option<ClusterAffinity>,
    pub overriders: Overriders,
}

/// `Overriders`: the kinds of change an override rule makes.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Overriders {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plaintext: Vec<PlaintextOverrider>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub image_overrider: Vec<ImageOverrider>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command_overrider: Vec<CommandArgsOverrider>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args_overrider: Vec<CommandArgsOverrider>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels_overrider: Vec<LabelAnnotationOverrider>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub annotations_overrider: Vec<LabelAnnotationOverrider>,
}

/// `PlaintextOverrider`: a JSON patch operation.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct PlaintextOverrider {
    pub path: String,
    pub operator: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

/// `ImageOverrider`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ImageOverrider {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicate: Option<ImagePredicate>,
    /// `Registry`, `Repository` or `Tag`.
    pub component: String,
    pub operator: String,
    pub value: String,
}

/// `ImagePredicate`: the path of the one image to change.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ImagePredicate {
    pub path: String,
}

/// `CommandArgsOverrider`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct CommandArgsOverrider {
    pub container_name: String,
    pub operator: String,
    pub value: Vec<String>,
}

/// `LabelAnnotationOverrider`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelAnnotationOverrider {
    pub operator: String,
    pub value: BTreeMap<String, String>,
}

/// A ResourceBinding (`work.karmada.io/v1alpha2`) as the control plane writes it: the template it
/// binds, the policy's placement, the replicas the template declares and the scheduling result.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceBinding {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: ResourceBindingSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<BindingStatus>,
}

/// `spec` of a ResourceBinding.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceBindingSpec {
    pub resource: BoundResource,
    pub placement: Placement,
    pub clusters: Vec<TargetCluster>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// A Work (`work.karmada.io/v1alpha1`): a binding's manifests for one member cluster, in that
/// cluster's execution space, and what came of applying them there.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Work {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: WorkSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<WorkStatus>,
}

/// `spec` of a Work.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkSpec {
    pub workload: WorkloadTemplate,
}

/// The manifests a Work carries: templates of any kind, as the member gets them.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadTemplate {
    pub manifests: Vec<Value>,
}

/// The template a binding is for (Karmada's `ObjectReference`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct BoundResource {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

/// `TargetCluster` of a binding: a cluster and its share of the replicas.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct TargetCluster {
    pub name: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub replicas: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// A member `Cluster` (`cluster.karmada.io/v1alpha1`): what uc reads and writes of it; other fields are
/// kept as they are.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Cluster {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: ClusterSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ClusterStatus>,
}

/// `ClusterSpec`: how to reach the member (push mode).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterSpec {
    pub api_endpoint: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sync_mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalSecretReference>,
    #[serde(rename = "insecureSkipTLSVerification")]
    pub insecure_skip_tls_verification: bool,
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

/// A Secret by namespace and name.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct LocalSecretReference {
    pub namespace: String,
    pub name: String,
}

/// `ClusterStatus`: the member's version and `Ready` condition (what else it has is kept).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<uc_api::conditions::Condition>,
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

/// A `ResourceInterpreterWebhookConfiguration` (`config.karmada.io/v1alpha1`): webhooks that interpret
/// kinds Karmada does not know.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct InterpreterWebhookConfiguration {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    pub metadata: ObjectMeta,
    pub webhooks: Vec<InterpreterWebhook>,
}

/// One interpreter webhook: where it is, and which operations on which kinds it answers.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct InterpreterWebhook {
    pub name: String,
    pub client_config: InterpreterClientConfig,
    pub rules: Vec<InterpreterRule>,
    pub interpreter_context_versions: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
}

/// Where a webhook is: a URL or an in-cluster Service, and the CA that signs its certificate
/// (`caBundle`, base64 of PEM, or PEM).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct InterpreterClientConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<k8s_openapi::api::admissionregistration::v1::ServiceReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
}

/// Operations on kinds (`*` matches any).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct InterpreterRule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub kinds: Vec<String>,
}

impl InterpreterRule {
    /// Whether it takes `operation` on `group`/`version` `kind`.
    pub fn takes(&self, operation: &str, (group, version, kind): (&str, &str, &str)) -> bool {
        let has = |list: &[String], want: &str| list.iter().any(|v| v == "*" || v == want);
        has(&self.operations, operation)
            && has(&self.api_groups, group)
            && has(&self.api_versions, version)
            && has(&self.kinds, kind)
    }
}

/// A member cluster as the scheduler sees it.
#[derive(Clone, Debug, Default)]
pub struct MemberCluster {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub ready: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_cluster_keeps_what_uc_does_not_read() {
        let written = json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "m1"},
            "spec": {"apiEndpoint": "https://m1:6443", "syncMode": "Push", "provider": "uc",
                     "secretRef": {"namespace": "karmada-cluster", "name": "m1"}, "insecureSkipTLSVerification": true},
            "status": {"kubernetesVersion": "v1.33.0", "apiEnablements": [{"groupVersion": "v1"}],
                       "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "ok"}]}});
        let cluster: Cluster = serde_json::from_value(written.clone()).unwrap();
        assert!(cluster.spec.insecure_skip_tls_verification);
        assert_eq!(cluster.spec.secret_ref.as_ref().map(|r| r.name.as_str()), Some("m1"));
        assert!(cluster.status.as_ref().unwrap().conditions[0].holds("Ready"));
        assert_eq!(serde_json::to_value(&cluster).unwrap(), written, "written back as it was");
    }

    #[test]
    fn a_work_reads_its_manifests_status_and_finalizers_and_writes_no_status_it_has_not() {
        let stored = json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "w", "namespace": "karmada-es-m1", "finalizers": ["karmada.io/execution-controller"],
                         "labels": {"resourcebinding.karmada.io/permanent-id": "u1"}},
            "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}]}},
            "status": {"conditions": [{"type": "Applied", "status": "True", "reason": "AppliedSuccessful", "message": "ok"}]}});
        let work: Work = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(work.spec.workload.manifests[0]["kind"], "ConfigMap");
        assert!(work.status.as_ref().and_then(|s| s.applied()).is_some_and(|c| c.status == "True"));
        assert_eq!(serde_json::to_value(&work).unwrap(), stored, "read and written back as it was");
        let desired = Work { status: None, ..work };
        assert!(serde_json::to_value(&desired).unwrap().get("status").is_none(), "an applied Work claims no status");
    }
}
