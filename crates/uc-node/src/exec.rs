//! `kubectl exec` and `kubectl attach` for containers that run as processes, over the WebSocket
//! remote-command protocols (`v5.channel.k8s.io` down to `channel.k8s.io`): every message starts with
//! a channel byte, 0 stdin, 1 stdout, 2 stderr, 3 the final status, 4 terminal resizes; v5 adds 255,
//! "the client closed this stream" (stdin's end). From v4 the status is a `metav1.Status`, with the
//! exit code of a command that failed as a `NonZeroExitCode` cause.
//!
//! A command runs in the container's mount namespace (so it sees the container's volumes, /etc/hosts
//! and resolv.conf) with its environment and working directory; a command naming one of the image's
//! programs (`etcdctl` in an etcd image) runs that program.

use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use uc_api::status::{Status, StatusCause, StatusDetails};

use crate::allowlist::AllowEntry;
use crate::ws::{Messages, Out, Socket};

/// What running a command in a container takes (pid filled in once it runs).
#[derive(Clone, Debug, Default)]
pub struct ExecTarget {
    /// The container's main process.
    pub pid: i32,
    /// The pod's IP (probes go there).
    pub ip: String,
    /// The container's environment.
    pub env: Vec<(String, String)>,
    /// The container's working directory, as it sees it.
    pub workdir: Option<String>,
    /// Its image's allowlist entry (which programs a command names).
    pub entry: AllowEntry,
    /// In its sandbox: the command that takes on the container's identity (`setpriv ... --`),
    /// run inside its namespaces; empty for a container without one.
    pub confine: Vec<String>,
}

/// The remote-command subprotocols served, in order of preference.
pub const PROTOCOLS: &[&str] = &[
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
    "base64.channel.k8s.io",
];

const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
const RESIZE: u8 = 4;
const CLOSE: u8 = 255;

/// Whether the container's process runs in a mount namespace of its own.
fn own_mount_namespace(pid: i32) -> bool {
    let ns = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/mnt")).ok();
    let theirs = ns(&pid.to_string());
    theirs.is_some() && theirs != ns("self")
}

/// Why an exec session could not run its command (sent to the client as the session's status).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("no command given")]
    NoCommand,
    #[error("allocating a terminal: {0}")]
    Terminal(std::io::Error),
    #[error("{command}: {source}")]
    Start { command: String, source: std::io::Error },
    #[error("waiting for the command: {0}")]
    Wait(std::io::Error),
}

/// The command that runs `argv` in a container: entering its namespaces (`nsenter`) when it has
/// them — in its sandbox, as its user — with its environment and working directory.
pub fn command(target: &ExecTarget, argv: &[String]) -> Result<tokio::process::Command, ExecError> {
    let (first, rest) = argv.split_first().ok_or(ExecError::NoCommand)?;
    let mut full = target.entry.tool(first).unwrap_or_else(|| vec![first.clone()]);
    full.extend(rest.iter().cloned());
    let mut cmd;
    if !target.confine.is_empty() {
        cmd = tokio::process::Command::new("nsenter");
        cmd.arg(format!("--target={}", crate::container::command_process(target.pid)))
            // nsenter opens a directory given to --wd before it enters: the command's own working
            // directory (the container's workingDir) is taken instead.
            .args(["--mount", "--pid", "--ipc", "--uts", "--net", "--root", "--wd"]);
        cmd.arg("--").args(&target.confine).args(&full);
    } else if own_mount_namespace(target.pid) {
        cmd = tokio::process::Command::new("nsenter");
        cmd.arg(format!("--target={}", target.pid)).arg("--mount");
        match &target.workdir {
            Some(d) => cmd.arg(format!("--wd={d}")),
            None => cmd.arg("--wd"),
        };
        cmd.arg("--").args(&full);
    } else {
        cmd = tokio::process::Command::new(&full[0]);
        cmd.args(&full[1..]);
        if let Some(d) = &target.workdir {
            cmd.current_dir(d);
        }
    }
    cmd.env_clear().envs(target.env.iter().cloned());
    Ok(cmd)
}

/// What the client asked for (query of the exec/attach request).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Request {
    /// The command (exec only).
    pub command: Vec<String>,
    /// Streams wanted.
    pub stdin: bool,
    /// Stdout wanted.
    pub stdout: bool,
    /// Stderr wanted.
    pub stderr: bool,
    /// A terminal.
    pub tty: bool,
}

impl Request {
    /// From the query pairs (`command` repeated; flags `true`/`1`).
    pub fn from_query(query: &[(String, String)]) -> Request {
        let flag = |k: &str| query.iter().any(|(n, v)| n == k && (v == "true" || v == "1"));
        Request {
            command: query.iter().filter(|(n, _)| n == "command").map(|(_, v)| v.clone()).collect(),
            stdin: flag("stdin") || flag("input"),
            stdout: flag("stdout") || flag("output"),
            stderr: flag("stderr") || flag("error"),
            tty: flag("tty"),
        }
    }
}

/// The final status message: `Success`, or the failure with the exit code as kubectl reads it.
pub fn status_message(protocol: &str, command: &[String], result: &Result<i32, ExecError>) -> Vec<u8> {
    let v4 = protocol.starts_with("v4.") || protocol.starts_with("v5.");
    let encode = |s: &Status| serde_json::to_vec(s).unwrap_or_default();
    match result {
        Ok(0) if v4 => encode(&success()),
        Ok(0) => Vec::new(),
        Ok(code) if v4 => {
            let message = format!(
                "command terminated with non-zero exit code: error executing command {command:?}, exit code {code}"
            );
            let cause = StatusCause { reason: "ExitCode".into(), message: code.to_string(), ..Default::default() };
            let details = StatusDetails { causes: vec![cause], ..Default::default() };
            encode(&Status::failure(0, "NonZeroExitCode", message).with_details(details))
        }
        Ok(code) => format!("command terminated with non-zero exit code: exit status {code}").into_bytes(),
        Err(e) if v4 => encode(&Status::failure(500, "InternalError", e.to_string())),
        Err(e) => e.to_string().into_bytes(),
    }
}

/// What the error channel says when the command ran: a `Success` Status.
fn success() -> Status {
    Status { details: None, ..Status::success(StatusDetails::default()) }
}

fn frame(channel: u8, data: &[u8]) -> Out {
    let mut b = Vec::with_capacity(data.len() + 1);
    b.push(channel);
    b.extend_from_slice(data);
    Out::Binary(Bytes::from(b))
}

/// Copies a reader to a channel until it ends.
async fn pump(mut r: impl AsyncRead + Unpin, channel: u8, out: mpsc::Sender<Out>) {
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if out.send(frame(channel, &buf[..n])).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// A terminal for a command: the master side, and the slave for the process's stdio.
fn open_pty() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    grantpt(&master)?;
    unlockpt(&master)?;
    let name = ptsname(&master, Vec::new())?;
    let slave = std::fs::OpenOptions::new().read(true).write(true).open(name.to_string_lossy().as_ref())?;
    Ok((master, slave.into()))
}

fn resize(master: &OwnedFd, msg: &[u8]) {
    #[derive(serde::Deserialize)]
    struct Size {
        #[serde(rename = "Width")]
        width: u16,
        #[serde(rename = "Height")]
        height: u16,
    }
    if let Ok(s) = serde_json::from_slice::<Size>(msg) {
        let ws = rustix::termios::Winsize { ws_row: s.height, ws_col: s.width, ws_xpixel: 0, ws_ypixel: 0 };
        let _ = rustix::termios::tcsetwinsize(master, ws);
    }
}

/// Splits the socket of a session and greets the client as the kubelet does: an empty message on the
/// first channel it reads.
async fn open(socket: Socket, protocol: &str, req: &Request) -> (mpsc::Sender<Out>, Messages) {
    let (out, incoming) = crate::ws::split_channels(socket, protocol);
    let first = if req.stdout {
        STDOUT
    } else if req.stderr {
        STDERR
    } else {
        ERROR
    };
    let _ = out.send(frame(first, &[])).await;
    (out, incoming)
}

/// Runs an exec session on an upgraded socket.
pub async fn serve(socket: Socket, protocol: String, target: ExecTarget, req: Request) {
    let (out, mut incoming) = open(socket, &protocol, &req).await;
    let result = run(&out, &mut incoming, &protocol, &target, &req).await;
    let _ = out.send(frame(ERROR, &status_message(&protocol, &req.command, &result))).await;
    let _ = out.send(Out::Close).await;
}

async fn run(
    out: &mpsc::Sender<Out>,
    incoming: &mut Messages,
    protocol: &str,
    target: &ExecTarget,
    req: &Request,
) -> Result<i32, ExecError> {
    let mut cmd = command(target, &req.command)?;
    let mut pty = None;
    if req.tty {
        let (master, slave) = open_pty().map_err(ExecError::Terminal)?;
        let dup = |f: &OwnedFd| f.try_clone().map_err(ExecError::Terminal);
        // A session with the terminal as its controlling terminal (util-linux setsid -c), so job control
        // and Ctrl-C work as in a shell.
        let inner = cmd.as_std();
        let mut wrapped = tokio::process::Command::new("setsid");
        wrapped.arg("--ctty").arg("--wait").arg(inner.get_program()).args(inner.get_args());
        if let Some(d) = inner.get_current_dir() {
            wrapped.current_dir(d);
        }
        wrapped.env_clear().envs(target.env.iter().cloned());
        wrapped.stdin(Stdio::from(dup(&slave)?)).stdout(Stdio::from(dup(&slave)?)).stderr(Stdio::from(slave));
        cmd = wrapped;
        pty = Some(master);
    } else {
        cmd.stdin(if req.stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(if req.stdout { Stdio::piped() } else { Stdio::null() })
            .stderr(if req.stderr { Stdio::piped() } else { Stdio::null() });
    }
    cmd.kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|source| ExecError::Start { command: req.command.first().cloned().unwrap_or_default(), source })?;
    let mut pumps = Vec::new();
    let mut stdin: Option<Box<dyn tokio::io::AsyncWrite + Unpin + Send>> = None;
    if let Some(master) = &pty {
        let reader = tokio::fs::File::from_std(std::fs::File::from(master.try_clone().map_err(ExecError::Terminal)?));
        pumps.push(tokio::spawn(pump(reader, STDOUT, out.clone())));
        if req.stdin {
            let writer =
                tokio::fs::File::from_std(std::fs::File::from(master.try_clone().map_err(ExecError::Terminal)?));
            stdin = Some(Box::new(writer));
        }
    } else {
        if let Some(o) = child.stdout.take() {
            pumps.push(tokio::spawn(pump(o, STDOUT, out.clone())));
        }
        if let Some(e) = child.stderr.take() {
            pumps.push(tokio::spawn(pump(e, STDERR, out.clone())));
        }
        stdin = child.stdin.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncWrite + Unpin + Send>);
    }
    let v5 = protocol.starts_with("v5.");
    let status = loop {
        tokio::select! {
            s = child.wait() => break s,
            m = incoming.next() => match m {
                Some(Ok(Message::Binary(b))) if !b.is_empty() => match b[0] {
                    STDIN => if let Some(w) = stdin.as_mut() && w.write_all(&b[1..]).await.is_err() { stdin = None },
                    RESIZE => if let Some(m) = &pty { resize(m, &b[1..]) },
                    CLOSE if v5 && b.get(1) == Some(&STDIN) => stdin = None,
                    _ => {}
                },
                Some(Ok(Message::Ping(_))) => { let _ = out.send(Out::Flush).await; }
                Some(Ok(_)) => {}
                // The client went: so does the command.
                Some(Err(_)) | None => {
                    let _ = child.start_kill();
                    break child.wait().await;
                }
            },
        }
    };
    drop(stdin);
    // What the command wrote goes out before the status (output a lingering child still holds is cut
    // off after a moment).
    for p in pumps {
        let _ = tokio::time::timeout(Duration::from_secs(2), p).await;
    }
    let status = status.map_err(ExecError::Wait)?;
    use std::os::unix::process::ExitStatusExt;
    Ok(status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1))
}

/// `kubectl attach`: the container's output from now on (and its stdin, for a container with
/// `stdin: true`), until the container's run ends or the client goes.
pub async fn serve_attach(
    socket: Socket,
    protocol: String,
    log: std::path::PathBuf,
    fifo: Option<std::path::PathBuf>,
    req: Request,
    running: impl Fn() -> bool + Send + 'static,
) {
    let (out, mut incoming) = open(socket, &protocol, &req).await;
    let offset = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    let mut stdin = match (&fifo, req.stdin) {
        (Some(f), true) => tokio::fs::OpenOptions::new().write(true).open(f).await.ok(),
        _ => None,
    };
    let (tx, mut output) = mpsc::channel::<Bytes>(16);
    tokio::spawn(crate::logs::follow(log, offset, Default::default(), tx, move || !running()));
    let channel = if req.stdout { STDOUT } else { STDERR };
    loop {
        tokio::select! {
            text = output.recv() => match text {
                Some(text) if req.stdout || req.stderr => { let _ = out.send(frame(channel, &text)).await; }
                Some(_) => {}
                // The run has ended.
                None => break,
            },
            m = incoming.next() => match m {
                Some(Ok(Message::Binary(b))) if b.first() == Some(&STDIN) => {
                    if let Some(w) = stdin.as_mut() && w.write_all(&b[1..]).await.is_err() { stdin = None }
                }
                Some(Ok(Message::Binary(b))) if b.first() == Some(&CLOSE) => stdin = None,
                Some(Ok(Message::Ping(_))) => { let _ = out.send(Out::Flush).await; }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return,
            },
        }
    }
    let _ = out.send(frame(ERROR, &serde_json::to_vec(&success()).unwrap_or_default())).await;
    let _ = out.send(Out::Close).await;
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn requests_and_statuses() {
        let q: Vec<(String, String)> = [
            ("command", "sh"),
            ("command", "-c"),
            ("command", "exit 3"),
            ("stdin", "true"),
            ("stdout", "1"),
            ("tty", "false"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let r = Request::from_query(&q);
        assert_eq!(
            r,
            Request {
                command: vec!["sh".into(), "-c".into(), "exit 3".into()],
                stdin: true,
                stdout: true,
                stderr: false,
                tty: false
            }
        );
        let failed: Value = serde_json::from_slice(&status_message("v5.channel.k8s.io", &r.command, &Ok(3))).unwrap();
        assert_eq!(failed["reason"], json!("NonZeroExitCode"));
        assert_eq!(failed["details"]["causes"][0], json!({"reason": "ExitCode", "message": "3"}));
        let ok: Value = serde_json::from_slice(&status_message("v4.channel.k8s.io", &r.command, &Ok(0))).unwrap();
        assert_eq!(ok["status"], json!("Success"));
        assert!(status_message("channel.k8s.io", &r.command, &Ok(0)).is_empty(), "before v4 success says nothing");
        let refused: Value =
            serde_json::from_slice(&status_message("v5.channel.k8s.io", &[], &Err(ExecError::NoCommand))).unwrap();
        assert_eq!(
            (refused["message"].as_str(), refused["reason"].as_str()),
            (Some("no command given"), Some("InternalError"))
        );
    }

    #[tokio::test]
    async fn commands_run_with_the_containers_environment() {
        let target = ExecTarget {
            pid: std::process::id() as i32,
            confine: Vec::new(),
            env: vec![("GREETING".into(), "hi".into()), ("PATH".into(), "/usr/bin:/bin".into())],
            workdir: Some("/tmp".into()),
            ..Default::default()
        };
        let out = command(&target, &["sh".into(), "-c".into(), "echo $GREETING $(pwd) $HOME".into()])
            .unwrap()
            .output()
            .await
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hi /tmp", "only the container's environment");
        assert!(matches!(command(&target, &[]), Err(ExecError::NoCommand)));
    }
}
