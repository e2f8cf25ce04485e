//! Cluster DNS for pod processes: the same names as the node's hosts files, answered over UDP on the
//! node's DNS address, so that a name that appears after a program first looked (a pod that just got
//! its address) resolves at once. Go programs keep /etc/hosts for five seconds after reading it; etcd's
//! leader looking up a member being added waited out that cache before it could reach the member.
//!
//! Each pod process sees a resolv.conf of its namespace (as Kubernetes writes it: this server first,
//! the search path `<ns>.svc.cluster.local svc.cluster.local cluster.local`, `ndots:5`) followed by the
//! machine's own nameservers, which answer every other name: this server refuses names outside the
//! cluster's domains, so resolvers go on to the next one.
//!
//! The message handling is pure ([`answer`]); [`serve`] is the socket.

use std::net::Ipv4Addr;
use std::sync::Arc;

use uc_api::dns::{CLUSTERSET_DOMAIN, DOMAIN};

/// What the cluster knows of a name.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// Its addresses.
    Found(Vec<Ipv4Addr>),
    /// A name in the cluster's domains that nothing has.
    NoSuchName,
    /// A name outside the cluster's domains: another nameserver's.
    NotOurs,
}

/// Whether a (lower-case, dot-less at the end) name is in the domains the cluster answers for.
pub fn in_zone(name: &str) -> bool {
    [DOMAIN, CLUSTERSET_DOMAIN].iter().any(|d| name == *d || name.ends_with(&format!(".{d}")))
}

const TYPE_A: u16 = 1;
const TYPE_ANY: u16 = 255;
const CLASS_IN: u16 = 1;
const RCODE_NXDOMAIN: u8 = 3;
const RCODE_REFUSED: u8 = 5;
const RCODE_FORMERR: u8 = 1;
/// Seconds a resolver may keep an answer: names follow pods, so briefly.
const TTL: u32 = 5;

/// The one question of a query: its name (lower case, without the final dot), type and class, and
/// where the question section ends.
fn question(query: &[u8]) -> Option<(String, u16, u16, usize)> {
    let mut at = 12;
    let mut labels = Vec::new();
    loop {
        let len = *query.get(at)? as usize;
        at += 1;
        if len == 0 {
            break;
        }
        // Queries carry no compression pointers; a label is at most 63 bytes.
        if len > 63 {
            return None;
        }
        let label = query.get(at..at + len)?;
        labels.push(String::from_utf8_lossy(label).to_ascii_lowercase());
        at += len;
    }
    let qtype = u16::from_be_bytes([*query.get(at)?, *query.get(at + 1)?]);
    let qclass = u16::from_be_bytes([*query.get(at + 2)?, *query.get(at + 3)?]);
    Some((labels.join("."), qtype, qclass, at + 4))
}

/// The response to one DNS query, or None for what is not a query at all (a response, a truncated
/// packet). Names the cluster has get their A records (any other type: no records, no error); names in
/// its domains it does not have are NXDOMAIN; others are refused.
pub fn answer(query: &[u8], lookup: impl Fn(&str) -> Lookup) -> Option<Vec<u8>> {
    if query.len() < 12 || query[2] & 0x80 != 0 {
        return None;
    }
    let opcode = (query[2] >> 3) & 0x0f;
    let qdcount = u16::from_be_bytes([query[4], query[5]]);
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(&query[0..2]);
    // QR, the query's opcode and RD, AA; RA.
    out.push(0x80 | (opcode << 3) | 0x04 | (query[2] & 0x01));
    let parsed = if opcode == 0 && qdcount == 1 { question(query) } else { None };
    let Some((name, qtype, qclass, end)) = parsed else {
        out.push(0x80 | RCODE_FORMERR);
        out.extend_from_slice(&[0; 8]);
        return Some(out);
    };
    let (rcode, addresses) = match lookup(&name) {
        Lookup::Found(ips) if qclass == CLASS_IN && (qtype == TYPE_A || qtype == TYPE_ANY) => (0, ips),
        Lookup::Found(_) => (0, Vec::new()),
        Lookup::NoSuchName => (RCODE_NXDOMAIN, Vec::new()),
        Lookup::NotOurs => (RCODE_REFUSED, Vec::new()),
    };
    out.push(0x80 | rcode);
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&(addresses.len() as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&query[12..end]);
    for ip in addresses {
        // The name is the question's (a pointer to offset 12).
        out.extend_from_slice(&[0xc0, 12]);
        out.extend_from_slice(&TYPE_A.to_be_bytes());
        out.extend_from_slice(&CLASS_IN.to_be_bytes());
        out.extend_from_slice(&TTL.to_be_bytes());
        out.extend_from_slice(&4u16.to_be_bytes());
        out.extend_from_slice(&ip.octets());
    }
    Some(out)
}

/// The resolv.conf a pod of `namespace` sees: the node's server first, then the machine's own
/// nameservers (resolvers read at most three), the cluster's search path before the machine's, and
/// Kubernetes' `ndots:5`.
pub fn resolv_conf(server: Ipv4Addr, namespace: &str, machine: &str) -> String {
    let mut nameservers = vec![server.to_string()];
    let mut search = vec![format!("{namespace}.svc.{DOMAIN}"), format!("svc.{DOMAIN}"), DOMAIN.to_string()];
    for line in machine.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("nameserver") => nameservers.extend(words.next().map(String::from)),
            Some("search" | "domain") => search.extend(words.map(String::from)),
            _ => {}
        }
    }
    nameservers.dedup();
    nameservers.truncate(3);
    let mut out = String::from("# written by the uc node agent\n");
    for n in nameservers {
        out.push_str(&format!("nameserver {n}\n"));
    }
    out.push_str(&format!("search {}\noptions ndots:5\n", search.join(" ")));
    out
}

/// Answers queries on `socket` from `lookup` until the task is dropped.
pub async fn serve(socket: tokio::net::UdpSocket, lookup: Arc<dyn Fn(&str) -> Lookup + Send + Sync>) {
    let mut buf = vec![0u8; 1500];
    loop {
        let Ok((n, peer)) = socket.recv_from(&mut buf).await else { continue };
        if let Some(reply) = answer(&buf[..n], |name| lookup(name)) {
            let _ = socket.send_to(&reply, peer).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query as resolvers send it: id 0x1234, RD, one question.
    fn query(name: &str, qtype: u16) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name.split('.') {
            q.push(label.len() as u8);
            q.extend_from_slice(label.as_bytes());
        }
        q.push(0);
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&CLASS_IN.to_be_bytes());
        q
    }

    fn cluster(name: &str) -> Lookup {
        match name {
            "web-0.web.default.svc.cluster.local" => Lookup::Found(vec![Ipv4Addr::new(127, 3, 0, 7)]),
            n if in_zone(n) => Lookup::NoSuchName,
            _ => Lookup::NotOurs,
        }
    }

    fn rcode(reply: &[u8]) -> u8 {
        reply[3] & 0x0f
    }

    fn answers(reply: &[u8]) -> u16 {
        u16::from_be_bytes([reply[6], reply[7]])
    }

    #[test]
    fn a_name_the_cluster_has_gets_its_address_whatever_its_case() {
        let q = query("Web-0.web.default.svc.cluster.local", TYPE_A);
        let reply = answer(&q, cluster).unwrap();
        assert_eq!(&reply[0..2], &[0x12, 0x34], "the query's id");
        assert_eq!(reply[2] & 0x85, 0x85, "a response, authoritative, recursion desired echoed");
        assert_eq!((rcode(&reply), answers(&reply)), (0, 1));
        assert_eq!(&reply[12..q.len()], &q[12..], "the question echoed");
        let record = &reply[q.len()..];
        assert_eq!(&record[0..2], &[0xc0, 12], "the question's name");
        assert_eq!(u16::from_be_bytes([record[2], record[3]]), TYPE_A);
        assert_eq!(&record[12..16], &[127, 3, 0, 7]);
    }

    #[test]
    fn other_types_of_a_known_name_have_no_records_and_no_error() {
        let reply = answer(&query("web-0.web.default.svc.cluster.local", 28), cluster).unwrap();
        assert_eq!((rcode(&reply), answers(&reply)), (0, 0));
        assert!(reply[2] & 0x04 != 0, "authoritative: not a lame referral to Go's resolver");
    }

    #[test]
    fn missing_names_in_the_zone_do_not_exist_and_others_are_refused() {
        let reply = answer(&query("nope.default.svc.cluster.local", TYPE_A), cluster).unwrap();
        assert_eq!((rcode(&reply), answers(&reply)), (RCODE_NXDOMAIN, 0));
        let reply = answer(&query("example.com", TYPE_A), cluster).unwrap();
        assert_eq!(rcode(&reply), RCODE_REFUSED, "the machine's nameservers answer it");
        assert!(in_zone("a.b.svc.clusterset.local") && in_zone("cluster.local") && !in_zone("notcluster.local"));
    }

    #[test]
    fn what_is_not_a_query_gets_nothing_or_a_format_error() {
        assert_eq!(answer(&[0; 5], cluster), None, "too short");
        let mut response = query("a.cluster.local", TYPE_A);
        response[2] |= 0x80;
        assert_eq!(answer(&response, cluster), None, "a response is not answered");
        let truncated = &query("web-0.web.default.svc.cluster.local", TYPE_A)[..20];
        assert_eq!(rcode(&answer(truncated, cluster).unwrap()), RCODE_FORMERR);
    }

    #[test]
    fn a_pods_resolv_conf_puts_the_cluster_first_and_keeps_the_machines_servers() {
        let machine = "# comment\nnameserver 10.0.0.2\nnameserver 10.0.0.3\nnameserver 10.0.0.4\nsearch corp.example\n";
        let conf = resolv_conf(Ipv4Addr::new(127, 3, 239, 255), "team", machine);
        assert_eq!(
            conf,
            "# written by the uc node agent\nnameserver 127.3.239.255\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n\
             search team.svc.cluster.local svc.cluster.local cluster.local corp.example\noptions ndots:5\n"
        );
        let alone = resolv_conf(Ipv4Addr::new(10, 3, 0, 1), "team", "");
        assert!(alone.contains("nameserver 10.3.0.1\nsearch") && alone.matches("nameserver").count() == 1, "{alone}");
    }
}
