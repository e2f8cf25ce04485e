//! Cluster IPs of Services, as kube-apiserver allocates them from its service range: a Service that
//! does not ask for none (`clusterIP: None`, headless) gets a free address of the range, or the one it
//! names if that is free and in the range; the address stays with it for its life.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};
use uc_api::Pointer;

use crate::error::FieldError;

/// An IPv4 range (`a.b.c.d/len`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceRange {
    base: u32,
    size: u32,
}

/// A Service IP range that cannot be used.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{cidr:?}: {reason}")]
pub struct CidrError {
    cidr: String,
    reason: String,
}

impl ServiceRange {
    /// Parses `a.b.c.d/len` (len 16..=30).
    pub fn parse(cidr: &str) -> Result<ServiceRange, CidrError> {
        let bad = |reason: String| CidrError { cidr: cidr.to_string(), reason };
        let (ip, len) = cidr.split_once('/').ok_or_else(|| bad("not a.b.c.d/length".into()))?;
        let ip: Ipv4Addr = ip.parse().map_err(|e: std::net::AddrParseError| bad(e.to_string()))?;
        let len: u32 = len.parse().map_err(|e: std::num::ParseIntError| bad(e.to_string()))?;
        if !(16..=30).contains(&len) {
            return Err(bad("the prefix length must be between 16 and 30".into()));
        }
        let size = 1u32 << (32 - len);
        Ok(ServiceRange { base: u32::from(ip) & !(size - 1), size })
    }

    /// Whether the range holds `ip` (its network and broadcast addresses excluded).
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let n = u32::from(ip);
        n > self.base && n < self.base + self.size - 1
    }

    /// The range's first usable address (where kube puts the `kubernetes` Service).
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.base + 1)
    }

    /// A free address, starting the search at a point chosen by `seed` (so allocations spread).
    pub fn allocate(&self, in_use: &HashSet<Ipv4Addr>, seed: u64) -> Option<Ipv4Addr> {
        let usable = self.size - 2;
        let start = (seed % u64::from(usable)) as u32;
        (0..usable).map(|i| Ipv4Addr::from(self.base + 1 + (start + i) % usable)).find(|ip| !in_use.contains(ip))
    }
}

/// Whether a Service gets a cluster IP (not headless, not ExternalName).
pub fn wants_ip(svc: &Value) -> bool {
    let ty = svc.at("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
    let ip = svc.at("/spec/clusterIP").and_then(Value::as_str).unwrap_or_default();
    ty != "ExternalName" && ip != "None"
}

/// The cluster IPs in use.
pub fn in_use<'a>(services: impl IntoIterator<Item = &'a Value>) -> HashSet<Ipv4Addr> {
    services.into_iter().filter_map(|s| s.at("/spec/clusterIP").and_then(Value::as_str)?.parse().ok()).collect()
}

/// Gives a new Service its cluster IP (`spec.clusterIP` and `spec.clusterIPs`).
pub fn assign(range: &ServiceRange, svc: &mut Value, in_use: &HashSet<Ipv4Addr>, seed: u64) -> Result<(), FieldError> {
    if !wants_ip(svc) {
        if svc.at("/spec/clusterIP").and_then(Value::as_str) == Some("None") {
            svc["spec"]["clusterIPs"] = json!(["None"]);
        }
        return Ok(());
    }
    let asked = svc.at("/spec/clusterIP").and_then(Value::as_str).filter(|s| !s.is_empty()).map(String::from);
    let ip = match asked {
        Some(a) => {
            let ip: Ipv4Addr = a
                .parse()
                .map_err(|_| FieldError::invalid("spec.clusterIP", &json!(a), "must be a valid IP address"))?;
            if !range.contains(ip) {
                return Err(FieldError::invalid("spec.clusterIP", &json!(a), "provided IP is not in the valid range"));
            }
            if in_use.contains(&ip) {
                return Err(FieldError::invalid("spec.clusterIP", &json!(a), "provided IP is already allocated"));
            }
            ip
        }
        None => range.allocate(in_use, seed).ok_or_else(|| {
            FieldError::invalid(
                "spec.clusterIP",
                &json!(""),
                "failed to allocate a cluster IP: the service range is full",
            )
        })?,
    };
    if let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("clusterIP".into(), json!(ip.to_string()));
        spec.insert("clusterIPs".into(), json!([ip.to_string()]));
    }
    Ok(())
}

/// On update: a Service keeps its cluster IP (an update that leaves it out keeps the old one, as
/// kube-apiserver does); changing it is refused.
pub fn keep(old: &Value, new: &mut Value) -> Result<(), FieldError> {
    let old_ip = old.at("/spec/clusterIP").and_then(Value::as_str).unwrap_or_default();
    if old_ip.is_empty() || !new.get("spec").is_some_and(Value::is_object) {
        return Ok(());
    }
    let new_ip = new.at("/spec/clusterIP").and_then(Value::as_str).unwrap_or_default().to_string();
    if new_ip.is_empty() {
        new["spec"]["clusterIP"] = json!(old_ip);
        new["spec"]["clusterIPs"] = old.at("/spec/clusterIPs").cloned().unwrap_or_else(|| json!([old_ip]));
        return Ok(());
    }
    if new_ip != old_ip {
        return Err(FieldError::invalid("spec.clusterIP", &json!(new_ip), "field is immutable"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_within_the_range() {
        let r = ServiceRange::parse("127.9.240.0/20").unwrap();
        assert!(r.contains("127.9.240.1".parse().unwrap()));
        assert!(!r.contains("127.9.240.0".parse().unwrap()) && !r.contains("127.9.255.255".parse().unwrap()));
        assert!(!r.contains("127.9.0.5".parse().unwrap()));
        let mut used = HashSet::new();
        let mut svc = json!({"spec": {"ports": [{"port": 80}]}});
        assign(&r, &mut svc, &used, 7).unwrap();
        let ip: Ipv4Addr = svc["spec"]["clusterIP"].as_str().unwrap().parse().unwrap();
        assert!(r.contains(ip));
        assert_eq!(svc["spec"]["clusterIPs"], json!([ip.to_string()]));
        used.insert(ip);
        let mut same_seed = json!({"spec": {}});
        assign(&r, &mut same_seed, &used, 7).unwrap();
        assert_ne!(same_seed["spec"]["clusterIP"], svc["spec"]["clusterIP"], "a used address is skipped");
        let mut taken = json!({"spec": {"clusterIP": ip.to_string()}});
        assert!(assign(&r, &mut taken, &used, 0).unwrap_err().to_string().contains("already allocated"));
        let mut headless = json!({"spec": {"clusterIP": "None"}});
        assign(&r, &mut headless, &used, 0).unwrap();
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
        let tiny = ServiceRange::parse("127.9.240.0/30").unwrap();
        let full: HashSet<Ipv4Addr> = ["127.9.240.1", "127.9.240.2"].iter().map(|s| s.parse().unwrap()).collect();
        assert!(assign(&tiny, &mut json!({"spec": {}}), &full, 0).is_err());
    }

    #[test]
    fn the_address_stays_with_the_service() {
        let old = json!({"spec": {"clusterIP": "127.9.240.5", "clusterIPs": ["127.9.240.5"]}});
        let mut replaced = json!({"spec": {"ports": []}});
        keep(&old, &mut replaced).unwrap();
        assert_eq!(replaced["spec"]["clusterIP"], json!("127.9.240.5"));
        let mut changed = json!({"spec": {"clusterIP": "127.9.240.6"}});
        assert!(keep(&old, &mut changed).unwrap_err().to_string().contains("immutable"));
    }
}
