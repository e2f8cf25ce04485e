//! Least privilege for controllers (Flux's multi-tenancy lockdown): a controller that names a service
//! account has its children written and its hooks' sources and credentials read as that account —
//! through kube's impersonation headers on the engine's own connection — so it can do no more than
//! the account may; the API server's RBAC and escalation checks decide, and a refusal is the
//! controller's error, reported on its parent.

use http::{HeaderName, HeaderValue};
use uc_api::controller::UniversalControllerSpec;

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
    pub fn parse(text: &str) -> Result<ServiceAccount, String> {
        match text.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(ServiceAccount { namespace: ns.into(), name: name.into() })
            }
            _ => Err(format!("{text:?}: a service account is NAMESPACE/NAME")),
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
) -> Result<Option<ServiceAccount>, String> {
    if let Some(name) = spec.service_account_name.as_deref().filter(|n| !n.is_empty()) {
        let namespace = spec.service_account_namespace.clone().filter(|n| !n.is_empty()).unwrap_or("default".into());
        return Ok(Some(ServiceAccount { namespace, name: name.into() }));
    }
    let annotated =
        controller.pointer("/metadata/annotations").and_then(|a| a.get(ANNOTATION)).and_then(|v| v.as_str());
    match annotated {
        Some(text) => {
            ServiceAccount::parse(text).map(Some).map_err(|e| format!("metadata.annotations[{ANNOTATION}]: {e}"))
        }
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
        assert!(account_of(&spec, &garbled, None).unwrap_err().contains("NAMESPACE/NAME"));
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
}
