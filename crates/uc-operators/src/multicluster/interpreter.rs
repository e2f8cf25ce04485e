//! The resource interpreter webhook for ZookeeperCluster (Karmada's `ResourceInterpreterContext`
//! protocol): `InterpretReplica` (the spec's replicas, for scheduling), `ReviseReplica` (always 0:
//! every member gets the ZookeeperCluster with no servers, until its OverridePolicy gives it its part),
//! `InterpretStatus` (the status, with the spec's digest and generation, so that the control plane can
//! tell which spec a status is of) and `InterpretHealth`. Served over HTTPS on loopback with a
//! certificate of its own, registered by a `ResourceInterpreterWebhookConfiguration`.

use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde::Serialize;
use serde_json::{Value, json};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use uc_karmada::interpreter_context::{InterpreterContext, InterpreterRequest, InterpreterResponse, RequestStatus};
use uc_karmada::plane::CONFIG_API;
use uc_karmada::types::{
    InterpreterClientConfig, InterpreterRule, InterpreterWebhook, InterpreterWebhookConfiguration,
};

use super::plan::spec_digest;
use crate::zookeeper::types::ZookeeperCluster;

/// The configuration's name.
pub const CONFIGURATION: &str = "zookeeper.uc.njuics.cn";

/// A member's status as reflected to the control plane: the status as it is, with the digest of the spec
/// and the generation it is of (what the operator's binding view reads back).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RawStatus {
    #[serde(flatten)]
    status: serde_json::Map<String, Value>,
    spec_digest: String,
    generation: i64,
}

/// The answer to one request.
pub fn answer(request: InterpreterRequest) -> InterpreterContext {
    let obj = &request.object;
    // The typed object for what the operator reads; the spec's digest is of the JSON as stored.
    let zk: ZookeeperCluster =
        serde_json::from_value(obj.clone()).unwrap_or_else(|_| ZookeeperCluster::new("", Default::default()));
    let mut response = InterpreterResponse { uid: request.uid.clone(), successful: true, ..Default::default() };
    match request.operation.as_str() {
        "InterpretReplica" => response.replicas = Some(zk.spec.replicas.unwrap_or(0)),
        "ReviseReplica" => {
            let op = if obj.pointer("/spec/replicas").is_some() { "replace" } else { "add" };
            let patch = json!([{"op": op, "path": "/spec/replicas", "value": 0}]).to_string();
            response.patch = Some(base64::engine::general_purpose::STANDARD.encode(patch));
            response.patch_type = Some("JSONPatch".into());
        }
        "InterpretStatus" => {
            let mut status = obj.get("status").and_then(Value::as_object).cloned().unwrap_or_default();
            status.retain(|k, _| k != "specDigest" && k != "generation");
            let spec = obj.get("spec").cloned().unwrap_or_else(|| Value::Object(Default::default()));
            let digest = spec_digest(&spec);
            let raw = RawStatus { status, spec_digest: digest, generation: zk.metadata.generation.unwrap_or(0) };
            response.raw_status = serde_json::to_value(raw).ok();
        }
        "InterpretHealth" => response.healthy = Some(healthy(&zk)),
        other => {
            response.successful = false;
            let message = format!("operation {other:?} is not interpreted here");
            response.status = Some(RequestStatus { code: 400, message });
        }
    }
    InterpreterContext::answering(response)
}

/// Healthy: the operator synced this spec, every server it wants serves, nothing rolls.
fn healthy(zk: &ZookeeperCluster) -> bool {
    let want = zk.spec.replicas.unwrap_or(0);
    let status = zk.status.clone().unwrap_or_default();
    let rolling = status.conditions.iter().flatten().any(|c| c.holds("Upgrading"));
    status.observed_generation == zk.metadata.generation
        && status.replicas.unwrap_or(0) == want
        && status.ready_replicas.unwrap_or(0) == want
        && !rolling
}

/// The `ResourceInterpreterWebhookConfiguration` pointing Karmada at the webhook.
pub fn configuration(url: &str, ca_pem: &str) -> InterpreterWebhookConfiguration {
    let rule = InterpreterRule {
        operations: ["InterpretReplica", "ReviseReplica", "InterpretStatus", "InterpretHealth"]
            .map(String::from)
            .into(),
        api_groups: vec!["zookeeper.pravega.io".into()],
        api_versions: vec!["v1beta1".into()],
        kinds: vec!["ZookeeperCluster".into()],
    };
    let webhook = InterpreterWebhook {
        name: format!("zookeeperclusters.{CONFIGURATION}"),
        client_config: InterpreterClientConfig {
            url: Some(url.into()),
            service: None,
            ca_bundle: Some(base64::engine::general_purpose::STANDARD.encode(ca_pem)),
        },
        rules: vec![rule],
        interpreter_context_versions: vec!["v1alpha1".into()],
        timeout_seconds: Some(5),
    };
    InterpreterWebhookConfiguration {
        api_version: CONFIG_API.into(),
        kind: "ResourceInterpreterWebhookConfiguration".into(),
        metadata: ObjectMeta { name: Some(CONFIGURATION.into()), ..Default::default() },
        webhooks: vec![webhook],
    }
}

/// Where the webhook listens and the URL Karmada is given for it.
#[derive(Clone, Debug)]
pub struct Listen {
    /// Address to bind (port 0: a free one).
    pub addr: std::net::SocketAddr,
    /// The URL to register (default `https://<bound address>/interpret`); its host is in the
    /// certificate.
    pub url: Option<String>,
}

impl Default for Listen {
    fn default() -> Self {
        Listen { addr: std::net::SocketAddr::from(([127, 0, 0, 1], 0)), url: None }
    }
}

/// Serves the webhook over HTTPS with a certificate of its own; returns its URL and CA (PEM).
pub async fn serve(listen: Listen) -> anyhow::Result<(String, String)> {
    let key = rcgen::KeyPair::generate()?;
    let mut names = vec!["localhost".to_string()];
    let host =
        listen.url.as_deref().and_then(|u| u.parse::<http::Uri>().ok()).and_then(|u| u.host().map(str::to_string));
    if let Some(h) = host.as_ref().filter(|h| h.parse::<std::net::IpAddr>().is_err()) {
        names.push(h.clone());
    }
    let mut params = rcgen::CertificateParams::new(names)?;
    for ip in [Some(std::net::IpAddr::from([127, 0, 0, 1])), Some(listen.addr.ip()), host.and_then(|h| h.parse().ok())]
        .into_iter()
        .flatten()
        .filter(|ip: &std::net::IpAddr| !ip.is_unspecified())
    {
        params.subject_alt_names.push(rcgen::SanType::IpAddress(ip));
    }
    let cert = params.self_signed(&key)?;
    let pem = cert.pem();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind(listen.addr).await?;
    let bound = listener.local_addr()?;
    let url = listen.url.unwrap_or_else(|| format!("https://{bound}/interpret"));
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else { return };
                let service = hyper::service::service_fn(|req: hyper::Request<hyper::body::Incoming>| async move {
                    let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                    let (status, answered) = match serde_json::from_slice::<InterpreterContext>(&body) {
                        Ok(context) => (200, answer(context.request.unwrap_or_default())),
                        Err(e) => {
                            let message = format!("not a ResourceInterpreterContext: {e}");
                            let status = Some(RequestStatus { code: 400, message });
                            (400, InterpreterContext::answering(InterpreterResponse { status, ..Default::default() }))
                        }
                    };
                    let out = serde_json::to_string(&answered).unwrap_or_default();
                    hyper::Response::builder()
                        .status(status)
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from(out)))
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
            });
        }
    });
    Ok((url, pem))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(op: &str, obj: Value) -> Value {
        let request = InterpreterRequest { uid: "u1".into(), operation: op.into(), object: obj, ..Default::default() };
        uc_api::meta::json_of(&answer(request))["response"].clone()
    }

    #[test]
    fn replicas_are_read_and_revised_to_zero() {
        let zk = json!({"metadata": {"generation": 4}, "spec": {"replicas": 5}});
        assert_eq!(ask("InterpretReplica", zk.clone())["replicas"], 5);
        let r = ask("ReviseReplica", zk.clone());
        assert_eq!(
            (r["uid"].as_str(), r["successful"].as_bool(), r["patchType"].as_str()),
            (Some("u1"), Some(true), Some("JSONPatch"))
        );
        let patch = base64::engine::general_purpose::STANDARD.decode(r["patch"].as_str().unwrap()).unwrap();
        let patch: Value = serde_json::from_slice(&patch).unwrap();
        assert_eq!(patch, json!([{"op": "replace", "path": "/spec/replicas", "value": 0}]));
        assert_eq!(ask("Prune", zk)["successful"], false);
    }

    #[test]
    fn status_carries_the_spec_it_is_of_and_health_needs_every_server() {
        let mut zk = json!({"metadata": {"generation": 4}, "spec": {"replicas": 2},
                            "status": {"observedGeneration": 4, "replicas": 2, "readyReplicas": 2}});
        let s = ask("InterpretStatus", zk.clone())["rawStatus"].clone();
        assert_eq!((s["generation"].as_i64(), s["readyReplicas"].as_i64()), (Some(4), Some(2)));
        assert_eq!(s["specDigest"], json!(spec_digest(&json!({"replicas": 2}))));
        assert_eq!(ask("InterpretHealth", zk.clone())["healthy"], true);
        zk["status"]["observedGeneration"] = json!(3);
        assert_eq!(ask("InterpretHealth", zk)["healthy"], false);
    }

    #[test]
    fn the_configuration_is_what_the_control_plane_reads() {
        let written = uc_api::meta::json_of(&configuration("https://127.0.0.1:7443/", "-----BEGIN CERTIFICATE-----\n"));
        assert_eq!(written["kind"], "ResourceInterpreterWebhookConfiguration");
        assert_eq!(written["webhooks"][0]["clientConfig"]["url"], "https://127.0.0.1:7443/");
        assert_eq!(written["webhooks"][0]["timeoutSeconds"], 5);
        let read: InterpreterWebhookConfiguration = serde_json::from_value(written).unwrap();
        let (op, av) = (uc_karmada::interpret::Operation::ReviseReplica, "zookeeper.pravega.io/v1beta1");
        assert!(uc_karmada::interpret::rules_match(&read.webhooks[0], op, av, "ZookeeperCluster"));
        assert!(!uc_karmada::interpret::rules_match(&read.webhooks[0], op, "apps/v1", "Deployment"));
    }
}
