//! The ensemble as a ZookeeperCluster's spec describes it: its size and image, its servers' names,
//! ids and addresses, and ZooKeeper's static configuration (`zoo.cfg`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EmptyDirVolumeSource, PersistentVolumeClaimSpec, VolumeResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::Value;
use uc_api::meta::str_at;

use super::types::{ZookeeperClusterSpec, ZookeeperConfig};

/// What is wrong with a ZookeeperCluster's spec.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("spec: {0}")]
    Unreadable(String),
    #[error("spec.replicas: {0} is not between 1 and 7 (0 only for a cluster holding part of an ensemble)")]
    Replicas(i32),
    #[error("spec.ensemble.{0}")]
    Ensemble(String),
    #[error("spec.storageType: {0:?} is neither persistence nor ephemeral")]
    StorageType(String),
    #[error("spec.persistence.reclaimPolicy: {0:?} is neither Delete nor Retain")]
    ReclaimPolicy(String),
    #[error("spec.config.additionalConfig.{0}: the operator sets it (the ensemble depends on its value)")]
    Reserved(String),
}

/// The image when the spec names none.
const DEFAULT_REPOSITORY: &str = "zookeeper";
const DEFAULT_TAG: &str = "3.8";
/// ZooKeeper's ports: clients, followers to the leader, leader election.
pub const CLIENT_PORT: u16 = 2181;
pub const QUORUM_PORT: u16 = 2888;
pub const ELECTION_PORT: u16 = 3888;
/// Where a server's data (and its own copy of the configuration, which reconfiguration rewrites) live.
pub const DATA_DIR: &str = "/data";

/// Settings the operator owns: the ensemble's membership and safety depend on them.
const RESERVED: &[&str] = &[
    "dataDir",
    "dynamicConfigFile",
    "reconfigEnabled",
    "standaloneEnabled",
    "clientPort",
    "clientPortAddress",
    "4lw.commands.whitelist",
];

/// Where a server's data lives.
#[derive(Clone, Debug, PartialEq)]
pub enum Storage {
    /// A claim per server; `delete`: the claim goes when the server leaves the ensemble.
    Persistent { claim_spec: Box<PersistentVolumeClaimSpec>, annotations: BTreeMap<String, String>, delete: bool },
    /// An emptyDir (data survives container restarts, not the pod).
    Ephemeral { empty_dir: EmptyDirVolumeSource },
}

/// The ensemble as the spec describes it.
pub struct Spec {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub replicas: u32,
    pub repository: String,
    pub tag: String,
    pub pull_policy: Option<String>,
    pub domain: String,
    pub storage: Storage,
    /// The rolling restart round asked for (see `rollout`), set by the sync from the status.
    pub restart_round: Option<String>,
    /// The `myid` of the server with ordinal 0 (1, unless the ensemble spans clusters).
    pub first_id: u32,
    /// Every server of an ensemble that spans clusters (id → address); None for one in this cluster.
    pub ensemble: Option<BTreeMap<u32, String>>,
    /// The typed spec, for the parts copied into pods as they are.
    pub spec: ZookeeperClusterSpec,
}

/// Where the servers' data lives: on a claim per server (`persistence`, the default: 20Gi
/// ReadWriteOnce unless the spec says otherwise) or in an emptyDir (`ephemeral`).
fn storage_of(spec: &ZookeeperClusterSpec) -> Result<Storage, SpecError> {
    let storage = match spec.storage_type.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("") | Some("persistence") => {
            let p = spec.persistence.clone().unwrap_or_default();
            let delete = match p.reclaim_policy.as_deref() {
                None | Some("") | Some("Delete") => true,
                Some("Retain") => false,
                Some(other) => return Err(SpecError::ReclaimPolicy(other.into())),
            };
            let claim_spec = p.spec.unwrap_or_else(|| PersistentVolumeClaimSpec {
                access_modes: Some(vec!["ReadWriteOnce".into()]),
                resources: Some(VolumeResourceRequirements {
                    requests: Some([("storage".to_string(), Quantity("20Gi".into()))].into()),
                    ..Default::default()
                }),
                ..Default::default()
            });
            Storage::Persistent {
                claim_spec: Box::new(claim_spec),
                annotations: p.annotations.unwrap_or_default(),
                delete,
            }
        }
        Some("ephemeral") => {
            let empty_dir = spec.ephemeral.as_ref().and_then(|e| e.emptydirvolumesource.clone());
            Storage::Ephemeral { empty_dir: empty_dir.unwrap_or_default() }
        }
        Some(_) => return Err(SpecError::StorageType(spec.storage_type.clone().unwrap_or_default())),
    };
    Ok(storage)
}

impl Spec {
    /// The ensemble a ZookeeperCluster object describes, or what in its spec is wrong.
    pub fn from(parent: &Value) -> Result<Spec, SpecError> {
        let raw = parent.get("spec").cloned().unwrap_or_else(|| Value::Object(Default::default()));
        let spec: ZookeeperClusterSpec =
            serde_json::from_value(raw).map_err(|e| SpecError::Unreadable(e.to_string()))?;
        let replicas = spec.replicas.unwrap_or(3);
        let least = if spec.ensemble.is_some() { 0 } else { 1 };
        if !(least..=7).contains(&replicas) {
            return Err(SpecError::Replicas(replicas));
        }
        let (first_id, ensemble) = match &spec.ensemble {
            None => (1, None),
            Some(e) => {
                let first = e.first_id.unwrap_or(1);
                if !(1..=i64::from(u32::MAX)).contains(&first) {
                    return Err(SpecError::Ensemble(format!("firstId: {first} is not a server id")));
                }
                let mut servers = BTreeMap::new();
                for (i, server) in e.servers.iter().enumerate() {
                    if !(1..=i64::from(u32::MAX)).contains(&server.id) || server.host.is_empty() {
                        return Err(SpecError::Ensemble(format!("servers[{i}]: needs an id ≥ 1 and a host")));
                    }
                    if servers.insert(server.id as u32, server.host.clone()).is_some() {
                        return Err(SpecError::Ensemble(format!("servers[{i}].id: {} is listed twice", server.id)));
                    }
                }
                let first = first as u32;
                if let Some(o) = (0..replicas as u32).find(|o| !servers.contains_key(&(first + o))) {
                    return Err(SpecError::Ensemble(format!(
                        "servers: no server with id {} (this cluster's server with ordinal {o})",
                        first + o
                    )));
                }
                (first, Some(servers))
            }
        };
        let image = spec.image.clone().unwrap_or_default();
        let nonempty = |s: Option<String>, default: &str| s.filter(|s| !s.is_empty()).unwrap_or_else(|| default.into());
        let storage = storage_of(&spec)?;
        if let Some(extra) = spec.config.as_ref().and_then(|c| c.additional_config.as_ref())
            && let Some(k) = extra.keys().find(|k| RESERVED.contains(&k.as_str()))
        {
            return Err(SpecError::Reserved(k.clone()));
        }
        Ok(Spec {
            name: str_at(parent, "/metadata/name").into(),
            namespace: str_at(parent, "/metadata/namespace").into(),
            uid: str_at(parent, "/metadata/uid").into(),
            replicas: replicas as u32,
            repository: nonempty(image.repository, DEFAULT_REPOSITORY),
            tag: nonempty(image.tag, DEFAULT_TAG),
            pull_policy: image.pull_policy,
            domain: nonempty(spec.kubernetes_cluster_domain.clone(), "cluster.local"),
            storage,
            restart_round: None,
            first_id,
            ensemble,
            spec,
        })
    }

    pub fn image(&self) -> String {
        format!("{}:{}", self.repository, self.tag)
    }

    /// The headless Service that gives every server its DNS name.
    pub fn headless(&self) -> String {
        format!("{}-headless", self.name)
    }

    /// The Service clients connect to.
    pub fn client_service(&self) -> String {
        format!("{}-client", self.name)
    }

    /// The ConfigMap holding the static `zoo.cfg`.
    pub fn config_map(&self) -> String {
        format!("{}-configmap", self.name)
    }

    /// The Secret with the password of ZooKeeper's super user (the operator's, for reconfiguration).
    pub fn admin_secret(&self) -> String {
        format!("{}-admin", self.name)
    }

    /// The pod of the server with ordinal `i` (its `myid` is `first_id + i`).
    pub fn pod_name(&self, ordinal: u32) -> String {
        format!("{}-{ordinal}", self.name)
    }

    /// The `myid` of the server with ordinal `i`.
    pub fn id(&self, ordinal: u32) -> u32 {
        self.first_id + ordinal
    }

    /// The ordinal a server id would have here (whether such a server is this cluster's is for the
    /// caller to say: see `plan`).
    pub fn ordinal_of_id(&self, id: u32) -> Option<u32> {
        id.checked_sub(self.first_id)
    }

    /// Whether this cluster starts a new ensemble: always when the ensemble is its own; when it spans
    /// clusters, only the cluster of the lowest id does (the others join it).
    pub fn bootstraps(&self) -> bool {
        self.ensemble.as_ref().is_none_or(|e| e.keys().next().is_none_or(|lowest| *lowest == self.first_id))
    }

    /// The addresses of the servers of other clusters (id → host), when the ensemble spans clusters.
    pub fn remote_servers(&self) -> Vec<(u32, String)> {
        let Some(e) = &self.ensemble else { return Vec::new() };
        let local = self.first_id..self.first_id + self.replicas;
        e.iter().filter(|(id, _)| !local.contains(id)).map(|(id, h)| (*id, h.clone())).collect()
    }

    /// The ordinal of a server's pod.
    pub fn ordinal_of(&self, pod: &str) -> Option<u32> {
        pod.strip_prefix(&self.name)?.strip_prefix('-')?.parse().ok()
    }

    /// The data claim of the server with ordinal `i` (a StatefulSet's name for it).
    pub fn claim_name(&self, ordinal: u32) -> String {
        format!("data-{}", self.pod_name(ordinal))
    }

    /// The server's DNS name: under the headless Service, or the address the ensemble lists for it
    /// when the ensemble spans clusters.
    pub fn fqdn(&self, ordinal: u32) -> String {
        if let Some(host) = self.ensemble.as_ref().and_then(|e| e.get(&self.id(ordinal))) {
            return host.clone();
        }
        format!("{}.{}.{}.svc.{}", self.pod_name(ordinal), self.headless(), self.namespace, self.domain)
    }

    /// The server's line in the dynamic configuration: `server.<id>=<host>:2888:3888:<role>;<host>:2181`
    /// (the client address is the server's own name, so that servers sharing a machine do not share a
    /// port).
    pub fn server_line(&self, ordinal: u32, role: Role) -> String {
        let host = self.fqdn(ordinal);
        format!(
            "server.{}={host}:{QUORUM_PORT}:{ELECTION_PORT}:{};{host}:{CLIENT_PORT}",
            self.id(ordinal),
            role.as_str()
        )
    }

    /// `<client service>:<port>`, as pravega reports it.
    pub fn client_endpoint(&self) -> String {
        format!("{}:{CLIENT_PORT}", self.client_service())
    }

    /// Labels of every object the operator makes (pravega's `app` label, uc's cluster label, the
    /// spec's own).
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut l = self.spec.labels.clone().unwrap_or_default();
        l.insert("app".into(), self.name.clone());
        l.insert("release".into(), self.name.clone());
        l
    }

    /// The labels that select the servers' pods.
    pub fn selector(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("app".to_string(), self.name.clone())])
    }

    /// The static configuration: the spec's settings over pravega's defaults, then what the operator
    /// owns. The membership is in the dynamic file, which the servers rewrite on reconfiguration.
    pub fn zoo_cfg(&self) -> String {
        zoo_cfg(&self.spec.config.clone().unwrap_or_default())
    }
}

/// A server's role in the ensemble's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Participant,
    Observer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Participant => "participant",
            Role::Observer => "observer",
        }
    }
}

/// `zoo.cfg` for a configuration (pravega's defaults for what it leaves out).
pub fn zoo_cfg(c: &ZookeeperConfig) -> String {
    let n = |v: Option<i32>, d: i32| v.unwrap_or(d).to_string();
    let tick = c.tick_time.unwrap_or(2000);
    let mut lines: Vec<(String, String)> = vec![
        ("dataDir".into(), DATA_DIR.into()),
        ("standaloneEnabled".into(), "false".into()),
        ("reconfigEnabled".into(), "true".into()),
        ("4lw.commands.whitelist".into(), "ruok, srvr, mntr, stat, conf, cons, envi".into()),
        ("admin.enableServer".into(), "false".into()),
        ("tickTime".into(), tick.to_string()),
        ("initLimit".into(), n(c.init_limit, 10)),
        ("syncLimit".into(), n(c.sync_limit, 2)),
        ("globalOutstandingLimit".into(), n(c.global_outstanding_limit, 1000)),
        ("preAllocSize".into(), n(c.pre_alloc_size, 65536)),
        ("snapCount".into(), n(c.snap_count, 10000)),
        ("commitLogCount".into(), n(c.commit_log_count, 500)),
        ("snapSizeLimitInKb".into(), n(c.snap_size_limit_in_kb, 4194304)),
        ("maxCnxns".into(), n(c.max_cnxns, 0)),
        ("maxClientCnxns".into(), n(c.max_client_cnxns, 60)),
        ("minSessionTimeout".into(), n(c.min_session_timeout, 2 * tick)),
        ("maxSessionTimeout".into(), n(c.max_session_timeout, 20 * tick)),
        ("autopurge.snapRetainCount".into(), n(c.auto_purge_snap_retain_count, 3)),
        ("autopurge.purgeInterval".into(), n(c.auto_purge_purge_interval, 1)),
        ("quorumListenOnAllIPs".into(), c.quorum_listen_on_all_ips.unwrap_or(false).to_string()),
    ];
    for (k, v) in c.additional_config.iter().flatten() {
        match lines.iter_mut().find(|(key, _)| key == k) {
            Some(line) => line.1 = v.clone(),
            None => lines.push((k.clone(), v.clone())),
        }
    }
    lines.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn zk(spec: Value) -> Value {
        json!({"apiVersion": "zookeeper.pravega.io/v1beta1", "kind": "ZookeeperCluster",
               "metadata": {"name": "zk", "namespace": "ns", "uid": "u1"}, "spec": spec})
    }

    #[test]
    fn defaults_names_and_server_lines() {
        let s = Spec::from(&zk(json!({}))).unwrap();
        assert_eq!((s.replicas, s.image().as_str()), (3, "zookeeper:3.8"));
        assert_eq!(s.fqdn(0), "zk-0.zk-headless.ns.svc.cluster.local");
        assert_eq!(s.ordinal_of("zk-2"), Some(2));
        assert_eq!(s.ordinal_of("zk-headless"), None);
        assert_eq!(s.claim_name(1), "data-zk-1");
        assert_eq!(
            s.server_line(1, Role::Observer),
            "server.2=zk-1.zk-headless.ns.svc.cluster.local:2888:3888:observer;zk-1.zk-headless.ns.svc.cluster.local:2181"
        );
        assert!(matches!(s.storage, Storage::Persistent { delete: true, .. }));
    }

    #[test]
    fn the_pravega_sample_reads() {
        let sample: Value = serde_yaml_ng::from_str(include_str!("testdata/pravega-sample.yaml")).unwrap();
        let s = Spec::from(&sample).unwrap();
        assert_eq!((s.replicas, s.image().as_str()), (3, "pravega/zookeeper:0.2.15"));
        match &s.storage {
            Storage::Persistent { claim_spec, delete, .. } => {
                assert!(*delete);
                let requests = claim_spec.resources.clone().and_then(|r| r.requests).unwrap_or_default();
                assert_eq!(requests.get("storage"), Some(&Quantity("20Gi".into())));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_specs_name_the_field() {
        let err = |spec: Value| Spec::from(&zk(spec)).err().unwrap().to_string();
        assert!(err(json!({"replicas": 9})).starts_with("spec.replicas: 9 is not between 1 and 7"));
        assert!(err(json!({"storageType": "tape"})).starts_with("spec.storageType"));
        assert!(err(json!({"persistence": {"reclaimPolicy": "Keep"}})).starts_with("spec.persistence.reclaimPolicy"));
        assert!(
            err(json!({"config": {"additionalConfig": {"dataDir": "/x"}}}))
                .starts_with("spec.config.additionalConfig.dataDir")
        );
        assert!(err(json!({"replicas": "three"})).starts_with("spec: "));
    }

    #[test]
    fn an_ensemble_across_clusters_gives_ids_and_addresses() {
        let servers: Vec<Value> = (1..=5)
            .map(|i| json!({"id": i, "host": format!("zk-{}.m{}.zk-headless.ns.svc.clusterset.local", (i - 1) % 2, (i + 1) / 2)}))
            .collect();
        let s = Spec::from(&zk(json!({"replicas": 2, "ensemble": {"firstId": 3, "servers": servers}}))).unwrap();
        assert_eq!((s.id(0), s.id(1), s.ordinal_of_id(4), s.ordinal_of_id(2)), (3, 4, Some(1), None));
        assert_eq!(s.fqdn(0), "zk-0.m2.zk-headless.ns.svc.clusterset.local");
        assert!(
            s.server_line(1, Role::Participant)
                .starts_with("server.4=zk-1.m2.zk-headless.ns.svc.clusterset.local:2888")
        );
        assert!(!s.bootstraps(), "the cluster of server 1 starts the ensemble");
        assert_eq!(s.remote_servers().iter().map(|(id, _)| *id).collect::<Vec<_>>(), [1, 2, 5]);
        let first = Spec::from(&zk(json!({"replicas": 2, "ensemble": {"firstId": 1, "servers": servers}}))).unwrap();
        assert!(first.bootstraps());
        let none_here = Spec::from(&zk(json!({"replicas": 0, "ensemble": {"servers": servers}}))).unwrap();
        assert_eq!(none_here.replicas, 0);
        let err = |spec: Value| Spec::from(&zk(spec)).err().unwrap().to_string();
        assert_eq!(
            err(json!({"replicas": 2, "ensemble": {"firstId": 5, "servers": servers}})),
            "spec.ensemble.servers: no server with id 6 (this cluster's server with ordinal 1)"
        );
        assert!(err(json!({"replicas": 0})).starts_with("spec.replicas: 0"));
        assert!(
            err(json!({"ensemble": {"servers": [{"id": 1, "host": "a"}, {"id": 1, "host": "b"}]}}))
                .contains("listed twice")
        );
    }

    #[test]
    fn zoo_cfg_takes_the_spec_over_the_defaults() {
        let c: ZookeeperConfig = serde_json::from_value(json!({
            "tickTime": 1000, "initLimit": 5, "additionalConfig": {"syncLimit": "4", "jute.maxbuffer": "1048575"}
        }))
        .unwrap();
        let cfg = zoo_cfg(&c);
        for line in [
            "tickTime=1000\n",
            "initLimit=5\n",
            "syncLimit=4\n",
            "jute.maxbuffer=1048575\n",
            "reconfigEnabled=true\n",
            "standaloneEnabled=false\n",
            "minSessionTimeout=2000\n",
        ] {
            assert!(cfg.contains(line), "{line:?} in {cfg}");
        }
        assert!(cfg.contains("4lw.commands.whitelist=ruok, srvr, mntr, stat, conf"));
        assert_eq!(cfg.matches("syncLimit=").count(), 1);
    }
}
