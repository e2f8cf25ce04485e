//! What the node's parts share: its options, the pod IP allocator, and the context every pod worker
//! holds.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::allowlist::Allowlist;
use crate::held_pod::HeldPod;
use crate::network::{Network, PodCidr};
use crate::pod::PodProcesses;
use crate::server::Pods;
use crate::{names, objects};

/// Node agent options.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// The Node's name.
    pub name: String,
    /// Images whose pods run as real processes.
    pub allowlist: Allowlist,
    /// Per-pod directories (`<dir>/<pod uid>/`): containers' records and logs, emptyDir and
    /// projected volumes.
    pub pods_dir: PathBuf,
    /// Where the per-namespace hosts files live (None: processes use the machine's /etc/hosts).
    pub hosts_dir: Option<PathBuf>,
    /// How pods are networked, and the range their addresses come from (distinct per `uc up`, so
    /// that two on one machine do not collide).
    pub network: Network,
    /// Where PersistentVolumeClaim directories live (`<dir>/<namespace>/<claim>`).
    pub volumes_dir: PathBuf,
    /// The `uc` binary, run as `uc shim` for each container.
    pub shim: PathBuf,
    /// Who may call the node's kubelet endpoint: the API server's certificate (mutual TLS), or a token.
    pub kubelet_callers: crate::server::Callers,
    /// Port of the kubelet endpoint on 127.0.0.1 (0 picks one).
    pub kubelet_port: u16,
    /// The API server, for pods' `KUBERNETES_SERVICE_HOST`/`PORT`.
    pub api_server: Option<SocketAddr>,
    /// Run each container in its sandbox ([`crate::sandbox`]); off, containers run in a mount
    /// namespace of their own for their volumes only.
    pub sandbox: bool,
    /// Paths no container may see (uc's data directory).
    pub hidden: Vec<PathBuf>,
}

impl Default for NodeOptions {
    fn default() -> Self {
        Self {
            name: "uc-node".into(),
            allowlist: Allowlist::default(),
            pods_dir: std::env::temp_dir().join("uc-pods"),
            hosts_dir: None,
            network: Network::Loopback(PodCidr::loopback(1)),
            volumes_dir: std::env::temp_dir().join("uc-volumes"),
            shim: PathBuf::from("uc"),
            kubelet_callers: crate::server::Callers::Token(String::new()),
            kubelet_port: 0,
            api_server: None,
            sandbox: false,
            hidden: Vec::new(),
        }
    }
}

/// The last pod address of the range (`.239.254`): `.239.255` is the DNS server's on loopback, the
/// top /20 the Services'.
const POD_IPS: u32 = 240 * 256 - 2;

/// The first: `.0.1` is the bridge's.
const FIRST: u32 = 2;

/// Pod IPs from the pod range (`.0.2` to `.239.254`, below the Services' top /20), one per pod uid.
pub(crate) struct Ips {
    cidr: PodCidr,
    next: u32,
    by_uid: HashMap<String, String>,
}

impl Ips {
    pub(crate) fn new(cidr: PodCidr) -> Self {
        Ips { cidr, next: 0, by_uid: HashMap::new() }
    }

    pub(crate) fn get(&mut self, uid: &str, existing: Option<&str>) -> String {
        if let Some(ip) = self.by_uid.get(uid) {
            return ip.clone();
        }
        let prefix = self.cidr.prefix();
        let ip = match existing.filter(|ip| ip.starts_with(&prefix)) {
            Some(ip) => ip.to_string(),
            None => {
                let used: HashSet<&String> = self.by_uid.values().collect();
                let mut ip = String::new();
                for _ in FIRST..=POD_IPS {
                    self.next = if (FIRST..POD_IPS).contains(&self.next) { self.next + 1 } else { FIRST };
                    ip = format!("{prefix}{}.{}", self.next / 256, self.next % 256);
                    if !used.contains(&ip) {
                        break;
                    }
                }
                ip
            }
        };
        self.by_uid.insert(uid.to_string(), ip.clone());
        ip
    }

    pub(crate) fn forget(&mut self, uid: &str) {
        self.by_uid.remove(uid);
    }
}

/// What the pod workers share.
pub(crate) struct Ctx {
    pub(crate) client: kube::Client,
    /// Binds pods to the node (the scheduler's part): a node's own credential may not.
    pub(crate) scheduler: kube::Client,
    pub(crate) options: NodeOptions,
    pub(crate) ips: Mutex<Ips>,
    pub(crate) hosts: Option<Arc<names::HostsFiles>>,
    pub(crate) objects: objects::Objects,
    pub(crate) pods: Pods,
    pub(crate) shutting_down: AtomicBool,
    /// The pods whose processes this node started, by uid: the clean stop reaches every one of them.
    pub(crate) started: Mutex<Started>,
    /// Whether pods may still be wired to the bridge: attaching holds it for reading, the clean stop
    /// closes it before the bridge goes (else the CNI plugin would make a bridge again).
    pub(crate) wiring: tokio::sync::RwLock<bool>,
    /// The kubelet's Events about pods and their containers.
    pub(crate) events: crate::events::Recorder,
    /// The scheduler's (`Scheduled`).
    pub(crate) scheduler_events: crate::events::Recorder,
}

/// The pods whose processes run, with the latest copy of each pod (its grace period); closed when the
/// node stops, after which nothing new starts.
#[derive(Default)]
pub(crate) struct Started {
    closed: bool,
    pods: HashMap<String, (Arc<PodProcesses>, watch::Receiver<Arc<HeldPod>>)>,
}

impl Started {
    /// Starts a pod's processes with `start` and records them, unless the node is stopping; a pod
    /// whose processes started already (its worker runs again after a panic) keeps them.
    pub(crate) fn start(
        &mut self,
        rx: &watch::Receiver<Arc<HeldPod>>,
        uid: &str,
        start: impl FnOnce() -> Arc<PodProcesses>,
    ) -> Option<Arc<PodProcesses>> {
        if self.closed {
            return None;
        }
        let (procs, _) = self.pods.entry(uid.to_string()).or_insert_with(|| (start(), rx.clone()));
        Some(procs.clone())
    }

    /// Forgets a pod whose processes have stopped.
    pub(crate) fn remove(&mut self, uid: &str) {
        self.pods.remove(uid);
    }

    /// Closes the table: the pods started so far, each with the latest copy of it.
    pub(crate) fn close(&mut self) -> Vec<(Arc<PodProcesses>, Arc<Pod>)> {
        self.closed = true;
        self.pods.values().map(|(p, rx)| (p.clone(), rx.borrow().pod())).collect()
    }
}

/// The pod IP allocator, as the simulated pods' workers reach it.
pub(crate) struct SharedIps(pub(crate) Arc<Ctx>);

impl SharedIps {
    pub(crate) fn get(&self, uid: &str, existing: Option<&str>) -> String {
        self.0.ips.lock().get(uid, existing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_ips_skip_addresses_in_use_and_the_service_range() {
        let mut ips = Ips { cidr: PodCidr::loopback(9), next: POD_IPS - 1, by_uid: HashMap::new() };
        let a = ips.get("a", None);
        assert_eq!(a, "127.9.239.254", "the last pod address below 127.9.240.0");
        let b = ips.get("b", None);
        assert_eq!(b, "127.9.0.2", "wraps around, past the bridge's .0.1");
        assert_eq!(ips.get("a", None), a, "one address per uid");
        let c = ips.get("c", Some("127.9.0.2"));
        assert_eq!(c, "127.9.0.2", "a pod keeps the address its status has");
        ips.forget("c");
        ips.next = 0;
        assert_ne!(ips.get("d", None), b, "an address in use is not handed out again");
        let mut fresh = Ips::new(PodCidr::private(4));
        assert_eq!(fresh.get("e", None), "10.4.0.2", "the first pod follows the gateway");
        assert_eq!(fresh.get("f", Some("127.4.0.9")), "10.4.0.3", "an address outside the range is not kept");
    }

    #[tokio::test]
    async fn a_closed_table_starts_nothing_and_hands_over_what_started_and_a_pod_starts_once() {
        let mut started = Started::default();
        let mut pod = Pod::default();
        pod.metadata.uid = Some("a".into());
        let (_tx, rx) = watch::channel(Arc::new(HeldPod::of(&pod)));
        let procs = || {
            let dir = std::env::temp_dir().join("uc-started-test");
            PodProcesses::start(
                dir,
                PathBuf::from("shim"),
                "Always".into(),
                (vec![], vec![]),
                HashSet::new(),
                String::new(),
            )
        };
        let a = started.start(&rx, "a", procs).expect("an open table starts the pod");
        let again = started.start(&rx, "a", || panic!("a pod's processes start once"));
        assert!(again.is_some_and(|p| Arc::ptr_eq(&p, &a)), "a worker run again finds the processes started");
        assert!(started.start(&rx, "b", procs).is_some());
        started.remove("b");
        let handed = started.close();
        assert_eq!(handed.len(), 1, "what started and did not stop");
        assert!(Arc::ptr_eq(&handed[0].0, &a));
        assert_eq!(handed[0].1.metadata.uid.as_deref(), Some("a"), "with the latest copy of the pod");
        let mut called = false;
        let late = started.start(&rx, "c", || {
            called = true;
            procs()
        });
        assert!(late.is_none() && !called, "nothing starts once the node is going");
    }
}
