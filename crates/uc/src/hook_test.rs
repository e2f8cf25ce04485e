//! `uc hook test DIR`: runs a controller's sync hook — JavaScript in-process, an exec hook, or a webhook
//! URL, as its `controller.yaml` says — against recorded requests (`DIR/tests/<case>/request.json`) and
//! compares each answer with `expected.json` beside it; a difference is printed as a line diff and
//! makes the command fail (usable in CI). `--update` writes the answers as the expected files.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;
use uc_engine::hooks::{HookImpl, HookKind, native::NativeRegistry};

/// The sync (and finalize) hooks of the controller in `dir`.
fn load_hooks(dir: &Path) -> anyhow::Result<(HookImpl, Option<HookImpl>)> {
    let path = dir.join("controller.yaml");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let uc = serde_yaml_ng::Deserializer::from_str(&text)
        .filter_map(|d| serde::Deserialize::deserialize(d).ok())
        .find(|v: &Value| {
            matches!(
                v.get("kind").and_then(Value::as_str),
                Some("UniversalController" | "CompositeController" | "DecoratorController")
            )
        })
        .with_context(|| {
            format!("{} holds no UniversalController, CompositeController or DecoratorController", path.display())
        })?;
    let hooks: uc_api::controller::Hooks = serde_json::from_value(uc["spec"]["hooks"].clone())
        .with_context(|| format!("{}: spec.hooks", path.display()))?;
    let build = |which: &str, spec: &uc_api::controller::Hook| -> anyhow::Result<HookImpl> {
        let mut spec = spec.clone();
        let mut source = None;
        if let Some(js) = &spec.javascript
            && let Some(r) = js.secret_ref.as_ref().or(js.config_map_ref.as_ref())
        {
            // The ConfigMap is made from a file of this directory named after its key.
            let file = dir.join(&r.key);
            source =
                Some(std::fs::read_to_string(&file).with_context(|| {
                    format!("hooks.{which}: the source in {} is read from {}", r.name, file.display())
                })?);
        }
        if let Some(e) = spec.exec.as_mut()
            && e.working_dir.is_none()
        {
            e.working_dir = Some(dir.display().to_string());
        }
        // Offline: credentials written in the spec only (no Secrets to read).
        let credentials = match &spec.webhook {
            Some(w) => {
                let url = uc_engine::hooks::webhook::url_of(w).map_err(|e| anyhow::anyhow!("hooks.{which}: {e}"))?;
                futures::executor::block_on(uc_engine::hooks::credentials::resolve(None, w, &url, &[]))
                    .map_err(|e| anyhow::anyhow!("hooks.{which}.webhook: {e}"))?
            }
            None => Default::default(),
        };
        let natives = NativeRegistry::default();
        futures::executor::block_on(HookImpl::from_spec(
            &spec,
            source,
            credentials,
            (&natives, &uc_engine::hooks::sandbox::ExecPolicy::unconfined()),
            uc_engine::names::Resolver::system(),
            "hook-test",
        ))
        .map_err(|e| anyhow::anyhow!("hooks.{which}: {e}"))
    };
    let sync = build("sync", hooks.sync.as_ref().context("spec.hooks.sync is missing")?)?;
    let finalize = hooks.finalize.as_ref().map(|h| build("finalize", h)).transpose()?;
    Ok((sync, finalize))
}

/// The recorded cases: directories under `DIR/tests` with a `request.json`, by name.
fn cases(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let tests = dir.join("tests");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&tests)
        .with_context(|| format!("reading {}", tests.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("request.json").is_file())
        .collect();
    out.sort();
    Ok(out)
}

/// Runs every case; true when all answers are as expected.
pub async fn run(dir: &Path, update: bool) -> anyhow::Result<bool> {
    let (sync, finalize) = load_hooks(dir)?;
    let cases = cases(dir)?;
    if cases.is_empty() {
        bail!("no cases: put a request.json (and its expected.json) in {}/tests/<case>/", dir.display());
    }
    let mut failed = 0;
    for case in &cases {
        let name = case.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let request: Value = read_json(&case.join("request.json"))?;
        let finalizing = request.get("finalizing").and_then(Value::as_bool) == Some(true);
        let (hook, kind) = match (&finalize, finalizing) {
            (Some(f), true) => (f, HookKind::Finalize),
            _ => (&sync, HookKind::Sync),
        };
        let actual = match hook.call_json(kind, request).await {
            Ok(a) => a,
            Err(e) => {
                println!("FAIL {name}: the hook failed: {e}");
                failed += 1;
                continue;
            }
        };
        let expected_path = case.join("expected.json");
        if update {
            std::fs::write(&expected_path, pretty(&actual) + "\n")
                .with_context(|| format!("writing {}", expected_path.display()))?;
            println!("updated {name}");
            continue;
        }
        let expected: Value = read_json(&expected_path)?;
        if actual == expected {
            println!("ok   {name}");
        } else {
            failed += 1;
            println!("FAIL {name}: the answer differs from {} (- expected, + actual):", expected_path.display());
            for line in diff(&pretty(&expected), &pretty(&actual)) {
                println!("  {line}");
            }
        }
    }
    println!("{} case(s), {failed} failed", cases.len());
    Ok(failed == 0)
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// A line diff (longest common subsequence): unchanged lines with two spaces, removed with `-`, added
/// with `+`.
pub fn diff(a: &str, b: &str) -> Vec<String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            out.push(format!("  {}", a[i]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(format!("+ {}", b[j]));
            j += 1;
        } else {
            out.push(format!("- {}", a[i]));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_diff_marks_what_changed() {
        let d = diff("a\nb\nc", "a\nx\nc\nd");
        assert_eq!(d, ["  a", "+ x", "- b", "  c", "+ d"]);
        assert!(diff("same", "same").iter().all(|l| l.starts_with("  ")));
    }
}
