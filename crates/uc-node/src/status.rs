//! The status of a pod that runs real processes, from what its containers are doing: a pure function,
//! so the node writes only when it changes.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::container::Exit;

/// What one container is doing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContainerState {
    /// Running since.
    pub running_since: Option<DateTime<Utc>>,
    /// Last exit: code, started, finished.
    pub last_exit: Option<Exit>,
    /// Restarts so far (the current run's number).
    pub restarts: u32,
    /// Finished for good (no restart).
    pub done: bool,
    /// Readiness.
    pub ready: bool,
    /// Why it could not start (`reason`, `message`).
    pub start_error: Option<(String, String)>,
    /// The image the process was started from (it differs from the spec's while an image change is
    /// being made).
    pub image: Option<String>,
}

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The status of one container; `initializing` while init containers still run.
fn container_status(c: &Value, st: &ContainerState, uid: &str, initializing: bool) -> Value {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("main");
    let terminated = |(code, s, f): Exit| json!({"terminated": {"exitCode": code, "reason": if code == 0 { "Completed" } else { "Error" }, "startedAt": ts(s), "finishedAt": ts(f)}});
    let state = match (&st.running_since, &st.start_error, st.done, st.last_exit) {
        (Some(t), _, _, _) => json!({"running": {"startedAt": ts(*t)}}),
        (None, Some((reason, message)), _, _) => json!({"waiting": {"reason": reason, "message": message}}),
        (None, None, true, Some(x)) => terminated(x),
        (None, None, false, Some(_)) => json!({"waiting": {"reason": "CrashLoopBackOff"}}),
        _ if initializing => json!({"waiting": {"reason": "PodInitializing"}}),
        _ => json!({"waiting": {"reason": "ContainerCreating"}}),
    };
    let last = match (st.done, st.last_exit) {
        (false, Some(x)) => terminated(x),
        _ => json!({}),
    };
    let image = st.image.as_deref().map(Value::from).or_else(|| c.get("image").cloned());
    json!({"name": name, "image": image, "imageID": "", "containerID": format!("uc-process://{uid}/{name}/{}", st.restarts),
           "ready": st.ready, "started": st.running_since.is_some(), "restartCount": st.restarts,
           "state": state, "lastState": last})
}

/// The pod status its containers give.
pub fn pod_status(pod: &Value, states: &HashMap<String, ContainerState>, ip: &str) -> Value {
    let created = pod.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null);
    let uid = pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
    let list = |key: &str| pod.pointer(&format!("/spec/{key}")).and_then(Value::as_array).cloned().unwrap_or_default();
    let state_of =
        |c: &Value| states.get(c.get("name").and_then(Value::as_str).unwrap_or("main")).cloned().unwrap_or_default();
    let exit_of = |st: &ContainerState| st.last_exit.map(|(c, _, _)| c);
    // Init containers: each must have exited 0; one that failed for good fails the pod.
    let init = list("initContainers");
    let initialized = init.iter().all(|c| exit_of(&state_of(c)) == Some(0) && state_of(c).running_since.is_none());
    let init_failed = init.iter().any(|c| {
        let st = state_of(c);
        st.start_error.is_some() || (st.done && exit_of(&st).is_some_and(|code| code != 0))
    });
    let init_statuses: Vec<Value> = init.iter().map(|c| container_status(c, &state_of(c), uid, false)).collect();
    let mut all_ready = initialized;
    let mut all_done = true;
    let mut any_failed = false;
    let mut statuses = Vec::new();
    for c in list("containers") {
        let st = state_of(&c);
        all_ready &= st.ready;
        all_done &= st.done;
        any_failed |= st.done && exit_of(&st).is_some_and(|code| code != 0);
        statuses.push(container_status(&c, &st, uid, !initialized));
    }
    let phase = if init_failed {
        "Failed"
    } else if !initialized {
        "Pending"
    } else if all_done && !statuses.is_empty() {
        if any_failed { "Failed" } else { "Succeeded" }
    } else {
        "Running"
    };
    let cond = |t: &str, ok: bool| json!({"type": t, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": created});
    let mut status = json!({
        "phase": phase,
        "conditions": [cond("PodScheduled", true), cond("Initialized", initialized), cond("ContainersReady", all_ready), cond("Ready", all_ready)],
        "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}], "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": created, "qosClass": "BestEffort", "containerStatuses": statuses,
    });
    if !init_statuses.is_empty() {
        status["initContainerStatuses"] = json!(init_statuses);
    }
    status
}

/// The status of a pod whose containers cannot be created yet (a volume's or the environment's
/// source is missing), as the kubelet reports it.
pub fn waiting_status(pod: &Value, ip: &str, reason: &str, message: &str) -> Value {
    let states: HashMap<String, ContainerState> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .map(|n| {
            (n.to_string(), ContainerState { start_error: Some((reason.into(), message.into())), ..Default::default() })
        })
        .collect();
    let mut status = pod_status(pod, &states, ip);
    status["phase"] = json!("Pending");
    status
}

/// Which containers the pod's current status shows Ready (kept across a restart of the node until
/// their probes say otherwise, so a node restart does not make running pods flap).
pub fn ready_containers(pod: &Value) -> Vec<String> {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true))
        .filter_map(|s| s.get("name").and_then(Value::as_str).map(String::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_containers_gate_the_pod() {
        let pod = json!({"metadata": {"uid": "u"}, "spec": {
            "initContainers": [{"name": "restore", "image": "etcd"}], "containers": [{"name": "etcd", "image": "etcd"}]}});
        let phase = |states: &HashMap<String, ContainerState>| {
            let st = pod_status(&pod, states, "127.1.0.1");
            let initialized = st["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Initialized").unwrap()
                ["status"]
                .clone();
            (st["phase"].as_str().unwrap().to_string(), initialized, st["containerStatuses"][0]["state"].clone())
        };
        let mut states = HashMap::new();
        let (ph, init, state) = phase(&states);
        assert_eq!((ph.as_str(), init), ("Pending", json!("False")));
        assert_eq!(state, json!({"waiting": {"reason": "PodInitializing"}}));
        let t = Utc::now();
        states
            .insert("restore".into(), ContainerState { last_exit: Some((0, t, t)), done: true, ..Default::default() });
        states.insert("etcd".into(), ContainerState { running_since: Some(t), ready: true, ..Default::default() });
        assert_eq!(phase(&states).0, "Running");
        assert_eq!(phase(&states).1, json!("True"));
        states
            .insert("restore".into(), ContainerState { last_exit: Some((1, t, t)), done: true, ..Default::default() });
        states.remove("etcd");
        assert_eq!(phase(&states).0, "Failed", "an init container that failed for good fails the pod");
        states
            .insert("restore".into(), ContainerState { last_exit: Some((1, t, t)), done: false, ..Default::default() });
        assert_eq!(phase(&states).0, "Pending", "one that is retried keeps it pending");
    }

    #[test]
    fn a_missing_source_keeps_the_pod_creating() {
        let pod = json!({"metadata": {"uid": "u"}, "spec": {"containers": [{"name": "c", "image": "python:3.11"}]},
                         "status": {"containerStatuses": [{"name": "c", "ready": true}]}});
        let st = waiting_status(&pod, "127.1.0.2", "CreateContainerConfigError", "configmap \"x\" not found");
        assert_eq!(st["phase"], json!("Pending"));
        assert_eq!(
            st["containerStatuses"][0]["state"],
            json!({"waiting": {"reason": "CreateContainerConfigError", "message": "configmap \"x\" not found"}})
        );
        assert_eq!(ready_containers(&pod), vec!["c".to_string()]);
    }
}
