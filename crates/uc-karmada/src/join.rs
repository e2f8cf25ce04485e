//! Registering a member cluster, as `karmadactl join` does in push mode: its credentials (`token`,
//! `caBundle`) in a Secret in `karmada-cluster`, and a `Cluster` naming its API endpoint and that Secret.

use base64::Engine as _;
use serde_json::{Value, json};

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
pub fn objects(name: &str, creds: &Credentials) -> (Value, Value) {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let mut data = json!({"token": b64(creds.token.as_bytes())});
    if let Some(ca) = &creds.ca_pem {
        data["caBundle"] = json!(b64(ca));
    }
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": SECRET_NAMESPACE},
        "type": "Opaque",
        "data": data,
    });
    let cluster = json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {
            "apiEndpoint": creds.endpoint,
            "syncMode": "Push",
            "secretRef": {"namespace": SECRET_NAMESPACE, "name": name},
            "insecureSkipTLSVerification": creds.ca_pem.is_none(),
        },
    });
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
        assert_eq!(secret["metadata"]["namespace"], SECRET_NAMESPACE);
        assert_eq!(secret["data"]["token"], "c2VjcmV0LXRva2Vu");
        assert_eq!(cluster["spec"]["secretRef"], json!({"namespace": "karmada-cluster", "name": "m1"}));
        assert_eq!(cluster["spec"]["insecureSkipTLSVerification"], false);
    }
}
