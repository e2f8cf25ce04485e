//! `uc package DIR` of an Operator SDK project (a `watches.yaml`, `config/crd/bases/`,
//! `config/samples/`): a UniversalController per watch whose hook carries what it runs — for a Helm
//! project the chart, packaged; for an Ansible project the project's roles and playbooks — so any uc
//! engine that installs the bundle runs the operator (`native: {name: helm|ansible, config}`).

use std::path::Path;

use anyhow::Context;
use base64::Engine as _;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;
use uc_api::controller::{Hook, Native};

/// What a bundle is made of.
pub struct Parts {
    pub name: String,
    /// UniversalControllers (or Metacontroller's controllers), as written.
    pub controllers: Vec<Value>,
    pub crds: Vec<CustomResourceDefinition>,
    /// Example objects of the CRDs' kinds.
    pub examples: Vec<Value>,
    /// What the controllers' account needs beyond what uc computes from them: an SDK project's
    /// `config/rbac/role.yaml` (what its roles and charts touch), as the SDK's `make bundle` puts it in
    /// the CSV.
    pub rules: Vec<PolicyRule>,
}

/// What a bundle reads of the SDK's `PROJECT` file: the project's name.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ProjectFile {
    project_name: Option<String>,
}

/// The CRDs among the documents of `at`; one that does not read is an error naming it and the field.
pub fn crds_of(docs: &[Value], at: &Path) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    uc_api::crds::among(docs).map_err(|e| anyhow::anyhow!("{}: {e}", at.display()))
}

fn docs_in(dir: &Path) -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    files.sort();
    files
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .filter(|p| p.file_name().is_some_and(|n| n != "kustomization.yaml"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|t| uc_olm::fbc::parse_blobs(&t).unwrap_or_default())
        .filter(|d| d.get("kind").is_some())
        .collect()
}

/// The plural of a kind: the project's CRD's, else kube's guess.
fn plural(crds: &[CustomResourceDefinition], api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    crds.iter()
        .find(|c| c.spec.group == group && c.spec.names.kind == kind)
        .map(|c| c.spec.names.plural.clone())
        .unwrap_or_else(|| {
            kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(group, version, kind)).plural
        })
}

/// The bundle's parts of the SDK project in `dir`; `None` when `dir` is not one.
pub fn parts(dir: &Path) -> Option<anyhow::Result<Parts>> {
    let watches = dir.join("watches.yaml");
    (watches.is_file() && !dir.join("controller.yaml").exists()).then(|| read(dir, &watches))
}

fn read(dir: &Path, watches: &Path) -> anyhow::Result<Parts> {
    let text = std::fs::read_to_string(watches).with_context(|| format!("reading {}", watches.display()))?;
    let entries: Vec<Value> = serde_yaml_ng::from_str(&text).with_context(|| format!("{}", watches.display()))?;
    let bases = dir.join("config/crd/bases");
    let crds = crds_of(&docs_in(&bases), &bases)?;
    let examples = docs_in(&dir.join("config/samples"));
    let project: ProjectFile = std::fs::read_to_string(dir.join("PROJECT"))
        .ok()
        .and_then(|t| serde_yaml_ng::from_str(&t).ok())
        .unwrap_or_default();
    let dir_name =
        std::fs::canonicalize(dir).ok().and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
    let name = project.project_name.or(dir_name).unwrap_or_default();
    let controllers = if uc_ansible::watches::is_ansible(&text) {
        ansible_controllers(dir, &text, &crds)?
    } else {
        helm_controllers(dir, &text, &entries, &crds)?
    };
    let rules = docs_in(&dir.join("config/rbac"))
        .iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("ClusterRole"))
        .filter_map(|d| serde_json::from_value::<ClusterRole>(d.clone()).ok())
        .filter(|r| r.metadata.name.as_deref() == Some("manager-role"))
        .flat_map(|r| r.rules.unwrap_or_default())
        .collect();
    Ok(Parts { name, controllers, crds, examples, rules })
}

fn helm_controllers(
    dir: &Path,
    text: &str,
    entries: &[Value],
    crds: &[CustomResourceDefinition],
) -> anyhow::Result<Vec<Value>> {
    let watches = uc_helm::watches::parse(text, dir, &|k| std::env::var(k).ok()).map_err(anyhow::Error::msg)?;
    let mut out = Vec::new();
    for (w, entry) in watches.iter().zip(entries) {
        let tgz = if w.chart.is_dir() {
            uc_helm::Chart::package_dir(&w.chart)?
        } else {
            std::fs::read(&w.chart).with_context(|| format!("reading {}", w.chart.display()))?
        };
        let chart = uc_helm::Chart::from_archive(&w.chart.display().to_string(), &tgz)?;
        let kinds = crate::helm_operator::child_kinds(&chart)
            .map_err(|e| anyhow::anyhow!("chart {}: {e}", w.chart.display()))?;
        let children: Vec<(String, String)> =
            kinds.into_iter().map(|(av, k)| (av.clone(), plural(crds, &av, &k))).collect();
        let mut watch = entry.as_object().cloned().unwrap_or_default();
        watch.remove("chart");
        let config =
            crate::helm_operator::HookConfig { chart: base64::engine::general_purpose::STANDARD.encode(&tgz), watch };
        let config = uc_api::meta::json_of(&config);
        let hook = Hook { native: Some(Native { name: "helm".into(), config: Some(config) }), ..Default::default() };
        let parent_plural = plural(crds, &w.api_version(), &w.kind);
        let controller = crate::helm_operator::controller(w, (&w.api_version(), &parent_plural), &children, hook);
        out.push(uc_api::meta::json_of(&controller));
    }
    Ok(out)
}

fn ansible_controllers(dir: &Path, text: &str, crds: &[CustomResourceDefinition]) -> anyhow::Result<Vec<Value>> {
    let dir = std::fs::canonicalize(dir).with_context(|| format!("reading {}", dir.display()))?;
    let watches = crate::ansible_operator::parse_watches(&dir, text)?;
    let project = base64::engine::general_purpose::STANDARD.encode(crate::ansible_operator::pack(&dir)?);
    let mut out = Vec::new();
    for w in &watches {
        let watch =
            uc_api::GroupVersionKind { group: w.group.clone(), version: w.version.clone(), kind: w.kind.clone() };
        let config = uc_api::meta::json_of(&crate::ansible_operator::Config { project: project.clone(), watch });
        let hook = Hook { native: Some(Native { name: "ansible".into(), config: Some(config) }), ..Default::default() };
        let parent_plural = plural(crds, &w.api_version(), &w.kind);
        let controller = crate::ansible_operator::controller(w, (&w.api_version(), &parent_plural), hook);
        out.push(uc_api::meta::json_of(&controller));
    }
    Ok(out)
}
