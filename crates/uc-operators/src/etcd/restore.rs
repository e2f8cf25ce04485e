//! `EtcdRestore`: rebuilds an EtcdCluster from a snapshot, then hands it back to the EtcdCluster
//! controller.
//!
//! The restore never deletes the user's EtcdCluster object. It marks the cluster with the
//! `etcd.database.coreos.com/restore` annotation (creating the cluster when it does not exist, at the
//! size the backup recorded); the EtcdCluster controller, seeing a restore it has not done, removes every
//! member, then starts all its members at once, each with an init container running `etcdctl snapshot
//! restore` of the same snapshot into its data directory (etcd's multi-member restore, every member
//! named in `--initial-cluster`). The restore is complete when the cluster says it was restored from
//! this restore and all its members are Ready.

use std::path::PathBuf;

use kube::CustomResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use serde::Deserialize;
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_api::meta::str_at;

use super::resources::{GROUP, api};
use super::types::{EtcdRestore, StorageType};

/// Name of the native hook.
pub const HOOK: &str = "etcd-restore";
/// The annotation on an EtcdCluster that asks its controller to restore it.
pub const ANNOTATION: &str = "etcd.database.coreos.com/restore";

/// The EtcdRestore CRD (coreos field names, plus an optional size for a cluster that no longer exists),
/// derived from `types::EtcdRestoreSpec`.
pub fn crd() -> Value {
    serde_json::to_value(super::types::EtcdRestore::crd()).unwrap_or(Value::Null)
}

/// The UniversalController of restores: no children; the EtcdCluster is reached through the API.
pub fn controller() -> Value {
    let spec = crate::objects::native_spec((&format!("{GROUP}/v1beta2"), "etcdrestores"), &[], HOOK);
    crate::objects::universal_controller("etcd-restore-operator", ("uc.njuics.cn/operator", "etcd"), spec)
}

/// What the restore asks of the cluster (the annotation's value).
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The EtcdRestore's uid: a restore is done once.
    pub id: String,
    /// The snapshot file on the node.
    pub snapshot: PathBuf,
}

impl Request {
    /// The request on a cluster, if any.
    pub fn of(cluster: &Value) -> Option<Request> {
        let text = cluster.pointer(&format!("/metadata/annotations/{}", ANNOTATION.replace('/', "~1")))?.as_str()?;
        let v: Value = serde_json::from_str(text).ok()?;
        Some(Request { id: str_at(&v, "/id").to_string(), snapshot: PathBuf::from(str_at(&v, "/snapshot")) })
            .filter(|r| !r.id.is_empty() && r.snapshot.is_absolute())
    }

    fn annotation(&self, restore: &str) -> String {
        json!({"id": self.id, "snapshot": self.snapshot.display().to_string(), "restore": restore}).to_string()
    }
}

fn status(phase: &str, reason: &str, resync: Option<f64>) -> SyncResponse {
    SyncResponse {
        status: Some(json!({"phase": phase, "succeeded": phase == "Completed", "reason": reason})),
        children: Vec::new(),
        resync_after_seconds: resync,
        finalized: None,
    }
}

/// The EtcdCluster a restore creates when its cluster is gone: of the size asked for, else the size
/// the backup recorded (`None` when neither says), at the version asked for, else the backup's.
fn new_cluster(restore: &EtcdRestore, meta: &Value, annotation: &Value) -> Option<(Value, u64)> {
    let name = restore.spec.etcd_cluster.name.as_str();
    let ns = restore.metadata.namespace.as_deref().unwrap_or_default();
    let size =
        restore.spec.etcd_cluster.size.map(u64::from).or_else(|| meta.get("clusterSize").and_then(Value::as_u64))?;
    let version = match restore.spec.etcd_cluster.version.as_deref() {
        None | Some("") => meta.get("etcdVersion").and_then(Value::as_str).unwrap_or_default().to_string(),
        Some(v) => v.to_string(),
    };
    let mut obj = json!({"apiVersion": format!("{GROUP}/v1beta2"), "kind": "EtcdCluster",
        "metadata": {"name": name, "namespace": ns, "annotations": annotation["metadata"]["annotations"]},
        "spec": {"size": size}});
    if !version.is_empty() {
        obj["spec"]["version"] = json!(version);
    }
    Some((obj, size))
}

/// A restore handed over to its cluster's controller: completed once the cluster runs restored with
/// every member Ready (a snapshot staged from S3 then removed), failed when its restore failed.
fn handed_over(restore: &EtcdRestore, cluster: &Value, id: &str, snapshot: &std::path::Path) -> SyncResponse {
    let name = restore.spec.etcd_cluster.name.as_str();
    let cs = &cluster["status"];
    let size = cluster.pointer("/spec/size").and_then(Value::as_u64).unwrap_or(0);
    let restored = str_at(cs, "/restoredFrom") == id;
    if restored && str_at(cs, "/phase") == "Running" && cs.get("readyMembers").and_then(Value::as_u64) == Some(size) {
        // A snapshot staged from S3 has served its purpose (a local one is the user's and stays).
        if restore.spec.backup_storage_type == StorageType::S3
            && let Some(dir) = snapshot.parent()
        {
            let _ = std::fs::remove_dir_all(dir);
        }
        return status("Completed", "", None);
    }
    let message = cs
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find_map(|c| c.get("message").and_then(Value::as_str).filter(|m| !m.is_empty())))
        .unwrap_or("waiting for the cluster");
    if restored && str_at(cs, "/phase") == "Failed" && str_at(cs, "/reason") == "RestoreFailed" {
        return status("Failed", message, None);
    }
    status("Restoring", &format!("EtcdCluster {name}: {message}"), Some(1.0))
}

/// One sync of an EtcdRestore.
pub async fn sync(client: &kube::Client, request: SyncRequest) -> SyncResponse {
    let restore: EtcdRestore = match EtcdRestore::deserialize(&*request.parent) {
        Ok(r) => r,
        Err(e) => return status("Failed", &format!("spec: {e}"), None),
    };
    let previous = restore.status.as_ref().map(|s| &s.0);
    let phase = previous.and_then(|s| s.get("phase")).and_then(Value::as_str);
    if let Some(done) = previous.filter(|_| matches!(phase, Some("Completed" | "Failed"))) {
        return SyncResponse { status: Some(Value::Object(done.clone())), ..Default::default() };
    }
    let ns = restore.metadata.namespace.as_deref().unwrap_or_default();
    let name = restore.spec.etcd_cluster.name.as_str();
    let restore_name = format!("{ns}/{}", restore.metadata.name.as_deref().unwrap_or_default());
    let snapshot = match super::storage::fetch(client, &restore).await {
        Ok(p) => p,
        Err(e) => return status("Failed", &e.to_string(), None),
    };
    let wanted = Request { id: restore.metadata.uid.clone().unwrap_or_default(), snapshot: snapshot.clone() };
    let clusters: Api<DynamicObject> = api(client, ns, "EtcdCluster", "etcdclusters");
    let cluster = match clusters.get_opt(name).await {
        Ok(c) => c.and_then(|c| serde_json::to_value(c).ok()),
        Err(e) => return status("Restoring", &format!("reading EtcdCluster {name}: {e}"), Some(2.0)),
    };
    let annotation = json!({"metadata": {"annotations": {ANNOTATION: wanted.annotation(&restore_name)}}});
    let Some(cluster) = cluster else {
        // The cluster is gone: create it at the size asked for or the size the backup recorded.
        let meta: Value = std::fs::read(super::storage::meta_path(&snapshot))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        let Some((obj, size)) = new_cluster(&restore, &meta, &annotation) else {
            let message = format!(
                "spec.etcdCluster.size: EtcdCluster {name} does not exist and the backup records no size; set the size"
            );
            return status("Failed", &message, None);
        };
        let created = match serde_json::from_value::<DynamicObject>(obj) {
            Ok(o) => clusters.create(&PostParams::default(), &o).await.map(|_| ()).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        return match created {
            Ok(()) => status(
                "Restoring",
                &format!("created EtcdCluster {name} of size {size} from {}", snapshot.display()),
                Some(1.0),
            ),
            Err(e) => status("Restoring", &format!("creating EtcdCluster {name}: {e}"), Some(2.0)),
        };
    };
    if Request::of(&cluster).as_ref().map(|r| &r.id) != Some(&wanted.id) {
        let patched = clusters.patch(name, &PatchParams::default(), &Patch::Merge(&annotation)).await;
        return match patched {
            Ok(_) => status(
                "Restoring",
                &format!("asked EtcdCluster {name} to restore from {}", snapshot.display()),
                Some(1.0),
            ),
            Err(e) => status("Restoring", &format!("annotating EtcdCluster {name}: {e}"), Some(2.0)),
        };
    }
    // Handed over: wait for the cluster controller to finish.
    handed_over(&restore, &cluster, &wanted.id, &snapshot)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_annotation_round_trips_and_bad_ones_are_ignored() {
        let r = Request { id: "u1".into(), snapshot: PathBuf::from("/b/s.db") };
        let cluster = json!({"metadata": {"annotations": {ANNOTATION: r.annotation("default/x")}}});
        assert_eq!(Request::of(&cluster), Some(r));
        let relative = json!({"metadata": {"annotations": {ANNOTATION: r#"{"id": "u", "snapshot": "s.db"}"#}}});
        assert_eq!(Request::of(&relative), None, "a snapshot path must be absolute");
        let garbage = json!({"metadata": {"annotations": {ANNOTATION: "not json"}}});
        assert_eq!(Request::of(&garbage), None);
        assert_eq!(Request::of(&json!({})), None);
        assert_eq!(crate::etcd::storage::meta_path(Path::new("/b/s.db")), PathBuf::from("/b/s.db.meta.json"));
    }
}
