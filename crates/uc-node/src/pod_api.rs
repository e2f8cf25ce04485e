//! The node's reads and writes of pods in the API server: binding, status updates that change
//! something, and the final delete of a pod that stopped.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

pub(crate) fn meta<'a>(pod: &'a Value, field: &str) -> &'a str {
    pod.pointer(&format!("/metadata/{field}")).and_then(Value::as_str).unwrap_or_default()
}

/// Whether the pod runs in the machine's network namespace (`hostNetwork: true`).
pub(crate) fn host_network(pod: &Value) -> bool {
    pod.pointer("/spec/hostNetwork").and_then(Value::as_bool).unwrap_or(false)
}

pub(crate) fn key_of(pod: &Value) -> (String, String) {
    (meta(pod, "namespace").to_string(), meta(pod, "name").to_string())
}

/// An API error in the server's words (its message and code), not kube's debug rendering of the Status.
pub(crate) fn said(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string(),
    }
}

/// Binds a pod to the node; whether it did.
pub(crate) async fn bind(client: &kube::Client, pod: &Value, node: &str) -> bool {
    let api: Api<Pod> = Api::namespaced(client.clone(), meta(pod, "namespace"));
    let patch =
        json!({"metadata": {"resourceVersion": pod.pointer("/metadata/resourceVersion")}, "spec": {"nodeName": node}});
    match api.patch(meta(pod, "name"), &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(pod = %meta(pod, "name"), error = %said(&e), "binding failed; the next event retries");
            false
        }
    }
}

/// Whether the pod (as the typed watch delivers it) already carries `status`. The comparison goes
/// through the typed PodStatus, which drops what it cannot hold (`lastProbeTime: null`): comparing the
/// raw value would never match, and every write would cause the next.
pub(crate) fn same_status(pod: &Value, status: &Value) -> bool {
    let typed = serde_json::from_value::<k8s_openapi::api::core::v1::PodStatus>(status.clone())
        .ok()
        .and_then(|s| serde_json::to_value(s).ok());
    pod.get("status") == Some(typed.as_ref().unwrap_or(status))
}

/// Whether the pod already has this typed status.
pub(crate) fn has_status(pod: &Value, status: &k8s_openapi::api::core::v1::PodStatus) -> bool {
    serde_json::to_value(status).is_ok_and(|s| pod.get("status") == Some(&s))
}

pub(crate) async fn patch_status(
    client: &kube::Client,
    pod: &Value,
    status: impl serde::Serialize,
) -> Result<(), kube::Error> {
    let api: Api<Pod> = Api::namespaced(client.clone(), meta(pod, "namespace"));
    api.patch_status(meta(pod, "name"), &PatchParams::default(), &Patch::Merge(&json!({"status": status})))
        .await
        .map(|_| ())
}

/// How long a pod stays Terminating at least. A kubelet takes about this long to tear a pod down; a
/// pod that vanished at once would be recreated by its StatefulSet under the same name before a
/// `kubectl delete` had started watching for its deletion, and kubectl would wait for the new one.
const MIN_TERMINATION: Duration = Duration::from_millis(500);

pub(crate) async fn finish_deletion(client: &kube::Client, pod: &Value) {
    tokio::time::sleep(MIN_TERMINATION).await;
    let api: Api<Pod> = Api::namespaced(client.clone(), meta(pod, "namespace"));
    let uid = Some(meta(pod, "uid").to_string());
    let dp = kube::api::DeleteParams { grace_period_seconds: Some(0), ..Default::default() }
        .preconditions(kube::api::Preconditions { uid, resource_version: None });
    let _ = api.delete(meta(pod, "name"), &dp).await;
}
