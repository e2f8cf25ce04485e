//! Kubernetes' network model on one machine: every pod in a network namespace of its own with its
//! own address and port space, wired as a kubelet's runtime wires it — through the CNI plugins
//! (`loopback`, and `bridge` with `static` addresses from uc's allocator) — to a bridge of the
//! cluster's. The cluster owns a /16 (`--pod-cidr`): pods take the low 240 /24s, the bridge is the
//! first address (the pods' gateway and their DNS server), Services the top /20, delivered to the
//! machine's own sockets by a `local` route so that the node's service proxy can listen on any
//! cluster IP.
//!
//! Nothing leaves the machine: the bridge forwards (its own `forwarding` switch, not the machine's)
//! only to the bridges of other uc clusters on the machine (a routing table of uc's own, looked up for
//! packets that come in on a uc bridge, then `unreachable`), and an `unreachable` route for the whole
//! range stays behind the bridge's so that pod addresses never take the machine's default route, even
//! while the bridge is down.
//!
//! Where it cannot be had (uc not root, no sandbox, no CNI plugins) pods share the machine's network
//! and take addresses from `127.N.0.0/16` on loopback ([`Network::Loopback`]).
//!
//! The address plan and the plugins' configuration are pure (this file); [`host`] runs `ip` and the
//! plugins.

use std::net::Ipv4Addr;

use cni::{Address, Bridge, NetConf, Plugin, Route, StaticIpam};

/// Why a pod range does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CidrError(pub String);

impl From<String> for CidrError {
    fn from(message: String) -> Self {
        CidrError(message)
    }
}

impl From<&str> for CidrError {
    fn from(message: &str) -> Self {
        CidrError(message.to_string())
    }
}

impl From<CidrError> for String {
    fn from(e: CidrError) -> String {
        e.0
    }
}

pub mod cni;
pub mod host;
#[cfg(test)]
mod tests;

/// The routing table (and rule priority) uc's bridges forward by: "uc" in ASCII, 0x7563.
pub const TABLE: u32 = 30051;

/// Where the CNI plugins live (Debian's `containernetworking-plugins`).
pub const CNI_PATH: &str = "/usr/lib/cni";

/// A cluster's pod range: a /16 whose first 240 /24s are pods' and whose top /20 is Services'.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PodCidr {
    a: u8,
    b: u8,
}

impl PodCidr {
    /// `a.b.0.0/16`.
    pub fn parse(text: &str) -> Result<PodCidr, CidrError> {
        let (addr, len) =
            text.split_once('/').ok_or_else(|| CidrError::from(format!("{text:?} is not a CIDR (a.b.0.0/16)")))?;
        let addr: Ipv4Addr =
            addr.parse().map_err(|_| CidrError::from(format!("{text:?}: {addr:?} is not an IPv4 address")))?;
        if len != "16" {
            return Err(CidrError::from(format!(
                "{text:?}: the pod CIDR must be a /16 (pods from its low 240 /24s, Services from its top /20)"
            )));
        }
        let [a, b, c, d] = addr.octets();
        if (c, d) != (0, 0) {
            return Err(CidrError::from(format!("{text:?}: host bits set (did you mean {a}.{b}.0.0/16?)")));
        }
        let cidr = PodCidr { a, b };
        if addr.is_loopback() || addr.is_multicast() || addr.is_unspecified() || a >= 224 || a == 169 && b == 254 {
            return Err(CidrError::from(format!("{text:?} cannot hold pods")));
        }
        Ok(cidr)
    }

    /// The default range of pod subnet `n`: `10.n.0.0/16`.
    pub fn private(n: u8) -> PodCidr {
        PodCidr { a: 10, b: n }
    }

    /// `127.n.0.0/16`, pods on the machine's loopback.
    pub fn loopback(n: u8) -> PodCidr {
        PodCidr { a: 127, b: n }
    }

    /// The address `a.b.c.d`.
    pub fn at(&self, c: u8, d: u8) -> Ipv4Addr {
        Ipv4Addr::new(self.a, self.b, c, d)
    }

    /// The range's first two octets, `a.b.` (a prefix of every address in it).
    pub fn prefix(&self) -> String {
        format!("{}.{}.", self.a, self.b)
    }

    /// Whether `ip` is in the range.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let [a, b, ..] = ip.octets();
        (a, b) == (self.a, self.b)
    }

    /// The bridge's address: the pods' gateway.
    pub fn gateway(&self) -> Ipv4Addr {
        self.at(0, 1)
    }

    /// The Services' range, `a.b.240.0/20`.
    pub fn services(&self) -> String {
        format!("{}.{}.240.0/20", self.a, self.b)
    }

    /// The `kubernetes` Service's cluster IP: the Services' first address.
    pub fn kubernetes(&self) -> Ipv4Addr {
        self.at(240, 1)
    }

    /// The bridge's name (at most 15 bytes, as Linux wants).
    pub fn bridge(&self) -> String {
        format!("uc-br-{}-{}", self.a, self.b)
    }

    /// Whether the range meets `net/len`.
    pub fn overlaps(&self, net: Ipv4Addr, len: u8) -> bool {
        let len = u32::from(len.min(32));
        let mask = |l: u32| if l == 0 { 0 } else { u32::MAX << (32 - l) };
        let common = mask(len.min(16));
        u32::from(net) & common == u32::from(self.at(0, 0)) & common
    }
}

impl std::fmt::Display for PodCidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.0.0/16", self.a, self.b)
    }
}

/// How the node's pods are networked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// Each pod in a network namespace of its own on the cluster's bridge.
    Bridged(PodCidr),
    /// Pods share the machine's network, with addresses on loopback.
    Loopback(PodCidr),
}

impl Network {
    /// The pod range.
    pub fn cidr(&self) -> PodCidr {
        match self {
            Network::Bridged(c) | Network::Loopback(c) => *c,
        }
    }

    /// Whether pods have network namespaces of their own.
    pub fn bridged(&self) -> bool {
        matches!(self, Network::Bridged(_))
    }

    /// Where the node's DNS server listens for pods: the bridge's address, or on loopback the one
    /// address of the pod range no pod gets (`.239.255`).
    pub fn dns(&self) -> std::net::SocketAddrV4 {
        let ip = match self {
            Network::Bridged(c) => c.gateway(),
            Network::Loopback(c) => c.at(239, 255),
        };
        std::net::SocketAddrV4::new(ip, 53)
    }
}

/// The network namespace of a pod (`/run/netns/<name>`).
pub fn namespace_of(pod_uid: &str) -> String {
    format!("uc-{pod_uid}")
}

/// The path `ip netns` mounts a namespace at.
pub fn namespace_path(pod_uid: &str) -> std::path::PathBuf {
    std::path::Path::new("/run/netns").join(namespace_of(pod_uid))
}

/// The bridge plugin's configuration for one pod: its address from uc's allocator (`static` IPAM),
/// the bridge as its default gateway; no masquerading, so nothing is translated for the world.
pub fn bridge_config(cidr: &PodCidr, ip: Ipv4Addr) -> NetConf {
    NetConf::new(
        "uc",
        Plugin::Bridge(Bridge {
            bridge: cidr.bridge(),
            is_gateway: false,
            ip_masq: false,
            hairpin_mode: true,
            ipam: StaticIpam {
                addresses: vec![Address { address: format!("{ip}/16"), gateway: cidr.gateway().to_string() }],
                routes: vec![Route { dst: "0.0.0.0/0".into() }],
            },
        }),
    )
}

/// The loopback plugin's configuration.
pub fn loopback_config() -> NetConf {
    NetConf::new("uc-lo", Plugin::Loopback)
}

/// A route or address the machine has (from `ip -j route show table all` and `ip -j addr`).
#[derive(Clone, Debug, PartialEq)]
pub struct Taken {
    /// Its network.
    pub net: Ipv4Addr,
    /// Its prefix length.
    pub len: u8,
    /// The device, when it has one.
    pub dev: String,
    /// The route's type (`unicast`, `local`, `unreachable`, …) or `address`.
    pub kind: String,
    /// The routing table, for routes.
    pub table: String,
}

/// Reads `ip -j -4 route show table all` (routes) or `ip -j -4 addr` (addresses) output.
pub fn parse_taken(routes: &str, addresses: &str) -> Vec<Taken> {
    let mut out = Vec::new();
    let routes: Vec<serde_json::Value> = serde_json::from_str(routes).unwrap_or_default();
    for r in &routes {
        let dst = r.get("dst").and_then(|d| d.as_str()).unwrap_or_default();
        let Some((net, len)) = net_of(dst) else { continue };
        let s = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string();
        let kind = if s("type").is_empty() { "unicast".to_string() } else { s("type") };
        let table = if s("table").is_empty() { "main".to_string() } else { s("table") };
        out.push(Taken { net, len, dev: s("dev"), kind, table });
    }
    let links: Vec<serde_json::Value> = serde_json::from_str(addresses).unwrap_or_default();
    for l in &links {
        let dev = l.get("ifname").and_then(|d| d.as_str()).unwrap_or_default();
        for a in l.get("addr_info").and_then(|a| a.as_array()).into_iter().flatten() {
            let local = a.get("local").and_then(|v| v.as_str()).and_then(|v| v.parse::<Ipv4Addr>().ok());
            let len = a.get("prefixlen").and_then(|v| v.as_u64()).and_then(|v| u8::try_from(v).ok());
            if let (Some(net), Some(len)) = (local, len) {
                out.push(Taken { net, len, dev: dev.to_string(), kind: "address".into(), table: String::new() });
            }
        }
    }
    out
}

/// `a.b.c.d/len` or a bare address (a /32); `default` is not a network anything could collide with.
fn net_of(dst: &str) -> Option<(Ipv4Addr, u8)> {
    match dst.split_once('/') {
        Some((a, l)) => Some((a.parse().ok()?, l.parse().ok()?)),
        None => Some((dst.parse().ok()?, 32)),
    }
}

/// What of the machine's routes and addresses the range would collide with — leaving out uc's own
/// (its bridge's, the range's `unreachable` and the Services' `local` route, which a uc killed
/// without its clean stop leaves behind) and broadcast entries.
pub fn collisions(cidr: &PodCidr, taken: &[Taken]) -> Vec<String> {
    let ours = |t: &Taken| {
        t.dev == cidr.bridge()
            || t.kind == "broadcast"
            || (t.kind == "unreachable" && t.net == cidr.at(0, 0) && t.len == 16)
            || (t.kind == "local" && t.dev == "lo" && t.net == cidr.at(240, 0) && t.len == 20)
    };
    taken
        .iter()
        .filter(|t| t.len > 0 && cidr.overlaps(t.net, t.len) && !ours(t))
        .map(|t| match t.kind.as_str() {
            "address" => format!("the address {}/{} on {}", t.net, t.len, t.dev),
            kind => {
                let dev = if t.dev.is_empty() { String::new() } else { format!(" dev {}", t.dev) };
                format!("the {kind} route {}/{}{dev} (table {})", t.net, t.len, t.table)
            }
        })
        .collect()
}
