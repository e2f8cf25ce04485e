//! Helm charts rendered in-process, as the Operator SDK's Helm operators render them: a chart loaded
//! ([`chart`]), its values coalesced ([`values`]), its templates executed by Go's `text/template`
//! ([`gotemplate`]) with Sprig's ([`sprig`]) and Helm's functions ([`render`]), and the result cut into
//! manifests in install order ([`manifests`]) — byte for byte what `helm template` prints.

pub mod chart;
pub mod create;
pub mod error;
pub mod gotemplate;
pub mod ignore;
pub mod json;
pub mod manifests;
pub mod objects;
pub mod operator;
pub mod release;
pub mod render;
pub mod schema;
pub mod sprig;
pub mod status;
pub mod strvals;
pub mod toml;
pub mod values;
pub mod watches;
pub mod yaml;

use crate::error::HelmError;
use std::collections::BTreeMap;

pub use chart::Chart;
pub use render::{Options, Release, RenderError};

/// The stack a render needs at most: templates nest up to [`gotemplate::exec::MAX_DEPTH`] deep (Helm's
/// limit), a few kilobytes each. Renders run on threads of this size ([`on_render_thread`]).
pub const RENDER_STACK: usize = 256 << 20;

/// Runs `f` (a render) on a thread with [`RENDER_STACK`] of stack, so that the deepest nesting a chart
/// or a resource's `tpl` input can reach fails with Helm's error instead of overflowing the caller's.
pub fn on_render_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, HelmError> {
    std::thread::Builder::new()
        .name("uc-helm-render".into())
        .stack_size(RENDER_STACK)
        .spawn(f)
        .map_err(|e| HelmError::from(format!("starting a render: {e}")))?
        .join()
        .map_err(|_| HelmError::from("the render failed unexpectedly"))
}

/// A chart rendered for a release: what Helm keeps of it.
#[derive(Clone, Debug)]
pub struct Rendering {
    /// The manifests in install order, as a release keeps them (`---\n# Source: …\n<doc>\n` each).
    pub manifest: String,
    /// The manifests' documents, in install order.
    pub objects: Vec<manifests::Manifest>,
    /// The hooks (`helm.sh/hook`), in install order.
    pub hooks: Vec<manifests::Manifest>,
    /// The chart's rendered `NOTES.txt`.
    pub notes: String,
}

/// Renders the chart for a release with the user's values, as `helm install` does before applying.
pub fn manifest(chart: &Chart, user_values: &gotemplate::Value, options: &Options) -> Result<Rendering, HelmError> {
    check_dependencies(chart)?;
    let values = values::coalesce(chart, user_values);
    if let Some(e) = chart.values_failures(&values.to_json()) {
        return Err(HelmError::from(format!(
            "values don't meet the specifications of the schema(s) in the following chart(s):\n{e}"
        )));
    }
    let mut files = render::render(chart, &values, options).map_err(|e| HelmError::from(e.to_string()))?;
    let root_notes = format!("{}/templates/NOTES.txt", chart.name());
    let notes = files.get(&root_notes).cloned().unwrap_or_default();
    files.retain(|k, _| !k.ends_with("/templates/NOTES.txt"));
    let (objects, hooks) = manifests::sort(&files).map_err(|e| HelmError::from(e.to_string()))?;
    let manifest = manifests::template_output(&objects, &[], false);
    Ok(Rendering { manifest, objects, hooks, notes })
}

/// What `helm template <release> <chart>` prints for these user values (`--skip-tests` when asked).
pub fn template(
    chart: &Chart,
    user_values: &gotemplate::Value,
    options: &Options,
    skip_tests: bool,
) -> Result<String, HelmError> {
    template_with(chart, user_values, options, &Flags { skip_tests, ..Flags::default() })
}

/// The flags of `helm template` that shape its output.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    pub skip_tests: bool,
    pub include_crds: bool,
    /// `--show-only` patterns (template paths in the chart, globs).
    pub show_only: Vec<String>,
}

/// The CRD files of a chart and its subcharts, by their paths as Helm names them.
fn crd_files(chart: &Chart, path: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> =
        chart.crds().map(|f| (format!("{path}/{}", f.name), String::from_utf8_lossy(&f.data).into_owned())).collect();
    for sub in &chart.dependencies {
        out.extend(crd_files(sub, &format!("{path}/charts/{}", sub.name())));
    }
    out
}

/// What `helm template <release> <chart>` prints with these flags.
pub fn template_with(
    chart: &Chart,
    user_values: &gotemplate::Value,
    options: &Options,
    flags: &Flags,
) -> Result<String, HelmError> {
    let r = manifest(chart, user_values, options)?;
    let mut text = String::new();
    if flags.include_crds {
        for (path, data) in crd_files(chart, chart.name()) {
            text.push_str(&format!("---\n# Source: {path}\n{data}\n"));
        }
    }
    text.push_str(&manifests::template_output(&r.objects, &r.hooks, flags.skip_tests));
    // `helm template` prints the manifests then the hooks, trimmed, with one newline.
    let out = format!("{}\n", text.trim());
    if flags.show_only.is_empty() { Ok(out) } else { manifests::show_only(&out, &flags.show_only) }
}

/// Files rendered by path, for callers that need them before sorting.
pub type Rendered = BTreeMap<String, String>;

/// Helm's `CheckDependencies`: every dependency `Chart.yaml` names must be in `charts/`.
pub fn check_dependencies(chart: &Chart) -> Result<(), HelmError> {
    let listed = chart.metadata.get("dependencies").and_then(serde_json::Value::as_array).cloned().unwrap_or_default();
    let missing: Vec<String> = listed
        .iter()
        .filter_map(|d| d.get("name").and_then(serde_json::Value::as_str))
        .filter(|name| !chart.dependencies.iter().any(|c| c.name() == *name))
        .map(str::to_string)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(HelmError::from(format!(
        "An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: {}",
        missing.join(", ")
    )))
}
