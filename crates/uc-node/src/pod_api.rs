//! The node's reads and writes of pods in the API server: binding, status updates that change
//! something, and the final delete of a pod that stopped.

use std::time::Duration;

use std::sync::LazyLock;

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

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

/// Binds a pod to the node; whether it did.
pub(crate) async fn bind(client: &kube::Client, pod: &Pod, node: &str) -> bool {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace(pod));
    let patch = json!({"metadata": {"resourceVersion": pod.metadata.resource_version}, "spec": {"nodeName": node}});
    match api.patch(name(pod), &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(pod = %name(pod), error = %said(&e), "binding failed; the next event retries");
            false
        }
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
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&json!({"status": status}))).await.map(|_| ())
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
