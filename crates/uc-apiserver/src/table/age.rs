//! How old something is, in Kubernetes' short words (`apimachinery`'s `duration.HumanDuration`).

use chrono::{DateTime, Utc};
use serde_json::Value;

/// Kubernetes' short human duration (`5s`, `3m20s`, `2d4h`, ...).
pub fn human_duration(d: chrono::Duration) -> String {
    let secs = d.num_seconds();
    if secs < -1 {
        return "<invalid>".into();
    }
    let secs = secs.max(0);
    let (m, h, day, y) = (secs / 60, secs / 3600, secs / 86400, secs / (86400 * 365));
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        let s = secs % 60;
        if s == 0 { format!("{m}m") } else { format!("{m}m{s}s") }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        let mm = m % 60;
        if mm == 0 { format!("{h}h") } else { format!("{h}h{mm}m") }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        let hh = h % 24;
        if hh == 0 { format!("{day}d") } else { format!("{day}d{hh}h") }
    } else if y < 2 {
        format!("{day}d")
    } else if y < 8 {
        let dd = day % 365;
        if dd == 0 { format!("{y}y") } else { format!("{y}y{dd}d") }
    } else {
        format!("{y}y")
    }
}

pub(super) fn age_of(v: Option<&Value>) -> Value {
    let Some(ts) = v.and_then(Value::as_str) else {
        return Value::String("<unknown>".into());
    };
    match DateTime::parse_from_rfc3339(ts) {
        Ok(t) => Value::String(human_duration(Utc::now() - t.with_timezone(&Utc))),
        Err(_) => Value::String("<invalid>".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        let d = chrono::Duration::seconds;
        assert_eq!(human_duration(d(5)), "5s");
        assert_eq!(human_duration(d(200)), "3m20s");
        assert_eq!(human_duration(d(3600 * 5 + 60 * 7)), "5h7m");
        assert_eq!(human_duration(d(86400 * 3 + 3600)), "3d1h");
    }
}
