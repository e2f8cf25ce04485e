//! An audit log as kube-apiserver's `--audit-log-path` writes it, at the `Metadata` level for the
//! requests that change something (every verb but get, list, watch): one `audit.k8s.io/v1` Event per
//! line, with who (user, User-Agent), what (verb, objectRef, requestURI), when (received, completed)
//! and the response code.

use std::io::Write;
use std::path::Path;

use parking_lot::Mutex;
use serde_json::{Value, json};

/// The log file.
pub struct AuditLog {
    file: Mutex<std::io::LineWriter<std::fs::File>>,
}

impl AuditLog {
    /// Appends to `path` (created if missing).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self { file: Mutex::new(std::io::LineWriter::new(file)) })
    }

    /// Writes one event (a failed write to the log is reported, never fails the request).
    pub fn write(&self, event: &Value) {
        if let Err(e) = writeln!(self.file.lock(), "{event}") {
            tracing::warn!(error = %e, "writing the audit log failed");
        }
    }
}

/// What a request did, for its audit event.
pub struct Request<'a> {
    /// HTTP method.
    pub method: &'a http::Method,
    /// Path and query.
    pub uri: &'a str,
    /// The authenticated user (empty: none).
    pub user: &'a str,
    /// User-Agent.
    pub user_agent: &'a str,
    /// When it was received (RFC 3339, microseconds).
    pub received: String,
    /// When it completed.
    pub completed: String,
    /// Response code.
    pub code: u16,
    /// What admission noted about it (`pod-security.kubernetes.io/*`).
    pub annotations: &'a [(String, String)],
}

/// Audit annotations a response carries to its audit event.
#[derive(Clone, Debug)]
pub struct Annotations(pub Vec<(String, String)>);

/// Whether a request is audited: every method that may change something.
pub fn audited(method: &http::Method) -> bool {
    !matches!(*method, http::Method::GET | http::Method::HEAD | http::Method::OPTIONS)
}

/// The audit verb of a request (kube-apiserver's names).
pub fn verb(method: &http::Method, has_name: bool) -> &'static str {
    match *method {
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE if has_name => "delete",
        http::Method::DELETE => "deletecollection",
        http::Method::GET => "get",
        _ => "unknown",
    }
}

/// The object a resource path names: `/api/v1/namespaces/ns/pods/name/status`,
/// `/apis/group/version/resource/name`, ... (None: not a resource path).
pub fn object_ref(path: &str) -> Option<Value> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match parts.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, resource, more @ ..] => (Some(*ns), [&[*resource][..], more].concat()),
        ["namespaces", ns] => (None, vec!["namespaces", *ns]),
        other => (None, other.to_vec()),
    };
    let mut r = json!({"apiVersion": version});
    if !group.is_empty() {
        r["apiGroup"] = json!(group);
    }
    if let Some(ns) = namespace {
        r["namespace"] = json!(ns);
    }
    let resource = rest.first()?;
    r["resource"] = json!(resource);
    if let Some(name) = rest.get(1) {
        r["name"] = json!(name);
    }
    if let Some(sub) = rest.get(2) {
        r["subresource"] = json!(sub);
    }
    Some(r)
}

/// The audit event of a request.
pub fn event(req: &Request<'_>, audit_id: &str) -> Value {
    let path = req.uri.split('?').next().unwrap_or_default();
    let object = object_ref(path);
    let has_name = object.as_ref().is_some_and(|o| o.get("name").is_some());
    let mut e = json!({
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": audit_id,
        "stage": "ResponseComplete",
        "requestURI": req.uri,
        "verb": verb(req.method, has_name),
        "user": {"username": req.user},
        "userAgent": req.user_agent,
        "responseStatus": {"metadata": {}, "code": req.code},
        "requestReceivedTimestamp": req.received,
        "stageTimestamp": req.completed,
    });
    if let Some(o) = object {
        e["objectRef"] = o;
    }
    if !req.annotations.is_empty() {
        e["annotations"] = req.annotations.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    }
    e
}

/// Now, as audit events write it.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_paths_name_their_objects() {
        assert_eq!(
            object_ref("/api/v1/namespaces/a/pods/web/status"),
            Some(
                json!({"apiVersion": "v1", "namespace": "a", "resource": "pods", "name": "web", "subresource": "status"})
            )
        );
        assert_eq!(
            object_ref("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/uc-engine"),
            Some(json!({"apiVersion": "v1", "apiGroup": "coordination.k8s.io", "namespace": "kube-system",
                        "resource": "leases", "name": "uc-engine"}))
        );
        assert_eq!(
            object_ref("/api/v1/namespaces/a"),
            Some(json!({"apiVersion": "v1", "resource": "namespaces", "name": "a"}))
        );
        assert_eq!(
            object_ref("/apis/apps/v1/deployments"),
            Some(json!({"apiVersion": "v1", "apiGroup": "apps", "resource": "deployments"}))
        );
        assert_eq!(object_ref("/healthz"), None);
    }

    #[test]
    fn events_carry_verb_user_and_code() {
        let m = http::Method::DELETE;
        let e = event(
            &Request {
                method: &m,
                uri: "/api/v1/namespaces/a/configmaps/c?dryRun=All",
                user: "admin",
                user_agent: "kubectl/1.33",
                received: "r".into(),
                completed: "c".into(),
                code: 200,
                annotations: &[],
            },
            "id",
        );
        assert_eq!((e["verb"].as_str(), e["user"]["username"].as_str()), (Some("delete"), Some("admin")));
        assert_eq!(e["objectRef"]["name"], "c");
        assert_eq!(e["responseStatus"]["code"], 200);
        assert!(e.get("annotations").is_none());
        let noted = [("pod-security.kubernetes.io/enforce-policy".to_string(), "baseline:latest".to_string())];
        let p = http::Method::POST;
        let r = Request {
            method: &p,
            uri: "/api/v1/namespaces/a/pods",
            user: "u",
            user_agent: "k",
            received: "r".into(),
            completed: "c".into(),
            code: 403,
            annotations: &noted,
        };
        assert_eq!(
            event(&r, "id")["annotations"],
            json!({"pod-security.kubernetes.io/enforce-policy": "baseline:latest"})
        );
        assert!(!audited(&http::Method::GET) && audited(&http::Method::PUT));
    }
}
