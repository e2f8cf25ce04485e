//! What the node reports of the machine it runs on, read as a kubelet reads it: `status.nodeInfo` —
//! the OS image (`PRETTY_NAME` of `/etc/os-release`), the kernel release, the machine, boot and system
//! ids — and its CPUs and memory (`capacity`, and `allocatable`: the memory less the kubelet's default
//! hard eviction threshold of 100Mi), which are also what the downward API gives for a limit a
//! container does not set (`env.rs`). The parsers are pure; [`info`] and [`Resources::read`] read.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use k8s_openapi::api::core::v1::NodeSystemInfo;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The kubelet version the node reports.
pub const KUBELET_VERSION: &str = "v1.33.0-uc";

/// The `PRETTY_NAME` of an os-release file (its quotes removed), else `Linux` as the kubelet says.
pub fn os_image(os_release: &str) -> String {
    let pretty = os_release.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="));
    pretty
        .map(|v| v.trim().trim_matches(['"', '\'']).to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "Linux".into())
}

/// The machine's `nodeInfo`, read now; what cannot be read is left empty.
pub fn info() -> NodeSystemInfo {
    let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default();
    NodeSystemInfo {
        architecture: std::env::consts::ARCH.into(),
        boot_id: read("/proc/sys/kernel/random/boot_id"),
        container_runtime_version: "uc://process".into(),
        kernel_version: rustix::system::uname().release().to_string_lossy().into_owned(),
        kube_proxy_version: String::new(),
        kubelet_version: KUBELET_VERSION.into(),
        machine_id: read("/etc/machine-id"),
        operating_system: "linux".into(),
        os_image: os_image(&read("/etc/os-release")),
        system_uuid: read("/sys/class/dmi/id/product_uuid"),
        ..Default::default()
    }
}

/// The CPUs and memory of the machine the node runs pods on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    pub cpus: u32,
    pub memory_kib: u64,
}

/// The kubelet's default `evictionHard` `memory.available`, kept out of what pods are offered.
const EVICTION_KIB: u64 = 100 * 1024;

/// The pods a node takes (a kubelet's `maxPods` is 110; uc's node runs thousands of simulated ones).
const MAX_PODS: &str = "10000";

impl Resources {
    /// What the node offers before it has read the machine (and in unit tests): 2 CPUs, 24Gi.
    pub const FALLBACK: Resources = Resources { cpus: 2, memory_kib: 24 * 1024 * 1024 };

    /// This machine's online CPUs and total memory (the fallback's figure for one that cannot be read).
    pub fn read() -> Resources {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let threads = || std::thread::available_parallelism().ok().and_then(|n| u32::try_from(n.get()).ok());
        Resources {
            cpus: cpu_count(&read("/sys/devices/system/cpu/online")).or_else(threads).unwrap_or(Self::FALLBACK.cpus),
            memory_kib: mem_total_kib(&read("/proc/meminfo")).unwrap_or(Self::FALLBACK.memory_kib),
        }
    }

    /// The Node's `status.capacity`.
    pub fn capacity(&self) -> BTreeMap<String, Quantity> {
        self.quantities(self.memory_kib)
    }

    /// The Node's `status.allocatable`.
    pub fn allocatable(&self) -> BTreeMap<String, Quantity> {
        self.quantities(self.allocatable_kib())
    }

    fn allocatable_kib(&self) -> u64 {
        self.memory_kib.saturating_sub(EVICTION_KIB)
    }

    /// The allocatable memory in bytes.
    pub fn allocatable_bytes(&self) -> f64 {
        self.allocatable_kib() as f64 * 1024.0
    }

    fn quantities(&self, memory_kib: u64) -> BTreeMap<String, Quantity> {
        BTreeMap::from([
            ("cpu".to_string(), Quantity(self.cpus.to_string())),
            ("memory".to_string(), Quantity(format!("{memory_kib}Ki"))),
            ("pods".to_string(), Quantity(MAX_PODS.into())),
        ])
    }
}

static NODE: OnceLock<Resources> = OnceLock::new();

/// Sets what this process's node offers (once, at its start).
pub fn set_node(resources: Resources) {
    let _ = NODE.set(resources);
}

/// What this process's node offers: read at its start, the fallback before.
pub fn node() -> Resources {
    NODE.get().copied().unwrap_or(Resources::FALLBACK)
}

/// The number of CPUs a kernel's CPU list names (`0-3,6` is 5).
pub fn cpu_count(list: &str) -> Option<u32> {
    let mut n = 0;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => b.trim().parse::<u32>().ok()?.checked_sub(a.trim().parse().ok()?)? + 1,
            None => part.trim().parse::<u32>().map(|_| 1).ok()?,
        };
    }
    (n > 0).then_some(n)
}

/// `MemTotal` of `/proc/meminfo`, in KiB.
pub fn mem_total_kib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    line.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_and_memory_read_as_the_kernel_writes_them() {
        assert_eq!(cpu_count("0-1\n"), Some(2));
        assert_eq!(cpu_count("0-3,6"), Some(5));
        assert_eq!(cpu_count(""), None);
        assert_eq!(cpu_count("x"), None);
        assert_eq!(mem_total_kib("MemTotal:       24590108 kB\nMemFree: 1 kB\n"), Some(24_590_108));
        let r = Resources { cpus: 4, memory_kib: 1_048_576 };
        assert_eq!(r.capacity()["memory"].0, "1048576Ki");
        assert_eq!(r.allocatable()["memory"].0, "946176Ki", "100Mi kept for eviction");
        assert_eq!((r.allocatable()["cpu"].0.as_str(), r.allocatable()["pods"].0.as_str()), ("4", MAX_PODS));
        let here = Resources::read();
        assert!(here.cpus >= 1 && here.memory_kib > EVICTION_KIB, "{here:?}");
    }

    #[test]
    fn the_os_image_reads_as_a_kubelet_reads_it() {
        let os = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n";
        assert_eq!(os_image(os), "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(os_image("ID=alpine\n"), "Linux", "without PRETTY_NAME");
    }

    #[test]
    fn the_facts_of_this_machine_are_read() {
        let info = info();
        assert!(!info.kernel_version.is_empty(), "uname gives a release");
        assert_eq!((info.kubelet_version.as_str(), info.operating_system.as_str()), (KUBELET_VERSION, "linux"));
    }
}
