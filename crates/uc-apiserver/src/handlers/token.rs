//! `POST serviceaccounts/<name>/token` (TokenRequest, what `kubectl create token` and the node's
//! projected token volumes call): a signed token for the account, optionally bound to a pod, which
//! stops authenticating once the account or the pod is gone.

use std::sync::Arc;

use http::Response;
use serde_json::{Value, json};
use uc_api::{GroupResource, Pointer};

use crate::app::{App, Body, Req, json_response};
use crate::auth::token::{self, Claims, KubeClaims, Ref};
use crate::error::{ApiError, FieldError, Result, Subject};
use crate::request::{Target, parse_body};
use crate::storage::object_key;

/// Lifetime when the request names none, and the shortest kube-apiserver issues.
const DEFAULT_SECONDS: i64 = 3600;
const MIN_SECONDS: i64 = 600;

/// What a TokenRequest's spec asks for, checked.
#[derive(Debug, PartialEq)]
struct Wanted {
    audiences: Vec<String>,
    seconds: i64,
    bound: Option<(String, String, String)>,
}

fn read_spec(spec: &Value) -> std::result::Result<Wanted, Vec<FieldError>> {
    let mut errs = Vec::new();
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let seconds = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_SECONDS,
        Some(v) => match v.as_i64() {
            Some(s) if s >= MIN_SECONDS => s,
            _ => {
                errs.push(FieldError::invalid(
                    "spec.expirationSeconds",
                    v,
                    "may not specify a duration less than 10 minutes",
                ));
                DEFAULT_SECONDS
            }
        },
    };
    let bound = match spec.get("boundObjectRef").filter(|b| !b.is_null()) {
        None => None,
        Some(b) => {
            let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            if s("kind") != "Pod" {
                errs.push(FieldError::invalid(
                    "spec.boundObjectRef.kind",
                    &json!(s("kind")),
                    "tokens can be bound to a Pod only on this API server",
                ));
            }
            if s("name").is_empty() {
                errs.push(FieldError::required("spec.boundObjectRef.name", "the bound object's name"));
            }
            Some((s("kind"), s("name"), s("uid")))
        }
    };
    if errs.is_empty() { Ok(Wanted { audiences, seconds, bound }) } else { Err(errs) }
}

/// Issues a token for the service account `t` names.
pub(crate) fn create(app: &Arc<App>, req: &mut Req, t: &Target) -> Result<Response<Body>> {
    let ns = t.namespace.clone().unwrap_or_default();
    let name = t.name.clone().unwrap_or_default();
    let mut request = parse_body(req)?;
    if !request.is_object() {
        return Err(ApiError::bad_request("a TokenRequest must be an object"));
    }
    let spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
    let wanted =
        read_spec(&spec).map_err(|errs| ApiError::invalid("TokenRequest", "authentication.k8s.io", &name, &errs))?;
    let account =
        app.store.get(&GroupResource::new("", "serviceaccounts"), &object_key(&ns, &name)).ok_or_else(|| {
            ApiError::not_found(&Subject {
                resource: "serviceaccounts".into(),
                name: name.clone(),
                ..Default::default()
            })
        })?;
    let pods = GroupResource::new("", "pods");
    let bound_pod = wanted.bound.as_ref().and_then(|(_, pod, _)| app.store.get(&pods, &object_key(&ns, pod)));
    let create = crate::node_restriction::Operation::Create;
    crate::handlers::write::restrict_node(req, t, create, &name, Some(&request), bound_pod.as_deref())?;
    let uid_of = |o: &Value| o.at("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
    let pod = match &wanted.bound {
        None => None,
        Some((_, pod_name, pod_uid)) => {
            let pod = app.store.get(&GroupResource::new("", "pods"), &object_key(&ns, pod_name)).ok_or_else(|| {
                ApiError::not_found(&Subject { resource: "pods".into(), name: pod_name.clone(), ..Default::default() })
            })?;
            if !pod_uid.is_empty() && uid_of(&pod) != *pod_uid {
                let subject = Subject { resource: "pods".into(), name: pod_name.clone(), ..Default::default() };
                let why = format!(
                    "the UID in the bound object reference ({pod_uid}) does not match the UID in record ({})",
                    uid_of(&pod)
                );
                return Err(ApiError::conflict(&subject, &why));
            }
            Some(Ref { name: pod_name.clone(), uid: uid_of(&pod) })
        }
    };
    let now = chrono::Utc::now();
    let audiences = if wanted.audiences.is_empty() { vec![token::ISSUER.to_string()] } else { wanted.audiences };
    let claims = Claims {
        iss: token::ISSUER.into(),
        sub: crate::auth::rbac::service_account_user(&ns, &name),
        aud: audiences.clone(),
        exp: now.timestamp() + wanted.seconds,
        iat: now.timestamp(),
        nbf: now.timestamp(),
        kube: KubeClaims {
            namespace: ns.clone(),
            serviceaccount: Ref { name: name.clone(), uid: uid_of(&account) },
            pod,
        },
    };
    let expires = now + chrono::Duration::seconds(wanted.seconds);
    request["apiVersion"] = json!("authentication.k8s.io/v1");
    request["kind"] = json!("TokenRequest");
    request["metadata"] = json!({
        "name": name, "namespace": ns,
        "creationTimestamp": now.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
    });
    request["spec"]["audiences"] = json!(audiences);
    request["spec"]["expirationSeconds"] = json!(wanted.seconds);
    request["status"] = json!({
        "token": token::sign(&app.token_key, &claims),
        "expirationTimestamp": expires.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
    });
    Ok(json_response(201, &request))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_request_is_defaulted_and_checked() {
        assert_eq!(read_spec(&json!({})), Ok(Wanted { audiences: vec![], seconds: DEFAULT_SECONDS, bound: None }));
        let w = read_spec(&json!({"audiences": ["vault"], "expirationSeconds": 7200,
            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "u"}}))
        .unwrap();
        assert_eq!((w.audiences, w.seconds), (vec!["vault".to_string()], 7200));
        assert_eq!(w.bound, Some(("Pod".into(), "p".into(), "u".into())));
        let errs = read_spec(&json!({"expirationSeconds": 60, "boundObjectRef": {"kind": "Node"}})).unwrap_err();
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["spec.expirationSeconds", "spec.boundObjectRef.kind", "spec.boundObjectRef.name"]);
    }
}
