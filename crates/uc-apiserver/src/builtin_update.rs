//! What kube-apiserver's strategies refuse in an update of a built-in kind (`ValidateXUpdate`), with
//! their words:
//! - a Pod's spec changes only in its containers' images, `activeDeadlineSeconds` (set, or lowered),
//!   tolerations added, a negative `terminationGracePeriodSeconds` set to 1 and scheduling gates
//!   removed — and, uc's node binding by a patch where kube's scheduler posts a Binding, `nodeName` set
//!   once;
//! - a ConfigMap's or Secret's data once it is `immutable`, and `immutable` itself;
//! - the selector of a Deployment, ReplicaSet, DaemonSet, StatefulSet or Job; a StatefulSet's spec but
//!   for the fields kube lets change; a Job's template (but, while it is suspended and never started,
//!   its labels, annotations, node selector, tolerations and scheduling gates), `completionMode` and
//!   `completions` (but an Indexed Job's, with `parallelism`, as kube's elastic Indexed Jobs);
//! - a PersistentVolumeClaim's spec but for its storage request, which may only grow;
//! - an IngressClass's controller;
//! - a StorageClass's parameters, provisioner, reclaim policy and binding mode;
//! - a PriorityClass's value and preemption policy.
//!
//! A field set to `null` counts as a field left out, as Go's decoder reads both.

use serde_json::{Map, Value};
use uc_api::Pointer;

use crate::error::FieldError;

/// What is wrong with an update of `old` to `new` (both defaulted, in the storage version).
pub(crate) fn update_errors(group: &str, resource: &str, old: &Value, new: &Value) -> Vec<FieldError> {
    match (group, resource) {
        ("", "pods") => pod(old, new),
        ("", "configmaps" | "secrets") => immutable_data(old, new),
        ("", "persistentvolumeclaims") => claim(old, new),
        ("apps", "deployments" | "replicasets" | "daemonsets") => selector(old, new),
        ("apps", "statefulsets") => [selector(old, new), stateful_set(old, new)].concat(),
        ("batch", "jobs") => [selector(old, new), job(old, new)].concat(),
        ("networking.k8s.io", "ingressclasses") => crate::builtin_networking::class_update_errors(old, new),
        ("storage.k8s.io", "storageclasses") => crate::builtin_storage::update_errors(old, new),
        ("scheduling.k8s.io", "priorityclasses") => crate::builtin_scheduling::update_errors(old, new),
        _ => Vec::new(),
    }
}

/// `v` without the fields set to null, at every depth.
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(v))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    let norm = |v: Option<&Value>| v.filter(|v| !v.is_null()).map(without_nulls);
    norm(a) == norm(b)
}

fn immutable(field: &str, value: Option<&Value>) -> FieldError {
    FieldError::invalid(field, value.unwrap_or(&Value::Null), "field is immutable")
}

fn selector(old: &Value, new: &Value) -> Vec<FieldError> {
    let (a, b) = (old.at("/spec/selector"), new.at("/spec/selector"));
    if same(a, b) { Vec::new() } else { vec![immutable("spec.selector", b)] }
}

/// `spec` with the fields an update may change taken from `old`.
fn with_old(spec: Option<&Value>, old: Option<&Value>, fields: &[&str]) -> Value {
    let mut out = spec.and_then(Value::as_object).cloned().unwrap_or_default();
    let old = old.and_then(Value::as_object);
    for f in fields {
        match old.and_then(|o| o.get(*f)) {
            Some(v) => out.insert((*f).to_string(), v.clone()),
            None => out.remove(*f),
        };
    }
    Value::Object(out)
}

const POD_RULE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

fn pod(old: &Value, new: &Value) -> Vec<FieldError> {
    let (Some(old_spec), Some(new_spec)) = (old.get("spec"), new.get("spec")) else { return Vec::new() };
    let (mut old_spec, new_spec) = (without_nulls(old_spec), without_nulls(new_spec));
    // A pod stored before its requests were defaulted reads as kube decodes it: defaulted.
    crate::pod_resources::default_requests(&mut old_spec);
    let int = |v: &Value, f: &str| v.get(f).and_then(Value::as_i64);
    let list = |v: &Value, f: &str| v.get(f).and_then(Value::as_array).cloned().unwrap_or_default();
    let changed = |f: &str| (int(&old_spec, f), int(&new_spec, f));
    let (old_tolerations, new_tolerations) = (list(&old_spec, "tolerations"), list(&new_spec, "tolerations"));
    let (old_gates, new_gates) = (list(&old_spec, "schedulingGates"), list(&new_spec, "schedulingGates"));
    let may_change = [
        // A deadline may be set or lowered, never raised or removed.
        (
            "activeDeadlineSeconds",
            matches!(changed("activeDeadlineSeconds"), (None, _))
                || matches!(changed("activeDeadlineSeconds"), (Some(o), Some(n)) if n <= o),
        ),
        ("tolerations", old_tolerations.iter().all(|t| new_tolerations.contains(t))),
        ("schedulingGates", new_gates.iter().all(|g| old_gates.contains(g))),
        (
            "terminationGracePeriodSeconds",
            matches!(changed("terminationGracePeriodSeconds"), (Some(o), Some(1)) if o < 0),
        ),
        // The node's binding (kube's scheduler posts a Binding instead).
        ("nodeName", old_spec.get("nodeName").and_then(Value::as_str).is_none_or(str::is_empty)),
        // They have their own subresource.
        ("ephemeralContainers", true),
    ];
    let fields: Vec<&str> = may_change.iter().filter(|(_, ok)| *ok).map(|(f, _)| *f).collect();
    let mut munged = with_old(Some(&new_spec), Some(&old_spec), &fields);
    // Images may change, container by container.
    for list in ["containers", "initContainers"] {
        let olds = old_spec.get(list).and_then(Value::as_array);
        if let (Some(news), Some(olds)) = (munged.get_mut(list).and_then(Value::as_array_mut), olds)
            && news.len() == olds.len()
        {
            for (n, o) in news.iter_mut().zip(olds) {
                if let (Some(n), Some(image)) = (n.as_object_mut(), o.get("image")) {
                    n.insert("image".into(), image.clone());
                }
            }
        }
    }
    if munged == old_spec { Vec::new() } else { vec![FieldError::forbidden("spec", POD_RULE)] }
}

fn immutable_data(old: &Value, new: &Value) -> Vec<FieldError> {
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return Vec::new();
    }
    let words = "field is immutable when `immutable` is set";
    let mut errs = Vec::new();
    if new.get("immutable").and_then(Value::as_bool) != Some(true) {
        errs.push(FieldError::forbidden("immutable", words));
    }
    for f in ["data", "binaryData"] {
        let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(Map::is_empty);
        let (a, b) = (old.get(f), new.get(f));
        if !(same(a, b) || empty(a) && empty(b)) {
            errs.push(FieldError::forbidden(f, words));
        }
    }
    errs
}

fn stateful_set(old: &Value, new: &Value) -> Vec<FieldError> {
    let may_change = [
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
        "selector",
    ];
    let munged = with_old(new.get("spec"), old.get("spec"), &may_change);
    if same(Some(&munged), old.get("spec")) {
        return Vec::new();
    }
    vec![FieldError::forbidden(
        "spec",
        "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    )]
}

fn job(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (o, n) = (|p: &str| old.at(p), |p: &str| new.at(p));
    // Suspended and never started: what places its pods may change.
    let unstarted = n("/spec/suspend").and_then(Value::as_bool) == Some(true) && o("/status/startTime").is_none();
    let template = |v: &Value| {
        let mut t = without_nulls(v.at("/spec/template").unwrap_or(&Value::Null));
        if unstarted {
            for p in [
                "/metadata/labels",
                "/metadata/annotations",
                "/spec/nodeSelector",
                "/spec/tolerations",
                "/spec/schedulingGates",
            ] {
                let (parent, key) = p.rsplit_once('/').unwrap_or(("", p));
                if let Some(m) = t.at_mut(parent).and_then(Value::as_object_mut) {
                    m.remove(key);
                }
            }
        }
        t
    };
    if template(old) != template(new) {
        errs.push(immutable("spec.template", n("/spec/template")));
    }
    if !same(o("/spec/completionMode"), n("/spec/completionMode")) {
        errs.push(immutable("spec.completionMode", n("/spec/completionMode")));
    }
    let elastic = n("/spec/completionMode").and_then(Value::as_str) == Some("Indexed")
        && same(n("/spec/completions"), n("/spec/parallelism"))
        && same(o("/spec/completions"), o("/spec/parallelism"));
    if !elastic && !same(o("/spec/completions"), n("/spec/completions")) {
        errs.push(immutable("spec.completions", n("/spec/completions")));
    }
    errs
}

fn claim(old: &Value, new: &Value) -> Vec<FieldError> {
    let request = "/resources/requests/storage";
    let (Some(old_spec), Some(new_spec)) = (old.get("spec"), new.get("spec")) else { return Vec::new() };
    let mut munged = with_old(Some(new_spec), Some(old_spec), &["volumeAttributesClassName", "volumeName"]);
    if let (Some(slot), Some(was)) = (munged.at_mut(request), old_spec.at(request)) {
        *slot = was.clone();
    }
    let mut errs = Vec::new();
    if !same(Some(&munged), Some(old_spec)) {
        errs.push(FieldError::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    let size = |v: &Value| v.at(request).and_then(Value::as_str).and_then(|q| uc_api::quantity::parse(q).ok());
    if let (Some(was), Some(now)) = (size(old_spec), size(new_spec))
        && now < was
    {
        errs.push(FieldError::forbidden(
            "spec.resources.requests.storage",
            "field can not be less than status.capacity",
        ));
    }
    errs
}

#[cfg(test)]
mod tests;
