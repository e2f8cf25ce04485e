//! The engine's hook metrics as the Controllers page shows them: from the Prometheus text of the
//! engine's `/metrics`, per controller and hook, the calls, the errors and the latency quantiles p50 and
//! p99 (estimated from the histogram's buckets as Prometheus' `histogram_quantile` does).

use std::collections::BTreeMap;

use serde::Serialize;

/// One controller's hook, as the page shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HookStats {
    pub controller: String,
    pub hook: String,
    pub calls: f64,
    pub errors: f64,
    /// Errors per call.
    pub error_rate: f64,
    /// Seconds.
    pub p50: Option<f64>,
    /// Seconds.
    pub p99: Option<f64>,
}

/// A sample line: its name, labels and value.
fn sample(line: &str) -> Option<(&str, BTreeMap<&str, &str>, f64)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (head, value) = line.rsplit_once(' ')?;
    let value: f64 = value.parse().ok()?;
    let (name, labels) = match head.split_once('{') {
        Some((n, rest)) => (n, rest.strip_suffix('}')?),
        None => (head, ""),
    };
    let labels = labels
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim().trim_matches('"')))
        .collect();
    Some((name, labels, value))
}

/// The `q` quantile of cumulative buckets `(upper bound, count)`, sorted by bound.
pub fn quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut below = (0.0, 0.0);
    for &(bound, count) in buckets {
        if count >= rank {
            if bound.is_infinite() {
                return Some(below.0); // the highest finite bound, as Prometheus answers
            }
            let share = if count > below.1 { (rank - below.1) / (count - below.1) } else { 0.0 };
            return Some(below.0 + (bound - below.0) * share);
        }
        below = (bound, count);
    }
    Some(below.0)
}

/// Every controller's hooks in the engine's metrics text.
pub fn hook_stats(text: &str) -> Vec<HookStats> {
    type Key = (String, String);
    let mut stats: BTreeMap<Key, HookStats> = BTreeMap::new();
    let mut buckets: BTreeMap<Key, Vec<(f64, f64)>> = BTreeMap::new();
    for (name, labels, value) in text.lines().filter_map(sample) {
        let key = (labels.get("controller").unwrap_or(&"").to_string(), labels.get("hook").unwrap_or(&"").to_string());
        if key.0.is_empty() || key.1.is_empty() {
            continue; // not a hook's (queue depth, reconciles)
        }
        let entry = stats.entry(key.clone()).or_insert_with(|| HookStats {
            controller: key.0.clone(),
            hook: key.1.clone(),
            ..Default::default()
        });
        match name {
            "uc_hook_duration_seconds_count" => entry.calls = value,
            "uc_hook_errors_total" | "uc_hook_errors" => entry.errors = value,
            "uc_hook_duration_seconds_bucket" => {
                let le = labels.get("le").copied().unwrap_or("+Inf");
                let bound = if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap_or(f64::INFINITY) };
                buckets.entry(key).or_default().push((bound, value));
            }
            _ => {}
        }
    }
    stats
        .into_iter()
        .map(|(key, mut s)| {
            if let Some(b) = buckets.get_mut(&key) {
                b.sort_by(|x, y| x.0.total_cmp(&y.0));
                s.p50 = quantile(0.5, b);
                s.p99 = quantile(0.99, b);
            }
            s.error_rate = if s.calls > 0.0 { s.errors / s.calls } else { 0.0 };
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP uc_hook_duration_seconds Hook call latency.
# TYPE uc_hook_duration_seconds histogram
uc_hook_duration_seconds_sum{controller="etcd-operator",hook="sync"} 0.5
uc_hook_duration_seconds_count{controller="etcd-operator",hook="sync"} 100
uc_hook_duration_seconds_bucket{le="0.001",controller="etcd-operator",hook="sync"} 0
uc_hook_duration_seconds_bucket{le="0.01",controller="etcd-operator",hook="sync"} 90
uc_hook_duration_seconds_bucket{le="0.1",controller="etcd-operator",hook="sync"} 100
uc_hook_duration_seconds_bucket{le="+Inf",controller="etcd-operator",hook="sync"} 100
uc_hook_errors_total{controller="etcd-operator",hook="sync"} 5
uc_queue_depth{controller="etcd-operator"} 0
"#;

    #[test]
    fn quantiles_rates_and_counts_per_hook() {
        let s = hook_stats(TEXT);
        assert_eq!(s.len(), 1, "{s:?}");
        let h = &s[0];
        assert_eq!((h.controller.as_str(), h.hook.as_str(), h.calls, h.errors), ("etcd-operator", "sync", 100.0, 5.0));
        assert!((h.error_rate - 0.05).abs() < 1e-9);
        // The 50th call is in (0.001, 0.01], 49/90 of the way: as histogram_quantile interpolates.
        let p50 = h.p50.unwrap();
        assert!((p50 - (0.001 + 0.009 * 50.0 / 90.0)).abs() < 1e-9, "{p50}");
        let p99 = h.p99.unwrap();
        assert!((p99 - (0.01 + 0.09 * 9.0 / 10.0)).abs() < 1e-9, "{p99}");
    }

    #[test]
    fn no_calls_no_quantiles() {
        assert_eq!(quantile(0.5, &[(0.1, 0.0), (f64::INFINITY, 0.0)]), None);
        assert_eq!(quantile(0.5, &[]), None);
        assert_eq!(quantile(0.99, &[(0.1, 1.0), (f64::INFINITY, 10.0)]), Some(0.1), "beyond the last finite bound");
        assert!(hook_stats("garbage\n{}\n").is_empty());
    }
}
