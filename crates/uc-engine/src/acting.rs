//! Least privilege for controllers (Flux's multi-tenancy lockdown): a controller that names a service
//! account has its children written and its hooks' sources and credentials read as that account —
//! through kube's impersonation headers on the engine's own connection — so it can do no more than
//! the account may; the API server's RBAC and escalation checks decide, and a refusal is the
//! controller's error, reported on its parent.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use http::{HeaderName, HeaderValue};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use parking_lot::Mutex;
use uc_api::controller::UniversalControllerSpec;

/// Why acting as a service account failed: its name does not read, or what it may do could not be asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AccessError(pub String);

impl From<String> for AccessError {
    fn from(message: String) -> Self {
        AccessError(message)
    }
}

impl From<&str> for AccessError {
    fn from(message: &str) -> Self {
        AccessError(message.to_string())
    }
}

impl From<AccessError> for String {
    fn from(e: AccessError) -> String {
        e.0
    }
}

/// A service account, by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceAccount {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl ServiceAccount {
    /// `NAMESPACE/NAME`.
    pub fn parse(text: &str) -> Result<ServiceAccount, AccessError> {
        match text.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(ServiceAccount { namespace: ns.into(), name: name.into() })
            }
            _ => Err(AccessError::from(format!("{text:?}: a service account is NAMESPACE/NAME"))),
        }
    }

    /// The user kube authenticates the account as, and its groups.
    pub fn user(&self) -> (String, Vec<String>) {
        let ns = &self.namespace;
        (
            format!("system:serviceaccount:{ns}:{}", self.name),
            vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{ns}"),
                "system:authenticated".into(),
            ],
        )
    }
}

/// The annotation naming the account (`NAMESPACE/NAME`) on a Metacontroller CompositeController or
/// DecoratorController, whose schema has no field for it.
pub const ANNOTATION: &str = "uc.njuics.cn/service-account";

/// Whether every hook of the controller is native: code compiled into uc (its operators, the
/// built-in workload controllers), which the engine's default account does not confine.
fn only_native(spec: &UniversalControllerSpec) -> bool {
    let h = &spec.hooks;
    [&h.sync, &h.finalize, &h.customize].into_iter().flatten().all(|hook| hook.native.is_some())
}

/// The account a controller acts as: the one its spec names (`serviceAccountName`, in
/// `serviceAccountNamespace` or `default`) or its annotation names, else — unless all its hooks are
/// uc's own native code — the engine's default (multi-tenant mode), else none (the engine's own
/// identity). An annotation that does not read as `NAMESPACE/NAME` is an error.
pub fn account_of(
    spec: &UniversalControllerSpec,
    controller: &serde_json::Value,
    default: Option<&ServiceAccount>,
) -> Result<Option<ServiceAccount>, AccessError> {
    if let Some(name) = spec.service_account_name.as_deref().filter(|n| !n.is_empty()) {
        let namespace = spec.service_account_namespace.clone().filter(|n| !n.is_empty()).unwrap_or("default".into());
        return Ok(Some(ServiceAccount { namespace, name: name.into() }));
    }
    let annotated =
        controller.pointer("/metadata/annotations").and_then(|a| a.get(ANNOTATION)).and_then(|v| v.as_str());
    match annotated {
        Some(text) => ServiceAccount::parse(text)
            .map(Some)
            .map_err(|e| AccessError(format!("metadata.annotations[{ANNOTATION}]: {e}"))),
        None => Ok(default.filter(|_| !only_native(spec)).cloned()),
    }
}

/// The impersonation headers for `account`.
fn headers(account: &ServiceAccount) -> Vec<(HeaderName, HeaderValue)> {
    let (user, groups) = account.user();
    let mut out = Vec::new();
    if let Ok(v) = HeaderValue::from_str(&user) {
        out.push((HeaderName::from_static("impersonate-user"), v));
    }
    for g in groups {
        if let Ok(v) = HeaderValue::from_str(&g) {
            out.push((HeaderName::from_static("impersonate-group"), v));
        }
    }
    out
}

/// A client that acts as `account` over `client`'s connection.
pub fn impersonating(client: &kube::Client, account: &ServiceAccount) -> kube::Client {
    let inner = client.clone();
    let headers = headers(account);
    let service = tower::service_fn(move |mut req: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        for (name, value) in &headers {
            req.headers_mut().append(name.clone(), value.clone());
        }
        async move { inner.send(req).await }
    });
    kube::Client::new(service, client.default_namespace().to_string())
}

/// A read the engine makes for a controller: related objects a customize hook names are read from the
/// engine's caches, so the account's right to read them is asked of the API server first.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Read {
    /// `list` (by label) or `get` (by name).
    pub verb: &'static str,
    pub group: String,
    pub resource: String,
    /// The namespace read; empty: every namespace, or a cluster-scoped resource.
    pub namespace: String,
    /// The object read by name; empty for a list.
    pub name: String,
}

impl Read {
    /// kube-apiserver's words for refusing this read to `user`.
    pub fn refusal(&self, user: &str) -> String {
        let what =
            if self.name.is_empty() { self.resource.clone() } else { format!("{} {:?}", self.resource, self.name) };
        let scope = if self.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {:?}", self.namespace)
        };
        format!(
            "{what} is forbidden: User {user:?} cannot {} resource {:?} in API group {:?} {scope}",
            self.verb, self.resource, self.group
        )
    }
}

/// How long an answer about a read is kept.
const KEPT: Duration = Duration::from_secs(10);

/// What the account may read, asked as the account (a SelfSubjectAccessReview through its
/// impersonating client), answers kept for ten seconds.
pub struct Access {
    client: kube::Client,
    user: String,
    kept: Mutex<HashMap<Read, (Instant, bool)>>,
}

impl Access {
    /// The access of `account`, asked over its impersonating `client`.
    pub fn new(client: kube::Client, account: &ServiceAccount) -> Access {
        Access { client, user: account.user().0, kept: Mutex::new(HashMap::new()) }
    }

    /// Ok when the account may make `read`; else kube's refusal (or why it could not be asked).
    pub async fn check(&self, read: &Read) -> Result<(), AccessError> {
        let kept = self.kept.lock().get(read).filter(|(at, _)| at.elapsed() < KEPT).map(|(_, allowed)| *allowed);
        let allowed = match kept {
            Some(allowed) => allowed,
            None => {
                let allowed = self.ask(read).await?;
                self.kept.lock().insert(read.clone(), (Instant::now(), allowed));
                allowed
            }
        };
        if allowed { Ok(()) } else { Err(AccessError(read.refusal(&self.user))) }
    }

    async fn ask(&self, read: &Read) -> Result<bool, AccessError> {
        let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(read.verb.to_string()),
                    group: Some(read.group.clone()),
                    resource: Some(read.resource.clone()),
                    namespace: some(&read.namespace),
                    name: some(&read.name),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: kube::Api<SelfSubjectAccessReview> = kube::Api::all(self.client.clone());
        let answer = api
            .create(&Default::default(), &review)
            .await
            .map_err(|e| format!("asking whether {} may {} {}: {e}", self.user, read.verb, read.resource))?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controller_acts_as_its_own_account_else_the_default() {
        let mut spec: UniversalControllerSpec = serde_json::from_value(serde_json::json!({
            "parentResource": {"apiVersion": "v1", "resource": "configmaps"},
            "hooks": {"sync": {"javascript": {"source": "x"}}}}))
        .unwrap();
        let native: UniversalControllerSpec = serde_json::from_value(serde_json::json!({
            "parentResource": {"apiVersion": "apps/v1", "resource": "deployments"},
            "hooks": {"sync": {"native": {"name": "deployment"}}}}))
        .unwrap();
        let default = ServiceAccount::parse("tenants/restricted").unwrap();
        let plain = serde_json::json!({"metadata": {"name": "c"}});
        assert_eq!(account_of(&spec, &plain, None).unwrap(), None, "the engine's own identity");
        assert_eq!(account_of(&spec, &plain, Some(&default)).unwrap(), Some(default.clone()));
        assert_eq!(account_of(&native, &plain, Some(&default)).unwrap(), None, "uc's own code acts as the engine");
        let annotated = serde_json::json!({"metadata": {"annotations": {ANNOTATION: "team-b/hooks"}}});
        assert_eq!(account_of(&spec, &annotated, Some(&default)).unwrap().unwrap().name, "hooks");
        let garbled = serde_json::json!({"metadata": {"annotations": {ANNOTATION: "hooks"}}});
        assert!(account_of(&spec, &garbled, None).unwrap_err().0.contains("NAMESPACE/NAME"));
        spec.service_account_name = Some("builder".into());
        assert_eq!(account_of(&spec, &annotated, Some(&default)).unwrap().unwrap().namespace, "default");
        spec.service_account_namespace = Some("team-a".into());
        let own = account_of(&spec, &plain, Some(&default)).unwrap().unwrap();
        assert_eq!(own.user().0, "system:serviceaccount:team-a:builder");
        assert!(own.user().1.contains(&"system:serviceaccounts:team-a".to_string()));
        assert!(ServiceAccount::parse("nobody").is_err() && ServiceAccount::parse("a/b/c").is_err());
        let sent: Vec<String> = headers(&own).iter().map(|(k, v)| format!("{k}={}", v.to_str().unwrap())).collect();
        assert_eq!(sent[0], "impersonate-user=system:serviceaccount:team-a:builder");
        assert_eq!(sent.len(), 4);
    }

    #[test]
    fn a_refused_read_reads_as_kube_words_it() {
        let user = "system:serviceaccount:a:bot";
        let read = |verb, namespace: &str, name: &str| Read {
            verb,
            group: String::new(),
            resource: "secrets".into(),
            namespace: namespace.into(),
            name: name.into(),
        };
        assert_eq!(
            read("get", "b", "token").refusal(user),
            r#"secrets "token" is forbidden: User "system:serviceaccount:a:bot" cannot get resource "secrets" in API group "" in the namespace "b""#
        );
        assert_eq!(
            read("list", "", "").refusal(user),
            r#"secrets is forbidden: User "system:serviceaccount:a:bot" cannot list resource "secrets" in API group "" at the cluster scope"#
        );
    }
}
