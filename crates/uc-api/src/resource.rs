//! Identities of API resources: group/resource and group/version/kind.

use std::fmt;

/// A resource type independent of version, e.g. `deployments.apps`; the storage identity of objects.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    /// API group, empty for the core group.
    pub group: String,
    /// Plural resource name, e.g. `pods`.
    pub resource: String,
}

impl GroupResource {
    /// Builds a group/resource pair.
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        Self { group: group.into(), resource: resource.into() }
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() { f.write_str(&self.resource) } else { write!(f, "{}.{}", self.resource, self.group) }
    }
}

/// A kind at a version, e.g. `apps/v1 Deployment`; in JSON as apimachinery's `GroupVersionKind`
/// (`{group, version, kind}`, each absent as empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GroupVersionKind {
    /// API group, empty for the core group.
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
}

impl GroupVersionKind {
    /// The `apiVersion` string of this kind: `v1` for the core group, else `group/version`.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }
}

/// The `apiVersion` string for a group and version.
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_string() } else { format!("{group}/{version}") }
}

/// Splits an `apiVersion` string into group and version.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_round_trip() {
        assert_eq!(api_version("", "v1"), "v1");
        assert_eq!(api_version("apps", "v1"), "apps/v1");
        assert_eq!(split_api_version("apps/v1"), ("apps", "v1"));
        assert_eq!(split_api_version("v1"), ("", "v1"));
        assert_eq!(GroupResource::new("apps", "deployments").to_string(), "deployments.apps");
        assert_eq!(GroupResource::new("", "pods").to_string(), "pods");
    }
}
