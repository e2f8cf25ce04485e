//! One sync's decision for an ensemble, as a pure function of what the servers said and the pods seen:
//! which servers' pods exist (kept as they are, created, or re-created for a member whose pod is gone),
//! at most one membership change, and the status. Membership comes from the servers themselves (`conf`
//! of the leader); when no server serves, from the last status; for a new ensemble, from the spec.
//!
//! Membership changes are made one server at a time, only while every member serves:
//! 1. a member without a pod gets its pod back (same ordinal, claim and myid) — nothing else happens
//!    until every member serves again;
//! 2. growing: the next server's pod starts with the current configuration plus itself listed as an
//!    observer, so it can never form a quorum with another joiner: it adopts the ensemble's committed
//!    configuration and follows the leader without a vote (ZooKeeper's documented way to join). Once it
//!    serves so, it is reconfigured in as a participant — which needs a quorum of the new
//!    configuration synced with the leader, the joiner included, so it is never added before it has
//!    caught up. (Reconfiguring it in as an observer first would not do: an observer cannot vote for
//!    its own promotion, and a one-server ensemble could then never grow.) Observers someone else
//!    configured are promoted the same way, when the promotion does not need their own vote;
//! 3. shrinking: the highest server is reconfigured out (the operator then confirms a write), and only
//!    then its pod goes (its claim too, unless the reclaim policy is Retain).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::fourlw::{Config, Srvr};
use super::objects;
use super::rollout::{self, Step};
use super::spec::{Role, Spec};
use super::status::{conditions, keep_transition_times, running_tag, server_entry};
use super::types::{Members, ZookeeperClusterStatus};
use crate::objects::{ready, written_pod};

/// A server's pods by name, typed.
pub type Pods = BTreeMap<String, Pod>;

fn is_named(pod: &Pod, name: &str) -> bool {
    pod.metadata.name.as_deref() == Some(name)
}

/// What the servers said this sync.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// `srvr` of each server pod that answered as serving, by pod name.
    pub serving: BTreeMap<String, Srvr>,
    /// The configuration a serving server runs.
    pub config: Option<Config>,
    /// The leader's `mntr`.
    pub leader_mntr: BTreeMap<String, String>,
    /// The client address (`ip:port`) of every server asked, by pod name (this cluster's) or host
    /// (another cluster's).
    pub addresses: BTreeMap<String, String>,
}

impl Observed {
    /// The leader: the serving server that says it leads. Two can only be two ensembles (one formed
    /// by mistake, or a deposed leader that has not noticed yet): the one with the longest history
    /// (highest zxid) is the ensemble. One choice for everything a sync decides — whose `conf` and
    /// `mntr` to read, which server rolls last, what the status reports.
    pub fn leader(&self) -> Option<&str> {
        let leaders = self.serving.iter().filter(|(_, s)| s.mode == "leader");
        leaders.max_by_key(|(name, s)| (s.zxid_value(), std::cmp::Reverse(name.as_str()))).map(|(n, _)| n.as_str())
    }
}

/// The members: ordinal → role.
pub type Membership = BTreeMap<u32, Role>;

/// A membership change, made through ZooKeeper's `reconfig`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Add a server (its `server.N=...` line) with the role its line says, or change its role.
    Add(String),
    /// Remove the server with this id.
    Remove(u32),
}

/// The sync's decision: the pods to keep or make, the change to make, and the status.
#[derive(Debug)]
pub struct Decision {
    pub pods: Vec<Pod>,
    pub change: Option<Change>,
    pub status: ZookeeperClusterStatus,
    /// Something is in progress: sync again soon.
    pub busy: bool,
    /// Membership changes the servers show since the last status: (reason, message) of an Event each.
    pub events: Vec<(&'static str, String)>,
}

/// Members in other clusters (an ensemble spanning clusters): id → role and the rest of its line as
/// the configuration has it (`host:2888:3888:participant;host:2181`).
pub type Remote = BTreeMap<u32, (Role, String)>;

fn role_of(line: &str) -> Role {
    if line.contains(":observer") { Role::Observer } else { Role::Participant }
}

/// The host of a server's line.
pub fn host_of(line: &str) -> &str {
    line.split(':').next().unwrap_or_default()
}

/// The membership a configuration describes: this cluster's servers by ordinal (id = `first_id` +
/// ordinal), the others' by id. In an ensemble of its own every server is this cluster's; in one
/// spanning clusters, a server is this cluster's when its ordinal is within `replicas` or its pod is
/// here (a server being removed).
pub fn membership_of(spec: &Spec, config: &Config, pods: &BTreeMap<u32, &Pod>) -> (Membership, Remote) {
    let mut local = Membership::new();
    let mut remote = Remote::new();
    for (id, line) in config.servers.iter().filter(|(id, _)| **id > 0) {
        match spec.ordinal_of_id(*id) {
            Some(o) if spec.ensemble.is_none() || o < spec.replicas || pods.contains_key(&o) => {
                local.insert(o, role_of(line));
            }
            _ => {
                remote.insert(*id, (role_of(line), line.clone()));
            }
        }
    }
    (local, remote)
}

/// The membership the last status recorded.
fn membership_of_status(spec: &Spec, status: &ZookeeperClusterStatus) -> Option<Membership> {
    let m: Membership = status
        .servers
        .iter()
        .flatten()
        .filter_map(|s| {
            let role = if s.mode == "observer" { Role::Observer } else { Role::Participant };
            Some((spec.ordinal_of(&s.name)?, role))
        })
        .collect();
    (!m.is_empty()).then_some(m)
}

/// What a sync saw of the ensemble, for the steps that change it.
struct Seen<'a> {
    spec: &'a Spec,
    observed: &'a Observed,
    server_pods: &'a BTreeMap<u32, &'a Pod>,
    membership: &'a Membership,
    remote_voters: usize,
}

impl Seen<'_> {
    /// Serving, as the server says, and Ready, as its pod says (so that no two pods are unready at once),
    /// from the image its pod asks for (an upgrade of it done, not only asked for).
    fn serves(&self, o: u32) -> bool {
        let name = self.spec.pod_name(o);
        self.observed.serving.contains_key(&name)
            && self.server_pods.get(&o).is_some_and(|p| ready(p) && rollout::settled(p))
    }

    /// A rolling upgrade or restart, one server at a time once every follower caught up (the leader
    /// last); what it does.
    fn roll(&self, outdated: &[Step], out: &mut Vec<Pod>) -> String {
        let spec = self.spec;
        let voters = self.membership.values().filter(|r| **r == Role::Participant).count() + self.remote_voters;
        if !rollout::caught_up(&self.observed.leader_mntr, voters) {
            return "waiting for every follower to catch up with the leader".into();
        }
        let leader = self.observed.leader().and_then(|n| spec.ordinal_of(n));
        let at = |out: &[Pod], o: u32| out.iter().position(|p| is_named(p, &spec.pod_name(o)));
        match rollout::next(outdated, leader) {
            Some(Step::Image(o)) => {
                if let Some(i) = at(out, o) {
                    out[i] = rollout::upgraded(spec, spec.restart_round.as_deref(), out[i].clone());
                }
                format!("upgrading {} to {}", spec.pod_name(o), spec.image())
            }
            Some(Step::Restart(o)) => {
                if let Some(i) = at(out, o) {
                    out.remove(i);
                }
                format!("restarting {}", spec.pod_name(o))
            }
            None => String::new(),
        }
    }

    /// The next reconfiguration of a whole ensemble: promote an observer (a quorum of the new
    /// configuration can ack it) or remove one beyond the size, add the next server (its pod started
    /// first, as an observer), or remove the highest participant beyond the size.
    fn reconfigure(&self, lines: &[String], out: &mut Vec<Pod>) -> (Option<Change>, String) {
        let (spec, membership) = (self.spec, self.membership);
        let participants: Vec<u32> =
            membership.iter().filter(|(_, r)| **r == Role::Participant).map(|(o, _)| *o).collect();
        let observer = membership.iter().find(|(_, r)| **r == Role::Observer).map(|(o, _)| *o);
        // A promotion needs the acks of a quorum of the new configuration (voters + 1 members, quorum
        // ceil(voters / 2) + 1), and an observer has no vote: the voters must make it alone.
        let voters = participants.len() + self.remote_voters;
        let promotable = voters > voters.div_ceil(2);
        if let Some(o) = observer.filter(|o| *o >= spec.replicas || promotable) {
            return if o < spec.replicas {
                (
                    Some(Change::Add(spec.server_line(o, Role::Participant))),
                    format!("promoting {} to participant", spec.pod_name(o)),
                )
            } else {
                (Some(Change::Remove(spec.id(o))), format!("removing {}", spec.pod_name(o)))
            };
        }
        let next = (0..spec.replicas).find(|o| !membership.contains_key(o));
        if participants.len() < spec.replicas as usize
            && let Some(k) = next
        {
            return match self.server_pods.get(&k) {
                Some(p) if self.serves(k) => {
                    out.push(written_pod(p));
                    (Some(Change::Add(spec.server_line(k, Role::Participant))), format!("adding {}", spec.pod_name(k)))
                }
                Some(p) => {
                    out.push(written_pod(p));
                    (None, format!("waiting for {} to start", spec.pod_name(k)))
                }
                None => {
                    let mut joining = lines.to_vec();
                    joining.push(spec.server_line(k, Role::Observer));
                    out.push(objects::pod(spec, k, &joining, true));
                    (None, format!("starting {}", spec.pod_name(k)))
                }
            };
        }
        match participants.iter().copied().filter(|o| *o >= spec.replicas).max() {
            Some(h) if participants.len() > spec.replicas as usize => {
                (Some(Change::Remove(spec.id(h))), format!("removing {}", spec.pod_name(h)))
            }
            _ => (None, String::new()),
        }
    }

    /// What an ensemble that is not whole waits for.
    fn waiting(&self, missing: bool, source: &str) -> String {
        if self.observed.config.is_some() {
            return "waiting for every member to serve".into();
        }
        if missing && self.spec.ensemble.is_some() {
            return "waiting for a leader's configuration before starting this cluster's servers again".into();
        }
        if source != "waiting" {
            return String::new();
        }
        match self.spec.ensemble.as_ref().and_then(|e| e.iter().next()) {
            Some((id, host)) => format!("waiting for the ensemble to serve (server.{id} at {host} starts it)"),
            None => "waiting for the ensemble to serve".into(),
        }
    }
}

/// The decision for one sync.
pub fn plan(spec: &Spec, pods: &Pods, observed: &Observed, previous: &ZookeeperClusterStatus) -> Decision {
    let server_pods: BTreeMap<u32, &Pod> =
        pods.iter().filter_map(|(name, p)| Some((spec.ordinal_of(name)?, p))).collect();
    let mut remote = Remote::new();
    let (membership, source) = match (&observed.config, membership_of_status(spec, previous)) {
        (Some(c), _) => {
            let (local, others) = membership_of(spec, c, &server_pods);
            remote = others;
            (local, "servers")
        }
        (None, Some(m)) => (m, "status"),
        (None, None) if spec.bootstraps() => ((0..spec.replicas).map(|o| (o, Role::Participant)).collect(), "spec"),
        // Part of an ensemble another cluster starts: nothing to do until it serves.
        (None, None) => (Membership::new(), "waiting"),
    };
    let mut lines: Vec<String> = membership.iter().map(|(o, r)| spec.server_line(*o, *r)).collect();
    lines.extend(remote.iter().map(|(id, (_, line))| format!("server.{id}={line}")));
    let remote_serve = remote.values().all(|(_, line)| observed.serving.contains_key(host_of(line)));
    let remote_voters = remote.values().filter(|(r, _)| *r == Role::Participant).count();
    let mut out = Vec::new();
    let mut missing = false;
    for ordinal in membership.keys() {
        match server_pods.get(ordinal) {
            Some(p) => out.push(written_pod(p)),
            // A member without a pod (a new ensemble, or a pod that was deleted): its pod, with the
            // ensemble's configuration; its data, if its claim kept it, is its own.
            // Part of an ensemble across clusters, it waits for a configuration from a leader: what it
            // remembers holds this cluster's servers only, and a server started with that alone
            // would form an ensemble of its own.
            None if spec.ensemble.is_some() && source == "status" => missing = true,
            None => {
                missing = true;
                out.push(objects::pod(spec, *ordinal, &lines, false));
            }
        }
    }
    let seen = Seen { spec, observed, server_pods: &server_pods, membership: &membership, remote_voters };
    let whole = observed.config.is_some() && !missing && membership.keys().all(|o| seen.serves(*o)) && remote_serve;
    let round = spec.restart_round.as_deref();
    let outdated: Vec<Step> = membership
        .keys()
        .filter_map(|o| server_pods.get(o).and_then(|p| rollout::step_for(spec, round, *o, p)))
        .collect();
    let (change, progress) = if whole && !outdated.is_empty() {
        (None, seen.roll(&outdated, &mut out))
    } else if whole {
        seen.reconfigure(&lines, &mut out)
    } else {
        (None, seen.waiting(missing, source))
    };
    // Pods of servers outside the membership: a joiner being started stays (above); a server that
    // was reconfigured out goes, now that the servers say it is out. Without a configuration to go
    // by (no server serves), every pod stays.
    for (ordinal, p) in &server_pods {
        let placed = out.iter().any(|q| is_named(q, &spec.pod_name(*ordinal)));
        if !membership.contains_key(ordinal) && !placed && observed.config.is_none() {
            out.push(written_pod(p));
        }
    }
    let upgrading = (!outdated.is_empty()).then(|| {
        let what = if outdated.iter().all(|s| matches!(s, Step::Restart(_))) { "restart" } else { "upgrade" };
        format!("rolling {what}: {} of {} servers to go", outdated.len(), membership.len())
    });
    let mut status = status(spec, pods, observed, (&membership, &remote), source, previous, upgrading.as_deref());
    if !progress.is_empty() {
        status.progress = Some(progress);
    }
    let busy =
        change.is_some() || status.ready_replicas != status.replicas || membership.len() != spec.replicas as usize;
    let events = match (source, membership_of_status(spec, previous)) {
        ("servers", Some(before)) => membership_events(spec, &before, &membership),
        _ => Vec::new(),
    };
    Decision { pods: out, change, status, busy, events }
}

/// An Event per server that joined or left between two memberships.
fn membership_events(spec: &Spec, before: &Membership, now: &Membership) -> Vec<(&'static str, String)> {
    let joined = now.iter().filter(|(o, _)| !before.contains_key(o)).map(|(o, r)| {
        (
            "MemberAdded",
            format!("{} (server.{}) joined the ensemble as a {}", spec.pod_name(*o), spec.id(*o), r.as_str()),
        )
    });
    let left = before
        .keys()
        .filter(|o| !now.contains_key(o))
        .map(|o| ("MemberRemoved", format!("{} (server.{}) left the ensemble", spec.pod_name(*o), spec.id(*o))));
    joined.chain(left).collect()
}

fn status(
    spec: &Spec,
    pods: &Pods,
    observed: &Observed,
    (membership, remote): (&Membership, &Remote),
    source: &str,
    previous: &ZookeeperClusterStatus,
    upgrading: Option<&str>,
) -> ZookeeperClusterStatus {
    let mut ready = Vec::new();
    let mut unready = Vec::new();
    let mut servers = Vec::new();
    for (ordinal, role) in membership {
        let name = spec.pod_name(*ordinal);
        let said = observed.serving.get(&name);
        match said {
            Some(_) => ready.push(name.clone()),
            None => unready.push(name.clone()),
        }
        servers.push(server_entry(&name, spec.id(*ordinal), said, *role));
    }
    // The servers of other clusters, by address.
    for (id, (role, line)) in remote {
        let host = host_of(line);
        let said = observed.serving.get(host);
        servers.push(server_entry(host, *id, said, *role));
    }
    let participants = membership.values().filter(|r| **r == Role::Participant).count()
        + remote.values().filter(|(r, _)| *r == Role::Participant).count();
    let serving_participants = membership
        .iter()
        .filter(|(o, r)| **r == Role::Participant && observed.serving.contains_key(&spec.pod_name(**o)))
        .count()
        + remote
            .values()
            .filter(|(r, line)| *r == Role::Participant && observed.serving.contains_key(host_of(line)))
            .count();
    let quorum = participants / 2 + 1;
    let all_ready = ready.len() == membership.len();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    // A new ensemble that has not elected yet has not lost anything.
    let lost = source != "spec" && source != "waiting" && serving_participants < quorum;
    let lost = lost.then(|| {
        format!(
            "quorum lost: {serving_participants} of {participants} participants serve, {quorum} needed; waiting for \
             the servers to come back (no data is touched)"
        )
    });
    let mut conditions = conditions((ready.len(), membership.len()), upgrading, lost, &now);
    keep_transition_times(&mut conditions, previous);
    // The version is what the serving servers' containers run.
    let running: Vec<String> = pods
        .iter()
        .filter(|(name, _)| observed.serving.contains_key(*name))
        .filter_map(|(_, p)| running_tag(p))
        .collect();
    let current = match running.first() {
        Some(t) if running.iter().all(|r| r == t) && all_ready => Some(t.clone()),
        _ => previous.current_version.clone(),
    };
    ZookeeperClusterStatus {
        replicas: Some(membership.len() as i32),
        ready_replicas: Some(ready.len() as i32),
        members: Some(Members { ready: Some(ready), unready: Some(unready) }),
        internal_client_endpoint: Some(spec.client_endpoint()),
        current_version: current,
        target_version: Some(spec.tag.clone()),
        leader: observed.leader().map(String::from),
        servers: Some(servers),
        restart_round: spec.restart_round.clone(),
        conditions: Some(conditions),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::json_of;
    use crate::zookeeper::fourlw::{self, parse_conf};
    use serde_json::{Value, json};
    use uc_api::meta::str_at;

    /// No status yet.
    fn none() -> ZookeeperClusterStatus {
        ZookeeperClusterStatus::default()
    }

    fn spec(replicas: u32) -> Spec {
        Spec::from(&json!({"metadata": {"name": "zk", "namespace": "ns", "uid": "u"}, "spec": {"replicas": replicas}}))
            .unwrap()
    }

    fn running(spec: &Spec, ordinal: u32) -> (String, Pod) {
        let mut p = json_of(&objects::pod(spec, ordinal, &[], false));
        let image = p["spec"]["containers"][0]["image"].clone();
        p["status"] = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                             "containerStatuses": [{"name": "zookeeper", "ready": true, "image": image}]});
        (spec.pod_name(ordinal), serde_json::from_value(p).unwrap())
    }

    fn name(pod: &Pod) -> &str {
        pod.metadata.name.as_deref().unwrap_or_default()
    }

    fn image(pod: &Pod) -> &str {
        pod.spec.as_ref().unwrap().containers[0].image.as_deref().unwrap_or_default()
    }

    /// The pod asks for `image` and its container runs it (an upgrade done).
    fn set_image(pod: &mut Pod, image: &str) {
        pod.spec.as_mut().unwrap().containers[0].image = Some(image.into());
        pod.status.as_mut().unwrap().container_statuses.as_mut().unwrap()[0].image = image.into();
    }

    fn srvr(mode: &str) -> Srvr {
        Srvr { mode: mode.into(), zxid: "0x100000002".into() }
    }

    #[test]
    fn a_new_ensemble_starts_every_server_with_every_member() {
        let s = spec(3);
        let d = plan(&s, &Pods::new(), &Observed::default(), &none());
        assert_eq!(d.pods.len(), 3);
        let servers = json_of(&d.pods[2])["spec"]["initContainers"][0]["env"][1]["value"].as_str().unwrap().to_string();
        assert_eq!(servers.split(' ').count(), 3, "{servers}");
        assert!(servers.contains("server.3=zk-2.zk-headless.ns.svc.cluster.local:2888:3888:participant"));
        assert_eq!(
            json_of(&d.status)["conditions"][2]["status"],
            json!("False"),
            "no quorum loss before the first election"
        );
        assert!(d.busy);
    }

    #[test]
    fn a_serving_ensemble_reports_its_leader_and_keeps_its_pods() {
        let s = spec(3);
        let pods: Pods = (0..3).map(|o| running(&s, o)).collect();
        let conf = parse_conf(&objects::participants(&s, 0..3).join("\n"));
        let serving = BTreeMap::from([
            ("zk-0".to_string(), srvr("follower")),
            ("zk-1".to_string(), srvr("leader")),
            ("zk-2".to_string(), srvr("follower")),
        ]);
        let d = plan(&s, &pods, &Observed { serving, config: Some(conf), ..Default::default() }, &none());
        assert_eq!(d.pods.len(), 3);
        assert_eq!(json_of(&d.status)["leader"], json!("zk-1"));
        assert_eq!(json_of(&d.status)["readyReplicas"], json!(3));
        assert_eq!(json_of(&d.status)["currentVersion"], json!("3.8"));
        assert_eq!(json_of(&d.status)["members"]["ready"], json!(["zk-0", "zk-1", "zk-2"]));
        assert_eq!(json_of(&d.status)["conditions"][0]["status"], json!("True"));
        assert!(!d.busy);
    }

    #[test]
    fn a_deleted_member_pod_comes_back_and_lost_quorum_is_reported_not_repaired() {
        let s = spec(3);
        let mut pods: Pods = (0..3).map(|o| running(&s, o)).collect();
        let previous: ZookeeperClusterStatus =
            serde_json::from_value(json!({"servers": [{"name": "zk-0", "id": 1, "mode": "follower"},
                                          {"name": "zk-1", "id": 2, "mode": "leader"},
                                          {"name": "zk-2", "id": 3, "mode": "follower"}]}))
            .unwrap();
        pods.remove("zk-1");
        pods.remove("zk-2");
        let d = plan(&s, &pods, &Observed::default(), &previous);
        let names: Vec<&str> = d.pods.iter().map(name).collect();
        assert_eq!(names, ["zk-0", "zk-1", "zk-2"], "the members' pods are made again, same ordinals");
        let again = &json_of(&d.pods[1])["spec"]["initContainers"][0]["env"];
        assert_eq!(again[2]["value"], json!("false"), "a member comes back, it does not join afresh");
        let error = &json_of(&d.status)["conditions"][2].clone();
        assert_eq!((error["status"].as_str(), error["reason"].as_str()), (Some("True"), Some("QuorumLost")));
        assert!(error["message"].as_str().unwrap().contains("0 of 3 participants serve"));
    }

    fn serving_ensemble(s: &Spec, members: std::ops::Range<u32>) -> (Pods, Observed) {
        let pods: Pods = members.clone().map(|o| running(s, o)).collect();
        let conf = parse_conf(&objects::participants(s, members.clone()).join("\n"));
        let serving =
            members.clone().map(|o| (s.pod_name(o), srvr(if o == 0 { "leader" } else { "follower" }))).collect();
        let synced = members.len().saturating_sub(1);
        let leader_mntr = fourlw::parse_mntr(&format!("zk_server_state\tleader\nzk_synced_followers\t{synced}\n"));
        (pods, Observed { serving, config: Some(conf), leader_mntr, ..Default::default() })
    }

    fn env(pod: &Pod, name: &str) -> String {
        let pod = &json_of(pod);
        let env = pod["spec"]["initContainers"][0]["env"].as_array().unwrap();
        env.iter().find(|e| e["name"] == json!(name)).unwrap()["value"].as_str().unwrap().to_string()
    }

    #[test]
    fn growing_starts_one_joiner_then_adds_it_once_it_serves() {
        let s = spec(5);
        let (mut pods, mut observed) = serving_ensemble(&s, 0..3);
        let d = plan(&s, &pods, &observed, &none());
        assert_eq!(d.change, None, "nothing is reconfigured before the joiner serves");
        let joiner = d.pods.iter().find(|p| name(p) == "zk-3").expect("zk-3 is started");
        assert_eq!(env(joiner, "ZK_JOIN"), "true");
        let servers = env(joiner, "ZK_SERVERS");
        assert!(servers.contains("server.4=zk-3.zk-headless.ns.svc.cluster.local:2888:3888:observer"), "{servers}");
        assert_eq!(servers.split(' ').count(), 4);
        assert!(!d.pods.iter().any(|p| name(p) == "zk-4"), "one joiner at a time");
        assert_eq!(json_of(&d.status)["progress"], json!("starting zk-3"));
        // zk-3 follows without a vote: it is added as a participant.
        let (name, pod) = running(&s, 3);
        pods.insert(name.clone(), pod);
        observed.serving.insert(name, srvr("follower"));
        let d = plan(&s, &pods, &observed, &none());
        assert_eq!(d.change, Some(Change::Add(s.server_line(3, Role::Participant))));
        assert_eq!(d.pods.len(), 4, "the joiner's pod stays");
    }

    #[test]
    fn shrinking_reconfigures_the_highest_out_before_its_pod_goes() {
        let s = spec(3);
        let (pods, observed) = serving_ensemble(&s, 0..5);
        let d = plan(&s, &pods, &observed, &none());
        assert_eq!(d.change, Some(Change::Remove(5)));
        assert_eq!(d.pods.len(), 5, "every pod stays until the servers say zk-4 is out");
        // The servers now run without server 5: its pod goes.
        let (_, mut observed) = serving_ensemble(&s, 0..4);
        observed.serving.insert("zk-4".into(), srvr("follower"));
        let d = plan(&s, &pods, &observed, &none());
        assert_eq!(d.change, Some(Change::Remove(4)));
        let names: Vec<&str> = d.pods.iter().map(name).collect();
        assert_eq!(names, ["zk-0", "zk-1", "zk-2", "zk-3"]);
    }

    #[test]
    fn membership_changes_the_servers_show_become_events() {
        let s = spec(4);
        let (pods, observed) = serving_ensemble(&s, 0..4);
        let previous = plan(&s, &pods, &serving_ensemble(&s, 0..3).1, &none()).status;
        let d = plan(&s, &pods, &observed, &previous);
        assert_eq!(d.events, vec![("MemberAdded", "zk-3 (server.4) joined the ensemble as a participant".to_string())]);
        let d = plan(&spec(3), &pods, &serving_ensemble(&s, 0..3).1, &d.status);
        assert_eq!(d.events, vec![("MemberRemoved", "zk-3 (server.4) left the ensemble".to_string())]);
        assert!(plan(&s, &pods, &observed, &none()).events.is_empty(), "a first status is no change");
    }

    #[test]
    fn nothing_changes_while_a_member_does_not_serve() {
        let s = spec(5);
        let (pods, mut observed) = serving_ensemble(&s, 0..3);
        observed.serving.remove("zk-2");
        let d = plan(&s, &pods, &observed, &none());
        assert_eq!(d.change, None);
        assert_eq!(d.pods.len(), 3, "no joiner starts");
        assert_eq!(json_of(&d.status)["progress"], json!("waiting for every member to serve"));
    }

    #[test]
    fn an_observer_is_promoted_only_when_the_promotion_needs_not_its_vote() {
        let s = spec(3);
        let (pods, mut observed) = serving_ensemble(&s, 0..2);
        let mut conf = parse_conf(&objects::participants(&s, 0..2).join("\n"));
        conf.servers.insert(3, s.server_line(2, Role::Observer).split_once('=').unwrap().1.to_string());
        observed.config = Some(conf.clone());
        let mut pods = pods;
        let (name, pod) = running(&s, 2);
        pods.insert(name.clone(), pod);
        observed.serving.insert(name, srvr("observer"));
        let d = plan(&s, &pods, &observed, &none());
        assert_eq!(d.change, Some(Change::Add(s.server_line(2, Role::Participant))), "two voters carry the third");
        let one = spec(2);
        let mut conf = parse_conf(&objects::participants(&one, 0..1).join("\n"));
        conf.servers.insert(2, one.server_line(1, Role::Observer).split_once('=').unwrap().1.to_string());
        let observed = Observed {
            serving: [("zk-0".to_string(), srvr("leader")), ("zk-1".to_string(), srvr("observer"))].into(),
            config: Some(conf),
            ..Default::default()
        };
        let pods: Pods = (0..2).map(|o| running(&one, o)).collect();
        assert_eq!(plan(&one, &pods, &observed, &none()).change, None, "one voter cannot carry a second");
    }

    #[test]
    fn of_two_servers_saying_they_lead_the_one_with_the_longer_history_leads_and_rolls_last() {
        let s = spec(3);
        let (pods, mut observed) = serving_ensemble(&s, 0..3);
        // zk-0 was deposed and has not noticed yet; zk-2 leads the ensemble now.
        observed.serving.insert("zk-2".into(), Srvr { mode: "leader".into(), zxid: "0x200000001".into() });
        assert_eq!(observed.leader(), Some("zk-2"));
        let upgraded = Spec::from(&json!({"metadata": {"name": "zk", "namespace": "ns"},
                                          "spec": {"replicas": 3, "image": {"tag": "3.9"}}}))
        .unwrap();
        let d = plan(&upgraded, &pods, &observed, &none());
        let images: Vec<&str> = d.pods.iter().map(image).collect();
        assert_eq!(images, ["zookeeper:3.8", "zookeeper:3.9", "zookeeper:3.8"], "a follower first, not zk-2");
        assert_eq!(json_of(&d.status)["leader"], json!("zk-2"));
    }

    #[test]
    fn an_upgrade_rolls_followers_first_and_the_leader_last_and_only_when_caught_up() {
        let s = spec(3);
        let (mut pods, mut observed) = serving_ensemble(&s, 0..3); // zk-0 leads
        let mut upgraded = Spec::from(&json!({"metadata": {"name": "zk", "namespace": "ns"},
                                              "spec": {"replicas": 3, "image": {"tag": "3.9"}}}))
        .unwrap();
        let d = plan(&upgraded, &pods, &observed, &none());
        let images: Vec<&str> = d.pods.iter().map(image).collect();
        assert_eq!(images, ["zookeeper:3.8", "zookeeper:3.8", "zookeeper:3.9"], "the highest follower first");
        assert_eq!(d.change, None, "no membership change during a rollout");
        let upgrading = &json_of(&d.status)["conditions"][1].clone();
        assert_eq!(
            (upgrading["status"].as_str(), upgrading["message"].as_str()),
            (Some("True"), Some("rolling upgrade: 3 of 3 servers to go"))
        );
        // zk-2 asks for the new image but its container has not restarted yet: the old server still
        // serves and the pod still says Ready, yet nothing else goes until the upgrade is done.
        let mut asked = pods.clone();
        asked.get_mut("zk-2").unwrap().spec.as_mut().unwrap().containers[0].image = Some("zookeeper:3.9".into());
        let d = plan(&upgraded, &asked, &observed, &none());
        let images: Vec<&str> = d.pods.iter().map(image).collect();
        assert_eq!(images, ["zookeeper:3.8", "zookeeper:3.8", "zookeeper:3.9"], "zk-1 waits for zk-2");
        assert_eq!(json_of(&d.status)["progress"], json!("waiting for every member to serve"));
        // Followers done: the leader goes last.
        for o in 1..3 {
            set_image(pods.get_mut(&s.pod_name(o)).unwrap(), "zookeeper:3.9");
        }
        let d = plan(&upgraded, &pods, &observed, &none());
        assert_eq!(image(&d.pods[0]), "zookeeper:3.9");
        // A follower the leader does not count as synced holds the rollout.
        observed.leader_mntr.insert("zk_synced_followers".into(), "1".into());
        let d = plan(&upgraded, &pods, &observed, &none());
        assert_eq!(image(&d.pods[0]), "zookeeper:3.8");
        assert_eq!(json_of(&d.status)["progress"], json!("waiting for every follower to catch up with the leader"));
        // A restart round deletes one pod at a time (it comes back as the same member).
        upgraded.restart_round = Some("7".into());
        let all_new: Pods = pods
            .iter()
            .map(|(n, p)| {
                let mut p = p.clone();
                set_image(&mut p, "zookeeper:3.9");
                (n.clone(), p)
            })
            .collect();
        observed.leader_mntr.insert("zk_synced_followers".into(), "2".into());
        let d = plan(&upgraded, &all_new, &observed, &none());
        let names: Vec<&str> = d.pods.iter().map(name).collect();
        assert_eq!(names, ["zk-0", "zk-1"], "zk-2 restarts first");
    }

    /// The part of a five-server ensemble in cluster `mN` (servers 1–2 in m1, 3–4 in m2, 5 in m3).
    fn part(first_id: u32, replicas: u32) -> Spec {
        let servers: Vec<Value> = (1..=5u32)
            .map(|i| json!({"id": i, "host": format!("zk-{}.m{}.zk-headless.ns.svc.clusterset.local", (i - 1) % 2, i.div_ceil(2))}))
            .collect();
        Spec::from(&json!({"metadata": {"name": "zk", "namespace": "ns", "uid": "u"},
                           "spec": {"replicas": replicas, "ensemble": {"firstId": first_id, "servers": servers}}}))
        .unwrap()
    }

    /// m1's two servers serving, seen from another cluster (by host).
    fn m1_serving() -> Observed {
        let m1 = part(1, 2);
        let conf = parse_conf(&objects::participants(&m1, 0..2).join("\n"));
        let serving = [
            ("zk-0.m1.zk-headless.ns.svc.clusterset.local".to_string(), srvr("leader")),
            ("zk-1.m1.zk-headless.ns.svc.clusterset.local".to_string(), srvr("follower")),
        ]
        .into();
        let leader_mntr = fourlw::parse_mntr("zk_synced_followers\t1\n");
        Observed { serving, config: Some(conf), leader_mntr, ..Default::default() }
    }

    #[test]
    fn a_part_of_an_ensemble_waits_for_the_cluster_that_starts_it() {
        let m2 = part(3, 2);
        let d = plan(&m2, &Pods::new(), &Observed::default(), &none());
        assert!(d.pods.is_empty(), "no server starts an ensemble of its own");
        assert!(str_at(&json_of(&d.status), "/progress").contains("server.1 at zk-0.m1"), "{:?}", d.status);
        assert_eq!(json_of(&d.status)["conditions"][2]["status"], "False", "nothing is lost");
        // The cluster of server 1 starts it with its own servers.
        let d = plan(&part(1, 2), &Pods::new(), &Observed::default(), &none());
        assert_eq!(d.pods.len(), 2);
        assert!(env(&d.pods[1], "ZK_SERVERS").contains("server.2=zk-1.m1.zk-headless.ns.svc.clusterset.local:2888"));
        assert_eq!(env(&d.pods[1], "ZK_ADDRESS"), "zk-1.m1.zk-headless.ns.svc.clusterset.local");
    }

    #[test]
    fn a_part_joins_the_serving_ensemble_one_server_at_a_time_and_never_touches_the_others() {
        let m2 = part(3, 2);
        let observed = m1_serving();
        let d = plan(&m2, &Pods::new(), &observed, &none());
        assert_eq!(d.pods.len(), 1, "one joiner at a time");
        assert_eq!(env(&d.pods[0], "MYID"), "3");
        let servers = env(&d.pods[0], "ZK_SERVERS");
        assert!(servers.contains("server.1=zk-0.m1") && servers.contains("server.2=zk-1.m1"), "{servers}");
        assert!(servers.contains("server.3=zk-0.m2.zk-headless.ns.svc.clusterset.local:2888:3888:observer"));
        assert_eq!(json_of(&d.status)["leader"], "zk-0.m1.zk-headless.ns.svc.clusterset.local");
        assert_eq!(
            (json_of(&d.status)["replicas"].as_i64(), json_of(&d.status)["servers"].as_array().map(Vec::len)),
            (Some(0), Some(2))
        );
        // Serving as a non-voting follower, it is reconfigured in as a participant.
        let pods: Pods = [running(&m2, 0)].into();
        let mut observed = observed;
        observed.serving.insert("zk-0".into(), srvr("observer"));
        let d = plan(&m2, &pods, &observed, &none());
        match d.change {
            Some(Change::Add(line)) => assert!(line.starts_with("server.3=zk-0.m2") && line.contains(":participant;")),
            other => panic!("{other:?}"),
        }
        // m1, seeing m2's servers in the configuration, leaves them alone.
        let m1 = part(1, 2);
        let mut four = m1_serving();
        let lines = [objects::participants(&m1, 0..2), objects::participants(&m2, 0..2)].concat();
        four.config = Some(parse_conf(&lines.join("\n")));
        let m1_pods: Pods = (0..2).map(|o| running(&m1, o)).collect();
        four.serving = [("zk-0".to_string(), srvr("leader")), ("zk-1".to_string(), srvr("follower"))].into();
        four.serving.insert("zk-0.m2.zk-headless.ns.svc.clusterset.local".into(), srvr("follower"));
        four.serving.insert("zk-1.m2.zk-headless.ns.svc.clusterset.local".into(), srvr("follower"));
        let d = plan(&m1, &m1_pods, &four, &none());
        assert_eq!(d.change, None);
        assert_eq!(
            (json_of(&d.status)["replicas"].as_i64(), json_of(&d.status)["readyReplicas"].as_i64()),
            (Some(2), Some(2))
        );
        assert_eq!(json_of(&d.status)["servers"].as_array().map(Vec::len), Some(4));
    }

    #[test]
    fn a_part_never_restarts_a_server_without_a_leaders_configuration() {
        let m3 = part(5, 1);
        let previous: ZookeeperClusterStatus = serde_json::from_value(json!({"servers": [{"name": "zk-0", "id": 5, "mode": "follower"},
                                          {"name": "zk-0.m1.zk-headless.ns.svc.clusterset.local", "id": 1, "mode": "leader"}]})).unwrap();
        let d = plan(&m3, &Pods::new(), &Observed::default(), &previous);
        assert!(d.pods.is_empty(), "its pod waits: a server started with what the status remembers would be alone");
        assert!(str_at(&json_of(&d.status), "/progress").contains("waiting for a leader's configuration"));
        // With the leader's configuration it comes back with every member listed.
        let mut observed = m1_serving();
        let lines = [objects::participants(&part(1, 2), 0..2), objects::participants(&m3, 0..1)].concat();
        observed.config = Some(parse_conf(&lines.join("\n")));
        let d = plan(&m3, &Pods::new(), &observed, &previous);
        assert_eq!(d.pods.len(), 1);
        assert_eq!(env(&d.pods[0], "ZK_SERVERS").split(' ').count(), 3);
    }
}
