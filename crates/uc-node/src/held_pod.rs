//! A pod as the node holds it between uses: its JSON, packed when that pays, and its uid (issue 58).
//!
//! A decoded k8s-openapi `Pod` is about 12 KB for 2.7 KB of JSON (every optional field of a `Volume`, a
//! `Container` and a `PodSpec` takes its room whether set or not): a node of 1,000 pods held 12 MB of
//! them, one per pod, though a pod's worker reads its pod only when the pod changes or its next status
//! is due, and the node's endpoint only when a client asks for logs or a shell. A held pod is decoded
//! for each of those uses and let go after it.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use uc_api::packed::Packed;

/// A pod's JSON, and its uid for the lookups that need nothing else.
#[derive(Debug)]
pub struct HeldPod {
    uid: Box<str>,
    json: Json,
}

#[derive(Debug)]
enum Json {
    Plain(Box<[u8]>),
    Packed(Packed),
}

impl HeldPod {
    /// Holds `pod` as its JSON.
    pub fn of(pod: &Pod) -> HeldPod {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default().into();
        // A Pod is plain data: writing it cannot fail.
        let bytes = serde_json::to_vec(pod).unwrap_or_default();
        let json = match Packed::of(&bytes) {
            Some(packed) => Json::Packed(packed),
            None => Json::Plain(bytes.into()),
        };
        HeldPod { uid, json }
    }

    /// The pod's uid.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// The pod, decoded. The JSON is what [`HeldPod::of`] wrote from a `Pod`, so it reads back; were it
    /// ever not to, the pod reads as one with its uid and nothing else, which no worker acts on.
    pub fn pod(&self) -> Arc<Pod> {
        let read = match &self.json {
            Json::Plain(json) => serde_json::from_slice(json),
            Json::Packed(packed) => serde_json::from_slice(&packed.unpack()),
        };
        Arc::new(read.unwrap_or_else(|e| {
            tracing::error!(uid = %self.uid, error = %e, "a held pod does not read back");
            let mut pod = Pod::default();
            pod.metadata.uid = Some(self.uid.to_string());
            pod
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_pod_reads_back_as_the_pod_it_was() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "alpine", "command": ["sleep", "infinity"]}],
                     "volumes": [{"name": "v", "emptyDir": {}}]},
            "status": {"phase": "Running", "podIP": "127.1.0.2",
                       "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}]}}))
        .unwrap();
        let held = HeldPod::of(&pod);
        assert_eq!(held.uid(), "u-1");
        assert_eq!(*held.pod(), pod, "the same pod, field for field");
        assert!(std::mem::size_of::<HeldPod>() < std::mem::size_of::<Pod>() / 10, "a fraction of a Pod's own size");
    }
}
