//! File-based catalogs (FBC), OLM's catalog format: `olm.package`, `olm.channel` and `olm.bundle` blobs in
//! YAML documents or concatenated JSON, read into packages with their channels and bundles, and checked
//! as `opm validate` checks them (a package per channel and bundle, a default channel that exists,
//! entries that name bundles, one head per channel, one `olm.package` property per bundle).

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

use crate::versions::{Range, Version, parse_version};

/// An API: group, version, kind.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
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
    /// `{base64data, mediatype}`, if any.
    pub icon: Option<Value>,
    /// Channels by name.
    pub channels: BTreeMap<String, Channel>,
    /// Bundles by name.
    pub bundles: BTreeMap<String, Bundle>,
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

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A manifest embedded in an `olm.bundle.object` property (base64 of JSON or YAML).
fn embedded_object(value: &Value) -> Result<Value, CatalogError> {
    let at = "olm.bundle.object";
    let data = value.get("data").and_then(Value::as_str).ok_or_else(|| error(at, "no data"))?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim()).map_err(|e| error(at, e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|e| error(at, e.to_string()))?;
    serde_yaml_ng::from_str(&text).map_err(|e| error(at, e.to_string()))
}

fn bundle(blob: &Value) -> Result<Bundle, CatalogError> {
    let at = format!("{}/{}", str_of(blob, "package"), str_of(blob, "name"));
    let mut version = None;
    let (mut provides, mut requires, mut requires_packages, mut objects, mut csv_metadata) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), None);
    for (i, p) in blob.get("properties").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let value = p.get("value").cloned().unwrap_or(Value::Null);
        let field = format!("properties[{i}]");
        let gvk = |v: Value| serde_json::from_value::<Gvk>(v).map_err(|e| error(&at, format!("{field}: {e}")));
        match str_of(p, "type") {
            "olm.package" => {
                if version.is_some() {
                    return Err(error(&at, "more than one olm.package property"));
                }
                let v = parse_version(str_of(&value, "version")).map_err(|e| error(&at, format!("{field}: {e}")))?;
                version = Some(v);
            }
            "olm.gvk" => provides.push(gvk(value)?),
            "olm.gvk.required" => requires.push(gvk(value)?),
            "olm.package.required" => {
                let range = Range::parse(str_of(&value, "versionRange"))
                    .map_err(|e| error(&at, format!("{field}.versionRange: {e}")))?;
                requires_packages
                    .push(PackageRequirement { package: str_of(&value, "packageName").to_string(), range });
            }
            "olm.bundle.object" => {
                objects.push(embedded_object(&value).map_err(|e| e.within(format!("{at}: {field}")))?);
            }
            "olm.csv.metadata" => csv_metadata = Some(value),
            _ => {}
        }
    }
    Ok(Bundle {
        name: str_of(blob, "name").to_string(),
        package: str_of(blob, "package").to_string(),
        version: version.ok_or_else(|| error(&at, "no olm.package property (its version)"))?,
        image: str_of(blob, "image").to_string(),
        provides,
        requires,
        requires_packages,
        objects,
        csv_metadata,
    })
}

impl Catalog {
    /// Reads a catalog from its blobs and checks it.
    pub fn from_blobs(blobs: &[Value]) -> Result<Catalog, CatalogError> {
        let mut packages: BTreeMap<String, Package> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for blob in blobs.iter().filter(|b| str_of(b, "schema") == "olm.package") {
            let name = str_of(blob, "name").to_string();
            if name.is_empty() || !seen.insert(("olm.package", name.clone(), String::new())) {
                return Err(error(format!("package {name:?}"), "a package needs a name, once"));
            }
            packages.insert(
                name.clone(),
                Package {
                    name,
                    default_channel: str_of(blob, "defaultChannel").to_string(),
                    description: str_of(blob, "description").to_string(),
                    icon: blob.get("icon").cloned(),
                    ..Default::default()
                },
            );
        }
        for blob in blobs {
            let (schema, package, name) = (str_of(blob, "schema"), str_of(blob, "package"), str_of(blob, "name"));
            if !matches!(schema, "olm.channel" | "olm.bundle") {
                continue;
            }
            let at = format!("{package}/{name}");
            if !seen.insert((
                if schema == "olm.channel" { "olm.channel" } else { "olm.bundle" },
                package.into(),
                name.into(),
            )) {
                return Err(error(at, format!("a second {schema} of this name")));
            }
            let pkg = packages.get_mut(package).ok_or_else(|| error(&at, format!("no olm.package {package:?}")))?;
            if schema == "olm.channel" {
                let entries: Vec<Entry> =
                    serde_json::from_value(blob.get("entries").cloned().unwrap_or(Value::Array(vec![])))
                        .map_err(|e| error(&at, format!("entries: {e}")))?;
                pkg.channels.insert(name.to_string(), Channel { name: name.to_string(), entries });
            } else {
                let b = bundle(blob)?;
                pkg.bundles.insert(b.name.clone(), b);
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
        let kinds: Vec<&str> = b.objects.iter().map(|o| str_of(o, "kind")).collect();
        assert!(kinds.contains(&"ClusterServiceVersion") && kinds.contains(&"CustomResourceDefinition"), "{kinds:?}");
        let multi = Catalog::from_blobs(&parse_blobs(MULTI).unwrap()).unwrap();
        assert_eq!(multi.packages.keys().collect::<Vec<_>>(), ["bar", "baz", "foo"]);
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
