//! `uc init NAME --type helm|ansible`: an Operator SDK project as `operator-sdk init --plugins helm|ansible`
//! and `create api` lay it out — `watches.yaml`, the chart (`helm-charts/`, `helm create`'s or one given
//! with `--helm-chart`) or the role (`roles/`), the CRD with an open schema (`config/crd/bases/`), RBAC
//! (`config/rbac/role.yaml`), a sample (`config/samples/`), `PROJECT` and `Dockerfile` — runnable at once
//! with `uc up --watches-file watches.yaml` and packaged by `uc package`.

use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceSubresourceStatus, CustomResourceSubresources, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

/// Which SDK operator type.
#[derive(Clone, Debug, PartialEq)]
pub enum SdkType {
    /// A Helm operator: the chart given (a directory or a `.tgz`), or `helm create`'s.
    Helm { chart: Option<PathBuf> },
    /// An Ansible operator with a role.
    Ansible,
}

/// The API group of scaffolded kinds (`uc init`'s).
const GROUP: &str = "example.com";
const VERSION: &str = "v1alpha1";

/// The SDK's image tags the Dockerfiles name.
const SDK_VERSION: &str = "v1.42.0";

fn yaml<T: serde::Serialize>(v: &T) -> String {
    serde_yaml_ng::to_string(v).unwrap_or_default()
}

/// A CRD with the SDK's open schema: spec and status keep whatever they are given.
fn crd(kind: &str, plural: &str) -> CustomResourceDefinition {
    use uc_api::crds::{crd, names, served_version};
    let typed = |type_: &str, description: Option<String>| JSONSchemaProps {
        type_: Some(type_.into()),
        description,
        ..Default::default()
    };
    let open = |what: String| JSONSchemaProps {
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..typed("object", Some(what))
    };
    let properties = BTreeMap::from([
        ("apiVersion".to_string(), typed("string", None)),
        ("kind".to_string(), typed("string", None)),
        ("metadata".to_string(), typed("object", None)),
        ("spec".to_string(), open(format!("Spec defines the desired state of {kind}"))),
        ("status".to_string(), open(format!("Status defines the observed state of {kind}"))),
    ]);
    let schema = JSONSchemaProps {
        properties: Some(properties),
        ..typed("object", Some(format!("{kind} is the Schema for the {plural} API")))
    };
    let mut version = served_version(VERSION, schema);
    version.subresources =
        Some(CustomResourceSubresources { status: Some(CustomResourceSubresourceStatus(json!({}))), scale: None });
    crd(GROUP, names(kind, plural), "Namespaced", version)
}

/// The manager's ClusterRole: the kind (its status and finalizers) and what the operator makes.
fn role(plural: &str, managed: &[(String, String)]) -> ClusterRole {
    let rule = |group: &str, resources: Vec<String>, verbs: &[&str]| PolicyRule {
        api_groups: Some(vec![group.into()]),
        resources: Some(resources),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    };
    const ALL: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];
    let mut rules = vec![
        rule(GROUP, vec![plural.into(), format!("{plural}/status"), format!("{plural}/finalizers")], ALL),
        rule("", vec!["events".into()], &["create"]),
    ];
    rules.extend(managed.iter().map(|(group, resource)| rule(group, vec![resource.clone()], ALL)));
    ClusterRole {
        metadata: ObjectMeta { name: Some("manager-role".into()), ..Default::default() },
        rules: Some(rules),
        ..Default::default()
    }
}

/// A kind's plural as the SDK's scaffolds guess it.
fn plural_of(kind: &str) -> String {
    let k = kind.to_lowercase();
    if k.ends_with('s') || k.ends_with('x') || k.ends_with("ch") || k.ends_with("sh") {
        format!("{k}es")
    } else if k.ends_with('y') && !k.ends_with("ay") && !k.ends_with("ey") && !k.ends_with("oy") {
        format!("{}ies", &k[..k.len() - 1])
    } else {
        format!("{k}s")
    }
}

/// A `watches.yaml` entry: the kind, and the chart or role that reconciles it.
#[derive(serde::Serialize)]
struct WatchEntry<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    chart: Option<String>,
    group: &'a str,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<String>,
    version: &'a str,
}

impl<'a> WatchEntry<'a> {
    fn of(kind: &'a str) -> WatchEntry<'a> {
        WatchEntry { chart: None, group: GROUP, kind, role: None, version: VERSION }
    }
}

/// The SDK's `PROJECT` file, for one resource.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Project<'a> {
    domain: &'a str,
    layout: [&'a str; 1],
    project_name: &'a str,
    resources: [ProjectResource<'a>; 1],
    version: &'a str,
}

#[derive(serde::Serialize)]
struct ProjectResource<'a> {
    api: ProjectApi,
    domain: &'a str,
    kind: &'a str,
    version: &'a str,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ProjectApi {
    crd_version: &'static str,
    namespaced: bool,
}

/// The files common to both types.
fn common(
    name: &str,
    kind: &str,
    layout: &str,
    watch: WatchEntry,
    spec: Value,
    managed: &[(String, String)],
) -> Vec<(String, String)> {
    let plural = plural_of(kind);
    let sample = json!({"apiVersion": format!("{GROUP}/{VERSION}"), "kind": kind,
                        "metadata": {"name": format!("{}-sample", kind.to_lowercase())}, "spec": spec});
    let api = ProjectApi { crd_version: "v1", namespaced: true };
    let project = Project {
        domain: GROUP,
        layout: [layout],
        project_name: name,
        resources: [ProjectResource { api, domain: GROUP, kind, version: VERSION }],
        version: "3",
    };
    vec![
        (
            "watches.yaml".into(),
            format!(
                "---\n# Use the 'create api' subcommand to add watches to this file.\n{}# +kubebuilder:scaffold:watch\n",
                yaml(&[watch])
            ),
        ),
        (format!("config/crd/bases/{GROUP}_{plural}.yaml"), format!("---\n{}", yaml(&crd(kind, &plural)))),
        ("config/rbac/role.yaml".into(), format!("---\n{}", yaml(&role(&plural, managed)))),
        (format!("config/samples/{GROUP}_{VERSION}_{}.yaml", kind.to_lowercase()), yaml(&sample)),
        ("PROJECT".into(), yaml(&project)),
    ]
}

/// A Helm project's files; the chart's own files are copied by `write`.
fn helm_files(
    name: &str,
    kind: &str,
    chart_name: &str,
    values: Value,
    managed: &[(String, String)],
) -> Vec<(String, String)> {
    let watch = WatchEntry { chart: Some(format!("helm-charts/{chart_name}")), ..WatchEntry::of(kind) };
    let mut files = common(name, kind, "helm.sdk.operatorframework.io/v1", watch, values, managed);
    files.push(("Dockerfile".into(), format!(
        "# Build the manager image (as operator-sdk scaffolds it); uc runs the project without it.\nFROM quay.io/operator-framework/helm-operator:{SDK_VERSION}\n\nENV HOME=/opt/helm\nCOPY watches.yaml ${{HOME}}/watches.yaml\nCOPY helm-charts  ${{HOME}}/helm-charts\nWORKDIR ${{HOME}}\n"
    )));
    files.push((
        "README.md".into(),
        README_HELM.replace("NAME", name).replace("KIND", kind).replace("LOWER", &kind.to_lowercase()),
    ));
    files
}

/// An Ansible project's files: a role that keeps a ConfigMap with the spec's greeting.
fn ansible_files(name: &str, kind: &str) -> Vec<(String, String)> {
    let lower = kind.to_lowercase();
    let watch = WatchEntry { role: Some(lower.clone()), ..WatchEntry::of(kind) };
    let managed = [(String::new(), "configmaps".to_string())];
    let mut files =
        common(name, kind, "ansible.sdk.operatorframework.io/v1", watch, json!({"greeting": "hello"}), &managed);
    let role = format!("roles/{lower}");
    files.extend([
        (format!("{role}/tasks/main.yml"), ROLE_TASKS.replace("KIND", kind)),
        (format!("{role}/defaults/main.yml"), format!("---\n# defaults file for {kind}\ngreeting: hello\n")),
        (format!("{role}/handlers/main.yml"), format!("---\n# handlers file for {kind}\n")),
        (format!("{role}/vars/main.yml"), format!("---\n# vars file for {kind}\n")),
        (format!("{role}/meta/main.yml"), format!("---\ngalaxy_info:\n  author: your name\n  description: reconciles {kind}\n  license: Apache-2.0\n  min_ansible_version: \"2.14\"\n  galaxy_tags: []\ndependencies: []\ncollections:\n- kubernetes.core\n- operator_sdk.util\n")),
        ("requirements.yml".into(), "---\ncollections:\n  - name: operator_sdk.util\n    version: \"0.5.0\"\n  - name: kubernetes.core\n    version: \"3.2.0\"\n".into()),
        ("Dockerfile".into(), format!(
            "# Build the manager image (as operator-sdk scaffolds it); uc runs the project without it.\nFROM quay.io/operator-framework/ansible-operator:{SDK_VERSION}\n\nCOPY requirements.yml ${{HOME}}/requirements.yml\nRUN ansible-galaxy collection install -r ${{HOME}}/requirements.yml \\\n && chmod -R ug+rwx ${{HOME}}/.ansible\n\nCOPY watches.yaml ${{HOME}}/watches.yaml\nCOPY roles/ ${{HOME}}/roles/\n"
        )),
        ("README.md".into(), README_ANSIBLE.replace("NAME", name).replace("KIND", kind).replace("LOWER", &lower)),
    ]);
    files
}

/// Files by relative path.
type Files = Vec<(String, Vec<u8>)>;

/// The chart a Helm project starts from: its name, its files (relative path, bytes).
fn chart_source(chart: Option<&Path>, name: &str) -> anyhow::Result<(String, Files)> {
    let Some(path) = chart else {
        return Ok((
            name.to_string(),
            uc_helm::create::files(name).into_iter().map(|(p, t)| (p, t.into_bytes())).collect(),
        ));
    };
    let loaded = if path.is_dir() {
        uc_helm::Chart::load_dir(path)?
    } else {
        let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        uc_helm::Chart::from_archive(&path.display().to_string(), &data)?
    };
    let chart_name = loaded.metadata["name"].as_str().unwrap_or(name).to_string();
    let mut files = Vec::new();
    if path.is_dir() {
        collect(path, path, &mut files)?;
    } else {
        let origin = path.display().to_string();
        files = uc_helm::chart::archive_files(&origin, &std::fs::read(path)?)?
            .into_iter()
            .map(|f| (f.name, f.data))
            .collect();
    }
    Ok((chart_name, files))
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect(root, &path, out)?;
        } else {
            let rel = path.strip_prefix(root)?.to_string_lossy().into_owned();
            out.push((rel, std::fs::read(&path)?));
        }
    }
    Ok(())
}

/// The `group`/`resource` pairs of what a chart makes with its defaults.
fn chart_kinds(files: &[(String, Vec<u8>)], chart_name: &str) -> Vec<(String, String)> {
    let dir = std::env::temp_dir().join(format!("uc-init-chart-{}-{chart_name}", std::process::id()));
    let written = files.iter().try_for_each(|(p, data)| -> std::io::Result<()> {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap_or(&dir))?;
        std::fs::write(path, data)
    });
    let manifest = written
        .ok()
        .and_then(|()| uc_helm::Chart::load_dir(&dir).ok())
        .and_then(|c| uc_helm::manifest(&c, &uc_helm::gotemplate::Value::Nil, &uc_helm::Options::default()).ok());
    let _ = std::fs::remove_dir_all(&dir);
    let mut kinds: Vec<(String, String)> = manifest
        .map(|m| {
            m.objects
                .iter()
                .filter_map(|o| serde_yaml_ng::from_str::<Value>(&o.content).ok())
                .map(|o| {
                    let api_version = o["apiVersion"].as_str().unwrap_or_default();
                    let group = api_version.split_once('/').map(|(g, _)| g).unwrap_or("").to_string();
                    (group, plural_of(o["kind"].as_str().unwrap_or_default()))
                })
                .collect()
        })
        .unwrap_or_default();
    kinds.push((String::new(), "secrets".into()));
    kinds.sort();
    kinds.dedup();
    kinds
}

/// Writes a new SDK project in `dir`.
pub fn write(name: &str, kind: &str, sdk: &SdkType, dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        bail!("{} exists: uc init makes a new directory", dir.display());
    }
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    match sdk {
        SdkType::Helm { chart } => {
            let (chart_name, chart_files) = chart_source(chart.as_deref(), &kind.to_lowercase())?;
            let values = chart_files
                .iter()
                .find(|(p, _)| p == "values.yaml")
                .and_then(|(_, d)| serde_yaml_ng::from_slice::<Value>(d).ok())
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({}));
            let managed = chart_kinds(&chart_files, &chart_name);
            files.extend(
                helm_files(name, kind, &chart_name, values, &managed).into_iter().map(|(p, t)| (p, t.into_bytes())),
            );
            files.extend(chart_files.into_iter().map(|(p, d)| (format!("helm-charts/{chart_name}/{p}"), d)));
        }
        SdkType::Ansible => files.extend(ansible_files(name, kind).into_iter().map(|(p, t)| (p, t.into_bytes()))),
    }
    for (path, content) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap_or(dir))?;
        std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

const ROLE_TASKS: &str = r#"---
# tasks file for KIND
- name: the greeting ConfigMap
  kubernetes.core.k8s:
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: "{{ ansible_operator_meta.name }}-greeting"
        namespace: "{{ ansible_operator_meta.namespace }}"
      data:
        greeting: "{{ greeting }}"

- name: report it in the status
  operator_sdk.util.k8s_status:
    api_version: example.com/v1alpha1
    kind: KIND
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    status:
      greeting: "{{ greeting }}"
"#;

const README_HELM: &str = r#"# NAME

A Helm operator, laid out as `operator-sdk init --plugins helm` and `create api` lay it out: each
`KIND` is a release of the chart in `helm-charts/`, its `spec` the chart's values.

```sh
uc up --watches-file watches.yaml                 # or, against any cluster: uc run --watches-file watches.yaml
kubectl apply -f config/samples/example.com_v1alpha1_LOWER.yaml
kubectl wait LOWER/LOWER-sample --for=condition=Deployed
helm list                                         # the release, stored as Helm stores it
uc package .                                      # an OLM bundle: bundle/
```

Edit the chart, and its default values in the sample; `config/rbac/role.yaml` lists what the operator
may touch. See uc's docs/sdk-operators.md.
"#;

const README_ANSIBLE: &str = r#"# NAME

An Ansible operator, laid out as `operator-sdk init --plugins ansible` and `create api` lay it out: each
`KIND` is reconciled by the role in `roles/LOWER` (its `spec` as the role's variables, in snake_case).

```sh
pip install ansible-runner ansible                # real Ansible, with kubernetes.core
uc up --watches-file watches.yaml                 # or, against any cluster: uc run --watches-file watches.yaml
kubectl apply -f config/samples/example.com_v1alpha1_LOWER.yaml
kubectl wait LOWER/LOWER-sample --for=condition=Successful
kubectl get configmap LOWER-sample-greeting -o jsonpath='{.data.greeting}'   # hello
uc package .                                      # an OLM bundle: bundle/
```

Edit `roles/LOWER/tasks/main.yml`; `config/rbac/role.yaml` lists what the operator may touch. See uc's
docs/sdk-operators.md.
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_and_files() {
        assert_eq!(
            (plural_of("Memcached"), plural_of("Policy"), plural_of("Box")),
            ("memcacheds".into(), "policies".into(), "boxes".into())
        );
        let files = ansible_files("demo", "Demo");
        let get = |p: &str| files.iter().find(|(q, _)| q == p).map(|(_, t)| t.clone()).unwrap();
        let watches: Value = serde_yaml_ng::from_str(&get("watches.yaml")).unwrap();
        assert_eq!(watches, json!([{"group": "example.com", "version": "v1alpha1", "kind": "Demo", "role": "demo"}]));
        let crd: Value = serde_yaml_ng::from_str(&get("config/crd/bases/example.com_demos.yaml")).unwrap();
        assert_eq!(
            crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        let sample: Value = serde_yaml_ng::from_str(&get("config/samples/example.com_v1alpha1_demo.yaml")).unwrap();
        assert_eq!(sample["spec"]["greeting"], "hello");
        assert!(get("roles/demo/tasks/main.yml").contains("kind: Demo"));
    }

    #[test]
    fn a_helm_project_from_helm_create() {
        let dir = std::env::temp_dir().join(format!("uc-init-sdk-{}", std::process::id()));
        write("web", "Web", &SdkType::Helm { chart: None }, &dir).unwrap();
        let watches: Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(dir.join("watches.yaml")).unwrap()).unwrap();
        assert_eq!(watches[0]["chart"], "helm-charts/web");
        let sample: Value = serde_yaml_ng::from_str(
            &std::fs::read_to_string(dir.join("config/samples/example.com_v1alpha1_web.yaml")).unwrap(),
        )
        .unwrap();
        assert_eq!(sample["spec"]["replicaCount"], 1, "the chart's values are the sample's spec");
        let role = std::fs::read_to_string(dir.join("config/rbac/role.yaml")).unwrap();
        assert!(role.contains("deployments") && role.contains("serviceaccounts") && role.contains("secrets"), "{role}");
        assert!(uc_helm::Chart::load_dir(&dir.join("helm-charts/web")).is_ok());
        assert!(write("web", "Web", &SdkType::Helm { chart: None }, &dir).unwrap_err().to_string().contains("exists"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
