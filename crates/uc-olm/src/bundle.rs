//! Bundles on disk, in OLM's two layouts, read into catalog packages:
//! - a **bundle** directory: `manifests/` (the CSV, CRDs, other objects) and `metadata/annotations.yaml`
//!   (`operators.operatorframework.io.bundle.package.v1`, `.channels.v1`, `.channel.default.v1`);
//! - the older **package manifest** layout: `<package>.package.yaml` (`packageName`, `channels [{name,
//!   currentCSV}]`, `defaultChannel`) beside one folder per version holding its CSV and CRDs.
//!
//! A bundle's properties come from its CSV as `opm` derives them: `olm.package` (name and version),
//! `olm.gvk` for each owned CRD, `olm.gvk.required` for each required one; its manifests travel with it.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

use crate::csv::Csv;
use crate::fbc::{
    Blob, Bundle, BundleBlob, Catalog, CatalogError, Channel, ChannelBlob, Entry, Package, PackageBlob, Property,
    parse_blobs, read_blob,
};
use crate::versions::parse_version;

/// Annotation keys of `metadata/annotations.yaml`.
pub const PACKAGE_ANNOTATION: &str = "operators.operatorframework.io.bundle.package.v1";
/// See [`PACKAGE_ANNOTATION`].
pub const CHANNELS_ANNOTATION: &str = "operators.operatorframework.io.bundle.channels.v1";
/// See [`PACKAGE_ANNOTATION`].
pub const DEFAULT_CHANNEL_ANNOTATION: &str = "operators.operatorframework.io.bundle.channel.default.v1";

/// Every object in the YAML/JSON files of a directory (not its subdirectories), by file name.
pub fn read_objects(dir: &Path) -> Result<Vec<Value>, CatalogError> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| CatalogError::at(dir.display(), e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && matches!(p.extension().and_then(|x| x.to_str()), Some("yaml" | "yml" | "json")))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| CatalogError::at(f.display(), e))?;
        out.extend(parse_blobs(&text).map_err(|e| e.within(f.display()))?);
    }
    Ok(out)
}

/// A bundle from its manifests: the one CSV among them gives its name, version and APIs.
pub fn bundle_from_objects(package: &str, objects: Vec<Value>) -> Result<Bundle, CatalogError> {
    let csvs: Vec<&Value> =
        objects.iter().filter(|o| o.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion")).collect();
    let [csv] = csvs.as_slice() else {
        let message = format!("a bundle has exactly one ClusterServiceVersion; found {}", csvs.len());
        return Err(CatalogError::at(package, message));
    };
    let csv = Csv::from_value(csv).map_err(|e| CatalogError::at(package, e))?;
    let name = csv.name().to_string();
    let version = csv.spec.version.as_deref().ok_or_else(|| CatalogError::at(&name, "spec.version is missing"))?;
    let version = parse_version(version).map_err(|e| CatalogError::at(&name, format!("spec.version: {e}")))?;
    Ok(Bundle {
        name,
        package: package.to_string(),
        version,
        image: String::new(),
        provides: csv.owned(),
        requires: csv.required(),
        requires_packages: Vec::new(),
        objects,
        csv_metadata: None,
    })
}

/// The channel entry of a bundle, from its CSV's `replaces`, `skips` and `olm.skipRange`.
pub fn entry_of(bundle: &Bundle) -> Entry {
    let csv = bundle.objects.iter().find_map(|o| Csv::from_value(o).ok()).unwrap_or_default();
    Entry {
        name: bundle.name.clone(),
        replaces: csv.spec.replaces.clone(),
        skips: csv.spec.skips.clone(),
        skip_range: csv.skip_range().map(str::to_string),
    }
}

/// `metadata/annotations.yaml` of a bundle directory.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct AnnotationsFile {
    annotations: Option<BTreeMap<String, String>>,
}

/// A bundle directory: its package name, channels, default channel, and the bundle.
pub fn read_bundle_dir(dir: &Path) -> Result<(Bundle, Vec<String>, Option<String>), CatalogError> {
    let annotations = read_objects(&dir.join("metadata"))?
        .iter()
        .find_map(|d| AnnotationsFile::deserialize(d).ok().and_then(|f| f.annotations))
        .ok_or_else(|| CatalogError::at(dir.display(), "metadata/annotations.yaml has no annotations"))?;
    let get = |k: &str| annotations.get(k).cloned();
    let package =
        get(PACKAGE_ANNOTATION).ok_or_else(|| CatalogError::at(dir.display(), format!("no {PACKAGE_ANNOTATION}")))?;
    let channels: Vec<String> = get(CHANNELS_ANNOTATION)
        .unwrap_or_default()
        .split(',')
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    let bundle = bundle_from_objects(&package, read_objects(&dir.join("manifests"))?)
        .map_err(|e| CatalogError::at(dir.display(), e))?;
    Ok((bundle, channels, get(DEFAULT_CHANNEL_ANNOTATION)))
}

/// A package manifest (`<package>.package.yaml`, and each entry of a configmap registry's `packages`).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PackageManifestFile {
    pub package_name: String,
    pub channels: Vec<PackageChannel>,
    pub default_channel: Option<String>,
}

/// A channel of a package manifest: its name and its newest CSV.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct PackageChannel {
    pub name: String,
    #[serde(rename = "currentCSV")]
    pub current_csv: String,
}

impl PackageManifestFile {
    /// Reads one; an error names `at` and the field that does not read.
    pub fn read(v: &Value, at: impl std::fmt::Display) -> Result<PackageManifestFile, CatalogError> {
        let manifest: PackageManifestFile = serde_path_to_error::deserialize(v)
            .map_err(|e| CatalogError::at(&at, format!("{}: {}", e.path(), e.inner())))?;
        if manifest.package_name.is_empty() {
            return Err(CatalogError::at(at, "an entry has no packageName"));
        }
        Ok(manifest)
    }
}

/// A package in the package-manifest layout: `<package>.package.yaml` and one folder per version.
pub fn read_package_manifest(dir: &Path) -> Result<Package, CatalogError> {
    let manifest = read_objects(dir)?
        .into_iter()
        .find(|o| o.get("packageName").is_some())
        .ok_or_else(|| CatalogError::at(dir.display(), "no <package>.package.yaml (with packageName)"))?;
    let manifest = PackageManifestFile::read(&manifest, dir.display())?;
    let name = manifest.package_name.clone();
    let mut bundles = BTreeMap::new();
    let mut versions: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| CatalogError::at(dir.display(), e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    versions.sort();
    for v in versions {
        let b = bundle_from_objects(&name, read_objects(&v)?).map_err(|e| e.within(v.display()))?;
        bundles.insert(b.name.clone(), b);
    }
    Ok(package_of(&manifest, bundles))
}

/// A package from its manifest (`packageName`, `channels` with `currentCSV`, `defaultChannel`) and its
/// bundles by CSV name: each channel runs from its current CSV back along `replaces`, as long as the
/// CSVs are there.
pub fn package_of(manifest: &PackageManifestFile, bundles: BTreeMap<String, Bundle>) -> Package {
    let name = manifest.package_name.clone();
    let mut channels = BTreeMap::new();
    for ch in &manifest.channels {
        let ch_name = ch.name.clone();
        let mut current = Some(ch.current_csv.clone()).filter(|c| !c.is_empty());
        let mut entries: Vec<Entry> = Vec::new();
        // From the channel's current CSV back along `replaces`, as long as the CSVs are here.
        while let Some(c) = current.take() {
            let Some(b) = bundles.get(&c) else { break };
            if entries.iter().any(|e| e.name == c) {
                break;
            }
            let e = entry_of(b);
            current = e.replaces.clone();
            entries.push(e);
        }
        entries.reverse();
        channels.insert(ch_name.clone(), Channel { name: ch_name, entries });
    }
    let default_channel = manifest
        .default_channel
        .clone()
        .filter(|d| !d.is_empty())
        .or_else(|| channels.keys().next().cloned())
        .unwrap_or_default();
    Package { name, default_channel, description: String::new(), icon: None, channels, bundles }
}

/// The FBC blob of a bundle: its properties (`olm.package`, `olm.gvk`, `olm.gvk.required`,
/// `olm.package.required`) and its manifests as `olm.bundle.object`s.
pub fn bundle_blob(b: &Bundle) -> Blob {
    let mut properties = vec![Property::Package { package_name: b.package.clone(), version: b.version.to_string() }];
    properties.extend(b.provides.iter().cloned().map(Property::Gvk));
    properties.extend(b.requires.iter().cloned().map(Property::GvkRequired));
    properties.extend(
        b.requires_packages
            .iter()
            .map(|r| Property::PackageRequired { package_name: r.package.clone(), version_range: r.range.to_string() }),
    );
    properties.extend(b.objects.iter().map(|o| Property::Object {
        data: base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(o).unwrap_or_default()),
    }));
    Blob::Bundle(BundleBlob { package: b.package.clone(), name: b.name.clone(), image: b.image.clone(), properties })
}

/// The FBC blobs of a package: `olm.package`, its channels, its bundles.
pub fn package_blobs(p: &Package) -> Vec<Blob> {
    let mut out = vec![Blob::Package(PackageBlob {
        name: p.name.clone(),
        default_channel: p.default_channel.clone(),
        description: p.description.clone(),
        icon: p.icon.clone(),
    })];
    out.extend(p.channels.values().map(|ch| {
        Blob::Channel(ChannelBlob { package: p.name.clone(), name: ch.name.clone(), entries: ch.entries.clone() })
    }));
    out.extend(p.bundles.values().map(bundle_blob));
    out
}

/// Reads a catalog from what a directory holds: FBC files anywhere under it, package-manifest folders
/// (a `*.package.yaml` beside version folders) and bundle directories (`manifests/` + `metadata/`).
pub fn read_catalog_dir(dir: &Path) -> Result<Catalog, CatalogError> {
    let mut blobs = Vec::new();
    collect(dir, &mut blobs)?;
    Catalog::of(blobs.iter())
}

fn collect(dir: &Path, blobs: &mut Vec<Blob>) -> Result<(), CatalogError> {
    if dir.join("manifests").is_dir() && dir.join("metadata").is_dir() {
        let (bundle, channels, default) = read_bundle_dir(dir)?;
        let package = Package {
            name: bundle.package.clone(),
            default_channel: default.unwrap_or_else(|| channels.first().cloned().unwrap_or_default()),
            channels: channels
                .iter()
                .map(|c| (c.clone(), Channel { name: c.clone(), entries: vec![entry_of(&bundle)] }))
                .collect(),
            bundles: BTreeMap::from([(bundle.name.clone(), bundle)]),
            ..Default::default()
        };
        blobs.extend(package_blobs(&package));
        return Ok(());
    }
    let objects = read_objects(dir)?;
    if objects.iter().any(|o| o.get("packageName").is_some()) {
        blobs.extend(package_blobs(&read_package_manifest(dir)?));
        return Ok(());
    }
    for o in &objects {
        blobs.extend(read_blob(o).map_err(|e| e.within(dir.display()))?);
    }
    let mut subdirs: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| CatalogError::at(dir.display(), e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for d in subdirs {
        collect(&d, blobs)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(name: &str, version: &str, replaces: Option<&str>) -> String {
        let replaces = replaces.map(|r| format!("  replaces: {r}\n")).unwrap_or_default();
        format!(
            "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: {name}\nspec:\n  version: {version}\n{replaces}  customresourcedefinitions:\n    owned:\n    - {{name: memcacheds.cache.example.com, version: v1alpha1, kind: Memcached}}\n"
        )
    }

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata:\n  name: memcacheds.cache.example.com\n";

    #[test]
    fn the_package_manifest_layout() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("memcached.package.yaml"),
            "packageName: memcached\ndefaultChannel: alpha\nchannels:\n- name: alpha\n  currentCSV: memcached.v0.0.2\n",
        )
        .unwrap();
        for (v, replaces) in [("0.0.1", None), ("0.0.2", Some("memcached.v0.0.1"))] {
            let d = root.join(v);
            std::fs::create_dir(&d).unwrap();
            std::fs::write(
                d.join("memcached.clusterserviceversion.yaml"),
                csv(&format!("memcached.v{v}"), v, replaces),
            )
            .unwrap();
            std::fs::write(d.join("crd.yaml"), CRD).unwrap();
        }
        let catalog = read_catalog_dir(root).unwrap();
        let p = &catalog.packages["memcached"];
        let names: Vec<&str> = p.channels["alpha"].entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["memcached.v0.0.1", "memcached.v0.0.2"]);
        let b = &p.bundles["memcached.v0.0.2"];
        assert_eq!(b.provides[0].to_string(), "cache.example.com/v1alpha1/Memcached");
        assert_eq!(b.objects.len(), 2, "the CSV and its CRD travel with the bundle");
    }

    #[test]
    fn a_bundle_directory() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path().join("memcached");
        std::fs::create_dir_all(b.join("manifests")).unwrap();
        std::fs::create_dir_all(b.join("metadata")).unwrap();
        std::fs::write(b.join("manifests/csv.yaml"), csv("memcached.v0.1.0", "0.1.0", None)).unwrap();
        std::fs::write(b.join("manifests/crd.yaml"), CRD).unwrap();
        std::fs::write(
            b.join("metadata/annotations.yaml"),
            format!("annotations:\n  {PACKAGE_ANNOTATION}: memcached\n  {CHANNELS_ANNOTATION}: stable,fast\n  {DEFAULT_CHANNEL_ANNOTATION}: stable\n"),
        )
        .unwrap();
        let catalog = read_catalog_dir(dir.path()).unwrap();
        let p = &catalog.packages["memcached"];
        assert_eq!(p.default_channel, "stable");
        assert_eq!(p.channels.keys().collect::<Vec<_>>(), ["fast", "stable"]);
        // Written back as FBC and read again: the same package.
        let again = Catalog::of(package_blobs(p).iter()).unwrap();
        assert_eq!(&again.packages["memcached"], p);
        let none = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(none.path().join("manifests")).unwrap();
        std::fs::create_dir_all(none.path().join("metadata")).unwrap();
        assert!(read_catalog_dir(none.path()).unwrap_err().to_string().contains("annotations"));
    }

    #[test]
    fn a_bundle_needs_one_csv_with_a_version() {
        assert!(
            bundle_from_objects("p", vec![]).unwrap_err().to_string().contains("exactly one ClusterServiceVersion")
        );
        let no_version: Value =
            serde_yaml_ng::from_str("kind: ClusterServiceVersion\nmetadata: {name: p.v1}\nspec: {}\n").unwrap();
        assert!(
            bundle_from_objects("p", vec![no_version]).unwrap_err().to_string().contains("spec.version is missing")
        );
    }
}
