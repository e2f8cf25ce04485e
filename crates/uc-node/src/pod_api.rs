//! The node's reads and writes of pods in the API server: binding, status updates that change
//! something, and the final delete of a pod that stopped.

use std::time::Duration;

use std::sync::LazyLock;

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};

/// A pod's name.
pub(crate) fn name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

/// A pod's namespace.
pub(crate) fn namespace(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or_default()
}

/// A pod's uid.
pub(crate) fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

static NO_SPEC: LazyLock<PodSpec> = LazyLock::new(PodSpec::default);

/// A pod's spec (an empty one when it has none).
pub(crate) fn spec(pod: &Pod) -> &PodSpec {
    pod.spec.as_ref().unwrap_or(&NO_SPEC)
}

/// Whether the pod is being deleted.
pub(crate) fn is_deleting(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// The address the pod's status records, if any.
pub(crate) fn pod_ip(pod: &Pod) -> Option<&str> {
    pod.status.as_ref().and_then(|s| s.pod_ip.as_deref()).filter(|ip| !ip.is_empty())
}

/// Whether the pod runs in the machine's network namespace (`hostNetwork: true`).
pub(crate) fn host_network(pod: &Pod) -> bool {
    spec(pod).host_network.unwrap_or(false)
}

pub(crate) fn key_of(pod: &Pod) -> (String, String) {
    (namespace(pod).to_string(), name(pod).to_string())
}

/// An API error in the server's words (its message and code), not kube's debug rendering of the Status.
pub(crate) fn said(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string(),
    }
}

/// Binds a pod to the node as kube-scheduler does: a Binding posted to the pod's `binding`, naming the
/// pod it saw by uid (a pod deleted and made again under its name is not bound by it; one assigned or
/// being deleted meanwhile the API server refuses). Whether it did.
pub(crate) async fn bind(client: &kube::Client, pod: &Pod, node: &str) -> bool {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace(pod));
    let binding = binding(pod, node);
    match api.create_subresource::<_, kube::core::Status>("binding", name(pod), &PostParams::default(), &binding).await
    {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(pod = %name(pod), error = %said(&e), "binding failed; the next event retries");
            false
        }
    }
}

/// The Binding that assigns `pod` to `node`.
fn binding(pod: &Pod, node: &str) -> Binding {
    Binding {
        metadata: ObjectMeta {
            name: pod.metadata.name.clone(),
            namespace: pod.metadata.namespace.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectMeta::default()
        },
        target: ObjectReference { kind: Some("Node".into()), name: Some(node.into()), ..ObjectReference::default() },
    }
}

/// Whether the pod already has this status, compared as the API server writes them (its times to
/// the second).
pub(crate) fn has_status(pod: &Pod, status: &PodStatus) -> bool {
    pod.status.as_ref().is_some_and(|s| serde_json::to_value(s).ok() == serde_json::to_value(status).ok())
}

/// Writes a pod's status, naming the pod by namespace and name: a caller need not hold the pod while the
/// write is under way (a newer version may arrive meanwhile, and a node of 1,000 pods would hold two).
pub(crate) async fn patch_status(
    client: &kube::Client,
    (namespace, name): (&str, &str),
    status: &PodStatus,
) -> Result<(), kube::Error> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let patch = Pod { status: Some(status.clone()), ..Pod::default() };
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
}

/// How long a pod stays Terminating at least. A kubelet takes about this long to tear a pod down; a
/// pod that vanished at once would be recreated by its StatefulSet under the same name before a
/// `kubectl delete` had started watching for its deletion, and kubectl would wait for the new one.
const MIN_TERMINATION: Duration = Duration::from_millis(500);

pub(crate) async fn finish_deletion(client: &kube::Client, pod: &Pod) {
    tokio::time::sleep(MIN_TERMINATION).await;
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace(pod));
    let uid = Some(uid(pod).to_string());
    let dp = kube::api::DeleteParams { grace_period_seconds: Some(0), ..Default::default() }
        .preconditions(kube::api::Preconditions { uid, resource_version: None });
    let _ = api.delete(name(pod), &dp).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_names_the_pod_it_saw_and_its_node() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                resource_version: Some("7".into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        let wire = serde_json::to_value(binding(&pod, "n1")).unwrap();
        assert_eq!(
            wire,
            serde_json::json!({"apiVersion": "v1", "kind": "Binding",
                               "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
                               "target": {"kind": "Node", "name": "n1"}})
        );
    }
}
