use serde_json::{Value, json};

use super::*;

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn cron_job(spec: Value, status: Value) -> CronJob {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "hello", "namespace": "ns", "uid": "cj", "creationTimestamp": "2026-12-03T13:00:30Z"},
        "spec": spec, "status": status,
    }))
    .unwrap()
}

fn every_five(extra: Value) -> CronJob {
    let mut spec = json!({"schedule": "*/5 * * * *", "jobTemplate": {"metadata": {"labels": {"app": "hi"}},
                          "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}});
    spec.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    cron_job(spec, json!({}))
}

/// A Job made for `minute` (13:mm UTC), finished as `condition` says (None: running).
fn job(minute: u32, condition: Option<&str>, started: &str) -> Job {
    let time = format!("2026-12-03T13:{minute:02}:00Z");
    let name = format!("hello-{}", at(&time).as_second() / 60);
    let conditions: Vec<Value> = condition.iter().map(|c| json!({"type": c, "status": "True"})).collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("u{minute}"), "annotations": {SCHEDULED_TIMESTAMP: time}},
        "status": {"conditions": conditions, "startTime": started, "completionTime": condition.filter(|c| *c == "Complete").map(|_| started)},
    }))
    .unwrap()
}

fn made(plan: &Plan) -> Option<(String, String)> {
    let job = plan.create.as_ref()?;
    let stamp = job.metadata.annotations.as_ref()?.get(SCHEDULED_TIMESTAMP)?.clone();
    Some((job.metadata.name.clone()?, stamp))
}

#[test]
fn a_job_is_made_for_the_latest_time_due_and_once() {
    let cj = every_five(json!({}));
    let now = at("2026-12-03T13:05:10Z");
    let p = plan(&cj, &[], now, &TimeZone::UTC);
    let name = format!("hello-{}", at("2026-12-03T13:05:00Z").as_second() / 60);
    assert_eq!(made(&p), Some((name.clone(), "2026-12-03T13:05:00Z".to_string())));
    let job = p.create.as_ref().unwrap();
    assert_eq!(job.metadata.labels, Some([("app".to_string(), "hi".to_string())].into()), "the template's labels");
    assert!(job.spec.as_ref().is_some_and(|s| s.template.spec.is_some()), "the template's spec");
    assert_eq!(p.again_in, Some(SignedDuration::from_millis(290_100)), "at 13:10 and 100 ms");
    // The Job is seen: it is kept and not made again, and the status follows it.
    let seen = job_for(&cj, at("2026-12-03T13:05:00Z"), &TimeZone::UTC);
    let p = plan(&cj, &[seen], at("2026-12-03T13:05:11Z"), &TimeZone::UTC);
    assert!(p.create.is_none());
    assert_eq!(p.keep, BTreeSet::from([name.clone()]));
    assert_eq!(p.status.last_schedule_time, Some(Time(at("2026-12-03T13:05:00Z"))));
    let active = p.status.active.unwrap();
    assert_eq!(active.iter().map(|r| r.name.as_deref().unwrap()).collect::<Vec<_>>(), [name.as_str()]);
    assert_eq!(active[0].kind.as_deref(), Some("Job"));
}

#[test]
fn nothing_is_made_before_the_first_time_nor_when_suspended() {
    let early = plan(&every_five(json!({})), &[], at("2026-12-03T13:04:00Z"), &TimeZone::UTC);
    assert!(early.create.is_none());
    assert_eq!(early.again_in, Some(SignedDuration::from_millis(60_100)));
    let suspended = plan(&every_five(json!({"suspend": true})), &[], at("2026-12-03T13:06:00Z"), &TimeZone::UTC);
    assert!(suspended.create.is_none() && suspended.again_in.is_none());
}

#[test]
fn a_time_missed_by_more_than_the_starting_deadline_is_skipped() {
    let now = at("2026-12-03T13:07:00Z");
    let late = plan(&every_five(json!({"startingDeadlineSeconds": 60})), &[], now, &TimeZone::UTC);
    assert!(late.create.is_none(), "13:05 is two minutes gone");
    assert!(late.again_in.is_some(), "13:10 is still to come");
    let in_time = plan(&every_five(json!({"startingDeadlineSeconds": 200})), &[], now, &TimeZone::UTC);
    assert!(in_time.create.is_some());
}

#[test]
fn concurrency_policies_decide_about_a_running_job() {
    let running = job(0, None, "2026-12-03T13:00:01Z");
    let cj = |policy: &str| {
        cron_job(
            json!({"schedule": "*/5 * * * *", "concurrencyPolicy": policy, "jobTemplate": {}}),
            json!({"lastScheduleTime": "2026-12-03T13:00:00Z"}),
        )
    };
    let now = at("2026-12-03T13:05:01Z");
    let allow = plan(&cj("Allow"), std::slice::from_ref(&running), now, &TimeZone::UTC);
    assert!(allow.create.is_some() && allow.keep.contains(name_of(&running)));
    let forbid = plan(&cj("Forbid"), std::slice::from_ref(&running), now, &TimeZone::UTC);
    assert!(forbid.create.is_none() && forbid.keep.contains(name_of(&running)));
    let replace = plan(&cj("Replace"), std::slice::from_ref(&running), now, &TimeZone::UTC);
    assert!(replace.create.is_some() && replace.keep.is_empty(), "the running one is deleted");
    let done = job(0, Some("Complete"), "2026-12-03T13:00:01Z");
    let forbid = plan(&cj("Forbid"), &[done], now, &TimeZone::UTC);
    assert!(forbid.create.is_some(), "a finished job is no obstacle");
}

#[test]
fn a_job_made_by_hand_from_the_template_is_kept_but_not_counted() {
    let cj = cron_job(
        json!({"schedule": "*/5 * * * *", "concurrencyPolicy": "Forbid", "jobTemplate": {}}),
        json!({"lastScheduleTime": "2026-12-03T13:00:00Z"}),
    );
    let mut manual = job(0, None, "2026-12-03T13:01:00Z");
    manual.metadata.name = Some("hello-manual".into());
    manual.metadata.annotations =
        Some([("cronjob.kubernetes.io/instantiate".to_string(), "manual".to_string())].into());
    let p = plan(&cj, std::slice::from_ref(&manual), at("2026-12-03T13:05:01Z"), &TimeZone::UTC);
    assert!(p.keep.contains("hello-manual"), "it stays the CronJob's");
    assert!(p.status.active.is_none(), "not active: {:?}", p.status.active);
    assert!(p.create.is_some(), "Forbid is not held up by it");
}

#[test]
fn finished_jobs_beyond_the_history_limits_go_oldest_first() {
    let cj = cron_job(
        json!({"schedule": "* * * * *", "suspend": true, "successfulJobsHistoryLimit": 2, "failedJobsHistoryLimit": 1, "jobTemplate": {}}),
        json!({}),
    );
    let jobs = [
        job(1, Some("Complete"), "2026-12-03T13:01:05Z"),
        job(2, Some("Complete"), "2026-12-03T13:02:05Z"),
        job(3, Some("Complete"), "2026-12-03T13:03:05Z"),
        job(4, Some("Failed"), "2026-12-03T13:04:05Z"),
        job(5, Some("Failed"), "2026-12-03T13:05:05Z"),
        job(6, None, "2026-12-03T13:06:05Z"),
    ];
    let p = plan(&cj, &jobs, at("2026-12-03T13:06:30Z"), &TimeZone::UTC);
    let kept: Vec<&str> = jobs.iter().map(name_of).filter(|n| p.keep.contains(*n)).collect();
    assert_eq!(kept, [name_of(&jobs[1]), name_of(&jobs[2]), name_of(&jobs[4]), name_of(&jobs[5])], "even suspended");
    assert_eq!(p.status.last_successful_time, Some(Time(at("2026-12-03T13:03:05Z"))));
    assert_eq!(p.status.last_schedule_time, Some(Time(at("2026-12-03T13:06:00Z"))));
    assert_eq!(p.status.active.map(|a| a.len()), Some(1));
}

#[test]
fn a_long_outage_runs_the_latest_time_only() {
    let mut cj = every_five(json!({}));
    cj.spec.as_mut().unwrap().schedule = "* * * * *".into();
    cj.metadata.creation_timestamp = Some(Time(at("2025-01-01T00:00:00Z")));
    let p = plan(&cj, &[], at("2026-12-03T13:05:30Z"), &TimeZone::UTC);
    assert_eq!(made(&p).map(|m| m.1), Some("2026-12-03T13:05:00Z".to_string()));
}

#[test]
fn a_schedule_is_read_in_its_time_zone() {
    let mut cj = every_five(json!({"timeZone": "Europe/Paris"}));
    cj.spec.as_mut().unwrap().schedule = "0 9 * * *".into();
    cj.metadata.creation_timestamp = Some(Time(at("2026-12-02T12:00:00Z")));
    let paris = TimeZone::get("Europe/Paris").unwrap();
    let p = plan(&cj, &[], at("2026-12-03T08:00:30Z"), &paris);
    assert_eq!(made(&p).map(|m| m.1), Some("2026-12-03T09:00:00+01:00".to_string()), "09:00 in Paris is 08:00 UTC");
}

#[test]
fn the_hook_answers_with_kept_jobs_the_new_one_and_the_status() {
    let cj = every_five(json!({"concurrencyPolicy": "Allow"}));
    let running = job(0, None, "2026-12-03T13:00:01Z");
    let request = crate::objects::request_of(json!({
        "parent": serde_json::to_value(&cj).unwrap(),
        "children": {"Job.batch/v1": {name_of(&running): serde_json::to_value(&running).unwrap()}},
    }));
    let answer = sync(request).unwrap();
    let names: Vec<&str> = answer.children.iter().filter_map(|c| c.pointer("/metadata/name")?.as_str()).collect();
    assert_eq!(names[0], name_of(&running), "the running Job, named");
    assert!(answer.children[0].get("spec").is_none(), "named only: it is not updated");
    assert!(answer.resync_after_seconds.is_some_and(|s| s > 0.0));
    assert_eq!(answer.status.unwrap()["active"][0]["name"], name_of(&running));
}
