//! Defaulting and validation of the built-in kinds: the subset of kube-apiserver's strategies that
//! controllers and kubectl rely on.

use base64::Engine;
use serde_json::{Value, json};
use uc_api::Pointer;

use crate::error::FieldError;
use crate::registry::is_dns_label;

fn set_default(obj: &mut Value, pointer: &str, value: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    if let Some(Value::Object(map)) = obj.at_mut(parent)
        && !map.contains_key(key)
    {
        map.insert(key.to_string(), value);
    }
}

fn default_pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    set_default(spec, "/restartPolicy", json!("Always"));
    set_default(spec, "/terminationGracePeriodSeconds", json!(30));
    set_default(spec, "/dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "/schedulerName", json!("default-scheduler"));
    set_default(spec, "/securityContext", json!({}));
    for list in ["containers", "initContainers"] {
        if let Some(Value::Array(cs)) = spec.get_mut(list) {
            for c in cs.iter_mut().filter(|c| c.is_object()) {
                let latest = c
                    .get("image")
                    .and_then(Value::as_str)
                    .is_some_and(|i| !i.rsplit('/').next().unwrap_or(i).contains(':') || i.ends_with(":latest"));
                set_default(c, "/imagePullPolicy", json!(if latest { "Always" } else { "IfNotPresent" }));
                set_default(c, "/terminationMessagePath", json!("/dev/termination-log"));
                set_default(c, "/terminationMessagePolicy", json!("File"));
                set_default(c, "/resources", json!({}));
                if let Some(Value::Array(ports)) = c.get_mut("ports") {
                    for p in ports.iter_mut().filter(|p| p.is_object()) {
                        set_default(p, "/protocol", json!("TCP"));
                    }
                }
                for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                    if let Some(p) = c.get_mut(probe).filter(|p| p.is_object()) {
                        default_probe(p);
                    }
                }
            }
        }
    }
}

/// What kube-apiserver's default admission plugins add to a pod that needs no stored object: the
/// not-ready and unreachable tolerations of 300 s (`DefaultTolerationSeconds`) unless it tolerates
/// those taints itself (its priority comes from its class: `builtin_scheduling`).
fn default_pod_admission(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    set_default(spec, "/enableServiceLinks", json!(true));
    let tolerates = |spec: &Value, key: &str| {
        spec.get("tolerations").and_then(Value::as_array).is_some_and(|ts| {
            ts.iter().any(|t| {
                let effect = t.get("effect").and_then(Value::as_str).unwrap_or_default();
                let tkey = t.get("key").and_then(Value::as_str).unwrap_or_default();
                (effect.is_empty() || effect == "NoExecute") && (tkey == key || tkey.is_empty())
            })
        })
    };
    for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        if tolerates(spec, key) {
            continue;
        }
        let toleration = json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300});
        match spec.get_mut("tolerations") {
            Some(Value::Array(ts)) => ts.push(toleration),
            _ => spec["tolerations"] = json!([toleration]),
        }
    }
}

/// A probe's defaults, as kube-apiserver sets them.
fn default_probe(p: &mut Value) {
    set_default(p, "/timeoutSeconds", json!(1));
    set_default(p, "/periodSeconds", json!(10));
    set_default(p, "/successThreshold", json!(1));
    set_default(p, "/failureThreshold", json!(3));
    if let Some(get) = p.get_mut("httpGet").filter(|g| g.is_object()) {
        set_default(get, "/path", json!("/"));
        set_default(get, "/scheme", json!("HTTP"));
    }
}

fn default_template(obj: &mut Value) {
    if let Some(spec) = obj.at_mut("/spec/template/spec") {
        default_pod_spec(spec);
    }
}

/// Applies the defaults kube-apiserver applies to a built-in kind.
pub fn apply_defaults(resource: &str, obj: &mut Value) {
    if obj.get("spec").is_none()
        && matches!(
            resource,
            "deployments"
                | "replicasets"
                | "statefulsets"
                | "jobs"
                | "services"
                | "daemonsets"
                | "replicationcontrollers"
        )
    {
        return;
    }
    match resource {
        "pods" => {
            if let Some(spec) = obj.get_mut("spec") {
                default_pod_spec(spec);
                default_pod_admission(spec);
                crate::pod_resources::default_requests(spec);
            }
        }
        "deployments" => default_deployment(obj),
        "replicasets" => {
            set_default(obj, "/spec/replicas", json!(1));
            default_template(obj);
        }
        "replicationcontrollers" => {
            set_default(obj, "/spec/replicas", json!(1));
            // An RC without a selector selects its template's labels.
            if let Some(labels) = obj.at("/spec/template/metadata/labels").cloned() {
                set_default(obj, "/spec/selector", labels);
            }
            default_template(obj);
        }
        "daemonsets" => {
            set_default(obj, "/spec/revisionHistoryLimit", json!(10));
            set_default(
                obj,
                "/spec/updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            );
            default_template(obj);
        }
        "secrets" => default_secret(obj),
        "statefulsets" => default_statefulset(obj),
        "jobs" => default_job(obj),
        "cronjobs" => default_cronjob(obj),
        "services" => default_service(obj),
        "persistentvolumeclaims" => set_default(obj, "/spec/volumeMode", json!("Filesystem")),
        "validatingwebhookconfigurations" | "mutatingwebhookconfigurations" => {
            crate::webhooks::config::apply_defaults(resource, obj)
        }
        "networkpolicies" | "ingressclasses" => crate::builtin_networking::apply_defaults(resource, obj),
        "horizontalpodautoscalers" => crate::builtin_autoscaling::apply_defaults(obj),
        "storageclasses" => crate::builtin_storage::apply_defaults(obj),
        "priorityclasses" => crate::builtin_scheduling::apply_defaults(obj),
        "limitranges" => crate::limit_ranges::apply_defaults(obj),
        "podtemplates" => {
            if let Some(spec) = obj.at_mut("/template/spec") {
                default_pod_spec(spec);
            }
        }
        _ => {}
    }
}

fn default_deployment(obj: &mut Value) {
    set_default(obj, "/spec/replicas", json!(1));
    set_default(obj, "/spec/revisionHistoryLimit", json!(10));
    set_default(obj, "/spec/progressDeadlineSeconds", json!(600));
    set_default(obj, "/spec/strategy", json!({}));
    set_default(obj, "/spec/strategy/type", json!("RollingUpdate"));
    if obj.at("/spec/strategy/type").and_then(Value::as_str) == Some("RollingUpdate") {
        set_default(obj, "/spec/strategy/rollingUpdate", json!({}));
        set_default(obj, "/spec/strategy/rollingUpdate/maxSurge", json!("25%"));
        set_default(obj, "/spec/strategy/rollingUpdate/maxUnavailable", json!("25%"));
    }
    default_template(obj);
}

fn default_secret(obj: &mut Value) {
    // stringData is write-only: it is merged into data, as kube-apiserver does.
    set_default(obj, "/type", json!("Opaque"));
    if let Some(Value::Object(strings)) = obj.as_object_mut().and_then(|m| m.remove("stringData")) {
        if !obj.get("data").is_some_and(Value::is_object) {
            obj["data"] = json!({});
        }
        for (k, v) in strings {
            let text = v.as_str().unwrap_or_default();
            obj["data"][k] = json!(base64::engine::general_purpose::STANDARD.encode(text));
        }
    }
}

fn default_statefulset(obj: &mut Value) {
    set_default(obj, "/spec/replicas", json!(1));
    set_default(obj, "/spec/podManagementPolicy", json!("OrderedReady"));
    set_default(obj, "/spec/revisionHistoryLimit", json!(10));
    set_default(obj, "/spec/updateStrategy", json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}));
    set_default(
        obj,
        "/spec/persistentVolumeClaimRetentionPolicy",
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
    );
    default_template(obj);
}

fn default_job(obj: &mut Value) {
    let has_c = obj.at("/spec/completions").is_some();
    let has_p = obj.at("/spec/parallelism").is_some();
    if !has_c && !has_p {
        set_default(obj, "/spec/completions", json!(1));
    }
    set_default(obj, "/spec/parallelism", json!(1));
    set_default(obj, "/spec/backoffLimit", json!(6));
    set_default(obj, "/spec/completionMode", json!("NonIndexed"));
    set_default(obj, "/spec/suspend", json!(false));
    // A restartPolicy of Always is left for validation to reject (Jobs take Never or OnFailure).
    default_template(obj);
}

/// batch/v1's `SetDefaults_CronJob`; the Job template's pod spec gets a pod's defaults (its Job spec
/// none: those come when the Job is made).
fn default_cronjob(obj: &mut Value) {
    if !obj.get("spec").is_some_and(Value::is_object) {
        return;
    }
    set_default(obj, "/spec/concurrencyPolicy", json!("Allow"));
    set_default(obj, "/spec/suspend", json!(false));
    set_default(obj, "/spec/successfulJobsHistoryLimit", json!(3));
    set_default(obj, "/spec/failedJobsHistoryLimit", json!(1));
    if let Some(spec) = obj.at_mut("/spec/jobTemplate/spec/template/spec") {
        default_pod_spec(spec);
    }
}

fn default_service(obj: &mut Value) {
    set_default(obj, "/spec/type", json!("ClusterIP"));
    set_default(obj, "/spec/sessionAffinity", json!("None"));
    if let Some(Value::Array(ports)) = obj.at_mut("/spec/ports") {
        for p in ports.iter_mut().filter(|p| p.is_object()) {
            set_default(p, "/protocol", json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                set_default(p, "/targetPort", port);
            }
        }
    }
}

/// What is wrong with `name` at `field` as an RFC 1123 label (a container's or a volume's name).
pub(crate) fn label_errors(field: &str, name: &str) -> Vec<FieldError> {
    let rule = uc_api::names::NameRule::Dns1123Label;
    rule.errors(name, false).into_iter().map(|why| FieldError::invalid(field, &Value::from(name), why)).collect()
}

fn check_pod_spec(spec: Option<&Value>, base: &str, errs: &mut Vec<FieldError>) {
    let Some(spec) = spec else {
        errs.push(FieldError::required(base, ""));
        return;
    };
    match spec.get("containers").and_then(Value::as_array) {
        None => errs.push(FieldError::required(format!("{base}.containers"), "")),
        Some(cs) if cs.is_empty() => errs.push(FieldError::required(format!("{base}.containers"), "")),
        Some(cs) => {
            let mut names = Vec::new();
            for (i, c) in cs.iter().enumerate() {
                let p = format!("{base}.containers[{i}]");
                match c.get("name").and_then(Value::as_str) {
                    None | Some("") => errs.push(FieldError::required(format!("{p}.name"), "")),
                    Some(n) if !is_dns_label(n) => errs.extend(label_errors(&format!("{p}.name"), n)),
                    Some(n) if names.contains(&n) => errs.push(FieldError::new(
                        crate::error::FieldErrorKind::Duplicate,
                        format!("{p}.name"),
                        Some(format!("{n:?}")),
                        "",
                    )),
                    Some(n) => names.push(n),
                }
                if c.get("image").and_then(Value::as_str).is_none_or(str::is_empty) {
                    errs.push(FieldError::required(format!("{p}.image"), ""));
                }
            }
        }
    }
    check_volumes(spec, base, errs);
}

/// Volume names (DNS labels, once each: the node makes a directory of each), the mounts that name them
/// (`subPath` relative, never leaving the volume), and each container's own rules, with
/// kube-apiserver's words.
fn check_volumes(spec: &Value, base: &str, errs: &mut Vec<FieldError>) {
    use crate::error::FieldErrorKind;
    let mut volumes: Vec<&str> = Vec::new();
    for (i, v) in spec.get("volumes").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let field = format!("{base}.volumes[{i}].name");
        match v.get("name").and_then(Value::as_str) {
            None | Some("") => errs.push(FieldError::required(field, "")),
            Some(n) if !is_dns_label(n) => errs.extend(label_errors(&field, n)),
            Some(n) if volumes.contains(&n) => {
                errs.push(FieldError::new(FieldErrorKind::Duplicate, field, Some(format!("{n:?}")), ""))
            }
            Some(n) => volumes.push(n),
        }
    }
    for list in ["initContainers", "containers"] {
        for (i, c) in spec.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let p = format!("{base}.{list}[{i}]");
            for (j, m) in c.get("volumeMounts").and_then(Value::as_array).into_iter().flatten().enumerate() {
                let mp = format!("{p}.volumeMounts[{j}]");
                let name = m.get("name").and_then(Value::as_str).unwrap_or_default();
                // A template's mounts may name what its workload adds (a StatefulSet's claim templates).
                if base == "spec" && !volumes.contains(&name) {
                    errs.push(FieldError::new(
                        FieldErrorKind::NotFound,
                        format!("{mp}.name"),
                        Some(format!("{name:?}")),
                        "",
                    ));
                }
                if m.get("mountPath").and_then(Value::as_str).is_none_or(str::is_empty) {
                    errs.push(FieldError::required(format!("{mp}.mountPath"), ""));
                }
                if let Some(sub) = m.get("subPath").and_then(Value::as_str) {
                    if sub.starts_with('/') {
                        errs.push(FieldError::invalid(
                            format!("{mp}.subPath"),
                            &Value::from(sub),
                            "must be a relative path",
                        ));
                    } else if sub.split('/').any(|part| part == "..") {
                        errs.push(FieldError::invalid(
                            format!("{mp}.subPath"),
                            &Value::from(sub),
                            "must not contain '..'",
                        ));
                    }
                }
            }
            crate::builtin_container::check(c, &p, errs);
        }
    }
}

fn check_selector_matches_template(obj: &Value, errs: &mut Vec<FieldError>) {
    let Some(selector) = obj.at("/spec/selector") else {
        errs.push(FieldError::required("spec.selector", ""));
        return;
    };
    match uc_api::LabelSelector::from_value(selector) {
        Err(e) => errs.push(FieldError::invalid("spec.selector", selector, e.to_string())),
        Ok(sel) if sel.is_empty() => {
            errs.push(FieldError::invalid("spec.selector", selector, "empty selector is invalid for deployment"))
        }
        Ok(sel) => {
            if !sel.matches_value(obj.at("/spec/template/metadata/labels")) {
                errs.push(FieldError::invalid(
                    "spec.template.metadata.labels",
                    obj.at("/spec/template/metadata/labels").unwrap_or(&Value::Null),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
}

/// A Job's spec at `base` (a Job's, or a CronJob's template of one).
fn check_job_spec(spec: Option<&Value>, base: &str, errs: &mut Vec<FieldError>) {
    let Some(spec) = spec else { return };
    for field in ["completions", "parallelism", "backoffLimit"] {
        check_non_negative(spec, &format!("/{field}"), &format!("{base}.{field}"), errs);
    }
    check_pod_spec(spec.at("/template/spec"), &format!("{base}.template.spec"), errs);
    match spec.get("completionMode").and_then(Value::as_str) {
        None | Some("NonIndexed") => {}
        Some("Indexed") if spec.get("completions").is_none_or(Value::is_null) => {
            errs.push(FieldError::required(format!("{base}.completions"), "when completion mode is Indexed"));
        }
        Some("Indexed") => {}
        Some(other) => errs.push(FieldError::new(
            crate::error::FieldErrorKind::NotSupported,
            format!("{base}.completionMode"),
            Some(format!("{other:?}")),
            "supported values: \"NonIndexed\", \"Indexed\"",
        )),
    }
    if let Some(rp) = spec.at("/template/spec/restartPolicy")
        && rp.as_str() == Some("Always")
    {
        errs.push(FieldError::new(
            crate::error::FieldErrorKind::NotSupported,
            format!("{base}.template.spec.restartPolicy"),
            Some("\"Always\"".into()),
            "supported values: \"OnFailure\", \"Never\"",
        ));
    }
}

fn check_non_negative(obj: &Value, pointer: &str, field: &str, errs: &mut Vec<FieldError>) {
    if let Some(v) = obj.at(pointer) {
        match v.as_i64() {
            Some(n) if n >= 0 => {}
            Some(_) => errs.push(FieldError::invalid(field, v, "must be greater than or equal to 0")),
            None => errs.push(FieldError::invalid(field, v, "must be an integer")),
        }
    }
}

/// The annotation a Deployment's rollout revision is kept in (and its ReplicaSets').
pub const DEPLOYMENT_REVISION: &str = "deployment.kubernetes.io/revision";

/// Stamps a Deployment's rollout revision, as kube's deployment controller keeps it: 1 at creation, one
/// more at every change of the pod template (a rollback too), unchanged otherwise. `kubectl rollout
/// undo` patches the annotations, so they must exist.
pub fn deployment_revision(old: Option<&Value>, new: &mut Value) {
    let revision_of = |o: &Value| {
        o.at("/metadata/annotations")
            .and_then(|a| a.get(DEPLOYMENT_REVISION))
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<u64>().ok())
    };
    let revision = match old {
        None => 1,
        Some(o) => {
            let before = revision_of(o).unwrap_or(0);
            let changed = o.at("/spec/template") != new.at("/spec/template");
            if changed || before == 0 { before + 1 } else { before }
        }
    };
    if !new["metadata"]["annotations"].is_object() {
        new["metadata"]["annotations"] = Value::Object(Default::default());
    }
    new["metadata"]["annotations"][DEPLOYMENT_REVISION] = Value::String(revision.to_string());
}

/// Validates a built-in kind; returns field errors (422).
pub fn validate(resource: &str, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match resource {
        "pods" => check_pod_spec(obj.get("spec"), "spec", &mut errs),
        "podtemplates" => check_pod_spec(obj.at("/template/spec"), "template.spec", &mut errs),
        "replicationcontrollers" => {
            check_non_negative(obj, "/spec/replicas", "spec.replicas", &mut errs);
            check_pod_spec(obj.at("/spec/template/spec"), "spec.template.spec", &mut errs);
        }
        "deployments" | "replicasets" | "statefulsets" | "daemonsets" => {
            check_non_negative(obj, "/spec/replicas", "spec.replicas", &mut errs);
            check_selector_matches_template(obj, &mut errs);
            check_pod_spec(obj.at("/spec/template/spec"), "spec.template.spec", &mut errs);
        }
        "jobs" => check_job_spec(obj.get("spec"), "spec", &mut errs),
        "cronjobs" => {
            errs.extend(crate::builtin_cronjob::validate(obj));
            check_job_spec(obj.at("/spec/jobTemplate/spec"), "spec.jobTemplate.spec", &mut errs);
        }
        "services" => {
            if let Some(ports) = obj.at("/spec/ports").and_then(Value::as_array) {
                for (i, p) in ports.iter().enumerate() {
                    match p.get("port").and_then(Value::as_i64) {
                        Some(1..=65535) => {}
                        Some(_) => errs.push(FieldError::invalid(
                            format!("spec.ports[{i}].port"),
                            &p["port"],
                            "must be between 1 and 65535, inclusive",
                        )),
                        None => errs.push(FieldError::required(format!("spec.ports[{i}].port"), "")),
                    }
                }
            }
        }
        "validatingwebhookconfigurations" | "mutatingwebhookconfigurations" => {
            errs.extend(crate::webhooks::config::validate(obj));
        }
        "certificatesigningrequests" => errs.extend(crate::certificates::validate(obj)),
        "networkpolicies" | "ingresses" | "ingressclasses" => {
            errs.extend(crate::builtin_networking::validate(resource, obj))
        }
        "storageclasses" => errs.extend(crate::builtin_storage::validate(obj)),
        "priorityclasses" => errs.extend(crate::builtin_scheduling::validate(obj)),
        "limitranges" => errs.extend(crate::limit_ranges::validate(obj)),
        "resourcequotas" => errs.extend(crate::resource_quotas::validate(obj)),
        "horizontalpodautoscalers" => {
            errs.extend(crate::builtin_autoscaling::validate(obj));
            errs.extend(crate::builtin_autoscaling::status_errors(obj));
        }
        "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings" => {
            errs.extend(crate::auth::validate::validate(resource, obj));
        }
        "configmaps" => {
            if let Some(data) = obj.get("data").and_then(Value::as_object) {
                for (k, v) in data {
                    if !v.is_string() {
                        errs.push(FieldError::invalid(format!("data[{k}]"), v, "must be a string"));
                    }
                }
            }
        }
        _ => {}
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_get_what_the_default_admission_plugins_add() {
        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        apply_defaults("pods", &mut pod);
        assert_eq!(pod["spec"]["enableServiceLinks"].as_bool(), Some(true));
        assert!(pod["spec"].get("priority").is_none(), "a priority comes from the stored classes, at admission");
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                   {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}])
        );
        let mut own =
            json!({"spec": {"priorityClassName": "high", "tolerations": [{"operator": "Exists"}], "containers": []}});
        apply_defaults("pods", &mut own);
        assert_eq!(own["spec"]["tolerations"], json!([{"operator": "Exists"}]), "it tolerates everything already");
        let mut template = json!({"spec": {"template": {"spec": {"containers": []}}}});
        apply_defaults("deployments", &mut template);
        assert!(
            template["spec"]["template"]["spec"].get("tolerations").is_none(),
            "admission is for pods, not templates"
        );
    }

    #[test]
    fn deployments_count_their_template_changes() {
        let d = |image: &str| serde_json::json!({"metadata": {"name": "d"}, "spec": {"replicas": 1, "template": {"spec": {"containers": [{"image": image}]}}}});
        let mut created = d("a");
        deployment_revision(None, &mut created);
        assert_eq!(created["metadata"]["annotations"][DEPLOYMENT_REVISION], "1");
        let mut scaled = created.clone();
        scaled["spec"]["replicas"] = serde_json::json!(3);
        deployment_revision(Some(&created), &mut scaled);
        assert_eq!(scaled["metadata"]["annotations"][DEPLOYMENT_REVISION], "1", "scaling is no new revision");
        let mut rolled = d("b");
        deployment_revision(Some(&scaled), &mut rolled);
        assert_eq!(rolled["metadata"]["annotations"][DEPLOYMENT_REVISION], "2", "kept though the client left it out");
        let mut back = d("a");
        deployment_revision(Some(&rolled), &mut back);
        assert_eq!(back["metadata"]["annotations"][DEPLOYMENT_REVISION], "3", "a rollback is a new revision");
    }

    #[test]
    fn deployment_defaults_and_validation() {
        let mut d = json!({"spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        apply_defaults("deployments", &mut d);
        assert_eq!(d.at("/spec/replicas"), Some(&json!(1)));
        assert_eq!(d.at("/spec/strategy/rollingUpdate/maxSurge"), Some(&json!("25%")));
        assert_eq!(d.at("/spec/template/spec/containers/0/imagePullPolicy"), Some(&json!("Always")));
        let mut probed = json!({"spec": {"containers": [{"name": "c", "image": "nginx:1",
            "readinessProbe": {"httpGet": {"port": 80}}, "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 3}}]}});
        apply_defaults("pods", &mut probed);
        let c = &probed["spec"]["containers"][0];
        assert_eq!(
            c["readinessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                                "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["livenessProbe"]["periodSeconds"], 3, "what the pod says stays");
        let errs = validate("deployments", &d);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.template.metadata.labels");
        let errs = validate(
            "pods",
            &json!({"spec": {
            "volumes": [{"name": "../../../../tmp/x", "emptyDir": {}}, {"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}],
            "containers": [{"name": "ok", "image": "busybox", "ports": [{"containerPort": 0}, {"containerPort": 80, "hostPort": 70000}],
                "volumeMounts": [{"name": "missing", "mountPath": "/m"}, {"name": "data", "mountPath": "/d", "subPath": "../../etc"},
                                 {"name": "data", "mountPath": "/e", "subPath": "/etc"}]}]}}),
        );
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "spec.volumes[0].name",
                "spec.volumes[2].name",
                "spec.containers[0].volumeMounts[0].name",
                "spec.containers[0].volumeMounts[1].subPath",
                "spec.containers[0].volumeMounts[2].subPath",
                "spec.containers[0].ports[0].containerPort",
                "spec.containers[0].ports[1].hostPort",
            ]
        );
        assert!(errs[0].detail.contains("RFC 1123"), "{:?}", errs[0]);
        let errs = validate("pods", &json!({"spec": {"containers": [{"name": "Bad"}]}}));
        let fields: Vec<_> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, vec!["spec.containers[0].name", "spec.containers[0].image"]);
    }
}
