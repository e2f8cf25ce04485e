//! What installing a bundle means, as OLM lays it out in an InstallPlan: one step per object — the CRDs
//! it owns, the CSV, a ServiceAccount and a Role and RoleBinding per entry of `permissions`, a
//! ClusterRole and ClusterRoleBinding per entry of `clusterPermissions`, then its other manifests —
//! each with the manifest to create. And what the CSV then creates: its Deployments, owned by it and
//! labelled as OLM labels them.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uc_api::meta::{NotAMap, json_of, meta_str, set_annotation, set_label};

use crate::config::SubscriptionConfig;
use crate::csv::Csv;
use crate::fbc::Bundle;
use crate::resolve::Choice;
use crate::subscription::{Subscription, SubscriptionSpec};

/// The kinds of objects an install labels as the CSV's (besides its Deployments, which it owns), swept
/// when the CSV is gone: `(apiVersion, kind)`.
pub const LABELLED_KINDS: &[(&str, &str)] = &[
    ("universalcontroller.njuics.cn/v1alpha1", "UniversalController"),
    ("metacontroller.k8s.io/v1alpha1", "CompositeController"),
    ("metacontroller.k8s.io/v1alpha1", "DecoratorController"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("v1", "ServiceAccount"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
];

/// Labels OLM puts on what a CSV owns.
pub const OWNER_LABEL: &str = "olm.owner";
/// See [`OWNER_LABEL`].
pub const OWNER_NAMESPACE_LABEL: &str = "olm.owner.namespace";
/// See [`OWNER_LABEL`].
pub const OWNER_KIND_LABEL: &str = "olm.owner.kind";
/// The annotation on a CSV (and its Deployments' pods) listing the namespaces it serves.
pub const TARGET_NAMESPACES_ANNOTATION: &str = "olm.targetNamespaces";
/// The annotation naming the OperatorGroup a CSV belongs to.
pub const OPERATOR_GROUP_ANNOTATION: &str = "olm.operatorGroup";

/// One step of an InstallPlan.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The CSV this step installs.
    pub resolving: String,
    /// The object.
    pub manifest: Value,
}

/// One step of a plan: the bundle it resolves, the object, and how it went (`Unknown`, `Created`,
/// `Present`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StepStatus {
    pub resolving: String,
    pub resource: StepResource,
    pub status: String,
}

/// A step's object: its group, version, kind and name, the catalog it came from, and its manifest
/// (JSON text, as OLM keeps it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StepResource {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub source_name: String,
    pub source_namespace: String,
    pub manifest: String,
}

impl Step {
    /// The step as an InstallPlan's `status.plan[]` entry.
    pub fn to_status(&self, source: &str, source_namespace: &str, status: &str) -> StepStatus {
        let s = |p: &str| self.manifest.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
        let api_version = s("/apiVersion");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version.as_str()));
        StepStatus {
            resolving: self.resolving.clone(),
            resource: StepResource {
                group: group.into(),
                version: version.into(),
                kind: s("/kind"),
                name: s("/metadata/name"),
                source_name: source.into(),
                source_namespace: source_namespace.into(),
                manifest: self.manifest.to_string(),
            },
            status: status.into(),
        }
    }
}

fn kind_of(o: &Value) -> &str {
    o.get("kind").and_then(Value::as_str).unwrap_or_default()
}

/// The RBAC objects of a CSV's permissions in `namespace`: per service account, the account, a Role
/// and its RoleBinding (namespaced permissions), a ClusterRole and its ClusterRoleBinding (cluster ones).
pub fn rbac(csv: &Csv, namespace: &str) -> Vec<Value> {
    let Some(spec) = csv.spec.install.as_ref().and_then(|i| i.spec.as_ref()) else { return Vec::new() };
    let name = csv.name();
    let mut out = Vec::new();
    let mut accounts: Vec<&str> = Vec::new();
    for p in spec.permissions.iter().chain(&spec.cluster_permissions) {
        if !accounts.contains(&p.service_account_name.as_str()) {
            accounts.push(&p.service_account_name);
        }
    }
    let meta = |name: &str, namespaced: bool| ObjectMeta {
        name: Some(name.into()),
        namespace: namespaced.then(|| namespace.into()),
        ..Default::default()
    };
    for sa in &accounts {
        out.push(json_of(&ServiceAccount { metadata: meta(sa, true), ..Default::default() }));
    }
    let subjects = |sa: &str| {
        let subject = Subject {
            kind: "ServiceAccount".into(),
            name: sa.into(),
            namespace: Some(namespace.into()),
            api_group: None,
        };
        Some(vec![subject])
    };
    let role_ref =
        |kind: &str, name: &str| RoleRef { api_group: RBAC_GROUP.into(), kind: kind.into(), name: name.into() };
    for p in &spec.permissions {
        let role = format!("{name}-{}", p.service_account_name);
        out.push(json_of(&Role { metadata: meta(&role, true), rules: Some(p.rules.clone()) }));
        let binding = RoleBinding {
            metadata: meta(&role, true),
            role_ref: role_ref("Role", &role),
            subjects: subjects(&p.service_account_name),
        };
        out.push(json_of(&binding));
    }
    for p in &spec.cluster_permissions {
        let role = format!("{name}-{}-{namespace}", p.service_account_name);
        out.push(json_of(&ClusterRole {
            metadata: meta(&role, false),
            rules: Some(p.rules.clone()),
            ..Default::default()
        }));
        let binding = ClusterRoleBinding {
            metadata: meta(&role, false),
            role_ref: role_ref("ClusterRole", &role),
            subjects: subjects(&p.service_account_name),
        };
        out.push(json_of(&binding));
    }
    out
}

/// The RBAC API group.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The service account a CSV's controllers act as: the first its `clusterPermissions` name, else the
/// first its `permissions` name — the account OLM creates and grants the CSV's rules to.
fn controller_account(csv: &Csv) -> Option<&str> {
    let spec = csv.spec.install.as_ref()?.spec.as_ref()?;
    spec.cluster_permissions
        .iter()
        .chain(&spec.permissions)
        .map(|p| p.service_account_name.as_str())
        .find(|n| !n.is_empty())
}

/// A controller of the bundle, made to act as the CSV's account in `namespace` (uc's engine then
/// writes its children with that account's rights only), unless it names an account itself: a
/// UniversalController through `spec.serviceAccountName`, a Metacontroller controller through uc's
/// annotation. Other objects are returned as they are.
fn acting_as(mut o: Value, account: Option<&str>, namespace: &str) -> Result<Value, PlanError> {
    let Some(sa) = account else { return Ok(o) };
    match kind_of(&o) {
        "UniversalController"
            if o.pointer("/spec/serviceAccountName").and_then(Value::as_str).is_none_or(str::is_empty) =>
        {
            if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("serviceAccountName".into(), json!(sa));
                spec.insert("serviceAccountNamespace".into(), json!(namespace));
            }
        }
        "CompositeController" | "DecoratorController" => {
            let annotations = o.pointer("/metadata/annotations").and_then(Value::as_object);
            if !annotations.is_some_and(|a| a.contains_key(SERVICE_ACCOUNT_ANNOTATION)) {
                let account = format!("{namespace}/{sa}");
                set_annotation(&mut o, SERVICE_ACCOUNT_ANNOTATION, &account).map_err(|e| metadata_error(&o, e))?;
            }
        }
        _ => {}
    }
    Ok(o)
}

/// A bundle's object whose labels or annotations cannot be written.
fn metadata_error(o: &Value, error: NotAMap) -> PlanError {
    PlanError::Metadata { object: format!("{} {:?}", kind_of(o), meta_str(o, "name")), error }
}

/// The annotation naming the account a Metacontroller controller acts as (uc's engine reads it).
const SERVICE_ACCOUNT_ANNOTATION: &str = "uc.njuics.cn/service-account";

/// The label OLM's Operator API puts on what an operator installed, `operators.coreos.com/<package>.<namespace>`:
/// on the CRDs an install creates, so that `kubectl delete crd -l <label>` removes them when asked
/// (uninstalling leaves them). None when the name is too long to be a label's.
pub fn operator_label(package: &str, namespace: &str) -> Option<String> {
    let name = format!("{package}.{namespace}");
    (name.len() <= 63).then(|| format!("operators.coreos.com/{name}"))
}

/// Why a bundle's install cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The bundle has no CSV among its manifests.
    #[error("bundle {0}: no ClusterServiceVersion in its manifests")]
    NoCsv(String),
    /// Its CSV does not read.
    #[error(transparent)]
    Csv(#[from] crate::csv::CsvError),
    /// A Deployment does not encode.
    #[error("a Deployment: {0}")]
    Encode(serde_json::Error),
    /// A bundle's object has labels or annotations (or metadata) that are not a map.
    #[error("{object}: {error}")]
    Metadata { object: String, error: NotAMap },
    /// The Subscription's `spec.config` does not read.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

/// The steps that install `bundle` into `namespace`, in OLM's order: CRDs, the CSV, RBAC, the rest.
pub fn steps(bundle: &Bundle, namespace: &str) -> Result<Vec<Step>, PlanError> {
    let csv_manifest = bundle
        .objects
        .iter()
        .find(|o| kind_of(o) == "ClusterServiceVersion")
        .ok_or_else(|| PlanError::NoCsv(bundle.name.clone()))?;
    let csv = Csv::from_value(csv_manifest)?;
    let step = |mut manifest: Value, namespaced: bool| {
        if let Some(meta) = manifest.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
            meta.remove("uid");
            if namespaced {
                meta.insert("namespace".into(), json!(namespace));
            } else {
                meta.remove("namespace");
            }
        }
        Step { resolving: bundle.name.clone(), manifest }
    };
    let package_label = operator_label(&bundle.package, namespace);
    let mut out: Vec<Step> = bundle
        .objects
        .iter()
        .filter(|o| kind_of(o) == "CustomResourceDefinition")
        .map(|o| {
            let mut crd = o.clone();
            if let Some(label) = &package_label {
                set_label(&mut crd, label, "").map_err(|e| metadata_error(o, e))?;
            }
            Ok(step(crd, false))
        })
        .collect::<Result<_, PlanError>>()?;
    // Sent as OLM sends it: through operator-framework/api's Go types.
    let mut csv_object = csv_manifest.clone();
    crate::go_zero::fill_csv(&mut csv_object);
    out.push(step(csv_object, true));
    let owned = |mut o: Value| {
        let owner = [
            (OWNER_LABEL, csv.name()),
            (OWNER_NAMESPACE_LABEL, namespace),
            (OWNER_KIND_LABEL, "ClusterServiceVersion"),
        ];
        for (label, value) in owner {
            set_label(&mut o, label, value).map_err(|e| metadata_error(&o, e))?;
        }
        Ok::<_, PlanError>(o)
    };
    for o in rbac(&csv, namespace) {
        let namespaced = o.pointer("/metadata/namespace").is_some();
        out.push(step(owned(o)?, namespaced));
    }
    let account = controller_account(&csv);
    for o in
        bundle.objects.iter().filter(|o| !matches!(kind_of(o), "CustomResourceDefinition" | "ClusterServiceVersion"))
    {
        let o = &acting_as(o.clone(), account, namespace)?;
        let cluster_scoped = matches!(
            kind_of(o),
            "ClusterRole"
                | "ClusterRoleBinding"
                | "PriorityClass"
                | "APIService"
                | "Namespace"
                | "UniversalController"
                | "CompositeController"
                | "DecoratorController"
        );
        out.push(step(owned(o.clone())?, !cluster_scoped));
    }
    Ok(out)
}

/// The step of a plan that subscribes to a dependency it installs, as OLM does (so the dependency is
/// upgraded on its channel like any package): the Subscription
/// `<package>-<channel>-<catalog>-<catalog namespace>` in `namespace`, starting at the CSV installed.
pub fn dependency_subscription(choice: &Choice, namespace: &str, approval: &str) -> Step {
    let (source_ns, source_name) = choice.source.split_once('/').unwrap_or(("", choice.source.as_str()));
    let name = format!("{}-{}-{source_name}-{source_ns}", choice.package, choice.channel);
    Step {
        resolving: choice.bundle.clone(),
        manifest: json_of(&Subscription::new(
            namespace,
            &name,
            SubscriptionSpec {
                name: choice.package.clone(),
                channel: Some(choice.channel.clone()),
                starting_csv: Some(choice.bundle.clone()),
                source: Some(source_name.into()),
                source_namespace: Some(source_ns.into()),
                install_plan_approval: Some(approval.into()),
                config: None,
            },
        )),
    }
}

/// The Deployments a CSV creates in its namespace: owned by it, labelled `olm.owner*`, their pods
/// annotated with the target namespaces, with its Subscription's `spec.config` applied.
pub fn deployments(
    csv_object: &Value,
    target_namespaces: &str,
    config: Option<&SubscriptionConfig>,
) -> Result<Vec<Deployment>, PlanError> {
    let csv = Csv::from_value(csv_object)?;
    let namespace = csv_object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
    let Some(spec) = csv.spec.install.as_ref().and_then(|i| i.spec.as_ref()) else { return Ok(Vec::new()) };
    let owner = OwnerReference {
        api_version: "operators.coreos.com/v1alpha1".into(),
        kind: "ClusterServiceVersion".into(),
        name: csv.name().into(),
        uid: csv_object.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().into(),
        controller: Some(false),
        block_owner_deletion: Some(false),
    };
    let deployment = |d: &crate::csv::StrategyDeployment| {
        let mut labels = d.label.clone().unwrap_or_default();
        labels.insert(OWNER_LABEL.into(), csv.name().to_string());
        labels.insert(OWNER_NAMESPACE_LABEL.into(), namespace.to_string());
        labels.insert(OWNER_KIND_LABEL.into(), "ClusterServiceVersion".into());
        let mut spec = d.spec.clone();
        let template = spec.template.metadata.get_or_insert_with(Default::default);
        let annotations = template.annotations.get_or_insert_with(Default::default);
        annotations.insert(TARGET_NAMESPACES_ANNOTATION.into(), target_namespaces.into());
        let metadata = ObjectMeta {
            name: Some(d.name.clone()),
            namespace: Some(namespace.into()),
            labels: Some(labels),
            owner_references: Some(vec![owner.clone()]),
            ..Default::default()
        };
        let mut deployment = Deployment { metadata, spec: Some(spec), ..Default::default() };
        if let Some(config) = config {
            crate::config::apply(&mut deployment, config);
        }
        deployment
    };
    Ok(spec.deployments.iter().map(deployment).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::bundle_from_objects;

    fn csv_object() -> Value {
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "memcached.v0.1.0", "namespace": "operators", "uid": "u1"},
            "spec": {"version": "0.1.0", "install": {"strategy": "deployment", "spec": {
                "deployments": [{"name": "memcached-operator", "spec": {
                    "selector": {"matchLabels": {"app": "m"}},
                    "template": {"metadata": {"labels": {"app": "m"}}, "spec": {"serviceAccountName": "memcached",
                        "containers": [{"name": "manager", "image": "quay.io/example/memcached-operator:v0.1.0"}]}}}}],
                "permissions": [{"serviceAccountName": "memcached", "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}],
                "clusterPermissions": [{"serviceAccountName": "memcached", "rules": [{"apiGroups": ["cache.example.com"], "resources": ["memcacheds"], "verbs": ["*"]}]}]
            }}}
        })
    }

    #[test]
    fn an_install_plan_lists_every_object_in_olms_order() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                         "metadata": {"name": "memcacheds.cache.example.com", "namespace": "stray"}});
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "metrics"}});
        let bundle = bundle_from_objects("memcached", vec![svc, csv_object(), crd]).unwrap();
        let steps = steps(&bundle, "operators").unwrap();
        let kinds: Vec<&str> = steps.iter().map(|s| kind_of(&s.manifest)).collect();
        assert_eq!(
            kinds,
            [
                "CustomResourceDefinition",
                "ClusterServiceVersion",
                "ServiceAccount",
                "Role",
                "RoleBinding",
                "ClusterRole",
                "ClusterRoleBinding",
                "Service"
            ]
        );
        assert!(steps[0].manifest["metadata"].get("namespace").is_none(), "a CRD is cluster-scoped");
        assert_eq!(steps[7].manifest["metadata"]["namespace"], "operators");
        assert_eq!(steps[4].manifest["subjects"][0]["name"], "memcached");
        assert_eq!(steps[7].manifest["metadata"]["labels"][OWNER_LABEL], "memcached.v0.1.0", "labelled as the CSV's");
        assert_eq!(
            steps[0].manifest["metadata"]["labels"],
            json!({"operators.coreos.com/memcached.operators": ""}),
            "CRDs outlive their operator (not olm.owner), found by the package's label when asked"
        );
        assert_eq!(operator_label(&"x".repeat(60), "operators"), None, "too long for a label");
        let status = serde_json::to_value(steps[1].to_status("uc-operators", "olm", "Unknown")).unwrap();
        assert_eq!(status["resource"]["group"], "operators.coreos.com");
        assert_eq!(status["resource"]["kind"], "ClusterServiceVersion");
        assert_eq!(status["resolving"], "memcached.v0.1.0");
    }

    #[test]
    fn a_bundle_object_whose_labels_are_no_map_is_refused_with_its_field() {
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "metrics", "labels": "x"}});
        let bundle = bundle_from_objects("memcached", vec![svc, csv_object()]).unwrap();
        let e = steps(&bundle, "operators").unwrap_err();
        assert_eq!(e.to_string(), "Service \"metrics\": metadata.labels: must be an object");
        let composite = json!({"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
                               "metadata": {"name": "c", "annotations": ["x"]}});
        let bundle = bundle_from_objects("memcached", vec![composite, csv_object()]).unwrap();
        let e = steps(&bundle, "operators").unwrap_err();
        assert_eq!(e.to_string(), "CompositeController \"c\": metadata.annotations: must be an object");
    }

    #[test]
    fn the_bundles_controllers_act_as_the_csvs_account() {
        let uc = json!({"apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController",
                        "metadata": {"name": "memcached"}, "spec": {"parentResource": {"apiVersion": "v1", "resource": "configmaps"}}});
        let own = json!({"apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController",
                         "metadata": {"name": "own"}, "spec": {"serviceAccountName": "mine"}});
        let composite = json!({"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
                               "metadata": {"name": "meta"}, "spec": {}});
        let bundle = bundle_from_objects("memcached", vec![csv_object(), uc, own, composite]).unwrap();
        let steps = steps(&bundle, "operators").unwrap();
        let named = |n: &str| {
            let controller =
                |s: &&Step| kind_of(&s.manifest).ends_with("Controller") && s.manifest["metadata"]["name"] == n;
            &steps.iter().find(controller).unwrap().manifest
        };
        assert_eq!(
            named("memcached")["spec"]["serviceAccountName"],
            "memcached",
            "the CSV's clusterPermissions account"
        );
        assert_eq!(named("memcached")["spec"]["serviceAccountNamespace"], "operators", "in the install namespace");
        assert_eq!(named("own")["spec"]["serviceAccountName"], "mine", "its own account stays");
        assert!(named("own")["spec"].get("serviceAccountNamespace").is_none());
        assert_eq!(named("meta")["metadata"]["annotations"][SERVICE_ACCOUNT_ANNOTATION], "operators/memcached");
        let mut none = csv_object();
        none["spec"]["install"]["spec"] = json!({"deployments": []});
        assert_eq!(controller_account(&Csv::from_value(&none).unwrap()), None, "no permissions: the engine's own");
    }

    #[test]
    fn a_csvs_deployments_are_owned_and_labelled() {
        let ds = deployments(&csv_object(), "operators", None).unwrap();
        assert_eq!(ds.len(), 1);
        let d = &serde_json::to_value(&ds[0]).unwrap();
        assert_eq!(d["metadata"]["labels"][OWNER_LABEL], "memcached.v0.1.0");
        assert_eq!(d["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(d["spec"]["template"]["metadata"]["annotations"][TARGET_NAMESPACES_ANNOTATION], "operators");
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["name"], "manager");
    }

    #[test]
    fn a_dependency_gets_a_subscription_named_as_olm_names_it() {
        let choice = Choice {
            source: "olm/uc-operators".into(),
            package: "etcd".into(),
            channel: "alpha".into(),
            bundle: "etcd.v0.1.0".into(),
        };
        let step = dependency_subscription(&choice, "ops", "Manual");
        assert_eq!(step.resolving, "etcd.v0.1.0");
        let m = &step.manifest;
        assert_eq!(m["metadata"]["name"], "etcd-alpha-uc-operators-olm");
        assert_eq!(m["metadata"]["namespace"], "ops");
        assert_eq!(
            (
                &m["spec"]["source"],
                &m["spec"]["sourceNamespace"],
                &m["spec"]["startingCSV"],
                &m["spec"]["installPlanApproval"]
            ),
            (&json!("uc-operators"), &json!("olm"), &json!("etcd.v0.1.0"), &json!("Manual"))
        );
    }
}
