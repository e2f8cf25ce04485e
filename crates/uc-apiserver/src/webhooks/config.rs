//! Defaults and validation of Mutating- and ValidatingWebhookConfigurations, as kube-apiserver
//! applies them.

use serde_json::{Value, json};

use crate::error::{FieldError, FieldErrorKind};

/// Fills what kube-apiserver fills: `failurePolicy: Fail`, `matchPolicy: Equivalent`, empty
/// selectors, `timeoutSeconds: 10`, rule `scope: "*"`, and `reinvocationPolicy: Never` for mutating
/// hooks.
pub fn apply_defaults(resource: &str, obj: &mut Value) {
    let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else { return };
    for h in hooks.iter_mut().filter_map(Value::as_object_mut) {
        let mut default = |k: &str, v: Value| {
            h.entry(k.to_string()).or_insert(v);
        };
        default("failurePolicy", json!("Fail"));
        default("matchPolicy", json!("Equivalent"));
        default("namespaceSelector", json!({}));
        default("objectSelector", json!({}));
        default("timeoutSeconds", json!(10));
        if resource == "mutatingwebhookconfigurations" {
            default("reinvocationPolicy", json!("Never"));
        }
        for rule in h.get_mut("rules").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(r) = rule.as_object_mut() {
                r.entry("scope").or_insert(json!("*"));
            }
        }
    }
}

fn not_supported(field: String, value: &Value, allowed: &[&str]) -> FieldError {
    let list: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
    FieldError::new(
        FieldErrorKind::NotSupported,
        field,
        Some(value.to_string()),
        format!("supported values: {}", list.join(", ")),
    )
}

/// Errors in a webhook configuration.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (i, h) in obj.get("webhooks").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let p = format!("webhooks[{i}]");
        match h.get("name").and_then(Value::as_str) {
            None | Some("") => errs.push(FieldError::required(format!("{p}.name"), "")),
            Some(n) if n.split('.').filter(|s| !s.is_empty()).count() < 3 => errs.push(FieldError::invalid(
                format!("{p}.name"),
                &json!(n),
                "should be a domain with at least three segments separated by dots",
            )),
            Some(n) if names.contains(&n) => {
                errs.push(FieldError::new(FieldErrorKind::Duplicate, format!("{p}.name"), Some(format!("{n:?}")), ""))
            }
            Some(n) => names.push(n),
        }
        let client = h.get("clientConfig").cloned().unwrap_or(Value::Null);
        match (client.get("url").and_then(Value::as_str), client.get("service").filter(|s| s.is_object())) {
            (Some(_), Some(_)) | (None, None) => errs
                .push(FieldError::required(format!("{p}.clientConfig"), "exactly one of url or service is required")),
            (Some(url), None) if !url.starts_with("https://") => errs.push(FieldError::invalid(
                format!("{p}.clientConfig.url"),
                &json!(url),
                "'https' is the only allowed URL scheme",
            )),
            (None, Some(s)) => {
                for k in ["namespace", "name"] {
                    if s.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
                        errs.push(FieldError::required(format!("{p}.clientConfig.service.{k}"), ""));
                    }
                }
            }
            _ => {}
        }
        match h.get("sideEffects") {
            Some(Value::String(s)) if matches!(s.as_str(), "None" | "NoneOnDryRun") => {}
            None | Some(Value::Null) => errs.push(FieldError::new(
                FieldErrorKind::Required,
                format!("{p}.sideEffects"),
                None,
                "must specify one of None, NoneOnDryRun",
            )),
            Some(v) => errs.push(not_supported(format!("{p}.sideEffects"), v, &["None", "NoneOnDryRun"])),
        }
        let versions: Vec<&str> = h
            .get("admissionReviewVersions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !versions.iter().any(|v| matches!(*v, "v1" | "v1beta1")) {
            errs.push(FieldError::required(format!("{p}.admissionReviewVersions"), "must specify one of v1, v1beta1"));
        }
        if let Some(f) = h.get("failurePolicy").filter(|f| !matches!(f.as_str(), Some("Fail" | "Ignore"))) {
            errs.push(not_supported(format!("{p}.failurePolicy"), f, &["Fail", "Ignore"]));
        }
        if let Some(t) = h.get("timeoutSeconds").filter(|t| !t.as_i64().is_some_and(|t| (1..=30).contains(&t))) {
            errs.push(FieldError::invalid(
                format!("{p}.timeoutSeconds"),
                t,
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_is_defaulted_then_checked() {
        let mut c = json!({"webhooks": [
            {"name": "v.example.com", "clientConfig": {"url": "https://127.0.0.1:9443/"}, "sideEffects": "None",
             "admissionReviewVersions": ["v1"], "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]},
            {"name": "short", "clientConfig": {"url": "http://x/"}, "sideEffects": "Some", "admissionReviewVersions": ["v2"]},
            {"name": "v.example.com", "clientConfig": {}, "admissionReviewVersions": ["v1"], "timeoutSeconds": 60}
        ]});
        apply_defaults("mutatingwebhookconfigurations", &mut c);
        assert_eq!(c["webhooks"][0]["failurePolicy"], "Fail");
        assert_eq!(c["webhooks"][0]["rules"][0]["scope"], "*");
        assert_eq!(c["webhooks"][0]["reinvocationPolicy"], "Never");
        let fields: Vec<String> = validate(&c).into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            [
                "webhooks[1].name",
                "webhooks[1].clientConfig.url",
                "webhooks[1].sideEffects",
                "webhooks[1].admissionReviewVersions",
                "webhooks[2].name",
                "webhooks[2].clientConfig",
                "webhooks[2].sideEffects",
                "webhooks[2].timeoutSeconds",
            ]
        );
    }
}
