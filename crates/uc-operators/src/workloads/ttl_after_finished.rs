//! TTL after finished: a Job that finished (Complete or Failed) and sets `ttlSecondsAfterFinished` is
//! deleted that many seconds after it finished — the time of its finishing condition — its pods with it
//! (foreground deletion), as kube-controller-manager's `ttl-after-finished-controller` does. Not a
//! hook: what it deletes is the parent itself. Deadlines are kept in one queue, woken by the earliest;
//! a Job changed meanwhile (its TTL, a new finish) is read again from the watch, and the deletion names
//! the Job's uid, so a new Job of the same name is never taken for it.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use futures::StreamExt;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, Preconditions, PropagationPolicy};
use kube::runtime::{WatchStreamExt, watcher};

/// How long after a failed deletion it is tried again.
const RETRY: SignedDuration = SignedDuration::from_secs(5);

/// When a Job is to be deleted: its finish plus its TTL; None for a Job without a TTL, not finished, or
/// already being deleted.
pub fn expires_at(job: &Job) -> Option<Timestamp> {
    if job.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let ttl = job.spec.as_ref()?.ttl_seconds_after_finished?;
    let finished = super::job::finish(job)?.last_transition_time?;
    finished.0.checked_add(SignedDuration::from_secs(i64::from(ttl))).ok()
}

/// The Jobs waiting for their time: by deadline, and each Job's (uid → deadline, namespace, name).
#[derive(Debug, Default)]
pub struct Queue {
    by_time: BTreeSet<(Timestamp, String)>,
    jobs: HashMap<String, (Timestamp, String, String)>,
}

impl Queue {
    /// A Job as it is now: queued at its deadline, or let go.
    pub fn seen(&mut self, job: &Job) {
        let Some(uid) = job.metadata.uid.clone() else { return };
        self.forget(&uid);
        if let Some(at) = expires_at(job) {
            let (ns, name) = (job.metadata.namespace.clone(), job.metadata.name.clone());
            self.at(uid, at, ns.unwrap_or_default(), name.unwrap_or_default());
        }
    }

    /// A Job (uid, namespace, name) to delete at `at`.
    pub fn at(&mut self, uid: String, at: Timestamp, ns: String, name: String) {
        self.forget(&uid);
        self.by_time.insert((at, uid.clone()));
        self.jobs.insert(uid, (at, ns, name));
    }

    /// A Job no longer there.
    pub fn forget(&mut self, uid: &str) {
        if let Some((at, _, _)) = self.jobs.remove(uid) {
            self.by_time.remove(&(at, uid.to_string()));
        }
    }

    /// The earliest deadline.
    pub fn next(&self) -> Option<Timestamp> {
        self.by_time.first().map(|(at, _)| *at)
    }

    /// The Jobs due at `now` (uid, namespace, name), taken out of the queue.
    pub fn due(&mut self, now: Timestamp) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        while let Some((at, uid)) = self.by_time.first().cloned().filter(|(at, _)| *at <= now) {
            self.by_time.remove(&(at, uid.clone()));
            if let Some((_, ns, name)) = self.jobs.remove(&uid) {
                out.push((uid, ns, name));
            }
        }
        out
    }
}

/// Deletes one due Job (that uid only); false when it should be tried again.
async fn delete(client: &kube::Client, uid: &str, ns: &str, name: &str) -> bool {
    let api: Api<Job> = Api::namespaced(client.clone(), ns);
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        preconditions: Some(Preconditions { uid: Some(uid.to_string()), resource_version: None }),
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => true,
        // Gone already, or another Job of that name now.
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => true,
        Err(e) => {
            tracing::warn!(job = %format!("{ns}/{name}"), error = %e, "deleting a finished Job past its TTL failed; trying again");
            false
        }
    }
}

/// Runs the controller for as long as the task lives.
pub async fn run(client: kube::Client) {
    let api: Api<Job> = Api::all(client.clone());
    let mut events = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
    let mut queue = Queue::default();
    loop {
        let wait = match queue.next() {
            Some(at) => Duration::try_from(at.duration_since(Timestamp::now())).unwrap_or(Duration::ZERO),
            None => Duration::from_secs(3600),
        };
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(watcher::Event::Apply(j) | watcher::Event::InitApply(j))) => queue.seen(&j),
                Some(Ok(watcher::Event::Delete(j))) => queue.forget(j.metadata.uid.as_deref().unwrap_or_default()),
                Some(_) => {}
                None => return,
            },
            () = tokio::time::sleep(wait) => {
                for (uid, ns, name) in queue.due(Timestamp::now()) {
                    if !delete(&client, &uid, &ns, &name).await {
                        queue.at(uid, Timestamp::now() + RETRY, ns, name);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(uid: &str, ttl: Option<i32>, finished: Option<(&str, &str)>) -> Job {
        let conditions: Vec<_> =
            finished.iter().map(|(t, at)| json!({"type": t, "status": "True", "lastTransitionTime": at})).collect();
        serde_json::from_value(json!({
            "metadata": {"name": format!("j-{uid}"), "namespace": "ns", "uid": uid},
            "spec": {"ttlSecondsAfterFinished": ttl, "template": {}},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn a_finished_job_expires_its_ttl_after_its_finish() {
        let done = job("a", Some(100), Some(("Complete", "2026-12-03T13:00:00Z")));
        assert_eq!(expires_at(&done).unwrap().to_string(), "2026-12-03T13:01:40Z");
        let failed = job("b", Some(0), Some(("Failed", "2026-12-03T13:00:00Z")));
        assert_eq!(expires_at(&failed).unwrap().to_string(), "2026-12-03T13:00:00Z");
        assert_eq!(expires_at(&job("c", None, Some(("Complete", "2026-12-03T13:00:00Z")))), None, "no TTL");
        assert_eq!(expires_at(&job("d", Some(5), None)), None, "still running");
        let mut going = done.clone();
        going.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::now()));
        assert_eq!(expires_at(&going), None, "already being deleted");
    }

    #[test]
    fn the_queue_hands_out_due_jobs_in_time_order_and_follows_changes() {
        let mut q = Queue::default();
        q.seen(&job("late", Some(60), Some(("Complete", "2026-12-03T13:00:00Z"))));
        q.seen(&job("early", Some(10), Some(("Complete", "2026-12-03T13:00:00Z"))));
        q.seen(&job("running", Some(1), None));
        assert_eq!(q.next().unwrap().to_string(), "2026-12-03T13:00:10Z");
        // Its TTL raised: it waits longer.
        q.seen(&job("early", Some(120), Some(("Complete", "2026-12-03T13:00:00Z"))));
        let due = q.due("2026-12-03T13:01:30Z".parse().unwrap());
        assert_eq!(due, [("late".to_string(), "ns".to_string(), "j-late".to_string())]);
        q.forget("early");
        assert_eq!(q.next(), None);
        assert!(q.due("2027-01-01T00:00:00Z".parse().unwrap()).is_empty());
    }
}
