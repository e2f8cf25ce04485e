//! RBAC escalation prevention, as kube-apiserver's RBAC storage does it: a user may write a Role or
//! ClusterRole only with rules they already hold (or the `escalate` verb on it), and bind a role only
//! when they hold its rules where the binding applies (or the `bind` verb on it). Pure: the caller
//! passes the rules the user holds.

use k8s_openapi::api::rbac::v1::PolicyRule;

use super::rbac::{Attributes, rule_allows};

/// Every permission there is (`*` on `*.*`, and every non-resource URL): what an `aggregationRule`
/// needs its writer to hold.
pub fn full_authority() -> Vec<PolicyRule> {
    let all = || Some(vec!["*".to_string()]);
    vec![
        PolicyRule { verbs: vec!["*".into()], api_groups: all(), resources: all(), ..Default::default() },
        PolicyRule { verbs: vec!["*".into()], non_resource_urls: all(), ..Default::default() },
    ]
}

/// Whether a ClusterRole aggregates (an `aggregationRule` with at least one selector).
pub fn has_aggregation_rule(role: &serde_json::Value) -> bool {
    role.pointer("/aggregationRule/clusterRoleSelectors").and_then(|s| s.as_array()).is_some_and(|s| !s.is_empty())
}

fn list(v: &Option<Vec<String>>) -> Vec<String> {
    v.clone().unwrap_or_default()
}

/// The requests one rule stands for, each as narrow as the rule states it (a `*` stays a `*`, so
/// only a holder of `*` covers it).
fn requests_of(rule: &PolicyRule) -> Vec<Attributes> {
    let mut out = Vec::new();
    for verb in &rule.verbs {
        for url in list(&rule.non_resource_urls) {
            out.push(Attributes::path(verb, &url));
        }
        for group in list(&rule.api_groups) {
            for resource in list(&rule.resources) {
                let (res, sub) = resource.split_once('/').unwrap_or((resource.as_str(), ""));
                let names = list(&rule.resource_names);
                if names.is_empty() {
                    out.push(Attributes::resource(verb, &group, res, "", "").on_subresource(sub));
                }
                for name in names {
                    out.push(Attributes::resource(verb, &group, res, "", &name).on_subresource(sub));
                }
            }
        }
    }
    out
}

/// Whether a rule the user holds covers one narrow request, wildcards included: a held `*` covers
/// anything, a requested `*` needs a held `*`, a held rule limited to names covers only those names.
fn held_covers(held: &PolicyRule, want: &Attributes) -> bool {
    let named = match &want.target {
        super::rbac::Target::Resource { name, .. } => !name.is_empty(),
        super::rbac::Target::Path(_) => true,
    };
    let held_names = list(&held.resource_names);
    if !held_names.is_empty() && !named {
        return false;
    }
    rule_allows(held, want)
}

/// The requested rules the held ones do not cover (empty: no escalation).
pub fn uncovered(held: &[PolicyRule], requested: &[PolicyRule]) -> Vec<PolicyRule> {
    requested
        .iter()
        .filter(|rule| !requests_of(rule).iter().all(|want| held.iter().any(|h| held_covers(h, want))))
        .cloned()
        .collect()
}

/// kube-apiserver's words for an escalation (what follows `… is forbidden: `).
pub fn message(user: &super::user::User, missing: &[PolicyRule]) -> String {
    let rules: Vec<String> = missing
        .iter()
        .map(|r| {
            let mut parts = Vec::new();
            let fmt = |v: &Option<Vec<String>>| format!("{:?}", list(v));
            if r.non_resource_urls.as_ref().is_some_and(|u| !u.is_empty()) {
                parts.push(format!("NonResourceURLs:{}", fmt(&r.non_resource_urls)));
            } else {
                parts.push(format!("APIGroups:{}", fmt(&r.api_groups)));
                parts.push(format!("Resources:{}", fmt(&r.resources)));
                if r.resource_names.as_ref().is_some_and(|n| !n.is_empty()) {
                    parts.push(format!("ResourceNames:{}", fmt(&r.resource_names)));
                }
            }
            parts.push(format!("Verbs:{:?}", r.verbs));
            format!("{{{}}}", parts.join(", "))
        })
        .collect();
    format!(
        "user {:?} (groups={:?}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        user.groups,
        rules.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(v: serde_json::Value) -> Vec<PolicyRule> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn holding_a_rule_covers_granting_it_or_less() {
        let held = rules(json!([{"apiGroups": [""], "resources": ["pods", "configmaps"], "verbs": ["get", "list"]}]));
        assert!(
            uncovered(&held, &rules(json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]))).is_empty()
        );
        let more = rules(json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete"]}]));
        assert_eq!(uncovered(&held, &more).len(), 1);
        let wild = rules(json!([{"apiGroups": [""], "resources": ["*"], "verbs": ["get"]}]));
        assert_eq!(uncovered(&held, &wild).len(), 1, "a requested * needs a held *");
        let everything = rules(json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]));
        assert!(uncovered(&everything, &more).is_empty() && uncovered(&everything, &wild).is_empty());
    }

    #[test]
    fn an_aggregation_rule_needs_every_permission() {
        assert!(has_aggregation_rule(&json!({"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {}}]}})));
        assert!(!has_aggregation_rule(&json!({"aggregationRule": {"clusterRoleSelectors": []}})));
        assert!(!has_aggregation_rule(&json!({"rules": []})));
        let admin = rules(json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                                 {"nonResourceURLs": ["*"], "verbs": ["*"]}]));
        assert!(uncovered(&admin, &full_authority()).is_empty());
        let resources_only = rules(json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]));
        assert_eq!(uncovered(&resources_only, &full_authority()).len(), 1, "non-resource URLs too");
    }

    #[test]
    fn names_and_subresources_are_narrower() {
        let one =
            rules(json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["a"]}]));
        let a = rules(json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["a"]}]));
        let all = rules(json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]));
        assert!(uncovered(&one, &a).is_empty());
        assert_eq!(uncovered(&one, &all).len(), 1, "holding one secret does not grant all");
        let status = rules(json!([{"apiGroups": ["apps"], "resources": ["*/status"], "verbs": ["update"]}]));
        let deploy_status =
            rules(json!([{"apiGroups": ["apps"], "resources": ["deployments/status"], "verbs": ["update"]}]));
        assert!(uncovered(&status, &deploy_status).is_empty());
        let urls = rules(json!([{"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]}]));
        assert!(uncovered(&urls, &rules(json!([{"nonResourceURLs": ["/healthz/etcd"], "verbs": ["get"]}]))).is_empty());
        let user = super::super::user::User { name: "u".into(), ..Default::default() };
        assert!(message(&user, &all).contains("APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]"));
    }
}
