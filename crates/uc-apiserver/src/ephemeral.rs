//! `pods/<name>/ephemeralcontainers` (what `kubectl debug` writes): the only way a running pod's
//! containers change. Ephemeral containers are added, never changed or removed, and may not have
//! ports, probes, resources or lifecycle hooks — kube-apiserver's rules, with its words.

use serde_json::Value;
use uc_api::Pointer;

use crate::error::{FieldError, FieldErrorKind};
use crate::registry::is_dns_label;

/// Fields an ephemeral container may not set.
const FORBIDDEN: &[&str] = &["ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "resources"];

fn list<'a>(pod: &'a Value, key: &str) -> &'a [Value] {
    pod.at(&format!("/spec/{key}")).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn name_of(c: &Value) -> &str {
    c.get("name").and_then(Value::as_str).unwrap_or_default()
}

/// The pod `old` with the ephemeral containers of `new`, or what is wrong with them.
pub fn update(old: &Value, new: &Value) -> Result<Value, Vec<FieldError>> {
    let before = list(old, "ephemeralContainers");
    let after = list(new, "ephemeralContainers");
    let mut errs = Vec::new();
    for b in before {
        match after.iter().find(|a| name_of(a) == name_of(b)) {
            None => errs.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                format!("existing ephemeral containers {:?} may not be removed", name_of(b)),
            )),
            Some(a) if a != b => errs.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                format!("existing ephemeral containers {:?} may not be changed", name_of(b)),
            )),
            Some(_) => {}
        }
    }
    let mut taken: Vec<&str> = list(old, "containers").iter().chain(list(old, "initContainers")).map(name_of).collect();
    let regular: Vec<&str> = list(old, "containers").iter().map(name_of).collect();
    for (i, c) in after.iter().enumerate() {
        let p = format!("spec.ephemeralContainers[{i}]");
        let name = name_of(c);
        if name.is_empty() {
            errs.push(FieldError::required(format!("{p}.name"), ""));
        } else if !is_dns_label(name) {
            errs.extend(crate::builtin::label_errors(&format!("{p}.name"), name));
        } else if taken.contains(&name) {
            errs.push(FieldError::new(FieldErrorKind::Duplicate, format!("{p}.name"), Some(format!("{name:?}")), ""));
        } else {
            taken.push(name);
        }
        if c.get("image").and_then(Value::as_str).is_none_or(str::is_empty) {
            errs.push(FieldError::required(format!("{p}.image"), ""));
        }
        let set = |v: &Value| {
            !(v.is_null() || v.as_object().is_some_and(|m| m.is_empty()) || v.as_array().is_some_and(|a| a.is_empty()))
        };
        for f in FORBIDDEN.iter().filter(|f| c.get(**f).is_some_and(set)) {
            errs.push(FieldError::forbidden(format!("{p}.{f}"), "cannot be set for an Ephemeral Container"));
        }
        if let Some(target) = c.get("targetContainerName").and_then(Value::as_str)
            && !regular.contains(&target)
        {
            errs.push(FieldError::new(
                FieldErrorKind::Invalid,
                format!("{p}.targetContainerName"),
                Some(format!("{target:?}")),
                "must be the name of a container in the pod",
            ));
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let mut pod = old.clone();
    pod["spec"]["ephemeralContainers"] = Value::Array(after.to_vec());
    Ok(pod)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(ephemeral: Value) -> Value {
        json!({"spec": {"containers": [{"name": "app", "image": "busybox"}], "ephemeralContainers": ephemeral}})
    }

    #[test]
    fn containers_are_added_never_changed_or_removed() {
        let debugger = json!({"name": "debugger", "image": "busybox", "targetContainerName": "app", "resources": {}});
        let old = pod(json!([]));
        let new = pod(json!([debugger.clone()]));
        let merged = update(&old, &new).unwrap();
        assert_eq!(merged["spec"]["ephemeralContainers"][0]["name"], "debugger");
        let mut changed = debugger.clone();
        changed["image"] = json!("other");
        let errs = update(&merged, &pod(json!([changed]))).unwrap_err();
        assert!(errs[0].detail.contains("may not be changed"));
        let errs = update(&merged, &pod(json!([]))).unwrap_err();
        assert!(errs[0].detail.contains("may not be removed"));
    }

    #[test]
    fn an_ephemeral_container_is_checked_as_kube_checks_it() {
        let bad =
            json!([{"name": "app", "image": "", "ports": [{"containerPort": 80}], "targetContainerName": "nope"}]);
        let fields: Vec<String> =
            update(&pod(json!([])), &pod(bad)).unwrap_err().into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            [
                "spec.ephemeralContainers[0].name",
                "spec.ephemeralContainers[0].image",
                "spec.ephemeralContainers[0].ports",
                "spec.ephemeralContainers[0].targetContainerName"
            ]
        );
    }
}
