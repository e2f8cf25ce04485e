//! Probes of a container: httpGet, tcpSocket and exec (the command runs in the container, as
//! `kubectl exec` does), with the kubelet's settings and defaults.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::exec::ExecTarget;

/// A probe's timing and thresholds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// `initialDelaySeconds`.
    pub initial_delay: Duration,
    /// `periodSeconds` (default 10).
    pub period: Duration,
    /// `timeoutSeconds` (default 1).
    pub timeout: Duration,
    /// `successThreshold` (default 1).
    pub success_threshold: u32,
    /// `failureThreshold` (default 3).
    pub failure_threshold: u32,
}

impl Settings {
    /// The settings of a probe spec.
    pub fn of(probe: &Value) -> Settings {
        let num = |k: &str, d: u64| probe.get(k).and_then(Value::as_u64).unwrap_or(d);
        Settings {
            initial_delay: Duration::from_secs(num("initialDelaySeconds", 0)),
            period: Duration::from_secs(num("periodSeconds", 10).max(1)),
            timeout: Duration::from_secs(num("timeoutSeconds", 1).max(1)),
            success_threshold: num("successThreshold", 1).max(1) as u32,
            failure_threshold: num("failureThreshold", 3).max(1) as u32,
        }
    }
}

/// A port of a probe: a number, or the name of one of the container's ports.
pub fn port_of(port: &Value, container: &Value) -> Option<u16> {
    match port {
        Value::Number(n) => n.as_u64().and_then(|p| u16::try_from(p).ok()),
        Value::String(name) => container
            .get("ports")?
            .as_array()?
            .iter()
            .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|p| p.get("containerPort").and_then(Value::as_u64))
            .and_then(|p| u16::try_from(p).ok()),
        _ => None,
    }
}

/// Runs a probe once against the container at `ip`; whether it succeeded within `timeout`.
pub async fn run(probe: &Value, container: &Value, target: &ExecTarget, timeout: Duration) -> bool {
    tokio::time::timeout(timeout, once(probe, container, target)).await.unwrap_or(false)
}

async fn once(probe: &Value, container: &Value, target: &ExecTarget) -> bool {
    let ip = if target.ip.is_empty() { "127.0.0.1" } else { target.ip.as_str() };
    if let Some(h) = probe.get("httpGet") {
        let host = h.get("host").and_then(Value::as_str).unwrap_or(ip);
        let Some(port) = h.get("port").and_then(|p| port_of(p, container)) else { return false };
        let path = h.get("path").and_then(Value::as_str).unwrap_or("/");
        let Ok(mut s) = tokio::net::TcpStream::connect((host, port)).await else { return false };
        let req = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nUser-Agent: kube-probe/1.33 (uc)\r\n\r\n");
        if s.write_all(req.as_bytes()).await.is_err() {
            return false;
        }
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).await.unwrap_or(0);
        let line = String::from_utf8_lossy(&buf[..n]);
        return line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse::<u16>().ok())
            .is_some_and(|c| (200..400).contains(&c));
    }
    if let Some(t) = probe.get("tcpSocket") {
        let host = t.get("host").and_then(Value::as_str).unwrap_or(ip);
        let Some(port) = t.get("port").and_then(|p| port_of(p, container)) else { return false };
        return tokio::net::TcpStream::connect((host, port)).await.is_ok();
    }
    if let Some(cmd) = probe.pointer("/exec/command").and_then(Value::as_array) {
        let argv: Vec<String> = cmd.iter().filter_map(|x| x.as_str().map(String::from)).collect();
        let Ok(mut command) = crate::exec::command(target, &argv) else { return false };
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).kill_on_drop(true);
        return command.status().await.is_ok_and(|s| s.success());
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_take_the_kubelets_defaults() {
        let s = Settings::of(&json!({"periodSeconds": 0, "failureThreshold": 5}));
        assert_eq!(s.period, Duration::from_secs(1), "at least a second");
        assert_eq!(s.failure_threshold, 5);
        assert_eq!(s.timeout, Duration::from_secs(1));
        let c = json!({"ports": [{"name": "client", "containerPort": 2379}]});
        assert_eq!(port_of(&json!("client"), &c), Some(2379));
        assert_eq!(port_of(&json!(8080), &c), Some(8080));
        assert_eq!(port_of(&json!("nope"), &c), None);
    }
}
