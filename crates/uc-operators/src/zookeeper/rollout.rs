//! Rolling upgrades and restarts, one server at a time, the leader last, each only while the ensemble
//! is healthy: every member serving and Ready, one leader, every follower synced to the leader's epoch.
//!
//! A server is outdated when its pod asks for another image than the spec's (an upgrade: the image is
//! changed on the running pod, and the node restarts the container from it, same pod, same data), when
//! it started with another static configuration than the spec's (`spec.config`), or when a rolling
//! restart was asked for (`triggerRollingRestart: true`) and its pod predates the request (a restart:
//! the pod is deleted and made again as the same member, with the new `zoo.cfg`). A restart request is
//! a round, numbered by the generation at which the field turned true; the round stays done while
//! the field stays true (pravega's operator sets it back to false; uc does not write users' specs).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::objects::{CONFIG_ANNOTATION, CONTAINER, RESTART_ANNOTATION, config_digest};
use super::spec::Spec;
use super::types::ZookeeperClusterStatus;
use uc_api::image::same as same_image;

/// The restart round asked for: the generation at which `triggerRollingRestart` turned true (kept in
/// the status as `restartRound` while it stays true), or none.
pub fn restart_round(spec: &Spec, generation: i64, previous: &ZookeeperClusterStatus) -> Option<String> {
    if !spec.spec.trigger_rolling_restart.unwrap_or(false) {
        return None;
    }
    Some(previous.restart_round.clone().unwrap_or_else(|| generation.to_string()))
}

/// What an outdated server needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Its image changed on the running pod.
    Image(u32),
    /// Its pod deleted, to be made again.
    Restart(u32),
}

/// The image the pod's ZooKeeper container asks for.
fn pod_image(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.containers.iter().find(|c| c.name == CONTAINER)?.image.as_deref()
}

/// Whether the pod runs what it asks for: not being deleted, and its ZooKeeper container started from
/// the image its spec names. Between an image change and the node restarting the container, the old
/// server still serves and the pod may still say Ready: counting it as rolled would let the next
/// server go while this one is about to, and two servers down lose a quorum of three.
pub fn settled(pod: &Pod) -> bool {
    let running = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
    let running = running.and_then(|cs| cs.iter().find(|c| c.name == CONTAINER)).map(|c| c.image.as_str());
    pod.metadata.deletion_timestamp.is_none()
        && pod_image(pod).zip(running).is_some_and(|(asked, ran)| same_image(asked, ran))
}

/// Whether a server's pod is outdated, and what it needs.
pub fn step_for(spec: &Spec, round: Option<&str>, ordinal: u32, pod: &Pod) -> Option<Step> {
    if pod_image(pod) != Some(spec.image().as_str()) {
        return Some(Step::Image(ordinal));
    }
    let annotation = |key: &str| pod.metadata.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str);
    if annotation(CONFIG_ANNOTATION) != Some(config_digest(&spec.zoo_cfg()).as_str()) {
        return Some(Step::Restart(ordinal));
    }
    match round {
        Some(r) if annotation(RESTART_ANNOTATION) != Some(r) => Some(Step::Restart(ordinal)),
        _ => None,
    }
}

/// Whether the leader says every other voting member follows it, synced (`mntr`:
/// `zk_synced_followers`, nothing in `zk_pending_syncs`).
pub fn caught_up(leader_mntr: &BTreeMap<String, String>, voters: usize) -> bool {
    let number = |k: &str| leader_mntr.get(k).and_then(|v| v.parse::<usize>().ok());
    leader_mntr.get("zk_server_state").map(String::as_str) == Some("leader")
        && number("zk_synced_followers").is_some_and(|n| n + 1 >= voters)
        && number("zk_pending_syncs").unwrap_or(0) == 0
}

/// The next server to roll: outdated followers (the highest ordinal first), the leader last.
pub fn next(outdated: &[Step], leader: Option<u32>) -> Option<Step> {
    let ordinal = |s: &Step| match s {
        Step::Image(o) | Step::Restart(o) => *o,
    };
    outdated
        .iter()
        .filter(|s| Some(ordinal(s)) != leader)
        .max_by_key(|s| ordinal(s))
        .or_else(|| outdated.iter().find(|s| Some(ordinal(s)) == leader))
        .cloned()
}

/// The pod after an in-place upgrade: the ZooKeeper container's image, and the restart mark.
pub fn upgraded(spec: &Spec, round: Option<&str>, mut pod: Pod) -> Pod {
    let containers = pod.spec.iter_mut().flat_map(|s| s.containers.iter_mut());
    for c in containers.filter(|c| c.name == CONTAINER) {
        c.image = Some(spec.image());
    }
    if let Some(r) = round {
        pod.metadata.annotations.get_or_insert_with(Default::default).insert(RESTART_ANNOTATION.into(), r.into());
    }
    pod
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::json_of;
    use crate::zookeeper::objects;
    use serde_json::{Value, json};

    fn spec(extra: Value) -> Spec {
        let mut s = json!({"replicas": 3, "image": {"repository": "pravega/zookeeper", "tag": "0.2.16"}});
        if let (Some(m), Some(e)) = (s.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        Spec::from(&json!({"metadata": {"name": "zk", "namespace": "ns", "generation": 4}, "spec": s})).unwrap()
    }

    #[test]
    fn an_image_change_is_an_upgrade_in_place_and_a_trigger_a_restart_round() {
        let s = spec(json!({}));
        let mut old = objects::pod(&s, 1, &[], false);
        old.spec.as_mut().unwrap().containers[0].image = Some("pravega/zookeeper:0.2.15".into());
        assert_eq!(step_for(&s, None, 1, &old), Some(Step::Image(1)));
        let up = upgraded(&s, None, old);
        assert_eq!(json_of(&up)["spec"]["containers"][0]["image"], json!("pravega/zookeeper:0.2.16"));
        assert_eq!(step_for(&s, None, 1, &up), None);
        let mut triggered = spec(json!({"triggerRollingRestart": true}));
        let round = restart_round(&triggered, 4, &ZookeeperClusterStatus::default());
        triggered.restart_round = round.clone();
        assert_eq!(round.as_deref(), Some("4"));
        assert_eq!(step_for(&triggered, round.as_deref(), 1, &up), Some(Step::Restart(1)));
        let remade = objects::pod(&triggered, 1, &[], false);
        assert_eq!(step_for(&triggered, Some("4"), 1, &remade), None, "a pod made in this round is done");
        let round_4 = ZookeeperClusterStatus { restart_round: Some("4".into()), ..Default::default() };
        assert_eq!(restart_round(&triggered, 9, &round_4).as_deref(), Some("4"), "the round stays");
        assert_eq!(restart_round(&s, 9, &round_4), None, "false ends it");
        let tuned = spec(json!({"config": {"tickTime": 500}}));
        assert_eq!(step_for(&tuned, None, 1, &up), Some(Step::Restart(1)), "a new zoo.cfg needs a new pod");
    }

    #[test]
    fn a_pod_is_settled_once_its_container_runs_the_image_it_asks_for() {
        let s = spec(json!({}));
        let running = |pod: &mut Pod, image: &str| {
            let status = k8s_openapi::api::core::v1::ContainerStatus {
                name: objects::CONTAINER.into(),
                image: image.into(),
                ready: true,
                ..Default::default()
            };
            pod.status.get_or_insert_with(Default::default).container_statuses = Some(vec![status]);
        };
        let mut pod = objects::pod(&s, 1, &[], false);
        assert!(!settled(&pod), "no container yet");
        running(&mut pod, "pravega/zookeeper:0.2.15");
        assert!(!settled(&pod), "the image changed, the container not restarted yet");
        running(&mut pod, "pravega/zookeeper:0.2.16");
        assert!(settled(&pod));
        running(&mut pod, "docker.io/pravega/zookeeper:0.2.16");
        assert!(settled(&pod), "as a kubelet reports it");
        pod.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()));
        assert!(!settled(&pod), "going");
    }

    #[test]
    fn followers_first_the_leader_last() {
        let steps = [Step::Image(0), Step::Image(1), Step::Image(2)];
        assert_eq!(next(&steps, Some(2)), Some(Step::Image(1)));
        assert_eq!(next(&[Step::Image(2)], Some(2)), Some(Step::Image(2)));
        assert_eq!(next(&[], Some(2)), None);
    }

    #[test]
    fn caught_up_means_the_leader_has_every_follower_synced() {
        let mntr = |state: &str, synced: &str| {
            crate::zookeeper::fourlw::parse_mntr(&format!(
                "zk_server_state\t{state}\nzk_synced_followers\t{synced}\nzk_pending_syncs\t0\n"
            ))
        };
        assert!(caught_up(&mntr("leader", "2"), 3));
        assert!(!caught_up(&mntr("leader", "1"), 3), "one follower is not synced");
        assert!(!caught_up(&mntr("follower", "2"), 3), "not the leader's word");
        assert!(caught_up(&mntr("leader", "0"), 1), "a lone server");
        assert!(!caught_up(&BTreeMap::new(), 1), "no answer");
    }
}
