//! Registering a member cluster, as `karmadactl join` does in push mode: its credentials (`token`,
//! `caBundle`) in a Secret in `karmada-cluster`, and a `Cluster` naming its API endpoint and that Secret.

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use crate::plane::CLUSTER_API;
use crate::types::{Cluster, ClusterSpec, LocalSecretReference};

/// The namespace of members' credentials.
pub const SECRET_NAMESPACE: &str = "karmada-cluster";

/// Why a kubeconfig does not give a member's credentials.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// Something the current context needs is not there.
    #[error("the kubeconfig has no {0}")]
    Missing(&'static str),
    /// The context names a cluster the kubeconfig does not have.
    #[error("the kubeconfig has no cluster {0:?}")]
    NoCluster(String),
    /// The user authenticates otherwise than by a bearer token.
    #[error("the kubeconfig's user has no bearer token (client certificates are not supported by join)")]
    NoToken,
    /// `certificate-authority-data` is not base64.
    #[error("certificate-authority-data: {0}")]
    CaData(String),
    /// The `certificate-authority` file cannot be read.
    #[error("{path}: {source}")]
    CaFile { path: String, source: std::io::Error },
}

/// What a member's kubeconfig says: its API endpoint, CA (PEM) and bearer token.
#[derive(Debug, Clone, PartialEq)]
pub struct Credentials {
    pub endpoint: String,
    pub ca_pem: Option<Vec<u8>>,
    pub token: String,
}

/// The current context's server, CA and token of a kubeconfig.
pub fn credentials(kubeconfig: &kube::config::Kubeconfig) -> Result<Credentials, CredentialsError> {
    let ctx_name = kubeconfig.current_context.clone().unwrap_or_default();
    let ctx = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == ctx_name)
        .or(kubeconfig.contexts.first())
        .and_then(|c| c.context.clone())
        .ok_or(CredentialsError::Missing("a context"))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| CredentialsError::NoCluster(ctx.cluster.clone()))?;
    let user = kubeconfig
        .auth_infos
        .iter()
        .find(|a| Some(&a.name) == ctx.user.as_ref())
        .and_then(|a| a.auth_info.clone())
        .ok_or(CredentialsError::Missing("a user for its context"))?;
    let token = serde_json::to_value(&user)
        .ok()
        .and_then(|u| u.get("token").and_then(Value::as_str).map(str::to_string))
        .ok_or(CredentialsError::NoToken)?;
    let ca_pem = match (&cluster.certificate_authority_data, &cluster.certificate_authority) {
        (Some(data), _) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| CredentialsError::CaData(e.to_string()))?,
        ),
        (None, Some(path)) => {
            Some(std::fs::read(path).map_err(|source| CredentialsError::CaFile { path: path.clone(), source })?)
        }
        (None, None) => None,
    };
    Ok(Credentials {
        endpoint: cluster.server.ok_or(CredentialsError::Missing("a server for its cluster"))?,
        ca_pem,
        token,
    })
}

/// The Secret and Cluster that register `name`.
pub fn objects(name: &str, creds: &Credentials) -> (Secret, Cluster) {
    let mut data = BTreeMap::from([("token".to_string(), ByteString(creds.token.clone().into_bytes()))]);
    if let Some(ca) = &creds.ca_pem {
        data.insert("caBundle".into(), ByteString(ca.clone()));
    }
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(SECRET_NAMESPACE.into()),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some(data),
        ..Default::default()
    };
    let cluster = Cluster {
        api_version: CLUSTER_API.into(),
        kind: "Cluster".into(),
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        spec: ClusterSpec {
            api_endpoint: creds.endpoint.clone(),
            sync_mode: "Push".into(),
            secret_ref: Some(LocalSecretReference { namespace: SECRET_NAMESPACE.into(), name: name.into() }),
            insecure_skip_tls_verification: creds.ca_pem.is_none(),
            ..Default::default()
        },
        status: None,
    };
    (secret, cluster)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kubeconfig_becomes_a_secret_and_a_cluster() {
        let kc: kube::config::Kubeconfig = serde_yaml_ng::from_str(
            r#"
apiVersion: v1
kind: Config
current-context: uc
clusters: [{name: uc, cluster: {server: "https://127.0.0.1:7001", certificate-authority-data: "LS0tLS1CRUdJTg=="}}]
users: [{name: admin, user: {token: secret-token}}]
contexts: [{name: uc, context: {cluster: uc, user: admin}}]
"#,
        )
        .unwrap();
        let c = credentials(&kc).unwrap();
        assert_eq!((c.endpoint.as_str(), c.token.as_str()), ("https://127.0.0.1:7001", "secret-token"));
        assert_eq!(c.ca_pem.as_deref(), Some(&b"-----BEGIN"[..]));
        let (secret, cluster) = objects("m1", &c);
        let (secret, cluster) = (uc_api::meta::json_of(&secret), uc_api::meta::json_of(&cluster));
        assert_eq!(secret["metadata"]["namespace"], SECRET_NAMESPACE);
        assert_eq!(secret["data"]["token"], "c2VjcmV0LXRva2Vu");
        assert_eq!(cluster["spec"]["secretRef"], serde_json::json!({"namespace": "karmada-cluster", "name": "m1"}));
        assert_eq!((cluster["apiVersion"].as_str(), cluster["kind"].as_str()), (Some(CLUSTER_API), Some("Cluster")));
        assert_eq!(cluster["spec"]["insecureSkipTLSVerification"], false);
    }
}
