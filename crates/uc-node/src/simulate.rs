//! Simulated pods, for images that are not on the allowlist: Pending → ContainerCreating → Running,
//! Ready after a delay, and, when asked by annotation, containers that exit with a chosen code after a
//! chosen run time, restarted according to the pod's restartPolicy. A pod's status is a pure function
//! of its spec, annotations, creation time and the current time ([`simulate`]), so restarting uc
//! recomputes the same status, and the agent writes only when it changes.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus, HostIP,
    Pod, PodCondition, PodIP, PodStatus,
};
use tokio::sync::watch;

use crate::context::SharedIps;
use crate::held_pod::HeldPod;
use crate::pod_api::{finish_deletion, has_status, is_deleting, name, namespace, patch_status, pod_ip, spec, uid};
use crate::status::time;

/// Annotation: seconds from creation until containers start (default 0.2).
pub const START_DELAY: &str = "uc.njuics.cn/start-delay-seconds";
/// Annotation: seconds from a container's start until it is Ready (default 0).
pub const READY_DELAY: &str = "uc.njuics.cn/ready-delay-seconds";
/// Annotation: seconds a container runs before it exits (default: forever).
pub const RUN_SECONDS: &str = "uc.njuics.cn/run-seconds";
/// Annotation: the exit code of a container that exits (default 0).
pub const EXIT_CODE: &str = "uc.njuics.cn/exit-code";

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.annotations.as_ref().and_then(|a| a.get(key)).map(|s| s.trim())
}

fn annotation_secs(pod: &Pod, key: &str) -> Option<f64> {
    annotation(pod, key).and_then(|s| s.parse::<f64>().ok()).filter(|x| x.is_finite() && *x >= 0.0)
}

fn secs(x: f64) -> chrono::Duration {
    chrono::Duration::milliseconds((x * 1000.0) as i64)
}

/// The state of a simulated pod's containers at one moment.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Creating,
    Running {
        since: DateTime<Utc>,
        ready_at: DateTime<Utc>,
        restarts: u32,
        last_exit: Option<(i64, DateTime<Utc>, DateTime<Utc>)>,
    },
    BackOff {
        restarts: u32,
        last_exit: (i64, DateTime<Utc>, DateTime<Utc>),
    },
    Done {
        code: i64,
        started: DateTime<Utc>,
        finished: DateTime<Utc>,
        restarts: u32,
    },
}

/// Restart back-off of simulated containers: 1 s doubling to 10 s (kube's is 10 s to 5 min; tests
/// need it short).
fn backoff(restarts: u32) -> f64 {
    (1u64 << restarts.saturating_sub(1).min(4)) as f64
}

fn timeline(pod: &Pod, created: DateTime<Utc>, now: DateTime<Utc>) -> (Phase, Option<DateTime<Utc>>) {
    let start_delay = annotation_secs(pod, START_DELAY).unwrap_or(0.2);
    let ready_delay = annotation_secs(pod, READY_DELAY).unwrap_or(0.0);
    let run = annotation_secs(pod, RUN_SECONDS);
    let code = annotation(pod, EXIT_CODE).and_then(|s| s.parse::<i64>().ok()).unwrap_or(0);
    let policy = spec(pod).restart_policy.as_deref().unwrap_or("Always");
    let mut t = created + secs(start_delay);
    if now < t {
        return (Phase::Creating, Some(t));
    }
    let mut restarts = 0u32;
    let mut last_exit = None;
    for _ in 0..100_000 {
        let ready_at = t + secs(ready_delay);
        let Some(run) = run else {
            let next = (now < ready_at).then_some(ready_at);
            return (Phase::Running { since: t, ready_at, restarts, last_exit }, next);
        };
        let end = t + secs(run);
        if now < end {
            let next = if now < ready_at && ready_at < end { ready_at } else { end };
            return (Phase::Running { since: t, ready_at, restarts, last_exit }, Some(next));
        }
        let restart = policy == "Always" || (policy == "OnFailure" && code != 0);
        if !restart {
            return (Phase::Done { code, started: t, finished: end, restarts }, None);
        }
        restarts += 1;
        let exit = (code, t, end);
        let resume = end + secs(backoff(restarts));
        if now < resume {
            return (Phase::BackOff { restarts, last_exit: exit }, Some(resume));
        }
        last_exit = Some(exit);
        t = resume;
    }
    (Phase::BackOff { restarts, last_exit: (code, t, t) }, None)
}

fn condition(type_: &str, ok: bool, since: DateTime<Utc>) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        last_transition_time: Some(time(since)),
        ..Default::default()
    }
}

fn terminated(code: i64, started: DateTime<Utc>, finished: DateTime<Utc>, uid: &str) -> ContainerState {
    ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: code as i32,
            reason: Some(if code == 0 { "Completed" } else { "Error" }.into()),
            started_at: Some(time(started)),
            finished_at: Some(time(finished)),
            container_id: Some(format!("uc://{uid}")),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn waiting(reason: &str, message: Option<String>) -> ContainerState {
    ContainerState {
        waiting: Some(ContainerStateWaiting { reason: Some(reason.into()), message }),
        ..Default::default()
    }
}

/// What the containers of a simulated pod show in one phase.
struct Shown {
    phase: &'static str,
    ready: bool,
    ready_since: DateTime<Utc>,
    state: ContainerState,
    last_state: Option<ContainerState>,
    restarts: u32,
}

fn shown(phase: &Phase, created: DateTime<Utc>, now: DateTime<Utc>, uid: &str) -> Shown {
    let (ready, ready_since) = (false, created);
    let plain = |phase, state, restarts| Shown { phase, ready, ready_since, state, last_state: None, restarts };
    match phase {
        Phase::Creating => plain("Pending", waiting("ContainerCreating", None), 0),
        Phase::Running { since, ready_at, restarts, last_exit } => {
            let ready = now >= *ready_at;
            let running = ContainerStateRunning { started_at: Some(time(*since)) };
            Shown {
                phase: "Running",
                ready,
                ready_since: if ready { *ready_at } else { *since },
                state: ContainerState { running: Some(running), ..Default::default() },
                last_state: last_exit.map(|(c, s, f)| terminated(c, s, f, uid)),
                restarts: *restarts,
            }
        }
        Phase::BackOff { restarts, last_exit: (c, s, f) } => Shown {
            phase: "Running",
            ready,
            ready_since: *f,
            state: waiting("CrashLoopBackOff", Some(format!("back-off restarting failed container (exit code {c})"))),
            last_state: Some(terminated(*c, *s, *f, uid)),
            restarts: *restarts,
        },
        Phase::Done { code, started, finished, restarts } => Shown {
            phase: if *code == 0 { "Succeeded" } else { "Failed" },
            ready,
            ready_since: *finished,
            state: terminated(*code, *started, *finished, uid),
            last_state: None,
            restarts: *restarts,
        },
    }
}

/// The status of a simulated pod at `now`, and when it next changes.
pub fn simulate(pod: &Pod, pod_ip: &str, now: DateTime<Utc>) -> (PodStatus, Option<DateTime<Utc>>) {
    let created = pod.metadata.creation_timestamp.as_ref().and_then(|t| DateTime::from_timestamp(t.0.as_second(), 0));
    let created = created.unwrap_or(now);
    let (phase, next) = timeline(pod, created, now);
    let uid = uid(pod);
    let shown = shown(&phase, created, now, uid);
    let statuses = spec(pod).containers.iter().map(|c| ContainerStatus {
        name: c.name.clone(),
        image: c.image.clone().unwrap_or_default(),
        image_id: String::new(),
        container_id: Some(format!("uc://{uid}")),
        ready: shown.ready,
        started: Some(matches!(phase, Phase::Running { .. })),
        restart_count: shown.restarts as i32,
        state: Some(shown.state.clone()),
        last_state: Some(shown.last_state.clone().unwrap_or_default()),
        ..Default::default()
    });
    let status = PodStatus {
        phase: Some(shown.phase.into()),
        conditions: Some(vec![
            condition("PodReadyToStartContainers", true, created),
            condition("Initialized", true, created),
            condition("Ready", shown.ready, shown.ready_since),
            condition("ContainersReady", shown.ready, shown.ready_since),
            condition("PodScheduled", true, created),
        ]),
        host_ip: Some("127.0.0.1".into()),
        host_ips: Some(vec![HostIP { ip: "127.0.0.1".into() }]),
        pod_ip: Some(pod_ip.into()),
        pod_ips: Some(vec![PodIP { ip: pod_ip.into() }]),
        start_time: Some(time(created)),
        qos_class: crate::status::qos_class(pod),
        container_statuses: Some(statuses.collect()),
        reason: Some("Simulated".into()),
        message: Some(
            "simulated by uc-node: the pod's images are not all on the node's allowlist, so nothing executes".into(),
        ),
        ..Default::default()
    };
    (status, next)
}

pub(crate) async fn run_pod(client: kube::Client, mut rx: watch::Receiver<Arc<HeldPod>>, ips: Arc<SharedIps>) {
    loop {
        // A pass runs boxed: what it holds (the pod, its status, the write under way) is allocated while it
        // runs, not kept in every idle pod's task (1,000 pods held 1.8 MB of statuses that way; issue 58).
        // A pass that panics is one that failed: the pod's worker goes on (see `worker.rs`).
        let passed = uc_api::panics::unwound(Box::pin(pass(&client, &mut rx, &ips))).await;
        let next = match passed.unwrap_or_else(|panicked| {
            tracing::error!("a simulated pod's pass panicked: {panicked}; it runs again");
            Pass::Retry
        }) {
            Pass::Gone => return,
            Pass::Retry => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Pass::Done(next) => next,
        };
        let wait = next.map(|t| (t - Utc::now()).to_std().unwrap_or(Duration::from_millis(10)));
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(wait.unwrap_or(Duration::from_secs(3600))) => {}
        }
    }
}

/// How a simulated pod's pass ended.
enum Pass {
    /// The pod is gone (deleted, or its status write found it gone): its worker ends.
    Gone,
    /// Writing its status failed: the pass runs again shortly.
    Retry,
    /// Its status is written; the next pass is due when the pod changes or at this time.
    Done(Option<DateTime<Utc>>),
}

/// Works out the pod's status as of now and writes it if it changed.
async fn pass(client: &kube::Client, rx: &mut watch::Receiver<Arc<HeldPod>>, ips: &SharedIps) -> Pass {
    let pod = rx.borrow_and_update().pod();
    if is_deleting(&pod) {
        // Graceful deletion: the containers are simulated, so they stop at once.
        finish_deletion(client, &pod).await;
        return Pass::Gone;
    }
    let ip = ips.get(uid(&pod), pod_ip(&pod));
    let (status, next) = simulate(&pod, &ip, Utc::now());
    let write = (!has_status(&pod, &status)).then(|| (namespace(&pod).to_string(), name(&pod).to_string()));
    // Let go of the pod before writing: the version the write brings arrives meanwhile, and the node
    // keeps one version of each pod, not two.
    drop(pod);
    if let Some((namespace, name)) = &write
        && let Err(e) = patch_status(client, (namespace, name), &status).await
    {
        if matches!(&e, kube::Error::Api(s) if s.code == 404) {
            return Pass::Gone;
        }
        tracing::debug!(pod = %name, error = %crate::pod_api::said(&e), "status update failed; retrying");
        return Pass::Retry;
    }
    Pass::Done(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(annotations: Value, policy: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z", "annotations": annotations},
            "spec": {"restartPolicy": policy, "containers": [{"name": "c", "image": "i"}]}}))
        .unwrap()
    }

    fn at(secs: f64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().with_timezone(&Utc) + super::secs(secs)
    }

    fn simulated(p: &Pod, t: f64) -> Value {
        serde_json::to_value(simulate(p, "127.1.0.2", at(t)).0).unwrap()
    }

    fn phase_ready_restarts(p: &Pod, t: f64) -> (String, bool, i64) {
        let s = simulated(p, t);
        (
            s["phase"].as_str().unwrap().to_string(),
            s["containerStatuses"][0]["ready"].as_bool().unwrap(),
            s["containerStatuses"][0]["restartCount"].as_i64().unwrap(),
        )
    }

    #[test]
    fn long_running_pods_start_then_become_ready() {
        let p = pod(json!({READY_DELAY: "1"}), "Always");
        assert_eq!(phase_ready_restarts(&p, 0.1), ("Pending".into(), false, 0));
        assert_eq!(phase_ready_restarts(&p, 0.5), ("Running".into(), false, 0));
        assert_eq!(phase_ready_restarts(&p, 1.3), ("Running".into(), true, 0));
        let (s, next) = simulate(&p, "127.1.0.2", at(0.5));
        assert_eq!(next, Some(at(1.2)));
        assert_eq!(s.pod_ip.as_deref(), Some("127.1.0.2"));
        assert_eq!(simulate(&p, "127.1.0.2", at(5.0)).1, None, "nothing changes any more");
        assert_eq!(simulated(&p, 5.0), simulated(&p, 50.0), "a pure function of time");
        assert_eq!(simulated(&p, 5.0)["reason"], json!("Simulated"));
    }

    #[test]
    fn exits_follow_the_restart_policy() {
        let ok = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "0"}), "Never");
        assert_eq!(phase_ready_restarts(&ok, 2.0).0, "Succeeded");
        let bad = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "3"}), "Never");
        let s = simulated(&bad, 2.0);
        assert_eq!(s["phase"], json!("Failed"));
        assert_eq!(s["containerStatuses"][0]["state"]["terminated"]["exitCode"], json!(3));
        let retry = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "3"}), "OnFailure");
        assert_eq!(phase_ready_restarts(&retry, 1.5), ("Running".into(), false, 1), "backing off");
        assert_eq!(phase_ready_restarts(&retry, 2.3).2, 1, "running again after 1 s");
        let s = simulated(&retry, 2.3);
        assert_eq!(s["containerStatuses"][0]["lastState"]["terminated"]["exitCode"], json!(3));
        let done = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "0"}), "OnFailure");
        assert_eq!(phase_ready_restarts(&done, 3.0).0, "Succeeded");
        let always = pod(json!({RUN_SECONDS: "1"}), "Always");
        assert_eq!(phase_ready_restarts(&always, 10.0).2, 3, "1 s runs with 1, 2, 4 s back-offs");
    }

    #[test]
    fn a_status_written_once_is_the_status_the_watch_brings_back() {
        let mut p = pod(json!({}), "Always");
        let (status, _) = simulate(&p, "127.1.0.2", at(5.3));
        assert!(!has_status(&p, &status));
        // What the node's watch delivers: the status as the API server stored it (JSON, times to the second).
        let stored = serde_json::to_value(&status).unwrap();
        p.status = Some(serde_json::from_value(stored).unwrap());
        assert!(has_status(&p, &status), "the next pass writes nothing");
    }
}
