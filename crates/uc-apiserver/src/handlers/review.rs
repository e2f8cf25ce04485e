//! Reviews (`authentication.k8s.io`, `authorization.k8s.io`): `kubectl auth whoami`, `kubectl auth
//! can-i` (also `--list` and `--as`), SubjectAccessReview and LocalSubjectAccessReview (what webhooks
//! and aggregated servers ask), TokenReview. They are answered from the caller's identity and the
//! RBAC objects, never stored.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::Response;
use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::{Value, json};
use uc_api::Pointer;

use crate::app::{App, Body, Req, json_response};
use crate::auth::rbac::{self, Attributes};
use crate::auth::{self, User};
use crate::error::{ApiError, Result};
use crate::request::{Target, parse_body};

/// The request attributes a review's spec asks about (`resourceAttributes` or
/// `nonResourceAttributes`); `namespace` overrides the spec's (LocalSubjectAccessReview).
pub fn attributes_of(spec: &Value, namespace: Option<&str>) -> Option<Attributes> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    if let Some(r) = spec.get("resourceAttributes").filter(|r| r.is_object()) {
        let ns = namespace.map(str::to_string).unwrap_or_else(|| s(r, "namespace"));
        return Some(
            Attributes::resource(&s(r, "verb"), &s(r, "group"), &s(r, "resource"), &ns, &s(r, "name"))
                .on_subresource(&s(r, "subresource")),
        );
    }
    let n = spec.get("nonResourceAttributes").filter(|n| n.is_object())?;
    Some(Attributes::path(&s(n, "verb"), &s(n, "path")))
}

/// The subject of a SubjectAccessReview's spec.
pub fn user_of_spec(spec: &Value) -> User {
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
    };
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(Some(v)))).collect())
        .unwrap_or_default();
    User {
        name: spec.get("user").and_then(Value::as_str).unwrap_or_default().into(),
        uid: spec.get("uid").and_then(Value::as_str).unwrap_or_default().into(),
        groups: strings(spec.get("groups")),
        extra,
    }
}

fn access(app: &App, user: &User, attrs: Option<Attributes>) -> Value {
    let Some(attrs) = attrs else {
        return json!({"allowed": false, "evaluationError": "spec.resourceAttributes or spec.nonResourceAttributes is required"});
    };
    if user.is_master() {
        return json!({"allowed": true, "reason": "in the system:masters group"});
    }
    if auth::allowed(&app.store, user, &attrs) {
        json!({"allowed": true, "reason": "RBAC: allowed by a binding of this subject"})
    } else {
        json!({"allowed": false})
    }
}

/// `SelfSubjectRulesReview` status: the rules in `rules`, split as kube-apiserver reports them.
pub fn rules_status(rules: &[PolicyRule]) -> Value {
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in rules {
        if let Some(urls) = r.non_resource_urls.as_ref().filter(|u| !u.is_empty()) {
            non_resource_rules.push(json!({"verbs": r.verbs, "nonResourceURLs": urls}));
        }
        if r.resources.as_ref().is_some_and(|x| !x.is_empty()) {
            let mut rule = json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
            if let Some(names) = r.resource_names.as_ref().filter(|n| !n.is_empty()) {
                rule["resourceNames"] = json!(names);
            }
            resource_rules.push(rule);
        }
    }
    json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false})
}

/// A TokenReview's status: who the token is, for the audiences asked for (the API server's own when
/// none are) that it is valid for, as kube-apiserver answers.
fn token_review(app: &App, spec: &Value) -> Value {
    let token = spec.get("token").and_then(Value::as_str).unwrap_or_default();
    let asked: Vec<&str> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .filter(|a: &Vec<&str>| !a.is_empty())
        .unwrap_or_else(|| vec![auth::token::ISSUER]);
    match auth::authenticate_token(&app.token, &app.token_key, &app.store, token, &asked) {
        Ok((user, audiences)) => json!({"authenticated": true, "user": user.user_info(), "audiences": audiences}),
        Err(_) => json!({"authenticated": false, "error": "invalid bearer token"}),
    }
}

/// `POST` of a review: the request with its status, 201.
pub(crate) fn create(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let mut review = parse_body(req)?;
    if !review.is_object() {
        return Err(ApiError::bad_request(format!("a {} must be an object", t.info.kind)));
    }
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match t.info.kind.as_str() {
        "SelfSubjectReview" => json!({"userInfo": req.user.user_info()}),
        "TokenReview" => token_review(app, &spec),
        "SelfSubjectAccessReview" => access(app, &req.user, attributes_of(&spec, None)),
        "SelfSubjectRulesReview" => {
            let ns = spec.get("namespace").and_then(Value::as_str).unwrap_or_default();
            rules_status(&rbac::rules_for(&auth::load_policy(&app.store, ns), &req.user, ns))
        }
        "LocalSubjectAccessReview" => {
            let ns = t.namespace.as_deref().unwrap_or_default();
            let asked = spec.at("/resourceAttributes/namespace").and_then(Value::as_str).unwrap_or(ns);
            if asked != ns {
                return Err(ApiError::bad_request(format!(
                    "spec.resourceAttributes.namespace must match the namespace of the review ({ns:?}), not {asked:?}"
                )));
            }
            access(app, &user_of_spec(&spec), attributes_of(&spec, Some(ns)))
        }
        _ => access(app, &user_of_spec(&spec), attributes_of(&spec, None)),
    };
    review["apiVersion"] = json!(t.info.api_version(&t.version));
    review["kind"] = json!(t.info.kind);
    if !review["metadata"].is_object() {
        review["metadata"] = json!({});
    }
    review["status"] = status;
    Ok(json_response(201, &review))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_spec_names_the_request_and_its_subject() {
        let spec = json!({
            "user": "system:serviceaccount:a:sa", "groups": ["system:serviceaccounts"],
            "resourceAttributes": {"namespace": "b", "verb": "list", "resource": "pods", "subresource": "log"}
        });
        assert_eq!(
            attributes_of(&spec, None),
            Some(Attributes::resource("list", "", "pods", "b", "").on_subresource("log"))
        );
        assert_eq!(attributes_of(&spec, Some("c")).unwrap().namespace(), "c");
        let u = user_of_spec(&spec);
        assert_eq!((u.name.as_str(), u.groups.len()), ("system:serviceaccount:a:sa", 1));
        let path = json!({"nonResourceAttributes": {"path": "/version", "verb": "get"}});
        assert_eq!(attributes_of(&path, None), Some(Attributes::path("get", "/version")));
        assert_eq!(attributes_of(&json!({}), None), None);
    }

    #[test]
    fn rules_are_split_into_resource_and_path_rules() {
        let rules: Vec<PolicyRule> = serde_json::from_value(json!([
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["p"]},
            {"nonResourceURLs": ["/api"], "verbs": ["get"]}
        ]))
        .unwrap();
        let status = rules_status(&rules);
        assert_eq!(status["resourceRules"][0]["resourceNames"], json!(["p"]));
        assert_eq!(status["nonResourceRules"], json!([{"verbs": ["get"], "nonResourceURLs": ["/api"]}]));
    }
}
