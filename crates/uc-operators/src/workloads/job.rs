//! Job: runs pods until `completions` succeed, at most `parallelism` at a time, and fails once more than
//! `backoffLimit` pods failed (`BackoffLimitExceeded`) or it ran longer than `activeDeadlineSeconds`
//! (`DeadlineExceeded`, its running pods stopped); status counts and the Complete / Failed conditions.

use std::collections::BTreeSet;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;
use uc_api::hook::{ObjectMap, SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use super::job_indexed;
use super::replicaset::pod_name;
use crate::objects::{decode, kept_pod, pod_from_template, pod_views, set_label, take_children, to_value};

/// The job's condition of `type_`, if it holds (the one reader of a Job's conditions, for the CronJob
/// and TTL controllers too).
pub(crate) fn condition(job: &Job, type_: &str) -> Option<JobCondition> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().find(|c| c.type_ == type_ && c.status == "True").cloned()
}

/// The condition a finished Job holds: Complete or Failed.
pub(crate) fn finish(job: &Job) -> Option<JobCondition> {
    condition(job, "Complete").or_else(|| condition(job, "Failed"))
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
        Some(t) => Some(Time(t.parse().map_err(|e| HookError::InvalidRequest(format!("finishedAt {t:?}: {e}")))?)),
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

/// How a Job ended.
enum Ending {
    Complete,
    BackoffLimit,
    Deadline,
}

impl Ending {
    /// The condition the Job carries: the one it has, else a new one (finished when its last pod did,
    /// or now for a deadline).
    fn condition(&self, job: &Job, last_finish: Option<Time>, now: Timestamp) -> JobCondition {
        let (type_, reason, why, at) = match self {
            Ending::Complete => {
                ("Complete", "CompletionsReached", "Reached expected number of succeeded pods", last_finish)
            }
            Ending::BackoffLimit => {
                ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit", last_finish)
            }
            Ending::Deadline => {
                ("Failed", "DeadlineExceeded", "Job was active longer than specified deadline", Some(Time(now)))
            }
        };
        condition(job, type_).unwrap_or_else(|| new_condition(type_, reason, why, at))
    }
}

/// The pods a running Job keeps and starts: `want` at a time, names in `taken` never reused.
struct Runs<'a> {
    job: (&'a str, &'a str),
    namespace: Option<&'a str>,
    template: &'a Value,
    taken: &'a BTreeSet<String>,
    want: usize,
}

impl Runs<'_> {
    /// Running pods kept (the first by name), new ones named from the Job's uid and a slot.
    fn any(&self, running: &mut Vec<(String, String)>) -> Result<Vec<Value>, HookError> {
        running.sort_by(|a, b| a.1.cmp(&b.1));
        running.truncate(self.want);
        let mut pods: Vec<Value> = running.iter().map(|(k, _)| kept_pod(k, self.namespace)).collect();
        let mut slot = 0;
        while pods.len() < self.want {
            let candidate = pod_name(self.job.0, self.job.1, slot);
            slot += 1;
            if !self.taken.contains(&candidate) {
                let mut pod = pod_from_template(self.template, &candidate, self.namespace);
                set_label(&mut pod, "job-name", self.job.0)?;
                pods.push(pod);
            }
        }
        Ok(pods)
    }

    /// Running pods of indexes still to succeed kept (one per index, lowest first), then pods for the
    /// lowest free indexes.
    fn indexed<'k>(
        &self,
        running: impl Iterator<Item = (&'k str, usize)>,
        completed: &BTreeSet<usize>,
        completions: usize,
    ) -> Result<Vec<Value>, HookError> {
        let mut running: Vec<(usize, &str)> =
            running.filter(|(_, i)| !completed.contains(i)).map(|(k, i)| (i, k)).collect();
        running.sort();
        running.dedup_by_key(|(i, _)| *i);
        running.truncate(self.want);
        let mut pods: Vec<Value> = running.iter().map(|(_, k)| kept_pod(k, self.namespace)).collect();
        let busy: BTreeSet<usize> = running.iter().map(|(i, _)| *i).collect();
        for index in job_indexed::to_start(completions, self.want - pods.len(), completed, &busy) {
            let mut attempt = 0;
            let pod = loop {
                let pod = job_indexed::pod_for(self.template, self.job, index, attempt, self.namespace)?;
                if !pod["metadata"]["name"].as_str().is_some_and(|n| self.taken.contains(n)) {
                    break pod;
                }
                attempt += 1;
            };
            pods.push(pod);
        }
        Ok(pods)
    }
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

    // An Indexed Job counts indexes that succeeded, not pods.
    let indexed = spec.completion_mode.as_deref() == Some("Indexed");
    let views = pod_views(&pods)?;
    let completed = if indexed { job_indexed::succeeded(&views, completions) } else { BTreeSet::new() };
    let succeeded_count = if indexed { completed.len() } else { succeeded.len() };
    let done = condition(&job, "Complete").is_some() || succeeded_count >= completions;
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
    let taken: BTreeSet<String> = pods.keys().cloned().collect();
    // Finished pods stay for inspection.
    let namespace = job.metadata.namespace.as_deref();
    let mut children: Vec<Value> = succeeded.iter().chain(&failed).map(|k| kept_pod(k, namespace)).collect();
    // A Job that failed stops its running pods.
    let ending = match (done, failed_now) {
        (true, _) => Some(Ending::Complete),
        (false, true) if failed.len() > backoff_limit => Some(Ending::BackoffLimit),
        (false, true) => Some(Ending::Deadline),
        (false, false) => None,
    };
    let conditions: Vec<JobCondition> = ending.iter().map(|e| e.condition(&job, last_finish.clone(), now)).collect();
    if ending.is_none() && !suspended {
        let want = parallelism.min(completions - succeeded_count);
        let template = &request.parent["spec"]["template"];
        let runs = Runs { job: (name, uid), namespace, template, taken: &taken, want };
        children.extend(if indexed {
            let running = views.iter().filter(|(_, p)| p.active());
            runs.indexed(
                running.filter_map(|(k, p)| Some((k.as_str(), job_indexed::index_of(p, completions)?))),
                &completed,
                completions,
            )?
        } else {
            runs.any(&mut running)?
        });
    }
    let status = JobStatus {
        active: Some(if done || failed_now { 0 } else { running_count.min(parallelism) as i32 }),
        succeeded: Some(succeeded_count as i32),
        completed_indexes: Some(job_indexed::intervals(&completed)).filter(|_| indexed && !completed.is_empty()),
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
    fn an_indexed_job_runs_each_index_until_it_succeeds() {
        let indexed = |pods: &[Value]| {
            let mut r = request(3, 2, 6, pods);
            r["parent"]["spec"]["completionMode"] = json!("Indexed");
            run_json(sync, r)
        };
        let index_of = |p: &Value| p["metadata"]["labels"][job_indexed::INDEX].as_str().map(str::to_string);
        let out = indexed(&[]);
        let started: Vec<_> = out["children"].as_array().unwrap().iter().map(index_of).collect();
        assert_eq!(started, [Some("0".into()), Some("1".into())], "the lowest indexes, parallelism at a time");
        let at = |name: &str, index: &str, phase: &str| {
            let mut p = pod(name, phase);
            p["metadata"]["labels"] = json!({job_indexed::INDEX: index});
            p
        };
        let out = indexed(&[at("j-0-a", "0", "Succeeded"), at("j-1-a", "1", "Running"), at("j-1-b", "1", "Running")]);
        let names: Vec<_> = out["children"].as_array().unwrap().iter().map(|p| p["metadata"]["name"].clone()).collect();
        assert_eq!(names.len(), 3, "index 0 kept, one pod of index 1, index 2 started: {names:?}");
        assert_eq!(names[1], "j-1-a", "one pod per index");
        assert_eq!(index_of(&out["children"][2]), Some("2".into()));
        assert_eq!(
            (out["status"]["succeeded"].clone(), out["status"]["completedIndexes"].clone()),
            (json!(1), json!("0"))
        );
        // A failed index runs again under a new name.
        let out = indexed(&[at("j-0-a", "0", "Failed")]);
        let again = &out["children"][1];
        assert_eq!(index_of(again), Some("0".into()));
        assert_ne!(again["metadata"]["name"], "j-0-a");
        let all = [
            at("a", "0", "Succeeded"),
            at("b", "1", "Succeeded"),
            at("c", "2", "Succeeded"),
            at("d", "2", "Succeeded"),
        ];
        let out = indexed(&all);
        assert_eq!(out["status"]["conditions"][0]["type"], "Complete");
        assert_eq!(
            (out["status"]["succeeded"].clone(), out["status"]["completedIndexes"].clone()),
            (json!(3), json!("0-2"))
        );
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
