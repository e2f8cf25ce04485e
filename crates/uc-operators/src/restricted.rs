//! The operators' pods hardened to Pod Security's restricted level: no privilege escalation, every
//! capability dropped, a non-root user and the runtime's default seccomp profile — where the user's own
//! pod policy does not say otherwise.

use k8s_openapi::api::core::v1::{Capabilities, Pod, SeccompProfile};

/// Hardens `pod` in place: each container (init containers too) gets `allowPrivilegeEscalation: false`
/// and `capabilities.drop: ["ALL"]` unless it sets them, and the pod `runAsNonRoot: true` with a
/// `RuntimeDefault` seccomp profile unless its security context names a user or a profile of its own.
pub fn harden(pod: &mut Pod) {
    let spec = pod.spec.get_or_insert_with(Default::default);
    let sc = spec.security_context.get_or_insert_with(Default::default);
    if sc.run_as_non_root.is_none() && sc.run_as_user.is_none() {
        sc.run_as_non_root = Some(true);
    }
    sc.seccomp_profile.get_or_insert_with(|| SeccompProfile { type_: "RuntimeDefault".into(), ..Default::default() });
    for c in spec.init_containers.iter_mut().flatten().chain(spec.containers.iter_mut()) {
        let csc = c.security_context.get_or_insert_with(Default::default);
        csc.allow_privilege_escalation.get_or_insert(false);
        csc.capabilities.get_or_insert_with(|| Capabilities { drop: Some(vec!["ALL".into()]), ..Default::default() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn hardened(pod: Value) -> Value {
        let mut pod: Pod = serde_json::from_value(pod).unwrap();
        harden(&mut pod);
        serde_json::to_value(pod).unwrap()
    }

    #[test]
    fn a_plain_pod_is_hardened_and_the_users_choices_stay() {
        let pod = hardened(json!({"spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "c"},
            {"name": "d", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]}}));
        assert_eq!(
            pod["spec"]["securityContext"],
            json!({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}})
        );
        assert_eq!(
            pod["spec"]["initContainers"][0]["securityContext"],
            json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}})
        );
        assert_eq!(pod["spec"]["containers"][1]["securityContext"]["capabilities"], json!({"add": ["NET_ADMIN"]}));
        let root = hardened(json!({"spec": {"securityContext": {"runAsUser": 0}, "containers": []}}));
        assert!(root["spec"]["securityContext"].get("runAsNonRoot").is_none(), "the user's own choice of user stays");
    }
}
