//! Reading member pods: readiness, failure, the image asked for and the one running, the cluster's
//! version, and an observed pod turned back into the desired one.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use uc_api::conditions::Condition;

use super::spec::Spec;

/// The cluster's pods by name, typed (a cluster has seven members at most: decoding them is cheap).
pub type Pods = BTreeMap<String, Pod>;

/// The observed pods of a sync request, typed.
pub(crate) use crate::objects::typed_pods as typed;

/// A member pod that is Ready and not being deleted.
pub fn pod_ready(pod: &Pod) -> bool {
    crate::objects::ready(pod) && pod.metadata.deletion_timestamp.is_none()
}

/// A member pod whose etcd exited (members are never restarted).
pub fn pod_failed(pod: &Pod) -> bool {
    matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Failed" | "Succeeded"))
}

/// A condition of an EtcdCluster's status (no transition time: the phase says when).
pub fn condition(type_: &str, ok: bool, reason: &str, message: &str) -> Condition {
    Condition::new(type_, ok, reason, message)
}

/// The etcd container of a member's pod (its first).
pub fn etcd_container(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::Container> {
    pod.spec.as_ref()?.containers.first()
}

/// The image a member's pod asks for.
pub fn pod_image(pod: &Pod) -> String {
    etcd_container(pod).and_then(|c| c.image.clone()).unwrap_or_default()
}

/// The image a member's container runs, as the node reports it (while Ready).
pub fn running_image(pod: &Pod) -> Option<String> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    let c = statuses.iter().find(|c| c.name == "etcd")?;
    c.ready.then(|| c.image.clone())
}

/// The lowest version the members run (the cluster's version during an upgrade).
pub fn current_version<'a>(spec: &Spec, pods: impl IntoIterator<Item = &'a Pod>) -> String {
    let version = |p: &Pod| -> Option<Vec<u32>> {
        let image = running_image(p).unwrap_or_else(|| pod_image(p));
        let tag = image.rsplit_once(':')?.1.trim_start_matches('v').to_string();
        tag.split('.').map(|x| x.parse().ok()).collect()
    };
    pods.into_iter()
        .filter_map(version)
        .min()
        .map(|v| v.iter().map(u32::to_string).collect::<Vec<_>>().join("."))
        .unwrap_or_else(|| spec.version.clone())
}

/// An observed pod, as a desired child.
pub(crate) use crate::objects::written_pod as strip;

/// The member pods' names.
pub fn name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}
