//! Role-based access control, as kube-apiserver's RBAC authorizer decides it: the rules a user has
//! (from ClusterRoleBindings everywhere, from RoleBindings in their namespace) and whether one of
//! them covers a request. Pure functions over the RBAC objects; `auth::policy` loads them.

use std::collections::HashMap;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, Subject};

use uc_api::selector::LabelSelector;

use super::user::User;
pub use super::user::service_account_user;

/// What a request does, as RBAC sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or a
    /// special verb (`impersonate`, `bind`, `escalate`).
    pub verb: String,
    /// A resource, or a path outside the resource API.
    pub target: Target,
}

/// The object or URL a request is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A resource request.
    Resource {
        /// API group (`""` for core).
        group: String,
        /// Plural resource name.
        resource: String,
        /// Subresource (`status`, `log`, `token`, …), or empty.
        subresource: String,
        /// Namespace, or empty for cluster scope.
        namespace: String,
        /// Object name, or empty for collections.
        name: String,
    },
    /// A non-resource URL (`/version`, `/apis`, `/healthz`).
    Path(String),
}

impl Attributes {
    /// A resource request.
    pub fn resource(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Self {
        Self {
            verb: verb.into(),
            target: Target::Resource {
                group: group.into(),
                resource: resource.into(),
                subresource: String::new(),
                namespace: namespace.into(),
                name: name.into(),
            },
        }
    }

    /// The same request on a subresource.
    pub fn on_subresource(mut self, sub: &str) -> Self {
        if let Target::Resource { subresource, .. } = &mut self.target {
            *subresource = sub.into();
        }
        self
    }

    /// A non-resource request.
    pub fn path(verb: &str, path: &str) -> Self {
        Self { verb: verb.into(), target: Target::Path(path.into()) }
    }

    /// The namespace the request is in (empty at cluster scope and for paths).
    pub fn namespace(&self) -> &str {
        match &self.target {
            Target::Resource { namespace, .. } => namespace,
            Target::Path(_) => "",
        }
    }
}

/// The RBAC objects that decide a request: every ClusterRole and ClusterRoleBinding, and the Roles
/// and RoleBindings of one namespace.
#[derive(Debug, Default, Clone)]
pub struct Policy {
    /// ClusterRoles by name.
    pub cluster_roles: HashMap<String, ClusterRole>,
    /// Every ClusterRoleBinding.
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
    /// Roles of the namespace, by name.
    pub roles: HashMap<String, Role>,
    /// RoleBindings of the namespace.
    pub role_bindings: Vec<RoleBinding>,
}

/// Whether a binding's subject is this user. A ServiceAccount subject without a namespace is in
/// the binding's own namespace.
pub fn subject_is(subject: &Subject, binding_namespace: &str, user: &User) -> bool {
    match subject.kind.as_str() {
        "User" => subject.name == user.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let ns = subject.namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or(binding_namespace);
            user.name == service_account_user(ns, &subject.name)
        }
        _ => false,
    }
}

/// The rules `user` has in `namespace` (empty: only the cluster-wide ones), in the order the
/// bindings grant them.
pub fn rules_for(policy: &Policy, user: &User, namespace: &str) -> Vec<PolicyRule> {
    let mut rules = Vec::new();
    for b in &policy.cluster_role_bindings {
        if b.subjects.iter().flatten().any(|s| subject_is(s, "", user))
            && b.role_ref.kind == "ClusterRole"
            && let Some(role) = policy.cluster_roles.get(&b.role_ref.name)
        {
            rules.extend(role.rules.iter().flatten().cloned());
        }
    }
    if namespace.is_empty() {
        return rules;
    }
    for b in &policy.role_bindings {
        let ns = b.metadata.namespace.as_deref().unwrap_or_default();
        if ns != namespace || !b.subjects.iter().flatten().any(|s| subject_is(s, ns, user)) {
            continue;
        }
        let granted = match b.role_ref.kind.as_str() {
            "ClusterRole" => policy.cluster_roles.get(&b.role_ref.name).and_then(|r| r.rules.as_ref()),
            "Role" => policy.roles.get(&b.role_ref.name).map(|r| &r.rules).and_then(Option::as_ref),
            _ => None,
        };
        rules.extend(granted.into_iter().flatten().cloned());
    }
    rules
}

/// Whether one rule covers the request.
pub fn rule_allows(rule: &PolicyRule, attrs: &Attributes) -> bool {
    if !rule.verbs.iter().any(|v| v == "*" || *v == attrs.verb) {
        return false;
    }
    match &attrs.target {
        Target::Path(path) => rule
            .non_resource_urls
            .iter()
            .flatten()
            .any(|u| u == "*" || u == path || u.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix))),
        Target::Resource { group, resource, subresource, name, .. } => {
            let groups = rule.api_groups.iter().flatten().any(|g| g == "*" || g == group);
            let combined = if subresource.is_empty() { resource.clone() } else { format!("{resource}/{subresource}") };
            let resources =
                rule.resources.iter().flatten().any(|r| {
                    r == "*" || *r == combined || (!subresource.is_empty() && *r == format!("*/{subresource}"))
                });
            let names = match &rule.resource_names {
                Some(names) if !names.is_empty() => names.iter().any(|n| n == name),
                _ => true,
            };
            groups && resources && names
        }
    }
}

/// Whether `user` may do what `attrs` says. Members of `system:masters` may do everything.
pub fn allows(policy: &Policy, user: &User, attrs: &Attributes) -> bool {
    user.is_master() || rules_for(policy, user, attrs.namespace()).iter().any(|r| rule_allows(r, attrs))
}

/// kube-apiserver's words for a refused request (what follows `… is forbidden: `).
pub fn forbidden_message(user: &User, attrs: &Attributes) -> String {
    match &attrs.target {
        Target::Path(path) => format!("User {:?} cannot {} path {:?}", user.name, attrs.verb, path),
        Target::Resource { group, resource, subresource, namespace, .. } => {
            let resource = if subresource.is_empty() { resource.clone() } else { format!("{resource}/{subresource}") };
            let scope = if namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {namespace:?}")
            };
            format!(
                "User {:?} cannot {} resource {:?} in API group {:?} {scope}",
                user.name, attrs.verb, resource, group
            )
        }
    }
}

/// The ClusterRoles an aggregated ClusterRole collects: those whose labels match one of its
/// `clusterRoleSelectors` (matchLabels and matchExpressions).
pub fn aggregated_rules(role: &ClusterRole, all: &[ClusterRole]) -> Option<Vec<PolicyRule>> {
    let selectors = role.aggregation_rule.as_ref()?.cluster_role_selectors.as_ref()?;
    let mut sources: Vec<&ClusterRole> = all
        .iter()
        .filter(|c| c.metadata.name != role.metadata.name)
        .filter(|c| {
            let labels = c.metadata.labels.iter().flatten().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            selectors.iter().any(|s| LabelSelector::from_typed(s).is_ok_and(|s| s.matches(&labels)))
        })
        .collect();
    sources.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for rule in sources.into_iter().flat_map(|c| c.rules.iter().flatten()) {
        if !rules.contains(rule) {
            rules.push(rule.clone());
        }
    }
    Some(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(name: &str, groups: &[&str]) -> User {
        User { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() }
    }

    fn policy() -> Policy {
        let reader: Role = serde_json::from_value(json!({
            "metadata": {"name": "pod-reader", "namespace": "a"},
            "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]}]
        }))
        .unwrap();
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": "read", "namespace": "a"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}]
        }))
        .unwrap();
        let discovery: ClusterRole = serde_json::from_value(json!({
            "metadata": {"name": "system:discovery"},
            "rules": [{"nonResourceURLs": ["/api", "/api/*", "/version"], "verbs": ["get"]}]
        }))
        .unwrap();
        let everyone: ClusterRoleBinding = serde_json::from_value(json!({
            "metadata": {"name": "system:discovery"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:discovery"},
            "subjects": [{"kind": "Group", "name": "system:authenticated"}]
        }))
        .unwrap();
        Policy {
            cluster_roles: [("system:discovery".to_string(), discovery)].into(),
            cluster_role_bindings: vec![everyone],
            roles: [("pod-reader".to_string(), reader)].into(),
            role_bindings: vec![binding],
        }
    }

    #[test]
    fn a_role_grants_in_its_namespace_only() {
        let sa = user("system:serviceaccount:a:sa", &["system:serviceaccounts", "system:authenticated"]);
        let p = policy();
        assert!(allows(&p, &sa, &Attributes::resource("list", "", "pods", "a", "")));
        assert!(allows(&p, &sa, &Attributes::resource("get", "", "pods", "a", "x").on_subresource("log")));
        assert!(!allows(&p, &sa, &Attributes::resource("delete", "", "pods", "a", "x")), "verb not granted");
        assert!(
            !allows(&p, &sa, &Attributes::resource("get", "", "pods", "a", "x").on_subresource("exec")),
            "subresource"
        );
        assert!(!allows(&p, &sa, &Attributes::resource("list", "apps", "pods", "a", "")), "group");
        let mut elsewhere = p.clone();
        elsewhere.role_bindings[0].metadata.namespace = Some("b".into());
        assert!(!allows(&elsewhere, &sa, &Attributes::resource("list", "", "pods", "a", "")));
        let other = user("system:serviceaccount:b:sa", &["system:authenticated"]);
        assert!(!allows(&p, &other, &Attributes::resource("list", "", "pods", "a", "")), "same name, other ns");
    }

    #[test]
    fn paths_match_exactly_or_by_a_trailing_star() {
        let u = user("alice", &["system:authenticated"]);
        let p = policy();
        assert!(allows(&p, &u, &Attributes::path("get", "/api")));
        assert!(allows(&p, &u, &Attributes::path("get", "/api/v1")));
        assert!(!allows(&p, &u, &Attributes::path("get", "/apis")));
        assert!(!allows(&p, &u, &Attributes::path("post", "/version")));
        assert!(allows(&p, &user("root", &["system:masters"]), &Attributes::path("delete", "/anything")));
    }

    #[test]
    fn resource_names_and_wildcards() {
        let rule: PolicyRule = serde_json::from_value(json!({
            "apiGroups": ["*"], "resources": ["*/status"], "verbs": ["update"], "resourceNames": ["one"]
        }))
        .unwrap();
        assert!(rule_allows(
            &rule,
            &Attributes::resource("update", "apps", "deployments", "n", "one").on_subresource("status")
        ));
        assert!(!rule_allows(
            &rule,
            &Attributes::resource("update", "apps", "deployments", "n", "two").on_subresource("status")
        ));
        assert!(!rule_allows(&rule, &Attributes::resource("update", "apps", "deployments", "n", "one")));
    }

    #[test]
    fn refusals_read_as_kube_apiserver_writes_them() {
        let u = user("system:serviceaccount:a:sa", &[]);
        assert_eq!(
            forbidden_message(&u, &Attributes::resource("list", "", "pods", "b", "")),
            r#"User "system:serviceaccount:a:sa" cannot list resource "pods" in API group "" in the namespace "b""#
        );
        assert_eq!(
            forbidden_message(&u, &Attributes::resource("get", "apps", "deployments", "", "").on_subresource("scale")),
            r#"User "system:serviceaccount:a:sa" cannot get resource "deployments/scale" in API group "apps" at the cluster scope"#
        );
        assert_eq!(
            forbidden_message(&u, &Attributes::path("get", "/x")),
            r#"User "system:serviceaccount:a:sa" cannot get path "/x""#
        );
    }

    #[test]
    fn aggregation_collects_the_selected_roles_rules_once() {
        let role = |name: &str, labels: serde_json::Value, verbs: &[&str]| -> ClusterRole {
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": labels},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": verbs}]
            }))
            .unwrap()
        };
        let mut view = role("view", json!({}), &[]);
        view.aggregation_rule = serde_json::from_value(
            json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}),
        )
        .unwrap();
        let a = role("a", json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"}), &["get"]);
        let b = role("b", json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"}), &["get"]);
        let c = role("c", json!({"other": "true"}), &["delete"]);
        let all = vec![view.clone(), a, b, c];
        let rules = aggregated_rules(&view, &all).unwrap();
        assert_eq!(rules.len(), 1, "the same rule twice is kept once");
        assert_eq!(rules[0].verbs, vec!["get".to_string()]);
        assert!(aggregated_rules(&all[1], &all).is_none(), "a role without an aggregation rule");
    }
}
