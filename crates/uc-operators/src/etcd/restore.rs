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

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_api::meta::json_of;

use super::resources::GROUP;
use super::storage::BackupMeta;
use super::types::{EtcdCluster, EtcdClusterSpec, EtcdClusterStatus, EtcdRestore, StorageType};

/// Name of the native hook.
pub const HOOK: &str = "etcd-restore";
/// The annotation on an EtcdCluster that asks its controller to restore it.
pub const ANNOTATION: &str = "etcd.database.coreos.com/restore";

/// The EtcdRestore CRD (coreos field names, plus an optional size for a cluster that no longer exists),
/// derived from `types::EtcdRestoreSpec`.
pub fn crd() -> CustomResourceDefinition {
    super::types::EtcdRestore::crd()
}

/// The UniversalController of restores: no children; the EtcdCluster is reached through the API.
pub fn controller() -> uc_api::controller::UniversalController {
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

/// The annotation's value, as JSON.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
struct Note {
    id: String,
    snapshot: PathBuf,
    /// The EtcdRestore (`namespace/name`), for people.
    restore: String,
}

impl Request {
    /// The request on a cluster (its metadata), if any.
    pub fn of(cluster: &ObjectMeta) -> Option<Request> {
        let text = cluster.annotations.as_ref()?.get(ANNOTATION)?;
        let note: Note = serde_json::from_str(text).ok()?;
        Some(Request { id: note.id, snapshot: note.snapshot }).filter(|r| !r.id.is_empty() && r.snapshot.is_absolute())
    }

    fn annotation(&self, restore: &str) -> String {
        let note = Note { id: self.id.clone(), snapshot: self.snapshot.clone(), restore: restore.into() };
        serde_json::to_string(&note).unwrap_or_default()
    }
}

/// What an EtcdRestore's status says.
#[derive(Debug, Serialize)]
struct RestoreStatus<'a> {
    phase: &'a str,
    succeeded: bool,
    reason: &'a str,
}

fn status(phase: &str, reason: &str, resync: Option<f64>) -> SyncResponse {
    SyncResponse {
        status: Some(json_of(&RestoreStatus { phase, succeeded: phase == "Completed", reason })),
        children: Vec::new(),
        resync_after_seconds: resync,
        finalized: None,
    }
}

/// The EtcdCluster a restore creates when its cluster is gone: of the size asked for, else the size
/// the backup recorded (`None` when neither says), at the version asked for, else the backup's.
fn new_cluster(restore: &EtcdRestore, meta: &BackupMeta, request: &str) -> Option<EtcdCluster> {
    let asked = &restore.spec.etcd_cluster;
    let size = asked.size.or(meta.cluster_size)?;
    let version = asked.version.clone().filter(|v| !v.is_empty()).or_else(|| meta.etcd_version.clone());
    let mut cluster = EtcdCluster::new(
        &asked.name,
        EtcdClusterSpec { size, version: version.filter(|v| !v.is_empty()), ..Default::default() },
    );
    cluster.metadata.namespace = restore.metadata.namespace.clone();
    cluster.metadata.annotations = Some([(ANNOTATION.to_string(), request.to_string())].into());
    Some(cluster)
}

/// A restore handed over to its cluster's controller: completed once the cluster runs restored with
/// every member Ready (a snapshot staged from S3 then removed), failed when its restore failed.
fn handed_over(restore: &EtcdRestore, cluster: &EtcdCluster, id: &str, snapshot: &std::path::Path) -> SyncResponse {
    let name = restore.spec.etcd_cluster.name.as_str();
    let cs: EtcdClusterStatus = cluster
        .status
        .as_ref()
        .and_then(|s| EtcdClusterStatus::deserialize(&Value::Object(s.0.clone())).ok())
        .unwrap_or_default();
    let restored = cs.restored_from.as_deref() == Some(id);
    if restored && cs.phase == "Running" && cs.ready_members == cluster.spec.size as usize {
        // A snapshot staged from S3 has served its purpose (a local one is the user's and stays).
        if restore.spec.backup_storage_type == StorageType::S3
            && let Some(dir) = snapshot.parent()
        {
            let _ = std::fs::remove_dir_all(dir);
        }
        return status("Completed", "", None);
    }
    let message = cs
        .conditions
        .iter()
        .find_map(|c| Some(c.message.as_str()).filter(|m| !m.is_empty()))
        .unwrap_or("waiting for the cluster");
    if restored && cs.phase == "Failed" && cs.reason.as_deref() == Some("RestoreFailed") {
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
    let clusters: Api<EtcdCluster> = Api::namespaced(client.clone(), ns);
    let cluster = match clusters.get_opt(name).await {
        Ok(c) => c,
        Err(e) => return status("Restoring", &format!("reading EtcdCluster {name}: {e}"), Some(2.0)),
    };
    let request = wanted.annotation(&restore_name);
    let Some(cluster) = cluster else {
        // The cluster is gone: create it at the size asked for or the size the backup recorded.
        let meta: BackupMeta = std::fs::read(super::storage::meta_path(&snapshot))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let Some(new) = new_cluster(&restore, &meta, &request) else {
            let message = format!(
                "spec.etcdCluster.size: EtcdCluster {name} does not exist and the backup records no size; set the size"
            );
            return status("Failed", &message, None);
        };
        let size = new.spec.size;
        let created = clusters.create(&PostParams::default(), &new).await.map(|_| ()).map_err(|e| e.to_string());
        return match created {
            Ok(()) => status(
                "Restoring",
                &format!("created EtcdCluster {name} of size {size} from {}", snapshot.display()),
                Some(1.0),
            ),
            Err(e) => status("Restoring", &format!("creating EtcdCluster {name}: {e}"), Some(2.0)),
        };
    };
    if Request::of(&cluster.metadata).as_ref().map(|r| &r.id) != Some(&wanted.id) {
        let annotation = json!({"metadata": {"annotations": {ANNOTATION: request}}});
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
        let annotated = |text: &str| ObjectMeta {
            annotations: Some([(ANNOTATION.to_string(), text.to_string())].into()),
            ..Default::default()
        };
        let written = r.annotation("default/x");
        assert_eq!(Request::of(&annotated(&written)), Some(r));
        assert!(written.contains(r#""restore":"default/x""#), "{written}");
        assert_eq!(
            Request::of(&annotated(r#"{"id": "u", "snapshot": "s.db"}"#)),
            None,
            "a snapshot path must be absolute"
        );
        assert_eq!(Request::of(&annotated("not json")), None);
        assert_eq!(Request::of(&ObjectMeta::default()), None);
        assert_eq!(crate::etcd::storage::meta_path(Path::new("/b/s.db")), PathBuf::from("/b/s.db.meta.json"));
    }

    #[test]
    fn a_cluster_made_again_takes_the_size_and_version_asked_for_else_the_backups() {
        let restore = |spec: Value| -> EtcdRestore {
            serde_json::from_value(json!({"metadata": {"name": "r", "namespace": "ns"}, "spec": spec})).unwrap()
        };
        let meta: BackupMeta =
            serde_json::from_value(json!({"clusterSize": 3, "etcdVersion": "3.4.23", "etcdRevision": 9})).unwrap();
        let from_backup = new_cluster(&restore(json!({"etcdCluster": {"name": "c"}})), &meta, "note").unwrap();
        assert_eq!((from_backup.spec.size, from_backup.spec.version.as_deref()), (3, Some("3.4.23")));
        assert_eq!(from_backup.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(from_backup.metadata.annotations.as_ref().unwrap()[ANNOTATION], "note");
        let written = serde_json::to_value(&from_backup).unwrap();
        assert_eq!(
            (written["apiVersion"].as_str(), written["kind"].as_str()),
            (Some("etcd.database.coreos.com/v1beta2"), Some("EtcdCluster"))
        );
        let asked = restore(json!({"etcdCluster": {"name": "c", "size": 5, "version": "3.5.0"}}));
        let asked = new_cluster(&asked, &meta, "note").unwrap();
        assert_eq!((asked.spec.size, asked.spec.version.as_deref()), (5, Some("3.5.0")));
        let nothing = new_cluster(&restore(json!({"etcdCluster": {"name": "c"}})), &BackupMeta::default(), "note");
        assert!(nothing.is_none(), "no size asked for and none recorded");
    }
}
