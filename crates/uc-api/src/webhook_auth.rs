//! How a webhook hook is reached securely, in Metacontroller's field names: a CA bundle (inline or from
//! a Secret or ConfigMap), an `Authorization` header or basic auth from a Secret, a client certificate,
//! ETag caching, and per-host `endpointConfigs`. Only the matching is here; reading Secrets is the
//! engine's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A CA bundle: PEM text (uc's form) or Metacontroller's `{inline | secretRef | configMapRef}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CaBundle {
    /// PEM, or base64 of PEM.
    Pem(String),
    /// Exactly one source.
    Source(CaBundleSource),
}

/// The sources of a CA bundle.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaBundleSource {
    /// PEM in the spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<String>,
    /// A key of a Secret (default key `ca.crt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<KeyRef>,
    /// A key of a ConfigMap (default key `ca.crt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<KeyRef>,
}

/// A key of a Secret or ConfigMap.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KeyRef {
    /// Object name.
    pub name: String,
    /// Object namespace.
    pub namespace: String,
    /// The key (defaults depend on the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// A Secret by name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SecretRef {
    /// Secret name.
    pub name: String,
    /// Secret namespace.
    pub namespace: String,
}

/// An `Authorization: <type> <credential>` header, the credential from a Secret key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Authorization {
    /// The scheme (default `Bearer`; not `Basic`, which is `basicAuth`).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Where the credential is (the key is required).
    pub secret_ref: KeyRef,
}

/// HTTP basic authentication from one Secret.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BasicAuth {
    /// The Secret.
    pub secret_ref: SecretRef,
    /// Key of the user name (default `username`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username_key: Option<String>,
    /// Key of the password (default `password`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_key: Option<String>,
}

/// A client certificate and key from one Secret.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientTls {
    /// The Secret.
    pub secret_ref: SecretRef,
    /// Key of the PEM certificate (default `tls.crt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_key: Option<String>,
    /// Key of the PEM private key (default `tls.key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_key: Option<String>,
}

/// ETag caching of a webhook's answers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Etag {
    /// On or off (default off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// How long a cached answer is kept (seconds, default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_timeout_seconds: Option<i64>,
    /// How often forgotten answers are dropped (seconds; uc drops them on use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_cleanup_seconds: Option<i64>,
}

/// Connection settings for every webhook of one host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointConfig {
    /// `host` or `host:port`, case-insensitive; 80 and 443 are the same as no port. A Service
    /// webhook's host is `name.namespace[:port]`.
    pub host: String,
    /// See the webhook's `caBundle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "ca_bundle_schema")]
    pub ca_bundle: Option<CaBundle>,
    /// See the webhook's `authorization`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<Authorization>,
    /// See the webhook's `basicAuth`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<BasicAuth>,
    /// See the webhook's `clientTLS`.
    #[serde(default, rename = "clientTLS", skip_serializing_if = "Option::is_none")]
    pub client_tls: Option<ClientTls>,
}

/// The schema of `caBundle`: a string or an object.
pub fn ca_bundle_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "PEM (or base64 PEM), or {inline | secretRef | configMapRef}.",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// The host of a URL as endpoint configs name it: lowercase, without the default port of its scheme.
pub fn endpoint_host(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map(|(_, h)| h).unwrap_or(authority).to_ascii_lowercase();
    Some(normalize_host(&authority, scheme))
}

fn normalize_host(host: &str, scheme: &str) -> String {
    let host = host.to_ascii_lowercase();
    match host.rsplit_once(':') {
        Some((h, "80")) if scheme == "http" || scheme.is_empty() => h.to_string(),
        Some((h, "443")) if scheme == "https" || scheme.is_empty() => h.to_string(),
        _ => host,
    }
}

/// The endpoint config for a webhook URL, if one names its host. A Service webhook's URL is
/// `<name>.<namespace>.svc[:port]`; its config may name it `name.namespace[:port]`.
pub fn endpoint_for<'a>(url: &str, configs: &'a [EndpointConfig]) -> Option<&'a EndpointConfig> {
    let host = endpoint_host(url)?;
    let short = match host.split_once(':') {
        Some((h, port)) => h.strip_suffix(".svc").map(|h| format!("{h}:{port}")),
        None => host.strip_suffix(".svc").map(str::to_string),
    };
    configs.iter().find(|c| {
        let want = normalize_host(&c.host, "");
        want == host || short.as_deref() == Some(want.as_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ca_bundles_in_both_forms() {
        let pem: CaBundle = serde_json::from_value(json!("-----BEGIN CERTIFICATE-----")).unwrap();
        assert!(matches!(pem, CaBundle::Pem(_)));
        let s: CaBundle = serde_json::from_value(json!({"secretRef": {"name": "s", "namespace": "n"}})).unwrap();
        let CaBundle::Source(src) = s else { panic!("a source") };
        assert_eq!(src.secret_ref.unwrap().key, None);
    }

    #[test]
    fn endpoint_configs_match_hosts_as_metacontroller_does() {
        let configs: Vec<EndpointConfig> = serde_json::from_value(json!([
            {"host": "Hook.NS"}, {"host": "other:8443"}, {"host": "plain.example:443"}
        ]))
        .unwrap();
        let host = |url: &str| endpoint_for(url, &configs).map(|c| c.host.as_str());
        assert_eq!(host("https://hook.ns/sync"), Some("Hook.NS"));
        assert_eq!(host("http://hook.ns:80/sync"), Some("Hook.NS"), "the default port is no port");
        assert_eq!(host("https://hook.ns.svc:443/x"), Some("Hook.NS"), "a Service webhook's URL");
        assert_eq!(host("https://hook.ns:8443/sync"), None, "another port");
        assert_eq!(host("https://other:8443/"), Some("other:8443"));
        assert_eq!(host("https://plain.example/"), Some("plain.example:443"));
        assert_eq!(host("https://nothing/"), None);
        assert_eq!(endpoint_host("https://user@Host:443/p?q"), Some("host".into()));
    }
}
