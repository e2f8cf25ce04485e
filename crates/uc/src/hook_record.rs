//! `uc hook show NAME` and `uc hook record NAME DIR`: the hook calls a running engine recorded for a
//! controller (annotated `universalcontroller.njuics.cn/record-hooks: "N"`), read from the engine's
//! `/debug/hooks/NAME` (beside its metrics; `uc up` writes that address to `<data-dir>/metrics-address`).
//! `record` saves each answered call as a `uc hook test` case: `DIR/tests/<case>/request.json` and the
//! answer as `expected.json`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The data directory of the `uc up` to ask: `--data-dir`, else the directory of the first file of
/// `$KUBECONFIG` if `uc up` wrote its engine's address there, else `.uc`.
pub fn data_dir(asked: Option<PathBuf>, kubeconfig: Option<std::ffi::OsString>) -> PathBuf {
    let of_kubeconfig = || {
        let first = std::env::split_paths(&kubeconfig?).next()?;
        let dir = first.parent()?.to_path_buf();
        dir.join("metrics-address").is_file().then_some(dir)
    };
    asked.or_else(of_kubeconfig).unwrap_or_else(|| PathBuf::from(".uc"))
}

/// Where the engine serves its metrics: `--engine`, else what `uc up` wrote in the data directory.
pub fn engine_address(engine: Option<String>, data_dir: &Path) -> anyhow::Result<String> {
    if let Some(e) = engine {
        return Ok(e.trim_start_matches("http://").trim_end_matches('/').to_string());
    }
    let file = data_dir.join("metrics-address");
    let text = std::fs::read_to_string(&file).with_context(|| {
        format!("reading {} (is `uc up` running there? or pass --engine HOST:PORT)", file.display())
    })?;
    Ok(text.trim().trim_start_matches("http://").to_string())
}

/// The bearer token to show the engine: `--token`, else the one of `uc up`'s kubeconfig in the data
/// directory (the engine asks the cluster whether it may read `/debug/hooks`).
pub fn engine_token(token: Option<String>, data_dir: &Path) -> Option<String> {
    token.or_else(|| {
        let text = std::fs::read_to_string(data_dir.join("kubeconfig")).ok()?;
        let config: Value = serde_yaml_ng::from_str(&text).ok()?;
        let named = |list: &str, name: &str| config[list].as_array()?.iter().find(|e| e["name"] == name).cloned();
        let context = named("contexts", config["current-context"].as_str()?)?;
        let user = named("users", context["context"]["user"].as_str()?)?;
        user["user"]["token"].as_str().map(str::to_string)
    })
}

/// GETs a path of the engine's endpoint; the body of a 200.
async fn get(address: &str, token: Option<&str>, path: &str) -> anyhow::Result<String> {
    let mut tcp = tokio::net::TcpStream::connect(address)
        .await
        .with_context(|| format!("connecting to the engine at {address}"))?;
    let authorization = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    tcp.write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n{authorization}\r\n").as_bytes()).await?;
    let mut raw = Vec::new();
    tcp.read_to_end(&mut raw).await?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").context("the engine's answer has no body")?;
    let status = head.split_whitespace().nth(1).unwrap_or_default();
    if status != "200" {
        bail!("the engine answered {status} for {path}: {}", body.trim());
    }
    Ok(body.to_string())
}

/// The recorded calls of a controller, oldest first.
pub async fn records(address: &str, token: Option<&str>, controller: &str) -> anyhow::Result<Vec<Value>> {
    let body = get(address, token, &format!("/debug/hooks/{controller}")).await.map_err(|e| {
        e.context(format!(
            "no records of {controller:?}: annotate it with universalcontroller.njuics.cn/record-hooks=<N>"
        ))
    })?;
    let list: Value = serde_json::from_str(&body).context("the engine's records are not JSON")?;
    Ok(list.as_array().cloned().unwrap_or_default())
}

/// Prints the calls: one line each, then the request and the answer (`full`) or a summary.
pub fn show(records: &[Value], full: bool) -> String {
    let mut out = String::new();
    for r in records {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
        let ms = r.get("durationSeconds").and_then(Value::as_f64).unwrap_or(0.0) * 1000.0;
        let outcome = match (r.get("response"), r.get("error")) {
            (Some(resp), _) => summary(resp),
            (_, Some(e)) => format!("error: {}", e.as_str().unwrap_or_default()),
            _ => String::new(),
        };
        out.push_str(&format!("{} {} {} ({ms:.1} ms): {outcome}\n", s("time"), s("hook"), s("parent")));
        if full {
            for k in ["request", "response"] {
                if let Some(v) = r.get(k) {
                    out.push_str(&format!("  {k}: {}\n", serde_json::to_string_pretty(v).unwrap_or_default()));
                }
            }
        }
    }
    if records.is_empty() {
        out.push_str("no calls recorded yet\n");
    }
    out
}

/// A one-line summary of an answer: how many children (or attachments) of which kinds.
fn summary(response: &Value) -> String {
    let list = response.get("children").or_else(|| response.get("attachments")).and_then(Value::as_array);
    let mut kinds: Vec<String> =
        list.into_iter().flatten().filter_map(|c| c.get("kind").and_then(Value::as_str).map(str::to_string)).collect();
    kinds.sort();
    let n = kinds.len();
    kinds.dedup();
    let status = if response.get("status").is_some_and(|s| !s.is_null()) { ", status" } else { "" };
    format!("{n} children ({}){status}", kinds.join(", "))
}

/// A case directory's name for a record: the hook, the parent and the time, in file-name characters.
fn case_name(record: &Value, i: usize) -> String {
    let s = |k: &str| record.get(k).and_then(Value::as_str).unwrap_or_default();
    let raw = format!("{:03}-{}-{}", i, s("hook"), s("parent"));
    raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect()
}

/// Writes the answered calls as test cases under `dir/tests`; returns the case directories.
pub fn save(records: &[Value], dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let (Some(request), Some(response)) = (r.get("request"), r.get("response")) else { continue };
        let case = dir.join("tests").join(case_name(r, i));
        std::fs::create_dir_all(&case).with_context(|| format!("creating {}", case.display()))?;
        for (file, v) in [("request.json", request), ("expected.json", response)] {
            let text = serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
            std::fs::write(case.join(file), text).with_context(|| format!("writing {}", case.join(file).display()))?;
        }
        written.push(case);
    }
    Ok(written)
}

/// Serves a fixed body once, as the engine would: for tests of `get`.
#[cfg(test)]
async fn one_answer(status: &'static str, body: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 1024];
        let _ = tcp.read(&mut buf).await;
        let resp = format!("HTTP/1.0 {status}\r\ncontent-length: {}\r\n\r\n{body}", body.len());
        let _ = tcp.write_all(resp.as_bytes()).await;
    });
    address
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_directory_is_asked_for_else_that_of_kubeconfig_when_uc_up_wrote_it() {
        let up = tempfile::tempdir().unwrap();
        std::fs::write(up.path().join("metrics-address"), "127.0.0.1:1").unwrap();
        let kubeconfig = |dir: &Path| Some(std::env::join_paths([dir.join("kubeconfig"), "/else".into()]).unwrap());
        assert_eq!(data_dir(Some("mine".into()), kubeconfig(up.path())), PathBuf::from("mine"));
        assert_eq!(data_dir(None, kubeconfig(up.path())), up.path());
        let other = tempfile::tempdir().unwrap();
        assert_eq!(data_dir(None, kubeconfig(other.path())), PathBuf::from(".uc"), "not a directory uc up wrote");
        assert_eq!(data_dir(None, None), PathBuf::from(".uc"));
    }
    use serde_json::json;

    fn recorded() -> Vec<Value> {
        vec![
            json!({"time": "2026-11-24T08:00:00.000Z", "hook": "sync", "parent": "default/hi", "durationSeconds": 0.002,
                   "request": {"parent": {"metadata": {"name": "hi"}}},
                   "response": {"status": {"ready": 1}, "children": [{"kind": "Pod"}, {"kind": "Pod"}, {"kind": "Service"}]}}),
            json!({"time": "2026-11-24T08:00:01.000Z", "hook": "sync", "parent": "default/hi", "durationSeconds": 0.001,
                   "request": {}, "error": "hook answered HTTP 500: boom"}),
        ]
    }

    #[test]
    fn calls_are_shown_and_saved_as_cases() {
        let text = show(&recorded(), false);
        assert!(text.contains("sync default/hi (2.0 ms): 3 children (Pod, Service), status"), "{text}");
        assert!(text.contains("error: hook answered HTTP 500: boom"));
        assert!(show(&recorded(), true).contains("\"ready\": 1"));
        let dir = tempfile::tempdir().unwrap();
        let cases = save(&recorded(), dir.path()).unwrap();
        assert_eq!(cases.len(), 1, "a failed call has no answer to expect");
        assert!(cases[0].ends_with("tests/000-sync-default-hi"));
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(cases[0].join("expected.json")).unwrap()).unwrap();
        assert_eq!(expected["status"]["ready"], 1);
    }

    #[tokio::test]
    async fn records_are_read_from_the_engine() {
        let address = one_answer("200 OK", r#"[{"hook": "sync"}]"#).await;
        assert_eq!(records(&address, None, "c").await.unwrap(), vec![json!({"hook": "sync"})]);
        let address = one_answer("404 Not Found", "no such controller").await;
        let e = records(&address, None, "c").await.unwrap_err();
        assert!(format!("{e:#}").contains("record-hooks"), "{e:#}");
    }

    #[test]
    fn the_token_is_the_flag_or_the_current_users_of_the_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(engine_token(None, dir.path()), None, "no kubeconfig, no token");
        let config = "apiVersion: v1\nkind: Config\ncurrent-context: b\ncontexts:\n- name: a\n  context: {user: x}\n\
                      - name: b\n  context: {user: y}\nusers:\n- name: x\n  user: {token: tx}\n- name: y\n  user: {token: ty}\n";
        std::fs::write(dir.path().join("kubeconfig"), config).unwrap();
        assert_eq!(engine_token(None, dir.path()).as_deref(), Some("ty"));
        assert_eq!(engine_token(Some("given".into()), dir.path()).as_deref(), Some("given"));
    }
}
