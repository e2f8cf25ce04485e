//! What an API request through the proxy addresses, from its path (as apiserver's `RequestInfo` reads
//! it): the API version, namespace, resource, name and subresource.

/// An API request's target.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Target {
    /// `group/version`, or `v1` for the core group.
    pub api_version: String,
    pub namespace: String,
    pub resource: String,
    pub name: String,
    pub subresource: String,
}

impl Target {
    /// The group of the API version (empty for the core group).
    pub fn group(&self) -> &str {
        self.api_version.split_once('/').map(|(g, _)| g).unwrap_or("")
    }
}

/// The target of a request path (`/api/v1/namespaces/ns/pods/p`, `/apis/apps/v1/deployments`);
/// `None` for paths that address no resource (discovery, `/version`).
pub fn target(path: &str) -> Option<Target> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (api_version, rest) = match parts.as_slice() {
        ["api", v, rest @ ..] => (v.to_string(), rest),
        ["apis", g, v, rest @ ..] => (format!("{g}/{v}"), rest),
        _ => return None,
    };
    let mut t = Target { api_version, ..Default::default() };
    let rest = match rest {
        // `namespaces/<ns>/<resource>…`, but `namespaces/<name>` (and its subresources) is a namespace.
        ["namespaces", ns, resource, tail @ ..] if !matches!(*resource, "status" | "finalize") || !tail.is_empty() => {
            t.namespace = ns.to_string();
            let mut r = vec![*resource];
            r.extend_from_slice(tail);
            r
        }
        other => other.to_vec(),
    };
    match rest.as_slice() {
        [resource] => t.resource = resource.to_string(),
        [resource, name] => (t.resource, t.name) = (resource.to_string(), name.to_string()),
        [resource, name, sub, ..] => {
            (t.resource, t.name, t.subresource) = (resource.to_string(), name.to_string(), sub.to_string())
        }
        _ => return None,
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(api_version: &str, namespace: &str, resource: &str, name: &str, sub: &str) -> Option<Target> {
        Some(Target {
            api_version: api_version.into(),
            namespace: namespace.into(),
            resource: resource.into(),
            name: name.into(),
            subresource: sub.into(),
        })
    }

    #[test]
    fn paths_as_the_apiserver_reads_them() {
        assert_eq!(target("/api/v1/namespaces/ns/pods"), t("v1", "ns", "pods", "", ""));
        assert_eq!(target("/api/v1/namespaces/ns/pods/p/log"), t("v1", "ns", "pods", "p", "log"));
        assert_eq!(target("/apis/apps/v1/namespaces/ns/deployments/d"), t("apps/v1", "ns", "deployments", "d", ""));
        assert_eq!(target("/apis/apps/v1/deployments"), t("apps/v1", "", "deployments", "", ""));
        assert_eq!(target("/api/v1/namespaces"), t("v1", "", "namespaces", "", ""));
        assert_eq!(target("/api/v1/namespaces/ns"), t("v1", "", "namespaces", "ns", ""));
        assert_eq!(target("/api/v1/namespaces/ns/status"), t("v1", "", "namespaces", "ns", "status"));
        assert_eq!(
            target("/apis/rbac.authorization.k8s.io/v1/clusterroles/r").unwrap().group(),
            "rbac.authorization.k8s.io"
        );
        assert_eq!(target("/apis/apps/v1"), None, "discovery");
        assert_eq!(target("/version"), None);
    }
}
