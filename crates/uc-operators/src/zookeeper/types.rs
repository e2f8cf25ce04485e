//! `zookeeper.pravega.io/v1beta1` `ZookeeperCluster` as Rust types, with the pravega zookeeper-operator's
//! field names (`../shared/third_party/zookeeper/crds/`), so its users' YAML runs unchanged. The CRD is
//! derived from these types; the Kubernetes parts (pod policy, claims, probes' numbers) are
//! k8s-openapi's own types. Status adds, to pravega's fields, what uc reads from the servers
//! (`leader`, `servers`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, LocalObjectReference, PersistentVolumeClaimSpec,
    PodSecurityContext, ResourceRequirements, Toleration, TopologySpreadConstraint, Volume, VolumeMount,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uc_api::controller::free_form_object;

/// A ZooKeeper ensemble run by uc's ZooKeeper operator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema, CustomResource)]
#[kube(
    group = "zookeeper.pravega.io",
    version = "v1beta1",
    kind = "ZookeeperCluster",
    doc = "A ZooKeeper ensemble run by uc's ZooKeeper operator (the pravega zookeeper-operator's API).",
    plural = "zookeeperclusters",
    shortname = "zk",
    namespaced,
    status = "ZookeeperClusterStatus",
    printcolumn = r#"{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "description": "The number of ZooKeeper servers in the ensemble"}"#,
    printcolumn = r#"{"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas", "description": "Servers serving in the ensemble"}"#,
    printcolumn = r#"{"name": "Version", "type": "string", "jsonPath": ".status.currentVersion", "description": "The version every server runs"}"#,
    printcolumn = r#"{"name": "Leader", "type": "string", "jsonPath": ".status.leader", "description": "The server that leads the ensemble"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ZookeeperClusterSpec {
    /// The expected size of the ensemble, 1 to 7 (default 3); with `ensemble`, this cluster's share
    /// of it, 0 to 7. Changed one server at a time through ZooKeeper's dynamic reconfiguration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 7))]
    pub replicas: Option<i32>,
    /// The container image (default `zookeeper:3.8`; `pravega/zookeeper` tags run the machine's
    /// ZooKeeper on the embedded node too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ContainerImage>,
    /// The static ZooKeeper configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ZookeeperConfig>,
    /// `persistence` (the default: a claim per server) or `ephemeral` (an emptyDir).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_type: Option<String>,
    /// The claim each server's data lives on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence: Option<Persistence>,
    /// The emptyDir of each server's data, with `storageType: ephemeral`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<Ephemeral>,
    /// What every server's pod gets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodPolicy>,
    /// Timing of the readiness and liveness probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<Probes>,
    /// The most servers unavailable at once (the PodDisruptionBudget's maxUnavailable; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable_replicas: Option<i32>,
    /// Set to true to restart every server once, one at a time (the field is reset when done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_rolling_restart: Option<bool>,
    /// The cluster's DNS domain (default `cluster.local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_cluster_domain: Option<String>,
    /// External host name appended for DNS annotations (accepted; no external DNS here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_name: Option<String>,
    /// Labels for every object the operator makes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// The server's ports (`client`, `quorum`, `leader-election`, `metrics`, `admin-server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<ContainerPort>>,
    /// The client Service's policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_service: Option<ServicePolicy>,
    /// The headless Service's policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless_service: Option<ServicePolicy>,
    /// The AdminServer Service's policy (accepted; the AdminServer is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_server_service: Option<AdminServerServicePolicy>,
    /// Containers run beside ZooKeeper in every server's pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Vec<Container>>,
    /// Init containers run before ZooKeeper's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_containers: Option<Vec<Container>>,
    /// Extra volumes of every server's pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<Volume>>,
    /// Extra mounts of the ZooKeeper container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
    /// This cluster holds part of an ensemble spread over several clusters (uc's addition; the
    /// MultiClusterZooKeeper operator sets it): every server of the ensemble, and the ids of this
    /// cluster's own. `replicas` is then this cluster's share, and may be 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ensemble: Option<EnsembleSpec>,
}

/// The whole ensemble, when it spans clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnsembleSpec {
    /// The `myid` of this cluster's first server: the server with ordinal `i` has `firstId + i`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_id: Option<i64>,
    /// Every server of the ensemble, in every cluster: its id and the address the others reach it
    /// at (a clusterset name, `<pod>.<cluster>.<headless service>.<namespace>.svc.clusterset.local`).
    #[serde(default)]
    pub servers: Vec<EnsembleServer>,
}

/// One server of a multi-cluster ensemble.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EnsembleServer {
    /// Its `myid`.
    pub id: i64,
    /// Its address (a DNS name every server and the operators resolve).
    pub host: String,
}

/// An image: repository and tag.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerImage {
    /// The repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// The tag: the version `status.currentVersion` reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// When to pull it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_policy: Option<String>,
}

/// ZooKeeper's static configuration (`zoo.cfg`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZookeeperConfig {
    /// Ticks a follower may take to connect and sync to the leader (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_limit: Option<i32>,
    /// Milliseconds per tick (default 2000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_time: Option<i32>,
    /// Ticks a follower may lag behind the leader (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_limit: Option<i32>,
    /// Most outstanding requests (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_outstanding_limit: Option<i32>,
    /// Transaction log preallocation, KB (default 65536).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_alloc_size: Option<i32>,
    /// Transactions between snapshots (default 100000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snap_count: Option<i32>,
    /// Committed requests kept in memory (default 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_log_count: Option<i32>,
    /// Snapshot size limit, KB (default 4 GB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snap_size_limit_in_kb: Option<i32>,
    /// Most connections in all (default unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cnxns: Option<i32>,
    /// Most connections from one address (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_client_cnxns: Option<i32>,
    /// Smallest session timeout, ms (default 2 × tickTime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_session_timeout: Option<i32>,
    /// Largest session timeout, ms (default 20 × tickTime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_session_timeout: Option<i32>,
    /// Snapshots kept by the purge task (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_purge_snap_retain_count: Option<i32>,
    /// Hours between purges (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_purge_purge_interval: Option<i32>,
    /// Listen for quorum connections on all addresses (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "quorumListenOnAllIPs")]
    pub quorum_listen_on_all_ips: Option<bool>,
    /// More `key: value` settings written into `zoo.cfg` as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_config: Option<BTreeMap<String, String>>,
}

/// Data on claims.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Persistence {
    /// `Delete` (the default): a server's claim goes when it leaves the ensemble and with the cluster;
    /// `Retain`: claims stay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim_policy: Option<String>,
    /// The claims' spec (default: ReadWriteOnce, 20Gi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<PersistentVolumeClaimSpec>,
    /// Annotations of the claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// Data on an emptyDir.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Ephemeral {
    /// The emptyDir (pravega's field name, lower case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emptydirvolumesource: Option<EmptyDirVolumeSource>,
}

/// What every server's pod gets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodPolicy {
    /// Pod labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Pod annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Node selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Scheduling constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Topology spread constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
    /// The ZooKeeper container's resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Tolerations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// More environment of the ZooKeeper container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// The pod's security context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurityContext>,
    /// Seconds between SIGTERM and SIGKILL (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    /// The pods' service account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Image pull secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,
}

/// Probe timing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Probes {
    /// The readiness probe's timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness_probe: Option<ProbeTiming>,
    /// The liveness probe's timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liveness_probe: Option<ProbeTiming>,
}

/// The numbers of a probe.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeTiming {
    /// Seconds before the first probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_delay_seconds: Option<i32>,
    /// Seconds between probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_seconds: Option<i32>,
    /// Failures in a row that count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_threshold: Option<i32>,
    /// Successes in a row that count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_threshold: Option<i32>,
    /// Seconds a probe may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
}

/// A Service's policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServicePolicy {
    /// Annotations of the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// The AdminServer Service's policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AdminServerServicePolicy {
    /// Annotations of the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Expose it outside the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<bool>,
}

/// What the operator observed, from the servers themselves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZookeeperClusterStatus {
    /// The generation of the spec this status is of (uc's addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Servers in the ensemble's configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Servers serving in the ensemble (answering `srvr` as leader, follower or observer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Pods of servers that serve, and of those that do not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<Members>,
    /// `<client service>:<port>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_client_endpoint: Option<String>,
    /// Not served here (no load balancers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_client_endpoint: Option<String>,
    /// The image tag every server runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_version: Option<String>,
    /// The image tag being rolled out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_version: Option<String>,
    /// Whether the operator created its root znode (pravega's field; unused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta_root_created: Option<bool>,
    /// `PodsReady`, `Upgrading`, `Error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "conditions")]
    pub conditions: Option<Vec<uc_api::conditions::Condition>>,
    /// The pod of the server that leads (uc's addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<String>,
    /// The rolling restart round done or under way: the generation at which `triggerRollingRestart`
    /// turned true (uc's addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_round: Option<String>,
    /// The membership change under way, in words (uc's addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// Every server as it reports itself (uc's addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<ServerStatus>>,
}

/// Pods by whether their server serves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Members {
    /// Serving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<Vec<String>>,
    /// Not (yet) serving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unready: Option<Vec<String>>,
}

/// One server, as it reports itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// Its pod.
    pub name: String,
    /// Its `myid`.
    pub id: u32,
    /// `leader`, `follower`, `observer`, or `unknown` when it does not answer.
    pub mode: String,
    /// The last transaction it has, hex (`0x…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zxid: Option<String>,
}

fn conditions(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut items = free_form_object(generator);
    items.insert("type".into(), "object".into());
    schemars::json_schema!({"type": "array", "items": items})
}
