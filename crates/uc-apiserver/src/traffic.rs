//! Per-client traffic counters, served on `/metrics`: how many requests each client made and how many
//! response-body bytes it was sent (watch streams included, counted as they are written). A client is
//! named by its `User-Agent`, as kube-apiserver's own metrics do; uc's components set theirs
//! (`uc-engine`, `uc-node`), and so do the benchmark's controllers.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Counters of one client.
#[derive(Debug, Default)]
pub struct Counters {
    /// Requests made.
    pub requests: AtomicU64,
    /// Response-body bytes sent.
    pub bytes: AtomicU64,
}

/// All clients' counters.
#[derive(Debug, Default)]
pub struct Traffic {
    clients: Mutex<BTreeMap<String, Arc<Counters>>>,
}

/// At most this many distinct clients are told apart; the rest are counted together.
const MAX_CLIENTS: usize = 1000;

/// The client name of a `User-Agent` value: printable ASCII, at most 128 characters.
pub fn client_name(user_agent: Option<&str>) -> String {
    let ua = user_agent.unwrap_or_default().trim();
    if ua.is_empty() {
        return "unknown".into();
    }
    ua.chars().filter(|c| c.is_ascii_graphic() || *c == ' ').take(128).collect()
}

impl Traffic {
    /// The counters of a client, counting one request.
    pub fn request(&self, client: &str) -> Arc<Counters> {
        let mut clients = self.clients.lock();
        let key = if clients.len() >= MAX_CLIENTS && !clients.contains_key(client) { "other" } else { client };
        let c = clients.entry(key.to_string()).or_default().clone();
        c.requests.fetch_add(1, Ordering::Relaxed);
        c
    }

    /// Prometheus text exposition of every client's counters.
    pub fn render(&self) -> String {
        let clients = self.clients.lock();
        let mut out = String::new();
        let label = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        out.push_str("# HELP apiserver_client_requests_total Requests made, per client (User-Agent).\n");
        out.push_str("# TYPE apiserver_client_requests_total counter\n");
        for (name, c) in clients.iter() {
            let _ = writeln!(
                out,
                "apiserver_client_requests_total{{client=\"{}\"}} {}",
                label(name),
                c.requests.load(Ordering::Relaxed)
            );
        }
        out.push_str(
            "# HELP apiserver_client_response_bytes_total Response-body bytes sent, per client (User-Agent).\n",
        );
        out.push_str("# TYPE apiserver_client_response_bytes_total counter\n");
        for (name, c) in clients.iter() {
            let _ = writeln!(
                out,
                "apiserver_client_response_bytes_total{{client=\"{}\"}} {}",
                label(name),
                c.bytes.load(Ordering::Relaxed)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_client_and_renders_prometheus_text() {
        let t = Traffic::default();
        let a = t.request(&client_name(Some("uc-engine/0.1")));
        a.bytes.fetch_add(100, Ordering::Relaxed);
        t.request("uc-engine/0.1").bytes.fetch_add(5, Ordering::Relaxed);
        t.request(&client_name(None));
        let text = t.render();
        assert!(text.contains("apiserver_client_requests_total{client=\"uc-engine/0.1\"} 2\n"), "{text}");
        assert!(text.contains("apiserver_client_response_bytes_total{client=\"uc-engine/0.1\"} 105\n"));
        assert!(text.contains("apiserver_client_requests_total{client=\"unknown\"} 1\n"));
        assert_eq!(client_name(Some("a\"b\u{7}c")), "a\"bc");
        assert!(t.render().contains("client=\"unknown\""));
    }
}
