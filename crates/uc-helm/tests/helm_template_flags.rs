//! Conformance with Helm's `template` command tests that take flags (helm/helm `pkg/cmd/template_test.go`:
//! `--set`, `--values`/`-f`, `--kube-version`, `--api-versions`, `--include-crds`, `--show-only`,
//! `--skip-tests`), on Helm's own test charts, against what Helm v3.17.3 printed for the same command
//! lines (`testdata/helm-template-flags/`: `cases.txt`, and per case stdout, stderr, exit code).

use std::collections::BTreeMap;
mod common;

use std::path::Path;

use common::helm_error;
use uc_helm::error::HelmError;
use uc_helm::gotemplate::Value;
use uc_helm::{Chart, Flags, Options, Release};

/// `top` over `base`: maps merged key by key, anything else replaced.
fn overlay(base: &Value, top: &Value) -> Value {
    match (base, top) {
        (Value::Map(b), Value::Map(t)) => {
            let mut out: BTreeMap<String, Value> = b.borrow().clone();
            for (k, v) in t.borrow().iter() {
                let merged = match out.get(k) {
                    Some(old) => overlay(old, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::from(out)
        }
        _ => top.clone(),
    }
}

/// `helm template` of `args` (`<chart> [flags]`) run in `charts`.
fn template(charts: &Path, args: &[&str]) -> Result<String, HelmError> {
    let chart = Chart::load_dir(&charts.join(args[0])).map_err(|e| e.to_string())?;
    let (mut files, mut sets, mut flags) = (Value::from(BTreeMap::new()), serde_json::json!({}), Flags::default());
    let mut options =
        Options { release: Release { name: "release-name".into(), ..Release::default() }, ..Options::default() };
    let mut rest = args[1..].iter();
    while let Some(flag) = rest.next() {
        let mut arg = || rest.next().copied().ok_or_else(|| HelmError(format!("{flag} needs a value")));
        match *flag {
            "--set" => uc_helm::strvals::parse_into(arg()?, &mut sets)?,
            "--values" | "-f" => {
                let text = std::fs::read(charts.join(arg()?)).map_err(|e| e.to_string())?;
                files = overlay(&files, &Value::from_json(&uc_helm::chart::yaml_doc(&text)?, false));
            }
            "--kube-version" => options.capabilities.kube_version = format!("v{}", arg()?.trim_start_matches('v')),
            "--api-versions" => options.capabilities.api_versions.extend(arg()?.split(',').map(str::to_string)),
            "--include-crds" => flags.include_crds = true,
            "--skip-tests" => flags.skip_tests = true,
            "--show-only" => flags.show_only.push(arg()?.to_string()),
            other => return Err(HelmError(format!("unknown flag {other}"))),
        }
    }
    let values = overlay(&files, &Value::from_json(&sets, true));
    uc_helm::template_with(&chart, &values, &options, &flags)
}

#[test]
fn helms_template_flag_cases_print_as_helm_prints_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let cases = std::fs::read_to_string(root.join("helm-template-flags/cases.txt")).unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    for line in cases.lines().filter(|l| !l.trim().is_empty()) {
        let (name, args) = line.split_once('\t').unwrap();
        count += 1;
        let read = |ext: &str| std::fs::read_to_string(root.join(format!("helm-template-flags/{name}.{ext}"))).unwrap();
        let got = template(&root.join("helm-testcharts/charts"), &args.split(' ').collect::<Vec<_>>());
        match (got, read("rc").trim() == "0") {
            (Ok(out), true) if out == read("out") => {}
            (Err(e), false) if e.as_str().trim_end() == helm_error(&read("err")) => {}
            (Ok(out), _) => failures.push(format!("{name}: got\n{out}\nwant\n{}{}", read("out"), read("err"))),
            (Err(e), _) => failures.push(format!("{name}: uc fails: {e}\nhelm: {}", read("err"))),
        }
    }
    assert!(count >= 15, "the cases");
    assert!(failures.is_empty(), "{} of {count} differ:\n{}", failures.len(), failures.join("\n"));
}
