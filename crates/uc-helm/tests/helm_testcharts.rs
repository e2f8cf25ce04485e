//! Conformance with Helm: every test chart of Helm's own command tests (helm/helm
//! `pkg/cmd/testdata/testcharts`, vendored in `testdata/helm-testcharts/charts`) rendered as
//! `helm template release-name <chart>` renders it, against what Helm v3.17.3 printed
//! (`testdata/helm-testcharts/expected`: stdout, stderr, exit code; testdata/README.md).
//!
//! A chart passes when uc prints the same bytes, or fails where Helm fails with the same message.
//! The pass count is reported in docs/sdk-operators.md; it may only go up.

mod common;

use std::path::Path;

use common::helm_error;
use uc_helm::error::HelmError;
use uc_helm::gotemplate::Value;
use uc_helm::{Chart, Options, Release};

/// Charts that pass today: raising it is progress, lowering it a regression.
const PASSING_AT_LEAST: usize = 32;

fn outcome(dir: &Path) -> Result<String, HelmError> {
    let chart = Chart::load_dir(dir).map_err(|e| e.to_string())?;
    let options =
        Options { release: Release { name: "release-name".into(), ..Release::default() }, ..Options::default() };
    uc_helm::template(&chart, &Value::Nil, &options, false)
}

#[test]
fn helms_own_test_charts_render_as_helm_prints_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/helm-testcharts");
    let mut names: Vec<String> = std::fs::read_dir(root.join("charts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let (mut passed, mut failures) = (Vec::new(), Vec::new());
    for name in &names {
        let read = |ext: &str| {
            std::fs::read_to_string(root.join("expected").join(format!("{name}.{ext}"))).unwrap_or_default()
        };
        let helm_ok = read("rc").trim() == "0";
        let got = outcome(&root.join("charts").join(name));
        let verdict = match (&got, helm_ok) {
            (Ok(out), true) if *out == read("out") => Ok(()),
            (Err(e), false) if helm_error(&read("err")) == e.as_str().trim_end() => Ok(()),
            (Ok(out), true) => Err(format!("output differs:\n{out}")),
            (Ok(_), false) => Err(format!("helm fails: {}", read("err").trim())),
            (Err(e), true) => Err(format!("uc fails: {e}")),
            (Err(e), false) => Err(format!("both fail; helm: {} / uc: {e}", read("err").trim())),
        };
        match verdict {
            Ok(()) => passed.push(name.clone()),
            Err(why) => failures.push(format!("{name}: {why}")),
        }
    }
    eprintln!("{} of {} Helm test charts as Helm prints them; passing: {passed:?}", passed.len(), names.len());
    for f in &failures {
        eprintln!("--- {f}");
    }
    assert!(passed.len() >= PASSING_AT_LEAST, "{} passed, fewer than {PASSING_AT_LEAST}", passed.len());
}
