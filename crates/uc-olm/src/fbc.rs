//! File-based catalogs (FBC), OLM's catalog format: `olm.package`, `olm.channel` and `olm.bundle` blobs in
//! YAML documents or concatenated JSON, read into packages with their channels and bundles, and checked
//! as `opm validate` checks them (a package per channel and bundle, a default channel that exists,
//! entries that name bundles, one head per channel, one `olm.package` property per bundle).

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::versions::{Range, Version, parse_version};

/// An API: group, version, kind.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
pub struct Gvk {
    /// API group ("" for the core group).
    #[serde(default)]
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

impl std::fmt::Display for Gvk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}", self.version, self.kind)
        } else {
            write!(f, "{}/{}/{}", self.group, self.version, self.kind)
        }
    }
}

/// One entry of a channel: a bundle and the upgrade edges into it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// The bundle's name.
    pub name: String,
    /// The bundle this one replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// Bundles this one skips.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    /// Versions this one upgrades from directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_range: Option<String>,
}

/// A channel: an upgrade graph of entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Channel {
    /// Its name.
    pub name: String,
    /// Its entries.
    pub entries: Vec<Entry>,
}

/// A requirement on another package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageRequirement {
    /// The package.
    pub package: String,
    /// The versions that satisfy it.
    pub range: Range,
}

/// A bundle: one version of an operator.
#[derive(Clone, Debug, PartialEq)]
pub struct Bundle {
    /// Its name (the CSV's).
    pub name: String,
    /// Its package.
    pub package: String,
    /// Its version (`olm.package`).
    pub version: Version,
    /// The bundle image, as the catalog names it.
    pub image: String,
    /// APIs it provides (`olm.gvk`).
    pub provides: Vec<Gvk>,
    /// APIs it needs (`olm.gvk.required`).
    pub requires: Vec<Gvk>,
    /// Packages it needs (`olm.package.required`).
    pub requires_packages: Vec<PackageRequirement>,
    /// Its manifests when the catalog holds them (`olm.bundle.object`): the CSV, CRDs, other objects.
    pub objects: Vec<Value>,
    /// `olm.csv.metadata`, when given.
    pub csv_metadata: Option<Value>,
}

/// A package: its channels and bundles.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Package {
    /// Its name.
    pub name: String,
    /// The channel a Subscription without one follows.
    pub default_channel: String,
    /// Markdown description.
    pub description: String,
    /// Its icon, if any.
    pub icon: Option<Icon>,
    /// Channels by name.
    pub channels: BTreeMap<String, Channel>,
    /// Bundles by name.
    pub bundles: BTreeMap<String, Bundle>,
}

/// An icon: base64 of the image and its media type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct Icon {
    pub base64data: String,
    pub mediatype: String,
}

/// A blob of a file-based catalog that uc reads: `olm.package`, `olm.channel` or `olm.bundle`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "schema")]
pub enum Blob {
    #[serde(rename = "olm.package")]
    Package(PackageBlob),
    #[serde(rename = "olm.channel")]
    Channel(ChannelBlob),
    #[serde(rename = "olm.bundle")]
    Bundle(BundleBlob),
}

/// An `olm.package` blob.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageBlob {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub default_channel: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<Icon>,
}

/// An `olm.channel` blob.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct ChannelBlob {
    #[serde(default)]
    pub package: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub entries: Vec<Entry>,
}

/// An `olm.bundle` blob.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct BundleBlob {
    #[serde(default)]
    pub package: String,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image: String,
    #[serde(default, deserialize_with = "read_properties")]
    pub properties: Vec<Property>,
}

/// A property of a bundle that uc reads (others are skipped: `read_properties`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "type", content = "value")]
pub enum Property {
    /// Its package and version.
    #[serde(rename = "olm.package")]
    Package {
        #[serde(rename = "packageName", default)]
        package_name: String,
        #[serde(default)]
        version: String,
    },
    /// An API it provides.
    #[serde(rename = "olm.gvk")]
    Gvk(Gvk),
    /// An API it needs.
    #[serde(rename = "olm.gvk.required")]
    GvkRequired(Gvk),
    /// A package it needs.
    #[serde(rename = "olm.package.required")]
    PackageRequired {
        #[serde(rename = "packageName", default)]
        package_name: String,
        #[serde(rename = "versionRange", default)]
        version_range: String,
    },
    /// A manifest: base64 of its JSON or YAML.
    #[serde(rename = "olm.bundle.object")]
    Object {
        #[serde(default)]
        data: String,
    },
    /// The CSV's metadata, for catalogs without manifests.
    #[serde(rename = "olm.csv.metadata")]
    CsvMetadata(Value),
}

impl Property {
    /// The property types uc reads.
    const READ: [&str; 6] =
        ["olm.package", "olm.gvk", "olm.gvk.required", "olm.package.required", "olm.bundle.object", "olm.csv.metadata"];
}

/// A bundle's properties of the types uc reads (others skipped); one that does not read names its
/// index and field.
fn read_properties<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Property>, D::Error> {
    let mut out = Vec::new();
    for (i, p) in Vec::<Value>::deserialize(d)?.iter().enumerate() {
        if Property::READ.contains(&p.get("type").and_then(Value::as_str).unwrap_or_default()) {
            let property = serde_path_to_error::deserialize(p)
                .map_err(|e| serde::de::Error::custom(format!("[{i}].{}: {}", e.path(), e.inner())))?;
            out.push(property);
        }
    }
    Ok(out)
}

/// A blob of a catalog file: one uc reads, or another kept as it is (`uc catalog add` rewrites a file).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FileBlob {
    Olm(Blob),
    Other(Value),
}

impl FileBlob {
    /// A blob of one of the schemas uc reads, or any other; an error names the blob and its field.
    pub fn read(v: Value) -> Result<FileBlob, CatalogError> {
        Ok(match read_blob(&v)? {
            Some(b) => FileBlob::Olm(b),
            None => FileBlob::Other(v),
        })
    }

    /// What uc reads of it.
    pub fn olm(&self) -> Option<&Blob> {
        match self {
            FileBlob::Olm(b) => Some(b),
            FileBlob::Other(_) => None,
        }
    }
}

/// `v` as a blob when its schema is one uc reads (`None` for another); an error names the blob and field.
pub fn read_blob(v: &Value) -> Result<Option<Blob>, CatalogError> {
    fn read<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, CatalogError> {
        let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
        let at = format!("{} {}/{}", field("schema"), field("package"), field("name"));
        serde_path_to_error::deserialize(v).map_err(|e| error(at, format!("{}: {}", e.path(), e.inner())))
    }
    Ok(Some(match v.get("schema").and_then(Value::as_str) {
        Some("olm.package") => Blob::Package(read(v)?),
        Some("olm.channel") => Blob::Channel(read(v)?),
        Some("olm.bundle") => Blob::Bundle(read(v)?),
        _ => return Ok(None),
    }))
}

/// A catalog: packages by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    /// Packages by name.
    pub packages: BTreeMap<String, Package>,
}

/// What is wrong with a catalog, located by `package/name`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct CatalogError {
    /// Where: the blob or package.
    pub at: String,
    /// What.
    pub message: String,
}

fn error(at: impl Into<String>, message: impl Into<String>) -> CatalogError {
    CatalogError { at: at.into(), message: message.into() }
}

impl CatalogError {
    /// An error at `at` (a file, a ConfigMap key, a bundle).
    pub fn at(at: impl std::fmt::Display, message: impl std::fmt::Display) -> CatalogError {
        error(at.to_string(), message.to_string())
    }

    /// The same error, located within `outer` (the directory or source it was read from).
    pub fn within(self, outer: impl std::fmt::Display) -> CatalogError {
        CatalogError { at: format!("{outer}: {}", self.at), message: self.message }
    }
}

/// The blobs of one file: YAML documents, or JSON objects one after another.
pub fn parse_blobs(text: &str) -> Result<Vec<Value>, CatalogError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return serde_json::Deserializer::from_str(trimmed)
            .into_iter::<Value>()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| error("JSON", e.to_string()));
    }
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let v = Value::deserialize(doc).map_err(|e| error("YAML", e.to_string()))?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

/// A manifest embedded in an `olm.bundle.object` property (base64 of JSON or YAML).
fn embedded_object(data: &str) -> Result<Value, CatalogError> {
    let at = "olm.bundle.object";
    if data.is_empty() {
        return Err(error(at, "no data"));
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim()).map_err(|e| error(at, e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|e| error(at, e.to_string()))?;
    serde_yaml_ng::from_str(&text).map_err(|e| error(at, e.to_string()))
}

fn bundle(blob: &BundleBlob) -> Result<Bundle, CatalogError> {
    let at = format!("{}/{}", blob.package, blob.name);
    let mut b = Bundle {
        name: blob.name.clone(),
        package: blob.package.clone(),
        version: Version::new(0, 0, 0),
        image: blob.image.clone(),
        provides: Vec::new(),
        requires: Vec::new(),
        requires_packages: Vec::new(),
        objects: Vec::new(),
        csv_metadata: None,
    };
    let mut version = None;
    for (i, p) in blob.properties.iter().enumerate() {
        let field = format!("properties[{i}]");
        match p {
            Property::Package { version: v, .. } => {
                if version.is_some() {
                    return Err(error(&at, "more than one olm.package property"));
                }
                version = Some(parse_version(v).map_err(|e| error(&at, format!("{field}: {e}")))?);
            }
            Property::Gvk(g) => b.provides.push(g.clone()),
            Property::GvkRequired(g) => b.requires.push(g.clone()),
            Property::PackageRequired { package_name, version_range } => {
                let range =
                    Range::parse(version_range).map_err(|e| error(&at, format!("{field}.versionRange: {e}")))?;
                b.requires_packages.push(PackageRequirement { package: package_name.clone(), range });
            }
            Property::Object { data } => {
                b.objects.push(embedded_object(data).map_err(|e| e.within(format!("{at}: {field}")))?);
            }
            Property::CsvMetadata(m) => b.csv_metadata = Some(m.clone()),
        }
    }
    b.version = version.ok_or_else(|| error(&at, "no olm.package property (its version)"))?;
    Ok(b)
}

impl Catalog {
    /// Reads a catalog from its blobs (those of other schemas are skipped) and checks it.
    pub fn from_blobs(blobs: &[Value]) -> Result<Catalog, CatalogError> {
        let typed: Vec<Blob> = blobs.iter().filter_map(|b| read_blob(b).transpose()).collect::<Result<_, _>>()?;
        Catalog::of(typed.iter())
    }

    /// A catalog of typed blobs, checked.
    pub fn of<'a>(blobs: impl Iterator<Item = &'a Blob> + Clone) -> Result<Catalog, CatalogError> {
        let mut packages: BTreeMap<String, Package> = BTreeMap::new();
        for p in blobs.clone().filter_map(|b| if let Blob::Package(p) = b { Some(p) } else { None }) {
            if p.name.is_empty() || packages.contains_key(&p.name) {
                return Err(error(format!("package {:?}", p.name), "a package needs a name, once"));
            }
            let package = Package {
                name: p.name.clone(),
                default_channel: p.default_channel.clone(),
                description: p.description.clone(),
                icon: p.icon.clone(),
                ..Default::default()
            };
            packages.insert(p.name.clone(), package);
        }
        for blob in blobs {
            let (schema, package, name) = match blob {
                Blob::Package(_) => continue,
                Blob::Channel(c) => ("olm.channel", &c.package, &c.name),
                Blob::Bundle(b) => ("olm.bundle", &b.package, &b.name),
            };
            let at = format!("{package}/{name}");
            let pkg = packages.get_mut(package).ok_or_else(|| error(&at, format!("no olm.package {package:?}")))?;
            let again = match blob {
                Blob::Channel(c) => pkg
                    .channels
                    .insert(name.clone(), Channel { name: name.clone(), entries: c.entries.clone() })
                    .is_some(),
                Blob::Bundle(b) => pkg.bundles.insert(name.clone(), bundle(b)?).is_some(),
                Blob::Package(_) => false,
            };
            if again {
                return Err(error(at, format!("a second {schema} of this name")));
            }
        }
        for pkg in packages.values() {
            check_package(pkg)?;
        }
        Ok(Catalog { packages })
    }

    /// Every bundle of every package.
    pub fn bundles(&self) -> impl Iterator<Item = &Bundle> {
        self.packages.values().flat_map(|p| p.bundles.values())
    }
}

/// The entries no other entry of the channel replaces or skips (a valid channel has one).
pub fn heads(channel: &Channel) -> Vec<String> {
    channel
        .entries
        .iter()
        .filter(|e| {
            !channel.entries.iter().any(|o| o.replaces.as_deref() == Some(e.name.as_str()) || o.skips.contains(&e.name))
        })
        .map(|e| e.name.clone())
        .collect()
}

fn check_package(pkg: &Package) -> Result<(), CatalogError> {
    if pkg.channels.is_empty() {
        return Err(error(&pkg.name, "a package needs at least one olm.channel"));
    }
    if !pkg.channels.contains_key(&pkg.default_channel) {
        return Err(error(
            &pkg.name,
            format!("defaultChannel {:?} is not a channel of the package", pkg.default_channel),
        ));
    }
    for ch in pkg.channels.values() {
        let at = format!("{}/{}", pkg.name, ch.name);
        for e in &ch.entries {
            if !pkg.bundles.contains_key(&e.name) {
                return Err(error(&at, format!("entry {:?} is not a bundle of the package", e.name)));
            }
            if let Some(r) = &e.skip_range {
                Range::parse(r).map_err(|err| error(&at, format!("entry {:?} skipRange: {err}", e.name)))?;
            }
        }
        let heads = heads(ch);
        if heads.len() != 1 {
            return Err(error(&at, format!("a channel has exactly one head; found {heads:?}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOO: &str = include_str!("../testdata/example-foo-index.yaml");
    const MULTI: &str = include_str!("../testdata/example-multi-package-index.yaml");

    #[test]
    fn the_upstream_example_catalogs_read() {
        let foo = Catalog::from_blobs(&parse_blobs(FOO).unwrap()).unwrap();
        let pkg = &foo.packages["foo"];
        assert_eq!(pkg.default_channel, "beta");
        assert_eq!(pkg.channels.keys().collect::<Vec<_>>(), ["beta", "stable"]);
        let b = &pkg.bundles["foo.v0.2.0"];
        assert_eq!(b.version, parse_version("0.2.0").unwrap());
        assert_eq!(b.provides[0].to_string(), "test.foo/v1/Foo");
        assert_eq!(b.requires[0].kind, "Bar");
        assert_eq!(b.requires_packages[0].package, "bar");
        let kinds: Vec<&str> = b.objects.iter().map(|o| o["kind"].as_str().unwrap_or_default()).collect();
        assert!(kinds.contains(&"ClusterServiceVersion") && kinds.contains(&"CustomResourceDefinition"), "{kinds:?}");
        let multi = Catalog::from_blobs(&parse_blobs(MULTI).unwrap()).unwrap();
        assert_eq!(multi.packages.keys().collect::<Vec<_>>(), ["bar", "baz", "foo"]);
    }

    #[test]
    fn a_blob_that_does_not_read_names_its_field_and_others_are_kept() {
        let bad = serde_json::json!({"schema": "olm.channel", "package": "p", "name": "c", "entries": [{"name": 3}]});
        let e = read_blob(&bad).unwrap_err();
        assert!(e.at.contains("olm.channel p/c") && e.message.contains("entries[0].name"), "{e}");
        let other = serde_json::json!({"schema": "olm.deprecations", "package": "p"});
        assert_eq!(FileBlob::read(other.clone()).unwrap(), FileBlob::Other(other.clone()));
        assert_eq!(serde_json::to_value(FileBlob::Other(other.clone())).unwrap(), other);
        let unknown = serde_json::json!({"schema": "olm.bundle", "package": "p", "name": "p.v1",
            "properties": [{"type": "olm.maxOpenShiftVersion", "value": "4.9"},
                           {"type": "olm.package", "value": {"packageName": "p", "version": "1.0.0"}}]});
        let Some(Blob::Bundle(b)) = read_blob(&unknown).unwrap() else { panic!("a bundle") };
        assert_eq!(bundle(&b).unwrap().version, parse_version("1.0.0").unwrap(), "unknown properties skipped");
        let mut bad = unknown.clone();
        bad["properties"][1]["value"]["version"] = serde_json::json!(1);
        let e = read_blob(&bad).unwrap_err();
        assert!(e.message.contains("properties") && e.message.contains("[1].value.version"), "{e}");
    }

    #[test]
    fn blobs_as_json_or_yaml() {
        let json = r#"{"schema": "olm.package", "name": "a"} {"schema": "olm.channel", "package": "a", "name": "c"}"#;
        assert_eq!(parse_blobs(json).unwrap().len(), 2);
        assert_eq!(parse_blobs("---\nschema: olm.package\nname: a\n---\n").unwrap().len(), 1);
    }

    fn catalog(extra: &str) -> Result<Catalog, CatalogError> {
        let base = r#"
schema: olm.package
name: p
defaultChannel: stable
---
schema: olm.bundle
package: p
name: p.v1.0.0
properties: [{type: olm.package, value: {packageName: p, version: 1.0.0}}]
---
schema: olm.bundle
package: p
name: p.v1.1.0
properties: [{type: olm.package, value: {packageName: p, version: 1.1.0}}]
"#;
        Catalog::from_blobs(&parse_blobs(&format!("{base}---\n{extra}")).unwrap())
    }

    #[test]
    fn catalogs_are_checked_as_opm_validate_does() {
        let ok = "schema: olm.channel\npackage: p\nname: stable\nentries: [{name: p.v1.0.0}, {name: p.v1.1.0, replaces: p.v1.0.0}]";
        assert!(catalog(ok).is_ok());
        let two_heads = "schema: olm.channel\npackage: p\nname: stable\nentries: [{name: p.v1.0.0}, {name: p.v1.1.0}]";
        assert!(catalog(two_heads).unwrap_err().message.contains("exactly one head"));
        let missing = "schema: olm.channel\npackage: p\nname: stable\nentries: [{name: p.v9.0.0}]";
        assert!(catalog(missing).unwrap_err().message.contains("not a bundle of the package"));
        let other = "schema: olm.channel\npackage: p\nname: beta\nentries: [{name: p.v1.0.0}]";
        assert!(catalog(other).unwrap_err().message.contains("defaultChannel \"stable\""));
        let bad_range = "schema: olm.channel\npackage: p\nname: stable\nentries: [{name: p.v1.0.0, skipRange: '<<1'}]";
        assert!(catalog(bad_range).unwrap_err().message.contains("skipRange"));
        let orphan = "schema: olm.channel\npackage: q\nname: stable\nentries: []";
        assert!(catalog(orphan).unwrap_err().message.contains("no olm.package \"q\""));
    }
}
