//! What bubblewrap sandboxes share, for the engine's exec hooks and the node's containers alike: the
//! namespaces every sandbox gets, the machine's system directories it sees read-only, and the way to a
//! path shown inside it made traversable. Pure: command-line pieces only.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The machine's directories a sandbox sees, read-only (those that exist).
pub const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"];

/// The arguments every sandbox starts with: it ends with its parent, has a session of its own (its
/// stop signal goes to its command's group, not to bubblewrap; no terminal to reach the caller's) and
/// its own PID, IPC, UTS and (where the kernel allows) cgroup namespaces.
pub const NAMESPACES: &[&str] =
    &["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"];

/// Whether a path lies in the system's directories.
pub fn is_system(p: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|d| p.starts_with(d))
}

/// The installation a program in a `bin` (or `sbin`) directory belongs to: `/opt/py/bin/python3` →
/// `/opt/py` (what it needs to run: its libraries beside it). None for a program elsewhere.
pub fn installation(program: &Path) -> Option<PathBuf> {
    let dir = program.parent()?;
    let name = dir.file_name()?;
    (name == "bin" || name == "sbin").then(|| dir.parent().unwrap_or(dir).to_path_buf())
}

/// The directories on the way to paths shown inside a sandbox, each made once and traversable by
/// anyone: bubblewrap would make them as its own (0700) or copy the machine's modes (a home
/// directory's 0700), and an unprivileged process could not reach what is shown inside.
#[derive(Default)]
pub struct Way {
    made: BTreeSet<PathBuf>,
}

impl Way {
    /// `--perms 0755 --dir` for each directory above `p` not made yet.
    pub fn to(&mut self, p: &Path, out: &mut Vec<String>) {
        let ancestors: Vec<&Path> = p.ancestors().skip(1).filter(|a| a.parent().is_some()).collect();
        for a in ancestors.into_iter().rev() {
            if self.made.insert(a.to_path_buf()) {
                out.extend(["--perms", "0755", "--dir"].map(String::from));
                out.push(a.display().to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_way_to_a_path_is_made_once_and_installations_are_found() {
        let mut way = Way::default();
        let mut out = Vec::new();
        way.to(Path::new("/root/.pyenv/versions/3.11"), &mut out);
        way.to(Path::new("/root/other"), &mut out);
        assert_eq!(
            out.join(" "),
            "--perms 0755 --dir /root --perms 0755 --dir /root/.pyenv --perms 0755 --dir /root/.pyenv/versions"
        );
        assert_eq!(installation(Path::new("/opt/py/bin/python3")), Some(PathBuf::from("/opt/py")));
        assert_eq!(installation(Path::new("/srv/hooks/sync")), None);
        assert!(is_system(Path::new("/usr/bin/jq")) && !is_system(Path::new("/usrx/jq")));
    }
}
