//! OLM's older catalog layout in a ConfigMap (the configmap registry, `sourceType: configmap` before
//! file-based catalogs): three keys, each a YAML list — `packages` (package manifests: `packageName`,
//! `channels` with `currentCSV`, `defaultChannel`), `clusterServiceVersions` and
//! `customResourceDefinitions`. Each CSV a channel reaches (from its current CSV back along `replaces`)
//! becomes a bundle with the CRDs it owns; CSVs no channel reaches are not served, as OLM's registry
//! serves none of them either.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::bundle::{PackageManifestFile, bundle_from_objects, package_blobs, package_of};
use crate::csv::Csv;
use crate::fbc::{Blob, CatalogError};

/// The keys of the layout.
pub const KEYS: [&str; 3] = ["packages", "clusterServiceVersions", "customResourceDefinitions"];

/// Whether a ConfigMap's data is in this layout (it has the `packages` key).
pub fn is_registry(data: &BTreeMap<String, String>) -> bool {
    data.contains_key("packages")
}

/// The FBC blobs of a ConfigMap in this layout; an error names the key and what does not read.
pub fn blobs(data: &BTreeMap<String, String>) -> Result<Vec<Blob>, CatalogError> {
    let list = |key: &str| -> Result<Vec<Value>, CatalogError> {
        match data.get(key) {
            None => Ok(Vec::new()),
            Some(text) => {
                let v: Value = serde_yaml_ng::from_str(text).map_err(|e| CatalogError::at(format!("key {key}"), e))?;
                match v {
                    Value::Array(items) => Ok(items),
                    Value::Null => Ok(Vec::new()),
                    _ => Err(CatalogError::at(format!("key {key}"), "a YAML list is expected")),
                }
            }
        }
    };
    let (packages, csvs, crds) = (list(KEYS[0])?, list(KEYS[1])?, list(KEYS[2])?);
    // Each CSV as it is written (a bundle keeps it whole) and as it reads (one that does not read is
    // reported when a channel reaches it, by the bundle it would make).
    let by_name: BTreeMap<String, (&Value, Csv)> =
        csvs.iter().filter_map(|c| Csv::deserialize(c).ok().map(|csv| (csv.name().to_string(), (c, csv)))).collect();
    let mut out = Vec::new();
    for manifest in &packages {
        let manifest = PackageManifestFile::read(manifest, "key packages")?;
        let package = manifest.package_name.as_str();
        let mut bundles = BTreeMap::new();
        for channel in &manifest.channels {
            let mut current = Some(channel.current_csv.clone()).filter(|c| !c.is_empty());
            while let Some(name) = current.take() {
                let Some((written, csv)) = by_name.get(&name) else { break };
                if bundles.contains_key(&name) {
                    break;
                }
                current = csv.spec.replaces.clone();
                let mut objects = vec![(*written).clone()];
                objects.extend(owned_crds(csv, &crds));
                let bundle =
                    bundle_from_objects(package, objects).map_err(|e| e.within("key clusterServiceVersions"))?;
                bundles.insert(name, bundle);
            }
        }
        out.extend(package_blobs(&package_of(&manifest, bundles)));
    }
    Ok(out)
}

/// The CRDs a CSV owns, by the names in `spec.customresourcedefinitions.owned` (kept as written).
fn owned_crds(csv: &Csv, crds: &[Value]) -> Vec<Value> {
    let owned: Vec<&str> =
        csv.spec.customresourcedefinitions.iter().flat_map(|d| &d.owned).map(|o| o.name.as_str()).collect();
    let name = |c| uc_api::meta::meta_str(c, "name");
    crds.iter().filter(|c| owned.contains(&name(c))).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fbc::Catalog;

    const PACKAGES: &str = "- packageName: memcached\n  channels:\n  - name: alpha\n    currentCSV: memcached.v0.0.2\n  defaultChannel: alpha\n";
    const CSVS: &str = "- apiVersion: operators.coreos.com/v1alpha1\n  kind: ClusterServiceVersion\n  metadata: {name: memcached.v0.0.1}\n  spec:\n    version: 0.0.1\n    customresourcedefinitions: {owned: [{name: memcacheds.cache.example.com, version: v1alpha1, kind: Memcached}]}\n- apiVersion: operators.coreos.com/v1alpha1\n  kind: ClusterServiceVersion\n  metadata: {name: memcached.v0.0.2}\n  spec:\n    version: 0.0.2\n    replaces: memcached.v0.0.1\n    customresourcedefinitions: {owned: [{name: memcacheds.cache.example.com, version: v1alpha1, kind: Memcached}]}\n- apiVersion: operators.coreos.com/v1alpha1\n  kind: ClusterServiceVersion\n  metadata: {name: stray.v1}\n  spec: {version: 1.0.0}\n";
    const CRDS: &str = "- apiVersion: apiextensions.k8s.io/v1\n  kind: CustomResourceDefinition\n  metadata: {name: memcacheds.cache.example.com}\n  spec: {group: cache.example.com, names: {kind: Memcached, plural: memcacheds}, scope: Namespaced, versions: [{name: v1alpha1, served: true, storage: true}]}\n";

    #[test]
    fn olms_configmap_registry_layout_is_read_into_a_catalog() {
        let data: BTreeMap<String, String> =
            [("packages", PACKAGES), ("clusterServiceVersions", CSVS), ("customResourceDefinitions", CRDS)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        assert!(is_registry(&data));
        let catalog = Catalog::of(blobs(&data).unwrap().iter()).unwrap();
        let package = &catalog.packages["memcached"];
        let entries: Vec<&str> = package.channels["alpha"].entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(entries, ["memcached.v0.0.1", "memcached.v0.0.2"], "the channel back along replaces");
        assert!(!package.bundles.contains_key("stray.v1"), "a CSV no channel reaches is not served");
        let kinds: Vec<&str> =
            package.bundles["memcached.v0.0.2"].objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(kinds, ["ClusterServiceVersion", "CustomResourceDefinition"], "with the CRDs it owns");
        let mut bad = data.clone();
        bad.insert("packages".into(), "packageName: not-a-list".into());
        assert!(blobs(&bad).unwrap_err().to_string().contains("key packages"));
        bad.insert("packages".into(), "- packageName: memcached\n  channels: 3\n".into());
        let error = blobs(&bad).unwrap_err().to_string();
        assert!(error.contains("key packages") && error.contains("channels"), "{error}");
        bad.insert("packages".into(), "- channels: []\n".into());
        assert!(blobs(&bad).unwrap_err().to_string().contains("no packageName"));
    }
}
