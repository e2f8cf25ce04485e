//! The operators' pods hardened to Pod Security's restricted level: no privilege escalation, every
//! capability dropped, a non-root user and the runtime's default seccomp profile — where the user's own
//! pod policy does not say otherwise.

use serde_json::{Value, json};

/// Hardens `pod` (a Pod object) in place: each container (init containers too) gets
/// `allowPrivilegeEscalation: false` and `capabilities.drop: ["ALL"]` unless it sets them, and the pod
/// `runAsNonRoot: true` with a `RuntimeDefault` seccomp profile unless its security context names a
/// user or a profile of its own.
pub fn harden(pod: &mut Value) {
    let spec = &mut pod["spec"];
    let sc = &mut spec["securityContext"];
    if sc.is_null() {
        *sc = json!({});
    }
    if sc.get("runAsNonRoot").is_none() && sc.get("runAsUser").is_none() {
        sc["runAsNonRoot"] = json!(true);
    }
    if sc.get("seccompProfile").is_none() {
        sc["seccompProfile"] = json!({"type": "RuntimeDefault"});
    }
    for list in ["initContainers", "containers"] {
        for c in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            let csc = &mut c["securityContext"];
            if csc.is_null() {
                *csc = json!({});
            }
            if csc.get("allowPrivilegeEscalation").is_none() {
                csc["allowPrivilegeEscalation"] = json!(false);
            }
            if csc.get("capabilities").is_none() {
                csc["capabilities"] = json!({"drop": ["ALL"]});
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_pod_is_hardened_and_the_users_choices_stay() {
        let mut pod = json!({"spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "c"},
            {"name": "d", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]}});
        harden(&mut pod);
        assert_eq!(
            pod["spec"]["securityContext"],
            json!({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}})
        );
        assert_eq!(
            pod["spec"]["initContainers"][0]["securityContext"],
            json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}})
        );
        assert_eq!(pod["spec"]["containers"][1]["securityContext"]["capabilities"], json!({"add": ["NET_ADMIN"]}));
        let mut root = json!({"spec": {"securityContext": {"runAsUser": 0}, "containers": []}});
        harden(&mut root);
        assert!(root["spec"]["securityContext"].get("runAsNonRoot").is_none(), "the user's own choice of user stays");
    }
}
