//! Where snapshots are kept: a local path (default), or any S3-compatible object store.
//!
//! Backups and restores name their storage the coreos way: `storageType` / `backupStorageType` of
//! `Local` (`local.path`) or `S3` (`s3.path` = `<bucket>/<key>`, `s3.awsSecret` = the name of a Secret
//! holding `credentials` and `config` files as the AWS CLI writes them, `s3.endpoint` for a store
//! other than AWS, `s3.forcePathStyle`). Every snapshot has a `<name>.meta.json` beside it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as Key;
use object_store::{ObjectStore, PutPayload};
use tokio::io::AsyncWriteExt;

use super::types::{EtcdRestore, S3Source, StorageType};

/// Why a snapshot could not be stored or fetched. The messages name the spec field or the location.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The spec names storage that cannot be used.
    #[error("{field}: {message}")]
    Spec { field: String, message: String },
    /// A local file could not be read or written.
    #[error("{}: {source}", path.display())]
    File { path: PathBuf, source: std::io::Error },
    /// The object store refused or failed.
    #[error("{location}: {source}")]
    Store { location: String, source: object_store::Error },
    /// An upload failed half-way (nothing was left behind).
    #[error("uploading {location}: {source}")]
    Upload { location: String, source: std::io::Error },
}

impl StorageError {
    fn spec(field: impl Into<String>, message: impl Into<String>) -> StorageError {
        StorageError::Spec { field: field.into(), message: message.into() }
    }

    /// The error of an I/O operation on `path`.
    pub(super) fn file(path: &Path) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
        move |source| StorageError::File { path: path.to_path_buf(), source }
    }
}

/// What a backup records next to its snapshot (`<file>.meta.json`), for a restore of a cluster that
/// no longer exists.
#[derive(Debug, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct BackupMeta {
    /// Voting members when it was taken (`null` when they could not be read).
    pub cluster_size: Option<u32>,
    pub etcd_version: Option<String>,
    pub etcd_revision: Option<i64>,
    /// The endpoint it was taken from.
    pub endpoint: Option<String>,
}

/// Where a backup's [`BackupMeta`] is (`<file>.meta.json`).
pub fn meta_path(snapshot: &Path) -> PathBuf {
    PathBuf::from(format!("{}.meta.json", snapshot.display()))
}

/// An S3 location: a store (one bucket) and a key in it.
pub struct S3 {
    store: Arc<dyn ObjectStore>,
    bucket: String,
    /// The key of the snapshot.
    pub key: String,
}

/// One `key = value` of an AWS CLI ini file's `[default]` profile.
fn ini_value(text: &str, key: &str) -> Option<String> {
    let mut in_default = true;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_default = line == "[default]" || line == "[profile default]";
            continue;
        }
        let Some((k, v)) = line.split_once('=') else { continue };
        if in_default && k.trim() == key {
            return Some(v.trim().to_string());
        }
    }
    None
}

impl S3 {
    /// The store named by an `s3` spec (`field` is its path in the spec, for errors).
    pub async fn open(
        client: &kube::Client,
        namespace: &str,
        spec: &S3Source,
        field: &str,
    ) -> Result<S3, StorageError> {
        let path = spec.path.as_str();
        let Some((bucket, key)) = path.split_once('/').filter(|(b, k)| !b.is_empty() && !k.is_empty()) else {
            return Err(StorageError::spec(format!("{field}.path"), format!("{path:?} is not <bucket>/<key>")));
        };
        let secret_name = spec.aws_secret.as_str();
        if secret_name.is_empty() {
            return Err(StorageError::spec(format!("{field}.awsSecret"), "names the Secret with the credentials"));
        }
        let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
        let secret = secrets
            .get(secret_name)
            .await
            .map_err(|e| StorageError::spec(format!("{field}.awsSecret"), format!("{secret_name}: {e}")))?;
        let data = secret.data.unwrap_or_default();
        let file = |k: &str| data.get(k).map(|b| String::from_utf8_lossy(&b.0).into_owned()).unwrap_or_default();
        let (credentials, config) = (file("credentials"), file("config"));
        let missing = |key: &str| {
            StorageError::spec(format!("{field}.awsSecret"), format!("{secret_name} has no {key} in `credentials`"))
        };
        let access = ini_value(&credentials, "aws_access_key_id").ok_or_else(|| missing("aws_access_key_id"))?;
        let secret_key =
            ini_value(&credentials, "aws_secret_access_key").ok_or_else(|| missing("aws_secret_access_key"))?;
        let region = ini_value(&config, "region").unwrap_or_else(|| "us-east-1".into());
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_region(region)
            .with_access_key_id(access)
            .with_secret_access_key(secret_key);
        if let Some(token) = ini_value(&credentials, "aws_session_token") {
            builder = builder.with_token(token);
        }
        let endpoint = spec.endpoint.as_deref().unwrap_or_default();
        if !endpoint.is_empty() {
            let path_style = spec.force_path_style.unwrap_or(true);
            builder = builder
                .with_endpoint(endpoint)
                .with_allow_http(endpoint.starts_with("http://"))
                .with_virtual_hosted_style_request(!path_style);
        }
        let store = builder.build().map_err(|e| StorageError::spec(field, e.to_string()))?;
        Ok(S3 { store: Arc::new(store), bucket: bucket.to_string(), key: key.to_string() })
    }

    /// `<bucket>/<key>` of a key.
    pub fn full(&self, key: &str) -> String {
        format!("{}/{key}", self.bucket)
    }

    /// Uploads a file (in parts when large); the object appears only when complete.
    pub async fn upload(&self, file: &Path, key: &str) -> Result<(), StorageError> {
        let mut src = tokio::fs::File::open(file).await.map_err(StorageError::file(file))?;
        let mut dst = object_store::buffered::BufWriter::new(self.store.clone(), Key::from(key));
        let copied = tokio::io::copy(&mut src, &mut dst).await;
        if let Err(e) = copied {
            let _ = dst.abort().await;
            return Err(StorageError::Upload { location: self.full(key), source: e });
        }
        dst.shutdown().await.map_err(|source| StorageError::Upload { location: self.full(key), source })
    }

    /// Writes a small object.
    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), StorageError> {
        self.store.put(&Key::from(key), PutPayload::from(bytes)).await.map(|_| ()).map_err(self.store_error(key))
    }

    /// Downloads an object to a file.
    pub async fn download(&self, key: &str, file: &Path) -> Result<(), StorageError> {
        let got = self.store.get(&Key::from(key)).await.map_err(self.store_error(key))?;
        let mut out = tokio::fs::File::create(file).await.map_err(StorageError::file(file))?;
        let mut stream = got.into_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(self.store_error(key))?;
            out.write_all(&chunk).await.map_err(StorageError::file(file))?;
        }
        out.sync_all().await.map_err(StorageError::file(file))
    }

    fn store_error(&self, key: &str) -> impl FnOnce(object_store::Error) -> StorageError {
        let location = self.full(key);
        move |source| StorageError::Store { location, source }
    }

    /// Removes the oldest snapshots under `<prefix>_v` beyond `keep` (with their meta objects).
    pub async fn prune(&self, prefix: &str, keep: usize) -> Result<(), StorageError> {
        let dir = prefix.rsplit_once('/').map(|(d, _)| Key::from(d));
        let wanted = format!("{prefix}_v");
        let mut found: Vec<(chrono::DateTime<chrono::Utc>, String)> = Vec::new();
        let mut list = self.store.list(dir.as_ref());
        while let Some(meta) = list.next().await {
            let meta = meta.map_err(self.store_error(prefix))?;
            let key = meta.location.to_string();
            if key.starts_with(&wanted) && !key.ends_with(".meta.json") {
                found.push((meta.last_modified, key));
            }
        }
        found.sort();
        while found.len() > keep {
            let (_, key) = found.remove(0);
            let _ = self.store.delete(&Key::from(format!("{key}.meta.json"))).await;
            self.store.delete(&Key::from(key.as_str())).await.map_err(self.store_error(&key))?;
        }
        Ok(())
    }
}

/// The snapshot file a restore reads, on this machine: a local path as is; an S3 object downloaded
/// (with its meta) into a directory of its own under the system's temporary directory.
pub async fn fetch(client: &kube::Client, restore: &EtcdRestore) -> Result<PathBuf, StorageError> {
    match restore.spec.backup_storage_type {
        StorageType::Local => {
            let path = restore.spec.local.as_ref().and_then(|l| l.path.as_deref()).unwrap_or_default();
            if !path.starts_with('/') {
                return Err(StorageError::spec("spec.local.path", format!("{path:?} must be an absolute path")));
            }
            let p = PathBuf::from(path);
            if !p.is_file() {
                return Err(StorageError::spec("spec.local.path", format!("{path} is not a file")));
            }
            Ok(p)
        }
        StorageType::S3 => {
            let ns = restore.metadata.namespace.as_deref().unwrap_or_default();
            let spec = restore.spec.s3.clone().unwrap_or_default();
            let s3 = S3::open(client, ns, &spec, "spec.s3").await?;
            let uid = restore.metadata.uid.as_deref().unwrap_or_default();
            let dir = std::env::temp_dir().join("uc-etcd-restore").join(uid);
            std::fs::create_dir_all(&dir).map_err(StorageError::file(&dir))?;
            let name = s3.key.rsplit('/').next().unwrap_or("snapshot.db").to_string();
            let file = dir.join(&name);
            if !file.is_file() {
                let partial = dir.join(format!("{name}.partial"));
                s3.download(&s3.key, &partial).await?;
                // The meta is optional: a snapshot put there by hand has none.
                let _ = s3.download(&format!("{}.meta.json", s3.key), &meta_path(&file)).await;
                std::fs::rename(&partial, &file).map_err(StorageError::file(&file))?;
            }
            Ok(file)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_cli_files_are_read_from_the_default_profile() {
        let creds =
            "[other]\naws_access_key_id = NO\n[default]\naws_access_key_id = AKIA1\naws_secret_access_key=s3cr3t\n";
        assert_eq!(ini_value(creds, "aws_access_key_id").as_deref(), Some("AKIA1"));
        assert_eq!(ini_value(creds, "aws_secret_access_key").as_deref(), Some("s3cr3t"));
        assert_eq!(ini_value("[profile default]\nregion = eu-west-1", "region").as_deref(), Some("eu-west-1"));
        assert_eq!(ini_value(creds, "region"), None);
    }

    #[test]
    fn errors_name_the_field_or_the_file() {
        let e = StorageError::spec("spec.s3.path", "\"b\" is not <bucket>/<key>");
        assert_eq!(e.to_string(), "spec.s3.path: \"b\" is not <bucket>/<key>");
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        assert_eq!(StorageError::file(Path::new("/x/y"))(io).to_string(), "/x/y: gone");
    }
}
