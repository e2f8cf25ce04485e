//! The ZooKeeper operator (the pravega zookeeper-operator's API, `zookeeper.pravega.io/v1beta1`): a
//! `ZookeeperCluster` becomes a headless Service (every server's DNS name), a `<name>-client` Service,
//! a ConfigMap with the static `zoo.cfg`, a PodDisruptionBudget, and one pod (with a data claim) per
//! server running real ZooKeeper. The sync hook is native because it talks to the servers: their
//! four-letter words (`srvr`, `conf`) say who serves, who leads and what the configuration is, and
//! the status says what they say, not only whether pods are Ready.
//!
//! `myid` is the pod's ordinal + 1; every server's dynamic configuration names every member by its DNS
//! name; the configuration enables dynamic reconfiguration (`reconfigEnabled=true`,
//! `standaloneEnabled=false`). A member whose pod is deleted gets it back (same ordinal, same claim,
//! same myid); a lost quorum is reported (`Error`, `QuorumLost`), never repaired by bootstrapping over
//! the data.
//!
//! Scaling goes through ZooKeeper's dynamic reconfiguration, one server at a time (see `plan`). The
//! hook makes the `reconfig` calls itself, with a ZooKeeper client of its own (`client.rs`) logged in as
//! the super user (password in the `<name>-admin` Secret, digest passed to the servers): a native hook
//! holding a client answers in milliseconds and reports ZooKeeper's own error codes, where `zkCli.sh`
//! through exec would start a JVM per call and leave only its output to parse.

pub mod client;
pub mod fourlw;
pub mod objects;
pub mod plan;
pub mod rollout;
pub mod spec;
mod status;
pub mod types;

use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::Value;
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::events::Recorder;
use uc_engine::hooks::native::{self, AsyncSyncFn, NativeRegistry, SyncFuture};
use uc_engine::names::ClusterNames;

use crate::objects::{json_of, take_children};
use plan::Observed;
use spec::{CLIENT_PORT, Spec};

/// Name of the native hook.
pub const HOOK: &str = "zookeeper-cluster";

/// The ZookeeperCluster CRD, derived from `types::ZookeeperClusterSpec`.
pub fn crd() -> CustomResourceDefinition {
    types::ZookeeperCluster::crd()
}

/// The operator's CRDs.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![crd()]
}

/// The operator's UniversalControllers.
pub fn controllers() -> Vec<uc_api::controller::UniversalController> {
    vec![controller()]
}

/// The UniversalController of ZookeeperClusters.
pub fn controller() -> uc_api::controller::UniversalController {
    use uc_api::controller::UpdateMethod::{InPlace, OnDelete};
    let children = [
        ("v1", "services", InPlace),
        ("v1", "configmaps", InPlace),
        ("policy/v1", "poddisruptionbudgets", InPlace),
        // Pods are kept as they were made; the hook decides every change to a server.
        ("v1", "pods", InPlace),
        ("v1", "persistentvolumeclaims", OnDelete),
    ];
    let spec = crate::objects::native_spec(("zookeeper.pravega.io/v1beta1", "zookeeperclusters"), &children, HOOK);
    let spec = uc_api::controller::UniversalControllerSpec { resync_period_seconds: Some(10.0), ..spec };
    crate::objects::universal_controller("zookeeper-operator", ("uc.njuics.cn/operator", "zookeeper"), spec)
}

/// Registers the native hook; `client` keeps the admin Secret and records Events; `names` resolves
/// the addresses of servers in other clusters (clusterset names), when the ensemble spans clusters.
pub fn register(natives: &mut NativeRegistry, client: kube::Client, names: Option<ClusterNames>) {
    let events = Arc::new(Recorder::named(client.clone(), "zookeeper-operator"));
    let names = Arc::new(names);
    let cluster: Arc<AsyncSyncFn> = Arc::new(move |request: SyncRequest| -> SyncFuture {
        let (client, events, names) = (client.clone(), events.clone(), names.clone());
        Box::pin(async move { Ok(sync(&client, &events, names.as_ref().as_ref(), request).await) })
    });
    natives.register(HOOK, native::typed_async(cluster));
}

/// One sync of a ZookeeperCluster. It never answers with an error: what goes wrong is in the status.
async fn sync(
    kube: &kube::Client,
    events: &Recorder,
    names: Option<&ClusterNames>,
    mut request: SyncRequest,
) -> SyncResponse {
    let pods = take_children(&mut request, "Pod.v1");
    let claims = take_children(&mut request, "PersistentVolumeClaim.v1");
    let parent = &request.parent;
    let previous = status::previous(parent);
    let mut spec = match Spec::from(parent) {
        Ok(s) => s,
        Err(error) => {
            // Keep whatever runs; a bad edit must not take an ensemble down.
            let mut kept: Vec<Value> =
                request.children.values().flat_map(|m| m.values().map(|o| Value::clone(o))).collect();
            kept.extend(pods.into_values().map(Arc::unwrap_or_clone));
            kept.extend(claims.into_values().map(Arc::unwrap_or_clone));
            let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let c = status::condition("Error", true, "InvalidSpec", &now, &error.to_string());
            let mut status = previous;
            uc_api::conditions::set_in(status.conditions.get_or_insert_default(), c, &[], &now);
            return SyncResponse { status: Some(json_of(&status)), children: kept, ..Default::default() };
        }
    };
    let generation = parent.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
    spec.restart_round = rollout::restart_round(&spec, generation, &previous);
    let pods = crate::objects::typed_pods(&pods);
    let observed = observe(&spec, &pods, names).await;
    let mut decision = plan::plan(&spec, &pods, &observed, &previous);
    if let Some(change) = decision.change.clone() {
        let done = match admin_password(kube, &spec, parent).await {
            Ok(password) => match reconfigure(&spec, &observed, &password, &change).await {
                Ok(addr) => confirm_write(&addr, &password).await,
                Err(e) => Err(e),
            },
            Err(e) => Err(Failure {
                routine: false,
                message: format!("reading the admin Secret {}: {e}", spec.admin_secret()),
            }),
        };
        if let Err(f) = done {
            let progress = decision.status.progress.take().unwrap_or_default();
            decision.status.progress = Some(format!("{progress}: {}; trying again", f.message));
            if f.routine {
                tracing::debug!(cluster = %spec.name, error = %f.message, "membership change to be retried");
            } else {
                events.record(parent, "Warning", "ReconfigFailed", &f.message).await;
            }
        }
    } else if let Err(e) = admin_password(kube, &spec, parent).await {
        // The servers' pods need the Secret to start.
        tracing::warn!(cluster = %spec.name, error = %e, "could not make the admin Secret");
    }
    for (reason, message) in &decision.events {
        events.record(parent, "Normal", reason, message).await;
    }
    let mut children: Vec<Value> = objects::services(&spec).iter().map(json_of).collect();
    children.push(json_of(&objects::config_map(&spec)));
    children.push(json_of(&objects::disruption_budget(&spec)));
    let ordinals: Vec<u32> =
        decision.pods.iter().filter_map(|p| spec.ordinal_of(p.metadata.name.as_deref()?)).collect();
    children.extend(ordinals.iter().filter_map(|o| objects::claim(&spec, *o)).map(|c| json_of(&c)));
    // Claims of servers no longer in the ensemble stay unless the reclaim policy says Delete.
    if let spec::Storage::Persistent { delete: false, .. } = spec.storage {
        let made: Vec<String> = ordinals.iter().map(|o| spec.claim_name(*o)).collect();
        children
            .extend(claims.into_iter().filter(|(n, _)| !made.contains(n)).map(|(_, c)| as_is(Arc::unwrap_or_clone(c))));
    }
    children.extend(decision.pods.iter().map(crate::objects::json_of));
    SyncResponse {
        status: Some(crate::objects::json_of(&decision.status)),
        children,
        resync_after_seconds: Some(if decision.busy { 2.0 } else { 10.0 }),
        finalized: None,
    }
}

/// Why the super user's password could not be had from its Secret.
#[derive(Debug, thiserror::Error)]
enum AdminError {
    /// The API server refused or failed.
    #[error("{}", uc_engine::dynamic::api_error(.0))]
    Api(#[from] kube::Error),
    /// The Secret holds no password.
    #[error("Secret {0} has no password")]
    NoPassword(String),
    /// An ensemble across clusters waits for the Secret propagated to every cluster.
    #[error("Secret {0} is not here yet (an ensemble across clusters shares the one propagated to every cluster)")]
    NotPropagated(String),
    /// The Secret was replaced while it was made, again and again.
    #[error("Secret {0} keeps changing")]
    Changing(String),
    /// The Secret does not encode (a bug).
    #[error("the Secret: {0}")]
    Encode(#[from] serde_json::Error),
}

/// The super user's password, from the `<name>-admin` Secret, made (random, owned by the cluster)
/// when it is not there.
async fn admin_password(kube: &kube::Client, spec: &Spec, parent: &Value) -> Result<String, AdminError> {
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    let api: kube::Api<Secret> = kube::Api::namespaced(kube.clone(), &spec.namespace);
    let name = spec.admin_secret();
    for _ in 0..2 {
        match api.get_opt(&name).await? {
            Some(s) => {
                let password = s.data.as_ref().and_then(|d| d.get("password")).map(|b| b.0.clone());
                return String::from_utf8(password.unwrap_or_default())
                    .ok()
                    .filter(|p| !p.is_empty())
                    .ok_or(AdminError::NoPassword(name));
            }
            // An ensemble across clusters shares one password: the Secret comes with the
            // ZookeeperCluster (the MultiClusterZooKeeper propagates it); one made here would differ.
            None if spec.ensemble.is_some() => {
                return Err(AdminError::NotPropagated(name));
            }
            None => {
                let password: String = (0..32).map(|_| char::from(b'a' + rand::random_range(0..26u8))).collect();
                let owner = serde_json::from_value(uc_api::meta::controller_owner_reference(parent))?;
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        labels: Some(spec.labels()),
                        owner_references: Some(vec![owner]),
                        ..Default::default()
                    },
                    string_data: Some(
                        [("digest", client::super_digest(&password)), ("password", password.clone())]
                            .map(|(k, v)| (k.to_string(), v))
                            .into(),
                    ),
                    ..Default::default()
                };
                match api.create(&kube::api::PostParams::default(), &secret).await {
                    Ok(_) => return Ok(password),
                    Err(kube::Error::Api(e)) if e.code == 409 => continue,
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    Err(AdminError::Changing(name))
}

/// Makes a membership change through the leader (any serving member if none leads); the address of
/// the server it went through.
async fn reconfigure(
    spec: &Spec,
    observed: &Observed,
    password: &str,
    change: &plan::Change,
) -> Result<String, Failure> {
    // The leader, unless it is the server leaving (its sessions end with it).
    let leaving = match change {
        plan::Change::Remove(id) => spec.ordinal_of_id(*id).map(|o| spec.pod_name(o)),
        plan::Change::Add(_) => None,
    };
    let mut serving: Vec<(&String, &fourlw::Srvr)> =
        observed.serving.iter().filter(|(n, _)| Some(*n) != leaving.as_ref()).collect();
    serving.sort_by_key(|(_, s)| s.mode != "leader");
    let (name, _) = serving.first().ok_or(Failure { routine: true, message: "no server serves".into() })?;
    let addr = observed.addresses.get(*name).cloned().unwrap_or_default();
    let failure =
        |what: String, e: client::ZkError| Failure { routine: e.is_retryable(), message: format!("{what}: {e}") };
    let mut session = client::Session::open(&addr, password).await.map_err(|e| failure(addr.clone(), e))?;
    let result = match change {
        plan::Change::Add(line) => session.reconfig(line, "").await,
        plan::Change::Remove(id) => session.reconfig("", &id.to_string()).await,
    };
    session.close().await;
    let config = result.map_err(|e| failure(format!("reconfig on {name}"), e))?;
    tracing::info!(cluster = %spec.name, change = ?change, %config, "reconfigured");
    Ok(addr)
}

/// Why a membership change did not (visibly) happen. Routine: the leadership moved, another
/// reconfiguration was under way, or the new configuration had no quorum yet — the next sync sees what
/// the servers run and asks again if needed; not worth a Warning.
#[derive(Debug)]
struct Failure {
    routine: bool,
    message: String,
}

/// Confirms that the ensemble commits a write (through `addr`): the reconfiguration may have moved
/// the leadership, so a few attempts over some seconds, each with a new session.
async fn confirm_write(addr: &str, password: &str) -> Result<(), Failure> {
    let mut last = String::new();
    for attempt in 0..10 {
        if attempt > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        let mut session = match client::Session::open(addr, password).await {
            Ok(s) => s,
            Err(e) => {
                last = e.to_string();
                continue;
            }
        };
        let stamp = chrono::Utc::now().to_rfc3339().into_bytes();
        let written = match session.set_data(CONFIRM_PATH, &stamp).await {
            Err(e) if e.is_no_node() => session.create(CONFIRM_PATH, &stamp).await,
            other => other,
        };
        session.close().await;
        match written {
            Ok(()) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
    }
    Err(Failure { routine: false, message: format!("no write committed after the reconfiguration: {last}") })
}

/// The znode the operator writes after each reconfiguration, to confirm that the new configuration
/// commits writes.
const CONFIRM_PATH: &str = "/zookeeper-operator";

fn as_is(mut obj: Value) -> Value {
    if let Some(m) = obj.as_object_mut() {
        m.remove("status");
    }
    obj
}

/// Asks every server pod with an address `srvr` (and every server of other clusters the ensemble
/// lists, at the address its name resolves to), and the leader `conf` and `mntr`.
async fn observe(spec: &Spec, pods: &plan::Pods, names: Option<&ClusterNames>) -> Observed {
    let mut addresses: Vec<(String, String)> = pods
        .iter()
        .filter(|(name, p)| spec.ordinal_of(name).is_some() && p.metadata.deletion_timestamp.is_none())
        .filter_map(|(name, p)| {
            let ip = p.status.as_ref()?.pod_ip.as_deref().filter(|ip| !ip.is_empty())?;
            Some((name.clone(), format!("{ip}:{CLIENT_PORT}")))
        })
        .collect();
    for (_, host) in spec.remote_servers() {
        if let Some(ip) = resolve(names, &host, &spec.namespace).await {
            addresses.push((host, format!("{ip}:{CLIENT_PORT}")));
        }
    }
    let answers = futures::future::join_all(addresses.iter().map(|(_, a)| fourlw::ask(a, "srvr"))).await;
    let mut observed = Observed { addresses: addresses.iter().cloned().collect(), ..Default::default() };
    for ((name, _), answer) in addresses.iter().zip(answers) {
        if let Some(s) = answer.ok().as_deref().and_then(fourlw::parse_srvr) {
            observed.serving.insert(name.clone(), s);
        }
    }
    // The leader's configuration is the committed one (a follower's may lag a reconfiguration behind);
    // without a leader there is no configuration to go by.
    let leader = observed.leader().and_then(|n| observed.addresses.get(n)).cloned();
    if let Some(addr) = leader {
        if let Ok(answer) = fourlw::ask(&addr, "conf").await {
            let config = fourlw::parse_conf(&answer);
            if !config.servers.is_empty() {
                observed.config = Some(config);
            }
        }
        if let Ok(answer) = fourlw::ask(&addr, "mntr").await {
            observed.leader_mntr = fourlw::parse_mntr(&answer);
        }
    }
    observed
}

/// The address a server's name resolves to: the cluster's names (clusterset names of imported
/// services included), else the system's resolver.
async fn resolve(names: Option<&ClusterNames>, host: &str, namespace: &str) -> Option<std::net::IpAddr> {
    if let Some(n) = names
        && let Some(ips) = n.lookup(host, namespace).await
    {
        return ips.first().copied();
    }
    tokio::net::lookup_host((host, CLIENT_PORT)).await.ok()?.next().map(|a| a.ip())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_crd_has_every_field_of_the_pravega_crd() {
        let crd = crate::objects::json_of(&crd());
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let fields = include_str!("testdata/pravega-fields.txt");
        let missing: Vec<&str> = fields
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter(|path| {
                let mut at = schema;
                for part in path.split('.') {
                    at = &at["properties"][part];
                }
                at.is_null()
            })
            .collect();
        assert!(missing.is_empty(), "fields of pravega's CRD that uc's lacks: {missing:?}");
        let columns: Vec<&str> = crd["spec"]["versions"][0]["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(columns, ["Replicas", "Ready", "Version", "Leader", "Age"]);
    }

    #[test]
    fn the_controller_owns_every_kind_the_hook_makes() {
        let c = controller();
        let s = Spec::from(&json!({"metadata": {"name": "zk", "namespace": "ns"}, "spec": {}})).unwrap();
        let mut made: Vec<Value> = objects::services(&s).iter().map(json_of).collect();
        made.extend([
            json_of(&objects::config_map(&s)),
            json_of(&objects::disruption_budget(&s)),
            json_of(&objects::pod(&s, 0, &[], false)),
        ]);
        made.extend(objects::claim(&s, 0).map(|c| json_of(&c)));
        let owned: Vec<String> =
            c.spec.child_resources.iter().map(|r| format!("{}/{}", r.api_version, r.resource)).collect();
        for obj in made {
            let kind = obj["kind"].as_str().unwrap().to_lowercase();
            let key = format!("{}/{kind}", obj["apiVersion"].as_str().unwrap());
            assert!(owned.iter().any(|o| o.starts_with(&key)), "{key} not in {owned:?}");
        }
    }
}
