//! The objects an ensemble is made of, as pure functions of its spec: the headless and client
//! Services, the ConfigMap with `zoo.cfg`, the PodDisruptionBudget, and each server's pod and claim.
//!
//! A server's pod prepares its data directory in an init container (`busybox sh`): it writes `myid`,
//! copies the static `zoo.cfg` next to the data (ZooKeeper rewrites its own copy on reconfiguration)
//! and, for a data directory without one, writes the dynamic configuration the operator chose. A
//! server joining the ensemble (`ZK_JOIN=true`) whose claim holds another member's data (an old claim
//! after a scale-down) starts afresh rather than reuse it. A server of an ensemble spanning clusters
//! waits until its listed address resolves (its cluster imports it) before ZooKeeper binds it.

use serde_json::{Value, json};

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
/// (bash's `/dev/tcp`: no client program needed in the image).
fn probe(word: &str, expect: &str) -> Value {
    let script = format!("exec 3<>/dev/tcp/$POD_IP/{CLIENT_PORT} && echo {word} >&3 && grep -q '{expect}' <&3");
    json!({"exec": {"command": ["bash", "-c", script]}})
}

fn with_timing(mut probe: Value, timing: Option<&super::types::ProbeTiming>) -> Value {
    let t = timing.cloned().unwrap_or_default();
    probe["initialDelaySeconds"] = json!(t.initial_delay_seconds.unwrap_or(3));
    probe["periodSeconds"] = json!(t.period_seconds.unwrap_or(5));
    probe["failureThreshold"] = json!(t.failure_threshold.unwrap_or(3));
    probe["successThreshold"] = json!(t.success_threshold.unwrap_or(1));
    probe["timeoutSeconds"] = json!(t.timeout_seconds.unwrap_or(10));
    probe
}

fn object_labels(spec: &Spec) -> Value {
    json!(spec.labels())
}

/// The headless Service (every server's DNS name; not-ready servers too, so that a starting ensemble
/// can elect) and the client Service.
pub fn services(spec: &Spec) -> Vec<Value> {
    let annotations = |p: &Option<super::types::ServicePolicy>| json!(p.as_ref().and_then(|p| p.annotations.clone()));
    let port = |name: &str, port: u16| json!({"name": name, "port": port, "targetPort": port, "protocol": "TCP"});
    vec![
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": spec.headless(), "labels": object_labels(spec),
                            "annotations": annotations(&spec.spec.headless_service)},
               "spec": {"clusterIP": "None", "publishNotReadyAddresses": true, "selector": spec.selector(),
                        "ports": [port("tcp-client", CLIENT_PORT), port("tcp-quorum", QUORUM_PORT),
                                  port("tcp-leader-election", ELECTION_PORT)]}}),
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": spec.client_service(), "labels": object_labels(spec),
                            "annotations": annotations(&spec.spec.client_service)},
               "spec": {"selector": spec.selector(), "ports": [port("tcp-client", CLIENT_PORT)]}}),
    ]
}

/// The ConfigMap with the static `zoo.cfg`.
pub fn config_map(spec: &Spec) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": spec.config_map(), "labels": object_labels(spec)},
           "data": {"zoo.cfg": spec.zoo_cfg()}})
}

/// The PodDisruptionBudget: at most `maxUnavailableReplicas` servers evicted at once (default 1).
pub fn disruption_budget(spec: &Spec) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": spec.name, "labels": object_labels(spec)},
           "spec": {"maxUnavailable": spec.spec.max_unavailable_replicas.unwrap_or(1),
                    "selector": {"matchLabels": spec.selector()}}})
}

/// The claim of a server's data, when the data is on claims.
pub fn claim(spec: &Spec, ordinal: u32) -> Option<Value> {
    let Storage::Persistent { claim_spec, annotations, .. } = &spec.storage else { return None };
    Some(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": spec.claim_name(ordinal), "labels": object_labels(spec), "annotations": annotations},
                "spec": claim_spec}))
}

/// The pod of server `ordinal`, started with `servers` as its dynamic configuration (when its data
/// directory has none); `join`: it joins a running ensemble.
pub fn pod(spec: &Spec, ordinal: u32, servers: &[String], join: bool) -> Value {
    let policy = spec.spec.pod.clone().unwrap_or_default();
    let mut labels = spec.labels();
    labels.extend(policy.labels.clone().unwrap_or_default());
    labels.extend(spec.selector());
    let data = match &spec.storage {
        Storage::Persistent { .. } => {
            json!({"name": "data", "persistentVolumeClaim": {"claimName": spec.claim_name(ordinal)}})
        }
        Storage::Ephemeral { empty_dir } => json!({"name": "data", "emptyDir": empty_dir}),
    };
    let mut volumes = vec![data, json!({"name": "conf", "configMap": {"name": spec.config_map()}})];
    volumes.extend(spec.spec.volumes.iter().flatten().map(|v| serde_json::to_value(v).unwrap_or_default()));
    let mut mounts = vec![json!({"name": "data", "mountPath": DATA_DIR})];
    mounts.extend(spec.spec.volume_mounts.iter().flatten().map(|m| serde_json::to_value(m).unwrap_or_default()));
    let pod_ip = json!({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}});
    // The super user (who alone may reconfigure the ensemble) has the operator's password, kept in a
    // Secret; ZooKeeper gets only its digest.
    let digest = json!({"name": "ZK_SUPER_DIGEST",
                        "valueFrom": {"secretKeyRef": {"name": spec.admin_secret(), "key": "digest"}}});
    let flags = format!("{JVM_FLAGS} -Dzookeeper.DigestAuthenticationProvider.superDigest=$(ZK_SUPER_DIGEST)");
    let mut env = vec![
        pod_ip,
        digest,
        json!({"name": "SERVER_JVMFLAGS", "value": flags}),
        json!({"name": "JMXDISABLE", "value": "true"}),
    ];
    env.extend(policy.env.iter().flatten().map(|e| serde_json::to_value(e).unwrap_or_default()));
    let ports = json!([{"name": "client", "containerPort": CLIENT_PORT}, {"name": "quorum", "containerPort": QUORUM_PORT},
                       {"name": "leader-election", "containerPort": ELECTION_PORT}]);
    let probes = spec.spec.probes.clone().unwrap_or_default();
    let mut zookeeper = json!({
        "name": CONTAINER, "image": spec.image(),
        "command": ["zkServer.sh", "start-foreground", format!("{DATA_DIR}/conf/zoo.cfg")],
        "ports": ports, "env": env, "volumeMounts": mounts,
        "readinessProbe": with_timing(probe("srvr", "^Mode: "), probes.readiness_probe.as_ref()),
        "livenessProbe": with_timing(probe("ruok", "imok"), probes.liveness_probe.as_ref()),
    });
    if let Some(p) = &spec.pull_policy {
        zookeeper["imagePullPolicy"] = json!(p);
    }
    if let Some(r) = &policy.resources {
        zookeeper["resources"] = serde_json::to_value(r).unwrap_or_default();
    }
    let mut prepare = json!({
        "name": "prepare", "image": INIT_IMAGE, "command": ["sh", "-c", PREPARE],
        "env": [{"name": "MYID", "value": spec.id(ordinal).to_string()},
                {"name": "ZK_SERVERS", "value": servers.join(" ")},
                {"name": "ZK_JOIN", "value": join.to_string()},
                {"name": "ZK_TOKEN", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}],
        "volumeMounts": [{"name": "data", "mountPath": DATA_DIR}, {"name": "conf", "mountPath": "/conf"}],
    });
    if spec.ensemble.is_some() {
        prepare["env"].as_array_mut().expect("env").push(json!({"name": "ZK_ADDRESS", "value": spec.fqdn(ordinal)}));
    }
    let mut init = vec![prepare];
    init.extend(spec.spec.init_containers.iter().flatten().map(|c| serde_json::to_value(c).unwrap_or_default()));
    let mut containers = vec![zookeeper];
    containers.extend(spec.spec.containers.iter().flatten().map(|c| serde_json::to_value(c).unwrap_or_default()));
    let mut pod_spec = json!({
        "hostname": spec.pod_name(ordinal), "subdomain": spec.headless(),
        "terminationGracePeriodSeconds": policy.termination_grace_period_seconds.unwrap_or(30),
        "initContainers": init, "containers": containers, "volumes": volumes,
    });
    let mut set = |key: &str, v: Option<Value>| {
        if let Some(v) = v.filter(|v| !v.is_null()) {
            pod_spec[key] = v;
        }
    };
    set("affinity", json_of(&policy.affinity));
    set("nodeSelector", json_of(&policy.node_selector));
    set("tolerations", json_of(&policy.tolerations));
    set("topologySpreadConstraints", json_of(&policy.topology_spread_constraints));
    set("securityContext", json_of(&policy.security_context));
    set("serviceAccountName", json_of(&policy.service_account_name));
    set("imagePullSecrets", json_of(&policy.image_pull_secrets));
    let mut annotations = policy.annotations.clone().unwrap_or_default();
    annotations.insert(CONFIG_ANNOTATION.into(), config_digest(&spec.zoo_cfg()));
    if let Some(round) = &spec.restart_round {
        annotations.insert(RESTART_ANNOTATION.into(), round.clone());
    }
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": spec.pod_name(ordinal), "labels": labels, "annotations": annotations},
           "spec": pod_spec});
    crate::restricted::harden(&mut pod);
    pod
}

fn json_of<T: serde::Serialize>(v: &Option<T>) -> Option<Value> {
    v.as_ref().and_then(|v| serde_json::to_value(v).ok())
}

/// The dynamic configuration of `ordinals` as participants.
pub fn participants(spec: &Spec, ordinals: impl IntoIterator<Item = u32>) -> Vec<String> {
    ordinals.into_iter().map(|o| spec.server_line(o, Role::Participant)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let p = pod(&s, 1, &servers, false);
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
        assert!(pod(&s, 0, &[], false)["spec"]["volumes"][0].get("emptyDir").is_some());
        let s = spec(json!({"persistence": {"spec": {"resources": {"requests": {"storage": "1Gi"}}}}}));
        assert_eq!(claim(&s, 2).unwrap()["spec"]["resources"]["requests"]["storage"], json!("1Gi"));
    }

    #[test]
    fn services_budget_and_config() {
        let s = spec(json!({"maxUnavailableReplicas": 2, "config": {"tickTime": 500}}));
        let svcs = services(&s);
        assert_eq!(svcs[0]["spec"]["clusterIP"], json!("None"));
        assert_eq!(svcs[0]["spec"]["publishNotReadyAddresses"], json!(true));
        assert_eq!(str_at(&svcs[1], "/metadata/name"), "zk-client");
        assert_eq!(disruption_budget(&s)["spec"]["maxUnavailable"], json!(2));
        assert!(config_map(&s)["data"]["zoo.cfg"].as_str().unwrap().contains("tickTime=500\n"));
    }
}
