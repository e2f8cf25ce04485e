//! The resource registry: every served resource type, built-in or defined by a CRD, with what the
//! handlers, discovery and OpenAPI need to know about it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;
use uc_api::{GroupResource, Pointer};

use crate::error::FieldError;
use crate::schema::Schema;

/// Where the scale subresource finds replicas and the selector.
#[derive(Debug, Clone)]
pub struct ScalePaths {
    /// JSON path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas: String,
    /// JSON path of the observed replicas.
    pub status_replicas: String,
    /// JSON path of the label selector string, if any.
    pub label_selector: Option<String>,
}

/// A printer column (`additionalPrinterColumns`).
#[derive(Debug, Clone)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type: string, integer, number, boolean, date.
    pub ty: String,
    /// Format hint.
    pub format: String,
    /// Description.
    pub description: String,
    /// 0 = shown by default, >0 = only with `-o wide`.
    pub priority: i64,
    /// JSON path evaluated against the object.
    pub json_path: String,
}

/// One served version of a resource.
#[derive(Debug, Clone)]
pub struct VersionInfo {
    /// Version name, e.g. `v1`.
    pub name: String,
    /// Structural schema (CRDs).
    pub schema: Option<Arc<Schema>>,
    /// Extra printer columns (CRDs).
    pub printer_columns: Vec<PrinterColumn>,
    /// Whether `/status` is served.
    pub status: bool,
    /// The scale subresource, if served.
    pub scale: Option<ScalePaths>,
    /// Deprecated version?
    pub deprecated: bool,
}

/// A served resource type.
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    /// API group ("" for core).
    pub group: String,
    /// Served versions, most preferred first.
    pub versions: Vec<VersionInfo>,
    /// The version objects are stored in.
    pub storage_version: String,
    /// Plural name.
    pub resource: String,
    /// Singular name.
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// List kind.
    pub list_kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names.
    pub short_names: Vec<String>,
    /// Categories, e.g. `all`.
    pub categories: Vec<String>,
    /// Serves `/log` (pods).
    pub log: bool,
    /// Tracks `metadata.generation`.
    pub generation: bool,
    /// The CRD that defines this resource.
    pub crd: Option<String>,
    /// A review (authentication.k8s.io, authorization.k8s.io): only created, answered, never stored.
    pub review: bool,
}

impl ResourceInfo {
    /// `v1 componentstatuses`: computed on each read, get and list only (`component_status.rs`).
    pub fn is_component_status(&self) -> bool {
        self.group.is_empty() && self.resource == "componentstatuses"
    }

    /// `v1 bindings`: the older form of `pods/<name>/binding`, only created, never stored
    /// (`handlers/binding.rs`).
    pub fn is_legacy_binding(&self) -> bool {
        self.group.is_empty() && self.resource == "bindings"
    }

    /// Where its objects are stored (events.k8s.io Events are the core ones: `views.rs`).
    pub fn gr(&self) -> GroupResource {
        crate::views::storage_of(&self.group, &self.resource)
    }

    /// The apiVersion its objects are stored with.
    pub fn storage_api_version(&self) -> String {
        crate::views::storage_api_version(&self.group, &self.resource, &self.storage_version)
    }

    /// A served version by name.
    pub fn version(&self, name: &str) -> Option<&VersionInfo> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// `apiVersion` of a version of this resource.
    pub fn api_version(&self, version: &str) -> String {
        uc_api::resource::api_version(&self.group, version)
    }

    /// Whether `av` is the `apiVersion` of a version of this resource (`api_version` without writing
    /// it out: a response's or a body's object usually has it already).
    pub fn is_api_version(&self, version: &str, av: &str) -> bool {
        match av.split_once('/') {
            Some((group, v)) => !self.group.is_empty() && group == self.group && v == version,
            None => self.group.is_empty() && av == version,
        }
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    status: bool,
    scale: bool,
    generation: bool,
    all: bool,
}

const fn b(
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
) -> Builtin {
    Builtin {
        group,
        version,
        resource,
        kind,
        namespaced,
        short,
        status: false,
        scale: false,
        generation: false,
        all: false,
    }
}

const fn with(mut x: Builtin, status: bool, scale: bool, generation: bool, all: bool) -> Builtin {
    x.status = status;
    x.scale = scale;
    x.generation = generation;
    x.all = all;
    x
}

const BUILTINS: &[Builtin] = &[
    with(b("", "v1", "namespaces", "Namespace", false, &["ns"]), true, false, false, false),
    with(b("", "v1", "pods", "Pod", true, &["po"]), true, false, true, true),
    with(b("", "v1", "services", "Service", true, &["svc"]), true, false, false, true),
    b("", "v1", "endpoints", "Endpoints", true, &["ep"]),
    b("", "v1", "configmaps", "ConfigMap", true, &["cm"]),
    b("", "v1", "limitranges", "LimitRange", true, &["limits"]),
    with(b("", "v1", "resourcequotas", "ResourceQuota", true, &["quota"]), true, false, false, false),
    b("", "v1", "podtemplates", "PodTemplate", true, &[]),
    b("", "v1", "bindings", "Binding", true, &[]),
    b("", "v1", "secrets", "Secret", true, &[]),
    with(b("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, &["pvc"]), true, false, false, false),
    with(b("", "v1", "persistentvolumes", "PersistentVolume", false, &["pv"]), true, false, false, false),
    b("", "v1", "events", "Event", true, &["ev"]),
    b("", "v1", "serviceaccounts", "ServiceAccount", true, &["sa"]),
    b("", "v1", "componentstatuses", "ComponentStatus", false, &["cs"]),
    with(b("", "v1", "nodes", "Node", false, &["no"]), true, false, false, false),
    with(b("", "v1", "replicationcontrollers", "ReplicationController", true, &["rc"]), true, true, true, true),
    with(b("apps", "v1", "deployments", "Deployment", true, &["deploy"]), true, true, true, true),
    with(b("apps", "v1", "replicasets", "ReplicaSet", true, &["rs"]), true, true, true, true),
    with(b("apps", "v1", "statefulsets", "StatefulSet", true, &["sts"]), true, true, true, true),
    with(b("apps", "v1", "daemonsets", "DaemonSet", true, &["ds"]), true, false, true, true),
    b("apps", "v1", "controllerrevisions", "ControllerRevision", true, &[]),
    with(b("batch", "v1", "jobs", "Job", true, &[]), true, false, true, true),
    with(b("batch", "v1", "cronjobs", "CronJob", true, &["cj"]), true, false, true, true),
    b("coordination.k8s.io", "v1", "leases", "Lease", true, &[]),
    b("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true, &[]),
    b("events.k8s.io", "v1", "events", "Event", true, &[]),
    with(b("networking.k8s.io", "v1", "ingresses", "Ingress", true, &["ing"]), true, false, true, false),
    with(b("networking.k8s.io", "v1", "ingressclasses", "IngressClass", false, &[]), false, false, true, false),
    with(
        b("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true, &["netpol"]),
        false,
        false,
        true,
        false,
    ),
    b("storage.k8s.io", "v1", "storageclasses", "StorageClass", false, &["sc"]),
    b("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false, &["pc"]),
    with(
        b("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, &["hpa"]),
        true,
        false,
        false,
        true,
    ),
    with(b("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, &["pdb"]), true, false, true, false),
    with(b("apiregistration.k8s.io", "v1", "apiservices", "APIService", false, &[]), true, false, false, false),
    with(
        b("certificates.k8s.io", "v1", "certificatesigningrequests", "CertificateSigningRequest", false, &["csr"]),
        true,
        false,
        false,
        false,
    ),
    b("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false, &[]),
    b("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false, &[]),
    b("rbac.authorization.k8s.io", "v1", "roles", "Role", true, &[]),
    b("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true, &[]),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        false,
        &[],
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        false,
        &[],
    ),
    b("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", false, &[]),
    b("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", false, &[]),
    b("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", false, &[]),
    b("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", false, &[]),
    b("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", false, &[]),
    b("authorization.k8s.io", "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", true, &[]),
    with(
        b(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            &["crd", "crds"],
        ),
        true,
        false,
        true,
        false,
    ),
];

fn builtin_info(x: &Builtin) -> ResourceInfo {
    let scale = x.scale.then(|| ScalePaths {
        spec_replicas: ".spec.replicas".into(),
        status_replicas: ".status.replicas".into(),
        label_selector: Some(".status.selector".into()),
    });
    ResourceInfo {
        group: x.group.into(),
        versions: vec![VersionInfo {
            name: x.version.into(),
            schema: None,
            printer_columns: Vec::new(),
            status: x.status,
            scale,
            deprecated: false,
        }],
        storage_version: x.version.into(),
        resource: x.resource.into(),
        singular: x.kind.to_lowercase(),
        kind: x.kind.into(),
        list_kind: format!("{}List", x.kind),
        namespaced: x.namespaced,
        short_names: x.short.iter().map(|s| s.to_string()).collect(),
        categories: if x.all { vec!["all".into()] } else { Vec::new() },
        log: x.resource == "pods",
        generation: x.generation,
        crd: None,
        review: matches!(x.group, "authentication.k8s.io" | "authorization.k8s.io"),
    }
}

/// The registry of served resources. Built-ins are fixed; CRD-defined ones come and go.
pub struct Registry {
    resources: RwLock<HashMap<GroupResource, Arc<ResourceInfo>>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// A registry holding the built-in resources.
    pub fn new() -> Self {
        let resources =
            BUILTINS.iter().map(|x| (GroupResource::new(x.group, x.resource), Arc::new(builtin_info(x)))).collect();
        let registry = Self { resources: RwLock::new(resources) };
        // CustomResourceDefinitions are also served at v1beta1, converted (views.rs), for older bundles.
        let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
        if let Some(info) = registry.get(&crds) {
            let mut info = (*info).clone();
            let mut beta = info.versions[0].clone();
            beta.name = "v1beta1".into();
            beta.deprecated = true;
            info.versions.push(beta);
            registry.resources.write().insert(crds, Arc::new(info));
        }
        // HorizontalPodAutoscalers are also served at autoscaling/v1, converted (views.rs), as kube serves them.
        let hpas = GroupResource::new("autoscaling", "horizontalpodautoscalers");
        if let Some(info) = registry.get(&hpas) {
            let mut info = (*info).clone();
            let mut v1 = info.versions[0].clone();
            v1.name = "v1".into();
            info.versions.push(v1);
            registry.resources.write().insert(hpas, Arc::new(info));
        }
        registry
    }

    /// A resource by group and plural name.
    pub fn get(&self, gr: &GroupResource) -> Option<Arc<ResourceInfo>> {
        self.resources.read().get(gr).cloned()
    }

    /// A resource served at group/version under this plural name.
    pub fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceInfo>> {
        let r = self.get(&GroupResource::new(group, resource))?;
        r.version(version).is_some().then_some(r)
    }

    /// Every resource, sorted by group then resource.
    pub fn all(&self) -> Vec<Arc<ResourceInfo>> {
        let mut v: Vec<_> = self.resources.read().values().cloned().collect();
        v.sort_by(|a, b| {
            (group_rank(&a.group), &a.group, &a.resource).cmp(&(group_rank(&b.group), &b.group, &b.resource))
        });
        v
    }

    /// Served groups with their versions (preferred first), in discovery order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: BTreeMap<(u8, String), Vec<String>> = BTreeMap::new();
        for r in self.all() {
            let versions = groups.entry((group_rank(&r.group), r.group.clone())).or_default();
            for v in &r.versions {
                if !versions.contains(&v.name) {
                    versions.push(v.name.clone());
                }
            }
        }
        groups
            .into_iter()
            .map(|((_, g), mut vs)| {
                vs.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
                (g, vs)
            })
            .collect()
    }

    /// Installs or replaces the resource a CRD defines.
    pub fn install_crd(&self, info: ResourceInfo) {
        self.resources.write().insert(info.gr(), Arc::new(info));
    }

    /// Removes the resource a CRD defined (built-ins are never removed).
    pub fn remove_crd(&self, gr: &GroupResource) {
        let mut map = self.resources.write();
        if map.get(gr).is_some_and(|r| r.crd.is_some()) {
            map.remove(gr);
        }
    }
}

fn group_rank(group: &str) -> u8 {
    match group {
        "" => 0,
        g if !g.contains('.') || g.ends_with(".k8s.io") => 1,
        _ => 2,
    }
}

/// Kubernetes version ordering: GA > beta > alpha, then by number (v2 > v1, v1beta2 > v1beta1).
pub fn version_priority(v: &str) -> (u8, u64, u64) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let Ok(major) = digits.parse::<u64>() else {
        return (0, 0, 0);
    };
    let tail = &rest[digits.len()..];
    let (rank, minor) = if tail.is_empty() {
        (3, 0)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (2, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n.parse().unwrap_or(0))
    } else {
        (0, 0)
    };
    (rank, major, minor)
}

/// Checks a CRD's names as apiextensions does: a group with a dot, a plural that is a DNS label, a
/// kind, and the object named `<plural>.<group>`.
fn check_names(name: &str, group: &str, plural: &str, kind: &str, errs: &mut Vec<FieldError>) {
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid("spec.group", &Value::from(group), "should be a domain with at least one dot"));
    }
    if plural.is_empty() {
        errs.push(FieldError::required("spec.names.plural", ""));
    } else if !is_dns_label(plural) {
        errs.push(FieldError::invalid("spec.names.plural", &Value::from(plural), "a lowercase RFC 1123 label"));
    }
    if kind.is_empty() {
        errs.push(FieldError::required("spec.names.kind", ""));
    }
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            &Value::from(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
}

/// Whether the CRD's resources are namespaced (`spec.scope`), and that conversion needs no webhook.
fn check_scope_and_conversion(crd: &Value, errs: &mut Vec<FieldError>) -> bool {
    if crd.at("/spec/conversion/strategy").and_then(Value::as_str).is_some_and(|st| st != "None") {
        errs.push(FieldError::invalid(
            "spec.conversion.strategy",
            crd.at("/spec/conversion/strategy").unwrap_or(&Value::Null),
            "only \"None\" is supported by this server (conversion webhooks are not)",
        ));
    }
    match crd.at("/spec/scope").and_then(Value::as_str).unwrap_or_default() {
        "Namespaced" => true,
        "Cluster" => false,
        other => {
            errs.push(FieldError::new(
                crate::error::FieldErrorKind::NotSupported,
                "spec.scope",
                Some(format!("{other:?}")),
                "supported values: \"Cluster\", \"Namespaced\"",
            ));
            true
        }
    }
}

fn printer_columns(v: &Value) -> Vec<PrinterColumn> {
    let columns = v.get("additionalPrinterColumns").and_then(Value::as_array).into_iter().flatten();
    columns
        .map(|c| {
            let g = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            PrinterColumn {
                name: g("name"),
                ty: g("type"),
                format: g("format"),
                description: g("description"),
                priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                json_path: g("jsonPath"),
            }
        })
        .collect()
}

/// One entry of `spec.versions` (at index `i`), checked: its name, whether it is the storage version,
/// and how it is served (`None` when it is not).
fn crd_version(v: &Value, i: usize, errs: &mut Vec<FieldError>) -> (String, bool, Option<VersionInfo>) {
    let base = format!("spec.versions[{i}]");
    let name = v.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    if name.is_empty() || !is_dns_label(&name) {
        errs.push(FieldError::invalid(format!("{base}.name"), &Value::from(name.clone()), "must be a DNS label"));
    }
    let storage = v.get("storage").and_then(Value::as_bool).unwrap_or(false);
    let schema = match v.at("/schema/openAPIV3Schema") {
        Some(sv) => match Schema::parse(sv, &format!("{base}.schema.openAPIV3Schema")) {
            Ok(s) => Some(Arc::new(s)),
            Err(e) => {
                errs.extend(e);
                None
            }
        },
        None => {
            errs.push(FieldError::required(format!("{base}.schema.openAPIV3Schema"), "schemas are required"));
            None
        }
    };
    let served = v.get("served").and_then(Value::as_bool).unwrap_or(false);
    let scale = v.at("/subresources/scale").map(|sc| ScalePaths {
        spec_replicas: sc.get("specReplicasPath").and_then(Value::as_str).unwrap_or(".spec.replicas").into(),
        status_replicas: sc.get("statusReplicasPath").and_then(Value::as_str).unwrap_or(".status.replicas").into(),
        label_selector: sc.get("labelSelectorPath").and_then(Value::as_str).map(String::from),
    });
    let info = served.then(|| VersionInfo {
        name: name.clone(),
        schema,
        printer_columns: printer_columns(v),
        status: v.at("/subresources/status").is_some(),
        scale,
        deprecated: v.get("deprecated").and_then(Value::as_bool).unwrap_or(false),
    });
    (name, storage, info)
}

/// Builds the resource a CRD object defines, checking it the way apiextensions does.
pub fn crd_to_resource(crd: &Value) -> Result<ResourceInfo, Vec<FieldError>> {
    let mut errs = Vec::new();
    let s = |p: &str| crd.at(p).and_then(Value::as_str).unwrap_or_default().to_string();
    let (name, group, plural, kind) =
        (s("/metadata/name"), s("/spec/group"), s("/spec/names/plural"), s("/spec/names/kind"));
    check_names(&name, &group, &plural, &kind, &mut errs);
    let namespaced = check_scope_and_conversion(crd, &mut errs);
    let versions_v = crd.at("/spec/versions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if versions_v.is_empty() {
        errs.push(FieldError::required("spec.versions", "must have exactly one version marked as storage version"));
    }
    let mut versions = Vec::new();
    let mut storage = Vec::new();
    for (i, v) in versions_v.iter().enumerate() {
        let (vname, stored, served) = crd_version(v, i, &mut errs);
        if stored {
            storage.push(vname);
        }
        versions.extend(served);
    }
    if !versions_v.is_empty() && storage.len() != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            &Value::from(storage.len()),
            "must have exactly one version marked as storage version",
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    versions.sort_by_key(|v| std::cmp::Reverse(version_priority(&v.name)));
    let strs = |p: &str| -> Vec<String> {
        crd.at(p)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    let singular = Some(s("/spec/names/singular")).filter(|x| !x.is_empty()).unwrap_or_else(|| kind.to_lowercase());
    let list_kind = Some(s("/spec/names/listKind")).filter(|x| !x.is_empty()).unwrap_or_else(|| format!("{kind}List"));
    Ok(ResourceInfo {
        group,
        versions,
        storage_version: storage.remove(0),
        resource: plural,
        singular,
        kind,
        list_kind,
        namespaced,
        short_names: strs("/spec/names/shortNames"),
        categories: strs("/spec/names/categories"),
        log: false,
        generation: true,
        crd: Some(name),
        review: false,
    })
}

pub use uc_api::names::{is_dns_label, is_dns_subdomain};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn orders_versions_like_kubernetes() {
        let mut v = vec!["v1alpha1", "v1", "v2beta1", "v1beta2", "v2", "foo"];
        v.sort_by_key(|x| std::cmp::Reverse(version_priority(x)));
        assert_eq!(v, vec!["v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "foo"]);
    }

    #[test]
    fn crd_validation_reports_fields() {
        let crd = json!({"metadata": {"name": "foos.x.io"}, "spec": {"group": "x.io", "names": {"plural": "bars", "kind": "Foo"},
            "scope": "Namespaced", "versions": [{"name": "v1", "served": true, "storage": false,
            "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
        let errs = crd_to_resource(&crd).unwrap_err();
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, vec!["metadata.name", "spec.versions"]);
    }

    #[test]
    fn recognizes_api_versions_as_api_version_writes_them() {
        let crd = json!({"metadata": {"name": "foos.x.io"}, "spec": {"group": "x.io", "names": {"plural": "foos", "kind": "Foo"},
            "scope": "Namespaced", "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
        let grouped = crd_to_resource(&crd).unwrap();
        let mut core = grouped.clone();
        core.group = String::new();
        for info in [&grouped, &core] {
            for version in ["v1", "v2"] {
                let written = info.api_version(version);
                assert!(info.is_api_version(version, &written), "{written}");
                for other in ["v1", "v2", "x.io/v1", "x.io/v2", "y.io/v1", "/v1", "x.io/", ""] {
                    assert_eq!(info.is_api_version(version, other), other == written, "{other} against {written}");
                }
            }
        }
    }

    #[test]
    fn dns_names() {
        assert!(is_dns_label("a-1"));
        assert!(!is_dns_label("A"));
        assert!(!is_dns_label("-a"));
        assert!(is_dns_subdomain("a.b-c.d"));
        assert!(!is_dns_subdomain("a..b"));
    }
}
