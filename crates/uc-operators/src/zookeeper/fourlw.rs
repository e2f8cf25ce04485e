//! ZooKeeper's four-letter words (`srvr`, `conf`, `mntr`) over TCP: what each server says of itself —
//! its mode, last zxid, the configuration it runs. Parsing is pure; `ask` is the I/O.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Why a server did not answer a four-letter word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FourLetterError(pub String);

impl From<String> for FourLetterError {
    fn from(message: String) -> Self {
        FourLetterError(message)
    }
}

impl From<&str> for FourLetterError {
    fn from(message: &str) -> Self {
        FourLetterError(message.to_string())
    }
}

impl From<FourLetterError> for String {
    fn from(e: FourLetterError) -> String {
        e.0
    }
}

/// How long one question may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(2);
/// The most of an answer read.
const MAX_ANSWER: u64 = 256 * 1024;

/// Sends a four-letter word to `addr` (`host:port`) and returns the answer.
pub async fn ask(addr: &str, word: &str) -> Result<String, FourLetterError> {
    let exchange = async {
        let mut s = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        s.write_all(word.as_bytes()).await.map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        s.take(MAX_ANSWER).read_to_end(&mut out).await.map_err(|e| e.to_string())?;
        Ok::<_, String>(String::from_utf8_lossy(&out).into_owned())
    };
    match tokio::time::timeout(TIMEOUT, exchange).await {
        Ok(r) => r.map_err(|e| FourLetterError(format!("{addr}: {e}"))),
        Err(_) => Err(FourLetterError::from(format!("{addr}: no answer to {word} within {} s", TIMEOUT.as_secs()))),
    }
}

/// What `srvr` says: a serving server's mode and last zxid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Srvr {
    /// `leader`, `follower`, `observer` (`standalone` never: the operator disables it).
    pub mode: String,
    /// The last zxid, as printed (`0x100000003`).
    pub zxid: String,
}

impl Srvr {
    /// The zxid as a number (epoch in the high 32 bits).
    pub fn zxid_value(&self) -> u64 {
        u64::from_str_radix(self.zxid.trim_start_matches("0x"), 16).unwrap_or(0)
    }
}

/// Parses a `srvr` answer; `None` for a server that does not serve (`This ZooKeeper instance is not
/// currently serving requests`).
pub fn parse_srvr(answer: &str) -> Option<Srvr> {
    let field = |name: &str| {
        answer.lines().find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string())).filter(|v| !v.is_empty())
    };
    Some(Srvr { mode: field("Mode:")?, zxid: field("Zxid:").unwrap_or_default() })
}

/// The configuration a server runs, from `conf`: its members' lines and the configuration's version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// `server.<id>` → the rest of the line (`host:2888:3888:participant;host:2181`).
    pub servers: BTreeMap<u32, String>,
    /// The configuration's version (hex, as ZooKeeper prints it), if any.
    pub version: Option<String>,
}

impl Config {
    /// Ids of the voting members.
    pub fn participants(&self) -> Vec<u32> {
        self.servers.iter().filter(|(_, l)| !l.contains(":observer")).map(|(id, _)| *id).collect()
    }

    /// Ids of the observers.
    pub fn observers(&self) -> Vec<u32> {
        self.servers.iter().filter(|(_, l)| l.contains(":observer")).map(|(id, _)| *id).collect()
    }
}

/// Parses a `conf` answer (or a dynamic configuration file): `server.N=...` lines and `version=...`.
pub fn parse_conf(answer: &str) -> Config {
    let mut c = Config::default();
    for line in answer.lines().map(str::trim) {
        if let Some((key, value)) = line.split_once('=') {
            if let Some(id) = key.strip_prefix("server.").and_then(|n| n.parse().ok()) {
                c.servers.insert(id, value.to_string());
            } else if key == "version" {
                c.version = Some(value.to_string());
            }
        }
    }
    c
}

/// Parses a `mntr` answer: `zk_<key>\t<value>` lines.
pub fn parse_mntr(answer: &str) -> BTreeMap<String, String> {
    answer
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srvr_of_a_serving_and_a_starting_server() {
        let serving = "Zookeeper version: 3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f, built on 2022-02-25 08:49 UTC\n\
                       Latency min/avg/max: 0/0.0/0\nReceived: 3\nSent: 2\nConnections: 1\nOutstanding: 0\n\
                       Zxid: 0x100000003\nMode: leader\nNode count: 5\nProposal sizes last/min/max: -1/-1/-1\n";
        let s = parse_srvr(serving).unwrap();
        assert_eq!((s.mode.as_str(), s.zxid.as_str()), ("leader", "0x100000003"));
        assert_eq!(s.zxid_value(), 0x1_0000_0003);
        assert_eq!(parse_srvr("This ZooKeeper instance is not currently serving requests\n"), None);
    }

    #[test]
    fn conf_lists_members_by_role() {
        let answer = "clientPort=2181\ndataDir=/data/version-2\n\
                      server.1=zk-0.zk-headless.ns.svc.cluster.local:2888:3888:participant;zk-0.zk-headless.ns.svc.cluster.local:2181\n\
                      server.2=zk-1.zk-headless.ns.svc.cluster.local:2888:3888:participant;zk-1.zk-headless.ns.svc.cluster.local:2181\n\
                      server.4=zk-3.zk-headless.ns.svc.cluster.local:2888:3888:observer;zk-3.zk-headless.ns.svc.cluster.local:2181\n\
                      version=100000004\n";
        let c = parse_conf(answer);
        assert_eq!(c.participants(), vec![1, 2]);
        assert_eq!(c.observers(), vec![4]);
        assert_eq!(c.version.as_deref(), Some("100000004"));
    }

    #[test]
    fn mntr_is_a_table() {
        let m = parse_mntr("zk_version\t3.8.0\nzk_server_state\tfollower\nzk_synced_followers\t2\n");
        assert_eq!(m["zk_server_state"], "follower");
        assert_eq!(m.len(), 3);
    }
}
