//! OperatorGroups: which namespaces an operator installed in a namespace serves, the install mode that
//! makes, and whether a CSV supports it — one group per namespace, as OLM enforces.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::csv::Csv;

/// An OperatorGroup object (`operators.coreos.com/v1`), the fields uc acts on.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct OperatorGroup {
    #[serde(rename = "apiVersion", skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: OperatorGroupSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<OperatorGroupStatus>,
}

/// What an OperatorGroup selects.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OperatorGroupSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_namespaces: Option<Vec<String>>,
    /// The account its namespace's installs act as (operator scoping).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
}

/// The namespaces an OperatorGroup serves, as the lifecycle manager reports them (`[""]`: all).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OperatorGroupStatus {
    pub namespaces: Option<Vec<String>>,
    pub last_updated: Option<String>,
}

impl From<&OperatorGroup> for Group {
    fn from(og: &OperatorGroup) -> Group {
        Group {
            name: og.metadata.name.clone().unwrap_or_default(),
            namespace: og.metadata.namespace.clone().unwrap_or_default(),
            target_namespaces: og.spec.target_namespaces.clone().unwrap_or_default(),
        }
    }
}

/// An OperatorGroup as OLM reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// `spec.targetNamespaces` (empty, with no selector: every namespace).
    pub target_namespaces: Vec<String>,
}

/// Why an operator in a namespace has no usable group (the CSV's `Failed` reason).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupProblem {
    /// No OperatorGroup in the namespace.
    NoOperatorGroup,
    /// More than one.
    TooManyOperatorGroups(Vec<String>),
    /// The CSV does not support the group's install mode.
    UnsupportedOperatorGroup(String),
}

impl GroupProblem {
    /// OLM's reason.
    pub fn reason(&self) -> &'static str {
        match self {
            GroupProblem::NoOperatorGroup => "NoOperatorGroup",
            GroupProblem::TooManyOperatorGroups(_) => "TooManyOperatorGroups",
            GroupProblem::UnsupportedOperatorGroup(_) => "UnsupportedOperatorGroup",
        }
    }

    /// A message for people.
    pub fn message(&self) -> String {
        match self {
            GroupProblem::NoOperatorGroup => "csv in namespace with no operatorgroups".into(),
            GroupProblem::TooManyOperatorGroups(names) => {
                format!(
                    "csv created in namespace with multiple operatorgroups, can't pick one automatically: {}",
                    names.join(", ")
                )
            }
            GroupProblem::UnsupportedOperatorGroup(mode) => {
                format!("{mode} InstallModeType not supported, cannot configure to watch the group's namespaces")
            }
        }
    }
}

/// The one group of `namespace` among `groups`.
pub fn group_of<'a>(namespace: &str, groups: &'a [Group]) -> Result<&'a Group, GroupProblem> {
    let mine: Vec<&Group> = groups.iter().filter(|g| g.namespace == namespace).collect();
    match mine.as_slice() {
        [] => Err(GroupProblem::NoOperatorGroup),
        [one] => Ok(one),
        many => Err(GroupProblem::TooManyOperatorGroups(many.iter().map(|g| g.name.clone()).collect())),
    }
}

impl Group {
    /// The install mode it asks for: every namespace, its own, one other, or several.
    pub fn install_mode(&self) -> &'static str {
        match self.target_namespaces.as_slice() {
            [] => "AllNamespaces",
            [one] if one.is_empty() => "AllNamespaces",
            [one] if *one == self.namespace => "OwnNamespace",
            [_] => "SingleNamespace",
            _ => "MultiNamespace",
        }
    }

    /// `status.namespaces` and the `olm.targetNamespaces` annotation: the namespaces joined by
    /// commas, empty for every namespace.
    pub fn target_annotation(&self) -> String {
        let mut ns = self.target_namespaces.clone();
        ns.sort();
        ns.dedup();
        ns.join(",")
    }

    /// Whether an operator of this group serves `namespace`.
    pub fn serves(&self, namespace: &str) -> bool {
        self.install_mode() == "AllNamespaces" || self.target_namespaces.iter().any(|n| n == namespace)
    }
}

/// The group a CSV in `namespace` runs under, if it can.
pub fn check<'a>(csv: &Csv, namespace: &str, groups: &'a [Group]) -> Result<&'a Group, GroupProblem> {
    let g = group_of(namespace, groups)?;
    let mode = g.install_mode();
    if csv.supports(mode) { Ok(g) } else { Err(GroupProblem::UnsupportedOperatorGroup(mode.to_string())) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn group(name: &str, ns: &str, targets: &[&str]) -> Group {
        Group {
            name: name.into(),
            namespace: ns.into(),
            target_namespaces: targets.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn install_modes_and_served_namespaces() {
        assert_eq!(group("g", "ops", &[]).install_mode(), "AllNamespaces");
        assert_eq!(group("g", "ops", &["ops"]).install_mode(), "OwnNamespace");
        assert_eq!(group("g", "ops", &["team"]).install_mode(), "SingleNamespace");
        assert_eq!(group("g", "ops", &["b", "a"]).install_mode(), "MultiNamespace");
        assert_eq!(group("g", "ops", &["b", "a"]).target_annotation(), "a,b");
        assert!(group("g", "ops", &["team"]).serves("team") && !group("g", "ops", &["team"]).serves("other"));
        assert!(group("g", "ops", &[]).serves("anything"));
    }

    #[test]
    fn one_group_per_namespace_and_a_supported_mode() {
        let csv: Csv = serde_json::from_value(json!({"kind": "ClusterServiceVersion", "metadata": {"name": "x"},
            "spec": {"installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "AllNamespaces", "supported": false}]}}))
        .unwrap();
        let groups =
            [group("own", "ops", &["ops"]), group("all", "wide", &[]), group("a", "two", &[]), group("b", "two", &[])];
        assert_eq!(check(&csv, "ops", &groups).unwrap().name, "own");
        let e = check(&csv, "wide", &groups).unwrap_err();
        assert_eq!((e.reason(), e.message().starts_with("AllNamespaces")), ("UnsupportedOperatorGroup", true));
        assert_eq!(check(&csv, "two", &groups).unwrap_err().reason(), "TooManyOperatorGroups");
        assert_eq!(check(&csv, "none", &groups).unwrap_err(), GroupProblem::NoOperatorGroup);
    }
}
