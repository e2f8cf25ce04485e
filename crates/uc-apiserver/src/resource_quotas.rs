//! ResourceQuotas (core/v1) as kube-apiserver keeps them and kube enforces them (`pkg/apis/core/validation`,
//! `pkg/quota/v1/evaluator/core`, the ResourceQuota admission plugin): refused in kube's words, what
//! each object of a namespace uses of a quota's resources (a pod's compute resources and count, a
//! Service's load balancer and node ports, a claim's storage, any object's `count/<resource>`), which
//! quotas an object falls under (their scopes), and whether one more object fits (docs/apiserver.md).
//! Pure: the store's side is `resource_quotas/controller.rs` (each quota's `status`) and
//! `handlers/quota_admission.rs`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ResourceQuota;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::Value;
use uc_api::GroupResource;

use crate::error::{FieldError, FieldErrors};

/// An amount of one resource: thousandths, and whether it prints with a binary suffix (a sum keeps
/// the format of its first term that is not zero, as apimachinery's `Quantity.Add` does).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Amount {
    pub milli: i128,
    pub binary: bool,
}

impl Amount {
    /// A quantity's text as an amount (0 for one that is not a quantity: validation refuses those).
    pub(crate) fn of(text: &str) -> Self {
        Amount { milli: uc_api::quantity::milli(text).unwrap_or(0), binary: uc_api::quantity::is_binary(text) }
    }

    fn count(n: usize) -> Self {
        Amount { milli: n as i128 * 1000, binary: false }
    }

    fn plus(self, other: Amount) -> Self {
        Amount { milli: self.milli + other.milli, binary: if self.milli == 0 { other.binary } else { self.binary } }
    }
}

impl std::fmt::Display for Amount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&uc_api::quantity::canonical(self.milli, self.binary))
    }
}

/// A container's requests or limits.
type List = BTreeMap<String, Quantity>;

/// Amounts by resource name (`requests.cpu`, `count/deployments.apps`).
pub(crate) type Usage = BTreeMap<String, Amount>;

/// `a + b`, key by key.
pub(crate) fn add(a: &Usage, b: &Usage) -> Usage {
    let mut out = a.clone();
    for (k, v) in b {
        let sum = out.get(k).copied().unwrap_or_default().plus(*v);
        out.insert(k.clone(), sum);
    }
    out
}

/// apimachinery's `prettyPrint`: `name=amount` in name order, comma-separated.
pub(crate) fn pretty(usage: &Usage) -> String {
    usage.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The resources a quota may hold that are counts, not quantities (`IsIntegerResourceName`).
const COUNTED: &[&str] = &[
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// Every standard resource a quota may name (`standardQuotaResources`).
const STANDARD: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
];

/// The resources a pod uses (`podResources`), with the prefixed ones below.
const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// The scopes kube knows (`standardResourceQuotaScopes`).
const SCOPES: &[&str] =
    &["Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"];

fn native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn hugepages(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// The quota resource that counts objects of a type: `count/<resource>[.<group>]`.
pub(crate) fn count_of(gr: &GroupResource) -> String {
    if gr.group.is_empty() { format!("count/{}", gr.resource) } else { format!("count/{}.{}", gr.resource, gr.group) }
}

/// The resource type whose objects use a quota resource (None for one no object uses).
pub(crate) fn type_of(name: &str) -> Option<GroupResource> {
    if let Some(counted) = name.strip_prefix("count/") {
        let (resource, group) = counted.split_once('.').unwrap_or((counted, ""));
        return Some(GroupResource::new(group, resource));
    }
    let core = |r: &str| Some(GroupResource::new("", r));
    match name {
        _ if POD_RESOURCES.contains(&name) || hugepages(name) => core("pods"),
        "services" | "services.nodeports" | "services.loadbalancers" => core("services"),
        "persistentvolumeclaims" | "requests.storage" => core("persistentvolumeclaims"),
        _ if name.ends_with(".storageclass.storage.k8s.io/requests.storage")
            || name.ends_with(".storageclass.storage.k8s.io/persistentvolumeclaims") =>
        {
            core("persistentvolumeclaims")
        }
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => core(name),
        _ if name.starts_with("requests.") && !native(name) => core("pods"),
        _ => None,
    }
}

/// What kube refuses in a ResourceQuota (`ValidateResourceQuota`; its metadata is checked with every kind's).
pub(crate) fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = FieldErrors::new();
    let Ok(quota) = serde_json::from_value::<ResourceQuota>(obj.clone()) else { return errs.0 };
    let spec = quota.spec.unwrap_or_default();
    let status = quota.status.unwrap_or_default();
    for (at, list) in [("spec.hard", &spec.hard), ("status.hard", &status.hard), ("status.used", &status.used)] {
        for (name, q) in list.iter().flatten() {
            errs.quota_resource(&format!("{at}[{name}]"), name, &q.0);
        }
    }
    let scopes = spec.scopes.unwrap_or_default();
    let listed = serde_json::json!(scopes);
    for scope in &scopes {
        if !SCOPES.contains(&scope.as_str()) {
            errs.invalid("spec.scopes", listed.clone(), "unsupported scope");
        }
        for name in spec.hard.iter().flatten().map(|(n, _)| n.as_str()) {
            let standard = COUNTED.contains(&name) || STANDARD.contains(&name) || hugepages(name);
            if standard && !scope_allows(scope, name) {
                errs.invalid("spec.scopes", listed.clone(), "unsupported scope applied to resource");
            }
        }
    }
    let has = |s: &str| scopes.iter().any(|x| x == s);
    for (a, b) in [("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")] {
        if has(a) && has(b) {
            errs.invalid("spec.scopes", listed.clone(), "conflicting scopes");
        }
    }
    errs.0
}

/// The compute resources a pod-only scope applies to (`podComputeQuotaResources`).
const POD_COMPUTE: &[&str] = &["cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"];

/// Whether a scope may apply to a standard resource a quota holds (`IsResourceQuotaScopeValidForResource`).
fn scope_allows(scope: &str, name: &str) -> bool {
    match scope {
        "BestEffort" => name == "pods",
        "Terminating" | "NotTerminating" | "NotBestEffort" | "PriorityClass" | "CrossNamespacePodAffinity" => {
            name == "pods" || POD_COMPUTE.contains(&name)
        }
        _ => true,
    }
}

impl FieldErrors {
    /// One named amount of a quota: a standard or qualified name, a quantity not below zero, whole for a count.
    fn quota_resource(&mut self, field: &str, name: &str, text: &str) {
        let errors = uc_api::names::qualified_name_errors(name);
        for why in &errors {
            self.invalid(field, name, why.as_str());
        }
        let standard = COUNTED.contains(&name) || STANDARD.contains(&name) || hugepages(name);
        if errors.is_empty() && !name.contains('/') && !standard {
            self.invalid(field, name, "must be a standard resource for quota");
        }
        let Ok(m) = uc_api::quantity::milli(text) else { return };
        if m < 0 {
            self.invalid(field, text, "must be greater than or equal to 0");
        }
        let integer = COUNTED.contains(&name) || name.starts_with("count/") || !native(name);
        if integer && m % 1000 != 0 {
            self.invalid(field, text, "must be an integer");
        }
    }
}

pub(crate) mod controller;
pub(crate) mod evaluate;

#[cfg(test)]
mod tests;
