//! A webhook's credentials, read once when its controller starts (as Metacontroller does; changing
//! the controller object re-reads them): the CA bundle, the `Authorization` header and the client
//! certificate, from the hook's own settings or else from the `endpointConfigs` entry of its host.

use base64::Engine as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use uc_api::controller::Webhook;
use uc_api::webhook_auth::{Authorization, BasicAuth, CaBundle, ClientTls, EndpointConfig, KeyRef, endpoint_for};

/// Why a hook's credentials could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CredentialsError(pub String);

impl From<String> for CredentialsError {
    fn from(message: String) -> Self {
        CredentialsError(message)
    }
}

impl From<&str> for CredentialsError {
    fn from(message: &str) -> Self {
        CredentialsError(message.to_string())
    }
}

impl From<CredentialsError> for String {
    fn from(e: CredentialsError) -> String {
        e.0
    }
}

/// What a webhook call needs beyond its URL.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Credentials {
    /// PEM CA certificates to trust (none: the public roots).
    pub ca_pem: Option<Vec<u8>>,
    /// The `Authorization` header's value.
    pub authorization: Option<String>,
    /// PEM client certificate chain and private key.
    pub client_identity: Option<(Vec<u8>, Vec<u8>)>,
}

/// The settings that apply to a webhook: its own when it sets any, else its host's endpoint config
/// (whole: the two are not merged).
struct Settings<'a> {
    ca_bundle: Option<&'a CaBundle>,
    authorization: Option<&'a Authorization>,
    basic_auth: Option<&'a BasicAuth>,
    client_tls: Option<&'a ClientTls>,
    bearer_token: Option<&'a str>,
}

fn settings<'a>(hook: &'a Webhook, url: &str, configs: &'a [EndpointConfig]) -> Settings<'a> {
    let own = Settings {
        ca_bundle: hook.ca_bundle.as_ref(),
        authorization: hook.authorization.as_ref(),
        basic_auth: hook.basic_auth.as_ref(),
        client_tls: hook.client_tls.as_ref(),
        bearer_token: hook.bearer_token.as_deref(),
    };
    let any_own = own.ca_bundle.is_some()
        || own.authorization.is_some()
        || own.basic_auth.is_some()
        || own.client_tls.is_some()
        || own.bearer_token.is_some();
    match endpoint_for(url, configs) {
        Some(c) if !any_own => Settings {
            ca_bundle: c.ca_bundle.as_ref(),
            authorization: c.authorization.as_ref(),
            basic_auth: c.basic_auth.as_ref(),
            client_tls: c.client_tls.as_ref(),
            bearer_token: None,
        },
        _ => own,
    }
}

/// Reads the credentials of a webhook at `url`; an error names the field and the missing object.
/// Without a client (`uc hook test`), only settings written in the spec can be used.
pub async fn resolve(
    client: Option<&kube::Client>,
    hook: &Webhook,
    url: &str,
    configs: &[EndpointConfig],
) -> Result<Credentials, CredentialsError> {
    let s = settings(hook, url, configs);
    if s.authorization.is_some() && s.basic_auth.is_some() {
        return Err(CredentialsError::from("authorization and basicAuth are mutually exclusive"));
    }
    let ca_pem = match s.ca_bundle {
        None => None,
        Some(CaBundle::Pem(pem)) => Some(decode_pem(pem)),
        Some(CaBundle::Source(src)) => {
            let set = [src.inline.is_some(), src.secret_ref.is_some(), src.config_map_ref.is_some()];
            if set.iter().filter(|x| **x).count() != 1 {
                return Err(CredentialsError::from("caBundle: set exactly one of inline, secretRef, configMapRef"));
            }
            Some(match (&src.inline, &src.secret_ref, &src.config_map_ref) {
                (Some(pem), _, _) => pem.as_bytes().to_vec(),
                (_, Some(r), _) => {
                    secret_key(client, &r.name, &r.namespace, key_or(r, "ca.crt"), "caBundle.secretRef").await?
                }
                (_, _, Some(r)) => config_map_key(client, r, "caBundle.configMapRef").await?,
                _ => unreachable!("one source is set"),
            })
        }
    };
    let mut out = Credentials { ca_pem, ..Default::default() };
    if let Some(a) = s.authorization {
        let scheme = a.type_.clone().unwrap_or_else(|| "Bearer".into());
        if scheme.eq_ignore_ascii_case("basic") {
            return Err(CredentialsError::from("authorization.type: use basicAuth for Basic authentication"));
        }
        let key = a.secret_ref.key.as_deref().ok_or("authorization.secretRef.key is required")?;
        let token =
            secret_key(client, &a.secret_ref.name, &a.secret_ref.namespace, key, "authorization.secretRef").await?;
        out.authorization = Some(format!("{scheme} {}", String::from_utf8_lossy(&token).trim()));
    } else if let Some(b) = s.basic_auth {
        let (name, ns) = (&b.secret_ref.name, &b.secret_ref.namespace);
        let user = secret_key(client, name, ns, b.username_key.as_deref().unwrap_or("username"), "basicAuth").await?;
        let pass = secret_key(client, name, ns, b.password_key.as_deref().unwrap_or("password"), "basicAuth").await?;
        let pair = [user.as_slice(), b":", pass.as_slice()].concat();
        out.authorization = Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)));
    } else if let Some(t) = s.bearer_token {
        out.authorization = Some(format!("Bearer {t}"));
    }
    if let Some(c) = s.client_tls {
        let (name, ns) = (&c.secret_ref.name, &c.secret_ref.namespace);
        let cert = secret_key(client, name, ns, c.cert_key.as_deref().unwrap_or("tls.crt"), "clientTLS").await?;
        let key = secret_key(client, name, ns, c.private_key_key.as_deref().unwrap_or("tls.key"), "clientTLS").await?;
        out.client_identity = Some((cert, key));
    }
    Ok(out)
}

/// An API error in the server's words.
fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} ({})", s.message, s.code),
        other => other.to_string(),
    }
}

fn key_or<'a>(r: &'a KeyRef, default: &'a str) -> &'a str {
    r.key.as_deref().unwrap_or(default)
}

/// PEM as written, or base64 of PEM (Kubernetes' `caBundle` form).
pub fn decode_pem(s: &str) -> Vec<u8> {
    if s.contains("-----BEGIN") {
        return s.as_bytes().to_vec();
    }
    base64::engine::general_purpose::STANDARD.decode(s.trim()).unwrap_or_else(|_| s.as_bytes().to_vec())
}

async fn secret_key(
    client: Option<&kube::Client>,
    name: &str,
    ns: &str,
    key: &str,
    field: &str,
) -> Result<Vec<u8>, CredentialsError> {
    let client = client.ok_or_else(|| format!("{field}: reading secret {ns}/{name} needs a cluster"))?;
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    let secret = api.get(name).await.map_err(|e| format!("{field}: secret {ns}/{name}: {}", api_message(&e)))?;
    secret
        .data
        .and_then(|mut d| d.remove(key))
        .map(|b| b.0)
        .ok_or_else(|| CredentialsError(format!("{field}: secret {ns}/{name} has no key {key:?}")))
}

async fn config_map_key(client: Option<&kube::Client>, r: &KeyRef, field: &str) -> Result<Vec<u8>, CredentialsError> {
    let client =
        client.ok_or_else(|| format!("{field}: reading configMap {}/{} needs a cluster", r.namespace, r.name))?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &r.namespace);
    let (ns, name, key) = (&r.namespace, &r.name, key_or(r, "ca.crt"));
    let cm = api.get(name).await.map_err(|e| format!("{field}: configMap {ns}/{name}: {}", api_message(&e)))?;
    cm.data
        .and_then(|mut d| d.remove(key))
        .map(String::into_bytes)
        .ok_or_else(|| CredentialsError(format!("{field}: configMap {ns}/{name} has no key {key:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_hooks_own_settings_win_over_its_hosts_whole() {
        let configs: Vec<EndpointConfig> = serde_json::from_value(json!([{
            "host": "hook.ns", "caBundle": {"inline": "CA"},
            "authorization": {"secretRef": {"name": "t", "namespace": "ns", "key": "token"}}
        }]))
        .unwrap();
        let plain: Webhook = serde_json::from_value(json!({"url": "https://hook.ns/sync"})).unwrap();
        let s = settings(&plain, "https://hook.ns/sync", &configs);
        assert!(s.ca_bundle.is_some() && s.authorization.is_some(), "the host's");
        let own: Webhook = serde_json::from_value(json!({"url": "https://hook.ns/sync", "caBundle": "PEM"})).unwrap();
        let s = settings(&own, "https://hook.ns/sync", &configs);
        assert!(s.ca_bundle.is_some() && s.authorization.is_none(), "no merging");
        let s = settings(&plain, "https://elsewhere/sync", &configs);
        assert!(s.ca_bundle.is_none());
    }

    #[test]
    fn pem_or_base64() {
        assert_eq!(decode_pem("-----BEGIN X-----"), b"-----BEGIN X-----");
        assert_eq!(decode_pem("LS0tLS1CRUdJTg=="), b"-----BEGIN");
    }
}
