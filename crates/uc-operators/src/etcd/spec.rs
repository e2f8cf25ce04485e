//! The cluster as an EtcdCluster's spec describes it: its size, version and image, its members' names
//! and URLs, and the objects each member is made of (pod, data claim, Services).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, HTTPGetAction, HostPathVolumeSource,
    ObjectFieldSelector, PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, Pod,
    PodSecurityContext, PodSpec, Probe, Service, ServicePort, ServiceSpec, Volume, VolumeMount,
    VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;
use uc_api::meta::str_at;

use super::types::{EtcdClusterSpec, PodPolicy};

/// What is wrong with an EtcdCluster's spec (the schema admits none of these; they guard objects
/// written before it did).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("spec: {0}")]
    Unreadable(String),
    #[error("spec.size: {0} is not between 1 and 7")]
    Size(usize),
    #[error("spec.version: {0:?} is not an etcd 3.x version")]
    Version(String),
    #[error("spec.restoreOnQuorumLoss.backupName: names the EtcdBackup to restore from")]
    RestoreBackupName,
}

/// The etcd version when the spec names none (coreos's default).
const DEFAULT_VERSION: &str = "3.2.13";
/// The image repository when the spec names none (coreos's).
const DEFAULT_REPOSITORY: &str = "quay.io/coreos/etcd";
/// etcd's client port.
pub const CLIENT_PORT: u16 = 2379;
/// etcd's peer port.
pub const PEER_PORT: u16 = 2380;

/// The cluster as the spec describes it.
pub struct Spec {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub size: usize,
    pub version: String,
    pub repository: String,
    /// Opt-in: restore from this EtcdBackup's latest snapshot once quorum has been lost this long.
    pub restore_on_quorum_loss: Option<(String, u64)>,
    /// coreos `PodPolicy`: what every member's pod gets.
    pub pod_policy: PodPolicy,
}

impl Spec {
    /// The cluster an EtcdCluster object describes (its spec read as `EtcdClusterSpec`), or what in the
    /// spec is wrong.
    pub fn from(parent: &Value) -> Result<Spec, SpecError> {
        let spec = parent.get("spec").cloned().unwrap_or(Value::Null);
        let spec: EtcdClusterSpec = serde_path_to_error::deserialize(spec).map_err(|e| {
            let at = e.path().to_string();
            SpecError::Unreadable(if at == "." { e.inner().to_string() } else { format!("{at}: {}", e.inner()) })
        })?;
        let size = spec.size as usize;
        if !(1..=7).contains(&size) {
            return Err(SpecError::Size(size));
        }
        let version = spec.version.as_deref().unwrap_or("").trim_start_matches('v').to_string();
        let version = if version.is_empty() { DEFAULT_VERSION.to_string() } else { version };
        let parts: Vec<&str> = version.split('.').collect();
        if parts.len() != 3 || parts[0] != "3" || parts.iter().any(|p| p.parse::<u32>().is_err()) {
            return Err(SpecError::Version(version));
        }
        let repository = match spec.repository.as_deref() {
            None | Some("") => DEFAULT_REPOSITORY.to_string(),
            Some(r) => r.to_string(),
        };
        let restore_on_quorum_loss = match spec.restore_on_quorum_loss {
            Some(r) if r.backup_name.is_empty() => return Err(SpecError::RestoreBackupName),
            Some(r) => Some((r.backup_name, u64::from(r.after_seconds.unwrap_or(30)))),
            None => None,
        };
        Ok(Spec {
            name: str_at(parent, "/metadata/name").into(),
            namespace: str_at(parent, "/metadata/namespace").into(),
            uid: str_at(parent, "/metadata/uid").into(),
            size,
            version,
            repository,
            restore_on_quorum_loss,
            pod_policy: spec.pod.unwrap_or_default(),
        })
    }

    pub fn image(&self) -> String {
        format!("{}:v{}", self.repository, self.version)
    }

    pub fn host(&self, member: &str) -> String {
        format!("{member}.{}.{}.svc", self.name, self.namespace)
    }

    pub fn peer_url(&self, member: &str) -> String {
        format!("http://{}:{PEER_PORT}", self.host(member))
    }

    pub fn client_url(&self, member: &str) -> String {
        format!("http://{}:{CLIENT_PORT}", self.host(member))
    }

    pub fn member_name(&self, index: u32) -> String {
        format!("{}-{index:04}", self.name)
    }

    pub fn index_of(&self, member: &str) -> Option<u32> {
        member.strip_prefix(&self.name)?.strip_prefix('-')?.parse().ok()
    }

    pub fn labels(&self) -> BTreeMap<String, String> {
        [("app", "etcd"), ("etcd_cluster", self.name.as_str())].map(|(k, v)| (k.to_string(), v.to_string())).into()
    }

    fn port(name: &str, port: u16) -> ServicePort {
        let target = Some(IntOrString::Int(port.into()));
        ServicePort { name: Some(name.into()), port: port.into(), target_port: target, ..Default::default() }
    }

    /// The headless Service (members' peer names, not-ready members too) and the client Service.
    pub fn services(&self) -> Vec<Service> {
        let service = |name: String, spec: ServiceSpec| Service {
            metadata: ObjectMeta { name: Some(name), labels: Some(self.labels()), ..Default::default() },
            spec: Some(ServiceSpec { selector: Some(self.labels()), ..spec }),
            ..Default::default()
        };
        let headless = ServiceSpec {
            cluster_ip: Some("None".into()),
            publish_not_ready_addresses: Some(true),
            ports: Some(vec![Self::port("client", CLIENT_PORT), Self::port("peer", PEER_PORT)]),
            ..Default::default()
        };
        let client = ServiceSpec { ports: Some(vec![Self::port("client", CLIENT_PORT)]), ..Default::default() };
        vec![service(self.name.clone(), headless), service(format!("{}-client", self.name), client)]
    }

    /// A member's etcd container.
    fn container(&self, member: &str, initial_cluster: &str, state: &str) -> Container {
        let command = vec![
            "/usr/local/bin/etcd".to_string(),
            "--data-dir=/var/etcd/data".into(),
            format!("--name={member}"),
            format!("--initial-advertise-peer-urls={}", self.peer_url(member)),
            format!("--listen-peer-urls=http://$(POD_IP):{PEER_PORT}"),
            format!("--listen-client-urls=http://$(POD_IP):{CLIENT_PORT}"),
            format!("--advertise-client-urls={}", self.client_url(member)),
            format!("--initial-cluster={initial_cluster}"),
            format!("--initial-cluster-state={state}"),
            format!("--initial-cluster-token={}", self.uid),
        ];
        let pod_ip = EnvVarSource {
            field_ref: Some(ObjectFieldSelector { field_path: "status.podIP".into(), ..Default::default() }),
            ..Default::default()
        };
        let mut env = vec![EnvVar { name: "POD_IP".into(), value_from: Some(pod_ip), ..Default::default() }];
        // The policy's own POD_IP would break the URLs above.
        env.extend(self.pod_policy.etcd_env.iter().filter(|e| e.name != "POD_IP").cloned());
        let port = |name: &str, port: u16| ContainerPort {
            name: Some(name.into()),
            container_port: port.into(),
            ..Default::default()
        };
        let health = HTTPGetAction {
            path: Some("/health".into()),
            port: IntOrString::Int(CLIENT_PORT.into()),
            ..Default::default()
        };
        Container {
            name: "etcd".into(),
            image: Some(self.image()),
            command: Some(command),
            env: Some(env),
            ports: Some(vec![port("client", CLIENT_PORT), port("peer", PEER_PORT)]),
            readiness_probe: Some(Probe {
                http_get: Some(health),
                initial_delay_seconds: Some(0),
                period_seconds: Some(1),
                failure_threshold: Some(3),
                ..Default::default()
            }),
            resources: self.pod_policy.resources.clone(),
            volume_mounts: Some(vec![mount("etcd-data", "/var/etcd", false)]),
            ..Default::default()
        }
    }

    /// A member's pod. `initial_cluster` lists `name=peerURL` of every member it starts with.
    pub fn pod(&self, member: &str, initial_cluster: &str, state: &str) -> Pod {
        let policy = &self.pod_policy;
        // The policy's labels and annotations, the operator's own winning.
        let mut labels = policy.labels.clone();
        labels.extend(self.labels());
        let mut annotations = policy.annotations.clone();
        annotations.insert("etcd.version".into(), self.version.clone());
        let data = match policy.persistent_volume_claim_spec {
            Some(_) => Volume {
                name: "etcd-data".into(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: member.into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            None => Volume {
                name: "etcd-data".into(),
                empty_dir: Some(EmptyDirVolumeSource::default()),
                ..Default::default()
            },
        };
        let spec = PodSpec {
            hostname: Some(member.into()),
            subdomain: Some(self.name.clone()),
            // A member that dies is replaced, not restarted: its data may be gone (coreos does the same).
            restart_policy: Some("Never".into()),
            containers: vec![self.container(member, initial_cluster, state)],
            volumes: Some(vec![data]),
            node_selector: policy.node_selector.clone(),
            affinity: policy.affinity.clone(),
            tolerations: policy.tolerations.clone(),
            security_context: policy.security_context.clone(),
            priority_class_name: policy.priority_class_name.clone(),
            ..Default::default()
        };
        let meta = ObjectMeta {
            name: Some(member.into()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..Default::default()
        };
        let mut pod = Pod { metadata: meta, spec: Some(spec), ..Default::default() };
        crate::restricted::harden(&mut pod);
        pod
    }

    /// The data claim a member's pod names, if any (it goes with the member).
    pub fn claim_of(&self, pod: &Pod) -> Option<PersistentVolumeClaim> {
        let volumes = pod.spec.as_ref()?.volumes.as_ref()?;
        let claim = volumes.iter().find_map(|v| Some(v.persistent_volume_claim.as_ref()?.claim_name.as_str()))?;
        let spec = self.pod_policy.persistent_volume_claim_spec.clone().unwrap_or_else(|| PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some([("storage".to_string(), Quantity("1Gi".into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        });
        Some(PersistentVolumeClaim {
            metadata: ObjectMeta { name: Some(claim.into()), labels: Some(self.labels()), ..Default::default() },
            spec: Some(spec),
            ..Default::default()
        })
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: read_only.then_some(true),
        ..Default::default()
    }
}

impl Spec {
    /// A member of a restored cluster (`initial_cluster` names them all): an init container writes its
    /// data directory from the snapshot (`etcdctl snapshot restore`, the image's own etcdctl, etcd's
    /// multi-member restore) before etcd starts on it.
    pub fn restore_pod(&self, member: &str, initial_cluster: &str, snapshot: &std::path::Path, id: &str) -> Pod {
        let mut pod = self.pod(member, initial_cluster, "new");
        let dir = snapshot.parent().map(|d| d.display().to_string()).unwrap_or_else(|| "/".into());
        let file = snapshot.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let annotations = pod.metadata.annotations.get_or_insert_with(Default::default);
        annotations.insert("etcd.database.coreos.com/restored-from".into(), snapshot.display().to_string());
        annotations.insert("etcd.database.coreos.com/restore-id".into(), id.into());
        let command = vec![
            "/usr/local/bin/etcdctl".to_string(),
            "snapshot".into(),
            "restore".into(),
            format!("/var/etcd-restore/{file}"),
            format!("--name={member}"),
            format!("--initial-cluster={initial_cluster}"),
            format!("--initial-cluster-token={}", self.uid),
            format!("--initial-advertise-peer-urls={}", self.peer_url(member)),
            "--data-dir=/var/etcd/data".into(),
        ];
        let restore = Container {
            name: "restore".into(),
            image: Some(self.image()),
            command: Some(command),
            env: Some(vec![EnvVar { name: "ETCDCTL_API".into(), value: Some("3".into()), ..Default::default() }]),
            volume_mounts: Some(vec![
                mount("etcd-data", "/var/etcd", false),
                mount("backup", "/var/etcd-restore", true),
            ]),
            ..Default::default()
        };
        let backup = Volume {
            name: "backup".into(),
            host_path: Some(HostPathVolumeSource { path: dir, type_: Some("Directory".into()) }),
            ..Default::default()
        };
        let spec = pod.spec.get_or_insert_with(Default::default);
        spec.init_containers = Some(vec![restore]);
        spec.volumes.get_or_insert_with(Vec::new).push(backup);
        // The snapshot is the machine's, readable by root only: the restoring member runs as root (its
        // namespace allows hostPath, so privileged pods, already).
        spec.security_context = Some(PodSecurityContext { run_as_user: Some(0), ..Default::default() });
        crate::restricted::harden(&mut pod);
        pod
    }
}
