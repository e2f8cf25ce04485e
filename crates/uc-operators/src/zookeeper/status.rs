//! The parts of a ZookeeperCluster's status that are functions of one server or one condition: a
//! server's entry, the ensemble's conditions (keeping their transition times), the version a pod runs.

use k8s_openapi::api::core::v1::Pod;
use serde::Deserialize;
use serde_json::Value;
use uc_api::conditions::Condition;

use super::fourlw::Srvr;
use super::objects;
use super::spec::Role;
use super::types::ServerStatus;

/// A server in the status: its name, id, mode (as it says, or as the configuration says) and zxid.
pub(super) fn server_entry(name: &str, id: u32, said: Option<&Srvr>, role: Role) -> ServerStatus {
    let mode = match (said, role) {
        (Some(s), _) => s.mode.clone(),
        (None, Role::Observer) => "observer".to_string(),
        (None, Role::Participant) => "unknown".to_string(),
    };
    ServerStatus { name: name.into(), id, mode, zxid: said.map(|s| s.zxid.clone()) }
}

/// The ensemble's conditions: PodsReady (`ready` of `total` serve), Upgrading, and Error when quorum is
/// `lost` (why).
pub(super) fn conditions(
    (ready, total): (usize, usize),
    upgrading: Option<&str>,
    lost: Option<String>,
    now: &str,
) -> Vec<Condition> {
    vec![
        if ready == total {
            condition("PodsReady", true, "AllServersServing", now, "")
        } else {
            condition("PodsReady", false, "ServersNotServing", now, &format!("{ready} of {total} serve"))
        },
        match upgrading {
            Some(m) => condition("Upgrading", true, "RollingUpdate", now, m),
            None => condition("Upgrading", false, "UpToDate", now, ""),
        },
        match lost {
            Some(message) => condition("Error", true, "QuorumLost", now, &message),
            None => condition("Error", false, "NoError", now, ""),
        },
    ]
}

/// The tag of the image the ZooKeeper container runs, as the node reports it.
pub(super) fn running_tag(pod: &Pod) -> Option<String> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    let c = statuses.iter().find(|c| c.name == objects::CONTAINER)?;
    let image = &c.image;
    Some(image.rsplit_once(':').map(|(_, t)| t).unwrap_or("latest").to_string())
}

/// A condition as of `now`.
pub(super) fn condition(type_: &str, ok: bool, reason: &str, now: &str, message: &str) -> Condition {
    Condition { last_transition_time: Some(now.into()), ..Condition::new(type_, ok, reason, message) }
}

/// A condition whose status did not change keeps its transition time.
pub(super) fn keep_transition_times(conditions: &mut [Condition], previous: &Value) {
    let before = previous.get("conditions").and_then(|c| Vec::<Condition>::deserialize(c).ok()).unwrap_or_default();
    for c in conditions.iter_mut() {
        let same = before.iter().find(|b| b.type_ == c.type_ && b.status == c.status);
        if let Some(t) = same.and_then(|b| b.last_transition_time.clone()) {
            c.last_transition_time = Some(t);
        }
    }
}
