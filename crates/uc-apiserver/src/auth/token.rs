//! Service account tokens: JSON Web Tokens with kube-apiserver's claims (`iss`, `sub`, `aud`, `exp`,
//! `iat`, `nbf`, and `kubernetes.io` naming the namespace, the account and the pod it is bound to),
//! signed with HMAC-SHA256 under a key kept in the data directory. Only this API server verifies
//! them, so a shared key is enough; clients treat the token as opaque, as they do kube's.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use serde::{Deserialize, Serialize};

/// The issuer and default audience of the tokens, as in a kubeadm cluster.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The key tokens are signed with.
pub struct Key(hmac::Key);

impl Key {
    /// A key from its bytes.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, bytes))
    }

    /// The key stored in `dir/sa.key`, created on first use.
    pub fn load_or_create(dir: &Path) -> std::io::Result<Self> {
        let path = dir.join("sa.key");
        if let Ok(text) = std::fs::read_to_string(&path)
            && let Ok(bytes) = URL_SAFE_NO_PAD.decode(text.trim())
            && bytes.len() >= 32
        {
            return Ok(Self::from_bytes(&bytes));
        }
        let bytes: [u8; 32] = rand::random();
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, URL_SAFE_NO_PAD.encode(bytes))?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
        }
        std::fs::rename(&tmp, &path)?;
        Ok(Self::from_bytes(&bytes))
    }
}

/// An object a token is bound to (`kubernetes.io.pod`, `kubernetes.io.serviceaccount`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ref {
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

/// The Kubernetes part of the claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubeClaims {
    /// Namespace of the account.
    pub namespace: String,
    /// The account.
    pub serviceaccount: Ref,
    /// The pod the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
}

/// A token's claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Issuer.
    pub iss: String,
    /// Subject: `system:serviceaccount:<namespace>:<name>`.
    pub sub: String,
    /// Audiences.
    pub aud: Vec<String>,
    /// Expiry (seconds since the epoch).
    pub exp: i64,
    /// Issued at.
    pub iat: i64,
    /// Not before.
    pub nbf: i64,
    /// Which account (and pod).
    #[serde(rename = "kubernetes.io")]
    pub kube: KubeClaims,
}

/// Why a token is not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not three base64url parts, or the claims do not decode.
    #[error("malformed token")]
    Malformed,
    /// The signature does not verify.
    #[error("invalid signature")]
    Signature,
    /// Past `exp` or before `nbf`.
    #[error("token has expired")]
    Expired,
    /// None of the token's audiences is one the verifier accepts.
    #[error("token audiences {0:?} do not include the expected one")]
    Audience(Vec<String>),
}

/// Signs `claims` into a compact JWT.
pub fn sign(key: &Key, claims: &Claims) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).unwrap_or_default());
    let signing_input = format!("{header}.{body}");
    let tag = hmac::sign(&key.0, signing_input.as_bytes());
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

/// Whether `token` has the shape of a JWT (so that other bearer tokens are not reported as bad JWTs).
pub fn looks_like_jwt(token: &str) -> bool {
    token.starts_with("eyJ") && token.split('.').count() == 3
}

/// The claims of a token signed with `key`, valid at `now` and for one of `audiences`.
pub fn verify(key: &Key, token: &str, now: i64, audiences: &[&str]) -> Result<Claims, TokenError> {
    let mut parts = token.split('.');
    let (Some(header), Some(body), Some(sig), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(TokenError::Malformed);
    };
    let sig = URL_SAFE_NO_PAD.decode(sig).map_err(|_| TokenError::Malformed)?;
    hmac::verify(&key.0, format!("{header}.{body}").as_bytes(), &sig).map_err(|_| TokenError::Signature)?;
    let claims: Claims =
        URL_SAFE_NO_PAD.decode(body).ok().and_then(|b| serde_json::from_slice(&b).ok()).ok_or(TokenError::Malformed)?;
    if now >= claims.exp || now < claims.nbf {
        return Err(TokenError::Expired);
    }
    if !claims.aud.iter().any(|a| audiences.contains(&a.as_str())) {
        return Err(TokenError::Audience(claims.aud));
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(now: i64) -> Claims {
        Claims {
            iss: ISSUER.into(),
            sub: "system:serviceaccount:a:sa".into(),
            aud: vec![ISSUER.into()],
            exp: now + 3600,
            iat: now,
            nbf: now,
            kube: KubeClaims {
                namespace: "a".into(),
                serviceaccount: Ref { name: "sa".into(), uid: "u1".into() },
                pod: None,
            },
        }
    }

    #[test]
    fn a_signed_token_verifies_until_it_expires() {
        let key = Key::from_bytes(&[7; 32]);
        let token = sign(&key, &claims(1000));
        assert!(looks_like_jwt(&token));
        assert_eq!(verify(&key, &token, 1000, &[ISSUER]), Ok(claims(1000)));
        assert_eq!(verify(&key, &token, 4600, &[ISSUER]), Err(TokenError::Expired));
        assert_eq!(verify(&key, &token, 999, &[ISSUER]), Err(TokenError::Expired), "not before");
        assert!(matches!(verify(&key, &token, 1000, &["vault"]), Err(TokenError::Audience(_))));
    }

    #[test]
    fn another_key_or_a_changed_claim_fails() {
        let key = Key::from_bytes(&[7; 32]);
        let token = sign(&key, &claims(1000));
        assert_eq!(verify(&Key::from_bytes(&[8; 32]), &token, 1000, &[ISSUER]), Err(TokenError::Signature));
        let mut forged = claims(1000);
        forged.sub = "system:serviceaccount:kube-system:admin".into();
        let forged_body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        let parts: Vec<&str> = token.split('.').collect();
        let tampered = format!("{}.{}.{}", parts[0], forged_body, parts[2]);
        assert_eq!(verify(&key, &tampered, 1000, &[ISSUER]), Err(TokenError::Signature));
        assert_eq!(verify(&key, "a.b", 1000, &[ISSUER]), Err(TokenError::Malformed));
    }
}
