//! Exec hooks: any program as a hook (the role the Operator SDK's Ansible and Helm operators play). The
//! request JSON goes to its stdin, its stdout is the response, its stderr goes to uc's log; it runs with
//! a timeout (killed when it passes) and optionally an address-space limit (`ulimit -v` through `sh`). A
//! non-zero exit, a timeout or an answer that is not JSON is a failed call: nothing changes.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uc_api::controller::{Exec, parse_duration};

use super::protocol::{HookError, HookKind};

/// Largest answer read from a hook.
const MAX_OUTPUT: usize = 64 << 20;
/// Most stderr kept for the log and the error.
const MAX_STDERR: usize = 16 << 10;

/// An exec hook.
pub struct ExecHook {
    argv: Vec<String>,
    timeout: Duration,
    working_dir: Option<String>,
    label: String,
}

impl ExecHook {
    /// From the spec, for controller `label`.
    pub fn new(spec: &Exec, label: &str) -> Result<Self, HookError> {
        if spec.command.first().is_none_or(|p| p.is_empty()) {
            return Err(HookError::Config("exec.command needs a program".into()));
        }
        let timeout = match &spec.timeout {
            Some(t) => parse_duration(t).map_err(|e| HookError::Config(e.to_string()))?,
            None => Duration::from_secs(10),
        };
        let argv = match spec.memory_limit_mi_b {
            Some(mib) => {
                let mut a =
                    vec!["sh".into(), "-c".into(), r#"ulimit -v "$1" && shift && exec "$@""#.into(), "sh".into()];
                a.push((mib.saturating_mul(1024)).to_string());
                a.extend(spec.command.iter().cloned());
                a
            }
            None => spec.command.clone(),
        };
        Ok(Self { argv, timeout, working_dir: spec.working_dir.clone(), label: label.to_string() })
    }

    /// Runs the program with the request.
    pub async fn call<T: serde::Serialize + ?Sized>(&self, kind: HookKind, request: &T) -> Result<Value, HookError> {
        let input = serde_json::to_vec(request).map_err(|e| HookError::InvalidResponse(e.to_string()))?;
        let mut cmd = tokio::process::Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..])
            .env("UC_HOOK", kind.as_str())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(dir) = &self.working_dir {
            cmd.current_dir(dir);
        }
        let mut child = cmd.spawn().map_err(|e| HookError::Unreachable(format!("starting {:?}: {e}", self.argv[0])))?;
        let (mut stdin, mut stdout, mut stderr) = (
            child.stdin.take().expect("piped"),
            child.stdout.take().expect("piped"),
            child.stderr.take().expect("piped"),
        );
        let run = async {
            // Writing and reading at once: a program may answer before it has read everything.
            let write = async move {
                let _ = stdin.write_all(&input).await;
                drop(stdin);
            };
            let read_out = async {
                let mut out = Vec::new();
                let _ = (&mut stdout).take(MAX_OUTPUT as u64 + 1).read_to_end(&mut out).await;
                out
            };
            let read_err = async {
                let mut err = Vec::new();
                let _ = (&mut stderr).take(MAX_STDERR as u64).read_to_end(&mut err).await;
                err
            };
            let ((), out, err) = tokio::join!(write, read_out, read_err);
            let status = child.wait().await;
            (status, out, err)
        };
        let (status, out, err) =
            tokio::time::timeout(self.timeout, run).await.map_err(|_| HookError::Timeout(self.timeout))?;
        let err = String::from_utf8_lossy(&err);
        for line in err.lines().filter(|l| !l.trim().is_empty()) {
            tracing::info!(target: "uc_engine::hook", controller = %self.label, hook = kind.as_str(), "{line}");
        }
        let status = status.map_err(|e| HookError::Unreachable(format!("waiting for {:?}: {e}", self.argv[0])))?;
        if !status.success() {
            let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
            let code = status.code().map(|c| format!("exit status {c}")).unwrap_or_else(|| "killed by a signal".into());
            return Err(HookError::Script(format!(
                "{} ended with {code}: {last}",
                self.argv.last().cloned().unwrap_or_default()
            )));
        }
        if out.len() > MAX_OUTPUT {
            return Err(HookError::InvalidResponse("the answer is larger than 64 MiB".into()));
        }
        serde_json::from_slice(&out).map_err(|e| HookError::InvalidResponse(format!("the answer is not JSON: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hook(command: &[&str], timeout: &str) -> ExecHook {
        let spec = Exec {
            command: command.iter().map(|s| s.to_string()).collect(),
            timeout: Some(timeout.into()),
            ..Default::default()
        };
        ExecHook::new(&spec, "test").unwrap()
    }

    #[tokio::test]
    async fn the_request_goes_in_and_the_answer_comes_out() {
        let h = hook(
            &[
                "sh",
                "-c",
                r#"read line; echo "{\"children\": [], \"status\": {\"hook\": \"$UC_HOOK\", \"len\": ${#line}}}""#,
            ],
            "5s",
        );
        let out = h.call(HookKind::Finalize, &json!({"a": 1})).await.unwrap();
        assert_eq!(out, json!({"children": [], "status": {"hook": "finalize", "len": 7}}));
    }

    #[tokio::test]
    async fn failures_say_why() {
        let e =
            hook(&["sh", "-c", "echo broken >&2; exit 3"], "5s").call(HookKind::Sync, &json!({})).await.unwrap_err();
        assert!(e.to_string().contains("exit status 3: broken"), "{e}");
        let e = hook(&["sh", "-c", "echo not json"], "5s").call(HookKind::Sync, &json!({})).await.unwrap_err();
        assert!(matches!(e, HookError::InvalidResponse(_)), "{e}");
        let e = hook(&["sleep", "10"], "200ms").call(HookKind::Sync, &json!({})).await.unwrap_err();
        assert!(matches!(e, HookError::Timeout(_)), "{e}");
        let e = hook(&["/nonexistent/program"], "1s").call(HookKind::Sync, &json!({})).await.unwrap_err();
        assert!(e.to_string().contains("/nonexistent/program"), "{e}");
        assert!(ExecHook::new(&Exec::default(), "x").is_err());
    }

    #[tokio::test]
    async fn a_memory_limit_stops_a_hungry_program() {
        let spec = Exec {
            command: vec!["sh".into(), "-c".into(), "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo '{}'".into()],
            timeout: Some("20s".into()),
            memory_limit_mi_b: Some(32),
            ..Default::default()
        };
        let e = ExecHook::new(&spec, "x").unwrap().call(HookKind::Sync, &json!({})).await.unwrap_err();
        assert!(e.to_string().contains("ended with"), "{e}");
    }
}
