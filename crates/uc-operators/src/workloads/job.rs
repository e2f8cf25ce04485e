//! Job: runs pods until `completions` succeed, at most `parallelism` at a time, and fails once more than
//! `backoffLimit` pods failed; status counts and the Complete / Failed conditions.

use serde_json::{Value, json};

use super::replicaset::pod_name;
use crate::objects::{active, obj_map, set_label};

fn finished_at(pod: &Value) -> Option<String> {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter().filter_map(|c| c.pointer("/state/terminated/finishedAt").and_then(Value::as_str)).max()
        })
        .map(String::from)
}

fn condition(job: &Value, type_: &str) -> Option<Value> {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_ && c["status"] == "True").cloned())
}

fn new_pod(job: &Value, name: &str) -> Value {
    let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut meta = template.get("metadata").cloned().unwrap_or(json!({}));
    meta["name"] = json!(name);
    meta["namespace"] = job.pointer("/metadata/namespace").cloned().unwrap_or(json!("default"));
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template.get("spec").cloned().unwrap_or(json!({}))});
    set_label(&mut pod, "job-name", job.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default());
    pod
}

/// The sync hook: desired pods and status of one Job.
pub fn sync(request: &Value) -> Value {
    let job = &request["parent"];
    let name = job.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let uid = job.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
    let completions = job.pointer("/spec/completions").and_then(Value::as_i64).unwrap_or(1).max(0) as usize;
    let parallelism = job.pointer("/spec/parallelism").and_then(Value::as_i64).unwrap_or(1).max(0) as usize;
    let backoff_limit = job.pointer("/spec/backoffLimit").and_then(Value::as_i64).unwrap_or(6).max(0) as usize;
    let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool).unwrap_or(false);
    let pods = obj_map(request, "Pod.v1");
    let phase = |p: &Value| p.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending").to_string();
    let succeeded: Vec<&Value> = pods.values().filter(|p| phase(p) == "Succeeded").collect();
    let failed: Vec<&Value> = pods.values().filter(|p| phase(p) == "Failed").collect();
    let running: Vec<&Value> = pods.values().filter(|p| active(p)).collect();
    let finished: Vec<Value> = succeeded.iter().chain(failed.iter()).map(|p| (*p).clone()).collect();
    let last_finish = finished.iter().filter_map(finished_at).max();
    let start = job
        .pointer("/status/startTime")
        .or_else(|| job.pointer("/metadata/creationTimestamp"))
        .cloned()
        .unwrap_or(Value::Null);

    let done = condition(job, "Complete").is_some() || succeeded.len() >= completions;
    let failed_now = condition(job, "Failed").is_some() || failed.len() > backoff_limit;
    let mut children = finished.clone();
    let mut conditions = Vec::new();
    if failed_now && !done {
        // Finished pods stay for inspection; running ones stop.
        conditions.push(condition(job, "Failed").unwrap_or_else(|| {
            json!({"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                   "message": "Job has reached the specified backoff limit", "lastTransitionTime": last_finish})
        }));
    } else if done {
        conditions.push(condition(job, "Complete").unwrap_or_else(|| {
            json!({"type": "Complete", "status": "True", "reason": "CompletionsReached",
                   "message": "Reached expected number of succeeded pods", "lastTransitionTime": last_finish})
        }));
    } else if !suspended {
        let want = parallelism.min(completions - succeeded.len());
        let mut keep: Vec<&Value> = running.clone();
        keep.sort_by_key(|p| p.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string());
        keep.truncate(want);
        children.extend(keep.iter().map(|p| (*p).clone()));
        let mut slot = 0;
        while children.len() < finished.len() + want {
            let candidate = pod_name(name, uid, slot);
            slot += 1;
            if !pods.contains_key(&candidate) {
                children.push(new_pod(job, &candidate));
            }
        }
    }
    let mut status = json!({
        "active": if done || failed_now { 0 } else { running.len().min(parallelism) },
        "succeeded": succeeded.len(),
        "failed": failed.len(),
        "ready": running.iter().filter(|p| crate::objects::is_ready(p)).count(),
        "startTime": start,
    });
    if done && let Some(t) = &last_finish {
        status["completionTime"] = json!(t);
    }
    if !conditions.is_empty() {
        status["conditions"] = Value::Array(conditions);
    }
    json!({"status": status, "children": children})
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let out = sync(&request(5, 2, 6, &[]));
        assert_eq!(out["children"].as_array().unwrap().len(), 2);
        assert_eq!(out["children"][0]["metadata"]["labels"]["job-name"], json!("j"));
        let done4 = [pod("a", "Succeeded"), pod("b", "Succeeded"), pod("c", "Succeeded"), pod("d", "Succeeded")];
        let out = sync(&request(5, 2, 6, &done4));
        assert_eq!(out["children"].as_array().unwrap().len(), 5, "four kept, one new");
        let done5 = [
            pod("a", "Succeeded"),
            pod("b", "Succeeded"),
            pod("c", "Succeeded"),
            pod("d", "Succeeded"),
            pod("e", "Succeeded"),
        ];
        let out = sync(&request(5, 2, 6, &done5));
        assert_eq!(out["status"]["succeeded"], json!(5));
        assert_eq!(out["status"]["conditions"][0]["type"], json!("Complete"));
        assert!(out["status"]["completionTime"].is_string());
    }

    #[test]
    fn stops_at_the_backoff_limit() {
        let out = sync(&request(1, 1, 2, &[pod("a", "Failed"), pod("b", "Failed")]));
        assert_eq!(out["children"].as_array().unwrap().len(), 3, "a retry");
        let out = sync(&request(1, 1, 2, &[pod("a", "Failed"), pod("bb", "Failed"), pod("ccc", "Failed")]));
        assert_eq!(out["status"]["conditions"][0]["reason"], json!("BackoffLimitExceeded"));
        assert_eq!(out["status"]["failed"], json!(3));
        assert_eq!(out["children"].as_array().unwrap().len(), 3, "no new pod");
    }
}
