//! The parts of a ZookeeperCluster's status that are functions of one server or one condition: a
//! server's entry, the ensemble's conditions (keeping their transition times), the version a pod runs.

use k8s_openapi::api::core::v1::Pod;
use serde::Deserialize;
use serde_json::Value;
use uc_api::conditions::Condition;

use super::fourlw::Srvr;
use super::objects;
use super::spec::Role;
use super::types::{ServerStatus, ZookeeperClusterStatus};

/// The status the last sync wrote, as its type. One that does not read as a whole (edited by hand)
/// keeps what a sync goes by — its servers, conditions, version and restart round — each field that
/// still reads, with a warning.
pub(super) fn previous(parent: &Value) -> ZookeeperClusterStatus {
    let Some(status) = parent.get("status").filter(|s| s.is_object()) else { return ZookeeperClusterStatus::default() };
    ZookeeperClusterStatus::deserialize(status).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "the last status does not read as a whole; reading its fields one by one");
        let field = |key: &str| status.get(key).cloned().unwrap_or_default();
        use uc_api::lenient::or_default as read;
        ZookeeperClusterStatus {
            servers: read(field("servers")).unwrap_or_default(),
            conditions: read(field("conditions")).unwrap_or_default(),
            current_version: read(field("currentVersion")).unwrap_or_default(),
            restart_round: read(field("restartRound")).unwrap_or_default(),
            ..ZookeeperClusterStatus::default()
        }
    })
}

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
pub(super) fn keep_transition_times(conditions: &mut [Condition], previous: &ZookeeperClusterStatus) {
    let before = previous.conditions.as_deref().unwrap_or_default();
    for c in conditions.iter_mut() {
        let same = before.iter().find(|b| b.type_ == c.type_ && b.status == c.status);
        if let Some(t) = same.and_then(|b| b.last_transition_time.clone()) {
            c.last_transition_time = Some(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_last_status_reads_as_its_type_and_one_edited_out_of_shape_as_none() {
        let parent = json!({"status": {"restartRound": "4", "currentVersion": "0.2.15",
            "servers": [{"name": "zk-0", "id": 1, "mode": "observer", "zxid": "0x1"}],
            "conditions": [{"type": "PodsReady", "status": "True", "reason": "AllServersServing", "message": ""}]}});
        let status = previous(&parent);
        assert_eq!(status.restart_round.as_deref(), Some("4"));
        assert_eq!(status.servers.as_ref().map(|s| s[0].mode.as_str()), Some("observer"));
        assert_eq!(status.conditions.as_ref().map(Vec::len), Some(1));
        assert_eq!(previous(&json!({})), ZookeeperClusterStatus::default(), "no status yet");
        let edited = json!({"status": {"servers": [{"name": "zk-0", "id": 1, "mode": "leader"}], "restartRound": 4,
            "replicas": "three"}});
        let read = previous(&edited);
        assert_eq!(read.servers.map(|s| s[0].name.clone()).as_deref(), Some("zk-0"), "the membership is kept");
        assert_eq!((read.restart_round, read.replicas), (None, None), "what does not read is none");
    }
}
