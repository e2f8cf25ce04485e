//! Containers as processes that outlive the node agent, the way containers outlive a kubelet.
//!
//! Each run of a container is started through a shim (`uc shim`, [`shim`]): a small process in a
//! session of its own that starts the container's process in a process group of its own, writes its
//! output to the run's log, and records how it ended. The shim holds an exclusive lock on the
//! container's `lock` file for as long as it lives, so:
//! - the lock being held means "this container is running": a restarted node re-adopts it instead
//!   of starting a second copy, and the shim itself refuses to start when another one holds it;
//! - the lock being released means "the run is over": the node learns of the end by taking the lock,
//!   whether it started the shim or adopted it, and reads the exit code the shim wrote.
//!
//! Files of one container, under `<pods dir>/<pod uid>/<container>/`:
//! `lock`; `state.json` (the node's: which run is current, the last exit, whether the container is
//! done); `<run>.pid` and `<run>.exit` (the shim's); `<run>.log` (the run's output, CRI format).

pub mod shim;

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rustix::process::{Pid, Signal};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncBufReadExt;

/// What the shim records once the container's process is started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PidRecord {
    /// The shim's pid.
    pub shim: i32,
    /// The container's main process (also its process group).
    pub pid: i32,
    /// The process's start time in clock ticks since boot (`/proc/<pid>/stat`), telling it apart
    /// from a later process that reuses the pid.
    pub pid_start: u64,
    /// When it started.
    pub started_at: String,
}

/// How a run ended, as the shim records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitRecord {
    /// The exit code (128 + the signal for a process killed by one, as shells report it).
    pub exit_code: i64,
    /// When it ended.
    pub finished_at: String,
}

/// The last exit of a container: code, started, finished.
pub type Exit = (i64, DateTime<Utc>, DateTime<Utc>);

/// What the node remembers of a container across its own restarts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// The current (or last) run; also the container's restart count.
    pub run: u32,
    /// The image of that run.
    pub image: String,
    /// The last run that ended: exit code, started, finished (RFC 3339).
    pub last_exit: Option<(i64, String, String)>,
    /// Finished for good (the restart policy keeps it stopped).
    pub done: bool,
    /// The node stopped it while shutting down cleanly: it runs again when the node is back, whatever
    /// its restart policy (a node that was switched off does not fail its pods).
    pub stopped_by_node: bool,
}

impl State {
    /// The last exit, parsed.
    pub fn last_exit(&self) -> Option<Exit> {
        let (code, s, f) = self.last_exit.as_ref()?;
        Some((*code, parse_time(s)?, parse_time(f)?))
    }
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc))
}

fn format_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// A running run of a container.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// Which run (the restart count).
    pub n: u32,
    /// What the shim recorded.
    pub pid: PidRecord,
    /// When it started.
    pub started: DateTime<Utc>,
}

/// Writes `data` to `path` atomically (a temporary file renamed over it), so that a crash leaves the
/// old content or the new, never half of one.
pub fn write_atomic(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path)
}

/// The start time of a live process (clock ticks since boot), None if there is no such process.
pub fn process_start(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields resume after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is the state (field 3); a zombie has ended already.
    if fields.first() == Some(&"Z") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// Whether the process a record names still runs (the same process, not a later one with its pid).
pub fn still_running(record: &PidRecord) -> bool {
    process_start(record.pid) == Some(record.pid_start)
}

/// The name a process runs under (`/proc/<pid>/comm`).
fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// The pids whose parent is `pid` (its own threads' children).
pub fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .collect()
}

/// The process group a container's graceful stop signal goes to: the recorded process's, or for a
/// sandboxed container (whose recorded process is bubblewrap's, outside) the group bubblewrap's init
/// leads inside — its command's. bubblewrap itself would end at SIGTERM and take the sandbox down at
/// once, before the command could stop cleanly.
pub fn stop_group(pid: i32) -> i32 {
    // `nsenter --pid` (a debug container in its target's PID namespace) waits for bubblewrap below it.
    let pid = if comm(pid) == "nsenter" { children(pid).first().copied().unwrap_or(pid) } else { pid };
    if comm(pid) != "bwrap" {
        return pid;
    }
    // A sandbox still starting has no group of its own inside yet: its command has not run, and the
    // whole sandbox stops (a signal to a group that does not exist yet would be lost).
    match children(pid).first() {
        Some(&init) if process_group(init) == Some(init) => init,
        _ => pid,
    }
}

/// The process group a process is in (`/proc/<pid>/stat`, field 5).
fn process_group(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(2)?.parse().ok()
}

/// The container's command: the recorded process, or in a sandbox the one bubblewrap's init runs (below
/// the `nsenter` that entered another PID namespace for it, if one did).
pub fn command_process(pid: i32) -> i32 {
    let mut p = pid;
    for _ in 0..3 {
        if !matches!(comm(p).as_str(), "bwrap" | "nsenter") {
            return p;
        }
        match children(p).first() {
            Some(c) => p = *c,
            None => return p,
        }
    }
    p
}

/// Whether the container's command has started: in a sandbox, bubblewrap has set it up and handed
/// over (the command process is no longer `bwrap` or the `nsenter` above it), so that an exec entering
/// its namespaces finds its root. A process that is gone counts as started (its exit is what follows).
pub fn command_started(pid: i32) -> bool {
    !matches!(comm(command_process(pid)).as_str(), "bwrap" | "nsenter")
}

/// Sends `signal` to a process group; a group that is gone is not an error.
pub fn signal_group(pgid: i32, signal: Signal) {
    if let Some(pid) = Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

/// One container's directory.
#[derive(Clone, Debug)]
pub struct ContainerDir {
    path: PathBuf,
}

impl ContainerDir {
    /// The directory of container `name` of the pod whose directory is `pod_dir`.
    pub fn new(pod_dir: &Path, name: &str) -> ContainerDir {
        ContainerDir { path: pod_dir.join(name) }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock the container's shim holds.
    pub fn lock_path(&self) -> PathBuf {
        self.path.join("lock")
    }

    /// The log of run `n`.
    pub fn log(&self, n: u32) -> PathBuf {
        self.path.join(format!("{n}.log"))
    }

    pub(crate) fn pid_path(&self, n: u32) -> PathBuf {
        self.path.join(format!("{n}.pid"))
    }

    fn exit_path(&self, n: u32) -> PathBuf {
        self.path.join(format!("{n}.exit"))
    }

    /// The FIFO a container with `stdin: true` reads from (attach writes into it).
    pub fn stdin_fifo(&self) -> PathBuf {
        self.path.join("stdin")
    }

    /// The node's record of the container.
    pub fn state(&self) -> Option<State> {
        serde_json::from_slice(&std::fs::read(self.path.join("state.json")).ok()?).ok()
    }

    /// Records the node's state of the container.
    pub fn write_state(&self, state: &State) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.path)?;
        write_atomic(&self.path.join("state.json"), &serde_json::to_vec(state).unwrap_or_default())
    }

    /// What the shim of run `n` recorded when the process started.
    pub fn pid(&self, n: u32) -> Option<PidRecord> {
        serde_json::from_slice(&std::fs::read(self.pid_path(n)).ok()?).ok()
    }

    /// How run `n` ended, if its shim saw it end.
    pub fn exit(&self, n: u32) -> Option<ExitRecord> {
        serde_json::from_slice(&std::fs::read(self.exit_path(n)).ok()?).ok()
    }

    /// Whether a shim holds the container's lock (the container runs).
    pub fn locked(&self) -> bool {
        let Ok(f) =
            std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(self.lock_path())
        else {
            return false;
        };
        match f.try_lock() {
            Ok(()) => false,
            Err(std::fs::TryLockError::WouldBlock) => true,
            Err(std::fs::TryLockError::Error(_)) => false,
        }
    }

    /// Removes what is left of runs older than `keep_from` (their logs and records), keeping the
    /// previous run's log for `kubectl logs --previous`.
    pub fn prune(&self, keep_from: u32) {
        let Ok(entries) = std::fs::read_dir(&self.path) else { return };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some((n, _)) = name.split_once('.') else { continue };
            if n.parse::<u32>().is_ok_and(|n| n < keep_from) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// What to start a container with.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// The environment (the whole of it: nothing else is inherited).
    pub env: Vec<(String, String)>,
    /// Working directory on the machine (None: the node's).
    pub cwd: Option<PathBuf>,
    /// Give the container a stdin to attach to.
    pub stdin: bool,
}

/// Why a run of a container did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("creating {}: {source}", dir.display())]
    Dir { dir: PathBuf, source: std::io::Error },
    /// Its lock is held: a process of the container runs (or its shim is letting go of the lock).
    #[error("the container is running already")]
    Running,
    #[error("starting the shim {}: {source}", shim.display())]
    Shim { shim: PathBuf, source: std::io::Error },
    /// The shim's own `error: ...` line (the command could not be run).
    #[error("{0}")]
    Refused(String),
    #[error("the shim did not start the container ({0:?})")]
    NoAnswer(String),
    #[error("the shim recorded no process")]
    NoRecord,
}

/// Starts run `n` of a container through its shim; returns once the container's process runs.
/// Refuses when the container runs already (its lock is held): never two processes for one container.
pub async fn start(shim: &Path, dir: &ContainerDir, n: u32, spec: &Spec) -> Result<Run, StartError> {
    std::fs::create_dir_all(dir.path()).map_err(|source| StartError::Dir { dir: dir.path().to_path_buf(), source })?;
    if dir.locked() {
        return Err(StartError::Running);
    }
    let _ = std::fs::remove_file(dir.exit_path(n));
    let mut cmd = tokio::process::Command::new(shim);
    cmd.arg("shim").arg("--dir").arg(dir.path()).arg("--run").arg(n.to_string());
    if spec.stdin {
        cmd.arg("--stdin");
    }
    cmd.arg("--").args(&spec.argv).env_clear().envs(spec.env.iter().cloned());
    if let Some(d) = &spec.cwd {
        cmd.current_dir(d);
    }
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().map_err(|source| StartError::Shim { shim: shim.to_path_buf(), source })?;
    let out = child.stdout.take().ok_or_else(|| StartError::NoAnswer(String::new()))?;
    // The shim says `started <pid>` once the process runs, or `error: ...` and exits.
    let mut line = String::new();
    let mut reader = tokio::io::BufReader::new(out);
    let _ = tokio::time::timeout(Duration::from_secs(30), reader.read_line(&mut line)).await;
    let line = line.trim_end().to_string();
    // The shim is the node's child only until the node restarts: reap it when it ends.
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    if let Some(e) = line.strip_prefix("error: ") {
        return Err(StartError::Refused(e.to_string()));
    }
    if !line.starts_with("started ") {
        return Err(StartError::NoAnswer(line));
    }
    adopt(dir, n).await.ok_or(StartError::NoRecord)
}

/// The running run `n` of a container whose shim holds its lock (after a restart of the node).
pub async fn adopt(dir: &ContainerDir, n: u32) -> Option<Run> {
    // The shim writes its record right after starting the process; give it a moment.
    for _ in 0..50 {
        if let Some(pid) = dir.pid(n) {
            let started = parse_time(&pid.started_at).unwrap_or_else(Utc::now);
            return Some(Run { n, pid, started });
        }
        if !dir.locked() {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    None
}

/// Waits for run `n` to end (its shim releases the lock) and says how it ended. A shim that died
/// without recording the exit (killed itself) leaves the exit unknown: reported as 137, and whatever
/// is left of the container's processes is killed, so that a new run never meets an old one.
pub async fn wait(dir: &ContainerDir, run: &Run) -> (i64, DateTime<Utc>) {
    let lock = dir.lock_path();
    let _ = tokio::task::spawn_blocking(move || {
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&lock)?;
        f.lock()
    })
    .await;
    match dir.exit(run.n) {
        Some(e) => (e.exit_code, parse_time(&e.finished_at).unwrap_or_else(Utc::now)),
        None => {
            kill_leftovers(&run.pid).await;
            (137, Utc::now())
        }
    }
}

/// Kills the container process of a record and its group, if they still run.
pub async fn kill_leftovers(record: &PidRecord) {
    for _ in 0..100 {
        if !still_running(record) {
            return;
        }
        signal_group(record.pid, Signal::KILL);
        if let Some(pid) = Pid::from_raw(record.pid) {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// RFC 3339 with nanoseconds, as the records hold times.
pub fn time_string(t: DateTime<Utc>) -> String {
    format_time(t)
}

/// A stand-in for a container that runs, for tests: what a shim leaves after the node went.
#[cfg(test)]
pub(crate) mod stand_in {
    use super::*;

    /// A container running as a shim leaves it after the node went: a process holding the container's
    /// lock (here `flock`), its command in a process group of its own, and the records.
    pub(crate) fn running(pod_dir: &Path, name: &str) -> (Reaped, PidRecord) {
        let dir = ContainerDir::new(pod_dir, name);
        dir.write_state(&State::default()).unwrap();
        let shim = std::process::Command::new("flock")
            .arg(dir.lock_path())
            .args(["setsid", "sleep", "1000"])
            .spawn()
            .expect("util-linux's flock");
        let shim_pid = shim.id() as i32;
        let command = loop {
            let found = children(shim_pid)
                .into_iter()
                .find(|&c| std::fs::read_to_string(format!("/proc/{c}/comm")).is_ok_and(|comm| comm.trim() == "sleep"));
            if let Some(pid) = found.filter(|&p| process_start(p).is_some()) {
                break pid;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let record = PidRecord {
            shim: shim_pid,
            pid: command,
            pid_start: process_start(command).unwrap(),
            started_at: time_string(Utc::now()),
        };
        std::fs::write(dir.pid_path(0), serde_json::to_vec(&record).unwrap()).unwrap();
        assert!(dir.locked() && still_running(&record));
        (Reaped(shim, record.pid), record)
    }

    /// The stand-in shim, its command killed (were it left running) and both reaped when the test ends.
    pub(crate) struct Reaped(std::process::Child, i32);

    impl Drop for Reaped {
        fn drop(&mut self) {
            signal_group(self.1, Signal::KILL);
            let _ = self.0.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_start_tells_a_process_from_a_later_one() {
        let me = std::process::id() as i32;
        assert_eq!(process_group(me), Some(rustix::process::getpgrp().as_raw_nonzero().get()));
        assert_eq!(stop_group(me), me, "not a sandbox: its own group");
        let start = process_start(me).expect("this process has a start time");
        let record = PidRecord { shim: me, pid: me, pid_start: start, started_at: String::new() };
        assert!(still_running(&record));
        assert!(!still_running(&PidRecord { pid_start: start + 1, ..record.clone() }), "same pid, another process");
        assert!(process_start(i32::MAX).is_none());
    }

    #[test]
    fn state_round_trips_and_prune_keeps_the_previous_run() {
        let tmp = std::env::temp_dir().join(format!("uc-container-test-{}", std::process::id()));
        let dir = ContainerDir::new(&tmp, "c");
        assert!(dir.state().is_none());
        let state = State {
            run: 3,
            image: "etcd".into(),
            last_exit: Some((1, "2026-01-01T00:00:00Z".into(), "2026-01-01T00:00:01Z".into())),
            ..Default::default()
        };
        dir.write_state(&state).unwrap();
        assert_eq!(dir.state(), Some(state.clone()));
        assert_eq!(state.last_exit().unwrap().0, 1);
        for n in 0..4 {
            std::fs::write(dir.log(n), "x").unwrap();
        }
        dir.prune(2);
        assert!(!dir.log(0).exists() && !dir.log(1).exists());
        assert!(dir.log(2).exists() && dir.log(3).exists());
        assert!(dir.path().join("state.json").exists());
        assert!(!dir.locked(), "nobody holds the lock");
        let held = std::fs::File::open(dir.lock_path()).unwrap();
        held.lock().unwrap();
        assert!(dir.locked());
        drop(held);
        assert!(!dir.locked());
        let _ = std::fs::remove_dir_all(tmp);
    }
}
