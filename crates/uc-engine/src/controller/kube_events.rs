//! The Events kube-controller-manager's workload controllers record about their parents, recorded for
//! uc's built-in controllers (those labelled `uc.njuics.cn/builtin: "true"`) with the same reasons and
//! words, so `kubectl describe deployment` reads as on a kubeadm cluster: `ScalingReplicaSet` for a
//! Deployment, `SuccessfulCreate` / `SuccessfulDelete` for the pods of a ReplicaSet, a
//! ReplicationController, a Job, a DaemonSet and (in its own words) a StatefulSet. Other controllers'
//! parents get no such Events, as under Metacontroller: a write per child would be a write too many.

use serde_json::{Value, json};
use uc_api::Pointer;
use uc_api::meta::meta_str;

use crate::plan::Action;

/// The label of uc's built-in controllers.
const BUILTIN_LABEL: &str = "/metadata/labels/uc.njuics.cn~1builtin";

/// Whether a controller object records kube's Events.
pub(super) fn records_kube_events(controller: &Value) -> bool {
    controller.at(BUILTIN_LABEL).and_then(Value::as_str) == Some("true")
}

/// The component a built-in controller's Events come from, as kube-controller-manager names them
/// (`builtin-deployment` → `deployment-controller`).
pub(super) fn component(controller_name: &str) -> String {
    format!("{}-controller", controller_name.trim_start_matches("builtin-"))
}

/// The Event (reason, message) a done action makes about `parent`; `before` is the child as it was
/// (for an update). None for what kube records nothing about.
pub(super) fn about(parent: &Value, action: &Action, before: Option<&Value>) -> Option<(&'static str, String)> {
    let parent_kind = parent.get("kind").and_then(Value::as_str).unwrap_or_default();
    let replicas = |o: &Value| o.at("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    match action {
        Action::Create(child) => {
            let (kind, name) = (child.get("kind").and_then(Value::as_str).unwrap_or_default(), meta_str(child, "name"));
            Some(match parent_kind {
                "Deployment" => {
                    ("ScalingReplicaSet", format!("Scaled up replica set {name} from 0 to {}", replicas(child)))
                }
                "StatefulSet" => (
                    "SuccessfulCreate",
                    format!("create {kind} {name} in StatefulSet {} successful", meta_str(parent, "name")),
                ),
                "CronJob" => ("SuccessfulCreate", format!("Created job {name}")),
                _ => ("SuccessfulCreate", format!("Created {}: {name}", kind.to_lowercase())),
            })
        }
        Action::Update(child) if parent_kind == "Deployment" => {
            let (from, to) = (replicas(before?), replicas(child));
            let way = match to.cmp(&from) {
                std::cmp::Ordering::Greater => "up",
                std::cmp::Ordering::Less => "down",
                std::cmp::Ordering::Equal => return None,
            };
            Some((
                "ScalingReplicaSet",
                format!("Scaled {way} replica set {} from {from} to {to}", meta_str(child, "name")),
            ))
        }
        Action::Delete { name, .. } => match parent_kind {
            "Deployment" => None,
            "StatefulSet" => Some((
                "SuccessfulDelete",
                format!("delete Pod {name} in StatefulSet {} successful", meta_str(parent, "name")),
            )),
            "CronJob" => Some(("SuccessfulDelete", format!("Deleted job {name}"))),
            _ => Some(("SuccessfulDelete", format!("Deleted pod: {name}"))),
        },
        _ => None,
    }
}

/// The Warning Event (reason, message) kube-controller-manager records about `parent` when the API
/// server refuses to create its child `kind`/`name` (`refusal`: the server's words, as Go's
/// `err.Error()` prints a Status): `FailedCreate` with `Error creating: …` from the controllers that
/// create pods through kube's `PodControl` (ReplicaSet, ReplicationController, Job, DaemonSet), the
/// StatefulSet's and the CronJob's own words, a Deployment's `ReplicaSetCreateError`. None for other
/// parents (the engine's own Event reports the failure).
pub(super) fn failed_create(parent: &Value, name: &str, refusal: &str) -> Option<(&'static str, String)> {
    let parent_kind = parent.get("kind").and_then(Value::as_str).unwrap_or_default();
    Some(match parent_kind {
        "ReplicaSet" | "ReplicationController" | "Job" | "DaemonSet" => {
            ("FailedCreate", format!("Error creating: {refusal}"))
        }
        "StatefulSet" => (
            "FailedCreate",
            format!("create Pod {name} in StatefulSet {} failed error: {refusal}", meta_str(parent, "name")),
        ),
        "CronJob" => ("FailedCreate", format!("Error creating job: {refusal}")),
        "Deployment" => ("ReplicaSetCreateError", format!("Failed to create new replica set {name:?}: {refusal}")),
        _ => return None,
    })
}

/// The status kube's ReplicaSet (or ReplicationController) controller writes when the API server
/// refused a pod: `status` (what the hook computed, else the parent's) with a `ReplicaFailure`
/// condition, `FailedCreate` in the server's words. The parent's own is kept while it has one (kube
/// sets it once); the hook's next status, computed after pods are made again, has none, which clears
/// it, as kube does. None for other parents.
pub(super) fn replica_failure(parent: &Value, status: Option<&Value>, refusal: &str, now: &str) -> Option<Value> {
    let kind = parent.get("kind").and_then(Value::as_str)?;
    if !matches!(kind, "ReplicaSet" | "ReplicationController") {
        return None;
    }
    let is_failure = |c: &&Value| c.get("type").and_then(Value::as_str) == Some("ReplicaFailure");
    let conditions_of = |s: Option<&Value>| s?.get("conditions")?.as_array().cloned();
    let kept = conditions_of(parent.get("status")).and_then(|cs| cs.iter().find(is_failure).cloned());
    let condition = kept.unwrap_or_else(|| {
        json!({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": refusal,
               "lastTransitionTime": now})
    });
    let mut status = status.or(parent.get("status")).filter(|s| s.is_object()).cloned().unwrap_or_else(|| json!({}));
    let mut conditions: Vec<Value> =
        conditions_of(Some(&status)).unwrap_or_default().into_iter().filter(|c| !is_failure(&c)).collect();
    conditions.push(condition);
    status["conditions"] = Value::Array(conditions);
    Some(status)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn kube_controller_managers_reasons_and_words() {
        let deployment = json!({"kind": "Deployment", "metadata": {"name": "web"}});
        let rs = json!({"kind": "ReplicaSet", "metadata": {"name": "web-5d4f8b6f9c"}, "spec": {"replicas": 3}});
        assert_eq!(
            about(&deployment, &Action::Create(rs.clone()), None),
            Some(("ScalingReplicaSet", "Scaled up replica set web-5d4f8b6f9c from 0 to 3".into()))
        );
        let smaller = json!({"kind": "ReplicaSet", "metadata": {"name": "web-5d4f8b6f9c"}, "spec": {"replicas": 1}});
        assert_eq!(
            about(&deployment, &Action::Update(smaller), Some(&rs)),
            Some(("ScalingReplicaSet", "Scaled down replica set web-5d4f8b6f9c from 3 to 1".into()))
        );
        assert_eq!(about(&deployment, &Action::Update(rs.clone()), Some(&rs)), None, "no change in scale");
        let replicaset = json!({"kind": "ReplicaSet", "metadata": {"name": "web-5d4f8b6f9c"}});
        let pod = json!({"kind": "Pod", "metadata": {"name": "web-5d4f8b6f9c-x2x4k"}});
        assert_eq!(
            about(&replicaset, &Action::Create(pod.clone()), None),
            Some(("SuccessfulCreate", "Created pod: web-5d4f8b6f9c-x2x4k".into()))
        );
        let delete = Action::Delete { name: "web-0".into(), namespace: "default".into(), uid: "u".into() };
        let sts = json!({"kind": "StatefulSet", "metadata": {"name": "web"}});
        assert_eq!(
            about(&sts, &delete, None),
            Some(("SuccessfulDelete", "delete Pod web-0 in StatefulSet web successful".into()))
        );
        let web0 = json!({"kind": "Pod", "metadata": {"name": "web-0"}});
        assert_eq!(
            about(&sts, &Action::Create(web0), None).unwrap().1,
            "create Pod web-0 in StatefulSet web successful"
        );
        let cron_job = json!({"kind": "CronJob", "metadata": {"name": "hello"}});
        let job = json!({"kind": "Job", "metadata": {"name": "hello-29412345"}});
        assert_eq!(
            about(&cron_job, &Action::Create(job), None),
            Some(("SuccessfulCreate", "Created job hello-29412345".into()))
        );
        let gone = Action::Delete { name: "hello-29412340".into(), namespace: "default".into(), uid: "u".into() };
        assert_eq!(about(&cron_job, &gone, None), Some(("SuccessfulDelete", "Deleted job hello-29412340".into())));
        assert_eq!(component("builtin-replicaset"), "replicaset-controller");
        assert!(records_kube_events(&json!({"metadata": {"labels": {"uc.njuics.cn/builtin": "true"}}})));
        assert!(!records_kube_events(&json!({"metadata": {"name": "mine"}})));
    }

    #[test]
    fn a_refused_create_is_reported_in_kube_controller_managers_words() {
        let refusal = r#"pods "web-x2x4k" is forbidden: maximum cpu usage per Container is 800m, but limit is 2"#;
        let replicaset = json!({"kind": "ReplicaSet", "metadata": {"name": "web"}});
        assert_eq!(
            failed_create(&replicaset, "web-x2x4k", refusal),
            Some(("FailedCreate", format!("Error creating: {refusal}")))
        );
        let sts = json!({"kind": "StatefulSet", "metadata": {"name": "db"}});
        assert_eq!(failed_create(&sts, "db-0", "no").unwrap().1, "create Pod db-0 in StatefulSet db failed error: no");
        let cron_job = json!({"kind": "CronJob", "metadata": {"name": "hello"}});
        assert_eq!(failed_create(&cron_job, "hello-1", "no").unwrap().1, "Error creating job: no");
        let deployment = json!({"kind": "Deployment", "metadata": {"name": "web"}});
        assert_eq!(
            failed_create(&deployment, "web-5d4f8b6f9c", "no"),
            Some(("ReplicaSetCreateError", r#"Failed to create new replica set "web-5d4f8b6f9c": no"#.into()))
        );
        assert_eq!(failed_create(&json!({"kind": "Memcached"}), "m", "no"), None, "not one of kube's controllers");
    }

    #[test]
    fn a_replica_sets_refused_pod_is_a_replica_failure_condition_kept_until_pods_are_made() {
        let rs = json!({"kind": "ReplicaSet", "metadata": {"name": "web"}, "status": {"replicas": 0}});
        let computed = json!({"replicas": 0, "observedGeneration": 2});
        let failed = replica_failure(&rs, Some(&computed), "pods \"web-x\" is forbidden: no", "t1").unwrap();
        assert_eq!(
            failed,
            json!({"replicas": 0, "observedGeneration": 2, "conditions": [{"type": "ReplicaFailure", "status": "True",
                   "reason": "FailedCreate", "message": "pods \"web-x\" is forbidden: no", "lastTransitionTime": "t1"}]})
        );
        // Refused again later (in other words): the condition it has stays as it is.
        let failing = json!({"kind": "ReplicaSet", "metadata": {"name": "web"}, "status": failed});
        assert_eq!(replica_failure(&failing, Some(&computed), "other words", "t2").unwrap(), failed);
        // No status computed: the parent's, with the condition.
        assert_eq!(replica_failure(&failing, None, "x", "t3").unwrap(), failed);
        let rc = json!({"kind": "ReplicationController"});
        assert_eq!(replica_failure(&rc, None, "no", "t1").unwrap()["conditions"][0]["reason"], "FailedCreate");
        assert_eq!(
            replica_failure(&json!({"kind": "Job"}), None, "no", "t1"),
            None,
            "kube's Job has no such condition"
        );
    }
}
