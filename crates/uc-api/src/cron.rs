//! Cron schedules as a CronJob's `spec.schedule` reads them: the grammar of robfig/cron's standard
//! parser, which kube-apiserver validates with and kube-controller-manager schedules by — five fields
//! (minute, hour, day of month, month, day of week; `*`, `?`, lists, ranges, steps, month and weekday
//! names), the descriptors `@yearly` … `@hourly` and `@every <duration>` — with its error words and
//! its day rule: when both day fields are restricted, a day matching either runs.

use jiff::tz::TimeZone;
use jiff::{RoundMode, Span, Timestamp, TimestampRound, ToSpan, Unit, Zoned, ZonedRound};

/// A schedule that does not parse, in robfig/cron's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CronError(String);

/// Set on a field written `*` or `?`: the day rule tells "every day" from a restricted day.
const STAR: u64 = 1 << 63;

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// The five fields as bit sets (bit n: value n runs), the star bit kept.
    Fields { minute: u64, hour: u64, dom: u64, month: u64, dow: u64 },
    /// `@every <duration>`: whole seconds after the time asked about.
    Every { seconds: i64 },
}

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MINUTES: Bounds = Bounds { min: 0, max: 59, names: &[] };
const HOURS: Bounds = Bounds { min: 0, max: 23, names: &[] };
const DOM: Bounds = Bounds { min: 1, max: 31, names: &[] };
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)],
};

fn error(message: String) -> CronError {
    CronError(message)
}

/// A non-negative number as Go's `strconv.Atoi` reads it.
fn number(expr: &str) -> Result<u32, CronError> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(error(format!("failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: invalid syntax")));
    }
    let n: i64 = expr.parse().map_err(|_| error(format!("failed to parse int from {expr}: value out of range")))?;
    if n < 0 {
        return Err(error(format!("negative number ({n}) not allowed: {expr}")));
    }
    u32::try_from(n).map_err(|_| error(format!("failed to parse int from {expr}: value out of range")))
}

fn number_or_name(expr: &str, bounds: &Bounds) -> Result<u32, CronError> {
    let lower = expr.to_ascii_lowercase();
    match bounds.names.iter().find(|(name, _)| *name == lower) {
        Some((_, n)) => Ok(*n),
        None => number(expr),
    }
}

/// One comma-separated part of a field: `*`, `n`, `a-b`, each optionally `/step`.
fn range(expr: &str, bounds: &Bounds) -> Result<u64, CronError> {
    let parts: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = parts[0].split('-').collect();
    let (mut start, mut end, mut extra) = (bounds.min, bounds.max, 0);
    if low_high[0] == "*" || low_high[0] == "?" {
        extra = STAR;
    } else {
        start = number_or_name(low_high[0], bounds)?;
        end = match low_high.len() {
            1 => start,
            2 => number_or_name(low_high[1], bounds)?,
            _ => return Err(error(format!("too many hyphens: {expr}"))),
        };
    }
    let step = match parts.len() {
        1 => 1,
        2 => {
            let step = number(parts[1])?;
            // `n/step` means n to the maximum.
            if low_high.len() == 1 {
                end = bounds.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(error(format!("too many slashes: {expr}"))),
    };
    if start < bounds.min {
        return Err(error(format!("beginning of range ({start}) below minimum ({}): {expr}", bounds.min)));
    }
    if end > bounds.max {
        return Err(error(format!("end of range ({end}) above maximum ({}): {expr}", bounds.max)));
    }
    if start > end {
        return Err(error(format!("beginning of range ({start}) beyond end of range ({end}): {expr}")));
    }
    if step == 0 {
        return Err(error(format!("step of range should be a positive number: {expr}")));
    }
    Ok((start..=end).step_by(step as usize).fold(extra, |bits, n| bits | 1 << n))
}

fn field(text: &str, bounds: &Bounds) -> Result<u64, CronError> {
    text.split(',').filter(|p| !p.is_empty()).try_fold(0, |bits, part| Ok(bits | range(part, bounds)?))
}

/// The bits of every value of a field, the star bit set.
fn all(bounds: &Bounds) -> u64 {
    (bounds.min..=bounds.max).fold(STAR, |bits, n| bits | 1 << n)
}

impl Schedule {
    /// Parses a schedule as robfig/cron's `ParseStandard` does (a `TZ=` prefix is the caller's to
    /// refuse: kube asks for `spec.timeZone` instead).
    pub fn parse(spec: &str) -> Result<Schedule, CronError> {
        if spec.is_empty() {
            return Err(error("empty spec string".into()));
        }
        if let Some(descriptor) = spec.strip_prefix('@') {
            return Self::descriptor(descriptor, spec);
        }
        let fields: Vec<&str> = spec.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(error(format!("expected exactly 5 fields, found {}: [{}]", fields.len(), fields.join(" "))));
        }
        Ok(Schedule::Fields {
            minute: field(fields[0], &MINUTES)?,
            hour: field(fields[1], &HOURS)?,
            dom: field(fields[2], &DOM)?,
            month: field(fields[3], &MONTHS)?,
            dow: field(fields[4], &DOW)?,
        })
    }

    fn descriptor(name: &str, spec: &str) -> Result<Schedule, CronError> {
        let fixed =
            |minute: u64, hour: u64, dom: u64, month: u64, dow: u64| Schedule::Fields { minute, hour, dom, month, dow };
        let (first_minute, first_hour, first_day, january, sunday) = (1, 1, 1 << 1, 1 << 1, 1);
        Ok(match name {
            "yearly" | "annually" => fixed(first_minute, first_hour, first_day, january, all(&DOW)),
            "monthly" => fixed(first_minute, first_hour, first_day, all(&MONTHS), all(&DOW)),
            "weekly" => fixed(first_minute, first_hour, all(&DOM), all(&MONTHS), sunday),
            "daily" | "midnight" => fixed(first_minute, first_hour, all(&DOM), all(&MONTHS), all(&DOW)),
            "hourly" => fixed(first_minute, all(&HOURS), all(&DOM), all(&MONTHS), all(&DOW)),
            _ => match name.strip_prefix("every ") {
                Some(text) => {
                    let d: kube_core::Duration =
                        text.parse().map_err(|e| error(format!("failed to parse duration {spec}: time: {e}")))?;
                    let d: std::time::Duration = d.into();
                    Schedule::Every { seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX).max(1) }
                }
                None => return Err(error(format!("unrecognized descriptor: {spec}"))),
            },
        })
    }

    /// The first time the schedule runs strictly after `after`, read in `tz`; None when none comes in
    /// the next five years (`30 0 31 2 *`), as robfig/cron gives up.
    pub fn next(&self, after: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let (minute, hour, dom, month, dow) = match *self {
            Schedule::Every { seconds } => {
                let whole = after.round(TimestampRound::new().smallest(Unit::Second).mode(RoundMode::Trunc)).ok()?;
                return whole.checked_add(Span::new().seconds(seconds)).ok();
            }
            Schedule::Fields { minute, hour, dom, month, dow } => (minute, hour, dom, month, dow),
        };
        let has = |bits: u64, n: i8| bits & (1 << n) != 0;
        let day_matches = |t: &Zoned| {
            let (in_month, in_week) = (has(dom, t.day()), has(dow, t.weekday().to_sunday_zero_offset()));
            if dom & STAR != 0 || dow & STAR != 0 { in_month && in_week } else { in_month || in_week }
        };
        let trunc = ZonedRound::new().smallest(Unit::Minute).mode(RoundMode::Trunc);
        let mut t = after.to_zoned(tz.clone()).round(trunc).ok()?.checked_add(1.minute()).ok()?;
        let limit = t.year() + 5;
        let mut truncated = false;
        'wrap: while t.year() <= limit {
            while !has(month, t.month()) {
                if !std::mem::replace(&mut truncated, true) {
                    t = t.date().first_of_month().to_zoned(tz.clone()).ok()?;
                }
                t = t.checked_add(1.month()).ok()?;
                if t.month() == 1 {
                    continue 'wrap;
                }
            }
            while !day_matches(&t) {
                if !std::mem::replace(&mut truncated, true) {
                    t = t.date().to_zoned(tz.clone()).ok()?;
                }
                t = t.date().tomorrow().ok()?.to_zoned(tz.clone()).ok()?;
                if t.day() == 1 {
                    continue 'wrap;
                }
            }
            while !has(hour, t.hour()) {
                if !std::mem::replace(&mut truncated, true) {
                    t = t.date().at(t.hour(), 0, 0, 0).to_zoned(tz.clone()).ok()?;
                }
                t = t.checked_add(1.hour()).ok()?;
                if t.hour() == 0 {
                    continue 'wrap;
                }
            }
            while !has(minute, t.minute()) {
                t = t.checked_add(1.minute()).ok()?;
                if t.minute() == 0 {
                    continue 'wrap;
                }
            }
            return Some(t.timestamp());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn next(spec: &str, after: &str) -> String {
        Schedule::parse(spec).unwrap().next(at(after), &TimeZone::UTC).map(|t| t.to_string()).unwrap_or_default()
    }

    #[test]
    fn schedules_run_where_robfig_cron_runs_them() {
        assert_eq!(next("* * * * *", "2026-12-03T13:05:20Z"), "2026-12-03T13:06:00Z");
        assert_eq!(next("* * * * *", "2026-12-03T13:05:00Z"), "2026-12-03T13:06:00Z", "strictly after");
        assert_eq!(next("*/15 * * * *", "2026-12-03T13:05:00Z"), "2026-12-03T13:15:00Z");
        assert_eq!(next("5/20 * * * *", "2026-12-03T13:46:00Z"), "2026-12-03T14:05:00Z", "n/step runs to the maximum");
        assert_eq!(next("0 9-17/4 * * MON-FRI", "2026-12-04T14:00:00Z"), "2026-12-04T17:00:00Z");
        assert_eq!(next("0 9-17/4 * * MON-FRI", "2026-12-04T18:00:00Z"), "2026-12-07T09:00:00Z", "Friday to Monday");
        assert_eq!(next("30 2 1 jan,Jul *", "2026-12-03T00:00:00Z"), "2027-01-01T02:30:00Z");
        assert_eq!(next("0 0 29 2 *", "2026-03-01T00:00:00Z"), "2028-02-29T00:00:00Z");
        assert_eq!(next("0 0 30 2 *", "2026-03-01T00:00:00Z"), "", "never: robfig gives up after five years");
        assert_eq!(next("@hourly", "2026-12-03T13:05:00Z"), "2026-12-03T14:00:00Z");
        assert_eq!(next("@weekly", "2026-12-03T13:05:00Z"), "2026-12-06T00:00:00Z", "Sunday");
        assert_eq!(next("@yearly", "2026-12-03T13:05:00Z"), "2027-01-01T00:00:00Z");
        assert_eq!(next("@every 90s", "2026-12-03T13:05:00.5Z"), "2026-12-03T13:06:30Z");
    }

    #[test]
    fn both_day_fields_restricted_run_on_either() {
        // The 13th, or any Friday: 2026-12-04 is a Friday, before the 13th.
        assert_eq!(next("0 0 13 * 5", "2026-12-01T00:00:00Z"), "2026-12-04T00:00:00Z");
        // `*` in the day of week: the 13th only.
        assert_eq!(next("0 0 13 * *", "2026-12-01T00:00:00Z"), "2026-12-13T00:00:00Z");
        // `*/1` is a star (step 1 keeps it), `*/2` a restriction.
        assert_eq!(next("0 0 13 * */1", "2026-12-01T00:00:00Z"), "2026-12-13T00:00:00Z");
        assert_eq!(next("0 0 13 * */2", "2026-12-01T00:00:00Z"), "2026-12-03T00:00:00Z", "Thursday");
    }

    #[test]
    fn a_schedule_runs_in_its_time_zone_across_summer_time() {
        let ny = TimeZone::get("America/New_York").unwrap();
        let s = Schedule::parse("30 2 * * *").unwrap();
        // 2026-03-08 02:30 does not exist in New York (clocks go 02:00 → 03:00).
        let t = s.next(at("2026-03-07T08:00:00Z"), &ny).unwrap();
        assert_eq!(t.to_string(), "2026-03-09T06:30:00Z", "robfig/cron skips a time summer time skips");
        let s = Schedule::parse("0 9 * * *").unwrap();
        assert_eq!(s.next(at("2026-07-01T00:00:00Z"), &ny).unwrap().to_string(), "2026-07-01T13:00:00Z");
    }

    #[test]
    fn bad_schedules_are_refused_in_robfig_crons_words() {
        let e = |s: &str| Schedule::parse(s).unwrap_err().to_string();
        assert_eq!(e(""), "empty spec string");
        assert_eq!(e("* * *"), "expected exactly 5 fields, found 3: [* * *]");
        assert_eq!(e("60 * * * *"), "end of range (60) above maximum (59): 60");
        assert_eq!(e("* * 0 * *"), "beginning of range (0) below minimum (1): 0");
        assert_eq!(e("5-2 * * * *"), "beginning of range (5) beyond end of range (2): 5-2");
        assert_eq!(e("*/0 * * * *"), "step of range should be a positive number: */0");
        assert_eq!(e("x * * * *"), "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax");
        assert_eq!(e("-1 * * * *"), "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax");
        assert_eq!(e("1-2-3 * * * *"), "too many hyphens: 1-2-3");
        assert_eq!(e("1/2/3 * * * *"), "too many slashes: 1/2/3");
        assert_eq!(e("* * * * 7"), "end of range (7) above maximum (6): 7");
        assert_eq!(e("@fortnightly"), "unrecognized descriptor: @fortnightly");
        assert!(e("@every x").starts_with("failed to parse duration @every x"));
    }
}
