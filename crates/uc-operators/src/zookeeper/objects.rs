//! The objects an ensemble is made of, as pure functions of its spec: the headless and client
//! Services, the ConfigMap with `zoo.cfg`, the PodDisruptionBudget, and each server's pod and claim.
//!
//! A server's pod prepares its data directory in an init container (`busybox sh`): it writes `myid`,
//! copies the static `zoo.cfg` next to the data (ZooKeeper rewrites its own copy on reconfiguration)
//! and, for a data directory without one, writes the dynamic configuration the operator chose. A
//! server joining the ensemble (`ZK_JOIN=true`) whose claim holds another member's data (an old claim
//! after a scale-down) starts afresh rather than reuse it. A server of an ensemble spanning clusters
//! waits until its listed address resolves (its cluster imports it) before ZooKeeper binds it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, ExecAction,
    ObjectFieldSelector, PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodSpec, Probe,
    SecretKeySelector, Service, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::spec::{CLIENT_PORT, DATA_DIR, ELECTION_PORT, QUORUM_PORT, Role, Spec, Storage};

/// The container that runs ZooKeeper.
pub const CONTAINER: &str = "zookeeper";
/// The rolling restart round a server's pod was made in.
pub const RESTART_ANNOTATION: &str = "zookeeper.uc.njuics.cn/restart-round";
/// The static configuration a server's pod started with (a digest of `zoo.cfg`).
pub const CONFIG_ANNOTATION: &str = "zookeeper.uc.njuics.cn/config";

/// The digest of a static configuration, as pods carry it.
pub fn config_digest(zoo_cfg: &str) -> String {
    format!("{:016x}", crate::objects::hash_str(zoo_cfg))
}
/// The image of the init container that prepares the data directory.
const INIT_IMAGE: &str = "busybox:1.36";
/// The JVM's flags: a small heap and a collector for small machines.
const JVM_FLAGS: &str = "-Xms32m -Xmx256m -XX:+UseSerialGC";

/// The init container's script (see the module's doc).
const PREPARE: &str = r#"set -e
conf=/data/conf
if [ "$ZK_JOIN" = true ] && [ -e /data/myid ] && [ "$(cat /data/token 2>/dev/null)" != "$ZK_TOKEN" ]; then
  echo "the data directory holds an earlier member's data; this server joins afresh"
  rm -rf /data/version-2 /data/conf /data/myid /data/token
fi
mkdir -p "$conf"
[ -e /data/token ] || echo "$ZK_TOKEN" > /data/token
echo "$MYID" > /data/myid
if [ -n "${ZK_ADDRESS:-}" ]; then
  # An ensemble across clusters: the server binds its listed address, which names this pod once the
  # cluster has imported it.
  until grep -qwF "$ZK_ADDRESS" /etc/hosts; do
    echo "waiting for $ZK_ADDRESS to resolve"; sleep 1
  done
fi
dynamic=$(grep '^dynamicConfigFile=' "$conf/zoo.cfg" 2>/dev/null | cut -d= -f2- || true)
if [ -z "$dynamic" ] || [ ! -e "$dynamic" ]; then
  dynamic="$conf/zoo.cfg.dynamic"
  echo "$ZK_SERVERS" | tr ' ' '\n' > "$dynamic"
fi
cat /conf/zoo.cfg > "$conf/zoo.cfg.new"
echo "dynamicConfigFile=$dynamic" >> "$conf/zoo.cfg.new"
mv "$conf/zoo.cfg.new" "$conf/zoo.cfg"
echo "server $MYID, configuration $dynamic:"
cat "$dynamic"
"#;

/// Asks the server on the pod's address a four-letter word and looks for `expect` in the answer
/// (bash's `/dev/tcp`: no client program needed in the image), with the spec's timing or ZooKeeper's.
fn probe(word: &str, expect: &str, timing: Option<&super::types::ProbeTiming>) -> Probe {
    let script = format!("exec 3<>/dev/tcp/$POD_IP/{CLIENT_PORT} && echo {word} >&3 && grep -q '{expect}' <&3");
    let t = timing.cloned().unwrap_or_default();
    Probe {
        exec: Some(ExecAction { command: Some(vec!["bash".into(), "-c".into(), script]) }),
        initial_delay_seconds: Some(t.initial_delay_seconds.unwrap_or(3)),
        period_seconds: Some(t.period_seconds.unwrap_or(5)),
        failure_threshold: Some(t.failure_threshold.unwrap_or(3)),
        success_threshold: Some(t.success_threshold.unwrap_or(1)),
        timeout_seconds: Some(t.timeout_seconds.unwrap_or(10)),
        ..Default::default()
    }
}

fn meta(name: String, spec: &Spec, annotations: Option<BTreeMap<String, String>>) -> ObjectMeta {
    ObjectMeta { name: Some(name), labels: Some(spec.labels()), annotations, ..Default::default() }
}

/// The headless Service (every server's DNS name; not-ready servers too, so that a starting ensemble
/// can elect) and the client Service.
pub fn services(spec: &Spec) -> [Service; 2] {
    let annotations = |p: &Option<super::types::ServicePolicy>| p.as_ref().and_then(|p| p.annotations.clone());
    let port = |name: &str, port: u16| ServicePort {
        name: Some(name.into()),
        port: i32::from(port),
        target_port: Some(IntOrString::Int(i32::from(port))),
        protocol: Some("TCP".into()),
        ..Default::default()
    };
    let headless = Service {
        metadata: meta(spec.headless(), spec, annotations(&spec.spec.headless_service)),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            publish_not_ready_addresses: Some(true),
            selector: Some(spec.selector()),
            ports: Some(vec![
                port("tcp-client", CLIENT_PORT),
                port("tcp-quorum", QUORUM_PORT),
                port("tcp-leader-election", ELECTION_PORT),
            ]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let client = Service {
        metadata: meta(spec.client_service(), spec, annotations(&spec.spec.client_service)),
        spec: Some(ServiceSpec {
            selector: Some(spec.selector()),
            ports: Some(vec![port("tcp-client", CLIENT_PORT)]),
            ..Default::default()
        }),
        ..Default::default()
    };
    [headless, client]
}

/// The ConfigMap with the static `zoo.cfg`.
pub fn config_map(spec: &Spec) -> ConfigMap {
    ConfigMap {
        metadata: meta(spec.config_map(), spec, None),
        data: Some([("zoo.cfg".to_string(), spec.zoo_cfg())].into()),
        ..Default::default()
    }
}

/// The PodDisruptionBudget: at most `maxUnavailableReplicas` servers evicted at once (default 1).
pub fn disruption_budget(spec: &Spec) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: meta(spec.name.clone(), spec, None),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(spec.spec.max_unavailable_replicas.unwrap_or(1))),
            selector: Some(LabelSelector { match_labels: Some(spec.selector()), ..Default::default() }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The claim of a server's data, when the data is on claims.
pub fn claim(spec: &Spec, ordinal: u32) -> Option<PersistentVolumeClaim> {
    let Storage::Persistent { claim_spec, annotations, .. } = &spec.storage else { return None };
    Some(PersistentVolumeClaim {
        metadata: meta(spec.claim_name(ordinal), spec, Some(annotations.clone())),
        spec: Some((**claim_spec).clone()),
        ..Default::default()
    })
}

fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar { name: name.into(), value: Some(value.into()), ..Default::default() }
}

fn env_from(name: &str, source: EnvVarSource) -> EnvVar {
    EnvVar { name: name.into(), value_from: Some(source), ..Default::default() }
}

fn field(path: &str) -> EnvVarSource {
    EnvVarSource {
        field_ref: Some(ObjectFieldSelector { field_path: path.into(), ..Default::default() }),
        ..Default::default()
    }
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount { name: name.into(), mount_path: path.into(), ..Default::default() }
}

/// The container that runs ZooKeeper, with the spec's environment, mounts, probes and resources.
fn zookeeper_container(spec: &Spec) -> Container {
    let policy = spec.spec.pod.clone().unwrap_or_default();
    // The super user (who alone may reconfigure the ensemble) has the operator's password, kept in a
    // Secret; ZooKeeper gets only its digest.
    let digest = EnvVarSource {
        secret_key_ref: Some(SecretKeySelector { name: spec.admin_secret(), key: "digest".into(), optional: None }),
        ..Default::default()
    };
    let flags = format!("{JVM_FLAGS} -Dzookeeper.DigestAuthenticationProvider.superDigest=$(ZK_SUPER_DIGEST)");
    let mut envs = vec![
        env_from("POD_IP", field("status.podIP")),
        env_from("ZK_SUPER_DIGEST", digest),
        env("SERVER_JVMFLAGS", flags),
        env("JMXDISABLE", "true"),
    ];
    envs.extend(policy.env.iter().flatten().cloned());
    let mut mounts = vec![mount("data", DATA_DIR)];
    mounts.extend(spec.spec.volume_mounts.iter().flatten().cloned());
    let port = |name: &str, port: u16| ContainerPort {
        name: Some(name.into()),
        container_port: i32::from(port),
        ..Default::default()
    };
    let probes = spec.spec.probes.clone().unwrap_or_default();
    Container {
        name: CONTAINER.into(),
        image: Some(spec.image()),
        image_pull_policy: spec.pull_policy.clone(),
        command: Some(vec!["zkServer.sh".into(), "start-foreground".into(), format!("{DATA_DIR}/conf/zoo.cfg")]),
        ports: Some(vec![
            port("client", CLIENT_PORT),
            port("quorum", QUORUM_PORT),
            port("leader-election", ELECTION_PORT),
        ]),
        env: Some(envs),
        volume_mounts: Some(mounts),
        readiness_probe: Some(probe("srvr", "^Mode: ", probes.readiness_probe.as_ref())),
        liveness_probe: Some(probe("ruok", "imok", probes.liveness_probe.as_ref())),
        resources: policy.resources,
        ..Default::default()
    }
}

/// The init container that prepares server `ordinal`'s data directory (see the module's doc).
fn prepare_container(spec: &Spec, ordinal: u32, servers: &[String], join: bool) -> Container {
    let mut envs = vec![
        env("MYID", spec.id(ordinal).to_string()),
        env("ZK_SERVERS", servers.join(" ")),
        env("ZK_JOIN", join.to_string()),
        env_from("ZK_TOKEN", field("metadata.uid")),
    ];
    if spec.ensemble.is_some() {
        envs.push(env("ZK_ADDRESS", spec.fqdn(ordinal)));
    }
    Container {
        name: "prepare".into(),
        image: Some(INIT_IMAGE.into()),
        command: Some(vec!["sh".into(), "-c".into(), PREPARE.into()]),
        env: Some(envs),
        volume_mounts: Some(vec![mount("data", DATA_DIR), mount("conf", "/conf")]),
        ..Default::default()
    }
}

/// The pod of server `ordinal`, started with `servers` as its dynamic configuration (when its data
/// directory has none); `join`: it joins a running ensemble.
pub fn pod(spec: &Spec, ordinal: u32, servers: &[String], join: bool) -> Pod {
    let policy = spec.spec.pod.clone().unwrap_or_default();
    let mut labels = spec.labels();
    labels.extend(policy.labels.clone().unwrap_or_default());
    labels.extend(spec.selector());
    let data = match &spec.storage {
        Storage::Persistent { .. } => VolumeSource::PersistentVolumeClaim(spec.claim_name(ordinal)),
        Storage::Ephemeral { empty_dir } => VolumeSource::EmptyDir(empty_dir.clone()),
    };
    let conf = Volume {
        name: "conf".into(),
        config_map: Some(ConfigMapVolumeSource { name: spec.config_map(), ..Default::default() }),
        ..Default::default()
    };
    let mut volumes = vec![data.volume("data"), conf];
    volumes.extend(spec.spec.volumes.iter().flatten().cloned());
    let mut init = vec![prepare_container(spec, ordinal, servers, join)];
    init.extend(spec.spec.init_containers.iter().flatten().cloned());
    let mut containers = vec![zookeeper_container(spec)];
    containers.extend(spec.spec.containers.iter().flatten().cloned());
    let mut annotations = policy.annotations.clone().unwrap_or_default();
    annotations.insert(CONFIG_ANNOTATION.into(), config_digest(&spec.zoo_cfg()));
    if let Some(round) = &spec.restart_round {
        annotations.insert(RESTART_ANNOTATION.into(), round.clone());
    }
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(spec.pod_name(ordinal)),
            labels: Some(labels),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(PodSpec {
            hostname: Some(spec.pod_name(ordinal)),
            subdomain: Some(spec.headless()),
            termination_grace_period_seconds: Some(policy.termination_grace_period_seconds.unwrap_or(30)),
            init_containers: Some(init),
            containers,
            volumes: Some(volumes),
            affinity: policy.affinity,
            node_selector: policy.node_selector,
            tolerations: policy.tolerations,
            topology_spread_constraints: policy.topology_spread_constraints,
            security_context: policy.security_context,
            service_account_name: policy.service_account_name,
            image_pull_secrets: policy.image_pull_secrets,
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut pod = pod;
    crate::restricted::harden(&mut pod);
    pod
}

/// Where a server's data volume comes from.
enum VolumeSource {
    PersistentVolumeClaim(String),
    EmptyDir(EmptyDirVolumeSource),
}

impl VolumeSource {
    fn volume(self, name: &str) -> Volume {
        let mut v = Volume { name: name.into(), ..Default::default() };
        match self {
            VolumeSource::PersistentVolumeClaim(claim_name) => {
                v.persistent_volume_claim =
                    Some(PersistentVolumeClaimVolumeSource { claim_name, ..Default::default() });
            }
            VolumeSource::EmptyDir(e) => v.empty_dir = Some(e),
        }
        v
    }
}

/// The dynamic configuration of `ordinals` as participants.
pub fn participants(spec: &Spec, ordinals: impl IntoIterator<Item = u32>) -> Vec<String> {
    ordinals.into_iter().map(|o| spec.server_line(o, Role::Participant)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::json_of;
    use serde_json::{Value, json};
    use uc_api::meta::str_at;

    fn spec(extra: Value) -> Spec {
        let mut s = json!({"replicas": 3});
        if let (Some(m), Some(e)) = (s.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        Spec::from(&json!({"metadata": {"name": "zk", "namespace": "ns", "uid": "u"}, "spec": s})).unwrap()
    }

    #[test]
    fn a_server_pod_names_itself_and_its_ensemble() {
        let s = spec(json!({"pod": {"labels": {"team": "a"}, "env": [{"name": "X", "value": "1"}],
                                    "tolerations": [{"key": "k", "operator": "Exists"}]}}));
        let servers = participants(&s, 0..3);
        let p = json_of(&pod(&s, 1, &servers, false));
        assert_eq!(str_at(&p, "/metadata/name"), "zk-1");
        assert_eq!((str_at(&p, "/spec/hostname"), str_at(&p, "/spec/subdomain")), ("zk-1", "zk-headless"));
        assert_eq!(p["metadata"]["labels"]["team"], json!("a"));
        assert_eq!(p["metadata"]["labels"]["app"], json!("zk"));
        assert_eq!(p["spec"]["tolerations"][0]["key"], json!("k"));
        let init = &p["spec"]["initContainers"][0];
        let env =
            |name: &str| init["env"].as_array().unwrap().iter().find(|e| e["name"] == json!(name)).cloned().unwrap();
        assert_eq!(env("MYID")["value"], json!("2"));
        assert_eq!(env("ZK_JOIN")["value"], json!("false"));
        assert_eq!(env("ZK_SERVERS")["value"].as_str().unwrap().split(' ').count(), 3);
        let zk = &p["spec"]["containers"][0];
        assert_eq!(zk["command"], json!(["zkServer.sh", "start-foreground", "/data/conf/zoo.cfg"]));
        assert!(zk["env"].as_array().unwrap().iter().any(|e| e["name"] == json!("X")));
        assert_eq!(p["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"], json!("data-zk-1"));
    }

    #[test]
    fn storage_decides_the_data_volume_and_the_claim() {
        let s = spec(json!({"storageType": "ephemeral"}));
        assert!(claim(&s, 0).is_none());
        assert!(json_of(&pod(&s, 0, &[], false))["spec"]["volumes"][0].get("emptyDir").is_some());
        let s = spec(json!({"persistence": {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}}));
        assert_eq!(json_of(&claim(&s, 2).unwrap())["spec"]["resources"]["requests"]["storage"], json!("1Gi"));
    }

    #[test]
    fn services_budget_and_config() {
        let s = spec(json!({"maxUnavailableReplicas": 2, "config": {"tickTime": 500}}));
        let svcs: Vec<Value> = services(&s).iter().map(json_of).collect();
        assert_eq!(svcs[0]["spec"]["clusterIP"], json!("None"));
        assert_eq!(svcs[0]["spec"]["publishNotReadyAddresses"], json!(true));
        assert_eq!(str_at(&svcs[1], "/metadata/name"), "zk-client");
        assert_eq!(json_of(&disruption_budget(&s))["spec"]["maxUnavailable"], json!(2));
        assert!(config_map(&s).data.unwrap()["zoo.cfg"].contains("tickTime=500\n"));
    }
}
