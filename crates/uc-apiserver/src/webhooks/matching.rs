//! Which admission webhooks a write concerns, what they are sent and what their answers mean — as
//! kube-apiserver decides it, in pure functions over the webhook configurations.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as Selector;
use serde_json::{Value, json};
use uc_api::{LabelSelector, Pointer};

/// Why a webhook's answer cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AnswerError(pub String);

impl From<String> for AnswerError {
    fn from(message: String) -> Self {
        AnswerError(message)
    }
}

impl From<&str> for AnswerError {
    fn from(message: &str) -> Self {
        AnswerError(message.to_string())
    }
}

impl From<AnswerError> for String {
    fn from(e: AnswerError) -> String {
        e.0
    }
}

/// One webhook of a Validating- or MutatingWebhookConfiguration.
#[derive(Debug, Clone)]
pub struct Hook {
    /// The webhook's name (`vpod.example.com`).
    pub name: String,
    /// Whether it may change the object.
    pub mutating: bool,
    /// Where it is served.
    pub client: WebhookClientConfig,
    /// What it is called for.
    pub rules: Vec<RuleWithOperations>,
    /// A failure to call it refuses the write (`Fail`, the default) or is ignored (`Ignore`).
    pub fail_closed: bool,
    /// Namespaces whose labels match.
    pub namespace_selector: Option<Selector>,
    /// Objects whose labels match.
    pub object_selector: Option<Selector>,
    /// Seconds to wait (default 10).
    pub timeout_seconds: u64,
    /// Review versions it understands, preferred first.
    pub review_versions: Vec<String>,
    /// `None` / `NoneOnDryRun`: it may be called for a dry run.
    pub dry_run_safe: bool,
}

/// The hooks of every configuration, mutating ones first, each kind in configuration-name order.
pub fn hooks(mutating: &[MutatingWebhookConfiguration], validating: &[ValidatingWebhookConfiguration]) -> Vec<Hook> {
    let mut m: Vec<&MutatingWebhookConfiguration> = mutating.iter().collect();
    m.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut v: Vec<&ValidatingWebhookConfiguration> = validating.iter().collect();
    v.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    // Mutating and validating webhooks are two types with the same fields.
    macro_rules! hook {
        ($w:expr, $mutating:expr) => {
            Hook {
                name: $w.name.clone(),
                mutating: $mutating,
                client: $w.client_config.clone(),
                rules: $w.rules.clone().unwrap_or_default(),
                fail_closed: $w.failure_policy.as_deref() != Some("Ignore"),
                namespace_selector: $w.namespace_selector.clone(),
                object_selector: $w.object_selector.clone(),
                timeout_seconds: $w.timeout_seconds.unwrap_or(10).clamp(1, 30) as u64,
                review_versions: $w.admission_review_versions.clone(),
                dry_run_safe: matches!($w.side_effects.as_str(), "None" | "NoneOnDryRun"),
            }
        };
    }
    let mut out: Vec<Hook> = m.into_iter().flat_map(|c| c.webhooks.iter().flatten()).map(|w| hook!(w, true)).collect();
    out.extend(v.into_iter().flat_map(|c| c.webhooks.iter().flatten()).map(|w| hook!(w, false)));
    out
}

/// The write a webhook might be called for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// `CREATE`, `UPDATE`, `DELETE`.
    pub operation: &'static str,
    /// API group of the resource.
    pub group: String,
    /// Version the request used.
    pub version: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource, or empty.
    pub subresource: String,
    /// Kind.
    pub kind: String,
    /// Whether the resource is namespaced.
    pub namespaced: bool,
    /// Namespace (empty at cluster scope).
    pub namespace: String,
    /// Object name.
    pub name: String,
}

/// Whether a rule covers a write. Resources are `res` (no subresource), `res/sub`, `res/*`, `*`,
/// `*/*`, `*/sub`. Versions are not compared: under the default `matchPolicy: Equivalent` every
/// served version of a resource is the same resource.
pub fn rule_matches(rule: &RuleWithOperations, w: &Write) -> bool {
    let any = |list: &Option<Vec<String>>, want: &str| list.iter().flatten().any(|x| x == "*" || x == want);
    let resources = rule.resources.iter().flatten().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r.as_str(), ""));
        (res == "*" || res == w.resource) && (sub == "*" || sub == w.subresource)
    });
    let scope = match rule.scope.as_deref() {
        Some("Cluster") => !w.namespaced,
        Some("Namespaced") => w.namespaced,
        _ => true,
    };
    any(&rule.operations, w.operation) && any(&rule.api_groups, &w.group) && resources && scope
}

fn selector_matches(selector: &Option<Selector>, labels: Option<&Value>) -> bool {
    let Some(s) = selector else { return true };
    serde_json::to_value(s)
        .ok()
        .and_then(|s| LabelSelector::from_value(&s).ok())
        .is_some_and(|s| s.matches_value(labels))
}

/// Whether `hook` is called for `w`: a rule matches, the namespace's labels match its
/// namespaceSelector (namespaced objects, and Namespaces themselves), and the object's or the old
/// object's labels match its objectSelector.
pub fn concerns(
    hook: &Hook,
    w: &Write,
    namespace_labels: Option<&Value>,
    object: Option<&Value>,
    old: Option<&Value>,
) -> bool {
    if !hook.rules.iter().any(|r| rule_matches(r, w)) {
        return false;
    }
    let is_namespace = w.group.is_empty() && w.resource == "namespaces";
    if (w.namespaced || is_namespace) && !selector_matches(&hook.namespace_selector, namespace_labels) {
        return false;
    }
    if hook.object_selector.is_none() {
        return true;
    }
    let labels = |o: &Value| o.at("/metadata/labels").cloned().unwrap_or_else(|| json!({}));
    [object, old].into_iter().flatten().any(|o| selector_matches(&hook.object_selector, Some(&labels(o))))
}

/// The AdmissionReview sent to a hook.
#[allow(clippy::too_many_arguments)]
pub fn review(
    hook: &Hook,
    uid: &str,
    w: &Write,
    user_info: Value,
    object: Option<&Value>,
    old: Option<&Value>,
    dry_run: bool,
) -> Value {
    let version = if hook.review_versions.iter().any(|v| v == "v1") || hook.review_versions.is_empty() {
        "v1"
    } else {
        "v1beta1"
    };
    let kind = json!({"group": w.group, "version": w.version, "kind": w.kind});
    let resource = json!({"group": w.group, "version": w.version, "resource": w.resource});
    let options_kind = match w.operation {
        "CREATE" => "CreateOptions",
        "DELETE" => "DeleteOptions",
        _ => "UpdateOptions",
    };
    let mut request = json!({
        "uid": uid, "kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
        "name": w.name, "operation": w.operation, "userInfo": user_info,
        "object": object.cloned().unwrap_or(Value::Null), "oldObject": old.cloned().unwrap_or(Value::Null),
        "dryRun": dry_run, "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind},
    });
    if !w.namespace.is_empty() {
        request["namespace"] = json!(w.namespace);
    }
    if !w.subresource.is_empty() {
        request["subResource"] = json!(w.subresource);
        request["requestSubResource"] = json!(w.subresource);
    }
    json!({"apiVersion": format!("admission.k8s.io/{version}"), "kind": "AdmissionReview", "request": request})
}

/// What a hook answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Allowed, with a JSON patch to apply (mutating hooks) and warnings.
    Allowed {
        /// JSON patch operations.
        patch: Option<Value>,
        /// Warnings for the client.
        warnings: Vec<String>,
    },
    /// Refused: HTTP code and kube-apiserver's message.
    Denied {
        /// HTTP status code (at least 400).
        code: u16,
        /// `admission webhook "<name>" denied the request: <message>`.
        message: String,
        /// The hook's reason, if it gave one.
        reason: String,
    },
}

/// Reads a hook's AdmissionReview answer; an answer that breaks the protocol is an error (a
/// failure to call it).
pub fn verdict(hook: &Hook, uid: &str, answer: &Value) -> Result<Verdict, AnswerError> {
    let response = answer.get("response").filter(|r| r.is_object()).ok_or("the response has no `response`")?;
    let got = response.get("uid").and_then(Value::as_str).unwrap_or_default();
    if got != uid {
        return Err(AnswerError::from(format!("expected response.uid={uid:?}, got {got:?}")));
    }
    let warnings = response
        .get("warnings")
        .and_then(Value::as_array)
        .map(|w| w.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    if response.get("allowed").and_then(Value::as_bool) == Some(true) {
        let patch = match response.get("patch").and_then(Value::as_str) {
            None => None,
            Some(_) if !hook.mutating => return Err(AnswerError::from("a validating webhook may not return a patch")),
            Some(b64) => {
                use base64::Engine;
                if response.get("patchType").and_then(Value::as_str).unwrap_or("JSONPatch") != "JSONPatch" {
                    return Err(AnswerError::from("the only supported patchType is JSONPatch"));
                }
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| format!("the patch is not base64: {e}"))?;
                Some(serde_json::from_slice(&bytes).map_err(|e| format!("the patch is not JSON: {e}"))?)
            }
        };
        return Ok(Verdict::Allowed { patch, warnings });
    }
    let status = response.get("status").cloned().unwrap_or(Value::Null);
    let code = status.get("code").and_then(Value::as_u64).filter(|c| (400..600).contains(c)).unwrap_or(400) as u16;
    let text = |k: &str| status.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let denied_by = format!("admission webhook {:?} denied the request", hook.name);
    let message = match (text("message"), text("reason")) {
        (Some(m), _) => format!("{denied_by}: {m}"),
        (None, Some(r)) => format!("{denied_by}: {r}"),
        (None, None) => format!("{denied_by} without explanation"),
    };
    Ok(Verdict::Denied { code, message, reason: text("reason").unwrap_or_default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(rules: Value, extra: Value) -> Hook {
        let mut w = json!({"name": "v.example.com", "clientConfig": {"url": "https://127.0.0.1:1/v"},
                           "rules": rules, "sideEffects": "None", "admissionReviewVersions": ["v1"]});
        for (k, v) in extra.as_object().unwrap() {
            w[k] = v.clone();
        }
        let c: ValidatingWebhookConfiguration =
            serde_json::from_value(json!({"metadata": {"name": "c"}, "webhooks": [w]})).unwrap();
        hooks(&[], &[c]).remove(0)
    }

    fn write(op: &'static str, resource: &str, sub: &str) -> Write {
        Write {
            operation: op,
            group: "example.com".into(),
            version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            kind: "Widget".into(),
            namespaced: true,
            namespace: "n".into(),
            name: "w".into(),
        }
    }

    #[test]
    fn rules_match_operations_groups_resources_and_subresources() {
        let rule = |ops: &[&str], res: &[&str]| -> RuleWithOperations {
            serde_json::from_value(
                json!({"operations": ops, "apiGroups": ["example.com"], "apiVersions": ["*"], "resources": res}),
            )
            .unwrap()
        };
        assert!(rule_matches(&rule(&["CREATE"], &["widgets"]), &write("CREATE", "widgets", "")));
        assert!(!rule_matches(&rule(&["CREATE"], &["widgets"]), &write("UPDATE", "widgets", "")));
        assert!(!rule_matches(&rule(&["*"], &["widgets"]), &write("UPDATE", "widgets", "status")));
        assert!(rule_matches(&rule(&["*"], &["widgets/*"]), &write("UPDATE", "widgets", "status")));
        assert!(rule_matches(&rule(&["*"], &["widgets/*"]), &write("UPDATE", "widgets", "")));
        assert!(rule_matches(&rule(&["*"], &["*/status"]), &write("UPDATE", "widgets", "status")));
        assert!(!rule_matches(&rule(&["*"], &["*"]), &write("UPDATE", "widgets", "scale")));
        assert!(!rule_matches(&rule(&["*"], &["gadgets"]), &write("CREATE", "widgets", "")));
        let mut other_group = write("CREATE", "widgets", "");
        other_group.group = "apps".into();
        assert!(!rule_matches(&rule(&["*"], &["*"]), &other_group));
    }

    #[test]
    fn selectors_pick_namespaces_and_objects() {
        let rules = json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]);
        let h = hook(
            rules.clone(),
            json!({"namespaceSelector": {"matchLabels": {"team": "a"}}, "objectSelector": {"matchLabels": {"checked": "yes"}}}),
        );
        let w = write("CREATE", "widgets", "");
        let obj = json!({"metadata": {"labels": {"checked": "yes"}}});
        assert!(concerns(&h, &w, Some(&json!({"team": "a"})), Some(&obj), None));
        assert!(!concerns(&h, &w, Some(&json!({"team": "b"})), Some(&obj), None));
        assert!(!concerns(&h, &w, Some(&json!({"team": "a"})), Some(&json!({"metadata": {}})), None));
        assert!(
            concerns(&h, &w, Some(&json!({"team": "a"})), Some(&json!({"metadata": {}})), Some(&obj)),
            "old object"
        );
        let plain = hook(rules, json!({}));
        assert!(concerns(&plain, &w, None, Some(&json!({"metadata": {}})), None));
    }

    #[test]
    fn answers_become_kube_apiserver_verdicts() {
        let h = hook(json!([]), json!({}));
        let denied = json!({"response": {"uid": "u", "allowed": false, "status": {"message": "size must be even", "code": 422}}});
        assert_eq!(
            verdict(&h, "u", &denied),
            Ok(Verdict::Denied {
                code: 422,
                message: r#"admission webhook "v.example.com" denied the request: size must be even"#.into(),
                reason: String::new(),
            })
        );
        let bare = json!({"response": {"uid": "u", "allowed": false}});
        assert!(
            matches!(verdict(&h, "u", &bare), Ok(Verdict::Denied { code: 400, message, .. }) if message.ends_with("without explanation"))
        );
        assert!(verdict(&h, "other", &bare).unwrap_err().0.contains("expected response.uid"));
        let patched = json!({"response": {"uid": "u", "allowed": true, "patchType": "JSONPatch", "patch": "W10="}});
        assert!(verdict(&h, "u", &patched).unwrap_err().0.contains("may not return a patch"), "validating");
        let mut m = h.clone();
        m.mutating = true;
        assert_eq!(verdict(&m, "u", &patched), Ok(Verdict::Allowed { patch: Some(json!([])), warnings: vec![] }));
    }

    #[test]
    fn the_review_names_the_write() {
        let h = hook(json!([]), json!({"admissionReviewVersions": ["v1beta1"]}));
        let r = review(&h, "u", &write("UPDATE", "widgets", "status"), json!({"username": "x"}), None, None, true);
        assert_eq!(r["apiVersion"], "admission.k8s.io/v1beta1");
        assert_eq!(r["request"]["subResource"], "status");
        assert_eq!(r["request"]["options"]["kind"], "UpdateOptions");
        assert_eq!(r["request"]["dryRun"], true);
        assert_eq!(r["request"]["resource"], json!({"group": "example.com", "version": "v1", "resource": "widgets"}));
    }
}
