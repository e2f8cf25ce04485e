//! What the node's parts share: its options, the pod IP allocator, and the context every pod worker
//! holds.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use parking_lot::Mutex;

use crate::allowlist::Allowlist;
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
    /// Pod IPs are `127.<pod_subnet>.x.y`; distinct per `uc up` so two on one machine do not collide.
    pub pod_subnet: u8,
    /// Where PersistentVolumeClaim directories live (`<dir>/<namespace>/<claim>`).
    pub volumes_dir: PathBuf,
    /// The `uc` binary, run as `uc shim` for each container.
    pub shim: PathBuf,
    /// The token the API server presents to the node's kubelet endpoint.
    pub kubelet_token: String,
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
            pod_subnet: 1,
            volumes_dir: std::env::temp_dir().join("uc-volumes"),
            shim: PathBuf::from("uc"),
            kubelet_token: String::new(),
            kubelet_port: 0,
            api_server: None,
            sandbox: false,
            hidden: Vec::new(),
        }
    }
}

/// The last pod address of the subnet's pod range: 127.N.240.0/20 is the Services'.
const POD_IPS: u32 = 240 * 256 - 2;

/// Pod IPs from 127.<subnet>.0.0/16 (below the Services' 127.<subnet>.240.0/20), one per pod uid.
pub(crate) struct Ips {
    subnet: u8,
    next: u32,
    by_uid: HashMap<String, String>,
}

impl Ips {
    pub(crate) fn new(subnet: u8) -> Self {
        Ips { subnet, next: 0, by_uid: HashMap::new() }
    }

    pub(crate) fn get(&mut self, uid: &str, existing: Option<&str>) -> String {
        if let Some(ip) = self.by_uid.get(uid) {
            return ip.clone();
        }
        let prefix = format!("127.{}.", self.subnet);
        let ip = match existing.filter(|ip| ip.starts_with(&prefix)) {
            Some(ip) => ip.to_string(),
            None => {
                let used: HashSet<&String> = self.by_uid.values().collect();
                let mut ip = String::new();
                for _ in 0..POD_IPS {
                    self.next = self.next % POD_IPS + 1;
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
    pub(crate) options: NodeOptions,
    pub(crate) ips: Mutex<Ips>,
    pub(crate) hosts: Option<Arc<names::HostsFiles>>,
    pub(crate) objects: objects::Objects,
    pub(crate) pods: Pods,
    pub(crate) shutting_down: AtomicBool,
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
        let mut ips = Ips { subnet: 9, next: POD_IPS - 1, by_uid: HashMap::new() };
        let a = ips.get("a", None);
        assert_eq!(a, "127.9.239.254", "the last pod address below 127.9.240.0");
        let b = ips.get("b", None);
        assert_eq!(b, "127.9.0.1", "wraps around");
        assert_eq!(ips.get("a", None), a, "one address per uid");
        let c = ips.get("c", Some("127.9.0.1"));
        assert_eq!(c, "127.9.0.1", "a pod keeps the address its status has");
        ips.forget("c");
        ips.next = 0;
        assert_ne!(ips.get("d", None), b, "an address in use is not handed out again");
    }
}
