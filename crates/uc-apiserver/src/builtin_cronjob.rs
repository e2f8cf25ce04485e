//! What kube-apiserver's CronJob strategy refuses (`ValidateCronJobCreate`): a schedule robfig/cron
//! does not parse, a `TZ=` in it (`spec.timeZone` says the zone), a time zone the IANA database does not
//! know, an unknown `concurrencyPolicy`, negative deadlines and limits, and a name too long for the
//! Jobs it names (`<name>-<minutes>` must stay a valid name).

use serde_json::Value;
use uc_api::Pointer;
use uc_api::cron::Schedule;

use crate::error::{FieldError, FieldErrorKind};

/// The longest CronJob name: its Jobs add `-` and eleven digits of minutes, and a Job's own name must
/// leave room for its pods' labels (kube's 63 − 11).
const MAX_NAME: usize = 52;

/// What is wrong with a CronJob's name, schedule, time zone and policies.
pub(crate) fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = obj.at("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    if name.len() > MAX_NAME {
        errs.push(FieldError::invalid("metadata.name", &Value::from(name), "must be no more than 52 characters"));
    }
    match obj.at("/spec/schedule").and_then(Value::as_str) {
        None | Some("") => errs.push(FieldError::required("spec.schedule", "")),
        Some(schedule) => errs.extend(schedule_errors(schedule)),
    }
    if let Some(zone) = obj.at("/spec/timeZone").filter(|z| !z.is_null()) {
        errs.extend(zone_errors(zone));
    }
    match obj.at("/spec/concurrencyPolicy").and_then(Value::as_str) {
        None | Some("Allow" | "Forbid" | "Replace") => {}
        Some(other) => errs.push(FieldError::new(
            FieldErrorKind::NotSupported,
            "spec.concurrencyPolicy",
            Some(format!("{other:?}")),
            "supported values: \"Allow\", \"Forbid\", \"Replace\"",
        )),
    }
    for field in ["startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        if let Some(v) = obj.at(&format!("/spec/{field}")).filter(|v| v.as_i64().is_some_and(|n| n < 0)) {
            errs.push(FieldError::invalid(format!("spec.{field}"), v, "must be greater than or equal to 0"));
        }
    }
    errs
}

/// robfig/cron's error for the schedule (a `TZ=` or `CRON_TZ=` prefix read as it reads it), and the
/// refusal of any `TZ` in it.
fn schedule_errors(schedule: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let value = Value::from(schedule);
    let fields = match schedule.strip_prefix("TZ=").or_else(|| schedule.strip_prefix("CRON_TZ=")) {
        Some(rest) => {
            let (zone, fields) = rest.split_once(' ').unwrap_or((rest, ""));
            if jiff::tz::TimeZone::get(zone).is_err() {
                errs.push(FieldError::invalid(
                    "spec.schedule",
                    &value,
                    format!("provided bad location {zone}: unknown time zone {zone}"),
                ));
            }
            fields.trim()
        }
        None => schedule,
    };
    if errs.is_empty()
        && let Err(e) = Schedule::parse(fields)
    {
        errs.push(FieldError::invalid("spec.schedule", &value, e.to_string()));
    }
    if schedule.contains("TZ") {
        errs.push(FieldError::invalid(
            "spec.schedule",
            &value,
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ));
    }
    errs
}

/// kube's `validateTimeZone`: a zone the IANA database names, never the server's `Local`.
fn zone_errors(zone: &Value) -> Vec<FieldError> {
    let field = "spec.timeZone";
    let Some(name) = zone.as_str() else { return vec![FieldError::invalid(field, zone, "must be a string")] };
    let why = if name.is_empty() {
        "timeZone must be nil or non-empty string".to_string()
    } else if name.eq_ignore_ascii_case("local") {
        "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones".to_string()
    } else if jiff::tz::TimeZone::get(name).is_err() {
        format!("unknown time zone {name}")
    } else {
        return Vec::new();
    };
    vec![FieldError::invalid(field, zone, why)]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors(spec: Value) -> Vec<String> {
        validate(&json!({"metadata": {"name": "hello"}, "spec": spec})).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_good_cron_job_passes() {
        let spec = json!({"schedule": "*/5 * * * *", "timeZone": "Europe/Paris", "concurrencyPolicy": "Forbid",
                          "startingDeadlineSeconds": 30, "successfulJobsHistoryLimit": 0});
        assert_eq!(errors(spec), Vec::<String>::new());
        assert_eq!(errors(json!({"schedule": "@hourly"})), Vec::<String>::new());
    }

    #[test]
    fn cron_jobs_are_refused_in_kube_apiservers_words() {
        assert_eq!(errors(json!({})), ["spec.schedule: Required value"]);
        assert_eq!(
            errors(json!({"schedule": "* * *"})),
            [r#"spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]"#]
        );
        assert_eq!(
            errors(json!({"schedule": "TZ=UTC 0 * * * *"})),
            [
                r#"spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"#
            ]
        );
        assert_eq!(
            errors(json!({"schedule": "@daily", "timeZone": "Mars/Olympus"})),
            [r#"spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus"#]
        );
        assert_eq!(
            errors(json!({"schedule": "@daily", "timeZone": "Local"})),
            [
                r#"spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"#
            ]
        );
        assert_eq!(
            errors(json!({"schedule": "@daily", "concurrencyPolicy": "Sometimes", "failedJobsHistoryLimit": -1})),
            [
                r#"spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace""#,
                "spec.failedJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        let long = "x".repeat(53);
        let errs = validate(&json!({"metadata": {"name": long}, "spec": {"schedule": "@daily"}}));
        assert_eq!(errs.len(), 1);
        assert!(errs[0].to_string().ends_with("must be no more than 52 characters"), "{}", errs[0]);
    }
}
