//! How `uc up`'s pods are networked: a network namespace each on the cluster's bridge where the node
//! can make them (root, the pod sandbox, the CNI plugins), else the machine's network with loopback
//! addresses; and the range their addresses come from.

use anyhow::Context;
use uc_node::network::{Network, PodCidr, collisions, host};

/// The flags that choose it.
pub struct Choice<'a> {
    /// `--pod-cidr`.
    pub cidr: Option<PodCidr>,
    /// `--pod-subnet` (or the one chosen for the data directory before).
    pub subnet: Option<u8>,
    /// `--no-pod-network`.
    pub off: bool,
    /// Whether pods get their sandbox.
    pub sandbox: bool,
    /// The data directory (keeps the subnet chosen for it).
    pub data_dir: &'a std::path::Path,
}

/// The pod network `uc up` runs with.
pub fn choose(c: Choice<'_>) -> anyhow::Result<Network> {
    let why_not = if c.off {
        Some("--no-pod-network".to_string())
    } else if !c.sandbox {
        Some("it needs the pod sandbox".to_string())
    } else {
        host::unavailable()
    };
    if let Some(why) = why_not {
        tracing::warn!(
            "pods share the machine's network ({why}): two listening on one port collide, and pod addresses are on loopback"
        );
        let n = match c.subnet {
            Some(n) => n,
            None => subnet(c.data_dir, |_| false)?,
        };
        return Ok(Network::Loopback(PodCidr::loopback(n)));
    }
    if let Some(cidr) = c.cidr {
        return Ok(Network::Bridged(cidr));
    }
    let n = match c.subnet {
        Some(n) => n,
        None => {
            // A new data directory's range avoids what the machine has (a VPN's 10.x, another bridge).
            let routes = command("ip", &["-j", "-4", "route", "show", "table", "all"])?;
            let addresses = command("ip", &["-j", "-4", "addr"])?;
            let taken = uc_node::network::parse_taken(&routes, &addresses);
            subnet(c.data_dir, |n| !collisions(&PodCidr::private(n), &taken).is_empty())?
        }
    };
    Ok(Network::Bridged(PodCidr::private(n)))
}

fn command(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = std::process::Command::new(program).args(args).output().with_context(|| format!("running {program}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Records `--pod-subnet` for the data directory.
pub fn keep_subnet(data_dir: &std::path::Path, n: u8) -> anyhow::Result<()> {
    std::fs::write(data_dir.join("pod-subnet"), n.to_string()).context("writing pod-subnet")
}

/// The second octet of this cluster's pod addresses: chosen once per data directory, at random (and
/// not one `taken` refuses), so that several `uc up` on one machine do not hand out the same
/// addresses.
fn subnet(data_dir: &std::path::Path, taken: impl Fn(u8) -> bool) -> anyhow::Result<u8> {
    let path = data_dir.join("pod-subnet");
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(n) = text.trim().parse::<u8>()
        && (1..=254).contains(&n)
    {
        return Ok(n);
    }
    let seed = std::process::id() as u64
        ^ std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let n = (0..254u64).map(|i| 1 + ((seed + i * 97) % 254) as u8).find(|n| !taken(*n)).ok_or_else(|| {
        anyhow::anyhow!("every 10.N.0.0/16 overlaps a route or address of this machine; choose a range with --pod-cidr")
    })?;
    keep_subnet(data_dir, n)?;
    Ok(n)
}

/// Parses `--pod-cidr`.
pub fn parse_cidr(text: &str) -> Result<PodCidr, uc_node::network::CidrError> {
    PodCidr::parse(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_directory_keeps_its_subnet_and_a_new_one_avoids_what_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let n = subnet(dir.path(), |n| n != 42).unwrap();
        assert_eq!(n, 42, "the one subnet not taken");
        assert_eq!(subnet(dir.path(), |_| true).unwrap(), 42, "kept for the data directory");
        let other = tempfile::tempdir().unwrap();
        assert!(subnet(other.path(), |_| true).unwrap_err().to_string().contains("--pod-cidr"));
    }
}
