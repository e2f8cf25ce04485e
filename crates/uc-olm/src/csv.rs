//! The parts of a ClusterServiceVersion OLM acts on, typed: version and upgrade edges (`replaces`,
//! `skips`, the `olm.skipRange` annotation), owned and required APIs, install modes, and the install
//! strategy (Deployments, namespaced and cluster-wide permissions of their service accounts). Read
//! leniently — a CSV carries much more (descriptors, icons, links) that only UIs read.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fbc::{Gvk, Icon};

/// The label OLM puts on a CSV copied into a target namespace: the original's namespace (`copies.rs`).
pub const COPIED_FROM_LABEL: &str = "olm.copiedFrom";

/// The annotation holding a CSV's skip range.
pub const SKIP_RANGE_ANNOTATION: &str = "olm.skipRange";

/// A ClusterServiceVersion's `apiVersion`.
pub const API_VERSION: &str = "operators.coreos.com/v1alpha1";

/// A ClusterServiceVersion (read, or built for a bundle by `uc package`: see [`Csv::new`]).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct Csv {
    /// `operators.coreos.com/v1alpha1` (empty when read from a list that left it out).
    #[serde(default, rename = "apiVersion", skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ClusterServiceVersion`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Its metadata (name, namespace, annotations, labels).
    #[serde(default)]
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    /// Its spec.
    #[serde(default)]
    pub spec: CsvSpec,
    /// Where the lifecycle manager has it (none in a bundle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CsvStatus>,
}

/// A CSV's status as the lifecycle manager writes it (`csvs.rs`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CsvStatus {
    /// `Pending`, `InstallReady`, `Installing`, `Succeeded`, `Failed`, `Replacing`...
    pub phase: String,
    pub reason: String,
    pub message: String,
    /// Its phases so far, newest last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<CsvCondition>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// What it requires and whether that is met (uc reports none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requirement_status: Option<Vec<RequirementStatus>>,
}

/// One phase a CSV went through.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CsvCondition {
    pub phase: String,
    pub reason: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<String>,
}

/// `spec` of a CSV.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CsvSpec {
    /// Semantic version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The CSV this one replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// CSVs this one skips.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    /// Human name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Markdown description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Which OperatorGroup shapes it supports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub install_modes: Vec<InstallMode>,
    /// How it is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<Install>,
    /// APIs it owns and needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customresourcedefinitions: Option<CrdDescriptions>,
    /// Lowest Kubernetes version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_kube_version: Option<String>,
    /// `alpha`, `beta`, `stable`...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maturity: Option<String>,
    /// Who provides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Link>,
    /// Icons for UIs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icon: Vec<Icon>,
    /// Words a UI searches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Links for UIs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    /// Who maintains it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
}

/// One requirement of a CSV and whether it is met (OLM's `RequirementStatus`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct RequirementStatus {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub status: String,
    pub message: String,
}

/// A link of a CSV (OLM's `AppLink`: its provider, its links).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct Link {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub url: String,
}

/// A maintainer of a CSV.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct Maintainer {
    pub name: String,
    pub email: String,
}

/// Every install mode, each supported (what an operator whose hooks run in uc's engine can do).
pub fn every_install_mode() -> Vec<InstallMode> {
    ["OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"]
        .into_iter()
        .map(|m| InstallMode { type_: m.into(), supported: true })
        .collect()
}

/// An install mode and whether it is supported.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct InstallMode {
    /// `OwnNamespace`, `SingleNamespace`, `MultiNamespace`, `AllNamespaces`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether this CSV supports it.
    #[serde(default)]
    pub supported: bool,
}

/// The install strategy.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct Install {
    /// `deployment` (the only strategy OLM has).
    #[serde(default)]
    pub strategy: String,
    /// Its details.
    #[serde(default)]
    pub spec: Option<InstallSpec>,
}

/// A deployment strategy: Deployments and the permissions of their service accounts.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallSpec {
    /// The operator's Deployments.
    #[serde(default)]
    pub deployments: Vec<StrategyDeployment>,
    /// Rules granted in the target namespaces (a Role and RoleBinding per service account).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<Permission>,
    /// Rules granted cluster-wide (a ClusterRole and ClusterRoleBinding per service account).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_permissions: Vec<Permission>,
}

/// One Deployment of an install strategy.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct StrategyDeployment {
    /// The Deployment's name.
    pub name: String,
    /// Its spec.
    #[serde(default)]
    pub spec: DeploymentSpec,
    /// Labels for it.
    #[serde(default)]
    pub label: Option<BTreeMap<String, String>>,
}

/// Rules for one service account.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Permission {
    /// The service account.
    pub service_account_name: String,
    /// Its rules.
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
}

/// The APIs a CSV owns and needs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct CrdDescriptions {
    /// CRDs it owns (shipped in its bundle).
    #[serde(default)]
    pub owned: Vec<CrdDescription>,
    /// CRDs it needs another operator to provide.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<CrdDescription>,
}

/// One CRD a CSV names: `<plural>.<group>`, a version and a kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdDescription {
    /// `<plural>.<group>`.
    pub name: String,
    /// The version.
    #[serde(default)]
    pub version: String,
    /// The kind.
    #[serde(default)]
    pub kind: String,
    /// Human name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl CrdDescription {
    /// What a CSV says of a CRD it owns: its name, storage version (else its first) and kind.
    pub fn owned(crd: &CustomResourceDefinition) -> CrdDescription {
        let versions = &crd.spec.versions;
        let version = versions.iter().find(|v| v.storage).or(versions.first()).map(|v| v.name.clone());
        CrdDescription {
            name: crd.metadata.name.clone().unwrap_or_default(),
            version: version.unwrap_or_default(),
            kind: crd.spec.names.kind.clone(),
            display_name: Some(crd.spec.names.kind.clone()),
            description: None,
        }
    }

    /// The API it describes.
    pub fn gvk(&self) -> Gvk {
        let group = self.name.split_once('.').map(|(_, g)| g).unwrap_or_default();
        Gvk { group: group.to_string(), version: self.version.clone(), kind: self.kind.clone() }
    }
}

/// Why a manifest does not read as a ClusterServiceVersion.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// Its kind is another.
    #[error("not a ClusterServiceVersion: kind {0}")]
    NotCsv(String),
    /// Its fields do not read (a field path and what is wrong).
    #[error("ClusterServiceVersion: {0}")]
    Unreadable(serde_json::Error),
}

impl Csv {
    /// A CSV to write: its kind and `apiVersion` set.
    pub fn new(metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, spec: CsvSpec) -> Csv {
        Csv { api_version: API_VERSION.into(), kind: "ClusterServiceVersion".into(), metadata, spec, status: None }
    }

    /// Reads a CSV manifest; a clear error when it is not one.
    pub fn from_value(v: &Value) -> Result<Csv, CsvError> {
        if v.get("kind").and_then(Value::as_str) != Some("ClusterServiceVersion") {
            return Err(CsvError::NotCsv(format!("{:?}", v.get("kind"))));
        }
        serde_json::from_value(v.clone()).map_err(CsvError::Unreadable)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// Its namespace ("" in a bundle).
    pub fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or_default()
    }

    /// Its phase ("" before the lifecycle manager saw it).
    pub fn phase(&self) -> &str {
        self.status.as_ref().map(|s| s.phase.as_str()).unwrap_or_default()
    }

    /// Whether it is a copy of a CSV in another namespace (`copies.rs`).
    pub fn is_copy(&self) -> bool {
        self.metadata.labels.as_ref().is_some_and(|l| l.contains_key(COPIED_FROM_LABEL))
    }

    /// Its skip range (annotation `olm.skipRange`).
    pub fn skip_range(&self) -> Option<&str> {
        self.metadata.annotations.as_ref()?.get(SKIP_RANGE_ANNOTATION).map(String::as_str)
    }

    /// The APIs it owns.
    pub fn owned(&self) -> Vec<Gvk> {
        self.spec.customresourcedefinitions.iter().flat_map(|c| c.owned.iter().map(CrdDescription::gvk)).collect()
    }

    /// The APIs it requires.
    pub fn required(&self) -> Vec<Gvk> {
        self.spec.customresourcedefinitions.iter().flat_map(|c| c.required.iter().map(CrdDescription::gvk)).collect()
    }

    /// Whether it supports an install mode.
    pub fn supports(&self, mode: &str) -> bool {
        self.spec.install_modes.iter().any(|m| m.type_ == mode && m.supported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn etcd() -> Value {
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "etcdoperator.v0.9.4", "annotations": {"olm.skipRange": "<0.9.4"}},
            "spec": {
                "version": "0.9.4", "replaces": "etcdoperator.v0.9.2", "displayName": "etcd",
                "installModes": [{"type": "OwnNamespace", "supported": true}, {"type": "AllNamespaces", "supported": false}],
                "customresourcedefinitions": {
                    "owned": [{"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster"}],
                    "required": [{"name": "backups.example.com", "version": "v1", "kind": "Backup"}]
                },
                "install": {"strategy": "deployment", "spec": {
                    "deployments": [{"name": "etcd-operator", "spec": {"selector": {"matchLabels": {"name": "etcd"}},
                        "template": {"metadata": {"labels": {"name": "etcd"}},
                                     "spec": {"serviceAccountName": "etcd-operator", "containers": [{"name": "etcd-operator", "image": "quay.io/coreos/etcd-operator@sha256:abc"}]}}}}],
                    "permissions": [{"serviceAccountName": "etcd-operator", "rules": [{"apiGroups": ["etcd.database.coreos.com"], "resources": ["etcdclusters"], "verbs": ["*"]}]}]
                }},
                "icon": [{"base64data": "x", "mediatype": "image/png"}], "links": [{"name": "docs", "url": "u"}]
            }
        })
    }

    #[test]
    fn what_olm_reads_from_a_csv() {
        let csv = Csv::from_value(&etcd()).unwrap();
        assert_eq!((csv.name(), csv.spec.version.as_deref()), ("etcdoperator.v0.9.4", Some("0.9.4")));
        assert_eq!(csv.skip_range(), Some("<0.9.4"));
        assert_eq!(csv.owned()[0].to_string(), "etcd.database.coreos.com/v1beta2/EtcdCluster");
        assert_eq!(csv.required()[0].group, "example.com");
        assert!(csv.supports("OwnNamespace") && !csv.supports("AllNamespaces") && !csv.supports("MultiNamespace"));
        let spec = csv.spec.install.unwrap().spec.unwrap();
        assert_eq!(spec.deployments[0].name, "etcd-operator");
        assert_eq!(spec.permissions[0].rules[0].verbs, ["*"]);
        assert!(
            Csv::from_value(&json!({"kind": "Deployment"}))
                .unwrap_err()
                .to_string()
                .contains("not a ClusterServiceVersion")
        );
    }
}
