//! The decisions of one EtcdCluster sync, as a pure function of what the sync observed: the spec, the
//! member pods, the status, and etcd's member list (read through a Ready member beforehand). A
//! decision is the pods the cluster should have and, when the step rests on a membership change, that
//! change; the caller makes it through etcd's member API before the pods are written, and falls back
//! to the decision's failure step when etcd refuses.
//!
//! The order of the checks, first match wins:
//! 1. never bootstrapped: every initial member at once (etcd's static bootstrap);
//! 2. no Ready member answers: wait (coming up), say why a restore failed, or report lost quorum;
//! 3. a member etcd knows but has no pod: start its pod;
//! 4. a pod not Ready: wait;
//! 5. a learner: promote it;
//! 6. a dead member: remove it while quorum holds, else report lost quorum;
//! 7. fewer members than `size`: add a learner and its pod; more: remove the newest member;
//! 8. a member on another version: change its image in place, one at a time;
//! 9. otherwise: Running.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use uc_api::conditions::Condition;

use super::client::Member;
use super::pods::{Pods, condition, etcd_container, name, pod_failed, pod_image, pod_ready, running_image, strip};
use super::restore;
use super::spec::Spec;
use uc_api::image::same as same_image;

/// What one sync decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The member pods the cluster should have.
    pub pods: Vec<Pod>,
    /// `status.phase`.
    pub phase: &'static str,
    /// Status conditions, the first giving `status.reason`.
    pub conditions: Vec<Condition>,
    /// Sync again soon: a change is under way.
    pub busy: bool,
    /// Quorum is lost (the cluster cannot repair itself).
    pub quorum_lost: bool,
}

/// etcd's view of the cluster, as the sync could read it.
#[derive(Debug, Clone, PartialEq)]
pub enum View {
    /// No Ready member answered; why.
    Unreachable(String),
    /// The member list, as `endpoint` answered it.
    Members {
        /// The client URL that answered.
        endpoint: String,
        /// Its member list.
        members: Vec<Member>,
    },
}

/// A membership change a step rests on.
#[derive(Debug, Clone, PartialEq)]
pub enum MemberChange {
    /// Add a learner with this peer URL.
    AddLearner(String),
    /// Promote the learner with this id.
    Promote(String),
    /// Remove the member with this id.
    Remove(String),
}

/// The step taken instead when etcd refuses the change: its pods and phase, and the condition (type,
/// reason) that carries etcd's error as its message.
#[derive(Debug, Clone, PartialEq)]
pub struct Fallback {
    /// Pods.
    pub pods: Vec<Pod>,
    /// Phase.
    pub phase: &'static str,
    /// Condition type and reason.
    pub condition: (&'static str, &'static str),
}

/// A membership change to make through `endpoint` before the step's pods are written.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Which.
    pub change: MemberChange,
    /// Through which member.
    pub endpoint: String,
    /// What happens if etcd refuses: a fallback step, or (None) the step as decided.
    pub on_failure: Option<Fallback>,
}

/// What one sync decided: a step, and the membership change it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The step.
    pub step: Step,
    /// The change, if any.
    pub change: Option<Change>,
}

impl From<Step> for Decision {
    fn from(step: Step) -> Self {
        Decision { step, change: None }
    }
}

impl Fallback {
    /// The step this fallback takes, with etcd's error.
    pub fn step(self, error: &str) -> Step {
        let (type_, reason) = self.condition;
        Step {
            pods: self.pods,
            phase: self.phase,
            conditions: vec![condition(type_, true, reason, error)],
            busy: true,
            quorum_lost: false,
        }
    }
}

/// The cluster's member pods: those named as members and not being deleted.
pub fn member_pods(spec: &Spec, observed: &Pods) -> Pods {
    observed
        .iter()
        .filter(|(n, p)| spec.index_of(n).is_some() && p.metadata.deletion_timestamp.is_none())
        .map(|(n, p)| (n.clone(), p.clone()))
        .collect()
}

/// A restore the cluster has not done yet: every member goes, then all `size` members start from the
/// snapshot at once (etcd's multi-member restore; their indexes continue the cluster's, so no name is
/// reused). A restore cut short (some of its pods written) gets the rest of the members they name.
/// Returns whether the restored members are in.
pub fn restore_step(spec: &Spec, observed: &Pods, r: &restore::Request, next: u32) -> (Step, bool) {
    let members: Vec<&Pod> = observed.iter().filter(|(n, _)| spec.index_of(n).is_some()).map(|(_, p)| p).collect();
    let ours: Vec<&&Pod> = members.iter().filter(|p| restore_id(p) == r.id).collect();
    let snapshot = r.snapshot.display().to_string();
    let restoring = |message: String| condition("Recovering", true, "Restoring", &message);
    let (pods, message, seeded) = if members.len() > ours.len() {
        let n = members.len() - ours.len();
        (vec![], format!("removing {n} member(s) before restoring from {snapshot}"), false)
    } else {
        let (names, pods) = started_together(spec, ours.into_iter().copied(), next, observed, |n, cluster| {
            spec.restore_pod(n, cluster, &r.snapshot, &r.id)
        });
        (pods, format!("starting members {} from {snapshot}", names.join(", ")), true)
    };
    let step = Step {
        pods,
        phase: "Restoring",
        conditions: vec![condition("Available", false, "Restoring", &message), restoring(message.clone())],
        busy: true,
        quorum_lost: false,
    };
    (step, seeded)
}

/// What a sync reads of the status the last one wrote: only these, each on its own (a status some
/// other writer garbled elsewhere, or in one of them, must not lose the others — above all the
/// member index, which keeps a cluster that ran from being bootstrapped again).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Previous {
    #[serde(deserialize_with = "uc_api::lenient::or_default")]
    pub phase: Option<String>,
    #[serde(deserialize_with = "uc_api::lenient::or_default")]
    pub restored_from: Option<String>,
    #[serde(deserialize_with = "uc_api::lenient::or_default")]
    pub next_member_index: Option<u64>,
    #[serde(deserialize_with = "uc_api::lenient::or_default")]
    pub quorum_lost_since: Option<String>,
}

/// What a sync saw once etcd answered: the member pods, etcd's member list and its quorum.
struct Seen<'a> {
    spec: &'a Spec,
    previous: &'a Previous,
    mine: &'a Pods,
    alive: &'a BTreeSet<String>,
    endpoint: String,
    members: Vec<Member>,
    voting: usize,
    healthy_voting: usize,
    quorum: bool,
}

impl Seen<'_> {
    fn by_peer(&self, m: &Member, name: &str) -> bool {
        m.peer_urls.iter().any(|u| *u == self.spec.peer_url(name))
    }

    /// The pods named, as they are: pods are never changed in place (but for an upgrade's image).
    fn keep(&self, names: &BTreeSet<String>) -> Vec<Pod> {
        names.iter().filter_map(|n| self.mine.get(n)).map(strip).collect()
    }

    fn done(&self, pods: &BTreeSet<String>, phase: &'static str, conditions: Vec<Condition>, busy: bool) -> Step {
        let quorum_lost = conditions.first().is_some_and(|c| c.reason == "QuorumLost");
        Step { pods: self.keep(pods), phase, quorum_lost, conditions, busy }
    }

    fn change(&self, change: MemberChange, on_failure: Option<Fallback>) -> Option<Change> {
        Some(Change { change, endpoint: self.endpoint.clone(), on_failure })
    }

    /// The pods plus a new member `name` starting into the cluster.
    fn with_member(&self, pods: &BTreeSet<String>, name: &str) -> Vec<Pod> {
        let mut out = self.keep(pods);
        out.push(self.spec.pod(name, &initial_cluster(self.spec, &self.members, name), "existing"));
        out
    }

    /// Step 3: A member etcd knows of without a pod (added before a stop) starts now.
    fn start_added(&self, pods: &BTreeSet<String>) -> Option<Decision> {
        for m in self.members.iter().filter(|m| m.name.is_empty()) {
            let Some(name) = (0..10_000u32).map(|i| self.spec.member_name(i)).find(|n| self.by_peer(m, n)) else {
                continue;
            };
            if !self.mine.contains_key(&name) {
                let conditions = vec![
                    condition("Available", self.quorum, "MemberStarting", ""),
                    scaling(format!("starting member {name}")),
                ];
                let pods = self.with_member(pods, &name);
                return Some(Step { pods, phase: "Scaling", conditions, busy: true, quorum_lost: false }.into());
            }
        }
        None
    }

    /// Step 5: Promote a learner (a learner not caught up yet refuses: the next sync asks again); step 6:
    /// replace dead members while quorum holds, and without it say so.
    fn repair(&self, pods: &mut BTreeSet<String>, all: &BTreeSet<String>) -> Option<Decision> {
        if let Some(l) = self.members.iter().find(|m| m.is_learner) {
            let conditions = vec![
                condition("Available", self.quorum, "Promoting", ""),
                scaling(format!("promoting learner {}", l.name)),
            ];
            let step = self.done(pods, "Scaling", conditions, true);
            return Some(Decision { step, change: self.change(MemberChange::Promote(l.id.clone()), None) });
        }
        let d = self.members.iter().find(|m| !m.name.is_empty() && !self.alive.contains(&m.name))?;
        if !self.quorum {
            let (healthy, voting) = (self.healthy_voting, self.voting);
            let message = format!("{healthy} of {voting} voting members are healthy; restore from a backup");
            let lost = condition("Available", false, "QuorumLost", &message);
            return Some(self.done(all, "Failed", vec![lost], false).into());
        }
        let fallback =
            Fallback { pods: self.keep(pods), phase: "Recovering", condition: ("Recovering", "RemoveFailed") };
        pods.remove(&d.name);
        let conditions = vec![
            condition("Available", true, "Recovering", ""),
            condition("Recovering", true, "MemberDead", &format!("removed dead member {}", d.name)),
        ];
        let step = self.done(pods, "Recovering", conditions, true);
        Some(Decision { step, change: self.change(MemberChange::Remove(d.id.clone()), Some(fallback)) })
    }

    /// Step 7: Scale: add a learner past the highest index ever used, or remove the newest member.
    fn scale(&self, pods: &mut BTreeSet<String>) -> Option<Decision> {
        let spec = self.spec;
        if self.members.len() < spec.size {
            let names = self.mine.keys().chain(self.members.iter().map(|m| &m.name));
            let next = names.filter_map(|n| spec.index_of(n)).max().map_or(0, |i| i + 1);
            let used = self.previous.next_member_index.unwrap_or(0) as u32;
            let name = spec.member_name(next.max(used));
            let fallback = Fallback { pods: self.keep(pods), phase: "Scaling", condition: ("Available", "AddFailed") };
            let conditions =
                vec![condition("Available", true, "Scaling", ""), scaling(format!("adding member {name}"))];
            let pods = self.with_member(pods, &name);
            let step = Step { pods, phase: "Scaling", conditions, busy: true, quorum_lost: false };
            let add = MemberChange::AddLearner(spec.peer_url(&name));
            return Some(Decision { step, change: self.change(add, Some(fallback)) });
        }
        let newest = self.members.iter().filter(|m| !m.name.is_empty()).max_by_key(|m| spec.index_of(&m.name));
        let m = newest.filter(|_| self.members.len() > spec.size)?;
        let fallback = Fallback { pods: self.keep(pods), phase: "Scaling", condition: ("Available", "RemoveFailed") };
        pods.remove(&m.name);
        let conditions =
            vec![condition("Available", true, "Scaling", ""), scaling(format!("removing member {}", m.name))];
        let step = self.done(pods, "Scaling", conditions, true);
        Some(Decision { step, change: self.change(MemberChange::Remove(m.id.clone()), Some(fallback)) })
    }

    /// Step 8: Upgrade: one member at a time, its image changed in place (the pod and its data stay; the node
    /// restarts the container from the new image), the next only once it runs the new image and is
    /// Ready again.
    fn upgrade(&self, pods: &BTreeSet<String>) -> Option<Decision> {
        let image = self.spec.image();
        let alive = |n: &String| self.alive.contains(n);
        let in_flight = self.mine.iter().find(|(n, p)| {
            alive(n) && pod_image(p) == image && !running_image(p).is_some_and(|r| same_image(&r, &image))
        });
        let upgrading = |message: String| {
            vec![condition("Available", true, "Upgrading", ""), condition("Upgrading", true, "Upgrading", &message)]
        };
        if let Some((name, _)) = in_flight {
            let waiting = upgrading(format!("waiting for {name} to run {image}"));
            return Some(self.done(pods, "Upgrading", waiting, true).into());
        }
        let (member, pod) = self.mine.iter().find(|(n, p)| alive(n) && pod_image(p) != image)?;
        let mut out: Vec<Pod> = self.keep(pods).into_iter().filter(|p| name(p) != member).collect();
        let mut upgraded = strip(pod);
        if let Some(c) = upgraded.spec.as_mut().and_then(|s| s.containers.first_mut()) {
            c.image = Some(image.clone());
        }
        let annotations = upgraded.metadata.annotations.get_or_insert_with(Default::default);
        annotations.insert("etcd.version".into(), self.spec.version.clone());
        out.push(upgraded);
        let name = member;
        let conditions = upgrading(format!("upgrading member {name} to {image}"));
        Some(Step { pods: out, phase: "Upgrading", conditions, busy: true, quorum_lost: false }.into())
    }
}

fn scaling(message: String) -> Condition {
    condition("Scaling", true, "Scaling", &message)
}

/// Step 1: Bootstrap, once: every initial member at the same time, as etcd's static bootstrap does (each
/// names them all in `--initial-cluster`, state `new`). A cluster that ever had members is never
/// silently started empty again; one stopped half-way through its bootstrap (some pods written, no
/// status yet) gets the rest of the members its first pods name.
fn bootstrap(spec: &Spec, mine: &Pods, previous: &Previous) -> Option<Decision> {
    let bootstrapped = previous.next_member_index.unwrap_or(0) > 0;
    if bootstrapped || !mine.values().all(|p| bootstrap_flag(p, "--initial-cluster-state=") == Some("new")) {
        return None;
    }
    let (names, pods) = started_together(spec, mine.values(), 0, mine, |n, cluster| spec.pod(n, cluster, "new"));
    let message = format!("starting the initial members {}", names.join(", "));
    let conditions = vec![condition("Available", false, "Bootstrapping", &message)];
    Some(Step { pods, phase: "Creating", conditions, busy: true, quorum_lost: false }.into())
}

/// The decision of one sync (see the module's list).
pub fn plan(spec: &Spec, observed: &Pods, previous: &Previous, view: View) -> Decision {
    let mine = member_pods(spec, observed);
    let alive: BTreeSet<String> = mine.iter().filter(|(_, p)| !pod_failed(p)).map(|(n, _)| n.clone()).collect();
    let all: BTreeSet<String> = mine.keys().cloned().collect();
    if let Some(d) = bootstrap(spec, &mine, previous) {
        return d;
    }
    // 2. etcd's own view, through any Ready member.
    let (endpoint, members) = match view {
        View::Members { endpoint, members } => (endpoint, members),
        View::Unreachable(last_error) => {
            // Only a cluster that is coming up waits for its first member; one that ran has lost its quorum.
            let coming_up = matches!(previous.phase.as_deref().unwrap_or_default(), "" | "Creating" | "Restoring");
            let pods = mine.values().map(strip).collect();
            return unreachable(&mine, &alive, coming_up, &last_error, pods);
        }
    };
    let ready: Vec<&Pod> = mine.values().filter(|p| pod_ready(p)).collect();
    let mut seen = Seen {
        spec,
        previous,
        mine: &mine,
        alive: &alive,
        endpoint,
        members,
        voting: 0,
        healthy_voting: 0,
        quorum: false,
    };
    seen.voting = seen.members.iter().filter(|m| !m.is_learner).count();
    seen.healthy_voting =
        (seen.members.iter()).filter(|m| !m.is_learner && ready.iter().any(|p| seen.by_peer(m, name(p)))).count();
    seen.quorum = seen.healthy_voting > seen.voting / 2;
    // Pods stay until etcd no longer counts their member: a dead member's pod goes after its removal.
    let mut pods: BTreeSet<String> =
        all.iter().filter(|n| alive.contains(*n) || seen.members.iter().any(|m| m.name == **n)).cloned().collect();
    if let Some(d) = seen.start_added(&pods) {
        return d;
    }
    // 4. Wait for every pod.
    if let Some((name, _)) = mine.iter().find(|(n, p)| alive.contains(*n) && !pod_ready(p)) {
        let message = format!("waiting for {name} to become Ready");
        let waiting = condition("Available", seen.quorum, "MemberStarting", &message);
        return seen.done(&pods, "Scaling", vec![waiting], true).into();
    }
    if let Some(d) = seen.repair(&mut pods, &all).or_else(|| seen.scale(&mut pods)).or_else(|| seen.upgrade(&pods)) {
        return d;
    }
    let available = condition("Available", true, "Available", &format!("{} members", seen.members.len()));
    seen.done(&pods, "Running", vec![available], false).into()
}

/// The annotation where a restored member's pod records the restore (`EtcdRestore` uid).
pub const RESTORE_ID: &str = "etcd.database.coreos.com/restore-id";

/// The restore a member's pod was made by, if any.
fn restore_id(pod: &Pod) -> &str {
    pod.metadata.annotations.as_ref().and_then(|a| a.get(RESTORE_ID)).map(String::as_str).unwrap_or_default()
}

/// Whether every member a restore started is there (then the restore is done): the members the pods
/// carrying its id name.
pub fn restore_complete(observed: &Pods, id: &str) -> bool {
    let ours: Vec<&Pod> = observed.values().filter(|p| restore_id(p) == id).collect();
    let named = ours.iter().find_map(|p| bootstrap_flag(p, "--initial-cluster=")).map(|c| c.split(',').count());
    named.is_some_and(|n| ours.len() >= n)
}

/// Members that start together (a static bootstrap, a restore): those the `--initial-cluster` of the
/// first of `started` names, or `size` new ones from index `first`; each its pod as observed, or
/// `make(name, initial_cluster)`. Returns the names and the pods.
fn started_together<'a>(
    spec: &Spec,
    mut started: impl Iterator<Item = &'a Pod>,
    first: u32,
    observed: &Pods,
    make: impl Fn(&str, &str) -> Pod,
) -> (Vec<String>, Vec<Pod>) {
    let cluster =
        started.find_map(|p| bootstrap_flag(p, "--initial-cluster=").map(String::from)).unwrap_or_else(|| {
            let names = (first..first + spec.size as u32).map(|i| spec.member_name(i));
            names.map(|n| format!("{n}={}", spec.peer_url(&n))).collect::<Vec<_>>().join(",")
        });
    let names: Vec<String> = cluster.split(',').filter_map(|e| e.split_once('=')).map(|(n, _)| n.to_string()).collect();
    let pods = names.iter().map(|n| observed.get(n).map(strip).unwrap_or_else(|| make(n, &cluster))).collect();
    (names, pods)
}

/// The value of one of a member's etcd flags (`--name=value`), as its pod runs it.
fn bootstrap_flag<'a>(pod: &'a Pod, flag: &str) -> Option<&'a str> {
    let command = etcd_container(pod)?.command.as_ref()?;
    command.iter().find_map(|a| a.strip_prefix(flag))
}

/// No Ready member answered: a member whose restore failed says so; a cluster coming up waits for its
/// first member; one that ran has lost quorum, and nothing is deleted (dead members' data may be
/// needed).
fn unreachable(mine: &Pods, alive: &BTreeSet<String>, coming_up: bool, last_error: &str, all: Vec<Pod>) -> Decision {
    let failed_restore = mine.values().find_map(|p| {
        let statuses = p.status.as_ref()?.init_container_statuses.as_ref()?;
        statuses.iter().find_map(|c| {
            let code = c.state.as_ref()?.terminated.as_ref()?.exit_code;
            let name = name(p);
            (code != 0)
                .then(|| format!("{name}: the restore exited with code {code}; see kubectl logs {name} -c restore"))
        })
    });
    if let Some(message) = failed_restore {
        return Step {
            pods: mine.values().map(strip).collect(),
            phase: "Failed",
            conditions: vec![condition("Available", false, "RestoreFailed", &message)],
            busy: false,
            quorum_lost: false,
        }
        .into();
    }
    let starting = alive.len() == mine.len() && !mine.is_empty() && coming_up;
    let (phase, reason) = if starting { ("Creating", "Bootstrapping") } else { ("Failed", "QuorumLost") };
    let message = if starting {
        "waiting for the first member to become Ready".to_string()
    } else {
        format!(
            "no member answers ({last_error}); the cluster cannot be repaired without quorum: restore it from a backup"
        )
    };
    Step {
        pods: all,
        phase,
        conditions: vec![condition("Available", false, reason, &message)],
        busy: starting,
        quorum_lost: !starting,
    }
    .into()
}

/// `--initial-cluster` for a member starting into the cluster: every member etcd lists (by name, or
/// for one not started yet, by the host of its peer URL), plus `extra`.
fn initial_cluster(spec: &Spec, members: &[Member], extra: &str) -> String {
    let mut entries: Vec<String> = members
        .iter()
        .filter_map(|m| {
            let name = if m.name.is_empty() {
                m.peer_urls
                    .first()
                    .and_then(|u| u.strip_prefix("http://"))
                    .and_then(|h| h.split('.').next())?
                    .to_string()
            } else {
                m.name.clone()
            };
            Some(format!("{name}={}", m.peer_urls.first()?))
        })
        .collect();
    if !extra.is_empty() && !entries.iter().any(|e| e.starts_with(&format!("{extra}="))) {
        entries.push(format!("{extra}={}", spec.peer_url(extra)));
    }
    entries.sort();
    entries.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::json_of;
    use serde::Deserialize;
    use serde_json::{Value, json};
    use uc_api::meta::str_at;

    const ENDPOINT: &str = "http://10.0.0.1:2379";

    fn parent(size: u64, phase: &str, next: u64) -> Value {
        json!({"metadata": {"name": "ex", "namespace": "default", "uid": "u1"},
               "spec": {"size": size, "version": "3.4.23"},
               "status": {"phase": phase, "nextMemberIndex": next}})
    }

    fn previous(p: &Value) -> Previous {
        Previous::deserialize(&p["status"]).unwrap()
    }

    #[test]
    fn a_garbled_status_field_loses_no_other() {
        let p = json!({"status": {"phase": 7, "restoredFrom": ["x"], "nextMemberIndex": 3}});
        let seen = previous(&p);
        assert_eq!((seen.phase, seen.restored_from, seen.next_member_index), (None, None, Some(3)));
    }

    fn spec(p: &Value) -> Spec {
        Spec::from(p).unwrap()
    }

    /// A member pod as the node reports it: Ready (or not), running `image`.
    fn pod(spec: &Spec, index: u32, ready: bool, image: &str) -> Value {
        let name = spec.member_name(index);
        let mut p = json_of(&spec.pod(&name, "x", "existing"));
        p["spec"]["containers"][0]["image"] = json!(image);
        let cond = if ready { "True" } else { "False" };
        p["status"] = json!({"phase": "Running", "podIP": "10.0.0.1",
            "conditions": [{"type": "Ready", "status": cond}],
            "containerStatuses": [{"name": "etcd", "ready": ready, "image": image}]});
        p
    }

    /// The member's etcd exited: the pod failed and is not Ready.
    fn die(pod: &mut Pod) {
        let status = pod.status.get_or_insert_with(Default::default);
        status.phase = Some("Failed".into());
        let not_ready = k8s_openapi::api::core::v1::PodCondition {
            type_: "Ready".into(),
            status: "False".into(),
            ..Default::default()
        };
        status.conditions = Some(vec![not_ready]);
    }

    fn observed(pods: Vec<Value>) -> Pods {
        pods.into_iter()
            .map(|p| (str_at(&p, "/metadata/name").to_string(), serde_json::from_value(p).unwrap()))
            .collect()
    }

    /// Pods as the step writes them, as JSON.
    fn written(pods: &[Pod]) -> Vec<Value> {
        pods.iter().map(json_of).collect()
    }

    fn member(spec: &Spec, index: u32, started: bool, learner: bool) -> Member {
        let name = spec.member_name(index);
        Member {
            id: format!("id{index}"),
            name: if started { name.clone() } else { String::new() },
            peer_urls: vec![spec.peer_url(&name)],
            is_learner: learner,
        }
    }

    fn view(members: Vec<Member>) -> View {
        View::Members { endpoint: ENDPOINT.into(), members }
    }

    fn names(step: &Step) -> Vec<&str> {
        step.pods.iter().map(name).collect()
    }

    fn reason(step: &Step) -> &str {
        step.conditions[0].reason.as_str()
    }

    fn change_of(d: &Decision) -> Option<&MemberChange> {
        d.change.as_ref().map(|c| &c.change)
    }

    /// Three Ready members on the spec's image, all started voting members of etcd.
    fn healthy(p: &Value) -> (Spec, Pods, Vec<Member>) {
        let s = spec(p);
        let image = s.image();
        let pods = observed((0..3).map(|i| pod(&s, i, true, &image)).collect());
        let members = (0..3).map(|i| member(&s, i, true, false)).collect();
        (s, pods, members)
    }

    #[test]
    fn bootstrap_starts_every_initial_member_at_once_and_only_once() {
        let p = parent(3, "", 0);
        let s = spec(&p);
        let d = plan(&s, &Pods::new(), &previous(&p), View::Unreachable("no member is Ready".into()));
        assert_eq!(names(&d.step), ["ex-0000", "ex-0001", "ex-0002"]);
        assert_eq!((d.step.phase, reason(&d.step), d.change.clone()), ("Creating", "Bootstrapping", None));
        let all = "--initial-cluster=ex-0000=http://ex-0000.ex.default.svc:2380,\
                   ex-0001=http://ex-0001.ex.default.svc:2380,ex-0002=http://ex-0002.ex.default.svc:2380";
        for pod in &written(&d.step.pods) {
            let cmd = pod["spec"]["containers"][0]["command"].to_string();
            assert!(cmd.contains("--initial-cluster-state=new") && cmd.contains(all), "{cmd}");
        }
        // Stopped after writing one pod, before the status: the rest of the members that pod names,
        // even if the size changed meanwhile.
        let first = observed(written(&d.step.pods[..1]));
        let grown = parent(5, "", 0);
        let again = plan(&spec(&grown), &first, &previous(&grown), View::Unreachable("no member is Ready".into()));
        assert_eq!(again.step.pods, d.step.pods);
        // Bootstrapped: the status counts its members; what happens next is the usual path.
        let started = parent(3, "Creating", 3);
        let waiting =
            plan(&s, &observed(written(&d.step.pods)), &previous(&started), View::Unreachable("refused".into()));
        assert_eq!((waiting.step.phase, waiting.step.quorum_lost), ("Creating", false));
        assert_eq!(waiting.step.pods.len(), 3);
        // A cluster that had members is never started empty again.
        let ran = parent(3, "Running", 3);
        let d = plan(&spec(&ran), &Pods::new(), &previous(&ran), View::Unreachable("no member is Ready".into()));
        assert!(d.step.pods.is_empty() && d.step.quorum_lost && reason(&d.step) == "QuorumLost");
    }

    #[test]
    fn without_an_answer_a_starting_cluster_waits_and_a_running_one_has_lost_quorum() {
        let p = parent(3, "Creating", 1);
        let s = spec(&p);
        let pods = observed(vec![pod(&s, 0, false, &s.image())]);
        let d = plan(&s, &pods, &previous(&p), View::Unreachable("no member is Ready".into()));
        assert_eq!(
            (d.step.phase, reason(&d.step), d.step.busy, d.step.quorum_lost),
            ("Creating", "Bootstrapping", true, false)
        );
        let ran = parent(3, "Running", 3);
        let d = plan(&s, &pods, &previous(&ran), View::Unreachable("connection refused".into()));
        assert_eq!((d.step.phase, reason(&d.step), d.step.quorum_lost), ("Failed", "QuorumLost", true));
        assert_eq!(names(&d.step), ["ex-0000"], "nothing is deleted without quorum");
        assert!(d.step.conditions[0].message.contains("connection refused"));
    }

    #[test]
    fn a_failed_restore_says_why() {
        let p = parent(1, "Restoring", 1);
        let s = spec(&p);
        let mut seed = pod(&s, 0, false, &s.image());
        seed["status"]["initContainerStatuses"] =
            json!([{"name": "restore", "state": {"terminated": {"exitCode": 2}}}]);
        let d = plan(&s, &observed(vec![seed]), &previous(&p), View::Unreachable("no member is Ready".into()));
        assert_eq!((d.step.phase, reason(&d.step)), ("Failed", "RestoreFailed"));
        assert_eq!(names(&d.step), ["ex-0000"], "kept for its logs");
    }

    #[test]
    fn a_member_added_before_a_stop_gets_its_pod() {
        let p = parent(3, "Scaling", 2);
        let s = spec(&p);
        let pods = observed((0..2).map(|i| pod(&s, i, true, &s.image())).collect());
        let members = vec![member(&s, 0, true, false), member(&s, 1, true, false), member(&s, 2, false, true)];
        let d = plan(&s, &pods, &previous(&p), view(members));
        assert_eq!(names(&d.step), ["ex-0000", "ex-0001", "ex-0002"]);
        assert_eq!(d.change, None);
        let cmd = json_of(&d.step.pods[2])["spec"]["containers"][0]["command"].to_string();
        assert!(cmd.contains("--initial-cluster-state=existing"), "{cmd}");
        assert!(cmd.contains("ex-0000=http://ex-0000.ex.default.svc:2380,ex-0001="), "{cmd}");
    }

    #[test]
    fn an_unready_pod_is_waited_for() {
        let p = parent(3, "Scaling", 3);
        let (s, mut pods, members) = healthy(&p);
        pods.extend(observed(vec![pod(&s, 2, false, &s.image())]));
        let d = plan(&s, &pods, &previous(&p), view(members));
        assert_eq!((d.step.phase, reason(&d.step), d.change), ("Scaling", "MemberStarting", None));
        assert_eq!(names(&d.step).len(), 3);
    }

    #[test]
    fn a_learner_is_promoted() {
        let p = parent(3, "Scaling", 3);
        let (s, pods, mut members) = healthy(&p);
        members[2].is_learner = true;
        let d = plan(&s, &pods, &previous(&p), view(members));
        assert_eq!(change_of(&d), Some(&MemberChange::Promote("id2".into())));
        assert_eq!(d.change.as_ref().unwrap().endpoint, ENDPOINT);
        assert_eq!(d.change.unwrap().on_failure, None, "a learner not caught up is asked again");
        assert_eq!((d.step.phase, reason(&d.step)), ("Scaling", "Promoting"));
    }

    #[test]
    fn a_dead_member_is_removed_while_quorum_holds() {
        let p = parent(3, "Running", 3);
        let (s, mut pods, members) = healthy(&p);
        die(pods.get_mut("ex-0001").unwrap());
        let d = plan(&s, &pods, &previous(&p), view(members.clone()));
        assert_eq!(change_of(&d), Some(&MemberChange::Remove("id1".into())));
        assert_eq!(names(&d.step), ["ex-0000", "ex-0002"], "its pod goes with it");
        let fallback = d.change.unwrap().on_failure.unwrap();
        assert_eq!(fallback.pods.len(), 3, "if etcd refuses, the pod stays");
        let failed = fallback.step("etcdserver: unhealthy cluster");
        assert_eq!((failed.phase, reason(&failed)), ("Recovering", "RemoveFailed"));
        // Two of three dead: no quorum, nothing removed, the loss is reported.
        die(pods.get_mut("ex-0002").unwrap());
        let d = plan(&s, &pods, &previous(&p), view(members));
        assert_eq!((d.step.phase, reason(&d.step), d.step.quorum_lost, d.change), ("Failed", "QuorumLost", true, None));
        assert_eq!(names(&d.step).len(), 3);
    }

    #[test]
    fn scaling_up_adds_a_learner_with_the_next_index() {
        let p = parent(5, "Running", 7);
        let (s, pods, members) = healthy(&p);
        let d = plan(&s, &pods, &previous(&p), view(members));
        assert_eq!(change_of(&d), Some(&MemberChange::AddLearner(s.peer_url("ex-0007"))), "indexes are never reused");
        assert_eq!(names(&d.step), ["ex-0000", "ex-0001", "ex-0002", "ex-0007"]);
        let failed = d.change.unwrap().on_failure.unwrap().step("too many learners");
        assert_eq!((failed.phase, reason(&failed), failed.pods.len()), ("Scaling", "AddFailed", 3));
    }

    #[test]
    fn scaling_down_removes_the_newest_member() {
        let p = parent(1, "Running", 3);
        let (s, pods, members) = healthy(&p);
        let d = plan(&s, &pods, &previous(&p), view(members));
        assert_eq!(change_of(&d), Some(&MemberChange::Remove("id2".into())));
        assert_eq!(names(&d.step), ["ex-0000", "ex-0001"]);
        assert_eq!(d.change.unwrap().on_failure.unwrap().condition, ("Available", "RemoveFailed"));
    }

    #[test]
    fn an_upgrade_changes_one_member_at_a_time() {
        let p = parent(3, "Running", 3);
        let (s, _, members) = healthy(&p);
        let old = "quay.io/coreos/etcd:v3.4.22";
        let pods = observed((0..3).map(|i| pod(&s, i, true, old)).collect());
        let d = plan(&s, &pods, &previous(&p), view(members.clone()));
        assert_eq!((d.step.phase, d.change.as_ref()), ("Upgrading", None));
        let images: Vec<String> = d.step.pods.iter().map(pod_image).collect();
        assert_eq!(images.iter().filter(|i| **i == s.image()).count(), 1, "{images:?}");
        // Asked for, not running yet: wait.
        let mut pods = pods;
        let first = pods.get_mut("ex-0000").unwrap();
        first.spec.as_mut().unwrap().containers[0].image = Some(s.image());
        let d = plan(&s, &pods, &previous(&p), view(members.clone()));
        assert!(d.step.conditions[1].message.starts_with("waiting for ex-0000"));
        let images: Vec<String> = d.step.pods.iter().map(pod_image).collect();
        assert_eq!(images, [s.image().as_str(), old, old], "the next waits");
    }

    #[test]
    fn a_healthy_cluster_runs() {
        let p = parent(3, "Running", 3);
        let (s, pods, members) = healthy(&p);
        let d = plan(&s, &pods, &previous(&p), view(members));
        assert_eq!((d.step.phase, reason(&d.step), d.step.busy, d.change), ("Running", "Available", false, None));
        assert_eq!(names(&d.step).len(), 3);
    }

    #[test]
    fn a_restore_removes_every_member_then_starts_them_all_from_the_snapshot() {
        let s = spec(&parent(3, "Running", 5));
        let r = restore::Request { id: "rid".into(), snapshot: std::path::PathBuf::from("/b/snap.db") };
        let others = observed(vec![json!({"metadata": {"name": "ex-0004"}})]);
        let (step, seeded) = restore_step(&s, &others, &r, 5);
        assert!(!seeded && step.pods.is_empty() && step.phase == "Restoring", "members go first");
        let (step, seeded) = restore_step(&s, &Pods::new(), &r, 5);
        assert!(seeded);
        assert_eq!(names(&step), ["ex-0005", "ex-0006", "ex-0007"], "the indexes continue the cluster's");
        let all = "ex-0005=http://ex-0005.ex.default.svc:2380,ex-0006=http://ex-0006.ex.default.svc:2380,\
                   ex-0007=http://ex-0007.ex.default.svc:2380";
        for pod in &written(&step.pods) {
            assert_eq!(pod["metadata"]["annotations"]["etcd.database.coreos.com/restore-id"], json!("rid"));
            let main = pod["spec"]["containers"][0]["command"].as_array().unwrap();
            assert!(main.contains(&json!("--initial-cluster-state=new")));
            assert!(main.contains(&json!(format!("--initial-cluster={all}"))));
            let restore = pod["spec"]["initContainers"][0]["command"].as_array().unwrap();
            assert!(restore.contains(&json!(format!("--initial-cluster={all}"))), "{restore:?}");
        }
        // Cut short after one pod: the restore is not done, and goes on with the members it named.
        let one = observed(written(&step.pods[..1]));
        assert!(!restore_complete(&one, "rid") && restore_complete(&observed(written(&step.pods)), "rid"));
        let (again, seeded) = restore_step(&s, &one, &r, 6);
        assert!(seeded);
        assert_eq!(again.pods, step.pods);
    }
}
