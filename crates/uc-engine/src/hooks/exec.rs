//! Exec hooks: any program as a hook (the role the Operator SDK's Ansible and Helm operators play). The
//! request JSON goes to its stdin, its stdout is the response, its stderr goes to uc's log; it runs with
//! a timeout and optionally an address-space limit (`ulimit -v` through `sh`). A non-zero exit, a
//! timeout or an answer that is not JSON is a failed call: nothing changes.
//!
//! Which programs may serve and whether they run confined is the engine operator's [`ExecPolicy`]
//! (by default any program, in the sandbox of [`super::sandbox`]). Whatever a hook starts ends with
//! it: the call's process group is killed when its main process ends or its timeout passes (and in
//! the sandbox its whole PID namespace goes).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uc_api::controller::{Exec, parse_duration};

use super::protocol::{HookError, HookKind};
use super::sandbox::{self, ExecPolicy};

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
    /// Confined: the sandbox's command line before the hook's argv, and its own environment.
    sandbox: Option<Vec<String>>,
}

impl ExecHook {
    /// From the spec, for controller `label`, as the engine's `policy` allows.
    pub fn new(spec: &Exec, label: &str, policy: &ExecPolicy) -> Result<Self, HookError> {
        let Some(program) = spec.command.first().filter(|p| !p.is_empty()) else {
            return Err(HookError::Config("exec.command needs a program".into()));
        };
        if !policy.programs.allows(program) {
            return Err(HookError::Config(format!(
                "exec.command: {program:?} may not serve as a hook on this engine (its --exec-hooks allows {})",
                match &policy.programs {
                    sandbox::Programs::Any => "any program".to_string(),
                    sandbox::Programs::Only(l) if l.is_empty() => "none".to_string(),
                    sandbox::Programs::Only(l) => l.join(", "),
                }
            )));
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
        let mut hook =
            Self { argv, timeout, working_dir: spec.working_dir.clone(), label: label.to_string(), sandbox: None };
        if policy.sandboxed {
            hook.confine(program, &spec.command[1..], &policy.hidden)?;
        }
        Ok(hook)
    }

    /// Runs the hook in the sandbox from now on: bwrap with the machine's system directories, the
    /// working directory and the program's installation, as an unprivileged user.
    fn confine(&mut self, program: &str, args: &[String], hidden: &[PathBuf]) -> Result<(), HookError> {
        let bwrap = sandbox::bwrap().ok_or_else(|| {
            HookError::Config(
                "exec hooks run sandboxed and bubblewrap (bwrap) is not installed: install it, or start uc \
                 with --exec-hooks-unconfined where uc itself runs confined"
                    .into(),
            )
        })?;
        let cwd = match &self.working_dir {
            Some(d) => PathBuf::from(d),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        };
        let path = std::env::var("PATH").unwrap_or_default();
        let resolved = sandbox::resolve(program, &cwd, &path)
            .ok_or_else(|| HookError::Unreachable(format!("exec.command: no program {program:?} on this machine")))?;
        let exists = |p: &Path| p.exists();
        let link = |p: &Path| std::fs::read_link(p).ok();
        let mut line = vec![bwrap.display().to_string()];
        // As nobody, a directory without read and search for others cannot be entered.
        let root = rustix::process::geteuid().is_root();
        let closed = |p: &Path| {
            use std::os::unix::fs::PermissionsExt;
            root && std::fs::metadata(p).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o005 != 0o005)
        };
        line.extend(sandbox::bwrap_args(&resolved, args, &cwd, hidden, &exists, &link, &closed));
        line.push("--".into());
        line.extend(sandbox::drop_root(root));
        // The hook's own argv with the program as resolved (the sandbox's PATH may not find it).
        if let Some(p) = self.argv.iter_mut().find(|a| *a == program) {
            *p = resolved.display().to_string();
        }
        self.sandbox = Some(line);
        Ok(())
    }

    /// Runs the program with the request.
    pub async fn call<T: serde::Serialize + ?Sized>(&self, kind: HookKind, request: &T) -> Result<Value, HookError> {
        let input = serde_json::to_vec(request).map_err(|e| HookError::InvalidResponse(e.to_string()))?;
        let line: Vec<&String> = self.sandbox.iter().flatten().chain(&self.argv).collect();
        let mut cmd = tokio::process::Command::new(line[0]);
        cmd.args(&line[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if self.sandbox.is_some() {
            // Nothing of uc's environment (its credentials) reaches a confined hook.
            cmd.env_clear().env("PATH", sandbox::SYSTEM_PATH).env("HOME", "/tmp").env("LANG", "C.UTF-8");
        }
        cmd.env("UC_HOOK", kind.as_str());
        if let Some(dir) = &self.working_dir {
            cmd.current_dir(dir);
        }
        let mut child = cmd.spawn().map_err(|e| HookError::Unreachable(format!("starting {:?}: {e}", self.argv[0])))?;
        let group = child.id().and_then(|pid| rustix::process::Pid::from_raw(pid as i32));
        // Whatever the hook started ends with it: at its end, at the timeout, or when the call is dropped.
        let _group = KillGroup(group);
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
            // Once the main process has ended, what it left behind goes, so that its output ends too.
            let wait = async {
                let status = child.wait().await;
                KillGroup(group).kill();
                status
            };
            let ((), out, err, status) = tokio::join!(write, read_out, read_err, wait);
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
            let last = super::protocol::excerpt(err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default());
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

/// A hook call's process group, killed when dropped.
struct KillGroup(Option<rustix::process::Pid>);

impl KillGroup {
    fn kill(&self) {
        if let Some(pid) = self.0 {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for KillGroup {
    fn drop(&mut self) {
        self.kill();
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
        ExecHook::new(&spec, "test", &ExecPolicy::unconfined()).unwrap()
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
        assert!(ExecHook::new(&Exec::default(), "x", &ExecPolicy::default()).is_err());
    }

    #[tokio::test]
    async fn a_memory_limit_stops_a_hungry_program() {
        let spec = Exec {
            command: vec!["sh".into(), "-c".into(), "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo '{}'".into()],
            timeout: Some("20s".into()),
            memory_limit_mi_b: Some(32),
            ..Default::default()
        };
        let e = ExecHook::new(&spec, "x", &ExecPolicy::unconfined())
            .unwrap()
            .call(HookKind::Sync, &json!({}))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("ended with"), "{e}");
    }

    /// Processes whose command line is exactly `cmdline` (arguments joined by spaces).
    fn running(cmdline: &str) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .filter(|c| String::from_utf8_lossy(c).replace('\0', " ").trim_end() == cmdline)
            .count()
    }

    async fn gone(cmdline: &str) -> bool {
        for _ in 0..100 {
            if running(cmdline) == 0 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    #[tokio::test]
    async fn what_a_hook_leaves_running_ends_with_it() {
        // Answering while a child runs on: the call returns at once and the child is gone.
        let h = hook(&["sh", "-c", "sleep 96.25 & echo '{}'"], "20s");
        let started = std::time::Instant::now();
        assert_eq!(h.call(HookKind::Sync, &json!({})).await.unwrap(), json!({}));
        assert!(started.elapsed() < Duration::from_secs(10), "not held by the child's open output");
        assert!(gone("sleep 96.25").await, "the child went with the hook");
        // Timed out with a child in the background: both go.
        let h = hook(&["sh", "-c", "sleep 96.5 & sleep 96.75"], "300ms");
        assert!(matches!(h.call(HookKind::Sync, &json!({})).await, Err(HookError::Timeout(_))));
        assert!(gone("sleep 96.5").await && gone("sleep 96.75").await, "nothing left after the timeout");
    }

    #[tokio::test]
    async fn a_confined_hook_is_unprivileged_and_sees_nothing_of_uc() {
        if sandbox::bwrap().is_none() {
            eprintln!("skipped: bubblewrap is not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("admin-token"), "secret").unwrap();
        let policy = ExecPolicy { hidden: vec![data.clone()], ..Default::default() };
        std::fs::write(dir.path().join("mine"), "seen").unwrap();
        let script = r#"printf '{"uid": %s, "token": "%s", "processes": %s, "wrote": "%s", "own": "%s"}' "$(id -u)" "$(cat data/admin-token 2>/dev/null)" "$(ls /proc | grep -c '^[0-9]')" "$(touch /usr/x 2>/dev/null && echo yes)" "$(cat mine)"; sleep 97.25 &"#;
        let spec = Exec {
            command: vec!["sh".into(), "-c".into(), script.into()],
            working_dir: Some(dir.path().display().to_string()),
            timeout: Some("20s".into()),
            ..Default::default()
        };
        let out = ExecHook::new(&spec, "x", &policy).unwrap().call(HookKind::Sync, &json!({})).await.unwrap();
        if rustix::process::geteuid().is_root() {
            assert_eq!(out["uid"], json!(sandbox::HOOK_UID), "{out}");
        }
        assert_eq!(out["token"], "", "uc's data directory is hidden: {out}");
        assert!(out["processes"].as_u64().unwrap() < 6, "its own processes only: {out}");
        assert_eq!(out["wrote"], "", "the system is read-only: {out}");
        assert_eq!(out["own"], "seen", "its working directory (under /tmp) is shown: {out}");
        assert!(gone("sleep 97.25").await, "its namespace's processes went with it");
        let refused = ExecPolicy { programs: sandbox::Programs::parse("jq"), ..Default::default() };
        let e = ExecHook::new(&spec, "x", &refused).err().expect("sh is not allowed");
        assert!(e.to_string().contains("may not serve as a hook") && e.to_string().contains("jq"), "{e}");
    }
}
