//! Job: runs pods until `completions` succeed, at most `parallelism` at a time, and fails once more than
//! `backoffLimit` pods failed (`BackoffLimitExceeded`) or it ran longer than `activeDeadlineSeconds`
//! (`DeadlineExceeded`, its running pods stopped); status counts and the Complete / Failed conditions.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;
use uc_api::hook::{ObjectMap, SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use super::replicaset::pod_name;
use crate::objects::{decode, kept_pod, pod_from_template, pod_views, set_label, take_children, to_value};

/// The job's condition of `type_`, if it holds.
fn condition(job: &Job, type_: &str) -> Option<JobCondition> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().find(|c| c.type_ == type_ && c.status == "True").cloned()
}

fn new_condition(type_: &str, reason: &str, message: &str, at: Option<Time>) -> JobCondition {
    JobCondition {
        type_: type_.into(),
        status: "True".into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_transition_time: at,
        ..Default::default()
    }
}

/// A Job's pods counted: the keys of the succeeded and failed ones, the active ones (key, name), how
/// many of those are Ready, and when the last one finished.
struct Tally {
    succeeded: Vec<String>,
    failed: Vec<String>,
    running: Vec<(String, String)>,
    ready: usize,
    last_finish: Option<Time>,
}

fn tally(pods: &ObjectMap) -> Result<Tally, HookError> {
    let views = pod_views(pods)?;
    let names = |f: &dyn Fn(&crate::objects::PodView<'_>) -> bool| -> Vec<String> {
        views.iter().filter(|(_, p)| f(p)).map(|(k, _)| k.to_string()).collect()
    };
    let finished = views.iter().filter(|(_, p)| matches!(p.phase(), "Succeeded" | "Failed"));
    let last_finish = match finished.filter_map(|(_, p)| p.finished_at()).max() {
        Some(t) => Some(decode("finishedAt", &Value::String(t.to_string()))?),
        None => None,
    };
    Ok(Tally {
        succeeded: names(&|p| p.phase() == "Succeeded"),
        failed: names(&|p| p.phase() == "Failed"),
        running: views.iter().filter(|(_, p)| p.active()).map(|(k, p)| (k.to_string(), p.name().to_string())).collect(),
        ready: views.iter().filter(|(_, p)| p.active() && p.ready()).count(),
        last_finish,
    })
}

/// The sync hook: desired pods and status of one Job.
pub fn sync(mut request: SyncRequest) -> Result<SyncResponse, HookError> {
    let pods = take_children(&mut request, "Pod.v1");
    let job: Job = decode("parent", &request.parent)?;
    let spec = job.spec.clone().unwrap_or_default();
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    let count = |n: Option<i32>, default: i32| n.unwrap_or(default).max(0) as usize;
    let completions = count(spec.completions, 1);
    let parallelism = count(spec.parallelism, 1);
    let backoff_limit = count(spec.backoff_limit, 6);
    let suspended = spec.suspend.unwrap_or(false);

    let Tally { succeeded, failed, mut running, ready, last_finish } = tally(&pods)?;
    let start =
        job.status.as_ref().and_then(|s| s.start_time.clone()).or_else(|| job.metadata.creation_timestamp.clone());

    let done = condition(&job, "Complete").is_some() || succeeded.len() >= completions;
    let now = Timestamp::now();
    // What is left of `activeDeadlineSeconds` (counted from the start; not while suspended).
    let deadline_left = match (spec.active_deadline_seconds, &start) {
        (Some(d), Some(Time(start))) if !suspended => Some((*start + SignedDuration::from_secs(d)).duration_since(now)),
        _ => None,
    };
    let past_deadline = !done && deadline_left.is_some_and(|left| !left.is_positive());
    let failed_now = condition(&job, "Failed").is_some() || failed.len() > backoff_limit || past_deadline;
    let running_count = running.len();
    // Every name in use, finished pods' too: a new pod never takes one.
    let taken: std::collections::BTreeSet<String> = pods.keys().cloned().collect();
    // Finished pods stay for inspection.
    let namespace = job.metadata.namespace.as_deref();
    let mut children: Vec<Value> = succeeded.iter().chain(&failed).map(|k| kept_pod(k, namespace)).collect();
    let finished = children.len();
    let mut conditions = Vec::new();
    if failed_now && !done {
        // Running pods stop.
        conditions.push(condition(&job, "Failed").unwrap_or_else(|| {
            if failed.len() > backoff_limit {
                let why = "Job has reached the specified backoff limit";
                new_condition("Failed", "BackoffLimitExceeded", why, last_finish.clone())
            } else {
                let why = "Job was active longer than specified deadline";
                new_condition("Failed", "DeadlineExceeded", why, Some(Time(now)))
            }
        }));
    } else if done {
        conditions.push(condition(&job, "Complete").unwrap_or_else(|| {
            new_condition(
                "Complete",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
                last_finish.clone(),
            )
        }));
    } else if !suspended {
        let want = parallelism.min(completions - succeeded.len());
        running.sort_by(|a, b| a.1.cmp(&b.1));
        running.truncate(want);
        children.extend(running.iter().map(|(k, _)| kept_pod(k, namespace)));
        let mut slot = 0;
        while children.len() < finished + want {
            let candidate = pod_name(name, uid, slot);
            slot += 1;
            if !taken.contains(&candidate) {
                let mut pod = pod_from_template(&request.parent["spec"]["template"], &candidate, namespace);
                set_label(&mut pod, "job-name", name)?;
                children.push(pod);
            }
        }
    }
    let status = JobStatus {
        active: Some(if done || failed_now { 0 } else { running_count.min(parallelism) as i32 }),
        succeeded: Some(succeeded.len() as i32),
        failed: Some(failed.len() as i32),
        ready: Some(ready as i32),
        start_time: start,
        completion_time: if done { last_finish } else { None },
        conditions: (!conditions.is_empty()).then_some(conditions),
        ..Default::default()
    };
    // Looked at again when the deadline comes, if nothing else brings it first.
    let again = deadline_left.filter(|_| !done && !failed_now).map(|left| left.as_secs_f64().max(0.0) + 0.1);
    Ok(SyncResponse {
        status: Some(to_value("status", &status)?),
        children,
        resync_after_seconds: again,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::objects::run_json;

    fn pod(name: &str, phase: &str) -> Value {
        json!({"metadata": {"name": name}, "status": {"phase": phase,
               "containerStatuses": [{"state": {"terminated": {"finishedAt": format!("2026-01-01T00:00:0{}Z", name.len() % 10)}}}]}})
    }

    fn request(completions: i64, parallelism: i64, backoff: i64, pods: &[Value]) -> Value {
        let map: serde_json::Map<String, Value> =
            pods.iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p.clone())).collect();
        json!({"parent": {"metadata": {"name": "j", "namespace": "ns", "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z"},
                          "spec": {"completions": completions, "parallelism": parallelism, "backoffLimit": backoff,
                                   "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}},
               "children": {"Pod.v1": map}})
    }

    #[test]
    fn runs_parallelism_pods_until_completions() {
        let out = run_json(sync, request(5, 2, 6, &[]));
        assert_eq!(out["children"].as_array().unwrap().len(), 2);
        assert_eq!(out["children"][0]["metadata"]["labels"]["job-name"], json!("j"));
        let done4 = [pod("a", "Succeeded"), pod("b", "Succeeded"), pod("c", "Succeeded"), pod("d", "Succeeded")];
        let out = run_json(sync, request(5, 2, 6, &done4));
        assert_eq!(out["children"].as_array().unwrap().len(), 5, "four kept, one new");
        let done5 = [
            pod("a", "Succeeded"),
            pod("b", "Succeeded"),
            pod("c", "Succeeded"),
            pod("d", "Succeeded"),
            pod("e", "Succeeded"),
        ];
        let out = run_json(sync, request(5, 2, 6, &done5));
        assert_eq!(out["status"]["succeeded"], json!(5));
        assert_eq!(out["status"]["conditions"][0]["type"], json!("Complete"));
        assert!(out["status"]["completionTime"].is_string());
    }

    #[test]
    fn fails_past_its_active_deadline_and_stops_its_pods() {
        let mut old = request(3, 1, 6, &[pod("a", "Succeeded"), pod("bb", "Running")]);
        old["parent"]["spec"]["activeDeadlineSeconds"] = json!(60);
        let out = run_json(sync, old.clone());
        assert_eq!(out["status"]["conditions"][0]["reason"], json!("DeadlineExceeded"));
        assert_eq!(out["status"]["conditions"][0]["message"], json!("Job was active longer than specified deadline"));
        assert_eq!(out["children"].as_array().unwrap().len(), 1, "the finished pod kept, the running one stopped");
        assert!(out.get("resyncAfterSeconds").is_none());
        // A Job started now has its deadline ahead: it runs, and is looked at again then.
        let mut fresh = old;
        fresh["parent"]["metadata"]["creationTimestamp"] = json!(Timestamp::now().to_string());
        let out = run_json(sync, fresh.clone());
        assert!(out["status"].get("conditions").is_none());
        let again = out["resyncAfterSeconds"].as_f64().unwrap();
        assert!(again > 50.0 && again <= 60.1, "{again}");
        // Suspended, the deadline does not run.
        fresh["parent"]["spec"]["suspend"] = json!(true);
        fresh["parent"]["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(run_json(sync, fresh)["status"].get("conditions").is_none());
    }

    #[test]
    fn stops_at_the_backoff_limit() {
        let out = run_json(sync, request(1, 1, 2, &[pod("a", "Failed"), pod("b", "Failed")]));
        assert_eq!(out["children"].as_array().unwrap().len(), 3, "a retry");
        let out = run_json(sync, request(1, 1, 2, &[pod("a", "Failed"), pod("bb", "Failed"), pod("ccc", "Failed")]));
        assert_eq!(out["status"]["conditions"][0]["reason"], json!("BackoffLimitExceeded"));
        assert_eq!(out["status"]["failed"], json!(3));
        assert_eq!(out["children"].as_array().unwrap().len(), 3, "no new pod");
    }
}
