//! PackageManifests (`packages.operators.coreos.com/v1`): what a catalog offers, one object per package,
//! for `kubectl get packagemanifests` and consoles. OLM's package server serves them as an aggregated
//! API; uc keeps them as objects of a CRD of the same group, kind and status, in the catalog's
//! namespace, written by the lifecycle manager (they are read-only in spirit: the next pass restores them).

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{CustomResourceDefinition, JSONSchemaProps};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

use crate::csv::{Csv, InstallMode, Link, Maintainer};
use crate::fbc::{Icon, Package};
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

/// A PackageManifest as OLM's package server gives it (written, never read back).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageManifest {
    api_version: &'static str,
    kind: &'static str,
    metadata: ObjectMeta,
    spec: BTreeMap<String, String>,
    status: PackageManifestStatus,
}

/// What a catalog offers of the package.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PackageManifestStatus {
    catalog_source: String,
    catalog_source_namespace: String,
    catalog_source_display_name: String,
    catalog_source_publisher: String,
    package_name: String,
    default_channel: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<Link>,
    channels: Vec<ManifestChannel>,
}

/// A channel: its current CSV, described, and every version it offers, newest first.
#[derive(Clone, Debug, Serialize)]
struct ManifestChannel {
    name: String,
    #[serde(rename = "currentCSV")]
    current_csv: String,
    #[serde(rename = "currentCSVDesc")]
    current_csv_desc: CsvDescription,
    entries: Vec<ChannelEntry>,
}

/// A version a channel offers.
#[derive(Clone, Debug, Serialize)]
struct ChannelEntry {
    name: String,
    version: String,
}

/// The description of a channel's current CSV (OLM's `CSVDescription`).
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct CsvDescription {
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<Link>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    install_modes: Vec<InstallMode>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    keywords: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    links: Vec<Link>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    maintainers: Vec<Maintainer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    maturity: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    icon: Vec<Icon>,
    /// As the CSV writes it (with its descriptors, which consoles show).
    #[serde(skip_serializing_if = "Option::is_none")]
    customresourcedefinitions: Option<Value>,
    annotations: BTreeMap<String, String>,
}

/// The description of a channel's current CSV, as OLM's package server gives it.
fn csv_description(pkg: &Package, bundle: &str) -> CsvDescription {
    let Some(b) = pkg.bundles.get(bundle) else { return CsvDescription::default() };
    let version = b.version.to_string();
    let Some(written) =
        b.objects.iter().find(|o| o.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion"))
    else {
        return CsvDescription { version, ..Default::default() };
    };
    let csv = Csv::from_value(written).unwrap_or_default();
    let spec = csv.spec;
    CsvDescription {
        display_name: spec.display_name,
        description: spec.description,
        version,
        provider: spec.provider,
        install_modes: spec.install_modes,
        keywords: spec.keywords,
        links: spec.links,
        maintainers: spec.maintainers,
        maturity: spec.maturity,
        icon: spec.icon,
        customresourcedefinitions: written.get("spec").and_then(|s| s.get("customresourcedefinitions")).cloned(),
        annotations: csv.metadata.annotations.unwrap_or_default(),
    }
}

/// A channel as the manifest shows it, once it has a head.
fn channel(pkg: &Package, ch: &crate::fbc::Channel) -> Option<ManifestChannel> {
    let head = graph::head(ch)?;
    // Every version the channel offers, newest first (OLM's `entries`).
    let mut entries: Vec<(&crate::versions::Version, &str)> =
        ch.entries.iter().filter_map(|e| pkg.bundles.get(&e.name).map(|b| (&b.version, e.name.as_str()))).collect();
    entries.sort_by(|a, b| b.0.cmp(a.0));
    Some(ManifestChannel {
        name: ch.name.clone(),
        current_csv: head.name.clone(),
        current_csv_desc: csv_description(pkg, &head.name),
        entries: entries.iter().map(|(v, n)| ChannelEntry { name: n.to_string(), version: v.to_string() }).collect(),
    })
}

/// The PackageManifest of `pkg` from the CatalogSource `source`.
pub fn manifest(source: &CatalogSource, pkg: &Package) -> PackageManifest {
    let (ns, name) = (source.namespace(), source.name());
    let display = Some(source.spec.display_name.as_str()).filter(|d| !d.is_empty()).unwrap_or(name);
    let provider = pkg
        .channels
        .get(&pkg.default_channel)
        .and_then(graph::head)
        .and_then(|h| csv_description(pkg, &h.name).provider);
    let provider_name = provider.as_ref().map(|p| p.name.as_str()).unwrap_or_default();
    let labels = [(CATALOG_LABEL, name), (CATALOG_NAMESPACE_LABEL, ns), ("provider", provider_name)];
    let metadata = ObjectMeta {
        name: Some(pkg.name.clone()),
        namespace: Some(ns.into()),
        labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        ..Default::default()
    };
    let status = PackageManifestStatus {
        catalog_source: name.into(),
        catalog_source_namespace: ns.into(),
        catalog_source_display_name: display.into(),
        catalog_source_publisher: source.spec.publisher.clone(),
        package_name: pkg.name.clone(),
        default_channel: pkg.default_channel.clone(),
        provider,
        channels: pkg.channels.values().filter_map(|ch| channel(pkg, ch)).collect(),
    };
    PackageManifest { api_version: API_VERSION, kind: "PackageManifest", metadata, spec: BTreeMap::new(), status }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
        let m = uc_api::meta::json_of(&manifest(&source, &catalog.packages["foo"]));
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
