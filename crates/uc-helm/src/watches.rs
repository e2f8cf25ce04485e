//! The Operator SDK's `watches.yaml` for Helm operators: one entry per custom resource kind, naming the
//! chart that renders it and how it is reconciled.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::HelmError;
use serde::Deserialize;
use serde_json::Value as Json;

/// One entry, as the SDK reads it (defaults applied).
#[derive(Clone, Debug, PartialEq)]
pub struct Watch {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The chart's directory (or `.tgz`), relative paths resolved against the watches file's directory.
    pub chart: PathBuf,
    /// Whether the release's resources are watched (a changed or deleted one is put back): default true.
    pub watch_dependent_resources: bool,
    /// Values set over the custom resource's spec, `$ENV` expanded (`image.repository: $RELATED_IMAGE`).
    pub override_values: BTreeMap<String, String>,
    /// How often a custom resource is reconciled without a change (`1m`, `30s`).
    pub reconcile_period: Option<String>,
    pub max_concurrent_reconciles: Option<u32>,
    /// A label selector on the custom resources (matchLabels/matchExpressions).
    pub selector: Option<Json>,
}

impl Watch {
    /// `group/version` (or `version` for the core group).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Entry {
    #[serde(default)]
    group: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    chart: String,
    watch_dependent_resources: Option<bool>,
    #[serde(default)]
    override_values: BTreeMap<String, String>,
    reconcile_period: Option<String>,
    max_concurrent_reconciles: Option<u32>,
    selector: Option<Json>,
}

/// The entries of a watches file's text; `dir` resolves relative chart paths, `env` expands `$VAR`.
pub fn parse(text: &str, dir: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Watch>, HelmError> {
    let entries: Vec<Entry> =
        serde_yaml_ng::from_str(text).map_err(|e| HelmError::from(format!("invalid watches file: {e}")))?;
    let mut out: Vec<Watch> = Vec::new();
    for (i, e) in entries.into_iter().enumerate() {
        let gvk = format!("{}/{}, Kind={}", e.group, e.version, e.kind);
        if e.version.is_empty() {
            return Err(HelmError::from(format!("invalid GVK: {gvk}: version must not be empty")));
        }
        if e.kind.is_empty() {
            return Err(HelmError::from(format!("invalid GVK: {gvk}: kind must not be empty")));
        }
        if e.chart.is_empty() {
            return Err(HelmError::from(format!("watches[{i}].chart: a chart is required for {gvk}")));
        }
        if out.iter().any(|w| w.group == e.group && w.version == e.version && w.kind == e.kind) {
            return Err(HelmError::from(format!("duplicate GVK: {gvk}")));
        }
        // As the SDK reads it (a metav1.Duration): Go's grammar, here never negative.
        if let Some(p) = e.reconcile_period.as_deref().filter(|p| uc_api::controller::parse_go_duration(p).is_err()) {
            return Err(HelmError::from(format!("watches[{i}].reconcilePeriod: invalid duration {p:?}")));
        }
        let chart = PathBuf::from(&e.chart);
        out.push(Watch {
            group: e.group,
            version: e.version,
            kind: e.kind,
            chart: if chart.is_absolute() { chart } else { dir.join(chart) },
            watch_dependent_resources: e.watch_dependent_resources.unwrap_or(true),
            override_values: e.override_values.into_iter().map(|(k, v)| (k, expand_env(&v, env))).collect(),
            reconcile_period: e.reconcile_period,
            max_concurrent_reconciles: e.max_concurrent_reconciles,
            selector: e.selector,
        });
    }
    Ok(out)
}

/// Go's `os.ExpandEnv`: `$VAR` and `${VAR}` replaced, unset ones by nothing.
pub fn expand_env(s: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, used) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            (&after[..end], end)
        };
        if used == 0 {
            out.push('$');
            rest = after;
            continue;
        }
        out.push_str(&env(name).unwrap_or_default());
        rest = &after[used..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "IMG").then(|| "quay.io/x/memcached:1.6".to_string())
    }

    #[test]
    fn the_sdks_watches_file_as_written() {
        let text = "# Use the 'create api' subcommand to add watches to this file.\n- group: cache.example.com\n  version: v1alpha1\n  kind: Memcached\n  chart: helm-charts/memcached\n# +kubebuilder:scaffold:watch\n";
        let w = parse(text, Path::new("/opt/op"), &env).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].api_version(), "cache.example.com/v1alpha1");
        assert_eq!(w[0].chart, PathBuf::from("/opt/op/helm-charts/memcached"));
        assert!(w[0].watch_dependent_resources);
    }

    #[test]
    fn overrides_expand_the_environment_and_bad_entries_are_refused() {
        let text = "- {version: v1, kind: K, chart: c, watchDependentResources: false, overrideValues: {image: $IMG, tag: '${IMG}-x', none: $UNSET}, reconcilePeriod: 30s, maxConcurrentReconciles: 4}\n";
        let w = &parse(text, Path::new("/d"), &env).unwrap()[0];
        assert_eq!(w.override_values["image"], "quay.io/x/memcached:1.6");
        assert_eq!(w.override_values["tag"], "quay.io/x/memcached:1.6-x");
        assert_eq!(w.override_values["none"], "");
        assert!(!w.watch_dependent_resources);
        assert_eq!((w.reconcile_period.as_deref(), w.max_concurrent_reconciles), (Some("30s"), Some(4)));
        assert!(
            parse("- {kind: K, chart: c}", Path::new("/"), &env).unwrap_err().0.contains("version must not be empty")
        );
        for period in ["soon", "30", "-1m", ""] {
            let text = format!("- {{version: v1, kind: K, chart: c, reconcilePeriod: '{period}'}}");
            let e = parse(&text, Path::new("/"), &env).unwrap_err();
            assert_eq!(e.0, format!("watches[0].reconcilePeriod: invalid duration {period:?}"));
        }
        let dup = "- {group: g, version: v1, kind: K, chart: c}\n- {group: g, version: v1, kind: K, chart: d}\n";
        assert!(parse(dup, Path::new("/"), &env).unwrap_err().0.contains("duplicate GVK: g/v1, Kind=K"));
        assert!(
            parse("- {version: v1, kind: K, chart: c, role: r}", Path::new("/"), &env)
                .unwrap_err()
                .0
                .contains("unknown field `role`")
        );
    }
}
