//! What the node reports of the machine it runs on (`status.nodeInfo`), read as a kubelet reads it:
//! the OS image (`PRETTY_NAME` of `/etc/os-release`), the kernel release, the machine, boot and system
//! ids. The parser is pure; [`info`] reads. (The capacity the node reports stays the fixed one the
//! downward API's defaults assume: `env.rs`.)

use k8s_openapi::api::core::v1::NodeSystemInfo;

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

#[cfg(test)]
mod tests {
    use super::*;

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
