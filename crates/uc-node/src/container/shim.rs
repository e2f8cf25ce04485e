//! The container shim (`uc shim`): the parent of one run of one container, independent of the node
//! agent. It holds the container's lock while it lives, starts the process in a process group of its
//! own, writes its output as CRI log lines, forwards SIGTERM/SIGINT to the group, and once the main
//! process has exited kills whatever of the container is left (the group, and processes that left it
//! but, orphaned, were handed to the shim as their subreaper) and records the exit code.
//!
//! Plain threads and blocking I/O: a shim runs for as long as its container, so it stays small.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use rustix::process::{Pid, Signal, WaitOptions};

use super::{ContainerDir, ExitRecord, PidRecord, process_start, signal_group, time_string, write_atomic};
use crate::logs::{MAX_LINE, Stream, format_line};

/// Arguments of `uc shim`.
#[derive(Clone, Debug)]
pub struct Args {
    /// The container's directory.
    pub dir: PathBuf,
    /// The run number.
    pub run: u32,
    /// Give the process the container's stdin FIFO.
    pub stdin: bool,
    /// The program and its arguments.
    pub argv: Vec<String>,
}

/// Exit code of a shim that found its container running already.
pub const ALREADY_RUNNING: i32 = 75;

/// A container started by the shim: the lock held while it runs, its log, the process and its pid.
struct Started {
    lock: std::fs::File,
    log: Arc<Mutex<std::fs::File>>,
    child: std::process::Child,
    pid: i32,
}

/// Takes the container's lock, opens its log and stdin, starts the process and records it; an error
/// is the shim's exit code and what to say.
fn spawn(args: &Args, dir: &ContainerDir) -> Result<Started, (i32, String)> {
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.lock_path())
        .map_err(|e| (1, format!("opening {}: {e}", dir.lock_path().display())))?;
    if lock.try_lock().is_err() {
        return Err((ALREADY_RUNNING, "the container is running already".into()));
    }
    // Orphaned descendants of the container come to the shim, which can then end them with it.
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.log(args.run))
        .map_err(|e| (1, format!("opening the log: {e}")))?;
    let Some((program, rest)) = args.argv.split_first() else {
        return Err((1, "no command".into()));
    };
    let stdin = args.stdin.then(|| open_stdin(&dir.stdin_fifo())).transpose();
    let stdin = stdin.map_err(|e| (1, format!("the stdin FIFO: {e}")))?.map(Stdio::from).unwrap_or_else(Stdio::null);
    let mut child = Command::new(program)
        .args(rest)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| (1, format!("{program}: {e}")))?;
    let pid = child.id() as i32;
    let record = PidRecord {
        shim: std::process::id() as i32,
        pid,
        pid_start: process_start(pid).unwrap_or(0),
        started_at: time_string(Utc::now()),
    };
    if let Err(e) = write_atomic(&dir.pid_path(args.run), &serde_json::to_vec(&record).unwrap_or_default()) {
        signal_group(pid, Signal::KILL);
        let _ = child.wait();
        return Err((1, format!("recording the process: {e}")));
    }
    Ok(Started { lock, log: Arc::new(Mutex::new(log)), child, pid })
}

/// Runs the shim; returns its exit code. Everything it has to say before the container runs goes to
/// stdout as one line (`started <pid>` or `error: <why>`), read by the node.
pub fn main(args: Args) -> i32 {
    // A session of its own: no terminal's signals reach it, and the node's death leaves it running.
    let _ = rustix::process::setsid();
    let dir = ContainerDir { path: args.dir.clone() };
    let say = |line: &str| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    };
    let Started { lock, log, mut child, pid } = match spawn(&args, &dir) {
        Ok(started) => started,
        Err((code, why)) => {
            say(&format!("error: {why}"));
            return code;
        }
    };
    // Running, as a kubelet says it, once the sandbox is in place: an exec right after sees the
    // container's file system, not bubblewrap's half-built one.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !super::command_started(pid) && matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    say(&format!("started {pid}"));
    forward_signals(pid);
    let copiers: Vec<_> = [(child.stdout.take().map(|o| Box::new(o) as Box<dyn Read + Send>), Stream::Stdout)]
        .into_iter()
        .chain([(child.stderr.take().map(|e| Box::new(e) as Box<dyn Read + Send>), Stream::Stderr)])
        .filter_map(|(r, stream)| {
            let r = r?;
            let log = log.clone();
            Some(std::thread::spawn(move || copy_lines(r, stream, &log)))
        })
        .collect();
    let status = child.wait();
    let code = match status {
        Ok(s) => {
            use std::os::unix::process::ExitStatusExt;
            s.code().map(i64::from).or_else(|| s.signal().map(|sig| 128 + i64::from(sig))).unwrap_or(137)
        }
        Err(_) => 137,
    };
    let finished = Utc::now();
    // The container is its main process: what it leaves behind goes with it.
    end_descendants(pid);
    for c in copiers {
        let _ = c.join();
    }
    let exit = ExitRecord { exit_code: code, finished_at: time_string(finished) };
    let _ = write_atomic(&dir.exit_path(args.run), &serde_json::to_vec(&exit).unwrap_or_default());
    drop(lock);
    0
}

/// The container's stdin: a FIFO the shim opens for reading and writing, so it never blocks and a
/// writer that goes (an attach that ends) does not end the container's input.
fn open_stdin(path: &Path) -> std::io::Result<std::fs::File> {
    if !path.exists() {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )?;
    }
    std::fs::OpenOptions::new().read(true).write(true).open(path)
}

/// SIGTERM and SIGINT sent to the shim go to the container's process group (so that stopping the
/// shim stops the container gracefully); SIGHUP is ignored.
fn forward_signals(pgid: i32) {
    let Ok(mut signals) = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ]) else {
        return;
    };
    std::thread::spawn(move || {
        for s in signals.forever() {
            let forward = match s {
                signal_hook::consts::SIGTERM => Some(Signal::TERM),
                signal_hook::consts::SIGINT => Some(Signal::INT),
                _ => None,
            };
            if let Some(sig) = forward {
                signal_group(super::stop_group(pgid), sig);
            }
        }
    });
}

/// Copies one output stream into the log, a CRI line per line; a line longer than [`MAX_LINE`],
/// or the last one when it has no newline, is written in partial pieces.
fn copy_lines(r: Box<dyn Read + Send>, stream: Stream, log: &Mutex<std::fs::File>) {
    let mut r = BufReader::new(r);
    loop {
        let mut line = Vec::new();
        match r.by_ref().take(MAX_LINE as u64).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let complete = line.ends_with(b"\n");
        if complete {
            line.pop();
        }
        write_entry(log, stream, !complete, &line);
    }
}

fn write_entry(log: &Mutex<std::fs::File>, stream: Stream, partial: bool, content: &[u8]) {
    let line = format_line(Utc::now(), stream, partial, content);
    if let Ok(mut f) = log.lock() {
        let _ = f.write_all(&line);
    }
}

/// Kills the container's process group and every process handed to the shim as an orphan, until
/// the shim has no children left (bounded: a process that cannot be killed is left after 10 s).
fn end_descendants(pgid: i32) {
    let me = std::process::id() as i32;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        signal_group(pgid, Signal::KILL);
        let children = children_of(me);
        for c in &children {
            signal_group(*c, Signal::KILL);
            if let Some(p) = Pid::from_raw(*c) {
                let _ = rustix::process::kill_process(p, Signal::KILL);
            }
        }
        // Reap whatever has ended.
        while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
        if children.is_empty() || Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pids whose parent is `parent`.
fn children_of(parent: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return false };
            rest.split_whitespace().nth(1).and_then(|p| p.parse::<i32>().ok()) == Some(parent)
        })
        .collect()
}
