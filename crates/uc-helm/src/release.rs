//! Releases as Helm 3 stores them, so `helm list`, `helm history` and `helm get` read what uc writes
//! (and uc reads what Helm wrote): one Secret per revision, `sh.helm.release.v1.<name>.v<revision>`,
//! type `helm.sh/release.v1`, labels `name`, `owner: helm`, `status`, `version`, and under
//! `data.release` the release as JSON, gzipped (best compression), base64-encoded.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::chart::Chart;

/// The Secret type of Helm 3's releases.
pub const SECRET_TYPE: &str = "helm.sh/release.v1";

/// A zero time as Helm writes it (its `helm/pkg/time` marshals the zero `time.Time` as `""`).
pub const ZERO_TIME: &str = "";

/// A release's state (Helm's `release.Status`).
pub mod status {
    pub const DEPLOYED: &str = "deployed";
    pub const SUPERSEDED: &str = "superseded";
    pub const FAILED: &str = "failed";
    pub const UNINSTALLED: &str = "uninstalled";
    pub const PENDING_INSTALL: &str = "pending-install";
    pub const PENDING_UPGRADE: &str = "pending-upgrade";
}

/// `release.Info`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Info {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub first_deployed: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_deployed: String,
    /// Not `omitempty` in Helm: `""` (the zero time) when never deleted.
    #[serde(default)]
    pub deleted: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
}

/// `release.Release`, with its chart kept as the JSON Helm writes (`metadata`, `templates`, `values`,
/// `files`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Release {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<Info>,
    #[serde(default, skip_serializing_if = "Json::is_null")]
    pub chart: Json,
    /// The values the user gave (not the coalesced ones).
    #[serde(default, skip_serializing_if = "Json::is_null")]
    pub config: Json,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<Hook>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub version: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// `release.Hook`: a hook of the release, as its manifest was rendered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Hook {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The template it came from (`chart/templates/x.yaml`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// Written even when the hook never ran (a Go struct is never empty to `omitempty`).
    #[serde(default)]
    pub last_run: HookExecution,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub weight: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_policies: Vec<String>,
}

/// `release.HookExecution`: when a hook last ran and how it went (all empty: it never ran).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HookExecution {
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub completed_at: String,
    #[serde(default)]
    pub phase: String,
}

/// Why a stored release cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error("release data is not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("release data does not decompress: {0}")]
    Gzip(#[from] std::io::Error),
    #[error("release data is not a release: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the Secret has no data.release")]
    Missing,
}

/// A chart as it is kept in a release (`chart.Chart`'s JSON: files base64-encoded).
pub fn chart_json(chart: &Chart) -> Json {
    let b64 = |d: &[u8]| Json::String(base64::engine::general_purpose::STANDARD.encode(d));
    let files = |fs: &[crate::chart::File]| -> Json {
        Json::Array(fs.iter().map(|f| serde_json::json!({"name": f.name, "data": b64(&f.data)})).collect())
    };
    serde_json::json!({
        "metadata": chart.metadata,
        "lock": null,
        "templates": files(&chart.templates),
        "values": chart.values,
        "schema": null,
        "files": files(&chart.files),
    })
}

/// The release's name of a Secret holding revision `version` of `name`.
pub fn secret_name(name: &str, version: i64) -> String {
    format!("sh.helm.release.v1.{name}.v{version}")
}

/// `encodeRelease`: JSON, gzip at best compression, base64.
pub fn encode(release: &Release) -> String {
    let json = serde_json::to_vec(release).unwrap_or_default();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let _ = gz.write_all(&json);
    let bytes = gz.finish().unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `decodeRelease`: base64, then gunzip when gzipped, then JSON.
pub fn decode(data: &str) -> Result<Release, ReleaseError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim())?;
    let json = if bytes.starts_with(&[0x1f, 0x8b, 0x08]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes.as_slice()).read_to_end(&mut out)?;
        out
    } else {
        bytes
    };
    Ok(serde_json::from_slice(&json)?)
}

/// The Secret storing `release` (in the release's namespace), as a Kubernetes object.
pub fn to_secret(release: &Release) -> Json {
    let status = release.info.as_ref().map(|i| i.status.clone()).unwrap_or_default();
    let labels: BTreeMap<String, String> = [
        ("name", release.name.clone()),
        ("owner", "helm".to_string()),
        ("status", status),
        ("version", release.version.to_string()),
        ("modifiedAt", modified_at(release).to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    // `data` holds the bytes (base64 on the wire); Helm's bytes are already the base64 text of the gzip.
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(secret_name(&release.name, release.version)),
            namespace: Some(release.namespace.clone()),
            labels: Some(labels),
            ..Default::default()
        },
        type_: Some(SECRET_TYPE.into()),
        data: Some([("release".to_string(), ByteString(encode(release).into_bytes()))].into()),
        ..Default::default()
    };
    serde_json::to_value(secret).unwrap_or_default()
}

/// Helm's `modifiedAt` label: when the release was last written — its last deployment, so that writing
/// an unchanged release again changes nothing.
fn modified_at(release: &Release) -> i64 {
    release
        .info
        .as_ref()
        .and_then(|i| chrono::DateTime::parse_from_rfc3339(&i.last_deployed).ok())
        .map(|t| t.timestamp())
        .unwrap_or(0)
}

/// The release a Secret stores (a Helm 3 release Secret as the API server serves it).
pub fn from_secret(secret: &Json) -> Result<Release, ReleaseError> {
    let data = secret.pointer("/data/release").and_then(Json::as_str).ok_or(ReleaseError::Missing)?;
    let inner = base64::engine::general_purpose::STANDARD.decode(data)?;
    decode(&String::from_utf8_lossy(&inner))
}

/// Whether a Secret is a Helm 3 release of `name`.
pub fn is_release_of(secret: &Json, name: &str) -> bool {
    secret.get("type").and_then(Json::as_str) == Some(SECRET_TYPE)
        && secret.pointer("/metadata/labels/owner").and_then(Json::as_str) == Some("helm")
        && secret.pointer("/metadata/labels/name").and_then(Json::as_str) == Some(name)
}

/// Go's `time.Now()` in JSON (RFC 3339 with nanoseconds, UTC).
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release() -> Release {
        Release {
            name: "web".into(),
            info: Some(Info {
                first_deployed: "2026-11-28T10:00:00.000000001Z".into(),
                last_deployed: "2026-11-28T10:00:00.000000001Z".into(),
                deleted: ZERO_TIME.into(),
                description: "Install complete".into(),
                status: status::DEPLOYED.into(),
                notes: String::new(),
            }),
            chart: serde_json::json!({"metadata": {"name": "nginx", "version": "0.1.0"}}),
            config: serde_json::json!({"replicaCount": 2}),
            manifest: "---\n# Source: nginx/templates/service.yaml\nkind: Service\n".into(),
            hooks: Vec::new(),
            version: 1,
            namespace: "default".into(),
        }
    }

    #[test]
    fn secrets_round_trip_in_helms_layout() {
        let r = release();
        let secret = to_secret(&r);
        assert_eq!(secret["metadata"]["name"], "sh.helm.release.v1.web.v1");
        assert_eq!(secret["type"], SECRET_TYPE);
        let labels = &secret["metadata"]["labels"];
        assert_eq!(
            (&labels["name"], &labels["owner"], &labels["status"], &labels["version"]),
            (&"web".into(), &"helm".into(), &"deployed".into(), &"1".into())
        );
        assert!(labels["modifiedAt"].as_str().is_some_and(|t| t.parse::<i64>().is_ok()), "Helm 3.17 stamps the change");
        assert!(is_release_of(&secret, "web") && !is_release_of(&secret, "other"));
        assert_eq!(from_secret(&secret).unwrap(), r);
    }

    #[test]
    fn the_stored_bytes_are_base64_of_gzip_of_json() {
        let text = encode(&release());
        let gz = base64::engine::general_purpose::STANDARD.decode(&text).unwrap();
        assert_eq!(&gz[..3], &[0x1f, 0x8b, 0x08]);
        let json: Json = {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(gz.as_slice()).read_to_end(&mut out).unwrap();
            serde_json::from_slice(&out).unwrap()
        };
        assert_eq!(json["info"]["deleted"], "", "Helm writes the zero time as \"\", not omits it");
        assert_eq!(json["version"], 1);
        let plain = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&release()).unwrap());
        assert_eq!(decode(&plain).unwrap(), release(), "uncompressed releases (Helm 3.0) read too");
    }

    #[test]
    fn a_release_helm_wrote_reads_and_its_manifest_is_what_uc_renders() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
        let secret: Json =
            serde_json::from_str(&std::fs::read_to_string(dir.join("helm-release-secret.json")).unwrap()).unwrap();
        let r = from_secret(&secret).unwrap();
        assert_eq!((r.name.as_str(), r.version, r.namespace.as_str()), ("r1", 1, "default"));
        assert_eq!(r.info.as_ref().unwrap().status, status::DEPLOYED);
        assert_eq!(r.chart["metadata"]["name"], "nginx");
        let chart = Chart::load_dir(&dir.join("helm-create/nginx")).unwrap();
        let options = crate::Options {
            release: crate::Release { name: "r1".into(), ..Default::default() },
            ..Default::default()
        };
        let ours = crate::manifest(&chart, &crate::gotemplate::Value::Nil, &options).unwrap();
        assert_eq!(ours.manifest, r.manifest);
        assert_eq!(ours.hooks.len(), r.hooks.len());
    }

    #[test]
    fn a_release_helm_wrote_is_written_back_field_for_field() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
        let secret: Json =
            serde_json::from_str(&std::fs::read_to_string(dir.join("helm-release-secret.json")).unwrap()).unwrap();
        let data = secret["data"]["release"].as_str().unwrap();
        let gz = base64::engine::general_purpose::STANDARD
            .decode(base64::engine::general_purpose::STANDARD.decode(data).unwrap())
            .unwrap();
        let mut helms = Vec::new();
        flate2::read::GzDecoder::new(gz.as_slice()).read_to_end(&mut helms).unwrap();
        let helms: Json = serde_json::from_slice(&helms).unwrap();
        let r = from_secret(&secret).unwrap();
        assert_eq!(r.hooks[0].events, ["test"]);
        assert_eq!(serde_json::to_value(&r).unwrap(), helms, "the hooks' never-run last_run and deleted: \"\" too");
    }
}
