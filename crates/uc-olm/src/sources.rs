//! CatalogSources: where a catalog's contents come from, and reading them. uc reads file-based catalogs
//! (and bundle or package-manifest directories) — from a ConfigMap (`sourceType: configmap`, every key
//! a file), from a directory (`spec.address: file:///path`), over HTTP (`spec.address: http(s)://...`,
//! one document of blobs) or built into uc (`spec.address: builtin://<name>`). A gRPC registry (an
//! image, or a `host:port` address) is not something uc can run: the source reports why.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use serde::{Deserialize, Serialize};

use crate::fbc::{Catalog, CatalogError, parse_blobs, read_blob};

/// A CatalogSource (`operators.coreos.com/v1alpha1`), the fields uc acts on.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct CatalogSource {
    #[serde(rename = "apiVersion", skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: CatalogSourceSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<CatalogSourceStatus>,
}

/// Where a CatalogSource's catalog is, and how it is shown.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CatalogSourceSpec {
    /// `grpc`, `configmap` (or `internal`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub source_type: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub config_map: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub address: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub image: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub publisher: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub priority: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// Whether uc could read the catalog (`READY`, `TRANSIENT_FAILURE`), as OLM reports a registry's
/// connection.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CatalogSourceStatus {
    pub connection_state: ConnectionState,
    pub message: String,
    pub reason: String,
}

/// `status.connectionState`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ConnectionState {
    pub address: String,
    pub last_observed_state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_connect: Option<String>,
}

impl CatalogSource {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace(), self.name())
    }

    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    pub fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or_default()
    }
}

/// How often a catalog read from a directory or over HTTP is read again.
const REFRESH: Duration = Duration::from_secs(30);

/// Where a CatalogSource's catalog is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A ConfigMap in the source's namespace.
    ConfigMap(String),
    /// A directory on the machine that runs uc.
    Directory(PathBuf),
    /// A URL serving FBC blobs.
    Http(String),
    /// A catalog built into uc.
    Builtin(String),
}

/// Where a CatalogSource's catalog is, or why uc cannot read it.
pub fn origin(source: &CatalogSource) -> Result<Origin, CatalogError> {
    let address = source.spec.address.as_str();
    match source.spec.source_type.as_str() {
        "configmap" | "internal" => {
            let name = source.spec.config_map.as_str();
            if name.is_empty() {
                return Err(CatalogError::at("spec.configMap", "a configmap source names its ConfigMap"));
            }
            Ok(Origin::ConfigMap(name.to_string()))
        }
        _ if address.starts_with("file://") => Ok(Origin::Directory(PathBuf::from(&address["file://".len()..]))),
        _ if address.starts_with("http://") || address.starts_with("https://") => Ok(Origin::Http(address.to_string())),
        _ if address.starts_with("builtin://") => Ok(Origin::Builtin(address["builtin://".len()..].to_string())),
        _ => Err(CatalogError::at(
            "spec",
            format!(
                "uc reads catalogs from a ConfigMap (sourceType: configmap), a directory (address: file:///path), HTTP (address: http(s)://...) or one built in (address: builtin://name); {} is not one",
                if address.is_empty() { "a registry image".to_string() } else { format!("address {address:?}") }
            ),
        )),
    }
}

/// A catalog read, and what it was read from (a ConfigMap's resourceVersion, or when).
struct Loaded {
    catalog: Arc<Catalog>,
    version: String,
    at: Instant,
}

/// A catalog built into uc, made the first time it is read: making one renders its bundles (their CRDs'
/// schemas among them), work a `uc up` whose catalog nobody reads need not do.
pub struct Builtin {
    make: fn() -> Catalog,
    made: std::sync::OnceLock<Arc<Catalog>>,
}

impl Builtin {
    /// The catalog `make` makes, not made yet.
    pub fn new(make: fn() -> Catalog) -> Builtin {
        Builtin { make, made: std::sync::OnceLock::new() }
    }

    /// The catalog, made on the first call.
    pub fn get(&self) -> Arc<Catalog> {
        self.made.get_or_init(|| Arc::new((self.make)())).clone()
    }
}

/// Every CatalogSource's catalog, read when it changed (or, from a directory or URL, every 30 s).
#[derive(Default)]
pub struct Sources {
    /// Catalogs built into uc, by name.
    pub builtin: BTreeMap<String, Arc<Builtin>>,
    cache: HashMap<String, Loaded>,
}

impl Sources {
    /// The catalog of a CatalogSource.
    pub async fn load(
        &mut self,
        client: &kube::Client,
        resolver: &uc_engine::names::Resolver,
        source: &CatalogSource,
    ) -> Result<Arc<Catalog>, CatalogError> {
        let key = source.key();
        let origin = origin(source)?;
        let version = match &origin {
            Origin::ConfigMap(name) => {
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), source.namespace());
                let cm = api
                    .get(name)
                    .await
                    .map_err(|e| CatalogError::at(format!("configMap {name}"), uc_engine::dynamic::api_error(&e)))?;
                let version = cm.metadata.resource_version.clone().unwrap_or_default();
                if let Some(l) = self.cache.get(&key).filter(|l| l.version == version) {
                    return Ok(l.catalog.clone());
                }
                let data = cm.data.unwrap_or_default();
                let blobs = if crate::configmap_registry::is_registry(&data) {
                    crate::configmap_registry::blobs(&data).map_err(|e| e.within(format!("configMap {name}")))?
                } else {
                    let mut blobs = Vec::new();
                    for (k, text) in data {
                        let at = || format!("configMap {name} key {k}");
                        for v in parse_blobs(&text).map_err(|e| e.within(at()))? {
                            blobs.extend(read_blob(&v).map_err(|e| e.within(at()))?);
                        }
                    }
                    blobs
                };
                return self.keep(key, version, Catalog::of(blobs.iter())?);
            }
            Origin::Builtin(name) => {
                let missing = || CatalogError::at("spec.address", format!("uc has no built-in catalog {name:?}"));
                return self.builtin.get(name).map(|b| b.get()).ok_or_else(missing);
            }
            Origin::Directory(p) => p.display().to_string(),
            Origin::Http(url) => url.clone(),
        };
        if let Some(l) = self.cache.get(&key).filter(|l| l.version == version && l.at.elapsed() < REFRESH) {
            return Ok(l.catalog.clone());
        }
        let catalog = match &origin {
            Origin::Directory(p) => crate::bundle::read_catalog_dir(p)?,
            _ => {
                let body = uc_engine::hooks::webhook::fetch(&version, resolver.clone(), None, Duration::from_secs(30))
                    .await
                    .map_err(|e| CatalogError::at(&version, e))?;
                let text = String::from_utf8(body.to_vec()).map_err(|e| CatalogError::at(&version, e))?;
                Catalog::from_blobs(&parse_blobs(&text).map_err(|e| e.within(&version))?)?
            }
        };
        self.keep(key, version, catalog)
    }

    fn keep(&mut self, key: String, version: String, catalog: Catalog) -> Result<Arc<Catalog>, CatalogError> {
        let catalog = Arc::new(catalog);
        self.cache.insert(key, Loaded { catalog: catalog.clone(), version, at: Instant::now() });
        Ok(catalog)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn where_catalogs_come_from() {
        let src = |spec: serde_json::Value| -> CatalogSource {
            serde_json::from_value(json!({"metadata": {"name": "c", "namespace": "olm"}, "spec": spec})).unwrap()
        };
        assert_eq!(
            origin(&src(json!({"sourceType": "configmap", "configMap": "cat"}))),
            Ok(Origin::ConfigMap("cat".into()))
        );
        assert_eq!(
            origin(&src(json!({"sourceType": "grpc", "address": "file:///srv/catalog"}))),
            Ok(Origin::Directory("/srv/catalog".into()))
        );
        assert_eq!(
            origin(&src(json!({"address": "http://cat.olm/index.yaml"}))),
            Ok(Origin::Http("http://cat.olm/index.yaml".into()))
        );
        assert_eq!(
            origin(&src(json!({"address": "builtin://uc-operators"}))),
            Ok(Origin::Builtin("uc-operators".into()))
        );
        let e =
            origin(&src(json!({"sourceType": "grpc", "image": "quay.io/operatorhubio/catalog:latest"}))).unwrap_err();
        assert!(e.to_string().contains("a registry image"), "{e}");
        assert!(origin(&src(json!({"sourceType": "configmap"}))).unwrap_err().to_string().contains("spec.configMap"));
    }
}
