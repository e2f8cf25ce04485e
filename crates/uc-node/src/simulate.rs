//! Simulated pods, for images that are not on the allowlist: Pending → ContainerCreating → Running,
//! Ready after a delay, and, when asked by annotation, containers that exit with a chosen code after a
//! chosen run time, restarted according to the pod's restartPolicy. A pod's status is a pure function
//! of its spec, annotations, creation time and the current time ([`simulate`]), so restarting uc
//! recomputes the same status, and the agent writes only when it changes.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::context::SharedIps;
use crate::pod_api::{finish_deletion, same_status};

/// Annotation: seconds from creation until containers start (default 0.2).
pub const START_DELAY: &str = "uc.njuics.cn/start-delay-seconds";
/// Annotation: seconds from a container's start until it is Ready (default 0).
pub const READY_DELAY: &str = "uc.njuics.cn/ready-delay-seconds";
/// Annotation: seconds a container runs before it exits (default: forever).
pub const RUN_SECONDS: &str = "uc.njuics.cn/run-seconds";
/// Annotation: the exit code of a container that exits (default 0).
pub const EXIT_CODE: &str = "uc.njuics.cn/exit-code";

fn annotation_secs(pod: &Value, key: &str) -> Option<f64> {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|x| x.is_finite() && *x >= 0.0)
}

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
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

fn timeline(pod: &Value, created: DateTime<Utc>, now: DateTime<Utc>) -> (Phase, Option<DateTime<Utc>>) {
    let start_delay = annotation_secs(pod, START_DELAY).unwrap_or(0.2);
    let ready_delay = annotation_secs(pod, READY_DELAY).unwrap_or(0.0);
    let run = annotation_secs(pod, RUN_SECONDS);
    let code = pod
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(EXIT_CODE))
        .and_then(Value::as_str)
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or(0);
    let policy = pod.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("Always");
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

fn condition(type_: &str, ok: bool, since: DateTime<Utc>) -> Value {
    json!({"type": type_, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": ts(since)})
}

/// The status of a simulated pod at `now`, and when it next changes.
pub fn simulate(pod: &Value, pod_ip: &str, now: DateTime<Utc>) -> (Value, Option<DateTime<Utc>>) {
    let created = pod
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or(now);
    let (phase, next) = timeline(pod, created, now);
    let uid = pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
    let containers: Vec<Value> = pod.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default();
    let terminated = |code: i64, started: DateTime<Utc>, finished: DateTime<Utc>| {
        json!({"terminated": {"exitCode": code, "reason": if code == 0 { "Completed" } else { "Error" },
                              "startedAt": ts(started), "finishedAt": ts(finished), "containerID": format!("uc://{uid}")}})
    };
    let (pod_phase, ready, ready_since, state, last_state, restarts) = match &phase {
        Phase::Creating => {
            ("Pending", false, created, json!({"waiting": {"reason": "ContainerCreating"}}), json!({}), 0)
        }
        Phase::Running { since, ready_at, restarts, last_exit } => {
            let ready = now >= *ready_at;
            let last = last_exit.map(|(c, s, f)| terminated(c, s, f)).unwrap_or(json!({}));
            (
                "Running",
                ready,
                if ready { *ready_at } else { *since },
                json!({"running": {"startedAt": ts(*since)}}),
                last,
                *restarts,
            )
        }
        Phase::BackOff { restarts, last_exit: (c, s, f) } => (
            "Running",
            false,
            *f,
            json!({"waiting": {"reason": "CrashLoopBackOff", "message": format!("back-off restarting failed container (exit code {c})")}}),
            terminated(*c, *s, *f),
            *restarts,
        ),
        Phase::Done { code, started, finished, restarts } => (
            if *code == 0 { "Succeeded" } else { "Failed" },
            false,
            *finished,
            terminated(*code, *started, *finished),
            json!({}),
            *restarts,
        ),
    };
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            json!({"name": c.get("name"), "image": c.get("image"), "imageID": "", "containerID": format!("uc://{uid}"),
                   "ready": ready, "started": matches!(phase, Phase::Running { .. }), "restartCount": restarts,
                   "state": state, "lastState": last_state})
        })
        .collect();
    let status = json!({
        "phase": pod_phase,
        "conditions": [
            condition("PodReadyToStartContainers", true, created),
            condition("Initialized", true, created),
            condition("Ready", ready, ready_since),
            condition("ContainersReady", ready, ready_since),
            condition("PodScheduled", true, created),
        ],
        "hostIP": "127.0.0.1",
        "hostIPs": [{"ip": "127.0.0.1"}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": ts(created),
        "qosClass": "BestEffort",
        "containerStatuses": statuses,
    });
    (status, next)
}

pub(crate) async fn run_pod(client: kube::Client, mut rx: watch::Receiver<Arc<Value>>, ips: Arc<SharedIps>) {
    loop {
        let pod = rx.borrow_and_update().clone();
        let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_string();
        let name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
        let uid = pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
        if uc_api::meta::is_deleting(&pod) {
            // Graceful deletion: the containers are simulated, so they stop at once.
            finish_deletion(&client, &pod).await;
            return;
        }
        let ip = ips.get(&uid, pod.pointer("/status/podIP").and_then(Value::as_str));
        let (mut status, next) = simulate(&pod, &ip, Utc::now());
        status["reason"] = json!("Simulated");
        status["message"] =
            json!("simulated by uc-node: the pod's images are not all on the node's allowlist, so nothing executes");
        if !same_status(&pod, &status) {
            let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
            if let Err(e) =
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&json!({"status": status}))).await
            {
                if matches!(&e, kube::Error::Api(s) if s.code == 404) {
                    return;
                }
                tracing::debug!(pod = %name, error = %crate::pod_api::said(&e), "status update failed; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        }
        let wait = next.map(|t| (t - Utc::now()).to_std().unwrap_or(Duration::from_millis(10)));
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(wait.unwrap_or(Duration::from_secs(3600))) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(annotations: Value, policy: &str) -> Value {
        json!({"metadata": {"uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z", "annotations": annotations},
               "spec": {"restartPolicy": policy, "containers": [{"name": "c", "image": "i"}]}})
    }

    fn at(secs: f64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().with_timezone(&Utc) + super::secs(secs)
    }

    fn phase_ready_restarts(p: &Value, t: f64) -> (String, bool, i64) {
        let (s, _) = simulate(p, "127.1.0.2", at(t));
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
        assert_eq!(s["podIP"], json!("127.1.0.2"));
        assert_eq!(simulate(&p, "127.1.0.2", at(5.0)).1, None, "nothing changes any more");
        assert_eq!(
            simulate(&p, "127.1.0.2", at(5.0)).0,
            simulate(&p, "127.1.0.2", at(50.0)).0,
            "a pure function of time"
        );
    }

    #[test]
    fn exits_follow_the_restart_policy() {
        let ok = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "0"}), "Never");
        assert_eq!(phase_ready_restarts(&ok, 2.0).0, "Succeeded");
        let bad = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "3"}), "Never");
        let (s, _) = simulate(&bad, "ip", at(2.0));
        assert_eq!(s["phase"], json!("Failed"));
        assert_eq!(s["containerStatuses"][0]["state"]["terminated"]["exitCode"], json!(3));
        let retry = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "3"}), "OnFailure");
        assert_eq!(phase_ready_restarts(&retry, 1.5), ("Running".into(), false, 1), "backing off");
        assert_eq!(phase_ready_restarts(&retry, 2.3).2, 1, "running again after 1 s");
        let (s, _) = simulate(&retry, "ip", at(2.3));
        assert_eq!(s["containerStatuses"][0]["lastState"]["terminated"]["exitCode"], json!(3));
        let done = pod(json!({RUN_SECONDS: "1", EXIT_CODE: "0"}), "OnFailure");
        assert_eq!(phase_ready_restarts(&done, 3.0).0, "Succeeded");
        let always = pod(json!({RUN_SECONDS: "1"}), "Always");
        assert_eq!(phase_ready_restarts(&always, 10.0).2, 3, "1 s runs with 1, 2, 4 s back-offs");
    }

    #[test]
    fn a_status_written_once_matches_what_the_typed_watch_brings_back() {
        let mut p = pod(json!({}), "Always");
        let (status, _) = simulate(&p, "127.1.0.2", at(5.0));
        assert!(!same_status(&p, &status));
        // What the node's watch delivers: the pod after a trip through the typed Pod.
        p["status"] = status.clone();
        let typed: Pod = serde_json::from_value(p).unwrap();
        let seen = serde_json::to_value(typed).unwrap();
        assert_ne!(seen.get("status"), Some(&status), "the typed pod drops lastProbeTime: null");
        assert!(same_status(&seen, &status), "so the comparison must go through the typed status too");
    }
}
