//! ReplicationController (core/v1): the ReplicaSet's replica logic under the older kind, whose selector
//! is a plain map of labels (the engine reads it as `matchLabels`).

use k8s_openapi::api::core::v1::{ReplicationController, ReplicationControllerStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use super::replicaset::{Counts, sync_replicas};

/// The sync hook: desired pods and status of one ReplicationController.
pub fn sync(request: SyncRequest) -> Result<SyncResponse, HookError> {
    let status = |c: Counts| ReplicationControllerStatus {
        replicas: c.replicas,
        fully_labeled_replicas: Some(c.replicas),
        ready_replicas: Some(c.ready),
        available_replicas: Some(c.ready),
        ..Default::default()
    };
    let spec: fn(&ReplicationController) -> (&ObjectMeta, Option<i32>) =
        |rc| (&rc.metadata, rc.spec.as_ref().and_then(|s| s.replicas));
    sync_replicas(request, "uc.njuics.cn/replicationcontroller", spec, status)
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
        let request = SyncRequest { parent: json!({"spec": {"replicas": "two"}}).into(), ..Default::default() };
        let err = sync(request).unwrap_err();
        assert!(matches!(err, HookError::InvalidRequest(ref m) if m.starts_with("parent: ")), "{err}");
    }
}
