//! `uc rbac`: the ClusterRole an engine needs — its own rules (uc's CRDs and controller objects, its
//! lease, Events) and, per UniversalController it will run, the parent's and the children's verbs, the
//! ConfigMaps and Secrets its hooks name — computed from the controller objects, so that the engine's
//! identity can do what its controllers need and nothing else.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use uc_api::controller::UniversalControllerSpec;

const READ: &[&str] = &["get", "list", "watch"];
const OWN: &[&str] = &["get", "list", "watch", "create", "update", "patch", "delete"];

/// The native hooks (uc's operators) that read and make Secrets.
const NATIVE_WITH_SECRETS: &[&str] = &[
    uc_operators::etcd::HOOK,
    uc_operators::etcd::backup::HOOK,
    uc_operators::etcd::restore::HOOK,
    uc_operators::zookeeper::HOOK,
    uc_operators::multicluster::HOOK,
];

/// Rules being collected: verbs per (apiGroup, resource).
#[derive(Default)]
pub struct Rules(BTreeMap<(String, String), BTreeSet<String>>);

impl Rules {
    fn allow(&mut self, group: &str, resource: &str, verbs: &[&str]) {
        let e = self.0.entry((group.to_string(), resource.to_string())).or_default();
        e.extend(verbs.iter().map(|v| v.to_string()));
    }

    /// The engine's own needs, whatever controllers it runs.
    pub fn engine(&mut self, metacontroller: bool) {
        // uc's CRDs, installed (or upgraded) at start.
        self.allow("apiextensions.k8s.io", "customresourcedefinitions", &["get", "list", "watch", "create", "update"]);
        let uc = uc_api::controller::GROUP;
        self.allow(uc, "universalcontrollers", &["get", "list", "watch", "update", "patch"]);
        self.allow(uc, "universalcontrollers/status", &["get", "update", "patch"]);
        self.allow(uc, "controllerrevisions", OWN);
        if metacontroller {
            for r in ["compositecontrollers", "decoratorcontrollers"] {
                self.allow("metacontroller.k8s.io", r, &["get", "list", "watch", "update", "patch"]);
                self.allow("metacontroller.k8s.io", &format!("{r}/status"), &["get", "update", "patch"]);
            }
        }
        self.allow("", "events", &["create", "patch", "update"]);
        self.allow("events.k8s.io", "events", &["create", "patch", "update"]);
        // The leader lease.
        self.allow("coordination.k8s.io", "leases", &["get", "list", "watch", "create", "update"]);
        // In-cluster names for webhooks addressed by Service (the engine resolves them itself).
        self.allow("", "services", READ);
        self.allow("", "endpoints", READ);
        self.allow("discovery.k8s.io", "endpointslices", READ);
        // Who may read `/metrics` and `/debug/*`: the engine asks the cluster, as kube's secure
        // endpoints do.
        self.allow("authentication.k8s.io", "tokenreviews", &["create"]);
        self.allow("authorization.k8s.io", "subjectaccessreviews", &["create"]);
    }

    /// What one controller's spec needs.
    pub fn controller(&mut self, spec: &UniversalControllerSpec) {
        let p = &spec.parent_resource;
        let group = group_of(&p.api_version);
        self.allow(group, &p.resource, &["get", "list", "watch", "update", "patch"]);
        self.allow(group, &format!("{}/status", p.resource), &["get", "update", "patch"]);
        // Owner references that block deletion need the parent's finalizers subresource.
        self.allow(group, &format!("{}/finalizers", p.resource), &["update"]);
        // A controller that acts as its own service account: the engine impersonates it (the account
        // and its groups); what the children need is then the account's to hold.
        if spec.service_account_name.as_deref().is_some_and(|n| !n.is_empty()) {
            self.allow("", "serviceaccounts", &["impersonate"]);
            self.allow("", "groups", &["impersonate"]);
        }
        self.account(spec);
    }

    /// What the identity a controller acts as needs: its children's verbs, and reading the ConfigMaps
    /// and Secrets its hooks name (the rules of its service account, when it names one).
    pub fn account(&mut self, spec: &UniversalControllerSpec) {
        for c in &spec.child_resources {
            self.allow(group_of(&c.api_version), &c.resource, OWN);
        }
        let hooks = [&spec.hooks.sync, &spec.hooks.finalize, &spec.hooks.customize];
        for hook in hooks.into_iter().flatten() {
            if let Some(js) = &hook.javascript {
                if js.config_map_ref.is_some() {
                    self.allow("", "configmaps", READ);
                }
                if js.secret_ref.is_some() {
                    self.allow("", "secrets", READ);
                }
            }
            // uc's operators (native hooks) read their parents' Secrets (backup credentials, the
            // admin password) and make the admin Secret.
            if hook.native.as_ref().is_some_and(|n| NATIVE_WITH_SECRETS.contains(&n.name.as_str())) {
                self.allow("", "secrets", &["get", "list", "watch", "create"]);
            }
            if let Some(w) = &hook.webhook
                && (w.authorization.is_some() || w.basic_auth.is_some() || w.client_tls.is_some())
            {
                self.allow("", "secrets", READ);
            }
        }
        if spec
            .endpoint_configs
            .iter()
            .any(|e| e.authorization.is_some() || e.basic_auth.is_some() || e.client_tls.is_some())
        {
            self.allow("", "secrets", READ);
        }
    }

    /// The rules, resources with the same verbs in one group together.
    pub fn policy_rules(&self) -> Vec<PolicyRule> {
        let mut grouped: BTreeMap<(String, Vec<String>), Vec<String>> = BTreeMap::new();
        for ((group, resource), verbs) in &self.0 {
            grouped.entry((group.clone(), verbs.iter().cloned().collect())).or_default().push(resource.clone());
        }
        grouped
            .into_iter()
            .map(|((group, verbs), resources)| PolicyRule {
                api_groups: Some(vec![group]),
                resources: Some(resources),
                verbs,
                ..Default::default()
            })
            .collect()
    }
}

/// The group of an `apiVersion` (`""` for the core group's `v1`).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
}

/// A UniversalController among the documents that does not read (which, and why).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidController(pub String);

/// The UniversalController specs among `docs` (other kinds are skipped); an invalid one is an error
/// naming it.
pub fn controllers(docs: &[Value]) -> Result<Vec<(String, UniversalControllerSpec)>, InvalidController> {
    let mut out = Vec::new();
    for d in docs {
        if d.get("kind").and_then(Value::as_str) != Some("UniversalController") {
            continue;
        }
        let name = d.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("<unnamed>").to_string();
        let spec: UniversalControllerSpec = serde_json::from_value(d.get("spec").cloned().unwrap_or(Value::Null))
            .map_err(|e| InvalidController(format!("UniversalController {name}: spec: {e}")))?;
        out.push((name, spec));
    }
    Ok(out)
}

fn collect(controllers: &[(String, UniversalControllerSpec)], engine: bool, metacontroller: bool) -> Rules {
    let mut rules = Rules::default();
    if engine {
        rules.engine(metacontroller);
    }
    for (_, spec) in controllers {
        rules.controller(spec);
    }
    rules
}

/// Only the rules, as a YAML list.
pub fn rules_yaml(controllers: &[(String, UniversalControllerSpec)], engine: bool, metacontroller: bool) -> String {
    serde_yaml_ng::to_string(&collect(controllers, engine, metacontroller).policy_rules()).unwrap_or_default()
}

/// The ClusterRole (and, for `service_account` `ns/name`, its binding) as YAML documents.
pub fn manifests(
    name: &str,
    controllers: &[(String, UniversalControllerSpec)],
    engine: bool,
    metacontroller: bool,
    service_account: Option<(&str, &str)>,
) -> String {
    let rules = collect(controllers, engine, metacontroller).policy_rules();
    let names: Vec<&str> = controllers.iter().map(|(n, _)| n.as_str()).collect();
    let role = cluster_role(name, (!names.is_empty()).then(|| names.join(",")), rules);
    let mut out = String::new();
    let customize: Vec<&str> =
        controllers.iter().filter(|(_, s)| s.hooks.customize.is_some()).map(|(n, _)| n.as_str()).collect();
    if !customize.is_empty() {
        out.push_str(&format!(
            "# {}: a customize hook names related resources at run time; add get/list/watch rules for them.\n",
            customize.join(", ")
        ));
    }
    out.push_str("---\n");
    out.push_str(&serde_yaml_ng::to_string(&role).unwrap_or_default());
    if let Some((ns, sa)) = service_account {
        out.push_str(&binding(name, ns, sa));
    }
    // Each controller that acts as its own account: the role that account needs, bound to it.
    for (controller, spec) in controllers {
        let Some(sa) = spec.service_account_name.as_deref().filter(|n| !n.is_empty()) else { continue };
        let ns = spec.service_account_namespace.as_deref().filter(|n| !n.is_empty()).unwrap_or("default");
        let role_name = format!("uc-controller-{controller}");
        let role = cluster_role(&role_name, Some(controller.clone()), account_rules(std::slice::from_ref(spec)));
        out.push_str(&format!("---\n# What {ns}/{sa}, the account {controller} acts as, needs.\n"));
        out.push_str(&serde_yaml_ng::to_string(&role).unwrap_or_default());
        out.push_str(&binding(&role_name, ns, sa));
    }
    out
}

/// The rules the accounts of `specs` need together (a bundle's `clusterPermissions`).
pub fn account_rules(specs: &[UniversalControllerSpec]) -> Vec<PolicyRule> {
    let mut rules = Rules::default();
    for spec in specs {
        rules.account(spec);
    }
    rules.policy_rules()
}

/// uc's labels, and the controllers a role is for (`uc.njuics.cn/controllers`), as metadata.
fn uc_meta(name: &str, controllers: Option<String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        labels: Some(BTreeMap::from([("app.kubernetes.io/name".to_string(), "uc".to_string())])),
        annotations: controllers.map(|c| BTreeMap::from([("uc.njuics.cn/controllers".to_string(), c)])),
        ..Default::default()
    }
}

fn cluster_role(name: &str, controllers: Option<String>, rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole { metadata: uc_meta(name, controllers), rules: Some(rules), ..Default::default() }
}

/// A ClusterRoleBinding of the ClusterRole `name` to the service account `ns/sa`, as a YAML document.
fn binding(name: &str, ns: &str, sa: &str) -> String {
    let binding = ClusterRoleBinding {
        metadata: uc_meta(name, None),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: name.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: sa.into(),
            namespace: Some(ns.into()),
            ..Default::default()
        }]),
    };
    format!("---\n{}", serde_yaml_ng::to_string(&binding).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sample() -> Value {
        serde_yaml_ng::from_str(include_str!("../../../examples/sample-controller/controller.yaml")).unwrap()
    }

    fn rule_for<'a>(rules: &'a [PolicyRule], group: &str, resource: &str) -> Option<&'a PolicyRule> {
        rules.iter().find(|r| {
            r.api_groups.as_deref() == Some(&[group.to_string()]) && r.resources.iter().flatten().any(|x| x == resource)
        })
    }

    fn verbs(rule: Option<&PolicyRule>) -> Vec<String> {
        rule.map(|r| r.verbs.clone()).unwrap_or_default()
    }

    #[test]
    fn the_sample_controller_gets_its_parent_children_and_hook_configmap() {
        let ucs = controllers(&[sample()]).unwrap();
        let mut rules = Rules::default();
        rules.controller(&ucs[0].1);
        let r = rules.policy_rules();
        assert_eq!(verbs(rule_for(&r, "njuics.cn", "foos")), ["get", "list", "patch", "update", "watch"]);
        assert_eq!(verbs(rule_for(&r, "njuics.cn", "foos/status")), ["get", "patch", "update"]);
        assert!(verbs(rule_for(&r, "apps", "deployments")).contains(&"delete".to_string()), "children are its own");
        assert_eq!(verbs(rule_for(&r, "", "configmaps")), ["get", "list", "watch"], "its hook's ConfigMap");
        assert!(rule_for(&r, "", "secrets").is_none(), "no hook names a Secret");
        assert!(rule_for(&r, "njuics.cn", "deployments").is_none());
        assert!(rule_for(&r, "", "serviceaccounts").is_none(), "it acts as the engine");
        let mut own = ucs[0].1.clone();
        own.service_account_name = Some("sample".into());
        let mut rules = Rules::default();
        rules.controller(&own);
        let r = rules.policy_rules();
        assert_eq!(verbs(rule_for(&r, "", "serviceaccounts")), ["impersonate"], "the engine acts as the account");
        assert_eq!(verbs(rule_for(&r, "", "groups")), ["impersonate"]);
        // The account's own role: its children and its hook's source, not the parent.
        let mine = account_rules(std::slice::from_ref(&own));
        assert!(verbs(rule_for(&mine, "apps", "deployments")).contains(&"create".to_string()));
        assert_eq!(verbs(rule_for(&mine, "", "configmaps")), ["get", "list", "watch"]);
        assert!(rule_for(&mine, "njuics.cn", "foos").is_none() && rule_for(&mine, "", "serviceaccounts").is_none());
        let mut named = sample();
        named["spec"]["serviceAccountName"] = json!("sample");
        named["spec"]["serviceAccountNamespace"] = json!("team-a");
        let text = manifests("uc-engine", &controllers(&[named]).unwrap(), true, false, None);
        let docs: Vec<Value> =
            text.split("---\n").filter(|d| !d.trim().is_empty()).map(|d| serde_yaml_ng::from_str(d).unwrap()).collect();
        assert_eq!(docs.len(), 3, "the engine's role, the account's role and its binding");
        assert_eq!(docs[1]["metadata"]["name"], "uc-controller-sample-controller");
        assert_eq!(docs[2]["subjects"][0], json!({"kind": "ServiceAccount", "name": "sample", "namespace": "team-a"}));
    }

    #[test]
    fn rules_with_the_same_verbs_share_a_rule() {
        let mut rules = Rules::default();
        rules.allow("apps", "deployments", READ);
        rules.allow("apps", "statefulsets", READ);
        rules.allow("apps", "replicasets", OWN);
        let r = rules.policy_rules();
        assert_eq!(r.len(), 2);
        assert_eq!(rule_for(&r, "apps", "deployments"), rule_for(&r, "apps", "statefulsets"));
    }

    #[test]
    fn the_manifest_binds_the_role_to_the_service_account() {
        let ucs = controllers(&[sample(), json!({"kind": "ConfigMap"})]).unwrap();
        let text = manifests("uc-engine", &ucs, true, false, Some(("uc-system", "uc")));
        let docs: Vec<Value> =
            text.split("---\n").filter(|d| !d.trim().is_empty()).map(|d| serde_yaml_ng::from_str(d).unwrap()).collect();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["metadata"]["annotations"]["uc.njuics.cn/controllers"], "sample-controller");
        let rules: Vec<PolicyRule> = serde_json::from_value(docs[0]["rules"].clone()).unwrap();
        let rules = rules.as_slice();
        assert!(rule_for(rules, "coordination.k8s.io", "leases").is_some(), "the engine's lease");
        assert!(rule_for(rules, "authentication.k8s.io", "tokenreviews").is_some(), "who reads /metrics");
        assert!(rule_for(rules, "authorization.k8s.io", "subjectaccessreviews").is_some());
        assert!(rule_for(rules, "metacontroller.k8s.io", "compositecontrollers").is_none());
        assert_eq!(docs[1]["subjects"][0], json!({"kind": "ServiceAccount", "name": "uc", "namespace": "uc-system"}));
    }

    #[test]
    fn an_invalid_controller_is_named() {
        let bad = json!({"kind": "UniversalController", "metadata": {"name": "broken"}, "spec": {"parentResource": 3}});
        let e = controllers(&[bad]).err().unwrap();
        assert!(e.0.contains("broken") && e.0.contains("spec"), "{e}");
    }
}
