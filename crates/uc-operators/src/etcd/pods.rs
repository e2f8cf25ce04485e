//! Reading member pods: readiness, failure, the image asked for and the one running, the cluster's
//! version, and an observed pod turned back into the desired one.

use serde_json::Value;
use uc_api::meta::str_at;

use super::spec::Spec;

/// A member pod that is Ready and not being deleted.
pub fn pod_ready(pod: &Value) -> bool {
    crate::objects::is_ready(pod) && pod.pointer("/metadata/deletionTimestamp").is_none()
}

/// A member pod whose etcd exited (members are never restarted).
pub fn pod_failed(pod: &Value) -> bool {
    matches!(str_at(pod, "/status/phase"), "Failed" | "Succeeded")
}

pub use uc_api::conditions::condition;

/// The image a member's pod asks for.
pub fn pod_image(pod: &Value) -> String {
    str_at(pod, "/spec/containers/0/image").to_string()
}

/// The image a member's container runs, as the node reports it (while Ready).
pub fn running_image(pod: &Value) -> Option<String> {
    let statuses = pod.pointer("/status/containerStatuses")?.as_array()?;
    let c = statuses.iter().find(|c| c.get("name").and_then(Value::as_str) == Some("etcd"))?;
    c.get("ready").and_then(Value::as_bool).filter(|r| *r)?;
    c.get("image").and_then(Value::as_str).map(String::from)
}

/// The lowest version the members run (the cluster's version during an upgrade).
pub fn current_version(spec: &Spec, pods: &[Value]) -> String {
    let version = |p: &Value| -> Option<Vec<u32>> {
        let image = running_image(p).unwrap_or_else(|| pod_image(p));
        let tag = image.rsplit_once(':')?.1.trim_start_matches('v').to_string();
        tag.split('.').map(|x| x.parse().ok()).collect()
    };
    pods.iter()
        .filter_map(version)
        .min()
        .map(|v| v.iter().map(u32::to_string).collect::<Vec<_>>().join("."))
        .unwrap_or_else(|| spec.version.clone())
}

/// An observed pod, as a desired child: what uc wrote (status and server fields go).
pub fn strip(pod: &Value) -> Value {
    crate::objects::as_written(pod)
}
