//! Metrics a playbook declares with `osdk_metric` (operator_sdk.util): counters, gauges, histograms and
//! summaries by name, changed by the operations the module posts, shown in Prometheus' text format as
//! the SDK's operator exports them.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Why a role's metric update does not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MetricError(pub String);

impl From<String> for MetricError {
    fn from(message: String) -> Self {
        MetricError(message)
    }
}

impl From<&str> for MetricError {
    fn from(message: &str) -> Self {
        MetricError(message.to_string())
    }
}

impl From<MetricError> for String {
    fn from(e: MetricError) -> String {
        e.0
    }
}

/// Prometheus' default histogram buckets (client_golang's `DefBuckets`).
const BUCKETS: [f64; 11] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Clone, Debug, PartialEq)]
enum Metric {
    Counter(f64),
    Gauge(f64),
    /// Observations: per-bucket counts, sum, count.
    Histogram(Vec<u64>, f64, u64),
    Summary(f64, u64),
}

impl Metric {
    fn type_name(&self) -> &'static str {
        match self {
            Metric::Counter(_) => "counter",
            Metric::Gauge(_) => "gauge",
            Metric::Histogram(..) => "histogram",
            Metric::Summary(..) => "summary",
        }
    }
}

/// One metric's value, for an exporter.
#[derive(Clone, Debug, PartialEq)]
pub enum Sample {
    Counter(f64),
    Gauge(f64),
    /// Cumulative buckets (upper bound, observations at or under it), sum, count.
    Histogram(Vec<(f64, u64)>, f64, u64),
    /// Sum, count.
    Summary(f64, u64),
}

/// The playbooks' metrics, and the operator's own about its runs.
#[derive(Debug, Default)]
pub struct Registry {
    metrics: BTreeMap<String, (String, Metric)>,
    /// The SDK's `ansible_operator_reconcile_result{GVK, result}`.
    results: BTreeMap<(String, &'static str), u64>,
    /// The SDK's `ansible_operator_reconciles{GVK}`: cumulative buckets, sum, count.
    durations: BTreeMap<String, (Vec<u64>, f64, u64)>,
}

/// A histogram's observations: cumulative buckets (upper bound, count at or under it), sum, count.
pub type Observed = (Vec<(f64, u64)>, f64, u64);

/// The SDK's label of a kind: `cache.example.com/v1alpha1, Kind=Memcached`.
pub fn gvk_label(api_version: &str, kind: &str) -> String {
    format!("{api_version}, Kind={kind}")
}

/// Go's `%v` of a float: integers without a fraction, others shortest.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e21 { format!("{}", v as i64) } else { format!("{v}") }
}

/// What `osdk_metric` posts, as the SDK's `UserMetric` reads it: a metric's name and description, and
/// the operation on one of its four types.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct Post {
    pub name: Option<String>,
    pub description: Option<String>,
    pub counter: Option<Operation>,
    pub gauge: Option<Operation>,
    pub histogram: Option<Operation>,
    pub summary: Option<Operation>,
}

/// An operation on a metric (the fields its type reads; the SDK's `UserMetricCounter`, `…Gauge`,
/// `…Histogram`, `…Summary` in one). Every field may be absent or null, as Go's decoder allows.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct Operation {
    pub increment: Option<bool>,
    pub decrement: Option<bool>,
    pub add: Option<f64>,
    pub subtract: Option<f64>,
    pub set: Option<f64>,
    pub set_to_current_time: Option<bool>,
    pub observe: Option<f64>,
}

impl Operation {
    fn increment(&self) -> f64 {
        f64::from(u8::from(self.increment == Some(true)))
    }

    fn decrement(&self) -> f64 {
        f64::from(u8::from(self.decrement == Some(true)))
    }
}

impl Registry {
    /// Applies one post (`{name, description, counter|gauge|histogram|summary: {operation}}`); `now`:
    /// seconds since the epoch, for `set_to_current_time`.
    pub fn apply(&mut self, post: &Post, now: f64) -> Result<(), MetricError> {
        let name = post.name.as_deref().filter(|n| !n.is_empty()).ok_or("a metric needs a name")?;
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            return Err(MetricError::from(format!("{name:?} is not a valid metric name")));
        }
        let description = post.description.clone().unwrap_or_default();
        let ops = [
            ("counter", &post.counter),
            ("gauge", &post.gauge),
            ("histogram", &post.histogram),
            ("summary", &post.summary),
        ];
        let (kind, op) = ops
            .into_iter()
            .find_map(|(k, op)| op.as_ref().map(|op| (k, op)))
            .ok_or("one of counter, gauge, histogram and summary is required")?;
        let fresh = match kind {
            "counter" => Metric::Counter(0.0),
            "gauge" => Metric::Gauge(0.0),
            "histogram" => Metric::Histogram(vec![0; BUCKETS.len()], 0.0, 0),
            _ => Metric::Summary(0.0, 0),
        };
        let entry = self.metrics.entry(name.to_string()).or_insert_with(|| (description, fresh.clone()));
        if entry.1.type_name() != fresh.type_name() {
            return Err(MetricError::from(format!("{name} is a {}, not a {kind}", entry.1.type_name())));
        }
        match &mut entry.1 {
            Metric::Counter(v) => {
                let add = op.add.unwrap_or(0.0) + op.increment();
                if add < 0.0 {
                    return Err(MetricError::from(format!("counter {name} cannot decrease")));
                }
                *v += add;
            }
            Metric::Gauge(v) => {
                if let Some(s) = op.set {
                    *v = s;
                }
                if op.set_to_current_time == Some(true) {
                    *v = now;
                }
                *v += op.add.unwrap_or(0.0) - op.subtract.unwrap_or(0.0);
                *v += op.increment() - op.decrement();
            }
            Metric::Histogram(buckets, sum, count) => {
                if let Some(x) = op.observe {
                    for (b, le) in buckets.iter_mut().zip(BUCKETS) {
                        *b += u64::from(x <= le);
                    }
                    (*sum, *count) = (*sum + x, *count + 1);
                }
            }
            Metric::Summary(sum, count) => {
                if let Some(x) = op.observe {
                    (*sum, *count) = (*sum + x, *count + 1);
                }
            }
        }
        Ok(())
    }

    /// A run of a watch's role or playbook: whether it succeeded, how long it took.
    pub fn record_run(&mut self, gvk: &str, succeeded: bool, seconds: f64) {
        *self.results.entry((gvk.to_string(), if succeeded { "succeeded" } else { "failed" })).or_default() += 1;
        let (buckets, sum, count) =
            self.durations.entry(gvk.to_string()).or_insert_with(|| (vec![0; BUCKETS.len()], 0.0, 0));
        for (b, le) in buckets.iter_mut().zip(BUCKETS) {
            *b += u64::from(seconds <= le);
        }
        (*sum, *count) = (*sum + seconds, *count + 1);
    }

    /// Runs by kind and result (`succeeded`, `failed`).
    pub fn run_results(&self) -> Vec<(String, String, u64)> {
        self.results.iter().map(|((g, r), n)| (g.clone(), r.to_string(), *n)).collect()
    }

    /// Run durations by kind.
    pub fn run_durations(&self) -> Vec<(String, Observed)> {
        self.durations
            .iter()
            .map(|(g, (b, sum, count))| {
                (g.clone(), (BUCKETS.iter().copied().zip(b.iter().copied()).collect(), *sum, *count))
            })
            .collect()
    }

    /// Every metric: name, description, value.
    pub fn samples(&self) -> Vec<(String, String, Sample)> {
        let sample = |m: &Metric| match m {
            Metric::Counter(v) => Sample::Counter(*v),
            Metric::Gauge(v) => Sample::Gauge(*v),
            Metric::Histogram(b, sum, count) => {
                Sample::Histogram(BUCKETS.iter().copied().zip(b.iter().copied()).collect(), *sum, *count)
            }
            Metric::Summary(sum, count) => Sample::Summary(*sum, *count),
        };
        self.metrics.iter().map(|(n, (h, m))| (n.clone(), h.clone(), sample(m))).collect()
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        for (name, (help, m)) in &self.metrics {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {}\n", m.type_name()));
            match m {
                Metric::Counter(v) | Metric::Gauge(v) => out.push_str(&format!("{name} {}\n", number(*v))),
                Metric::Histogram(buckets, sum, count) => {
                    for (b, le) in buckets.iter().zip(BUCKETS) {
                        out.push_str(&format!("{name}_bucket{{le=\"{}\"}} {b}\n", number(le)));
                    }
                    out.push_str(&format!("{name}_bucket{{le=\"+Inf\"}} {count}\n"));
                    out.push_str(&format!("{name}_sum {}\n{name}_count {count}\n", number(*sum)));
                }
                Metric::Summary(sum, count) => {
                    out.push_str(&format!("{name}_sum {}\n{name}_count {count}\n", number(*sum)))
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn runs_by_kind_and_result() {
        let mut r = Registry::default();
        let gvk = gvk_label("cache.example.com/v1alpha1", "Memcached");
        assert_eq!(gvk, "cache.example.com/v1alpha1, Kind=Memcached");
        r.record_run(&gvk, true, 3.0);
        r.record_run(&gvk, true, 7.0);
        r.record_run(&gvk, false, 0.2);
        assert_eq!(r.run_results(), vec![(gvk.clone(), "failed".into(), 1), (gvk.clone(), "succeeded".into(), 2)]);
        let (_, (buckets, sum, count)) = &r.run_durations()[0];
        assert_eq!((*sum, *count), (10.2, 3));
        assert_eq!(buckets.iter().find(|(le, _)| *le == 5.0).unwrap().1, 2, "0.2 s and 3 s at or under 5 s");
    }

    fn post(v: serde_json::Value) -> Post {
        serde_json::from_value(v).unwrap()
    }

    /// The operations the SDK's memcached-molecule sample posts, and what its test expects to read.
    #[test]
    fn the_molecule_samples_metrics() {
        let mut r = Registry::default();
        let posts = [
            json!({"name": "sanity_counter", "description": "d", "counter": {}}),
            json!({"name": "sanity_histogram", "description": "d", "histogram": {}}),
            json!({"name": "sanity_summary", "description": "d", "summary": {}}),
            json!({"name": "counter_inc_test", "description": "d", "counter": {"increment": true}}),
            json!({"name": "counter_add_test", "description": "d", "counter": {"add": 2}}),
            json!({"name": "gauge_set_test", "description": "d", "gauge": {"set": 5}}),
            json!({"name": "gauge_sub_test", "description": "d", "gauge": {"subtract": 7}}),
            json!({"name": "gauge_time_test", "description": "d", "gauge": {"set_to_current_time": true}}),
            json!({"name": "summary_test", "description": "d", "summary": {"observe": 2}}),
            json!({"name": "histogram_test", "description": "d", "histogram": {"observe": 2}}),
        ];
        for p in posts {
            r.apply(&post(p), 1764361234.5).unwrap();
        }
        let text = r.encode();
        for want in [
            "sanity_counter 0",
            "sanity_histogram_bucket",
            "# TYPE sanity_summary summary",
            "counter_inc_test 1",
            "counter_add_test 2",
            "gauge_set_test 5",
            "gauge_sub_test -7",
            "gauge_time_test 1764361234.5",
            "summary_test_sum 2",
            "histogram_test_sum 2",
            "histogram_test_bucket{le=\"2.5\"} 1",
            "histogram_test_bucket{le=\"1\"} 0",
        ] {
            assert!(text.contains(want), "{want} in\n{text}");
        }
        let samples = r.samples();
        let hist = samples.iter().find(|(n, ..)| n == "histogram_test").unwrap();
        assert_eq!(hist.2, Sample::Histogram(BUCKETS.iter().map(|&le| (le, u64::from(le >= 2.0))).collect(), 2.0, 1));
        let refused = |r: &mut Registry, p| r.apply(&post(p), 0.0).unwrap_err().0;
        assert!(refused(&mut r, json!({"name": "counter_add_test", "gauge": {}})).contains("is a counter"));
        assert!(refused(&mut r, json!({"name": "x y", "counter": {}})).contains("not a valid metric name"));
        assert!(refused(&mut r, json!({"name": "c", "counter": {"add": -1}})).contains("cannot decrease"));
        assert!(refused(&mut r, json!({"name": "n"})).contains("one of counter"));
        // A value of the wrong type does not read, as the SDK's typed UserMetric does not.
        assert!(serde_json::from_value::<Post>(json!({"name": "g", "gauge": {"set": "five"}})).is_err());
        // Null is no value, as Go's decoder reads it.
        r.apply(&post(json!({"name": "g", "description": null, "gauge": {"increment": null, "add": 3}})), 0.0).unwrap();
        assert!(r.encode().contains("g 3"), "{}", r.encode());
    }
}
