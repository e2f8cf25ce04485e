//! ReplicationController (core/v1): the ReplicaSet's replica logic under the older kind, whose selector
//! is a plain map of labels (the engine reads it as `matchLabels`).

use serde_json::Value;

/// The sync hook: desired pods and status of one ReplicationController.
pub fn sync(request: Value) -> Value {
    super::replicaset::sync_labeled(request, "uc.njuics.cn/replicationcontroller")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_replicas_with_complete_status() {
        let req = json!({"parent": {"metadata": {"name": "rc", "namespace": "ns", "uid": "u"},
                                    "spec": {"replicas": 2, "selector": {"app": "a"},
                                             "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
                         "children": {"Pod.v1": {}}});
        let out = sync(req);
        assert_eq!(out["children"].as_array().unwrap().len(), 2);
        assert_eq!(out["children"][0]["metadata"]["labels"]["uc.njuics.cn/replicationcontroller"], json!("rc"));
        assert_eq!(
            out["status"],
            json!({"replicas": 0, "fullyLabeledReplicas": 0, "readyReplicas": 0, "availableReplicas": 0})
        );
    }
}
