//! One sync of a MultiClusterZooKeeper as a pure function (seed 002): the ZookeeperCluster, its
//! ServiceExport/ServiceImport and the PropagationPolicy it writes on the control plane; the
//! scheduling result it reads from the ResourceBinding; the deployment records; and an
//! OverridePolicy per cluster that has started deploying in the current record, giving that
//! cluster's ZookeeperCluster its replicas and every server's address.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ServicePort;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use uc_api::conditions::{Condition, set_in};
use uc_api::hook::ObjectMap;
use uc_karmada::plane::{MCS_API, POLICY_API};
use uc_karmada::types::{
    ClusterAffinity, Object, OverridePolicy, OverrideSpec, Overriders, Placement, PlaintextOverrider,
    PropagationPolicy, PropagationSpec, ReplicaScheduling, ResourceSelector, RuleWithCluster, ServiceImportSpec,
};

use super::binding::{AggregatedItem, Binding};
use super::records::{self, COMPLETED, DEPLOYING, Generations, PENDING};
use super::types::{MultiClusterZooKeeper, MultiClusterZooKeeperSpec, MultiClusterZooKeeperStatus, Record};
use crate::objects::json_of;
use crate::zookeeper::spec::{CLIENT_PORT, ELECTION_PORT, QUORUM_PORT};
use crate::zookeeper::types::{EnsembleServer, EnsembleSpec, ZookeeperCluster, ZookeeperClusterSpec};

/// Why a member cluster's part of the ensemble does not count as deployed yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotDeployed(pub String);

impl From<String> for NotDeployed {
    fn from(message: String) -> Self {
        NotDeployed(message)
    }
}

impl From<&str> for NotDeployed {
    fn from(message: &str) -> Self {
        NotDeployed(message.to_string())
    }
}

impl From<NotDeployed> for String {
    fn from(e: NotDeployed) -> String {
        e.0
    }
}

/// The ZookeeperCluster's API version.
pub const ZK_API: &str = "zookeeper.pravega.io/v1beta1";
/// Server ids are given in blocks per cluster (cluster k of the order: `10k + 1` …), so that one
/// cluster's share can change without renumbering another's.
pub const ID_BLOCK: u32 = 10;

/// The scheduling result: clusters in order, with their replicas.
pub type Schedule = Vec<(String, i32)>;

/// The binding Karmada makes for the ZookeeperCluster (`<name>-zookeepercluster`).
pub fn binding_name(name: &str) -> String {
    format!("{name}-zookeepercluster")
}

/// The `myid` of the first server of the k-th cluster.
pub fn first_id(k: usize) -> u32 {
    ID_BLOCK * k as u32 + 1
}

/// Every server of the ensemble: id and clusterset address
/// (`<name>-<i>.<cluster>.<name>-headless.<ns>.svc.clusterset.local`).
pub fn servers(name: &str, namespace: &str, schedule: &Schedule) -> Vec<EnsembleServer> {
    let mut out = Vec::new();
    for (k, (cluster, replicas)) in schedule.iter().enumerate() {
        for o in 0..(*replicas).max(0) as u32 {
            let host = format!("{name}-{o}.{cluster}.{name}-headless.{namespace}.svc.clusterset.local");
            out.push(EnsembleServer { id: i64::from(first_id(k) + o), host });
        }
    }
    out
}

/// The ZookeeperCluster of one cluster: its share of the servers, the whole server list.
pub fn member_spec(
    spec: &MultiClusterZooKeeperSpec,
    name: &str,
    namespace: &str,
    schedule: &Schedule,
    cluster: &str,
) -> ZookeeperClusterSpec {
    let k = schedule.iter().position(|(c, _)| c == cluster).unwrap_or(0);
    ZookeeperClusterSpec {
        replicas: Some(schedule.get(k).map(|(_, r)| *r).unwrap_or(0)),
        ensemble: Some(EnsembleSpec {
            first_id: Some(i64::from(first_id(k))),
            servers: servers(name, namespace, schedule),
        }),
        ..spec.zookeeper.clone().unwrap_or_default()
    }
}

/// The digest of a spec, whatever the order of its keys (the member's object comes back from another
/// API server).
pub fn spec_digest(spec: &Value) -> String {
    fn canonical(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for k in keys {
                    out.push_str(&serde_json::to_string(k).unwrap_or_default());
                    out.push(':');
                    canonical(&m[k], out);
                    out.push(',');
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for x in a {
                    canonical(x, out);
                    out.push(',');
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    canonical(spec, &mut s);
    format!("{:016x}", crate::objects::hash_str(&s))
}

/// Whether a cluster's part is deployed and serving, from its item of the binding's
/// `aggregatedStatus` (the status the interpreter reflected): applied, at the spec this record gave
/// it, every server serving, nothing rolling, and the configuration its servers run holding at least
/// `joined` servers (those of the clusters deployed before it and its own). Err says why not.
pub fn cluster_ready(
    item: Option<&AggregatedItem>,
    expected: &ZookeeperClusterSpec,
    joined: usize,
) -> Result<(), NotDeployed> {
    let item = item.ok_or("no status collected from the cluster yet")?;
    if item.applied != Some(true) {
        let why = &item.applied_message;
        return Err(NotDeployed(if why.is_empty() { "not applied yet".into() } else { why.clone() }));
    }
    let status = item.status.as_ref().ok_or("no status reflected yet")?;
    if status.spec_digest != spec_digest(&json_of(expected)) {
        return Err(NotDeployed::from("the cluster's ZookeeperCluster is not at this record's spec yet"));
    }
    if status.observed_generation != status.generation {
        return Err(NotDeployed::from("the cluster's operator has not synced the new spec yet"));
    }
    let want = i64::from(expected.replicas.unwrap_or(0));
    let (replicas, ready) = (status.replicas, status.ready_replicas);
    if replicas != want || ready != want {
        return Err(NotDeployed::from(format!(
            "{ready} of {want} servers serve ({replicas} in the ensemble's configuration here)"
        )));
    }
    // The servers of the clusters before it in the configuration its servers run, each serving: a
    // part that formed an ensemble of its own is not this one.
    let servers = &status.servers;
    let serving = servers.iter().filter(|s| matches!(s.mode.as_str(), "leader" | "follower" | "observer")).count();
    if servers.len() < joined || serving < servers.len() {
        return Err(NotDeployed::from(format!("{serving} servers serve in its configuration, {joined} expected")));
    }
    if status.conditions.iter().any(|c| c.holds("Upgrading")) {
        return Err(NotDeployed::from("rolling its servers"));
    }
    Ok(())
}

/// What one sync writes: the children and the status.
#[derive(Debug)]
pub struct Decision {
    pub children: Vec<Value>,
    pub status: MultiClusterZooKeeperStatus,
    /// Something is under way: sync again soon.
    pub busy: bool,
}

/// What a sync observed on the control plane.
pub struct Observed<'a> {
    /// The ResourceBinding of the ZookeeperCluster, if any.
    pub binding: Option<&'a Binding>,
    /// The control plane's ZookeeperCluster, as stored (its spec's digest is compared).
    pub template: Option<&'a Value>,
    /// The OverridePolicies this object owns, by name.
    pub overrides: &'a ObjectMap,
}

/// Selects one object by kind and name.
fn select(api_version: &str, kind: &str, name: &str) -> ResourceSelector {
    ResourceSelector {
        api_version: api_version.into(),
        kind: kind.into(),
        name: Some(name.into()),
        ..Default::default()
    }
}

/// Karmada's default for the ensemble: replicas divided among the clusters, by weight.
fn divided() -> Placement {
    let scheduling = ReplicaScheduling {
        replica_scheduling_type: Some("Divided".into()),
        replica_division_preference: Some("Weighted".into()),
        weight_preference: None,
    };
    Placement { replica_scheduling: Some(scheduling), ..Default::default() }
}

/// What the control plane holds for a MultiClusterZooKeeper: the whole ensemble as a ZookeeperCluster
/// (its replicas are what Karmada divides), the headless Service exported and imported across the
/// clusters, the PropagationPolicy placing them, and the shared admin Secret.
fn control_plane_objects(
    name: &str,
    ns: &str,
    spec: &MultiClusterZooKeeperSpec,
    desired: ZookeeperClusterSpec,
    admin: Value,
) -> Vec<Value> {
    let headless = format!("{name}-headless");
    let port = |name: &str, port: u16| ServicePort {
        name: Some(name.into()),
        port: i32::from(port),
        protocol: Some("TCP".into()),
        ..Default::default()
    };
    let ports = vec![
        port("tcp-client", CLIENT_PORT),
        port("tcp-quorum", QUORUM_PORT),
        port("tcp-leader-election", ELECTION_PORT),
    ];
    let mut template = ZookeeperCluster::new(name, desired);
    template.metadata = ObjectMeta { name: Some(name.into()), namespace: Some(ns.into()), ..Default::default() };
    let export: Object<()> = Object::new(MCS_API, "ServiceExport", (ns, &headless), None);
    let import_spec = ServiceImportSpec { type_: "Headless".into(), ports };
    let import = Object::new(MCS_API, "ServiceImport", (ns, &headless), Some(import_spec));
    let policy = PropagationSpec {
        resource_selectors: vec![
            select(ZK_API, "ZookeeperCluster", name),
            select(MCS_API, "ServiceExport", &headless),
            select(MCS_API, "ServiceImport", &headless),
            select("v1", "Secret", &admin_secret(name)),
        ],
        placement: spec.placement.clone().unwrap_or_else(divided),
        ..Default::default()
    };
    let policy: PropagationPolicy = Object::new(POLICY_API, "PropagationPolicy", (ns, name), Some(policy));
    vec![json_of(&template), json_of(&export), json_of(&import), json_of(&policy), admin]
}

/// The Ready condition while a record deploys: how each deploying cluster stands, how many are done,
/// and any other cluster that is down (its servers are part of the quorum the deploying one waits for).
fn deploying_condition(
    after: &[Record],
    order: &[String],
    items: &BTreeMap<&str, &AggregatedItem>,
    why: impl Fn(&str) -> Result<(), NotDeployed>,
) -> Condition {
    let last = after.last().cloned().unwrap_or_default();
    let state = |k: &str| last.current_state.get(k).cloned().unwrap_or_default();
    let deploying = state(DEPLOYING);
    let why: Vec<String> = deploying
        .iter()
        .map(|c| match why(c) {
            Ok(()) => format!("{c}: ready"),
            Err(e) => format!("{c}: {e}"),
        })
        .collect();
    let down = unreachable_others(order, &deploying, items);
    let unavailable = |w: &String| w.contains("not ready") || w.contains("not reachable");
    let reason = if why.iter().chain(&down).any(unavailable) { "ClusterUnavailable" } else { "Deploying" };
    let also = if down.is_empty() { String::new() } else { format!("; also {}", down.join("; ")) };
    let message = format!(
        "record {}: deploying {}; {} of {} clusters completed{also}",
        after.len(),
        why.join("; "),
        state(COMPLETED).len(),
        order.len()
    );
    Condition::new("Ready", false, reason, &message)
}

/// The decision for one sync. `admin` is the Secret with ZooKeeper's super user password, which every
/// member's servers share (it is propagated with the rest).
pub fn plan(parent: &MultiClusterZooKeeper, seen: Observed, admin: Value, now: &str) -> Decision {
    let Observed { binding, template, overrides } = seen;
    let spec = &parent.spec;
    let name = parent.metadata.name.as_deref().unwrap_or_default();
    let ns = parent.metadata.namespace.as_deref().unwrap_or_default();
    let previous = parent.status.clone().unwrap_or_default();
    let mut status = MultiClusterZooKeeperStatus { conditions: previous.conditions.clone(), ..Default::default() };
    let mut set = |c: Condition| set_in(&mut status.conditions, c, &previous.conditions, now);
    let schedule = binding.and_then(Binding::schedule);
    // The control plane's ZookeeperCluster: the whole ensemble (its replicas are what Karmada divides).
    let desired = ZookeeperClusterSpec {
        replicas: Some(spec.replicas),
        ensemble: Some(EnsembleSpec {
            first_id: None,
            servers: schedule.as_ref().map(|s| servers(name, ns, s)).unwrap_or_default(),
        }),
        ..spec.zookeeper.clone().unwrap_or_default()
    };
    // Its generation counts once it holds what this sync wants (a record starts at a generation
    // that is the spec's, not one a moment old).
    let digest = spec_digest(&json_of(&desired));
    let generation = template
        .filter(|t| t.get("spec").is_some_and(|s| spec_digest(s) == digest))
        .and_then(|t| t.get("metadata")?.get("generation")?.as_i64());
    let mut children = control_plane_objects(name, ns, spec, desired, admin);
    let (Some(schedule), Some(generation)) = (schedule.clone(), generation) else {
        let why = match (binding, &schedule) {
            (None, _) => "waiting for the ResourceBinding",
            (Some(_), None) => "waiting for the scheduler",
            (Some(_), Some(_)) => "waiting for the ZookeeperCluster to be written",
        };
        set(match &schedule {
            Some(s) => Condition::new("Scheduled", true, "Scheduled", &describe(s)),
            None => Condition::new("Scheduled", false, "Pending", why),
        });
        set(Condition::new("Ready", false, if schedule.is_some() { "Deploying" } else { "Scheduling" }, why));
        status.records = previous.records.clone();
        children.extend(overrides.values().map(|o| Value::clone(o)));
        return Decision { children, status, busy: true };
    };
    set(Condition::new("Scheduled", true, "Scheduled", &describe(&schedule)));
    let order: Vec<String> = schedule.iter().map(|(c, _)| c.clone()).collect();
    let items: BTreeMap<&str, &AggregatedItem> =
        (binding.iter()).flat_map(|b| &b.status.aggregated_status).map(|i| (i.cluster_name.as_str(), i)).collect();
    let expected = |c: &str| member_spec(spec, name, ns, &schedule, c);
    // The servers of the clusters up to and including `c` in the order.
    let joined = |c: &str| {
        let at = schedule.iter().position(|(x, _)| x == c).unwrap_or(schedule.len());
        schedule.iter().take(at + 1).map(|(_, r)| (*r).max(0) as usize).sum::<usize>()
    };
    let g = Generations { multicluster: parent.metadata.generation.unwrap_or(0), zookeeper: generation };
    let after = records::advance(previous.records.clone(), &order, g, now, |c| {
        cluster_ready(items.get(c).copied(), &expected(c), joined(c)).is_ok()
    });
    let last = after.last().cloned().unwrap_or_default();
    let state = |k: &str| last.current_state.get(k).cloned().unwrap_or_default();
    // Clusters deploying or done in this record get this record's spec; pending ones keep theirs.
    for c in state(DEPLOYING).iter().chain(state(COMPLETED).iter()) {
        children.push(json_of(&override_policy(name, ns, c, &expected(c))));
    }
    for c in state(PENDING) {
        if let Some(op) = overrides.get(&override_name(name, &c)) {
            children.push(Value::clone(op));
        }
    }
    let ready = last.status == records::STATUS_READY;
    set(if ready {
        Condition::new("Ready", true, "Deployed", &format!("every cluster serves its part ({})", describe(&schedule)))
    } else {
        let why = |c: &str| cluster_ready(items.get(c).copied(), &expected(c), joined(c));
        deploying_condition(&after, &order, &items, why)
    });
    status.records = after;
    Decision { children, status, busy: !ready }
}

/// The clusters of `order` other than those `deploying` whose part the control plane cannot reach,
/// each as `<cluster>: <why>`.
fn unreachable_others(order: &[String], deploying: &[String], items: &BTreeMap<&str, &AggregatedItem>) -> Vec<String> {
    (order.iter().filter(|c| !deploying.contains(c)))
        .filter_map(|c| {
            let item = items.get(c.as_str())?;
            let message = &item.applied_message;
            let down =
                item.applied == Some(false) && (message.contains("not ready") || message.contains("not reachable"));
            down.then(|| format!("{c}: {message}"))
        })
        .collect()
}

fn describe(schedule: &Schedule) -> String {
    schedule.iter().map(|(c, r)| format!("{c}: {r}")).collect::<Vec<_>>().join(", ")
}

/// The Secret with the super user's password (the ZookeeperCluster's `<name>-admin`).
pub fn admin_secret(name: &str) -> String {
    format!("{name}-admin")
}

/// `<name>-<cluster>`.
pub fn override_name(name: &str, cluster: &str) -> String {
    format!("{name}-{cluster}")
}

/// The OverridePolicy giving one cluster's ZookeeperCluster its spec.
pub fn override_policy(name: &str, namespace: &str, cluster: &str, member: &ZookeeperClusterSpec) -> OverridePolicy {
    let rule = RuleWithCluster {
        target_cluster: Some(ClusterAffinity { cluster_names: vec![cluster.into()], ..Default::default() }),
        overriders: Overriders {
            plaintext: vec![PlaintextOverrider {
                path: "/spec".into(),
                operator: "replace".into(),
                value: Some(json_of(member)),
            }],
            ..Default::default()
        },
    };
    let spec = OverrideSpec {
        resource_selectors: vec![select(ZK_API, "ZookeeperCluster", name)],
        override_rules: vec![rule],
        ..Default::default()
    };
    Object::new(POLICY_API, "OverridePolicy", (namespace, &override_name(name, cluster)), Some(spec))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use uc_api::meta::str_at;

    use super::*;

    fn mczk() -> (MultiClusterZooKeeper, MultiClusterZooKeeperSpec) {
        let parent: MultiClusterZooKeeper = typed(json!({"apiVersion": super::super::types::API_VERSION,
            "kind": "MultiClusterZooKeeper", "metadata": {"name": "zk", "namespace": "default", "generation": 1},
            "spec": {"replicas": 5, "zookeeper": {"config": {"tickTime": 2000}}}}));
        let spec = parent.spec.clone();
        (parent, spec)
    }

    fn ready(status: &MultiClusterZooKeeperStatus) -> Condition {
        status.conditions.iter().find(|c| c.type_ == "Ready").unwrap().clone()
    }

    fn state(status: &MultiClusterZooKeeperStatus, k: &str) -> Vec<String> {
        status.records[0].current_state[k].clone()
    }

    static NONE: std::sync::LazyLock<ObjectMap> = std::sync::LazyLock::new(ObjectMap::new);

    fn seen<'a>(binding: Option<&'a Binding>, template: Option<&'a Value>) -> Observed<'a> {
        Observed { binding, template, overrides: &NONE }
    }

    fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    fn binding(items: Value) -> Binding {
        typed(
            json!({"spec": {"clusters": [{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}, {"name": "m3", "replicas": 1}]},
               "status": {"conditions": [{"type": "Scheduled", "status": "True"}], "aggregatedStatus": items}}),
        )
    }

    /// A cluster's item of the binding's aggregated status, its part at `spec` and serving.
    fn serving(spec: &ZookeeperClusterSpec) -> Value {
        let n = spec.replicas.unwrap_or(0);
        let listed = spec.ensemble.as_ref().map_or(0, |e| e.servers.len());
        let servers: Vec<Value> =
            (0..listed).map(|i| json!({"id": i + 1, "mode": if i == 0 { "leader" } else { "follower" }})).collect();
        json!({"applied": true, "health": "Healthy",
               "status": {"specDigest": spec_digest(&json_of(spec)), "generation": 3, "observedGeneration": 3,
                          "replicas": n, "readyReplicas": n, "servers": servers}})
    }

    fn item(v: &Value) -> AggregatedItem {
        typed(v.clone())
    }

    #[test]
    fn servers_get_ids_in_blocks_and_clusterset_names() {
        let s: Schedule = vec![("m1".into(), 2), ("m2".into(), 2), ("m3".into(), 1)];
        let list = servers("zk", "default", &s);
        let ids: Vec<i64> = list.iter().map(|s| s.id).collect();
        assert_eq!(ids, [1, 2, 11, 12, 21]);
        assert_eq!(list[3].host, "zk-1.m2.zk-headless.default.svc.clusterset.local");
        let (_, spec) = mczk();
        let m2 = json_of(&member_spec(&spec, "zk", "default", &s, "m2"));
        assert_eq!((m2["replicas"].as_i64(), m2["ensemble"]["firstId"].as_i64()), (Some(2), Some(11)));
        assert_eq!(m2["config"]["tickTime"], 2000);
        // Every member's spec names the same five servers, and reads as a ZookeeperCluster spec.
        let parsed = crate::zookeeper::spec::Spec::from(
            &json!({"metadata": {"name": "zk", "namespace": "default"}, "spec": m2}),
        )
        .unwrap();
        assert_eq!((parsed.id(0), parsed.fqdn(1).as_str()), (11, "zk-1.m2.zk-headless.default.svc.clusterset.local"));
    }

    #[test]
    fn without_a_schedule_it_writes_the_template_and_the_policy_and_waits() {
        let (parent, _) = mczk();
        let d = plan(&parent, seen(None, None), json!({}), "t0");
        assert!(ready(&d.status).message.contains("waiting for the ResourceBinding"));
        let kinds: Vec<&str> = d.children.iter().map(|c| str_at(c, "/kind")).collect();
        assert_eq!(kinds[..4], ["ZookeeperCluster", "ServiceExport", "ServiceImport", "PropagationPolicy"]);
        assert_eq!(d.children[0]["spec"]["replicas"], 5);
        assert!(d.children[1].get("spec").is_none(), "a ServiceExport has no spec");
        assert_eq!(d.children[2]["spec"]["ports"][0], json!({"name": "tcp-client", "port": 2181, "protocol": "TCP"}));
        assert_eq!(
            d.children[3]["spec"]["resourceSelectors"][3],
            json!({"apiVersion": "v1", "kind": "Secret", "name": "zk-admin"})
        );
        assert_eq!(d.children[3]["spec"]["placement"]["replicaScheduling"]["replicaSchedulingType"], "Divided");
        assert!(d.status.records.is_empty());
        assert!(d.busy);
    }

    #[test]
    fn clusters_deploy_in_order_each_given_its_part_by_an_override() {
        let (parent, spec) = mczk();
        let s: Schedule = vec![("m1".into(), 2), ("m2".into(), 2), ("m3".into(), 1)];
        let template = json!({"metadata": {"generation": 2}, "spec": {"replicas": 5, "config": {"tickTime": 2000},
                                                                         "ensemble": {"servers": json_of(&servers("zk", "default", &s))}}});
        let d = plan(&parent, seen(Some(&binding(json!([]))), Some(&template)), json!({}), "t0");
        let ops: Vec<&Value> = d.children.iter().filter(|c| c["kind"] == "OverridePolicy").collect();
        assert_eq!(ops.len(), 1, "only the deploying cluster gets its part");
        assert_eq!(ops[0]["metadata"]["name"], "zk-m1");
        assert_eq!(ops[0]["spec"]["overrideRules"][0]["overriders"]["plaintext"][0]["value"]["replicas"], 2);
        assert_eq!(state(&d.status, "deploying"), ["m1"]);
        assert_eq!(d.status.records[0].order, ["m1", "m2", "m3"]);
        let generations = &d.status.records[0].observed_generations;
        assert_eq!((generations["multiclusterzookeeper"], generations["zookeeper"]), (1, 2));
        // A template a moment old (the servers not written yet) starts nothing.
        let stale = json!({"metadata": {"generation": 1}, "spec": {"replicas": 5}});
        let waiting = plan(&parent, seen(Some(&binding(json!([]))), Some(&stale)), json!({}), "t0");
        assert!(waiting.status.records.is_empty());
        // m1 serves its part: m2 starts; m1's override stays.
        let mut parent2 = parent.clone();
        parent2.status = Some(d.status.clone());
        let items = json!([serving(&member_spec(&spec, "zk", "default", &s, "m1"))]);
        let mut items = items;
        items[0]["clusterName"] = json!("m1");
        let d = plan(&parent2, seen(Some(&binding(items)), Some(&template)), json!({}), "t1");
        assert_eq!(state(&d.status, "completed"), ["m1"]);
        assert_eq!(state(&d.status, "deploying"), ["m2"]);
        let now = ready(&d.status);
        assert_eq!(now.status, "False");
        assert!(now.message.contains("m2: no status collected"), "{now:?}");
        assert_eq!(now.reason, "Deploying");
        // m1 goes down while m2 deploys: the condition names m1, not only the cluster deploying.
        let mut parent3 = parent.clone();
        parent3.status = Some(d.status.clone());
        let down = json!([{"clusterName": "m1", "applied": false,
                           "appliedMessage": "cluster m1 is not ready: cluster is not reachable: no answer in 5s"}]);
        let d = plan(&parent3, seen(Some(&binding(down)), Some(&template)), json!({}), "t2");
        let now = ready(&d.status);
        assert_eq!(now.reason, "ClusterUnavailable", "{now:?}");
        assert!(now.message.contains("deploying m2: no status collected"), "{now:?}");
        assert!(
            now.message.ends_with("also m1: cluster m1 is not ready: cluster is not reachable: no answer in 5s"),
            "{now:?}"
        );
    }

    #[test]
    fn a_cluster_is_ready_only_at_its_spec_with_every_server_serving() {
        let spec: ZookeeperClusterSpec = typed(json!({"replicas": 2}));
        assert!(cluster_ready(Some(&item(&serving(&spec))), &spec, 0).is_ok());
        let mut old = serving(&typed(json!({"replicas": 1})));
        old["status"]["replicas"] = json!(2);
        old["status"]["readyReplicas"] = json!(2);
        assert!(cluster_ready(Some(&item(&old)), &spec, 0).unwrap_err().0.contains("not at this record's spec"));
        let down = json!({"applied": false, "appliedMessage": "cluster m2 is not ready: cluster is not reachable"});
        assert_eq!(
            cluster_ready(Some(&item(&down)), &spec, 0).unwrap_err().0,
            "cluster m2 is not ready: cluster is not reachable"
        );
        let mut lagging = serving(&spec);
        lagging["status"]["readyReplicas"] = json!(1);
        assert!(cluster_ready(Some(&item(&lagging)), &spec, 0).unwrap_err().0.starts_with("1 of 2 servers serve"));
        // A part that formed an ensemble of its own (one server listed of five) is not ready.
        let listed: Vec<Value> = (1..=5).map(|i| json!({"id": i, "host": format!("h{i}")})).collect();
        let five: ZookeeperClusterSpec = typed(json!({"replicas": 1, "ensemble": {"servers": listed}}));
        let mut alone = serving(&five);
        alone["status"]["servers"] = json!([{"id": 21, "mode": "leader"}]);
        assert_eq!(
            cluster_ready(Some(&item(&alone)), &five, 5).unwrap_err().0,
            "1 servers serve in its configuration, 5 expected"
        );
        assert!(cluster_ready(Some(&item(&serving(&five))), &five, 5).is_ok());
        let mut rolling = serving(&spec);
        rolling["status"]["conditions"] = json!([{"type": "Upgrading", "status": "True"}]);
        assert_eq!(cluster_ready(Some(&item(&rolling)), &spec, 0).unwrap_err().0, "rolling its servers");
        assert_eq!(
            spec_digest(&json!({"a": 1, "b": [1, {"c": 2, "d": 3}]})),
            spec_digest(&json!({"b": [1, {"d": 3, "c": 2}], "a": 1}))
        );
    }
}
