//! `EtcdBackup`: a snapshot of an etcd cluster through the maintenance API (`POST
//! /v3/maintenance/snapshot` on etcd's JSON gateway: a stream of base64 chunks that together are the
//! same file `etcdctl snapshot save` writes), stored on local storage or in an S3-compatible object
//! store (`storage`). One-shot, or periodic with
//! `backupPolicy.backupIntervalInSecond` and `maxBackups` retention.
//!
//! A backup is written to `<file>.partial` and renamed when complete, so a failed or interrupted backup
//! never leaves a file that looks like a good one. Next to it, `<file>.meta.json` records the cluster's
//! size, etcd version and revision, so that a restore can rebuild a cluster that no longer exists at
//! its original size.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde::{Deserialize, Serialize};
use uc_api::hook::{SyncRequest, SyncResponse};
use uc_api::meta::json_of;
use uc_engine::names::{ClusterNames, Resolver};

use super::resources::GROUP;
use super::storage::{BackupMeta, S3, StorageError};
use super::types::{EtcdBackup, StorageType};

/// Name of the native hook.
pub const HOOK: &str = "etcd-backup";

/// The EtcdBackup CRD (coreos field names), derived from `types::EtcdBackupSpec`.
pub fn crd() -> CustomResourceDefinition {
    super::types::EtcdBackup::crd()
}

/// The UniversalController of backups: no children, status only.
pub fn controller() -> uc_api::controller::UniversalController {
    let spec = crate::objects::native_spec((&format!("{GROUP}/v1beta2"), "etcdbackups"), &[], HOOK);
    crate::objects::universal_controller("etcd-backup-operator", ("uc.njuics.cn/operator", "etcd"), spec)
}

/// What a snapshot saved.
struct Saved {
    revision: i64,
    version: String,
}

/// `maintenance/status`'s answer, the parts a backup records.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct MaintenanceStatus {
    header: Header,
    version: String,
}

/// The header of an answer: the revision it was read at.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Header {
    #[serde(deserialize_with = "super::client::id")]
    revision: String,
}

/// One line of `maintenance/snapshot`'s stream: a chunk of the file, or an error.
#[derive(Debug, Deserialize)]
struct StreamLine {
    result: Option<Chunk>,
    error: Option<GatewayError>,
}

/// A chunk of the snapshot, base64.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Chunk {
    blob: String,
}

/// An error the gateway streams.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct GatewayError {
    message: String,
    http_code: Option<u16>,
}

/// An EtcdBackup's status, as coreos's operator writes it (and where the snapshot went).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
struct BackupStatus {
    succeeded: bool,
    reason: String,
    etcd_revision: Option<i64>,
    etcd_version: Option<String>,
    last_success_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    backup_path: Option<String>,
}

async fn post(
    client: &Client<HttpConnector<Resolver>, Full<Bytes>>,
    url: String,
) -> Result<http::Response<hyper::body::Incoming>, SnapshotError> {
    let request = http::Request::post(&url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from_static(b"{}")));
    let failed = |message: String| SnapshotError::Request { url: url.clone(), message };
    let request = request.map_err(|e| failed(e.to_string()))?;
    let resp = client.request(request).await.map_err(|e| failed(e.to_string()))?;
    if !resp.status().is_success() {
        return Err(failed(resp.status().to_string()));
    }
    Ok(resp)
}

/// Why a snapshot could not be taken or stored.
#[derive(Debug, thiserror::Error)]
enum SnapshotError {
    /// etcd could not be asked, or said no.
    #[error("{url}: {message}")]
    Request { url: String, message: String },
    /// What etcd sent is not what its API describes, or says it failed.
    #[error("{what}: {message}")]
    Answer { what: &'static str, message: String },
    /// The snapshot could not be written or uploaded.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl SnapshotError {
    fn answer(what: &'static str, e: impl std::fmt::Display) -> SnapshotError {
        SnapshotError::Answer { what, message: e.to_string() }
    }
}

/// Streams a snapshot from `endpoint` into `file` (through `<file>.partial`).
async fn snapshot(endpoint: &str, file: &Path, resolver: Resolver) -> Result<Saved, SnapshotError> {
    let client =
        Client::builder(TokioExecutor::new()).build::<_, Full<Bytes>>(HttpConnector::new_with_resolver(resolver));
    let endpoint = endpoint.trim_end_matches('/');
    let status_body = post(&client, format!("{endpoint}/v3/maintenance/status"))
        .await?
        .into_body()
        .collect()
        .await
        .map_err(|e| SnapshotError::answer("maintenance status", e))?
        .to_bytes();
    let status: MaintenanceStatus =
        serde_json::from_slice(&status_body).map_err(|e| SnapshotError::answer("maintenance status", e))?;
    let revision = status.header.revision.parse().unwrap_or(0);
    let version = status.version;
    let partial = PathBuf::from(format!("{}.partial", file.display()));
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(StorageError::file(dir))?;
    }
    let mut out = std::fs::File::create(&partial).map_err(StorageError::file(&partial))?;
    let mut body = post(&client, format!("{endpoint}/v3/maintenance/snapshot")).await?.into_body();
    let mut pending = Vec::new();
    let mut write_line = |line: &[u8]| -> Result<(), SnapshotError> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let msg: StreamLine = serde_json::from_slice(line).map_err(|e| SnapshotError::answer("snapshot stream", e))?;
        if let Some(err) = msg.error {
            let code = err.http_code.map(|c| format!(" ({c})")).unwrap_or_default();
            return Err(SnapshotError::answer("snapshot", format!("{}{code}", err.message)));
        }
        let blob = msg.result.unwrap_or_default().blob;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|e| SnapshotError::answer("snapshot chunk", e))?;
        Ok(std::io::Write::write_all(&mut out, &bytes).map_err(StorageError::file(&partial))?)
    };
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| SnapshotError::answer("snapshot stream", e))?;
        if let Ok(data) = frame.into_data() {
            pending.extend_from_slice(&data);
            while let Some(pos) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=pos).collect();
                write_line(&line)?;
            }
        }
    }
    write_line(&pending)?;
    out.sync_all().map_err(StorageError::file(&partial))?;
    std::fs::rename(&partial, file).map_err(StorageError::file(file))?;
    Ok(Saved { revision, version })
}

/// Removes the oldest periodic backups of `base` beyond `keep`.
fn prune(base: &Path, keep: usize) {
    let (Some(dir), Some(prefix)) = (base.parent(), base.file_name().and_then(|n| n.to_str())) else { return };
    let prefix = format!("{prefix}_v");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && !n.ends_with(".partial") && !n.ends_with(".meta.json"))
        })
        .collect();
    found.sort_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    while found.len() > keep {
        let old = found.remove(0);
        let _ = std::fs::remove_file(super::storage::meta_path(&old));
        let _ = std::fs::remove_file(old);
    }
}

/// The answer of a sync: the backup's status, no children.
fn answer(status: &BackupStatus, resync_after_seconds: Option<f64>) -> SyncResponse {
    SyncResponse { status: Some(json_of(status)), children: Vec::new(), resync_after_seconds, finalized: None }
}

/// When a backup that succeeded is not due again: one-shot, never (no resync); periodic, until the
/// interval since the last success has passed (resync then). `None`: take one now.
fn not_due(previous: &BackupStatus, interval: u64, now: chrono::DateTime<chrono::Utc>) -> Option<Option<f64>> {
    if !previous.succeeded {
        return None;
    }
    if interval == 0 {
        return Some(None);
    }
    let last = previous.last_success_date.as_deref()?;
    let last = chrono::DateTime::parse_from_rfc3339(last).ok()?;
    let due = last.with_timezone(&chrono::Utc) + chrono::Duration::seconds(interval as i64);
    let wait = (due - now).num_milliseconds() as f64 / 1000.0;
    (due > now).then_some(Some(wait.max(0.5)))
}

/// Where a backup's snapshots go: a local path, or (with `s3`) a local staging file then an object.
struct Target {
    s3: Option<S3>,
    path: String,
    interval: u64,
    max_backups: usize,
    stamp: String,
}

impl Target {
    /// Where the backup's snapshots go: a local path (absolute), or a local staging file then an S3
    /// object (which needs the API server, for `spec.s3.awsSecret`).
    async fn open(
        client: Option<&kube::Client>,
        backup: &EtcdBackup,
        interval: u64,
        max_backups: usize,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Target, StorageError> {
        let spec = &backup.spec;
        let namespace = backup.metadata.namespace.as_deref().unwrap_or_default();
        let s3 = if spec.storage_type == StorageType::S3 {
            let Some(client) = client else {
                let message = "S3 storage needs the API server (for spec.s3.awsSecret)".into();
                return Err(StorageError::Spec { field: "spec.storageType".into(), message });
            };
            Some(S3::open(client, namespace, &spec.s3.clone().unwrap_or_default(), "spec.s3").await?)
        } else {
            None
        };
        let path = match &s3 {
            Some(_) => std::env::temp_dir()
                .join("uc-etcd-backup")
                .join(backup.metadata.uid.as_deref().unwrap_or_default())
                .join("snapshot.db")
                .display()
                .to_string(),
            None => spec.local.as_ref().and_then(|l| l.path.clone()).unwrap_or_default(),
        };
        if !path.starts_with('/') {
            let message = format!("{path:?} must be an absolute path");
            return Err(StorageError::Spec { field: "spec.local.path".into(), message });
        }
        Ok(Target { s3, path, interval, max_backups, stamp: now.format("%Y-%m-%d-%H:%M:%S").to_string() })
    }

    /// A periodic backup names each snapshot by revision and time; a one-shot one writes the path itself.
    fn name_for(&self, base: &str, rev: i64) -> String {
        if self.interval > 0 { format!("{base}_v{rev}_{}", self.stamp) } else { base.to_string() }
    }

    /// Stores the snapshot staged at `tmp` (of etcd revision `revision`) with its metadata, pruning old
    /// periodic ones; where it went.
    async fn store(&self, tmp: &Path, revision: i64, meta: &BackupMeta) -> Result<String, StorageError> {
        let meta = serde_json::to_string(meta).unwrap_or_default();
        let base = PathBuf::from(&self.path);
        let prune_too = self.interval > 0 && self.max_backups > 0;
        let Some(s3) = &self.s3 else {
            let file = PathBuf::from(self.name_for(&self.path, revision));
            if file != tmp {
                let _ = std::fs::rename(tmp, &file);
            }
            let _ = std::fs::write(super::storage::meta_path(&file), meta);
            if prune_too {
                prune(&base, self.max_backups);
            }
            return Ok(file.display().to_string());
        };
        let key = self.name_for(&s3.key, revision);
        let uploaded = async {
            s3.upload(tmp, &key).await?;
            s3.put(&format!("{key}.meta.json"), meta.into_bytes()).await?;
            if prune_too {
                s3.prune(&s3.key, self.max_backups).await?;
            }
            Ok::<String, StorageError>(s3.full(&key))
        }
        .await;
        let _ = std::fs::remove_dir_all(base.parent().unwrap_or(&base));
        uploaded
    }
}

/// One sync of an EtcdBackup. `client` reads the S3 credentials' Secret.
pub async fn sync(client: Option<&kube::Client>, names: Option<&ClusterNames>, request: SyncRequest) -> SyncResponse {
    let parent = &request.parent;
    let previous = parent.get("status").and_then(|s| BackupStatus::deserialize(s).ok()).unwrap_or_default();
    let failed = |reason: String| {
        let status = BackupStatus { succeeded: false, reason, backup_path: None, ..previous.clone() };
        answer(&status, Some(10.0))
    };
    let backup: EtcdBackup = match EtcdBackup::deserialize(&**parent) {
        Ok(b) => b,
        Err(e) => return failed(format!("spec: {e}")),
    };
    let spec = &backup.spec;
    let policy = spec.backup_policy.clone().unwrap_or_default();
    let interval = policy.backup_interval_in_second.unwrap_or(0);
    let max_backups = policy.max_backups.unwrap_or(0) as usize;
    let timeout = policy.timeout_in_second.unwrap_or(60);
    let namespace = backup.metadata.namespace.as_deref().unwrap_or_default();
    let now = chrono::Utc::now();
    if let Some(resync) = not_due(&previous, interval, now) {
        return answer(&previous, resync);
    }
    let target = match Target::open(client, &backup, interval, max_backups, now).await {
        Ok(t) => t,
        Err(e) => return failed(e.to_string()),
    };
    let endpoints = &spec.etcd_endpoints;
    let mut last_error = "spec.etcdEndpoints is empty".to_string();
    // `http://example-client:2379` means the Service in the backup's namespace, as it would in a pod.
    let resolver = match names {
        Some(n) => n.resolver(namespace),
        None => Resolver::system(),
    };
    for endpoint in endpoints {
        let tmp = PathBuf::from(target.name_for(&target.path, 0));
        let attempt =
            tokio::time::timeout(Duration::from_secs(timeout), snapshot(endpoint, &tmp, resolver.clone())).await;
        let saved = match attempt {
            Ok(Ok(saved)) => saved,
            Ok(Err(e)) => {
                last_error = e.to_string();
                let _ = std::fs::remove_file(format!("{}.partial", tmp.display()));
                continue;
            }
            Err(_) => {
                last_error = format!("{endpoint}: timed out after {timeout} s");
                let _ = std::fs::remove_file(format!("{}.partial", tmp.display()));
                continue;
            }
        };
        let members = super::client::Etcd::with_resolver(resolver.clone()).members(endpoint).await;
        let meta = BackupMeta {
            cluster_size: members.ok().map(|m| m.iter().filter(|m| !m.is_learner).count() as u32),
            etcd_version: Some(saved.version.clone()),
            etcd_revision: Some(saved.revision),
            endpoint: Some(endpoint.clone()),
        };
        let stored = target.store(&tmp, saved.revision, &meta).await;
        let backup_path = match stored {
            Ok(p) => p,
            Err(e) => {
                last_error = e.to_string();
                break;
            }
        };
        let status = BackupStatus {
            succeeded: true,
            reason: String::new(),
            etcd_revision: Some(saved.revision),
            etcd_version: Some(saved.version),
            last_success_date: Some(now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            backup_path: Some(backup_path),
        };
        return answer(&status, (interval > 0).then_some(interval as f64));
    }
    failed(last_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn the_gateways_messages_read() {
        let status: MaintenanceStatus =
            serde_json::from_value(json!({"header": {"cluster_id": "1", "revision": "42"}, "version": "3.4.23"}))
                .unwrap();
        assert_eq!((status.header.revision.as_str(), status.version.as_str()), ("42", "3.4.23"));
        let chunk: StreamLine =
            serde_json::from_value(json!({"result": {"header": {}, "remaining_bytes": "0", "blob": "eA=="}})).unwrap();
        assert_eq!(chunk.result.unwrap().blob, "eA==");
        let error: StreamLine =
            serde_json::from_value(json!({"error": {"grpc_code": 14, "http_code": 503, "message": "unavailable"}}))
                .unwrap();
        assert_eq!(error.error.map(|e| (e.message, e.http_code)), Some(("unavailable".into(), Some(503))));
    }

    #[test]
    fn a_failed_backup_keeps_what_the_last_success_recorded() {
        let previous = BackupStatus {
            succeeded: true,
            etcd_revision: Some(7),
            last_success_date: Some("t".into()),
            backup_path: Some("/b/x.db".into()),
            ..Default::default()
        };
        let failed = BackupStatus { succeeded: false, reason: "r".into(), backup_path: None, ..previous };
        assert_eq!(
            json_of(&failed),
            json!({"succeeded": false, "reason": "r", "etcdRevision": 7, "etcdVersion": null, "lastSuccessDate": "t"})
        );
    }

    #[test]
    fn a_backup_is_due_once_or_every_interval() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:01:00Z").unwrap().with_timezone(&chrono::Utc);
        let done =
            |at: &str| BackupStatus { succeeded: true, last_success_date: Some(at.into()), ..Default::default() };
        assert_eq!(not_due(&BackupStatus::default(), 0, now), None, "never taken: now");
        let failed = BackupStatus { succeeded: false, ..done("2026-01-01T00:00:30Z") };
        assert_eq!(not_due(&failed, 30, now), None, "failed: again now");
        assert_eq!(not_due(&done("2026-01-01T00:00:00Z"), 0, now), Some(None), "one-shot: done for good");
        assert_eq!(not_due(&done("2026-01-01T00:00:30Z"), 60, now), Some(Some(30.0)), "periodic: in 30 s");
        assert_eq!(not_due(&done("2026-01-01T00:00:00Z"), 60, now), None, "periodic: due now");
    }

    #[tokio::test]
    async fn bad_requests_fail_with_a_reason_and_write_nothing() {
        let req = |spec: Value| SyncRequest {
            parent: json!({"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdBackup",
                           "metadata": {"name": "b"}, "spec": spec})
            .into(),
            ..Default::default()
        };
        let status = |out: SyncResponse| out.status.expect("a backup always answers with its status");
        let out =
            status(sync(None, None, req(json!({"etcdEndpoints": ["http://127.0.0.1:1"], "storageType": "S3"}))).await);
        assert_eq!(out["succeeded"], json!(false));
        assert!(out["reason"].as_str().unwrap().contains("S3"));
        let out = status(
            sync(None, None, req(json!({"etcdEndpoints": ["http://127.0.0.1:1"], "local": {"path": "rel/x.db"}})))
                .await,
        );
        assert!(out["reason"].as_str().unwrap().contains("absolute"));
        let out = status(sync(None, None, req(json!({"etcdEndpoints": "one"}))).await);
        assert!(out["reason"].as_str().unwrap().starts_with("spec: invalid type"), "{out}");
        let dir = std::env::temp_dir().join(format!("uc-backup-test-{}", std::process::id()));
        let file = dir.join("x.db");
        let out = sync(
            None,
            None,
            req(json!({"etcdEndpoints": ["http://127.0.0.1:1"], "local": {"path": file.display().to_string()}})),
        )
        .await;
        assert_eq!(status(out)["succeeded"], json!(false), "nothing listens on port 1");
        assert!(!file.exists() && !dir.join("x.db.partial").exists(), "a failed backup leaves no file");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn prune_keeps_the_newest() {
        let dir = std::env::temp_dir().join(format!("uc-prune-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..4 {
            std::fs::write(dir.join(format!("b.db_v{i}_t")), b"x").unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        prune(&dir.join("b.db"), 2);
        let mut left: Vec<String> =
            std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, vec!["b.db_v2_t", "b.db_v3_t"]);
        let _ = std::fs::remove_dir_all(dir);
    }
}
