//! PersistentVolumeClaims bound as a storage class with `volumeBindingMode: Immediate` binds them:
//! the embedded node provisions every claim as a directory of its own (`<data>/volumes/<namespace>/
//! <claim>`, made on first use, kept until the claim is deleted), so a claim is `Bound` from the start,
//! with the access modes it asked for and the storage it requested as its capacity — what `kubectl get
//! pvc` and `kubectl describe pvc` show on a cluster with a default provisioner.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimStatus};
use serde::Deserialize;
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use crate::objects::to_value;

/// The claim's status: Bound, with its access modes and requested storage.
pub fn sync(request: SyncRequest) -> Result<SyncResponse, HookError> {
    let claim = PersistentVolumeClaim::deserialize(&*request.parent)
        .map_err(|e| HookError::InvalidRequest(format!("parent: {e}")))?;
    let spec = claim.spec.unwrap_or_default();
    let storage = spec.resources.as_ref().and_then(|r| r.requests.as_ref()).and_then(|r| r.get("storage")).cloned();
    let status = PersistentVolumeClaimStatus {
        phase: Some("Bound".into()),
        access_modes: Some(spec.access_modes.unwrap_or_default()),
        capacity: storage.map(|s| BTreeMap::from([("storage".to_string(), s)])),
        ..PersistentVolumeClaimStatus::default()
    };
    Ok(SyncResponse { status: Some(to_value("status", &status)?), ..Default::default() })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_claim_is_bound_with_what_it_asked_for() {
        let request = SyncRequest {
            parent: json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
                           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}).into(),
            ..Default::default()
        };
        let status = sync(request).unwrap().status.unwrap();
        assert_eq!(status, json!({"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}));
        let bad = SyncRequest { parent: json!({"spec": {"accessModes": "all"}}).into(), ..Default::default() };
        assert!(sync(bad).unwrap_err().to_string().contains("parent"));
    }
}
