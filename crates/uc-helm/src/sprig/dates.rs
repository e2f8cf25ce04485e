//! Sprig's time functions: `now`, `date` and `htmlDate` (Go's reference-time layouts), `dateInZone`
//! (UTC and fixed offsets), `toDate`, `unixEpoch`, `dateModify` (and its `must`/snake_case names),
//! `duration`, `durationRound`, `ago`. Times are objects
//! printed as Go prints a `time.Time`.

use std::rc::Rc;

use chrono::{DateTime, FixedOffset, TimeZone, Utc};

use super::convert::to_i64;
use crate::error::HelmError;
use crate::gotemplate::{Funcs, Function, Member, Object, Ty, Value};

/// A `time.Time`.
struct Time(DateTime<FixedOffset>);

impl Object for Time {
    fn type_name(&self) -> &str {
        "time.Time"
    }

    fn member(&self, name: &str) -> Option<Member> {
        let t = self.0;
        let method = |f: crate::gotemplate::Method| Some(Member::Method(f));
        match name {
            "Unix" => method(Rc::new(move |_| Ok(Value::Int(t.timestamp())))),
            "Year" => method(Rc::new(move |_| Ok(Value::Int(i64::from(chrono::Datelike::year(&t)))))),
            "Format" => {
                method(Rc::new(move |a| Ok(Value::from(format(&t, a.first().and_then(Value::as_str).unwrap_or(""))))))
            }
            "UTC" => method(Rc::new(move |_| Ok(time(t.with_timezone(&Utc).fixed_offset())))),
            _ => None,
        }
    }

    fn print(&self) -> String {
        format(&self.0, "2006-01-02 15:04:05.999999999 -0700 MST")
    }
}

fn time(t: DateTime<FixedOffset>) -> Value {
    Value::Object(Rc::new(Time(t)))
}

/// A time argument: a `time.Time`, Unix seconds, or now for anything else (as Sprig's `date` does).
fn time_of(v: &Value) -> DateTime<FixedOffset> {
    match v {
        // A `time.Time` of ours prints as `2006-01-02 15:04:05.999999999 -0700 MST`.
        Value::Object(o) if o.type_name() == "time.Time" => {
            let text = o.print();
            let head: Vec<&str> = text.split(' ').take(3).collect();
            DateTime::parse_from_str(&head.join(" "), "%Y-%m-%d %H:%M:%S%.f %z")
                .unwrap_or_else(|_| Utc::now().fixed_offset())
        }
        Value::Int(_) | Value::Float(_) => Utc.timestamp_opt(to_i64(v), 0).single().unwrap_or_default().fixed_offset(),
        _ => Utc::now().fixed_offset(),
    }
}

/// Go's layout (the reference time `Mon Jan 2 15:04:05 MST 2006`) applied to `t`.
pub fn format(t: &DateTime<FixedOffset>, layout: &str) -> String {
    const TOKENS: &[(&str, &str)] = &[
        ("2006", "%Y"),
        ("January", "%B"),
        ("Monday", "%A"),
        ("-07:00", "%:z"),
        ("-0700", "%z"),
        ("Z07:00", "Z07:00"),
        ("MST", "MST"),
        ("Jan", "%b"),
        ("Mon", "%a"),
        ("01", "%m"),
        ("02", "%d"),
        ("_2", "%e"),
        ("15", "%H"),
        ("03", "%I"),
        ("04", "%M"),
        ("05", "%S"),
        ("PM", "%p"),
        ("pm", "%P"),
        ("06", "%y"),
        (".999999999", ".999999999"),
        (".000000000", "%.9f"),
        (".000000", "%.6f"),
        (".000", "%.3f"),
        ("1", "%-m"),
        ("2", "%-d"),
        ("3", "%-I"),
        ("4", "%-M"),
        ("5", "%-S"),
    ];
    let mut out = String::new();
    let mut rest = layout;
    'outer: while !rest.is_empty() {
        for (go, strf) in TOKENS {
            if let Some(after) = rest.strip_prefix(go) {
                out.push_str(&match *strf {
                    "MST" => {
                        if t.offset().local_minus_utc() == 0 {
                            "UTC".to_string()
                        } else {
                            t.format("%z").to_string()
                        }
                    }
                    "Z07:00" => {
                        if t.offset().local_minus_utc() == 0 {
                            "Z".to_string()
                        } else {
                            t.format("%:z").to_string()
                        }
                    }
                    ".999999999" => {
                        let n = t.format("%9f").to_string();
                        let n = n.trim_end_matches('0');
                        if n.is_empty() { String::new() } else { format!(".{n}") }
                    }
                    f => t.format(f).to_string(),
                });
                rest = after;
                continue 'outer;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A Go duration (`1h2m3s`) as `time.Duration.String()` writes `secs` seconds.
fn go_duration(secs: i64) -> String {
    if secs == 0 {
        return "0s".into();
    }
    let (sign, s) = if secs < 0 { ("-", -secs) } else { ("", secs) };
    let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
    match (h, m) {
        (0, 0) => format!("{sign}{s}s"),
        (0, _) => format!("{sign}{m}m{s}s"),
        _ => format!("{sign}{h}h{m}m{s}s"),
    }
}

fn zone(name: &str) -> FixedOffset {
    match name {
        "UTC" | "" | "Local" => FixedOffset::east_opt(0),
        other => DateTime::parse_from_str(&format!("2000-01-01 00:00 {other}"), "%Y-%m-%d %H:%M %z")
            .ok()
            .map(|d| *d.offset()),
    }
    .unwrap_or_else(|| FixedOffset::east_opt(0).expect("zero offset"))
}

pub(super) fn register(f: &mut Funcs) {
    use Ty::*;
    let mut add = |name: &str, func: Function| {
        f.insert(name.to_string(), func);
    };
    add("now", Function::new(&[], |_| Ok(time(Utc::now().fixed_offset()))));
    add("date", Function::new(&[Str, Any], |a| Ok(Value::from(format(&time_of(&a[1]), a[0].as_str().unwrap_or(""))))));
    add("htmlDate", Function::new(&[Any], |a| Ok(Value::from(format(&time_of(&a[0]), "2006-01-02")))));
    for name in ["dateInZone", "date_in_zone"] {
        add(
            name,
            Function::new(&[Str, Any, Str], |a| {
                let t = time_of(&a[1]).with_timezone(&zone(a[2].as_str().unwrap_or("")));
                Ok(Value::from(format(&t, a[0].as_str().unwrap_or(""))))
            }),
        );
    }
    add(
        "htmlDateInZone",
        Function::new(&[Any, Str], |a| {
            let t = time_of(&a[0]).with_timezone(&zone(a[1].as_str().unwrap_or("")));
            Ok(Value::from(format(&t, "2006-01-02")))
        }),
    );
    add("unixEpoch", Function::new(&[Any], |a| Ok(Value::from(time_of(&a[0]).timestamp().to_string()))));
    // Seconds as a string or an int64 (Sprig ignores a template's own `int` constants; uc cannot tell
    // them from a resource's int64s and takes both).
    add("duration", Function::new(&[Any], |a| Ok(Value::from(go_duration(to_i64(&a[0]))))));
    add(
        "ago",
        Function::new(&[Any], |a| {
            Ok(Value::from(go_duration((Utc::now().fixed_offset() - time_of(&a[0])).num_seconds())))
        }),
    );
    // `dateModify` keeps the time when the duration does not parse; `mustDateModify` fails.
    for (name, must) in
        [("dateModify", false), ("date_modify", false), ("mustDateModify", true), ("must_date_modify", true)]
    {
        add(
            name,
            Function::new(&[Str, Any], move |a| {
                let (text, t) = (a[0].as_str().unwrap_or(""), time_of(&a[1]));
                match parse_go_duration(text) {
                    Some(nanos) => Ok(time(t + chrono::Duration::nanoseconds(nanos))),
                    None if must => Err(HelmError::from(format!("time: invalid duration {text:?}"))),
                    None => Ok(time(t)),
                }
            }),
        );
    }
    add("durationRound", Function::new(&[Any], |a| Ok(Value::from(duration_round(&a[0])))));
    for name in ["toDate", "mustToDate"] {
        add(
            name,
            Function::new(&[Str, Str], |a| {
                let (layout, text) = (a[0].as_str().unwrap_or(""), a[1].as_str().unwrap_or(""));
                parse_with(layout, text)
                    .map(time)
                    .ok_or_else(|| HelmError::from(format!("parsing time {text:?} as {layout:?}: cannot parse")))
            }),
        );
    }
}

/// Go's `time.ParseDuration` in nanoseconds (`uc_api`'s reader), or none where Go refuses the text.
fn parse_go_duration(s: &str) -> Option<i64> {
    uc_api::controller::parse_go_nanos(s).ok()
}

/// Sprig's `durationRound`: a duration (Go string, int64 nanoseconds, or the time since a time) in its
/// largest whole unit (`2h`, `3d`, `1mo`, `1y`).
fn duration_round(v: &Value) -> String {
    let nanos: i128 = match v {
        Value::Str(s) => parse_go_duration(s).unwrap_or(0).into(),
        Value::Int(n) => (*n).into(),
        Value::Object(o) if o.type_name() == "time.Time" => {
            (Utc::now().fixed_offset() - time_of(v)).num_nanoseconds().unwrap_or(i64::MAX).into()
        }
        _ => 0,
    };
    let u = nanos.unsigned_abs();
    let second = 1_000_000_000u128;
    let units = [
        (second * 3600 * 24 * 365, "y"),
        (second * 3600 * 24 * 30, "mo"),
        (second * 3600 * 24, "d"),
        (second * 3600, "h"),
        (second * 60, "m"),
        (second, "s"),
    ];
    units.iter().find(|(size, _)| u > *size).map_or("0s".to_string(), |(size, unit)| format!("{}{unit}", u / size))
}

/// `time.ParseInLocation(layout, text, UTC)` for the layouts charts use (dates, RFC 3339).
fn parse_with(layout: &str, text: &str) -> Option<DateTime<FixedOffset>> {
    let utc = FixedOffset::east_opt(0)?;
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t);
    }
    let pattern = layout
        .replace("2006", "%Y")
        .replace("01", "%m")
        .replace("02", "%d")
        .replace("15", "%H")
        .replace("04", "%M")
        .replace("05", "%S");
    if pattern.contains("%H") {
        chrono::NaiveDateTime::parse_from_str(text, &pattern).ok().map(|n| utc.from_utc_datetime(&n))
    } else {
        chrono::NaiveDate::parse_from_str(text, &pattern)
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|n| utc.from_utc_datetime(&n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gos_layouts() {
        let t = DateTime::parse_from_rfc3339("2026-03-04T05:06:07.5+00:00").unwrap();
        assert_eq!(format(&t, "2006-01-02"), "2026-03-04");
        assert_eq!(format(&t, "Jan 2, 2006 at 3:04pm (MST)"), "Mar 4, 2026 at 5:06am (UTC)");
        assert_eq!(format(&t, "2006-01-02T15:04:05Z07:00"), "2026-03-04T05:06:07Z");
        assert_eq!(format(&t, "2006-01-02 15:04:05.999999999 -0700 MST"), "2026-03-04 05:06:07.5 +0000 UTC");
        assert_eq!(go_duration(3725), "1h2m5s");
        assert_eq!(go_duration(45), "45s");
        assert_eq!(parse_with("2006-01-02", "2024-05-06").map(|t| t.timestamp()), Some(1714953600));
    }
}
