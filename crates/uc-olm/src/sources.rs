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
use kube::api::Api;
use serde_json::Value;

use crate::fbc::{Catalog, CatalogError, parse_blobs};
use uc_api::meta::str_at;

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
pub fn origin(source: &Value) -> Result<Origin, CatalogError> {
    let address = str_at(source, "/spec/address");
    match str_at(source, "/spec/sourceType") {
        "configmap" | "internal" => {
            let name = str_at(source, "/spec/configMap");
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

/// Every CatalogSource's catalog, read when it changed (or, from a directory or URL, every 30 s).
#[derive(Default)]
pub struct Sources {
    /// Catalogs built into uc, by name.
    pub builtin: BTreeMap<String, Arc<Catalog>>,
    cache: HashMap<String, Loaded>,
}

impl Sources {
    /// The catalog of a CatalogSource.
    pub async fn load(
        &mut self,
        client: &kube::Client,
        resolver: &uc_engine::names::Resolver,
        source: &Value,
    ) -> Result<Arc<Catalog>, CatalogError> {
        let key = format!("{}/{}", str_at(source, "/metadata/namespace"), str_at(source, "/metadata/name"));
        let origin = origin(source)?;
        let version = match &origin {
            Origin::ConfigMap(name) => {
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), str_at(source, "/metadata/namespace"));
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
                        blobs.extend(parse_blobs(&text).map_err(|e| e.within(format!("configMap {name} key {k}")))?);
                    }
                    blobs
                };
                return self.keep(key, version, Catalog::from_blobs(&blobs)?);
            }
            Origin::Builtin(name) => {
                let missing = || CatalogError::at("spec.address", format!("uc has no built-in catalog {name:?}"));
                return self.builtin.get(name).cloned().ok_or_else(missing);
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
        let src = |spec: Value| json!({"metadata": {"name": "c", "namespace": "olm"}, "spec": spec});
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
