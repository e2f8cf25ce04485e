//! Who may read the engine's endpoint. `/metrics` and `/debug/*` (the recorded hook calls) answer a
//! bearer token the cluster authenticates (TokenReview) and authorizes for the path
//! (SubjectAccessReview with `nonResourceAttributes`) — the way kube-apiserver guards its own
//! `/metrics` (`system:monitoring` may read it) and controller-runtime its secure metrics. `/healthz`,
//! `/livez` and `/readyz` stay open, as kube's are to everyone. Verdicts are kept for ten seconds, as
//! kube's webhook authenticator and authorizer cache theirs.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use http::StatusCode;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use parking_lot::Mutex;
use serde_json::json;

/// Why a metrics caller's token or rights could not be reviewed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReviewError(pub String);

impl From<String> for ReviewError {
    fn from(message: String) -> Self {
        ReviewError(message)
    }
}

impl From<&str> for ReviewError {
    fn from(message: &str) -> Self {
        ReviewError(message.to_string())
    }
}

impl From<ReviewError> for String {
    fn from(e: ReviewError) -> String {
        e.0
    }
}

/// How long a verdict is kept.
const KEPT: Duration = Duration::from_secs(10);
/// At most this many verdicts are kept (then they are all dropped: a flood of bad tokens cannot grow
/// the table).
const MAX_KEPT: usize = 4096;

/// Whether a path of the endpoint needs an authorized caller.
pub fn guarded(path: &str) -> bool {
    !matches!(path, "/healthz" | "/livez" | "/readyz")
}

/// What the cluster said about a caller and a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// No token, or one the cluster does not know.
    Unauthenticated,
    /// Who the caller is, and that they may not.
    Forbidden(String),
}

impl Verdict {
    /// The refusal as kube-apiserver words it (a `Status`), or None when allowed.
    pub fn refusal(&self, verb: &str, path: &str) -> Option<(StatusCode, String)> {
        let (code, reason, message) = match self {
            Verdict::Allowed => return None,
            Verdict::Unauthenticated => (401, "Unauthorized", "Unauthorized".to_string()),
            Verdict::Forbidden(user) => {
                (403, "Forbidden", format!("forbidden: User \"{user}\" cannot {verb} path \"{path}\""))
            }
        };
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": message, "reason": reason, "details": {}, "code": code});
        Some((StatusCode::from_u16(code).unwrap_or(StatusCode::FORBIDDEN), status.to_string()))
    }
}

/// The verb kube's authorizer sees for a non-resource request.
pub fn verb_of(method: &http::Method) -> String {
    match *method {
        http::Method::GET | http::Method::HEAD => "get".into(),
        ref m => m.as_str().to_ascii_lowercase(),
    }
}

/// A request as the verdict cache knows it: token, verb, path.
type Asked = (String, String, String);

/// Asks the cluster about callers, keeping its verdicts a while.
pub struct Reviewer {
    client: kube::Client,
    kept: Mutex<HashMap<Asked, (Instant, Verdict)>>,
}

impl Reviewer {
    pub fn new(client: kube::Client) -> Reviewer {
        Reviewer { client, kept: Mutex::new(HashMap::new()) }
    }

    /// The verdict for `token` asking `verb` on `path`; an error when the cluster cannot be asked.
    pub async fn review(&self, token: Option<&str>, verb: &str, path: &str) -> Result<Verdict, ReviewError> {
        let Some(token) = token else { return Ok(Verdict::Unauthenticated) };
        let key = (token.to_string(), verb.to_string(), path.to_string());
        if let Some((at, verdict)) = self.kept.lock().get(&key)
            && at.elapsed() < KEPT
        {
            return Ok(verdict.clone());
        }
        let verdict = match self.authenticate(token).await? {
            None => Verdict::Unauthenticated,
            Some(user) => self.authorize(user, verb, path).await?,
        };
        let mut kept = self.kept.lock();
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(key, (Instant::now(), verdict.clone()));
        Ok(verdict)
    }

    async fn authenticate(&self, token: &str) -> Result<Option<UserInfo>, ReviewError> {
        let review = TokenReview {
            spec: TokenReviewSpec { token: Some(token.to_string()), ..Default::default() },
            ..Default::default()
        };
        let api: kube::Api<TokenReview> = kube::Api::all(self.client.clone());
        let answer = api.create(&Default::default(), &review).await.map_err(|e| format!("TokenReview: {e}"))?;
        let status = answer.status.unwrap_or_default();
        Ok(status.authenticated.unwrap_or(false).then(|| status.user.unwrap_or_default()))
    }

    async fn authorize(&self, user: UserInfo, verb: &str, path: &str) -> Result<Verdict, ReviewError> {
        let name = user.username.clone().unwrap_or_default();
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                uid: user.uid,
                groups: user.groups,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: kube::Api<SubjectAccessReview> = kube::Api::all(self.client.clone());
        let answer = api.create(&Default::default(), &review).await.map_err(|e| format!("SubjectAccessReview: {e}"))?;
        Ok(if answer.status.is_some_and(|s| s.allowed) { Verdict::Allowed } else { Verdict::Forbidden(name) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_is_open_and_everything_else_guarded() {
        for open in ["/healthz", "/livez", "/readyz"] {
            assert!(!guarded(open), "{open}");
        }
        for closed in ["/metrics", "/debug/hooks", "/debug/hooks/x", "/", "/healthz/x"] {
            assert!(guarded(closed), "{closed}");
        }
    }

    #[test]
    fn refusals_read_as_kube_apiserver_words_them() {
        assert_eq!(Verdict::Allowed.refusal("get", "/metrics"), None);
        let (code, body) = Verdict::Unauthenticated.refusal("get", "/metrics").unwrap();
        assert_eq!(code, StatusCode::UNAUTHORIZED);
        assert!(body.contains(r#""reason":"Unauthorized""#), "{body}");
        let (code, body) =
            Verdict::Forbidden("system:serviceaccount:a:b".into()).refusal("get", "/debug/hooks").unwrap();
        assert_eq!(code, StatusCode::FORBIDDEN);
        let status: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status["message"], r#"forbidden: User "system:serviceaccount:a:b" cannot get path "/debug/hooks""#);
        assert_eq!(verb_of(&http::Method::HEAD), "get");
        assert_eq!(verb_of(&http::Method::POST), "post");
    }
}
