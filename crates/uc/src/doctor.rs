//! `uc doctor`: what this machine has for uc, and what each missing piece disables.

use std::path::{Path, PathBuf};

/// What the machine has, as probed.
#[derive(Debug, Default, Clone)]
pub struct Facts {
    pub kubectl: Option<PathBuf>,
    pub etcd: Option<PathBuf>,
    pub etcdctl: Option<PathBuf>,
    pub zookeeper: Option<PathBuf>,
    pub java: Option<PathBuf>,
    pub python: Option<PathBuf>,
    pub node: Option<PathBuf>,
    pub busybox: Option<PathBuf>,
    /// Ports uc listens on by default that something else holds.
    pub busy_ports: Vec<u16>,
    /// Whether a pod address (127.N.0.0/16 on loopback) can be bound.
    pub pod_addresses: bool,
    /// Whether the data directory can be written (None: it does not exist yet and its parent can).
    pub data_dir_writable: bool,
}

/// How much a missing piece matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// `uc up` cannot work without it.
    Required,
    /// A feature is disabled without it.
    Optional,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    /// What was found (Some) or nothing (None).
    pub found: Option<String>,
    pub severity: Severity,
    /// What does not work without it.
    pub disables: &'static str,
    /// How to get it.
    pub fix: &'static str,
}

fn shown(p: &Option<PathBuf>) -> Option<String> {
    p.as_ref().map(|p| p.display().to_string())
}

/// The checks of a machine with these facts.
#[expect(clippy::too_many_lines, reason = "data table: one check per machine fact")]
pub fn checks(f: &Facts) -> Vec<Check> {
    let mut out = vec![
        Check {
            name: "data directory",
            found: f.data_dir_writable.then(|| "writable".into()),
            severity: Severity::Required,
            disables: "uc up: it keeps its store, credentials and kubeconfig there",
            fix: "pass --data-dir DIR somewhere writable",
        },
        Check {
            name: "pod addresses",
            found: f.pod_addresses.then(|| "127.N.0.0/16 on loopback".into()),
            severity: Severity::Required,
            disables: "pods that run as processes: each listens on its own 127.N.x.y address",
            fix: "Linux routes all of 127.0.0.0/8 to loopback; check `ip addr show lo`",
        },
        Check {
            name: "kubectl",
            found: shown(&f.kubectl),
            severity: Severity::Optional,
            disables: "the README's walk-throughs and the test suite (uc itself needs no kubectl)",
            fix: "install kubectl (https://kubernetes.io/docs/tasks/tools/)",
        },
        Check {
            name: "etcd",
            found: match (&f.etcd, &f.etcdctl) {
                (Some(e), Some(c)) => Some(format!("{} and {}", e.display(), c.display())),
                _ => None,
            },
            severity: Severity::Optional,
            disables: "the etcd operator's members: etcd pods are simulated, never a real cluster",
            fix: "apt-get install etcd-server etcd-client",
        },
        Check {
            name: "zookeeper",
            found: shown(&f.zookeeper),
            severity: Severity::Optional,
            disables: "the ZooKeeper operators' servers: zookeeper pods are simulated",
            fix: "apt-get install zookeeper",
        },
        Check {
            name: "java",
            found: shown(&f.java),
            severity: Severity::Optional,
            disables: "ZooKeeper itself (a Java program)",
            fix: "apt-get install default-jre-headless (the zookeeper package pulls it in)",
        },
        Check {
            name: "python3",
            found: shown(&f.python),
            severity: Severity::Optional,
            disables: "python:3 images and Python hooks (`uc init --hook python`)",
            fix: "apt-get install python3",
        },
        Check {
            name: "node",
            found: shown(&f.node),
            severity: Severity::Optional,
            disables: "node images",
            fix: "apt-get install nodejs",
        },
        Check {
            name: "busybox",
            found: shown(&f.busybox),
            severity: Severity::Optional,
            disables: "busybox images (kubectl run ... --image=busybox)",
            fix: "apt-get install busybox",
        },
    ];
    for (port, name, disables) in [
        (6443, "port 6443", "uc up's default port (`uc up --port 0` picks a free one)"),
        (9090, "port 9090", "uc run's default /metrics address (`--metrics-addr 127.0.0.1:0` picks a free one)"),
    ] {
        out.push(Check {
            name,
            found: (!f.busy_ports.contains(&port)).then(|| "free".into()),
            severity: Severity::Optional,
            disables,
            fix: "another process listens there",
        });
    }
    out
}

/// The report, one line per check; `ok` is false when a required piece is missing.
pub fn report(checks: &[Check]) -> (String, bool) {
    let mut text = String::new();
    let mut ok = true;
    for c in checks {
        match &c.found {
            Some(found) => text.push_str(&format!("ok       {:<16} {found}\n", c.name)),
            None => {
                let mark = match c.severity {
                    Severity::Required => {
                        ok = false;
                        "MISSING"
                    }
                    Severity::Optional => "missing",
                };
                text.push_str(&format!("{mark:<8} {:<16} {}; without it: {}\n", c.name, c.fix, c.disables));
            }
        }
    }
    text.push_str(if ok {
        "uc up can run here; lines marked `missing` say what is simulated or off.\n"
    } else {
        "uc up cannot run here until the MISSING lines are fixed.\n"
    });
    (text, ok)
}

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|n| std::env::split_paths(&path).map(|d| d.join(n)).find(|p| p.is_file()))
}

fn existing(p: &str) -> Option<PathBuf> {
    Some(PathBuf::from(p)).filter(|p| p.exists())
}

fn port_busy(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_err()
}

fn writable(dir: &Path) -> bool {
    let probe = |d: &Path| {
        let f = d.join(format!(".uc-doctor-{}", std::process::id()));
        let ok = std::fs::write(&f, b"").is_ok();
        let _ = std::fs::remove_file(&f);
        ok
    };
    if dir.exists() {
        probe(dir)
    } else {
        let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        probe(parent)
    }
}

/// Probes this machine.
pub fn probe(data_dir: &Path) -> Facts {
    let busy_ports = [6443, 9090].into_iter().filter(|p| port_busy(*p)).collect();
    Facts {
        kubectl: on_path(&["kubectl"]),
        etcd: existing("/usr/bin/etcd"),
        etcdctl: existing("/usr/bin/etcdctl"),
        zookeeper: existing("/usr/share/zookeeper/bin/zkServer.sh"),
        java: on_path(&["java"]),
        python: on_path(&["python3"]),
        node: on_path(&["node", "nodejs"]),
        busybox: on_path(&["busybox"]).or_else(|| existing("/bin/busybox")),
        busy_ports,
        pod_addresses: std::net::TcpListener::bind(("127.77.0.1", 0)).is_ok(),
        data_dir_writable: writable(data_dir),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Facts {
        let p = |s: &str| Some(PathBuf::from(s));
        Facts {
            kubectl: p("/usr/bin/kubectl"),
            etcd: p("/usr/bin/etcd"),
            etcdctl: p("/usr/bin/etcdctl"),
            zookeeper: p("/usr/share/zookeeper/bin/zkServer.sh"),
            java: p("/usr/bin/java"),
            python: p("/usr/bin/python3"),
            node: p("/usr/bin/node"),
            busybox: p("/bin/busybox"),
            busy_ports: vec![],
            pod_addresses: true,
            data_dir_writable: true,
        }
    }

    #[test]
    fn a_full_machine_has_every_line_ok() {
        let (text, ok) = report(&checks(&full()));
        assert!(ok);
        assert!(text.lines().filter(|l| l.starts_with("ok")).count() == 11, "{text}");
    }

    #[test]
    fn a_missing_package_says_what_it_disables_and_how_to_get_it() {
        let mut f = full();
        f.zookeeper = None;
        f.etcdctl = None;
        let (text, ok) = report(&checks(&f));
        assert!(ok, "optional pieces do not stop uc up");
        let zk = text.lines().find(|l| l.contains("zookeeper") && l.starts_with("missing")).expect("a zookeeper line");
        assert!(zk.contains("simulated") && zk.contains("apt-get install zookeeper"), "{zk}");
        let etcd = text.lines().find(|l| l.contains(" etcd ")).expect("an etcd line");
        assert!(etcd.starts_with("missing") && etcd.contains("etcd-client"), "etcdctl is part of it: {etcd}");
    }

    #[test]
    fn a_busy_port_names_the_flag_that_avoids_it() {
        let mut f = full();
        f.busy_ports = vec![6443];
        let (text, ok) = report(&checks(&f));
        assert!(ok);
        let line = text.lines().find(|l| l.contains("port 6443")).expect("a port line");
        assert!(line.contains("--port 0") && line.contains("another process"), "{line}");
    }

    #[test]
    fn an_unwritable_data_directory_stops_uc_up() {
        let mut f = full();
        f.data_dir_writable = false;
        let (text, ok) = report(&checks(&f));
        assert!(!ok);
        assert!(text.contains("MISSING") && text.contains("cannot run here"), "{text}");
    }
}
