//! A sandbox per container, from bubblewrap (`bwrap`, Debian's `bubblewrap`; chosen over crun by
//! measurement, docs/benchmarks.md "Pod sandbox"): its own mount, PID, IPC and UTS namespaces; a file
//! system of the machine's system directories read-only (minus its secrets: `/etc/shadow`, host keys),
//! a writable root of its own (`/tmp`, `/var`, `/run`, `/home`, `/root` as fresh tmpfs), its volumes
//! and the node's name files — never uc's data directory, another pod's files or another pod's
//! processes. The process runs as the user its `securityContext` names, an unprivileged one
//! ([`DEFAULT_UID`]) when it names none, with the capabilities a container runtime gives (fewer when
//! dropped, all when privileged), through `setpriv` inside the sandbox.
//!
//! Everything here is pure: the arguments are computed from the pod's fields and a view of the
//! machine's directories ([`Machine`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{PodSecurityContext, SecurityContext};

use uc_api::sandbox::{NAMESPACES, SYSTEM_DIRS, Way, is_system};

use crate::volumes::{Mount, NameFiles};

/// The user a container runs as when its `securityContext` names none: `nobody`.
pub const DEFAULT_UID: i64 = 65534;

/// A container's writable root: fresh for each run.
const WRITABLE_DIRS: &[&str] = &["/tmp", "/var", "/run", "/home", "/root", "/srv", "/mnt"];

/// What of the machine a container never sees.
const SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
];

/// The capabilities a container runtime gives a container by default (containerd's and Docker's set).
const DEFAULT_CAPABILITIES: &[&str] = &[
    "CHOWN",
    "DAC_OVERRIDE",
    "FSETID",
    "FOWNER",
    "MKNOD",
    "NET_RAW",
    "SETGID",
    "SETUID",
    "SETFCAP",
    "SETPCAP",
    "NET_BIND_SERVICE",
    "SYS_CHROOT",
    "KILL",
    "AUDIT_WRITE",
];

/// Who a container's process is and what it may do, from the pod's and the container's
/// `securityContext` (the container's fields win).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub uid: i64,
    pub gid: i64,
    /// Supplementary groups: `fsGroup` and `supplementalGroups`.
    pub groups: Vec<i64>,
    /// All capabilities, every device.
    pub privileged: bool,
    /// The capabilities kept (bounding set), upper case without `CAP_`.
    pub capabilities: BTreeSet<String>,
    /// `allowPrivilegeEscalation: false`: no set-uid or file-capability gains.
    pub no_new_privs: bool,
    /// `readOnlyRootFilesystem`.
    pub read_only_root: bool,
}

impl Identity {
    /// The identity with the image's `USER` (the allowlist's `user`) where neither the pod nor the
    /// container names a user (`runAsUser`) or a group (`runAsGroup`), as a kubelet takes the image's.
    pub fn with_image_user(
        mut self,
        image: Option<(i64, Option<i64>)>,
        pod: Option<&PodSecurityContext>,
        c: Option<&SecurityContext>,
    ) -> Identity {
        let Some((uid, gid)) = image else { return self };
        if c.and_then(|s| s.run_as_user).or(pod.and_then(|p| p.run_as_user)).is_none() {
            self.uid = uid;
            if c.and_then(|s| s.run_as_group).or(pod.and_then(|p| p.run_as_group)).is_none() {
                self.gid = gid.unwrap_or(0);
            }
        }
        self
    }

    /// The identity of a container.
    pub fn of(pod: Option<&PodSecurityContext>, c: Option<&SecurityContext>) -> Identity {
        let uid = c.and_then(|s| s.run_as_user).or(pod.and_then(|p| p.run_as_user)).unwrap_or(DEFAULT_UID);
        let gid = c
            .and_then(|s| s.run_as_group)
            .or(pod.and_then(|p| p.run_as_group))
            .unwrap_or(if uid == DEFAULT_UID { DEFAULT_UID } else { 0 });
        let mut groups: Vec<i64> = pod.and_then(|p| p.fs_group).into_iter().collect();
        groups.extend(pod.and_then(|p| p.supplemental_groups.clone()).unwrap_or_default());
        groups.sort_unstable();
        groups.dedup();
        let privileged = c.and_then(|s| s.privileged).unwrap_or(false);
        let caps = c.and_then(|s| s.capabilities.as_ref());
        let norm = |s: &String| s.trim_start_matches("CAP_").to_ascii_uppercase();
        let drop: Vec<String> = caps.and_then(|k| k.drop.as_ref()).into_iter().flatten().map(norm).collect();
        let mut capabilities: BTreeSet<String> = if drop.iter().any(|d| d == "ALL") {
            BTreeSet::new()
        } else {
            DEFAULT_CAPABILITIES.iter().map(|s| s.to_string()).filter(|s| !drop.contains(s)).collect()
        };
        capabilities.extend(caps.and_then(|k| k.add.as_ref()).into_iter().flatten().map(norm).filter(|a| a != "ALL"));
        Identity {
            uid,
            gid,
            groups,
            privileged,
            capabilities,
            no_new_privs: c.and_then(|s| s.allow_privilege_escalation) == Some(false) && !privileged,
            read_only_root: c.and_then(|s| s.read_only_root_filesystem).unwrap_or(false),
        }
    }

    /// `setpriv` and its arguments: become this identity, then run what follows.
    pub fn setpriv(&self) -> Vec<String> {
        let mut out = vec![
            "setpriv".to_string(),
            format!("--reuid={}", self.uid),
            format!("--regid={}", self.gid),
            match self.groups.is_empty() {
                true => "--clear-groups".to_string(),
                false => format!("--groups={}", self.groups.iter().map(i64::to_string).collect::<Vec<_>>().join(",")),
            },
        ];
        if !self.privileged {
            let keep: Vec<String> = self.capabilities.iter().map(|c| format!("+{}", c.to_ascii_lowercase())).collect();
            let mut set = "-all".to_string();
            for k in keep {
                set.push(',');
                set.push_str(&k);
            }
            out.push(format!("--bounding-set={set}"));
            // A user other than root may still bind ports below 1024 when the capability is kept, as
            // a pod's own network namespace lets it (containerd's ip_unprivileged_port_start=0).
            if self.uid != 0 && self.capabilities.contains("NET_BIND_SERVICE") {
                out.push("--inh-caps=-all,+net_bind_service".into());
                out.push("--ambient-caps=+net_bind_service".into());
            } else {
                out.push("--inh-caps=-all".into());
            }
        }
        if self.no_new_privs {
            out.push("--no-new-privs".into());
        }
        out.push("--".into());
        out
    }
}

/// What the sandbox needs to know of the machine's directories.
pub trait Machine {
    /// Whether the path exists (without following a last symlink).
    fn exists(&self, p: &Path) -> bool;
    /// A symlink's target, None for anything else.
    fn link(&self, p: &Path) -> Option<PathBuf>;
    /// Whether the path is a directory (not a symlink to one).
    fn is_dir(&self, p: &Path) -> bool;
    /// A directory's entries, sorted.
    fn entries(&self, p: &Path) -> Vec<PathBuf>;
}

/// The real machine.
pub struct Host;

impl Machine for Host {
    fn exists(&self, p: &Path) -> bool {
        std::fs::symlink_metadata(p).is_ok()
    }
    fn link(&self, p: &Path) -> Option<PathBuf> {
        std::fs::symlink_metadata(p)
            .ok()
            .filter(|m| m.file_type().is_symlink())
            .and_then(|_| std::fs::read_link(p).ok())
    }
    fn is_dir(&self, p: &Path) -> bool {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
    }
    fn entries(&self, p: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(p).into_iter().flatten().flatten().map(|e| e.path()).collect();
        out.sort();
        out
    }
}

/// What one container's sandbox holds.
pub struct Layout<'a> {
    /// The program run, as resolved on the machine (shown read-only when outside the system dirs).
    pub program: &'a Path,
    pub names: &'a NameFiles,
    pub mounts: &'a [Mount],
    /// The working directory as the container sees it.
    pub cwd: Option<&'a str>,
    /// Paths never shown (uc's data directory).
    pub hidden: &'a [PathBuf],
}

/// A sandboxed container's command line made to run in the PID namespace of the process `pid`
/// instead of one of its own: `nsenter --pid=/proc/<pid>/ns/pid` (merged into the `nsenter` that
/// enters the pod's network namespace, when there is one) and bubblewrap without `--unshare-pid`.
pub fn join_pid_namespace(mut argv: Vec<String>, pid: i32) -> Vec<String> {
    let enter = format!("--pid=/proc/{pid}/ns/pid");
    if let Some(at) = argv.iter().position(|a| a.ends_with("/bwrap"))
        && let Some(i) = argv[at..].iter().position(|a| a == "--unshare-pid")
    {
        argv.remove(at + i);
    }
    if argv.first().is_some_and(|a| a.ends_with("/nsenter")) {
        argv.insert(1, enter);
        argv
    } else {
        let mut out = vec!["/usr/bin/nsenter".to_string(), enter, "--".to_string()];
        out.extend(argv);
        out
    }
}

/// The `bwrap` arguments that build a container's sandbox (its namespaces: [`NAMESPACES`]; the stop
/// signal goes to its command's group, see `container::stop_group`), up to and including the `--`
/// before the command (which [`Identity::setpriv`] then starts).
pub fn bwrap_args(layout: &Layout<'_>, id: &Identity, m: &dyn Machine) -> Vec<String> {
    let mut out: Vec<String> = NAMESPACES.iter().map(|s| s.to_string()).collect();
    let mut way = Way::default();
    // Directories of the system shown piecewise: those that hold a secret to leave out, a mount point
    // to make or uc's data directory.
    let mut split: BTreeSet<PathBuf> = BTreeSet::new();
    let targets = layout.mounts.iter().map(|x| PathBuf::from(&x.target));
    let name_targets =
        [layout.names.hosts.as_ref().map(|_| "/etc/hosts"), layout.names.resolv.as_ref().map(|_| "/etc/resolv.conf")];
    let hidden: Vec<PathBuf> = SECRETS.iter().map(PathBuf::from).chain(layout.hidden.iter().cloned()).collect();
    for p in targets.chain(name_targets.into_iter().flatten().map(PathBuf::from)).chain(hidden.iter().cloned()) {
        for a in p.ancestors().skip(1) {
            if is_system(a) && m.is_dir(a) {
                split.insert(a.to_path_buf());
            }
        }
    }
    for d in SYSTEM_DIRS.iter().map(Path::new).filter(|d| m.exists(d)) {
        show(d, &split, &hidden, m, &mut out);
    }
    out.extend(["--proc", "/proc", "--dev", "/dev"].map(String::from));
    if !id.read_only_root {
        for d in WRITABLE_DIRS.iter().filter(|d| !is_system(Path::new(d))) {
            out.extend(["--perms", "1777", "--tmpfs", d].map(String::from));
        }
    }
    // The program, when it lives outside the system's directories (uc's own binary, a Python of
    // pyenv's), with the directories on the way traversable.
    if !is_system(layout.program) {
        let show_at = uc_api::sandbox::installation(layout.program).unwrap_or_else(|| layout.program.to_path_buf());
        way.to(&show_at, &mut out);
        out.extend(["--ro-bind".into(), show_at.display().to_string(), show_at.display().to_string()]);
    }
    if let Some(h) = &layout.names.hosts {
        out.extend(["--ro-bind".into(), h.display().to_string(), "/etc/hosts".into()]);
    }
    if let Some(r) = &layout.names.resolv {
        out.extend(["--ro-bind".into(), r.display().to_string(), "/etc/resolv.conf".into()]);
    }
    // Shallower mount points first, so that a volume inside another lands on top of it.
    let mut mounts: Vec<&Mount> = layout.mounts.iter().collect();
    mounts.sort_by_key(|x| Path::new(&x.target).components().count());
    for x in mounts {
        // Directories bwrap makes on the way would be its own (0700): made traversable first.
        way.to(Path::new(&x.target), &mut out);
        let flag = if x.read_only { "--ro-bind" } else { "--bind" };
        out.extend([flag.to_string(), x.source.display().to_string(), x.target.clone()]);
    }
    if let Some(d) = layout.cwd {
        let covered = is_system(Path::new(d)) && !split.iter().any(|s| Path::new(d).starts_with(s));
        if !covered {
            way.to(Path::new(d), &mut out);
            out.extend(["--perms".to_string(), "0755".to_string(), "--dir".to_string(), d.to_string()]);
        }
    }
    if id.read_only_root {
        out.extend(["--remount-ro", "/"].map(String::from));
    }
    out.extend(["--chdir".to_string(), layout.cwd.unwrap_or("/").to_string(), "--".to_string()]);
    out
}

/// Shows `dir` of the system: whole and read-only, or — when it holds something to leave out or a
/// mount point to make — as an empty directory with each of its entries shown in turn.
fn show(dir: &Path, split: &BTreeSet<PathBuf>, hidden: &[PathBuf], m: &dyn Machine, out: &mut Vec<String>) {
    if hidden.iter().any(|h| h == dir) {
        return;
    }
    if let Some(target) = m.link(dir) {
        out.extend(["--symlink".into(), target.display().to_string(), dir.display().to_string()]);
        return;
    }
    if !split.contains(dir) {
        out.extend(["--ro-bind".into(), dir.display().to_string(), dir.display().to_string()]);
        return;
    }
    out.extend(["--perms", "0755", "--tmpfs"].map(String::from));
    out.push(dir.display().to_string());
    // The directory itself stays a writable tmpfs (a container's own layer): what the machine has
    // in it is shown read-only, and mount points can be made in it.
    for e in m.entries(dir) {
        show(&e, split, hidden, m, out);
    }
}

/// Whether this node can sandbox containers: root, with `bwrap` and `setpriv` on the machine.
pub fn available() -> bool {
    let root = rustix::process::geteuid().is_root();
    root && ["/usr/bin/bwrap", "/usr/bin/setpriv"].iter().all(|p| Path::new(p).exists())
}

#[cfg(test)]
mod tests;
