//! Reviews (`authentication.k8s.io`, `authorization.k8s.io`): `kubectl auth whoami` and `kubectl auth
//! can-i` (also `--list`). They are answered, never stored. The API server has one identity today — the
//! kubeconfig's token, user `uc-admin` in `system:masters` — which may do everything; any other subject
//! cannot authenticate, so it may do nothing.

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};

use crate::app::{App, Body, Req, json_response};
use crate::error::{ApiError, Result};
use crate::request::{Target, parse_body};

/// The user the kubeconfig's token authenticates as.
pub const ADMIN: &str = "uc-admin";
/// Its groups.
pub const ADMIN_GROUPS: &[&str] = &["system:masters", "system:authenticated"];

/// The status of a review of `kind` for `spec` (of the caller, the admin, for the `Self…` kinds).
pub fn answer(kind: &str, spec: &Value) -> Value {
    match kind {
        "SelfSubjectReview" => json!({"userInfo": {"username": ADMIN, "groups": ADMIN_GROUPS}}),
        "SelfSubjectAccessReview" => json!({"allowed": true, "reason": "uc-admin is in system:masters"}),
        "SelfSubjectRulesReview" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false
        }),
        _ => {
            // SubjectAccessReview, LocalSubjectAccessReview: about someone else.
            let user = spec.get("user").and_then(Value::as_str).unwrap_or_default();
            let masters =
                spec.get("groups").and_then(Value::as_array).is_some_and(|g| g.iter().any(|g| g == "system:masters"));
            if user == ADMIN || masters {
                json!({"allowed": true, "reason": "in system:masters"})
            } else {
                json!({"allowed": false, "reason": "the uc API server authenticates only its admin token (no RBAC roles yet)"})
            }
        }
    }
}

/// `POST` of a review: the request with its status, 201.
pub(crate) fn create(_app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let mut review = parse_body(req)?;
    if !review.is_object() {
        return Err(ApiError::bad_request(format!("a {} must be an object", t.info.kind)));
    }
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    review["apiVersion"] = json!(t.info.api_version(&t.version));
    review["kind"] = json!(t.info.kind);
    if !review["metadata"].is_object() {
        review["metadata"] = json!({});
    }
    review["status"] = answer(&t.info.kind, &spec);
    Ok(json_response(201, &review))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admin_may_do_everything_and_others_nothing() {
        assert_eq!(answer("SelfSubjectReview", &json!({}))["userInfo"]["username"], json!("uc-admin"));
        assert_eq!(
            answer("SelfSubjectAccessReview", &json!({"resourceAttributes": {"verb": "list"}}))["allowed"],
            json!(true)
        );
        assert_eq!(answer("SelfSubjectRulesReview", &json!({}))["resourceRules"][0]["verbs"], json!(["*"]));
        assert_eq!(
            answer("SubjectAccessReview", &json!({"user": "system:serviceaccount:ns:sa"}))["allowed"],
            json!(false)
        );
        assert_eq!(
            answer("SubjectAccessReview", &json!({"user": "x", "groups": ["system:masters"]}))["allowed"],
            json!(true)
        );
    }
}
