//! Probes of a container: httpGet, tcpSocket and exec (the command runs in the container, as
//! `kubectl exec` does), with the kubelet's settings and defaults.

use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::exec::ExecTarget;

/// Why a probe failed (what the container answered, or why nothing did).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProbeFailure(pub String);

impl From<String> for ProbeFailure {
    fn from(message: String) -> Self {
        ProbeFailure(message)
    }
}

impl From<&str> for ProbeFailure {
    fn from(message: &str) -> Self {
        ProbeFailure(message.to_string())
    }
}

impl From<ProbeFailure> for String {
    fn from(e: ProbeFailure) -> String {
        e.0
    }
}

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
    pub fn of(probe: &Probe) -> Settings {
        let num = |v: Option<i32>, d: i32| v.unwrap_or(d).max(0) as u32;
        Settings {
            initial_delay: Duration::from_secs(num(probe.initial_delay_seconds, 0).into()),
            period: Duration::from_secs(num(probe.period_seconds, 10).max(1).into()),
            timeout: Duration::from_secs(num(probe.timeout_seconds, 1).max(1).into()),
            success_threshold: num(probe.success_threshold, 1).max(1),
            failure_threshold: num(probe.failure_threshold, 3).max(1),
        }
    }
}

/// A port of a probe: a number, or the name of one of the container's ports.
pub fn port_of(port: &IntOrString, container: &Container) -> Option<u16> {
    match port {
        IntOrString::Int(n) => u16::try_from(*n).ok(),
        IntOrString::String(name) => container
            .ports
            .as_ref()?
            .iter()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .and_then(|p| u16::try_from(p.container_port).ok()),
    }
}

/// Runs a probe once against the container at `ip`: Ok, or why it failed in a kubelet's words (what
/// `Unhealthy` Events say).
pub async fn run(
    probe: &Probe,
    container: &Container,
    target: &ExecTarget,
    timeout: Duration,
) -> Result<(), ProbeFailure> {
    tokio::time::timeout(timeout, once(probe, container, target)).await.unwrap_or_else(|_| {
        Err(ProbeFailure::from(format!("timeout: failed to get a response within {}s", timeout.as_secs())))
    })
}

async fn once(probe: &Probe, container: &Container, target: &ExecTarget) -> Result<(), ProbeFailure> {
    let ip = if target.ip.is_empty() { "127.0.0.1" } else { target.ip.as_str() };
    if let Some(h) = &probe.http_get {
        let host = h.host.as_deref().filter(|h| !h.is_empty()).unwrap_or(ip);
        let port = port_of(&h.port, container).ok_or_else(|| format!("port {:?} names no container port", h.port))?;
        let path = h.path.as_deref().unwrap_or("/");
        let url = format!("http://{host}:{port}{path}");
        let mut s = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(|e| format!("Get {url:?}: dial tcp {host}:{port}: connect: {}", os_words(&e)))?;
        let req = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nUser-Agent: kube-probe/1.33 (uc)\r\n\r\n");
        s.write_all(req.as_bytes()).await.map_err(|e| format!("Get {url:?}: {e}"))?;
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).await.unwrap_or(0);
        let line = String::from_utf8_lossy(&buf[..n]);
        return match line.split_whitespace().nth(1).and_then(|c| c.parse::<u16>().ok()) {
            Some(code) if (200..400).contains(&code) => Ok(()),
            Some(code) => Err(ProbeFailure::from(format!("HTTP probe failed with statuscode: {code}"))),
            None => Err(ProbeFailure::from(format!("Get {url:?}: malformed HTTP response"))),
        };
    }
    if let Some(t) = &probe.tcp_socket {
        let host = t.host.as_deref().filter(|h| !h.is_empty()).unwrap_or(ip);
        let port = port_of(&t.port, container).ok_or_else(|| format!("port {:?} names no container port", t.port))?;
        tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(|e| format!("dial tcp {host}:{port}: connect: {}", os_words(&e)))?;
        return Ok(());
    }
    if let Some(argv) = probe.exec.as_ref().and_then(|e| e.command.as_ref()) {
        let mut command = crate::exec::command(target, argv).map_err(|e| e.to_string())?;
        command.stdin(Stdio::null()).kill_on_drop(true);
        let out = command.output().await.map_err(|e| format!("{argv:?}: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        let said = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).trim().to_string();
        return Err(ProbeFailure(if said.is_empty() {
            format!("command {argv:?} exited with {}", out.status)
        } else {
            said
        }));
    }
    Err(ProbeFailure::from("the probe has no handler"))
}

/// An I/O error as Go's net package words it (`connection refused`).
fn os_words(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_take_the_kubelets_defaults() {
        let probe: Probe = serde_json::from_value(json!({"periodSeconds": 0, "failureThreshold": 5})).unwrap();
        let s = Settings::of(&probe);
        assert_eq!(s.period, Duration::from_secs(1), "at least a second");
        assert_eq!(s.failure_threshold, 5);
        assert_eq!(s.timeout, Duration::from_secs(1));
        assert_eq!((s.initial_delay, s.success_threshold), (Duration::ZERO, 1));
        let c: Container =
            serde_json::from_value(json!({"name": "etcd", "ports": [{"name": "client", "containerPort": 2379}]}))
                .unwrap();
        assert_eq!(port_of(&IntOrString::String("client".into()), &c), Some(2379));
        assert_eq!(port_of(&IntOrString::Int(8080), &c), Some(8080));
        assert_eq!(port_of(&IntOrString::Int(70000), &c), None);
        assert_eq!(port_of(&IntOrString::String("nope".into()), &c), None);
    }
}
