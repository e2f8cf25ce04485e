//! The status of a pod that runs real processes, from what its containers are doing: a pure function,
//! so the node writes only when it changes.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{
    Container, ContainerState as K8sState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, HostIP, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

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

pub(crate) fn time(t: DateTime<Utc>) -> Time {
    // Whole seconds, as the kubelet reports them.
    let secs = Timestamp::from_second(t.timestamp()).unwrap_or(Timestamp::UNIX_EPOCH);
    Time(secs)
}

/// The status of one container; `initializing` while init containers still run.
fn container_status(c: &Container, st: &ContainerState, uid: &str, initializing: bool) -> ContainerStatus {
    let name = c.name.as_str();
    let terminated = |(code, s, f): Exit| K8sState {
        terminated: Some(ContainerStateTerminated {
            exit_code: code as i32,
            reason: Some(if code == 0 { "Completed" } else { "Error" }.into()),
            started_at: Some(time(s)),
            finished_at: Some(time(f)),
            ..Default::default()
        }),
        ..Default::default()
    };
    let waiting = |reason: &str, message: Option<&str>| K8sState {
        waiting: Some(ContainerStateWaiting { reason: Some(reason.into()), message: message.map(String::from) }),
        ..Default::default()
    };
    let state = match (&st.running_since, &st.start_error, st.done, st.last_exit) {
        (Some(t), _, _, _) => {
            K8sState { running: Some(ContainerStateRunning { started_at: Some(time(*t)) }), ..Default::default() }
        }
        (None, Some((reason, message)), _, _) => waiting(reason, Some(message)),
        (None, None, true, Some(x)) => terminated(x),
        (None, None, false, Some(_)) => waiting("CrashLoopBackOff", None),
        _ if initializing => waiting("PodInitializing", None),
        _ => waiting("ContainerCreating", None),
    };
    let last = match (st.done, st.last_exit) {
        (false, Some(x)) => terminated(x),
        _ => K8sState::default(),
    };
    ContainerStatus {
        name: name.to_string(),
        image: st.image.clone().or_else(|| c.image.clone()).unwrap_or_default(),
        image_id: String::new(),
        container_id: Some(format!("uc-process://{uid}/{name}/{}", st.restarts)),
        ready: st.ready,
        started: Some(st.running_since.is_some()),
        restart_count: st.restarts as i32,
        state: Some(state),
        last_state: Some(last),
        ..Default::default()
    }
}

/// The QoS class the API server gave the pod when it was made (kube's is set once, from its resources).
pub(crate) fn qos_class(pod: &Pod) -> Option<String> {
    let given = pod.status.as_ref().and_then(|s| s.qos_class.clone());
    Some(given.unwrap_or_else(|| "BestEffort".into()))
}

/// The pod status its containers give.
pub fn pod_status(pod: &Pod, states: &HashMap<String, ContainerState>, ip: &str) -> PodStatus {
    let created = pod.metadata.creation_timestamp.clone();
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let spec = pod.spec.clone().unwrap_or_default();
    let state_of = |c: &Container| states.get(&c.name).cloned().unwrap_or_default();
    let exit_of = |st: &ContainerState| st.last_exit.map(|(c, _, _)| c);
    // Init containers: each must have exited 0; one that failed for good fails the pod.
    let init = spec.init_containers.clone().unwrap_or_default();
    let initialized = init.iter().all(|c| exit_of(&state_of(c)) == Some(0) && state_of(c).running_since.is_none());
    let init_failed = init.iter().any(|c| {
        let st = state_of(c);
        st.start_error.is_some() || (st.done && exit_of(&st).is_some_and(|code| code != 0))
    });
    let init_statuses: Vec<ContainerStatus> =
        init.iter().map(|c| container_status(c, &state_of(c), uid, false)).collect();
    let mut all_ready = initialized;
    let mut all_done = true;
    let mut any_failed = false;
    // As a kubelet counts them: a container waiting that has never run keeps the pod Pending.
    let mut any_never_started = false;
    let mut statuses = Vec::new();
    for c in &spec.containers {
        let st = state_of(c);
        all_ready &= st.ready;
        all_done &= st.done;
        any_never_started |= st.running_since.is_none() && st.last_exit.is_none();
        any_failed |= st.done && exit_of(&st).is_some_and(|code| code != 0);
        statuses.push(container_status(c, &st, uid, !initialized));
    }
    let phase = if init_failed {
        "Failed"
    } else if !initialized || any_never_started {
        "Pending"
    } else if all_done && !statuses.is_empty() {
        if any_failed { "Failed" } else { "Succeeded" }
    } else {
        "Running"
    };
    let cond = |t: &str, ok: bool| PodCondition {
        type_: t.into(),
        status: if ok { "True" } else { "False" }.into(),
        last_transition_time: created.clone(),
        ..Default::default()
    };
    let ips = |ip: &str| Some(vec![HostIP { ip: ip.into() }]);
    PodStatus {
        phase: Some(phase.into()),
        // In a kubelet's order; the sandbox is ready once the pod's processes may start.
        conditions: Some(vec![
            cond("PodReadyToStartContainers", true),
            cond("Initialized", initialized),
            cond("Ready", all_ready),
            cond("ContainersReady", all_ready),
            cond("PodScheduled", true),
        ]),
        host_ip: Some("127.0.0.1".into()),
        host_ips: ips("127.0.0.1"),
        pod_ip: Some(ip.into()),
        pod_ips: Some(vec![PodIP { ip: ip.into() }]),
        start_time: created,
        qos_class: qos_class(pod),
        container_statuses: Some(statuses),
        init_container_statuses: (!init_statuses.is_empty()).then_some(init_statuses),
        ephemeral_container_statuses: ephemeral_statuses(&spec, states, uid),
        ..Default::default()
    }
}

/// The ephemeral containers' statuses (`kubectl debug` waits for its container to run).
fn ephemeral_statuses(
    spec: &k8s_openapi::api::core::v1::PodSpec,
    states: &HashMap<String, ContainerState>,
    uid: &str,
) -> Option<Vec<ContainerStatus>> {
    let ephemeral = spec.ephemeral_containers.as_ref().filter(|e| !e.is_empty())?;
    Some(
        ephemeral
            .iter()
            .map(|e| {
                let c = Container { name: e.name.clone(), image: e.image.clone(), ..Default::default() };
                container_status(&c, &states.get(&e.name).cloned().unwrap_or_default(), uid, false)
            })
            .collect(),
    )
}

/// The status of a pod whose containers cannot be created yet (a volume's or the environment's
/// source is missing), as the kubelet reports it.
pub fn waiting_status(pod: &Pod, ip: &str, reason: &str, message: &str) -> PodStatus {
    let containers = pod.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or_default();
    let states: HashMap<String, ContainerState> = containers
        .iter()
        .map(|c| {
            let state = ContainerState { start_error: Some((reason.into(), message.into())), ..Default::default() };
            (c.name.clone(), state)
        })
        .collect();
    PodStatus { phase: Some("Pending".into()), ..pod_status(pod, &states, ip) }
}

/// Which containers the pod's current status shows Ready (kept across a restart of the node until
/// their probes say otherwise, so a node restart does not make running pods flap).
pub fn ready_containers(pod: &Pod) -> Vec<String> {
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_ref());
    statuses.into_iter().flatten().filter(|s| s.ready).map(|s| s.name.clone()).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn typed(pod: Value) -> Pod {
        serde_json::from_value(pod).unwrap()
    }

    #[test]
    fn init_containers_gate_the_pod() {
        let pod = typed(json!({"metadata": {"uid": "u"}, "spec": {
            "initContainers": [{"name": "restore", "image": "etcd"}], "containers": [{"name": "etcd", "image": "etcd"}]}}));
        let phase = |states: &HashMap<String, ContainerState>| {
            let st = serde_json::to_value(pod_status(&pod, states, "127.1.0.1")).unwrap();
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
    fn a_pod_runs_once_every_container_has_started_as_a_kubelet_says() {
        let pod = typed(json!({"metadata": {"uid": "u"}, "spec": {
            "containers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}]}}));
        let phase = |states: &HashMap<String, ContainerState>| {
            serde_json::to_value(pod_status(&pod, states, "127.1.0.1")).unwrap()["phase"].as_str().unwrap().to_string()
        };
        let t = Utc::now();
        let mut states = HashMap::new();
        states.insert("a".into(), ContainerState { running_since: Some(t), ..Default::default() });
        assert_eq!(phase(&states), "Pending", "b is still being created");
        states.insert("b".into(), ContainerState { running_since: Some(t), ..Default::default() });
        assert_eq!(phase(&states), "Running");
        states.insert("b".into(), ContainerState { last_exit: Some((2, t, t)), ..Default::default() });
        assert_eq!(phase(&states), "Running", "b restarting (it has run) keeps the pod running");
    }

    #[test]
    fn ephemeral_containers_report_their_own_statuses_and_leave_readiness_alone() {
        let pod = typed(json!({"metadata": {"uid": "u"}, "spec": {
            "containers": [{"name": "app", "image": "busybox"}],
            "ephemeralContainers": [{"name": "debugger", "image": "busybox", "targetContainerName": "app"}]}}));
        let t = Utc::now();
        let mut states = HashMap::new();
        states.insert("app".into(), ContainerState { running_since: Some(t), ready: true, ..Default::default() });
        states.insert("debugger".into(), ContainerState { running_since: Some(t), ..Default::default() });
        let st = serde_json::to_value(pod_status(&pod, &states, "127.1.0.1")).unwrap();
        assert_eq!(st["ephemeralContainerStatuses"][0]["name"], "debugger");
        assert!(st["ephemeralContainerStatuses"][0]["state"]["running"].is_object());
        assert_eq!(st["containerStatuses"].as_array().unwrap().len(), 1);
        let ready = st["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap();
        assert_eq!(ready["status"], "True", "a debugger does not make the pod unready");
        let plain =
            typed(json!({"metadata": {"uid": "u"}, "spec": {"containers": [{"name": "app", "image": "busybox"}]}}));
        assert!(
            serde_json::to_value(pod_status(&plain, &states, "127.1.0.1"))
                .unwrap()
                .get("ephemeralContainerStatuses")
                .is_none()
        );
    }

    #[test]
    fn a_missing_source_keeps_the_pod_creating() {
        let pod =
            typed(json!({"metadata": {"uid": "u"}, "spec": {"containers": [{"name": "c", "image": "python:3.11"}]},
                         "status": {"containerStatuses": [{"name": "c", "ready": true, "image": "python:3.11",
                                                           "imageID": "", "restartCount": 0}]}}));
        let st = serde_json::to_value(waiting_status(
            &pod,
            "127.1.0.2",
            "CreateContainerConfigError",
            "configmap \"x\" not found",
        ))
        .unwrap();
        assert_eq!(st["phase"], json!("Pending"));
        assert_eq!(
            st["containerStatuses"][0]["state"],
            json!({"waiting": {"reason": "CreateContainerConfigError", "message": "configmap \"x\" not found"}})
        );
        assert_eq!(ready_containers(&pod), vec!["c".to_string()]);
    }
}
