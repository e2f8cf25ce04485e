//! kube's LimitRanger admission at the API server's edge, and the QoS class a new pod is given: the
//! namespace's LimitRanges read from the store, the decisions in [`crate::limit_ranges`] and
//! [`crate::pod_resources`].

use k8s_openapi::api::core::v1::{LimitRange, PersistentVolumeClaimSpec, PodSpec};
use serde_json::Value;
use uc_api::GroupResource;

use crate::app::App;
use crate::error::{ApiError, Result, Subject};
use crate::request::Target;

/// The LimitRanges of the target's namespace, in name order.
fn ranges(app: &App, t: &Target) -> Vec<LimitRange> {
    let gr = GroupResource::new("", "limitranges");
    let Ok((stored, _)) = app.store.list(&gr, t.namespace.as_deref(), None) else { return Vec::new() };
    stored.iter().filter_map(|(_, r)| serde_json::from_value(r.as_ref().clone()).ok()).collect()
}

fn is(t: &Target, resource: &str) -> bool {
    t.info.group.is_empty() && t.info.resource == resource && t.sub.is_none()
}

/// The plugin's mutation of a new pod: the defaults of the namespace's ranges. Whether it set any.
pub(crate) fn default_pod(app: &App, t: &Target, pod: &mut Value) -> bool {
    if !is(t, "pods") {
        return false;
    }
    let before = pod.pointer("/metadata/annotations").cloned();
    crate::limit_ranges::admission::default_pod(pod, &ranges(app, t));
    pod.pointer("/metadata/annotations") != before.as_ref()
}

/// The plugin's validation of a new pod, or of a claim created or resized, against the namespace's
/// ranges; a new pod passing it is given its QoS class (after every mutation, as kube's create does).
pub(crate) fn check(app: &App, t: &Target, name: &str, obj: &mut Value) -> Result<()> {
    let refused = |why: crate::limit_ranges::admission::Refusal| {
        ApiError::forbidden(&Subject { name: name.to_string(), ..t.subject() }, why.to_string())
    };
    if is(t, "pods") {
        let Some(spec) = obj.get("spec").and_then(|s| serde_json::from_value::<PodSpec>(s.clone()).ok()) else {
            return Ok(());
        };
        crate::limit_ranges::admission::check_pod(&spec, &ranges(app, t)).map_err(refused)?;
        if obj.get("status").is_some_and(Value::is_object) {
            obj["status"]["qosClass"] = Value::from(crate::pod_resources::qos_class(&spec));
        }
    } else if is(t, "persistentvolumeclaims") {
        let spec = obj.get("spec").and_then(|s| serde_json::from_value::<PersistentVolumeClaimSpec>(s.clone()).ok());
        if let Some(spec) = spec {
            crate::limit_ranges::admission::check_claim(&spec, &ranges(app, t)).map_err(refused)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
