//! The cluster as an EtcdCluster's spec describes it: its size, version and image, its members' names
//! and URLs, and the objects each member is made of (pod, data claim, Services).

use serde_json::{Value, json};
use uc_api::meta::str_at;

use super::types::EtcdClusterSpec;

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
    pub pod_policy: Value,
}

impl Spec {
    /// The cluster an EtcdCluster object describes (its spec read as `EtcdClusterSpec`), or what in the
    /// spec is wrong.
    pub fn from(parent: &Value) -> Result<Spec, SpecError> {
        let spec = parent.get("spec").cloned().unwrap_or(Value::Null);
        let spec: EtcdClusterSpec = serde_json::from_value(spec).map_err(|e| SpecError::Unreadable(e.to_string()))?;
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
            pod_policy: spec.pod.unwrap_or(Value::Null),
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

    pub fn labels(&self) -> Value {
        json!({"app": "etcd", "etcd_cluster": self.name})
    }

    pub fn services(&self) -> Vec<Value> {
        let ports = json!([{"name": "client", "port": CLIENT_PORT, "targetPort": CLIENT_PORT},
                           {"name": "peer", "port": PEER_PORT, "targetPort": PEER_PORT}]);
        vec![
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": self.name, "labels": self.labels()},
                   "spec": {"clusterIP": "None", "publishNotReadyAddresses": true, "selector": self.labels(), "ports": ports}}),
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": format!("{}-client", self.name), "labels": self.labels()},
                   "spec": {"selector": self.labels(),
                            "ports": [{"name": "client", "port": CLIENT_PORT, "targetPort": CLIENT_PORT}]}}),
        ]
    }

    /// A member's pod. `initial_cluster` lists `name=peerURL` of every member it starts with.
    pub fn pod(&self, member: &str, initial_cluster: &str, state: &str) -> Value {
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
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": member, "labels": self.labels(),
                         "annotations": {"etcd.version": self.version}},
            "spec": {
                "hostname": member, "subdomain": self.name,
                // A member that dies is replaced, not restarted: its data may be gone (coreos does the same).
                "restartPolicy": "Never",
                "containers": [{
                    "name": "etcd", "image": self.image(),
                    "command": command,
                    "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                    "ports": [{"name": "client", "containerPort": CLIENT_PORT}, {"name": "peer", "containerPort": PEER_PORT}],
                    "readinessProbe": {"httpGet": {"path": "/health", "port": CLIENT_PORT},
                                       "initialDelaySeconds": 0, "periodSeconds": 1, "failureThreshold": 3},
                    "volumeMounts": [{"name": "etcd-data", "mountPath": "/var/etcd"}]
                }],
                "volumes": [{"name": "etcd-data", "emptyDir": {}}]
            }
        });
        self.apply_pod_policy(&mut pod);
        if self.pod_policy.get("persistentVolumeClaimSpec").is_some_and(Value::is_object) {
            pod["spec"]["volumes"][0] = json!({"name": "etcd-data", "persistentVolumeClaim": {"claimName": member}});
        }
        crate::restricted::harden(&mut pod);
        pod
    }

    /// The data claim a member's pod names, if any (it goes with the member).
    pub fn claim_of(&self, pod: &Value) -> Option<Value> {
        let volumes = pod.pointer("/spec/volumes")?.as_array()?;
        let claim = volumes.iter().find_map(|v| v.pointer("/persistentVolumeClaim/claimName")?.as_str())?;
        let spec = self.pod_policy.get("persistentVolumeClaimSpec").filter(|s| s.is_object()).cloned().unwrap_or_else(
            || json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}),
        );
        Some(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": claim, "labels": self.labels()}, "spec": spec}))
    }

    /// The coreos `PodPolicy`: labels and annotations (the operator's own win), `etcdEnv`, `resources`,
    /// and the scheduling and security fields copied onto the pod as they are.
    pub fn apply_pod_policy(&self, pod: &mut Value) {
        let policy = &self.pod_policy;
        for (from, to) in [("labels", "labels"), ("annotations", "annotations")] {
            for (k, v) in policy.get(from).and_then(Value::as_object).into_iter().flatten() {
                let map = &mut pod["metadata"][to];
                if map.get(k).is_none() && v.is_string() {
                    map[k] = v.clone();
                }
            }
        }
        let container = &mut pod["spec"]["containers"][0];
        if let Some(env) = policy.get("etcdEnv").and_then(Value::as_array)
            && let Some(list) = container["env"].as_array_mut()
        {
            list.extend(env.iter().filter(|e| e.get("name").is_some_and(|n| n != "POD_IP")).cloned());
        }
        if let Some(r) = policy.get("resources").filter(|r| r.is_object()) {
            container["resources"] = r.clone();
        }
        for field in ["nodeSelector", "affinity", "tolerations", "securityContext", "priorityClassName"] {
            if let Some(v) = policy.get(field).filter(|v| !v.is_null()) {
                pod["spec"][field] = v.clone();
            }
        }
    }
}

impl Spec {
    /// A member of a restored cluster (`initial_cluster` names them all): an init container writes its
    /// data directory from the snapshot (`etcdctl snapshot restore`, the image's own etcdctl, etcd's
    /// multi-member restore) before etcd starts on it.
    pub fn restore_pod(&self, member: &str, initial_cluster: &str, snapshot: &std::path::Path, id: &str) -> Value {
        let mut pod = self.pod(member, initial_cluster, "new");
        let dir = snapshot.parent().map(|d| d.display().to_string()).unwrap_or_else(|| "/".into());
        let file = snapshot.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        pod["metadata"]["annotations"]["etcd.database.coreos.com/restored-from"] =
            json!(snapshot.display().to_string());
        pod["metadata"]["annotations"]["etcd.database.coreos.com/restore-id"] = json!(id);
        pod["spec"]["initContainers"] = json!([{
            "name": "restore", "image": self.image(),
            "command": ["/usr/local/bin/etcdctl", "snapshot", "restore", format!("/var/etcd-restore/{file}"),
                format!("--name={member}"),
                format!("--initial-cluster={initial_cluster}"),
                format!("--initial-cluster-token={}", self.uid),
                format!("--initial-advertise-peer-urls={}", self.peer_url(member)),
                "--data-dir=/var/etcd/data"],
            "env": [{"name": "ETCDCTL_API", "value": "3"}],
            "volumeMounts": [{"name": "etcd-data", "mountPath": "/var/etcd"},
                             {"name": "backup", "mountPath": "/var/etcd-restore", "readOnly": true}]
        }]);
        if let Some(v) = pod.pointer_mut("/spec/volumes").and_then(Value::as_array_mut) {
            v.push(json!({"name": "backup", "hostPath": {"path": dir, "type": "Directory"}}));
        }
        // The snapshot is the machine's, readable by root only: the restoring member runs as root (its
        // namespace allows hostPath, so privileged pods, already).
        pod["spec"]["securityContext"] = json!({"runAsUser": 0});
        crate::restricted::harden(&mut pod);
        pod
    }
}
