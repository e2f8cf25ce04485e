//! Pod Security admission at the API server's edge: the namespace's policy read from the store, the
//! verdict from [`crate::pod_security`], refused or warned about on the request.

use serde_json::Value;
use uc_api::{GroupResource, Pointer};

use crate::app::{App, Req};
use crate::error::{ApiError, FieldError, Result};
use crate::handlers::admission::invalid;
use crate::handlers::meta::meta_str;
use crate::request::Target;

/// Pod Security admission of a pod (refused when it violates its namespace's enforce level, warned
/// about at its warn level) or a workload's pod template (warned about at both), and of a namespace's
/// own `pod-security.kubernetes.io/*` labels. Dry runs are judged as real ones.
pub(crate) fn admit(app: &App, req: &mut Req, t: &Target, name: &str, obj: &Value, old: Option<&Value>) -> Result<()> {
    use crate::pod_security::{self as psa, Policy};
    let info = &t.info;
    if info.group.is_empty() && info.resource == "namespaces" {
        let labels = obj.pointer("/metadata/labels");
        let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        if let Err(errs) = Policy::of_namespace(&app.config.pod_security, label) {
            let errs: Vec<FieldError> = errs
                .into_iter()
                .map(|(k, m)| FieldError::invalid(format!("metadata.labels[{k}]"), &Value::from(label(&k)), m))
                .collect();
            return Err(invalid(info, name, &errs));
        }
        warn_about_existing_pods(app, req, name, obj, old);
        return Ok(());
    }
    let pod = info.group.is_empty() && info.resource == "pods";
    let at = if pod { Some("/spec") } else { psa::template_pointer(&info.group, &info.resource) };
    let (Some(at), Some(ns)) = (at, t.namespace.as_deref()) else { return Ok(()) };
    if psa::EXEMPT_NAMESPACES.contains(&ns) {
        req.audit_annotations.push(("pod-security.kubernetes.io/exempt".into(), "namespace".into()));
        return Ok(());
    }
    let Some(judged) = obj.at(at).and_then(|spec| app.pod_security.judge(spec)) else { return Ok(()) };
    let policy = namespace_policy(app, ns);
    // What the audit log records of the request, as kube-apiserver annotates it.
    req.audit_annotations.push(("pod-security.kubernetes.io/enforce-policy".into(), policy.enforce.label()));
    let audit = judged.at(policy.audit.level);
    if !audit.violations.is_empty() {
        let violations = format!("would violate PodSecurity {:?}: {}", policy.audit.label(), audit.described);
        tracing::info!(target: "uc_apiserver::audit", namespace = ns, name, %violations, "pod security audit");
        req.audit_annotations.push(("pod-security.kubernetes.io/audit-violations".into(), violations));
    }
    let enforce = judged.at(policy.enforce.level);
    if pod && !enforce.violations.is_empty() {
        let subject = crate::error::Subject { name: name.to_string(), ..t.subject() };
        let message = format!("violates PodSecurity {:?}: {}", policy.enforce.label(), enforce.described);
        return Err(ApiError::forbidden(&subject, message));
    }
    let mut warned = Vec::new();
    if !pod && !enforce.violations.is_empty() {
        warned.push(&policy.enforce);
    }
    if policy.warn != policy.enforce || pod {
        warned.push(&policy.warn);
    }
    for level in warned {
        let found = judged.at(level.level);
        if !found.violations.is_empty() {
            req.warnings.push(format!("would violate PodSecurity {:?}: {}", level.label(), found.described));
        }
    }
    Ok(())
}

/// The Pod Security policy of namespace `ns`: its labels over the cluster's defaults, read again only
/// when the namespace changes. A namespace whose labels no longer parse is judged at the defaults.
fn namespace_policy(app: &App, ns: &str) -> crate::pod_security::Policy {
    use crate::pod_security::Policy;
    let namespaces = GroupResource::new("", "namespaces");
    let kept = app.store.get_kept(&namespaces, &crate::storage::object_key("", ns));
    let rv = kept.as_ref().map_or(0, |k| k.rv());
    app.pod_security.policy(ns, rv, || {
        let stored = kept.map(|k| k.tree());
        let labels = stored.as_ref().and_then(|n| n.pointer("/metadata/labels"));
        let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        Policy::of_namespace(&app.config.pod_security, label).unwrap_or_else(|_| app.config.pod_security.clone())
    })
}

/// A namespace whose enforce level changes: the pods already in it that the new level would refuse,
/// as kube-apiserver warns about them (they keep running).
fn warn_about_existing_pods(app: &App, req: &mut Req, ns: &str, obj: &Value, old: Option<&Value>) {
    use crate::pod_security::{self as psa, Level, Policy};
    let policy_of = |o: Option<&Value>| {
        let labels = o.and_then(|o| o.pointer("/metadata/labels"));
        Policy::of_namespace(&app.config.pod_security, |k| labels.and_then(|l| l.get(k)).and_then(Value::as_str)).ok()
    };
    let (Some(new), Some(before)) = (policy_of(Some(obj)), old.map(|o| policy_of(Some(o)))) else { return };
    if before.as_ref().is_some_and(|b| b.enforce == new.enforce)
        || new.enforce.level == Level::Privileged
        || psa::EXEMPT_NAMESPACES.contains(&ns)
    {
        return;
    }
    let pods = GroupResource::new("", "pods");
    let Ok((listed, _)) = app.store.list(&pods, Some(ns), None) else { return };
    let specs: Vec<(String, k8s_openapi::api::core::v1::PodSpec)> = listed
        .iter()
        .filter_map(|(_, p)| {
            let spec = serde_json::from_value(p.get("spec")?.clone()).ok()?;
            Some((meta_str(p, "name").unwrap_or_default().to_string(), spec))
        })
        .collect();
    req.warnings.extend(psa::existing_pod_warnings(&new.enforce, ns, &specs));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::storage::{Op, object_key};
    use http::Method;
    use serde_json::json;

    fn target(resource: &str, group: &str, ns: &str) -> Target {
        let info = Registry::new().get(&GroupResource::new(group, resource)).expect("built in");
        Target { info, version: "v1".into(), namespace: Some(ns.into()), name: None, sub: None, watch_prefix: false }
    }

    fn pod(privileged: bool) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox",
               "securityContext": {"privileged": privileged}}]}})
    }

    #[tokio::test]
    async fn a_remembered_verdict_does_not_outlive_its_namespaces_labels() {
        let dir = tempfile::tempdir().unwrap();
        let app = crate::server::test_app(dir.path());
        let namespaces = GroupResource::new("", "namespaces");
        let ns = |level: &str| {
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "open",
                   "labels": {"pod-security.kubernetes.io/enforce": level}}})
        };
        let key = object_key("", "open");
        let created = Op::Create { gr: namespaces.clone(), key: key.clone(), object: ns("privileged") };
        app.store.write(created).await.unwrap();
        let pods = target("pods", "", "open");
        let mut req = Req::for_test(Method::POST, "application/json", "", &[]);
        admit(&app, &mut req, &pods, "p", &pod(true), None).expect("privileged namespace: admitted");
        // The namespace tightened: the same spec, judged before, is refused now.
        let expect_rv = app.store.get_kept(&namespaces, &key).unwrap().rv();
        let tightened = Op::Update { gr: namespaces.clone(), key: key.clone(), object: ns("baseline"), expect_rv };
        app.store.write(tightened).await.unwrap();
        let mut req = Req::for_test(Method::POST, "application/json", "", &[]);
        assert_eq!(admit(&app, &mut req, &pods, "p", &pod(true), None).unwrap_err().code(), 403);
        // Deleted, the namespace's labels no longer hold: the cluster default (baseline) refuses it too.
        let expect_rv = app.store.get_kept(&namespaces, &key).unwrap().rv();
        app.store.write(Op::Delete { gr: namespaces, key, expect_rv }).await.unwrap();
        let mut req = Req::for_test(Method::POST, "application/json", "", &[]);
        assert_eq!(admit(&app, &mut req, &pods, "p", &pod(true), None).unwrap_err().code(), 403);
    }

    #[tokio::test]
    async fn a_namespaces_enforce_level_refuses_pods_and_its_warn_level_warns() {
        let dir = tempfile::tempdir().unwrap();
        let app = crate::server::test_app(dir.path());
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "locked",
                        "labels": {"pod-security.kubernetes.io/enforce": "baseline",
                                   "pod-security.kubernetes.io/warn": "restricted"}}});
        let namespaces = GroupResource::new("", "namespaces");
        app.store.write(Op::Create { gr: namespaces, key: object_key("", "locked"), object: ns }).await.unwrap();
        let mut req = Req::for_test(Method::POST, "application/json", "", &[]);
        let pods = target("pods", "", "locked");
        let refused = admit(&app, &mut req, &pods, "p", &pod(true), None).unwrap_err();
        assert_eq!(refused.code(), 403);
        // Baseline allows it; restricted (the warn level) does not: a warning, not a refusal.
        let mut req = Req::for_test(Method::POST, "application/json", "", &[]);
        admit(&app, &mut req, &pods, "p", &pod(false), None).expect("baseline admits it");
        assert!(req.warnings.iter().any(|w| w.contains("\"restricted:latest\"")), "{:?}", req.warnings);
        // A workload's template is warned about, never refused.
        let deployment = json!({"metadata": {"name": "d"}, "spec": {"template": pod(true)}});
        let mut req = Req::for_test(Method::POST, "application/json", "", &[]);
        admit(&app, &mut req, &target("deployments", "apps", "locked"), "d", &deployment, None).expect("warned only");
        assert!(!req.warnings.is_empty());
        // kube-system is exempt.
        let mut req = Req::for_test(Method::POST, "application/json", "", &[]);
        admit(&app, &mut req, &target("pods", "", "kube-system"), "p", &pod(true), None).expect("exempt");
    }

    #[test]
    fn a_namespace_label_that_does_not_read_is_refused_with_its_field() {
        let dir = tempfile::tempdir().unwrap();
        let app = crate::server::test_app(dir.path());
        let mut req = Req::for_test(Method::POST, "application/json", "", &[]);
        let bad = json!({"metadata": {"name": "n", "labels": {"pod-security.kubernetes.io/enforce": "strict"}}});
        let namespaces = Target { namespace: None, ..target("namespaces", "", "") };
        let e = admit(&app, &mut req, &namespaces, "n", &bad, None).unwrap_err();
        assert_eq!(e.code(), 422);
    }
}
