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
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `<bin> up --port 0 --data-dir <temp> <flags>` and waits for its kubeconfig.
pub fn start(bin: &Path, flags: &[&str]) -> Result<Uc> {
    let dir = tempfile::tempdir()?;
    let mut child = Command::new(bin)
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
