//! CronJob: a Job at each time the schedule names, as kube-controller-manager's CronJob controller
//! (v2) makes them — the Job named `<cronjob>-<minutes since the epoch>` so a time is run once, its
//! labels and annotations the template's plus `batch.kubernetes.io/cronjob-scheduled-timestamp`;
//! a time missed by more than `startingDeadlineSeconds` skipped; `concurrencyPolicy` Forbid (skip
//! while one runs) and Replace (the running ones deleted); `suspend`; finished Jobs beyond
//! `successfulJobsHistoryLimit` / `failedJobsHistoryLimit` deleted oldest first; the status's
//! `active`, `lastScheduleTime` and `lastSuccessfulTime`. The schedule is read in `spec.timeZone`,
//! else in the machine's zone (kube: the controller manager's). The hook asks to run again at the
//! next time.
//!
//! The status follows the Jobs that exist: `lastScheduleTime` moves when the Job of that time is seen
//! (the next sync, at once), so a Job whose creation failed is made again rather than forgotten.

use std::collections::BTreeSet;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use uc_api::cron::Schedule;
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use crate::objects::{decode, take_children, to_value};

/// The annotation a Job made for a scheduled time carries: that time, in the CronJob's zone.
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// How long after a schedule time the hook runs again (kube's `nextScheduleDelta`).
const NEXT_DELTA: SignedDuration = SignedDuration::from_millis(100);

/// What one sync decides: the Jobs kept (by name), the one made, the status and when to look again.
#[derive(Debug, Default)]
pub struct Plan {
    pub keep: BTreeSet<String>,
    pub create: Option<Job>,
    pub status: CronJobStatus,
    pub again_in: Option<SignedDuration>,
}

fn holds(job: &Job, type_: &str) -> bool {
    super::job::condition(job, type_).is_some()
}

fn finished(job: &Job) -> bool {
    super::job::finish(job).is_some()
}

fn name_of(job: &Job) -> &str {
    job.metadata.name.as_deref().unwrap_or_default()
}

/// The time a Job was made for (its annotation).
fn scheduled_at(job: &Job) -> Option<Timestamp> {
    let annotations = job.metadata.annotations.as_ref()?;
    annotations.get(SCHEDULED_TIMESTAMP)?.parse().ok()
}

fn reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        ..Default::default()
    }
}

/// The Jobs the schedule made (their annotation says for when) or the status already counts; not one a
/// user made from the template (`kubectl create job --from=cronjob/…`), which kube's controller keeps
/// out of `active` and of the concurrency policy, and counts only in the history limits.
fn made_by_schedule<'a>(cj: &CronJob, jobs: &'a [Job]) -> impl Iterator<Item = &'a Job> {
    let listed: BTreeSet<String> =
        cj.status.iter().flat_map(|s| s.active.iter().flatten()).filter_map(|r| r.uid.clone()).collect();
    jobs.iter()
        .filter(move |j| scheduled_at(j).is_some() || j.metadata.uid.as_ref().is_some_and(|u| listed.contains(u)))
}

/// The status the Jobs show: the running ones, the latest time a Job was made for, the latest success.
fn observed_status(cj: &CronJob, jobs: &[Job]) -> CronJobStatus {
    let previous = cj.status.clone().unwrap_or_default();
    let mut active: Vec<ObjectReference> = made_by_schedule(cj, jobs).filter(|j| !finished(j)).map(reference).collect();
    active.sort_by(|a, b| a.name.cmp(&b.name));
    let latest = |a: Option<Time>, b: Option<Timestamp>| match (a, b) {
        (Some(Time(a)), Some(b)) => Some(Time(a.max(b))),
        (a, b) => a.or(b.map(Time)),
    };
    let made = jobs.iter().filter_map(scheduled_at).max();
    let succeeded = made_by_schedule(cj, jobs).filter(|j| holds(j, "Complete"));
    let completed = succeeded.filter_map(|j| j.status.as_ref()?.completion_time.as_ref().map(|t| t.0)).max();
    CronJobStatus {
        active: (!active.is_empty()).then_some(active),
        last_schedule_time: latest(previous.last_schedule_time, made),
        last_successful_time: latest(previous.last_successful_time, completed),
    }
}

/// kube's `removeOldestJobs` for both histories: finished Jobs beyond their limit go, oldest start first
/// (a Job not started counts as newest), names breaking ties.
fn past_the_limits(cj: &CronJob, jobs: &[Job]) -> Vec<String> {
    let spec = cj.spec.as_ref();
    let mut gone = Vec::new();
    let limits = [
        ("Complete", spec.and_then(|s| s.successful_jobs_history_limit)),
        ("Failed", spec.and_then(|s| s.failed_jobs_history_limit)),
    ];
    for (condition, limit) in limits {
        let Some(limit) = limit else { continue };
        let mut these: Vec<&Job> = jobs.iter().filter(|j| holds(j, condition)).collect();
        let over = these.len().saturating_sub(usize::try_from(limit).unwrap_or(0));
        let start = |j: &Job| j.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| t.0);
        these.sort_by(|a, b| match (start(a), start(b)) {
            (Some(x), Some(y)) if x != y => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            _ => name_of(a).cmp(name_of(b)),
        });
        gone.extend(these.into_iter().take(over).map(|j| name_of(j).to_string()));
    }
    gone
}

/// kube's `mostRecentScheduleTime`: the latest time at or before `now` after `last` (the last time a
/// Job was made for; else the CronJob's creation; `now − startingDeadlineSeconds` if later).
pub fn most_recent(
    cj: &CronJob,
    last: Option<Timestamp>,
    schedule: &Schedule,
    now: Timestamp,
    tz: &TimeZone,
) -> Option<Timestamp> {
    let created = cj.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let mut earliest = last.or(created).unwrap_or(now);
    if let Some(deadline) = cj.spec.as_ref().and_then(|s| s.starting_deadline_seconds) {
        earliest = earliest.max(now - SignedDuration::from_secs(deadline));
    }
    let mut found = None;
    let mut t = earliest;
    // Walk the times; a schedule so dense that a long outage missed more than this many is jumped
    // to its last stretch, as kube counts them by their interval.
    for _ in 0..10_000 {
        match schedule.next(t, tz) {
            Some(n) if n <= now => {
                found = Some(n);
                t = n;
            }
            _ => return found,
        }
    }
    let t1 = found?;
    let interval = schedule.next(t1, tz)?.duration_since(t1);
    let jumps = now.duration_since(t1).as_secs() / interval.as_secs().max(1);
    let mut recent = t1 + SignedDuration::from_secs(jumps * interval.as_secs().max(1));
    while let Some(n) = schedule.next(recent, tz).filter(|n| *n <= now) {
        recent = n;
    }
    Some(recent)
}

/// The Job for `scheduled`, made from the CronJob's template.
pub fn job_for(cj: &CronJob, scheduled: Timestamp, tz: &TimeZone) -> Job {
    let template = cj.spec.as_ref().map(|s| s.job_template.clone()).unwrap_or_default();
    let meta = template.metadata.unwrap_or_default();
    let mut annotations = meta.annotations.unwrap_or_default();
    let stamp = scheduled.to_zoned(tz.clone()).strftime("%Y-%m-%dT%H:%M:%S%:z").to_string().replace("+00:00", "Z");
    annotations.insert(SCHEDULED_TIMESTAMP.into(), stamp);
    let name = format!("{}-{}", cj.metadata.name.as_deref().unwrap_or_default(), scheduled.as_second() / 60);
    Job {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: cj.metadata.namespace.clone(),
            labels: meta.labels,
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: template.spec,
        status: None,
    }
}

/// One sync of a CronJob, at `now`, its schedule read in `tz`.
pub fn plan(cj: &CronJob, jobs: &[Job], now: Timestamp, tz: &TimeZone) -> Plan {
    let mut plan = Plan {
        keep: jobs.iter().map(|j| name_of(j).to_string()).collect(),
        status: observed_status(cj, jobs),
        ..Plan::default()
    };
    for gone in past_the_limits(cj, jobs) {
        plan.keep.remove(&gone);
    }
    let spec = cj.spec.clone().unwrap_or_default();
    // A schedule that does not parse is refused by the API server; one stored before stays idle.
    let Ok(schedule) = Schedule::parse(&spec.schedule) else { return plan };
    if cj.metadata.deletion_timestamp.is_some() || spec.suspend == Some(true) {
        return plan;
    }
    plan.again_in = schedule.next(now, tz).map(|n| n.duration_since(now) + NEXT_DELTA);
    let last = plan.status.last_schedule_time.as_ref().map(|t| t.0);
    let Some(scheduled) = most_recent(cj, last, &schedule, now, tz) else { return plan };
    let too_late = spec.starting_deadline_seconds.is_some_and(|d| scheduled + SignedDuration::from_secs(d) < now);
    let job = job_for(cj, scheduled, tz);
    let running: Vec<&Job> = made_by_schedule(cj, jobs).filter(|j| !finished(j)).collect();
    if too_late || jobs.iter().any(|j| name_of(j) == name_of(&job)) {
        return plan;
    }
    match spec.concurrency_policy.as_deref() {
        Some("Forbid") if !running.is_empty() => return plan,
        Some("Replace") => {
            for j in running {
                plan.keep.remove(name_of(j));
            }
        }
        _ => {}
    }
    plan.create = Some(job);
    plan
}

/// A Job kept, as the answer names it (Jobs are children updated `OnDelete`: the engine reads only the
/// name and namespace of one that exists).
fn kept_job(name: &str, namespace: Option<&str>) -> Job {
    let metadata = ObjectMeta { name: Some(name.into()), namespace: namespace.map(Into::into), ..Default::default() };
    Job { metadata, ..Default::default() }
}

/// The time zone a CronJob's schedule is read in.
fn zone_of(cj: &CronJob) -> Result<TimeZone, HookError> {
    match cj.spec.as_ref().and_then(|s| s.time_zone.as_deref()) {
        Some(name) => TimeZone::get(name).map_err(|e| HookError::InvalidRequest(format!("spec.timeZone: {e}"))),
        None => Ok(TimeZone::system()),
    }
}

/// The sync hook.
pub fn sync(mut request: SyncRequest) -> Result<SyncResponse, HookError> {
    let observed = take_children(&mut request, "Job.batch/v1");
    let cj: CronJob = decode("parent", &request.parent)?;
    let jobs = observed.values().map(|j| decode("a Job", j)).collect::<Result<Vec<Job>, _>>()?;
    let plan = plan(&cj, &jobs, Timestamp::now(), &zone_of(&cj)?);
    let namespace = cj.metadata.namespace.as_deref();
    let kept = plan.keep.iter().map(|name| kept_job(name, namespace));
    let children = kept.chain(plan.create).map(|job| to_value("a Job", &job)).collect::<Result<_, _>>()?;
    Ok(SyncResponse {
        status: Some(to_value("status", &plan.status)?),
        children,
        resync_after_seconds: plan.again_in.map(|d| d.as_secs_f64()),
        finalized: None,
    })
}

#[cfg(test)]
mod tests;
