//! Member clusters: a client per `Cluster` (its `apiEndpoint`, and the `token` and `caBundle` of its
//! `secretRef`, as Karmada's push mode reads them), and whether each answers.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use crate::kinds::Kinds;
use crate::types::{Cluster, MemberCluster};
use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

/// One member cluster.
pub struct Member {
    pub name: String,
    pub client: kube::Client,
    pub kinds: Arc<Kinds>,
    pub labels: BTreeMap<String, String>,
    /// It answered its last health check.
    pub ready: bool,
    /// Why not, or its version.
    pub message: String,
    pub version: String,
    /// What the client was built from (endpoint, secret's resourceVersion, TLS setting).
    source: String,
}

/// Every member cluster known.
#[derive(Default)]
pub struct Members {
    pub by_name: HashMap<String, Member>,
}

impl Members {
    /// The members as the scheduler sees them.
    pub fn for_scheduling(&self) -> Vec<MemberCluster> {
        let mut v: Vec<MemberCluster> = self
            .by_name
            .values()
            .map(|m| MemberCluster { name: m.name.clone(), labels: m.labels.clone(), ready: m.ready })
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Brings the clients in line with the `Cluster` objects and checks each member's health.
    pub async fn refresh(&mut self, control_plane: &kube::Client, clusters: &[Cluster]) {
        let names: Vec<&str> = clusters.iter().map(|c| c.metadata.name.as_deref().unwrap_or_default()).collect();
        self.by_name.retain(|n, _| names.contains(&n.as_str()));
        for c in clusters {
            let name = c.metadata.name.clone().unwrap_or_default();
            let labels = c.metadata.labels.clone().unwrap_or_default();
            let secret = read_secret(control_plane, c).await;
            let source = format!(
                "{}|{}|{}",
                c.spec.api_endpoint,
                secret.as_ref().map(|s| s.metadata.resource_version.clone().unwrap_or_default()).unwrap_or_default(),
                c.spec.insecure_skip_tls_verification
            );
            if self.by_name.get(&name).is_none_or(|m| m.source != source) {
                match client_for(c, secret.as_ref()) {
                    Ok(client) => {
                        let kinds = Arc::new(Kinds::default());
                        let m = Member {
                            name: name.clone(),
                            client,
                            kinds,
                            labels: labels.clone(),
                            ready: false,
                            message: String::new(),
                            version: String::new(),
                            source,
                        };
                        self.by_name.insert(name.clone(), m);
                    }
                    Err(e) => {
                        tracing::warn!(cluster = %name, error = %e, "cannot build a client for the member cluster");
                        self.by_name.remove(&name);
                        continue;
                    }
                }
            }
            let m = self.by_name.get_mut(&name).expect("inserted above");
            m.labels = labels;
            let was_ready = m.ready;
            match tokio::time::timeout(Duration::from_secs(5), m.client.apiserver_version()).await {
                Ok(Ok(v)) => {
                    m.ready = true;
                    m.version = v.git_version;
                    m.message = "cluster is healthy and ready to accept workloads".into();
                }
                Ok(Err(e)) => {
                    m.ready = false;
                    m.message = format!("cluster is not reachable: {}", uc_engine::dynamic::api_error(&e));
                }
                Err(_) => {
                    m.ready = false;
                    m.message = "cluster is not reachable: no answer in 5s".into();
                }
            }
            if was_ready && !m.ready {
                // A member that comes back may serve other kinds (CRDs installed meanwhile).
                m.kinds.forget();
            }
        }
    }
}

async fn read_secret(control_plane: &kube::Client, cluster: &Cluster) -> Option<Secret> {
    let r = cluster.spec.secret_ref.as_ref().filter(|r| !r.name.is_empty())?;
    Api::<Secret>::namespaced(control_plane.clone(), &r.namespace).get_opt(&r.name).await.ok().flatten()
}

/// Why no client of a member can be made from its `Cluster` and Secret.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    /// `spec.apiEndpoint` is not a URL.
    #[error("spec.apiEndpoint {0}")]
    Endpoint(String),
    /// The credentials Secret does not hold usable credentials.
    #[error("{0}")]
    Credentials(String),
    /// The client could not be built.
    #[error("{0}")]
    Client(kube::Error),
}

/// A client of a member, from its `Cluster` and credentials Secret (`token`, `caBundle`).
fn client_for(cluster: &Cluster, secret: Option<&Secret>) -> Result<kube::Client, MemberError> {
    let endpoint = cluster.spec.api_endpoint.as_str();
    if endpoint.is_empty() {
        return Err(MemberError::Endpoint("it is empty".into()));
    }
    let url = if endpoint.contains("://") { endpoint.to_string() } else { format!("https://{endpoint}") };
    let mut config = kube::Config::new(url.parse().map_err(|e| MemberError::Endpoint(format!("{url:?}: {e}")))?);
    config.connect_timeout = Some(Duration::from_secs(3));
    config.read_timeout = Some(Duration::from_secs(20));
    config.accept_invalid_certs = cluster.spec.insecure_skip_tls_verification;
    let data = secret.and_then(|s| s.data.as_ref());
    if let Some(token) = data.and_then(|d| d.get("token")) {
        let token = String::from_utf8_lossy(&token.0).trim().to_string();
        config.auth_info = kube::config::AuthInfo { token: Some(token.into()), ..Default::default() };
    }
    if let Some(ca) = data.and_then(|d| d.get("caBundle")) {
        // The bundle is PEM; some write it base64-encoded once more.
        let mut pem = ca.0.clone();
        if !String::from_utf8_lossy(&pem).contains("-----BEGIN")
            && let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(pem.trim_ascii())
        {
            pem = decoded;
        }
        let ders: Vec<Vec<u8>> =
            rustls_pemfile::certs(&mut pem.as_slice()).filter_map(Result::ok).map(|c| c.as_ref().to_vec()).collect();
        if ders.is_empty() {
            return Err(MemberError::Credentials("the secret's caBundle holds no certificate".into()));
        }
        config.root_cert = Some(ders);
    }
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(concat!("uc-karmada/", env!("CARGO_PKG_VERSION"))),
    ));
    kube::Client::try_from(config).map_err(MemberError::Client)
}
