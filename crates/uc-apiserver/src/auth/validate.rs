//! Validation of RBAC objects, with kube-apiserver's field paths and words.

use serde_json::Value;

use crate::error::FieldError;

/// Errors in a Role, ClusterRole, RoleBinding or ClusterRoleBinding (`resource` is its plural).
pub fn validate(resource: &str, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match resource {
        "roles" | "clusterroles" => {
            for (i, rule) in obj.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
                check_rule(rule, &format!("rules[{i}]"), resource == "roles", &mut errs);
            }
        }
        "rolebindings" | "clusterrolebindings" => check_binding(obj, resource == "rolebindings", &mut errs),
        _ => {}
    }
    errs
}

fn non_empty(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array).is_some_and(|a| !a.is_empty())
}

fn check_rule(rule: &Value, path: &str, namespaced: bool, errs: &mut Vec<FieldError>) {
    if !non_empty(rule.get("verbs")) {
        errs.push(FieldError::required(format!("{path}.verbs"), "verbs must contain at least one value"));
    }
    let urls = non_empty(rule.get("nonResourceURLs"));
    if urls && namespaced {
        errs.push(FieldError::invalid(
            format!("{path}.nonResourceURLs"),
            rule.get("nonResourceURLs").unwrap_or(&Value::Null),
            "namespaced rules cannot apply to non-resource URLs",
        ));
    }
    if urls && (non_empty(rule.get("apiGroups")) || non_empty(rule.get("resources"))) {
        errs.push(FieldError::invalid(
            format!("{path}.nonResourceURLs"),
            rule.get("nonResourceURLs").unwrap_or(&Value::Null),
            "rules cannot apply to both regular resources and non-resource URLs",
        ));
    }
    if !urls {
        if !non_empty(rule.get("apiGroups")) {
            errs.push(FieldError::required(
                format!("{path}.apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if !non_empty(rule.get("resources")) {
            errs.push(FieldError::required(
                format!("{path}.resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

fn check_binding(obj: &Value, namespaced: bool, errs: &mut Vec<FieldError>) {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let role_ref = obj.get("roleRef").cloned().unwrap_or(Value::Null);
    let kinds: &[&str] = if namespaced { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
    let kind = s(&role_ref, "kind");
    if !kinds.contains(&kind.as_str()) {
        errs.push(FieldError::new(
            crate::error::FieldErrorKind::NotSupported,
            "roleRef.kind",
            Some(format!("{kind:?}")),
            format!("supported values: {}", kinds.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", ")),
        ));
    }
    if s(&role_ref, "apiGroup") != "rbac.authorization.k8s.io" {
        errs.push(FieldError::new(
            crate::error::FieldErrorKind::NotSupported,
            "roleRef.apiGroup",
            Some(format!("{:?}", s(&role_ref, "apiGroup"))),
            "supported values: \"rbac.authorization.k8s.io\"",
        ));
    }
    if s(&role_ref, "name").is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    }
    for (i, subject) in obj.get("subjects").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let path = format!("subjects[{i}]");
        if s(subject, "name").is_empty() {
            errs.push(FieldError::required(format!("{path}.name"), ""));
        }
        match s(subject, "kind").as_str() {
            "User" | "Group" => {}
            "ServiceAccount" => {
                if !namespaced && s(subject, "namespace").is_empty() {
                    errs.push(FieldError::required(format!("{path}.namespace"), ""));
                }
            }
            other => errs.push(FieldError::new(
                crate::error::FieldErrorKind::NotSupported,
                format!("{path}.kind"),
                Some(format!("{other:?}")),
                "supported values: \"ServiceAccount\", \"User\", \"Group\"",
            )),
        }
    }
}

/// A binding's `roleRef` cannot change once created.
pub fn role_ref_unchanged(old: &Value, new: &Value) -> Option<FieldError> {
    (old.get("roleRef") != new.get("roleRef"))
        .then(|| FieldError::invalid("roleRef", new.get("roleRef").unwrap_or(&Value::Null), "cannot change roleRef"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(errs: &[FieldError]) -> Vec<&str> {
        errs.iter().map(|e| e.field.as_str()).collect()
    }

    #[test]
    fn rules_need_verbs_and_what_they_apply_to() {
        let role = json!({"rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            {"resources": ["pods"], "verbs": []},
            {"nonResourceURLs": ["/x"], "verbs": ["get"]}
        ]});
        assert_eq!(
            fields(&validate("roles", &role)),
            ["rules[1].verbs", "rules[1].apiGroups", "rules[2].nonResourceURLs"]
        );
        assert_eq!(fields(&validate("clusterroles", &role)), ["rules[1].verbs", "rules[1].apiGroups"]);
    }

    #[test]
    fn bindings_name_a_role_of_a_kind_their_scope_allows() {
        let b = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                       "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "Robot", "name": "x"}]});
        assert_eq!(fields(&validate("rolebindings", &b)), ["subjects[1].kind"]);
        assert_eq!(
            fields(&validate("clusterrolebindings", &b)),
            ["roleRef.kind", "subjects[0].namespace", "subjects[1].kind"]
        );
        let changed = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "other"}});
        assert!(role_ref_unchanged(&b, &changed).is_some());
        assert!(role_ref_unchanged(&b, &b).is_none());
    }
}
