//! ReplicationController (core/v1): the ReplicaSet's replica logic under the older kind, whose selector
//! is a plain map of labels (the engine reads it as `matchLabels`).

use k8s_openapi::api::core::v1::{ReplicationController, ReplicationControllerStatus};
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use super::replicaset::{Replicated, replicas};
use crate::objects::{decode, take_children, to_value};

/// The sync hook: desired pods and status of one ReplicationController.
pub fn sync(mut request: SyncRequest) -> Result<SyncResponse, HookError> {
    let pods = take_children(&mut request, "Pod.v1");
    let rc: ReplicationController = decode("parent", &request.parent)?;
    let parent = Replicated {
        metadata: &rc.metadata,
        replicas: rc.spec.as_ref().and_then(|s| s.replicas),
        template: &request.parent["spec"]["template"],
    };
    let (children, counts) = replicas(&parent, pods, "uc.njuics.cn/replicationcontroller")?;
    let status = ReplicationControllerStatus {
        replicas: counts.replicas,
        fully_labeled_replicas: Some(counts.replicas),
        ready_replicas: Some(counts.ready),
        available_replicas: Some(counts.ready),
        ..Default::default()
    };
    Ok(SyncResponse { status: Some(to_value("status", &status)?), children, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::objects::run_json;

    #[test]
    fn keeps_replicas_with_complete_status() {
        let req = json!({"parent": {"metadata": {"name": "rc", "namespace": "ns", "uid": "u"},
                                    "spec": {"replicas": 2, "selector": {"app": "a"},
                                             "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
                         "children": {"Pod.v1": {}}});
        let out = run_json(sync, req);
        assert_eq!(out["children"].as_array().unwrap().len(), 2);
        assert_eq!(out["children"][0]["metadata"]["labels"]["uc.njuics.cn/replicationcontroller"], json!("rc"));
        assert_eq!(
            out["status"],
            json!({"replicas": 0, "fullyLabeledReplicas": 0, "readyReplicas": 0, "availableReplicas": 0})
        );
    }

    #[test]
    fn a_parent_that_is_not_a_replication_controller_is_refused() {
        let request = SyncRequest { parent: json!({"spec": {"replicas": "two"}}), ..Default::default() };
        let err = sync(request).unwrap_err();
        assert!(matches!(err, HookError::InvalidRequest(ref m) if m.starts_with("parent: ")), "{err}");
    }
}
