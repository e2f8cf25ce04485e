//! Who is asking and what they may do: authentication (the admin token, service account tokens,
//! client certificates), impersonation, and authorization by RBAC.
//!
//! The kubeconfig's token is `uc-admin` in `system:masters`, which RBAC never restricts, so the
//! engine, the node and the benchmarks never pay for a policy look-up.

pub mod defaults;
pub mod escalation;
pub mod rbac;
pub mod token;
pub mod user;
pub mod validate;

pub use user::{ADMIN, User};

use std::collections::BTreeMap;

use http::HeaderMap;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use serde::de::DeserializeOwned;
use serde_json::Value;
use uc_api::{GroupResource, Pointer, Status};

use crate::error::ApiError;
use crate::storage::{Store, object_key};
use rbac::{Attributes, Policy, Target};

/// Paths anyone may read without credentials: health and version.
pub fn public_path(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/livez" | "/version" | "/version/")
        || path.starts_with("/healthz/")
        || path.starts_with("/readyz/")
        || path.starts_with("/livez/")
}

/// The subject of a client certificate: CN is the user, each O a group.
pub fn user_of_certificate(common_name: &str, organizations: &[String]) -> User {
    let mut groups = organizations.to_vec();
    groups.push("system:authenticated".into());
    User { name: common_name.into(), groups, ..Default::default() }
}

/// Who a bearer token is: the admin token, or a service account token whose account (and bound
/// pod) still exist with the uids it names, valid for the API server's audience.
pub fn user_of_token(app_token: &str, key: &token::Key, store: &Store, presented: &str) -> Result<User, ApiError> {
    authenticate_token(app_token, key, store, presented, &[token::ISSUER]).map(|(user, _)| user)
}

/// Who a bearer token is ([`user_of_token`]) for any of `audiences`, and which of them it is valid
/// for (a TokenReview's `status.audiences`; the admin token, not audience-bound, is valid for all).
pub fn authenticate_token(
    app_token: &str,
    key: &token::Key,
    store: &Store,
    presented: &str,
    audiences: &[&str],
) -> Result<(User, Vec<String>), ApiError> {
    if presented == app_token {
        return Ok((User::admin(), audiences.iter().map(|a| a.to_string()).collect()));
    }
    if !token::looks_like_jwt(presented) {
        return Err(ApiError::unauthorized());
    }
    let now = chrono::Utc::now().timestamp();
    let claims = token::verify(key, presented, now, audiences).map_err(|e| {
        tracing::debug!(error = %e, "a service account token was refused");
        ApiError::unauthorized()
    })?;
    let k = &claims.kube;
    let uid_of = |gr: GroupResource, name: &str| {
        store
            .get(&gr, &object_key(&k.namespace, name))
            .and_then(|o| o.at("/metadata/uid").and_then(Value::as_str).map(str::to_string))
    };
    if uid_of(GroupResource::new("", "serviceaccounts"), &k.serviceaccount.name).as_deref()
        != Some(k.serviceaccount.uid.as_str())
    {
        return Err(ApiError::unauthorized());
    }
    let mut user = User::service_account(&k.namespace, &k.serviceaccount.name, &k.serviceaccount.uid);
    if let Some(pod) = &k.pod {
        if uid_of(GroupResource::new("", "pods"), &pod.name).as_deref() != Some(pod.uid.as_str()) {
            return Err(ApiError::unauthorized());
        }
        user.extra.insert("authentication.kubernetes.io/pod-name".into(), vec![pod.name.clone()]);
        user.extra.insert("authentication.kubernetes.io/pod-uid".into(), vec![pod.uid.clone()]);
    }
    let valid_for = audiences.iter().filter(|a| claims.aud.iter().any(|c| c == *a)).map(|a| a.to_string()).collect();
    Ok((user, valid_for))
}

/// Reads the RBAC objects that decide requests in `namespace` (every cluster-wide one, and the
/// namespace's Roles and RoleBindings). Objects that do not decode are skipped: a broken binding
/// grants nothing.
pub fn load_policy(store: &Store, namespace: &str) -> Policy {
    fn all<T: DeserializeOwned>(store: &Store, resource: &str, ns: Option<&str>) -> Vec<T> {
        let gr = GroupResource::new("rbac.authorization.k8s.io", resource);
        let (objects, _) = store.list_kept(&gr, ns, None).unwrap_or_default();
        objects.into_iter().filter_map(|(_, o)| o.decode().ok()).collect()
    }
    let named = |name: &Option<String>| name.clone().unwrap_or_default();
    let cluster_roles: Vec<ClusterRole> = all(store, "clusterroles", None);
    let cluster_role_bindings: Vec<ClusterRoleBinding> = all(store, "clusterrolebindings", None);
    let (roles, role_bindings): (Vec<Role>, Vec<RoleBinding>) = if namespace.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        (all(store, "roles", Some(namespace)), all(store, "rolebindings", Some(namespace)))
    };
    Policy {
        cluster_roles: cluster_roles.into_iter().map(|r| (named(&r.metadata.name), r)).collect(),
        cluster_role_bindings,
        roles: roles.into_iter().map(|r| (named(&r.metadata.name), r)).collect(),
        role_bindings,
    }
}

/// Whether `user` may do `attrs`, deciding from the store's RBAC objects.
pub fn allowed(store: &Store, user: &User, attrs: &Attributes) -> bool {
    user.is_master() || rbac::allows(&load_policy(store, attrs.namespace()), user, attrs)
}

/// Refuses what `user` may not do, with kube-apiserver's 403.
pub fn authorize(store: &Store, user: &User, attrs: &Attributes) -> Result<(), ApiError> {
    if allowed(store, user, attrs) { Ok(()) } else { Err(forbidden(user, attrs)) }
}

/// Refuses a write of a Role, ClusterRole or binding (`resource`, in `namespace`) that would grant
/// more than `user` holds there, unless they may `escalate` (roles) or `bind` (the bound role).
///
/// An `aggregationRule` (set, or changed on update) gathers whatever roles match it, so it takes the
/// `escalate` verb or every permission there is, as kube-apiserver requires.
pub fn check_escalation(
    store: &Store,
    user: &User,
    resource: &str,
    namespace: &str,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if user.is_master() {
        return Ok(());
    }
    const GROUP: &str = "rbac.authorization.k8s.io";
    let name = obj.at("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let decode = |v: Option<&Value>| -> Vec<PolicyRule> {
        v.and_then(|r| serde_json::from_value(r.clone()).ok()).unwrap_or_default()
    };
    let (requested, verb, target_resource, target_name) = match resource {
        "roles" | "clusterroles" => (decode(obj.get("rules")), "escalate", resource.to_string(), name.to_string()),
        "rolebindings" | "clusterrolebindings" => {
            let kind = obj.at("/roleRef/kind").and_then(Value::as_str).unwrap_or_default();
            let role = obj.at("/roleRef/name").and_then(Value::as_str).unwrap_or_default();
            let (res, ns) = if kind == "Role" { ("roles", namespace) } else { ("clusterroles", "") };
            let rules =
                store.get(&GroupResource::new(GROUP, res), &object_key(ns, role)).and_then(|r| r.get("rules").cloned());
            (decode(rules.as_ref()), "bind", res.to_string(), role.to_string())
        }
        _ => return Ok(()),
    };
    let ns_of_target = if target_resource == "roles" { namespace } else { "" };
    if allowed(store, user, &Attributes::resource(verb, GROUP, &target_resource, ns_of_target, &target_name)) {
        return Ok(());
    }
    let held = rbac::rules_for(&load_policy(store, namespace), user, namespace);
    let subject = crate::error::Subject { group: GROUP.into(), resource: resource.into(), name: name.into() };
    if resource == "clusterroles"
        && escalation::has_aggregation_rule(obj)
        && old.is_none_or(|o| o.get("aggregationRule") != obj.get("aggregationRule"))
        && !escalation::uncovered(&held, &escalation::full_authority()).is_empty()
    {
        return Err(ApiError::forbidden(&subject, "must have cluster-admin privileges to use the aggregationRule"));
    }
    let missing = escalation::uncovered(&held, &requested);
    let role_missing = verb == "bind" && requested.is_empty() && {
        let res = GroupResource::new(GROUP, &target_resource);
        store.get_kept(&res, &object_key(ns_of_target, &target_name)).is_none()
    };
    if missing.is_empty() && !role_missing {
        return Ok(());
    }
    let why = if role_missing {
        format!("{target_resource}.{GROUP} {target_name:?} not found, and {:?} may not bind it", user.name)
    } else {
        escalation::message(user, &missing)
    };
    Err(ApiError::forbidden(&subject, why))
}

/// Whether `user` may `verb` (`approve`, `sign`) CertificateSigningRequests for `signer`: the verb on
/// `signers` named the signer, or `<its domain>/*`, in `certificates.k8s.io`.
pub fn signer_allowed(store: &Store, user: &User, verb: &str, signer: &str) -> bool {
    let wildcard = signer.split_once('/').map(|(domain, _)| format!("{domain}/*"));
    [Some(signer.to_string()), wildcard]
        .into_iter()
        .flatten()
        .any(|name| allowed(store, user, &Attributes::resource(verb, "certificates.k8s.io", "signers", "", &name)))
}

/// kube-apiserver's 403 for a refused request.
pub fn forbidden(user: &User, attrs: &Attributes) -> ApiError {
    let why = rbac::forbidden_message(user, attrs);
    match &attrs.target {
        Target::Path(_) => ApiError::new(Status::failure(403, "Forbidden", format!("forbidden: {why}"))),
        Target::Resource { group, resource, name, .. } => {
            let subject =
                crate::error::Subject { group: group.clone(), resource: resource.clone(), name: name.clone() };
            ApiError::forbidden(&subject, why)
        }
    }
}

/// The identity a request acts as: `user` itself, or the one its `Impersonate-*` headers name when
/// `user` may impersonate it (RBAC verb `impersonate` on `users`, `groups`, `serviceaccounts`,
/// `uids`, `userextras/<key>`).
pub fn impersonate(store: &Store, user: User, headers: &HeaderMap) -> Result<User, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).map(str::to_string).collect()
    };
    let Some(name) = values("impersonate-user").into_iter().next() else {
        if headers.keys().any(|h| h.as_str().starts_with("impersonate-")) {
            return Err(ApiError::bad_request("impersonating groups, a uid or extras requires Impersonate-User"));
        }
        return Ok(user);
    };
    let groups = values("impersonate-group");
    let uid = values("impersonate-uid").into_iter().next().unwrap_or_default();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (h, v) in headers {
        if let (Some(key), Ok(v)) = (h.as_str().strip_prefix("impersonate-extra-"), v.to_str()) {
            let key = percent_decode(key);
            extra.entry(key).or_default().push(v.to_string());
        }
    }
    // What must be allowed, one check per impersonated attribute.
    let mut checks = Vec::new();
    match name.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':')) {
        Some((ns, sa)) => checks.push(Attributes::resource("impersonate", "", "serviceaccounts", ns, sa)),
        None => checks.push(Attributes::resource("impersonate", "", "users", "", &name)),
    }
    checks.extend(groups.iter().map(|g| Attributes::resource("impersonate", "", "groups", "", g)));
    if !uid.is_empty() {
        checks.push(Attributes::resource("impersonate", "authentication.k8s.io", "uids", "", &uid));
    }
    for (key, vals) in &extra {
        for v in vals {
            checks.push(
                Attributes::resource("impersonate", "authentication.k8s.io", "userextras", "", v).on_subresource(key),
            );
        }
    }
    if let Some(refused) = checks.iter().find(|a| !allowed(store, &user, a)) {
        return Err(forbidden(&user, refused));
    }
    let mut impersonated = match name.strip_prefix("system:serviceaccount:").and_then(|r| r.split_once(':')) {
        Some((ns, sa)) if groups.is_empty() => User::service_account(ns, sa, ""),
        _ => User { name: name.clone(), ..Default::default() },
    };
    impersonated.groups.extend(groups);
    if name != "system:anonymous" && !impersonated.groups.iter().any(|g| g == "system:authenticated") {
        impersonated.groups.push("system:authenticated".into());
    }
    impersonated.uid = uid;
    impersonated.extra = extra;
    Ok(impersonated)
}

fn percent_decode(s: &str) -> String {
    form_urlencoded::parse(format!("k={s}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// The verb RBAC checks for a request to a resource path.
pub fn verb_of(method: &http::Method, has_name: bool, watching: bool) -> &'static str {
    match *method {
        http::Method::GET | http::Method::HEAD if watching => "watch",
        http::Method::GET | http::Method::HEAD if has_name => "get",
        http::Method::GET | http::Method::HEAD => "list",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE if has_name => "delete",
        http::Method::DELETE => "deletecollection",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_follow_kube_apiserver() {
        use http::Method;
        assert_eq!(verb_of(&Method::GET, true, false), "get");
        assert_eq!(verb_of(&Method::GET, false, false), "list");
        assert_eq!(verb_of(&Method::GET, false, true), "watch");
        assert_eq!(verb_of(&Method::DELETE, false, false), "deletecollection");
        assert_eq!(verb_of(&Method::PATCH, true, false), "patch");
    }

    #[test]
    fn certificates_and_accounts_name_users_and_groups() {
        let u = user_of_certificate("jane", &["dev".into(), "ops".into()]);
        assert_eq!(u.groups, vec!["dev", "ops", "system:authenticated"]);
        let sa = User::service_account("a", "sa", "u");
        assert_eq!(sa.name, "system:serviceaccount:a:sa");
        assert!(sa.groups.contains(&"system:serviceaccounts:a".to_string()) && !sa.is_master());
        assert!(User::admin().is_master());
        assert_eq!(percent_decode("scopes%2Fa"), "scopes/a");
    }
}
