//! The etcd operator's resources as Rust types (coreos field names, `etcd.database.coreos.com/v1beta2`):
//! their CRDs are derived from these types and their doc comments (kube-derive + schemars), one source
//! of truth for what the API server admits and what the hooks read.

use std::borrow::Cow;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, EnvVar, PersistentVolumeClaimSpec, PodSecurityContext, ResourceRequirements, Toleration,
};
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uc_api::controller::free_form_object;

/// Status the operator's hooks write: phases, members, conditions, backup results. Open: the schema
/// keeps every field the hooks write.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OpenStatus(pub Map<String, Value>);

impl JsonSchema for OpenStatus {
    fn schema_name() -> Cow<'static, str> {
        "OpenStatus".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        free_form_object(generator)
    }
}

/// coreos `PodPolicy`: open, with the data claim named.
fn pod_policy(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "What every member's pod gets (coreos PodPolicy): labels, annotations, etcdEnv, resources, scheduling and security fields; persistentVolumeClaimSpec puts members' data on claims.",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {
            "persistentVolumeClaimSpec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    })
}

/// An etcd cluster: `size` members running etcd `version`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, CustomResource)]
#[kube(
    group = "etcd.database.coreos.com",
    version = "v1beta2",
    kind = "EtcdCluster",
    doc = "An etcd cluster run by uc's etcd operator.",
    plural = "etcdclusters",
    shortname = "etcd",
    namespaced,
    status = "OpenStatus",
    printcolumn = r#"{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}"#,
    printcolumn = r#"{"name": "Ready", "type": "integer", "jsonPath": ".status.readyMembers"}"#,
    printcolumn = r#"{"name": "Version", "type": "string", "jsonPath": ".status.currentVersion"}"#,
    printcolumn = r#"{"name": "Phase", "type": "string", "jsonPath": ".status.phase"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct EtcdClusterSpec {
    /// Number of members, 1 to 7.
    #[schemars(range(min = 1, max = 7))]
    pub size: u32,
    /// etcd version (`3.x.y`, with or without a `v`; default 3.2.13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^v?3\.[0-9]+\.[0-9]+$"))]
    pub version: Option<String>,
    /// Image repository (default quay.io/coreos/etcd); the image is `<repository>:v<version>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// What every member's pod gets (coreos PodPolicy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "pod_policy")]
    pub pod: Option<PodPolicy>,
    /// Opt-in: restore from an EtcdBackup's latest snapshot once quorum has been lost this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_on_quorum_loss: Option<RestoreOnQuorumLoss>,
}

/// coreos `PodPolicy`: what every member's pod gets. Fields uc does not use (coreos's `busyboxImage`,
/// `antiAffinity`, ...) are kept as they are.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodPolicy {
    /// Labels of every member pod (the operator's own win).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations of every member pod (the operator's own win).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Environment of the etcd container, after its own `POD_IP`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub etcd_env: Vec<EnvVar>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurityContext>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Members keep their data on claims of this spec (emptyDirs without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim_spec: Option<PersistentVolumeClaimSpec>,
    /// The rest of coreos's fields, kept.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// What the operator writes into an EtcdCluster's (open) status, coreos's fields and uc's (read with
/// defaults: a status another writer left may lack some).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EtcdClusterStatus {
    /// `Creating`, `Running`, `Scaling`, `Recovering`, `Upgrading`, `Restoring` or `Failed`.
    pub phase: String,
    /// The first condition's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Members, Ready or not.
    pub size: usize,
    pub ready_members: usize,
    pub members: MembersStatus,
    /// The lowest version a member runs.
    pub current_version: String,
    pub target_version: String,
    /// The client Service and its port.
    pub service_name: String,
    pub client_port: u16,
    /// The index the next member gets (a removed member's name is never reused).
    pub next_member_index: u64,
    /// The restore this cluster was made from (the EtcdRestore's uid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored_from: Option<String>,
    /// Since when quorum has been lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum_lost_since: Option<String>,
    pub conditions: Vec<uc_api::conditions::Condition>,
}

/// The members by readiness, each sorted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MembersStatus {
    pub ready: Vec<String>,
    pub unready: Vec<String>,
}

/// Automatic restore after quorum loss.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreOnQuorumLoss {
    /// The EtcdBackup (same namespace) whose latest snapshot is restored.
    #[schemars(length(min = 1))]
    pub backup_name: String,
    /// How long quorum must have been lost first (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seconds: Option<u32>,
}

/// Where backups are kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum StorageType {
    /// A directory on the machine (`local.path`).
    #[default]
    Local,
    /// An S3-compatible object store (`s3`).
    S3,
}

/// Local storage of backups.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LocalSource {
    /// A directory, or a file for a one-shot backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// A snapshot of an etcd cluster, once or periodically.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, CustomResource)]
#[kube(
    group = "etcd.database.coreos.com",
    version = "v1beta2",
    kind = "EtcdBackup",
    doc = "A backup of an etcd cluster taken by uc's etcd operator.",
    plural = "etcdbackups",
    namespaced,
    status = "OpenStatus",
    printcolumn = r#"{"name": "Succeeded", "type": "boolean", "jsonPath": ".status.succeeded"}"#,
    printcolumn = r#"{"name": "Revision", "type": "integer", "jsonPath": ".status.etcdRevision"}"#,
    printcolumn = r#"{"name": "Last Success", "type": "date", "jsonPath": ".status.lastSuccessDate"}"#,
    printcolumn = r#"{"name": "Reason", "type": "string", "jsonPath": ".status.reason"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct EtcdBackupSpec {
    /// Client URLs of the cluster (in-cluster names work).
    #[schemars(length(min = 1))]
    pub etcd_endpoints: Vec<String>,
    /// Where the snapshot goes.
    #[serde(default)]
    pub storage_type: StorageType,
    /// Local storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalSource>,
    /// S3 storage (`path` as `bucket/key`, `awsSecret`, `endpoint`, `forcePathStyle`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "free_form_object")]
    pub s3: Option<S3Source>,
    /// Periodic backups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_policy: Option<BackupPolicy>,
}

/// Periodic backups and retention.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupPolicy {
    /// Seconds between backups; 0 or absent: once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup_interval_in_second: Option<u64>,
    /// How many backups to keep; 0 or absent: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_backups: Option<u64>,
    /// How long one backup may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout_in_second: Option<u64>,
}

/// Rebuilds an EtcdCluster from a backup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, CustomResource)]
#[kube(
    group = "etcd.database.coreos.com",
    version = "v1beta2",
    kind = "EtcdRestore",
    doc = "A restore of an etcd cluster from a backup, done by uc's etcd operator.",
    plural = "etcdrestores",
    namespaced,
    status = "OpenStatus",
    printcolumn = r#"{"name": "Cluster", "type": "string", "jsonPath": ".spec.etcdCluster.name"}"#,
    printcolumn = r#"{"name": "Phase", "type": "string", "jsonPath": ".status.phase"}"#,
    printcolumn = r#"{"name": "Reason", "type": "string", "jsonPath": ".status.reason"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct EtcdRestoreSpec {
    /// The cluster to rebuild (created when it does not exist).
    pub etcd_cluster: ClusterReference,
    /// Where the backup is.
    #[serde(default)]
    pub backup_storage_type: StorageType,
    /// Local storage: the snapshot file, or a directory whose newest snapshot is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalSource>,
    /// S3 storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "free_form_object")]
    pub s3: Option<S3Source>,
}

/// coreos's `S3BackupSource`: the object as `<bucket>/<key>`, the Secret holding the AWS `credentials`
/// and `config` files, and an endpoint for S3-compatible stores (path-style requests unless
/// `forcePathStyle` is false).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct S3Source {
    pub path: String,
    pub aws_secret: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub force_path_style: Option<bool>,
}

/// The EtcdCluster a restore rebuilds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterReference {
    /// Its name (same namespace).
    #[schemars(length(min = 1))]
    pub name: String,
    /// Its size when it has to be created (default: the size the backup recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 7))]
    pub size: Option<u32>,
    /// Its version when it has to be created (default: the version the backup recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^v?3\.[0-9]+\.[0-9]+$"))]
    pub version: Option<String>,
}

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;
    use serde_json::json;

    use super::*;

    fn schema_of(crd: &Value) -> &Value {
        &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    }

    #[test]
    fn the_crds_keep_the_checks_the_hand_written_ones_had() {
        let cluster = serde_json::to_value(EtcdCluster::crd()).unwrap();
        assert_eq!(cluster["metadata"]["name"], json!(format!("etcdclusters.{}", super::super::GROUP)));
        assert_eq!(cluster["spec"]["names"]["shortNames"], json!(["etcd"]));
        assert_eq!(cluster["spec"]["scope"], json!("Namespaced"));
        let spec = schema_of(&cluster);
        assert_eq!(spec["required"], json!(["size"]));
        assert_eq!(
            (spec["properties"]["size"]["minimum"].as_f64(), spec["properties"]["size"]["maximum"].as_f64()),
            (Some(1.0), Some(7.0))
        );
        assert_eq!(spec["properties"]["version"]["pattern"], json!(r"^v?3\.[0-9]+\.[0-9]+$"));
        assert_eq!(spec["properties"]["pod"]["x-kubernetes-preserve-unknown-fields"], json!(true));
        assert_eq!(spec["properties"]["restoreOnQuorumLoss"]["required"], json!(["backupName"]));
        assert_eq!(spec["properties"]["restoreOnQuorumLoss"]["properties"]["backupName"]["minLength"], json!(1));
        let status = &cluster["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
        assert_eq!(status["x-kubernetes-preserve-unknown-fields"], json!(true));
        assert!(cluster["spec"]["versions"][0]["subresources"]["status"].is_object());

        let backup = serde_json::to_value(EtcdBackup::crd()).unwrap();
        let spec = schema_of(&backup);
        assert_eq!(spec["required"], json!(["etcdEndpoints"]));
        assert_eq!(spec["properties"]["etcdEndpoints"]["minItems"], json!(1));
        assert_eq!(spec["properties"]["storageType"]["enum"], json!(["Local", "S3"]));
        assert_eq!(spec["properties"]["storageType"]["default"], json!("Local"));
        assert_eq!(spec["properties"]["s3"]["x-kubernetes-preserve-unknown-fields"], json!(true));
        assert_eq!(spec["properties"]["backupPolicy"]["properties"]["timeoutInSecond"]["minimum"].as_f64(), Some(1.0));

        let restore = serde_json::to_value(EtcdRestore::crd()).unwrap();
        let spec = schema_of(&restore);
        assert_eq!(spec["required"], json!(["etcdCluster"]));
        assert_eq!(spec["properties"]["etcdCluster"]["required"], json!(["name"]));
        assert_eq!(spec["properties"]["backupStorageType"]["default"], json!("Local"));
        for crd in [&cluster, &backup, &restore] {
            let text = crd.to_string();
            assert!(!text.contains("$ref") && !text.contains("$schema"), "{text}");
        }
    }

    #[test]
    fn the_coreos_samples_parse() {
        let cluster: EtcdCluster = serde_json::from_value(json!({
            "apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster",
            "metadata": {"name": "example-etcd-cluster"},
            "spec": {"size": 3, "version": "3.2.13", "pod": {"busyboxImage": "busybox:1.28.0-glibc"}}
        }))
        .unwrap();
        assert_eq!((cluster.spec.size, cluster.spec.version.as_deref()), (3, Some("3.2.13")));
        let backup: EtcdBackupSpec = serde_json::from_value(json!({
            "etcdEndpoints": ["http://example-etcd-cluster-client:2379"], "storageType": "S3",
            "s3": {"path": "bucket/etcd.backup", "awsSecret": "aws"}
        }))
        .unwrap();
        assert_eq!(backup.storage_type, StorageType::S3);
        let restore: EtcdRestoreSpec =
            serde_json::from_value(json!({"etcdCluster": {"name": "example-etcd-cluster"}, "local": {"path": "/b"}}))
                .unwrap();
        assert_eq!(restore.backup_storage_type, StorageType::Local);
    }
}
