//! PackageManifests (`packages.operators.coreos.com/v1`): what a catalog offers, one object per package,
//! for `kubectl get packagemanifests` and consoles. OLM's package server serves them as an aggregated
//! API; uc keeps them as objects of a CRD of the same group, kind and status, in the catalog's
//! namespace, written by the lifecycle manager (they are read-only in spirit: the next pass restores them).

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{CustomResourceDefinition, JSONSchemaProps};
use serde_json::{Value, json};

use crate::csv::Csv;
use crate::fbc::Package;
use crate::graph;
use crate::sources::CatalogSource;

/// `packages.operators.coreos.com/v1`.
pub const API_VERSION: &str = "packages.operators.coreos.com/v1";
/// The label naming a PackageManifest's CatalogSource.
pub const CATALOG_LABEL: &str = "catalog";
/// The label naming its namespace.
pub const CATALOG_NAMESPACE_LABEL: &str = "catalog-namespace";

/// The CRD uc serves PackageManifests from (no status subresource: the manager writes each object whole).
pub fn crd() -> CustomResourceDefinition {
    use uc_api::crds::{column, crd, names, served_version};
    let open = || JSONSchemaProps {
        type_: Some("object".into()),
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..Default::default()
    };
    let schema = JSONSchemaProps {
        description: Some(
            "What a catalog offers of one package: its channels and their current CSVs (written by uc's lifecycle manager)."
                .into(),
        ),
        type_: Some("object".into()),
        properties: Some(BTreeMap::from([("spec".to_string(), open()), ("status".to_string(), open())])),
        ..Default::default()
    };
    let mut version = served_version("v1", schema);
    version.additional_printer_columns = Some(vec![
        column("Catalog", "string", ".status.catalogSourceDisplayName"),
        column("Age", "date", ".metadata.creationTimestamp"),
    ]);
    crd("packages.operators.coreos.com", names("PackageManifest", "packagemanifests"), "Namespaced", version)
}

/// The description of a channel's current CSV, as OLM's package server gives it.
fn csv_description(pkg: &Package, bundle: &str) -> Value {
    let Some(b) = pkg.bundles.get(bundle) else { return json!({}) };
    let Some(csv_obj) =
        b.objects.iter().find(|o| o.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion"))
    else {
        return json!({"version": b.version.to_string()});
    };
    let spec = csv_obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let csv = Csv::from_value(csv_obj).unwrap_or_default();
    let pick = |k: &str| spec.get(k).cloned().unwrap_or(Value::Null);
    json!({
        "displayName": pick("displayName"), "description": pick("description"), "version": b.version.to_string(),
        "provider": pick("provider"), "installModes": pick("installModes"), "keywords": pick("keywords"),
        "links": pick("links"), "maintainers": pick("maintainers"), "maturity": pick("maturity"), "icon": pick("icon"),
        "customresourcedefinitions": pick("customresourcedefinitions"),
        "annotations": csv.metadata.annotations.unwrap_or_default(),
    })
}

/// The PackageManifest of `pkg` from the CatalogSource `source`.
pub fn manifest(source: &CatalogSource, pkg: &Package) -> Value {
    let (ns, name) = (source.namespace(), source.name());
    let display = Some(source.spec.display_name.as_str()).filter(|d| !d.is_empty()).unwrap_or(name);
    let channels: Vec<Value> = pkg
        .channels
        .values()
        .filter_map(|ch| {
            let head = graph::head(ch)?;
            // Every version the channel offers, newest first (OLM's `entries`).
            let mut entries: Vec<(&crate::versions::Version, &str)> = ch
                .entries
                .iter()
                .filter_map(|e| pkg.bundles.get(&e.name).map(|b| (&b.version, e.name.as_str())))
                .collect();
            entries.sort_by(|a, b| b.0.cmp(a.0));
            let entries: Vec<Value> =
                entries.iter().map(|(v, n)| json!({"name": n, "version": v.to_string()})).collect();
            Some(json!({"name": ch.name, "currentCSV": head.name, "currentCSVDesc": csv_description(pkg, &head.name),
                        "entries": entries}))
        })
        .collect();
    let provider = pkg
        .channels
        .get(&pkg.default_channel)
        .and_then(graph::head)
        .map(|h| csv_description(pkg, &h.name)["provider"].clone())
        .unwrap_or(Value::Null);
    json!({
        "apiVersion": API_VERSION, "kind": "PackageManifest",
        "metadata": {"name": pkg.name, "namespace": ns,
                     "labels": {CATALOG_LABEL: name, CATALOG_NAMESPACE_LABEL: ns,
                                "provider": provider.get("name").and_then(Value::as_str).unwrap_or_default()}},
        "spec": {},
        "status": {
            "catalogSource": name, "catalogSourceNamespace": ns, "catalogSourceDisplayName": display,
            "catalogSourcePublisher": source.spec.publisher, "packageName": pkg.name,
            "defaultChannel": pkg.default_channel, "provider": provider, "channels": channels,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fbc::{Catalog, parse_blobs};

    #[test]
    fn a_package_manifest_shows_channels_and_their_current_csvs() {
        let catalog =
            Catalog::from_blobs(&parse_blobs(include_str!("../testdata/example-foo-index.yaml")).unwrap()).unwrap();
        let source: CatalogSource = serde_json::from_value(
            json!({"metadata": {"name": "test", "namespace": "olm"}, "spec": {"displayName": "Test", "publisher": "me"}}),
        )
        .unwrap();
        let m = manifest(&source, &catalog.packages["foo"]);
        assert_eq!((m["metadata"]["name"].clone(), m["metadata"]["namespace"].clone()), (json!("foo"), json!("olm")));
        assert_eq!(m["metadata"]["labels"][CATALOG_LABEL], "test");
        assert_eq!(m["status"]["defaultChannel"], "beta");
        let beta = m["status"]["channels"].as_array().unwrap().iter().find(|c| c["name"] == "beta").unwrap();
        assert_eq!(beta["currentCSV"], "foo.v0.2.0");
        assert_eq!(beta["currentCSVDesc"]["version"], "0.2.0");
        let versions: Vec<&str> =
            beta["entries"].as_array().unwrap().iter().map(|e| e["version"].as_str().unwrap()).collect();
        assert_eq!(versions.first(), Some(&"0.2.0"), "newest first: {versions:?}");
        assert!(versions.len() >= 2, "{versions:?}");
        assert_eq!(m["status"]["catalogSourceDisplayName"], "Test");
        assert_eq!(crd().spec.names.kind, "PackageManifest");
    }
}
