//! A throwaway `uc up` for a benchmark run: its own data directory, stopped when dropped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};

/// A running `uc up`.
pub struct Uc {
    child: Child,
    /// Its kubeconfig.
    pub kubeconfig: String,
    _dir: tempfile::TempDir,
}

impl Drop for Uc {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// Stops a `uc up` as Ctrl-C does, so that what it made on the machine (pods, their network
/// namespaces, the bridge) goes with it; killed after a minute.
pub fn stop(child: &mut Child) {
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    for _ in 0..600 {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Uc {
    /// The process id of `uc up`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A client of its API server.
    pub async fn client(&self) -> Result<kube::Client> {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig)?;
        let config = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await?;
        Ok(kube::Client::try_from(config)?)
    }
}

/// A `/proc/<pid>/status` figure in bytes: `VmRSS` (resident), `VmHWM` (its peak) or `RssAnon` (the
/// private part: heap and stacks, without the mapped code of the binary and libraries). 0 when unknown.
pub fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

/// The CPU time (user and system) a process has used, in seconds (`/proc/<pid>/stat`); 0 once it is gone.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // USER_HZ: 100 on every Linux this runs on (`getconf CLK_TCK`).
    cpu_ticks(&stat).map_or(0.0, |t| t as f64 / 100.0)
}

/// utime + stime of a `/proc/<pid>/stat` line, in clock ticks: its 14th and 15th fields, counted after
/// the command name (which is in parentheses and may hold spaces).
fn cpu_ticks(stat: &str) -> Option<u64> {
    let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
    let utime: u64 = rest.nth(11)?.parse().ok()?;
    let stime: u64 = rest.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Starts `<bin> up --port 0 --data-dir <temp> <flags>` and waits for its kubeconfig.
pub fn start(bin: &Path, flags: &[&str]) -> Result<Uc> {
    start_pinned(bin, flags, None)
}

/// As `start`, on the CPUs `cpus` names (`taskset -c`, which execs uc: the pid is uc's) if given.
pub fn start_pinned(bin: &Path, flags: &[&str], cpus: Option<&str>) -> Result<Uc> {
    let dir = tempfile::tempdir()?;
    let mut command = match cpus {
        Some(cpus) => {
            let mut c = Command::new("taskset");
            c.args(["-c", cpus]).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    let mut child = command
        .args(["up", "--port", "0", "--data-dir"])
        .arg(dir.path())
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("stdout")?).read_line(&mut line)?;
    let Some(kc) = line.trim().strip_prefix("export KUBECONFIG=") else { bail!("uc up printed {line:?}") };
    Ok(Uc { child, kubeconfig: kc.to_string(), _dir: dir })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_the_command_name() {
        let stat = "4242 (uc (run) x) S 1 4242 4242 0 -1 4194560 9010 0 0 0 731 129 0 0 20 0 4 0 123 456 789";
        assert_eq!(cpu_ticks(stat), Some(731 + 129));
        assert_eq!(cpu_ticks("4242 (uc) S 1"), None, "a truncated line is no figure");
        assert!(cpu_seconds(std::process::id()) >= 0.0);
        assert_eq!(cpu_seconds(u32::MAX), 0.0, "no such process");
    }
}
