//! What the operators read from hook requests and pods, and how they name and label what they make.
//!
//! Parents are decoded into k8s-openapi's types (one object per sync). Observed pods are read through
//! [`PodView`], a typed view borrowing from the request: a ReplicaSet's request holds every one of its
//! pods (shared with the engine's cache), and decoding each into an owned `Pod` on every sync would copy
//! them all; a pod a hook keeps is named in its answer, not copied ([`kept_pod`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::{Value, json};
use uc_api::controller::{
    ChildResource, Hook, Hooks, ParentResource, UniversalController, UniversalControllerSpec, UpdateMethod,
};
use uc_api::hook::{ObjectMap, SyncRequest};
pub use uc_api::meta::json_of;
use uc_engine::hooks::HookError;

/// One of uc's own UniversalControllers, labelled `label` (`uc.njuics.cn/operator: etcd`).
pub fn universal_controller(name: &str, label: (&str, &str), spec: UniversalControllerSpec) -> UniversalController {
    let mut uc = UniversalController::new(name, spec);
    uc.metadata.labels = Some([(label.0.to_string(), label.1.to_string())].into());
    uc
}

/// A controller spec: the parent type, the child types (`apiVersion`, resource, update method), one
/// native sync hook; a generated selector per parent.
pub fn native_spec(
    parent: (&str, &str),
    children: &[(&str, &str, UpdateMethod)],
    hook: &str,
) -> UniversalControllerSpec {
    UniversalControllerSpec {
        parent_resource: ParentResource::new(parent.0, parent.1),
        child_resources: children.iter().map(|(a, r, m)| ChildResource::new(a, r, *m)).collect(),
        generate_selector: Some(true),
        hooks: Hooks { sync: Some(Hook::native(hook)), ..Default::default() },
        ..Default::default()
    }
}

/// Decodes part of a request into a type (by reference: borrowed views copy nothing); a fault names
/// `what` it was decoding.
pub(crate) fn decode<'a, T: Deserialize<'a>>(what: &str, value: &'a Value) -> Result<T, HookError> {
    T::deserialize(value).map_err(|e| HookError::InvalidRequest(format!("{what}: {e}")))
}

/// Children of one type from a sync request, moved out of it.
pub(crate) fn take_children(request: &mut SyncRequest, type_key: &str) -> ObjectMap {
    request.children.remove(type_key).unwrap_or_default()
}

/// What a workload hook reads of an observed pod.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PodView<'a> {
    #[serde(borrow)]
    pub metadata: Option<MetaView<'a>>,
    #[serde(borrow)]
    pub spec: Option<PodSpecView<'a>>,
    #[serde(borrow)]
    pub status: Option<PodStatusView<'a>>,
}

/// A pod's metadata, as far as the hooks read it.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct MetaView<'a> {
    pub name: Option<&'a str>,
    pub creation_timestamp: Option<&'a str>,
    pub deletion_timestamp: Option<&'a str>,
    #[serde(borrow)]
    pub labels: Option<BTreeMap<&'a str, &'a str>>,
}

/// A pod's spec, as far as the hooks read it.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PodSpecView<'a> {
    pub node_name: Option<&'a str>,
}

/// A pod's status, as far as the hooks read it.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PodStatusView<'a> {
    pub phase: Option<&'a str>,
    #[serde(borrow)]
    pub conditions: Option<Vec<ConditionView<'a>>>,
    #[serde(borrow)]
    pub container_statuses: Option<Vec<ContainerStatusView<'a>>>,
}

/// A status condition's type and status.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ConditionView<'a> {
    #[serde(rename = "type")]
    pub type_: &'a str,
    pub status: &'a str,
}

/// When a container finished, if it did.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ContainerStatusView<'a> {
    #[serde(borrow)]
    pub state: Option<ContainerStateView<'a>>,
}

/// The terminated state of a container.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ContainerStateView<'a> {
    #[serde(borrow)]
    pub terminated: Option<TerminatedView<'a>>,
}

/// When a terminated container finished.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct TerminatedView<'a> {
    pub finished_at: Option<&'a str>,
}

impl<'a> PodView<'a> {
    /// Reads a pod of a request; a malformed one is an error naming it.
    pub fn of(name: &str, pod: &'a Value) -> Result<Self, HookError> {
        decode(&format!("pod {name}"), pod)
    }

    fn meta(&self) -> Option<&MetaView<'a>> {
        self.metadata.as_ref()
    }

    /// The pod's name.
    pub fn name(&self) -> &'a str {
        self.meta().and_then(|m| m.name).unwrap_or_default()
    }

    /// When the pod was created (RFC 3339, which sorts as text).
    pub fn created(&self) -> &'a str {
        self.meta().and_then(|m| m.creation_timestamp).unwrap_or_default()
    }

    /// Whether the pod is being deleted.
    pub fn deleting(&self) -> bool {
        self.meta().is_some_and(|m| m.deletion_timestamp.is_some())
    }

    /// One of the pod's labels.
    pub fn label(&self, key: &str) -> Option<&'a str> {
        self.meta()?.labels.as_ref()?.get(key).copied()
    }

    /// The node the pod is bound to ("" when none).
    pub fn node(&self) -> &'a str {
        self.spec.as_ref().and_then(|s| s.node_name).unwrap_or_default()
    }

    /// The pod's phase (`Pending` when it has none yet).
    pub fn phase(&self) -> &'a str {
        self.status.as_ref().and_then(|s| s.phase).unwrap_or("Pending")
    }

    /// A pod that counts as running (not finished, not being deleted).
    pub fn active(&self) -> bool {
        !self.deleting() && !matches!(self.phase(), "Succeeded" | "Failed")
    }

    /// A pod whose Ready condition is True.
    pub fn ready(&self) -> bool {
        let conditions = self.status.as_ref().and_then(|s| s.conditions.as_ref());
        conditions.is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    }

    /// When the last of its containers finished, if any did.
    pub fn finished_at(&self) -> Option<&'a str> {
        let statuses = self.status.as_ref()?.container_statuses.as_ref()?;
        statuses.iter().filter_map(|c| c.state.as_ref()?.terminated.as_ref()?.finished_at).max()
    }
}

/// The pods of a sync request, typed, by name (for hooks over a few pods: an operator's servers);
/// one that does not read as a Pod is left out (the API server admitted it, so this is logged, not
/// expected).
pub(crate) fn typed_pods(observed: &ObjectMap) -> BTreeMap<String, Pod> {
    let read = |(name, pod): (&String, &std::sync::Arc<Value>)| {
        let typed = Pod::deserialize(&**pod);
        typed
            .inspect_err(|e| tracing::warn!(pod = %name, error = %e, "not read as a Pod"))
            .ok()
            .map(|p| (name.clone(), p))
    };
    observed.iter().filter_map(read).collect()
}

/// A typed pod whose Ready condition is True.
pub(crate) fn ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.into_iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True")
}

/// An observed pod, as a desired child: what uc wrote (its last-applied configuration), else the pod
/// without its status.
pub(crate) fn written_pod(pod: &Pod) -> Pod {
    let written = pod.metadata.annotations.as_ref().and_then(|a| a.get(uc_engine::apply::LAST_APPLIED));
    written.and_then(|text| serde_json::from_str(text).ok()).unwrap_or_else(|| Pod { status: None, ..pod.clone() })
}

/// Reads every pod of a map; the first malformed one is an error.
pub(crate) fn pod_views(pods: &ObjectMap) -> Result<Vec<(&String, PodView<'_>)>, HookError> {
    pods.iter().map(|(k, p)| PodView::of(k, p).map(|v| (k, v))).collect()
}

/// A new pod from a pod template, as written (its hash names revisions: a typed round trip would
/// drop fields it does not know and change the hash), named `name` in `namespace`.
pub(crate) fn pod_from_template(template: &Value, name: &str, namespace: Option<&str>) -> Value {
    let mut meta = template.get("metadata").filter(|m| m.is_object()).cloned().unwrap_or_else(|| json!({}));
    meta["name"] = json!(name);
    meta["namespace"] = json!(namespace.unwrap_or("default"));
    if let Some(m) = meta.as_object_mut() {
        m.remove("creationTimestamp");
    }
    let spec = template.get("spec").filter(|s| s.is_object()).cloned().unwrap_or_else(|| json!({}));
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
}

/// A pod a hook keeps, as its answer names it. Pods are children updated `OnDelete`: of a desired child
/// that exists the engine reads only its name and namespace, so the answer names the pod instead of
/// copying the observed one (a ReplicaSet of 1,000 pods would otherwise answer with a copy of each).
pub(crate) fn kept_pod(name: &str, namespace: Option<&str>) -> Value {
    let metadata = ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(namespace.unwrap_or("default").to_string()),
        ..Default::default()
    };
    json_of(&Pod { metadata, ..Default::default() })
}

/// Serializes a typed object or status into the answer.
pub(crate) fn to_value<T: serde::Serialize>(what: &str, value: &T) -> Result<Value, HookError> {
    serde_json::to_value(value).map_err(|e| HookError::InvalidResponse(format!("{what}: {e}")))
}

/// FNV-1a: a stable hash (std's hasher may change between releases; names must not).
pub(crate) fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A five-letter name suffix derived from `seed` (kube's alphabet: no vowels, no look-alikes), so a
/// name asked for twice is the same name.
pub(crate) fn name_suffix(seed: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h = hash_str(seed);
    (0..5)
        .map(|_| {
            let c = ALPHABET[(h % ALPHABET.len() as u64) as usize] as char;
            h /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// Sets `metadata.labels[key]` of a pod or a pod template a hook writes (`uc_api::meta::set_label`).
pub(crate) fn set_label(obj: &mut Value, key: &str, value: &str) -> Result<(), HookError> {
    uc_api::meta::set_label(obj, key, value).map_err(|e| HookError::InvalidResponse(format!("a pod template's {e}")))
}

/// Test support: a request written as JSON (`parent`, `children`, `related`; the rest defaulted).
#[cfg(test)]
pub(crate) fn request_of(request: Value) -> SyncRequest {
    let group = |v: &Value| -> BTreeMap<String, ObjectMap> {
        let objects = |m: &Value| {
            m.as_object().map(|m| m.clone().into_iter().map(|(k, v)| (k, v.into())).collect()).unwrap_or_default()
        };
        v.as_object().map(|m| m.iter().map(|(k, m)| (k.clone(), objects(m))).collect()).unwrap_or_default()
    };
    SyncRequest {
        parent: request["parent"].clone().into(),
        children: group(&request["children"]),
        related: group(&request["related"]),
        ..Default::default()
    }
}

/// Test support: a hook run on a request written as JSON, its answer as JSON.
#[cfg(test)]
pub(crate) fn run_json(
    hook: impl Fn(SyncRequest) -> Result<uc_api::hook::SyncResponse, HookError>,
    request: Value,
) -> Value {
    hook(request_of(request)).expect("the hook answers").into_value()
}

/// Test support: an asynchronous hook that always answers, run on a request written as JSON.
#[cfg(test)]
pub(crate) async fn run_json_async<F: std::future::Future<Output = uc_api::hook::SyncResponse>>(
    hook: impl FnOnce(SyncRequest) -> F,
    request: Value,
) -> Value {
    hook(request_of(request)).await.into_value()
}

/// An observed child, as a desired one: what uc wrote (its last-applied configuration), else the
/// object without its status.
pub(crate) fn as_written(obj: &Value) -> Value {
    uc_engine::apply::last_applied(obj).unwrap_or_else(|| {
        let mut o = obj.clone();
        if let Some(m) = o.as_object_mut() {
            m.remove("status");
        }
        o
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_view_reads_what_the_hooks_decide_on() {
        let pod = json!({"metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "b"},
                                      "managedFields": [{"manager": "x"}]},
                         "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]},
                         "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                                    "containerStatuses": [{"state": {"terminated": {"finishedAt": "2026-01-01T00:00:01Z"}}},
                                                          {"state": {"running": {}}}]}});
        let v = PodView::of("p", &pod).unwrap();
        assert_eq!((v.name(), v.created(), v.node(), v.phase()), ("p", "2026-01-01T00:00:00Z", "n", "Running"));
        assert!(v.active() && v.ready() && !v.deleting());
        assert_eq!((v.label("a"), v.label("x")), (Some("b"), None));
        assert_eq!(v.finished_at(), Some("2026-01-01T00:00:01Z"));
        let empty = json!({"metadata": null, "status": {"conditions": null}});
        let v = PodView::of("e", &empty).unwrap();
        assert_eq!((v.phase(), v.ready(), v.active(), v.finished_at()), ("Pending", false, true, None));
        let deleting =
            json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Running"}});
        assert!(!PodView::of("d", &deleting).unwrap().active());
        let bad = PodView::of("b", &json!({"status": {"phase": 3}})).unwrap_err();
        assert!(matches!(bad, HookError::InvalidRequest(ref m) if m.starts_with("pod b: ")), "{bad}");
    }

    /// The engine keeps of these hooks' pods only its `Projection::PodView`: every read gives the same
    /// answer on that as on the whole pod.
    #[test]
    fn a_pod_view_reads_the_same_of_the_engines_projection_as_of_the_whole_pod() {
        let pods = [
            json!({"metadata": {"name": "p", "creationTimestamp": "t0", "labels": {"a": "b"}},
                   "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]},
                   "status": {"phase": "Running", "hostIP": "10.0.0.1", "startTime": "t0",
                              "conditions": [{"type": "Initialized", "status": "True"},
                                             {"type": "Ready", "status": "True", "lastTransitionTime": "t1"}],
                              "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0,
                                                     "state": {"terminated": {"exitCode": 1, "finishedAt": "t2"}},
                                                     "lastState": {"running": {"startedAt": "t1"}}},
                                                    {"name": "d", "state": {"running": {"startedAt": "t1"}}}]}}),
            json!({"metadata": {"name": "q", "deletionTimestamp": "t3"},
                   "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False", "reason": "r"}]}}),
        ];
        let reads = |v: &PodView<'_>| {
            let read = (v.name(), v.created(), v.node(), v.phase(), v.active(), v.ready(), v.deleting());
            format!("{read:?} {:?} {:?}", v.label("a"), v.finished_at())
        };
        for pod in pods {
            let text = serde_json::to_string(&pod).unwrap();
            let kept: uc_engine::raw::PodViewObject = serde_json::from_str(&text).unwrap();
            let kept = uc_engine::raw::Watched::into_tree(kept);
            assert_ne!(kept, pod, "the projection keeps less");
            let (whole, cut) = (PodView::of("p", &pod).unwrap(), PodView::of("p", &kept).unwrap());
            assert_eq!(reads(&whole), reads(&cut), "{kept}");
        }
    }

    #[test]
    fn pods_from_templates_keep_what_was_written() {
        let template = json!({"metadata": {"labels": {"app": "a"}, "creationTimestamp": null, "x-unknown": 1},
                              "spec": {"containers": [{"name": "c", "image": "i", "futureField": true}]}});
        let pod = pod_from_template(&template, "p-0", Some("ns"));
        assert_eq!(
            pod,
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p-0", "namespace": "ns", "labels": {"app": "a"}, "x-unknown": 1},
                   "spec": {"containers": [{"name": "c", "image": "i", "futureField": true}]}})
        );
        assert_eq!(
            pod_from_template(&Value::Null, "q", None)["metadata"],
            json!({"name": "q", "namespace": "default"})
        );
    }
}
