//! Where exec hooks run: the engine operator's policy (which programs may serve as hooks, and whether
//! they run confined) and the sandbox itself — bubblewrap (`bwrap`, from Debian) making private PID,
//! IPC and UTS namespaces and a file system of the machine's read-only system directories, a private
//! `/tmp`, the hook's working directory and its program (read-only), run as an unprivileged user with
//! no capabilities and an environment of its own. It never sees uc's data directory, the machine's
//! other processes or uc's environment (credentials), and when its main process ends — or the
//! timeout kills it — everything it started ends with its PID namespace.

use std::path::{Path, PathBuf};

use uc_api::sandbox::{NAMESPACES, SYSTEM_DIRS, Way, is_system};

/// The user (and group) confined hooks run as when uc runs as root: `nobody`.
pub const HOOK_UID: u32 = 65534;

/// The `PATH` inside the sandbox, and where a program named without a directory is looked for first.
pub const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Which programs may serve as exec hooks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Programs {
    /// Any program.
    Any,
    /// Only these (names match a program's file name, paths its full path); empty: none at all.
    Only(Vec<String>),
}

impl Programs {
    /// `*` or `any`, `none`, or a comma-separated list of programs.
    pub fn parse(s: &str) -> Programs {
        match s.trim() {
            "*" | "any" => Programs::Any,
            "none" | "" => Programs::Only(Vec::new()),
            list => Programs::Only(list.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()),
        }
    }

    /// Whether `program` (as a hook's `command[0]` names it) may run.
    pub fn allows(&self, program: &str) -> bool {
        match self {
            Programs::Any => true,
            Programs::Only(list) => list.iter().any(|p| {
                if p.contains('/') {
                    p == program
                } else {
                    !program.contains('/') && p == program
                        || Path::new(program).file_name().is_some_and(|f| f == p.as_str())
                }
            }),
        }
    }
}

/// The engine operator's policy for exec hooks (`--exec-hooks`, `--exec-hooks-unconfined`).
#[derive(Clone, Debug)]
pub struct ExecPolicy {
    /// Which programs may serve as hooks.
    pub programs: Programs,
    /// Run hooks in the sandbox (the default); off where uc itself runs confined (a pod).
    pub sandboxed: bool,
    /// Paths a hook must never see even inside a directory it is shown (uc's data directory).
    pub hidden: Vec<PathBuf>,
}

impl Default for ExecPolicy {
    fn default() -> Self {
        ExecPolicy { programs: Programs::Any, sandboxed: true, hidden: Vec::new() }
    }
}

impl ExecPolicy {
    /// Any program, unconfined: a hook author's own machine (`uc hook test`).
    pub fn unconfined() -> Self {
        ExecPolicy { programs: Programs::Any, sandboxed: false, hidden: Vec::new() }
    }
}

/// The program a hook names, as the sandbox will run it: a name is looked up in the system's
/// directories first, then in `path` (uc's own `PATH`); a path is taken as it is (relative to `cwd`).
pub fn resolve(program: &str, cwd: &Path, path: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = cwd.join(program);
        return p.exists().then_some(p);
    }
    SYSTEM_PATH.split(':').chain(path.split(':')).filter(|d| !d.is_empty()).map(|d| Path::new(d).join(program)).find(
        |p| {
            use std::os::unix::fs::PermissionsExt;
            p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        },
    )
}

/// What of the machine a program at `path` needs to run: its installation when it lies in a `bin`
/// directory (`/opt/py/bin/python3` → `/opt/py`), else its own directory.
fn installation_of(path: &Path) -> PathBuf {
    uc_api::sandbox::installation(path).unwrap_or_else(|| path.parent().unwrap_or(Path::new("/")).to_path_buf())
}

/// The `bwrap` arguments (before `--` and the command) that confine a hook running `program` with
/// `args` in `cwd`; `hidden` paths are covered by empty directories where a shown directory holds
/// them. A pure function of the machine's layout as `exists` and `link` report it.
pub fn bwrap_args(
    program: &Path,
    args: &[String],
    cwd: &Path,
    hidden: &[PathBuf],
    exists: &dyn Fn(&Path) -> bool,
    link: &dyn Fn(&Path) -> Option<PathBuf>,
    closed: &dyn Fn(&Path) -> bool,
) -> Vec<String> {
    let mut out: Vec<String> = NAMESPACES.iter().map(|s| s.to_string()).collect();
    out.extend(["--hostname", "uc-hook"].map(String::from));
    for d in SYSTEM_DIRS.iter().map(Path::new).filter(|d| exists(d)) {
        let (flag, from) = match link(d) {
            Some(target) => ("--symlink", target),
            None => ("--ro-bind", d.to_path_buf()),
        };
        out.extend([flag.to_string(), from.display().to_string(), d.display().to_string()]);
    }
    // The private /tmp first: what is shown inside it (a working directory under /tmp) lands on top.
    out.extend(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"].map(String::from));
    let mut shown: Vec<PathBuf> = vec![cwd.to_path_buf()];
    if !is_system(program) {
        shown.push(installation_of(program));
    }
    // Files the command names (a script, a configuration; relative ones in the working directory) are
    // shown read-only.
    shown.extend(
        args.iter().filter(|a| !a.starts_with('-')).map(|a| cwd.join(a)).filter(|p| !is_system(p) && exists(p)),
    );
    shown.sort();
    shown.dedup();
    // A directory inside another one shown adds nothing — unless that one is closed to the hook's user
    // (a clone in a 0700 directory): it is then an empty directory, and what is named inside it is
    // shown by itself.
    let outer: Vec<PathBuf> =
        shown.iter().filter(|p| !shown.iter().any(|q| q != *p && p.starts_with(q) && !closed(q))).cloned().collect();
    let mut way = Way::default();
    for p in outer.iter().filter(|p| !is_system(p) && p.parent().is_some()) {
        way.to(p, &mut out);
        if closed(p) {
            out.extend(["--perms", "0755", "--dir"].map(String::from));
            out.push(p.display().to_string());
        } else {
            out.extend(["--ro-bind".to_string(), p.display().to_string(), p.display().to_string()]);
        }
    }
    for h in hidden.iter().filter(|h| outer.iter().any(|p| h.starts_with(p)) || is_system(h)) {
        out.extend(["--tmpfs".to_string(), h.display().to_string()]);
    }
    out.extend(["--chdir".to_string(), cwd.display().to_string()]);
    out
}

/// The command that drops root inside the sandbox before the hook runs: to [`HOOK_UID`], no
/// supplementary groups, no capabilities (bounding and inheritable sets emptied), no new privileges
/// (set-uid programs stay unprivileged). Empty when uc does not run as root (bwrap then runs as uc's
/// own unprivileged user, in a user namespace).
pub fn drop_root(root: bool) -> Vec<String> {
    if !root {
        return Vec::new();
    }
    [
        "setpriv",
        &format!("--reuid={HOOK_UID}"),
        &format!("--regid={HOOK_UID}"),
        "--clear-groups",
        "--bounding-set=-all",
        "--inh-caps=-all",
        "--no-new-privs",
        "--",
    ]
    .map(String::from)
    .to_vec()
}

/// Whether `bwrap` is on this machine.
pub fn bwrap() -> Option<PathBuf> {
    resolve("bwrap", Path::new("/"), "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_allowed_are_named_or_pathed() {
        let only = Programs::parse("jq, /opt/hooks/sync, python3");
        assert!(only.allows("jq") && only.allows("/usr/bin/jq"), "a name allows it wherever it is");
        assert!(only.allows("/opt/hooks/sync"));
        assert!(!only.allows("/tmp/sync") && !only.allows("sync"), "a path allows that path only");
        assert!(!only.allows("sh"));
        assert_eq!(Programs::parse("none"), Programs::Only(vec![]));
        assert!(!Programs::parse("none").allows("sh"));
        assert!(Programs::parse("*").allows("anything"));
    }

    #[test]
    fn the_sandbox_shows_the_system_the_hook_and_nothing_of_uc() {
        let exists = |p: &Path| {
            ["/usr", "/bin", "/lib", "/etc", "/opt", "/work/repo/sync.sh", "/work/repo", "/work/repo/.uc"]
                .iter()
                .any(|e| Path::new(e) == p)
        };
        let link = |p: &Path| {
            (p == Path::new("/bin") || p == Path::new("/lib")).then(|| p.strip_prefix("/").unwrap().to_path_buf())
        };
        let args = bwrap_args(
            Path::new("/root/.pyenv/versions/3.11/bin/python3"),
            &["/work/repo/sync.sh".into(), "-v".into()],
            Path::new("/work/repo"),
            &[PathBuf::from("/work/repo/.uc"), PathBuf::from("/var/lib/uc")],
            &exists,
            &link,
            &|_| false,
        );
        let text = args.join(" ");
        assert!(text.contains("--ro-bind /usr /usr") && text.contains("--ro-bind /etc /etc"), "{text}");
        assert!(text.contains("--symlink bin /bin"), "merged /usr kept as links: {text}");
        assert!(!text.contains("/sbin"), "what does not exist is not shown: {text}");
        assert!(text.contains("--ro-bind /root/.pyenv/versions/3.11 /root/.pyenv/versions/3.11"), "{text}");
        assert!(!text.contains("--ro-bind /root "), "not the home around it: {text}");
        assert!(text.contains("--ro-bind /work/repo /work/repo"), "{text}");
        assert!(!text.contains("/work/repo/sync.sh"), "inside the working directory already: {text}");
        assert!(text.contains("--tmpfs /work/repo/.uc"), "uc's data directory covered: {text}");
        assert!(!text.contains("/var/lib/uc"), "not shown anyway: {text}");
        assert!(text.contains("--unshare-pid") && text.contains("--die-with-parent"));
        assert!(
            text.contains("--perms 0755 --dir /root --perms 0755 --dir /root/.pyenv --perms 0755 --dir /root/.pyenv/versions --ro-bind"),
            "the way to what is shown is traversable: {text}"
        );
        assert_eq!(text.matches("--dir /work ").count(), 1, "each directory made once: {text}");
        // A working directory the hook's user may not enter (a clone in a 0700 directory): an empty
        // one, and the script named inside it shown by itself.
        let closed = bwrap_args(
            Path::new("/usr/bin/sh"),
            &["sub/sync.sh".into()],
            Path::new("/work/repo"),
            &[],
            &|p: &Path| exists(p) || p == Path::new("/work/repo/sub/sync.sh"),
            &link,
            &|p: &Path| p == Path::new("/work/repo"),
        )
        .join(" ");
        assert!(closed.contains("--perms 0755 --dir /work/repo --perms 0755 --dir /work/repo/sub"), "{closed}");
        assert!(closed.contains("--ro-bind /work/repo/sub/sync.sh /work/repo/sub/sync.sh"), "{closed}");
        assert!(!closed.contains("--ro-bind /work/repo /work/repo"), "{closed}");
        assert_eq!(drop_root(true)[..3], ["setpriv", "--reuid=65534", "--regid=65534"]);
        assert!(drop_root(false).is_empty());
        assert!(text.ends_with("--chdir /work/repo"), "{text}");
    }

    #[test]
    fn programs_are_found_in_the_system_first() {
        let sh = resolve("sh", Path::new("/"), "/nonexistent").expect("sh is on every machine");
        assert!(is_system(&sh), "{sh:?}");
        assert!(resolve("no-such-program-here", Path::new("/"), "").is_none());
        assert_eq!(installation_of(Path::new("/opt/py/bin/python3")), PathBuf::from("/opt/py"));
        assert_eq!(installation_of(Path::new("/srv/hooks/sync")), PathBuf::from("/srv/hooks"));
    }
}
