//! kube's quota evaluators and the admission plugin's check (`CheckRequest`): what one object uses,
//! which quotas it falls under, what a namespace uses of a quota, and whether one more object fits.

use k8s_openapi::api::core::v1::{
    Container, PersistentVolumeClaim, Pod, PodSpec, ScopedResourceSelectorRequirement, Service,
};
use serde::Deserialize;

use super::*;

/// Why the plugin refuses an object, in its words.
#[derive(Debug, PartialEq, thiserror::Error)]
pub(crate) enum Refusal {
    /// A quota limits CPU or memory and a container does not say how much it needs (`Constraints`).
    #[error("failed quota: {quota}: must specify {missing}")]
    Unspecified { quota: String, missing: String },
    /// The object would take the namespace past a quota.
    #[error("exceeded quota: {quota}, requested: {requested}, used: {used}, limited: {limited}")]
    Exceeded { quota: String, requested: String, used: String, limited: String },
}

/// What one object of type `gr` uses (kube's `Usage`): its `count/…` always, the standard counts of
/// its kind, a running pod's compute resources, a Service's load balancer and node ports, a claim's storage.
pub(crate) fn usage_of(gr: &GroupResource, obj: &Value) -> Usage {
    let mut u = Usage::from([(count_of(gr), Amount::count(1))]);
    if !gr.group.is_empty() {
        return u;
    }
    match gr.resource.as_str() {
        "pods" => {
            if let Ok(pod) = Pod::deserialize(obj) {
                pod_usage(&pod, &mut u);
            }
        }
        "services" => {
            if let Ok(service) = Service::deserialize(obj) {
                service_usage(&service, &mut u);
            }
        }
        "persistentvolumeclaims" => {
            if let Ok(claim) = PersistentVolumeClaim::deserialize(obj) {
                claim_usage(&claim, &mut u);
            }
        }
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => {
            u.insert(gr.resource.clone(), Amount::count(1));
        }
        _ => {}
    }
    u
}

/// `PodUsageFunc`: a pod that has not finished uses `pods` and its compute resources
/// (`podComputeUsageHelper` of the pod's requests and limits).
fn pod_usage(pod: &Pod, u: &mut Usage) {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return;
    }
    let spec = pod.spec.clone().unwrap_or_default();
    let requests = pod_total(&spec, |c| c.resources.as_ref().and_then(|r| r.requests.as_ref()));
    let limits = pod_total(&spec, |c| c.resources.as_ref().and_then(|r| r.limits.as_ref()));
    u.extend(compute_usage(&requests, &limits));
}

/// A pod's requests or limits (`PodRequests`, `PodLimits`): its containers' sums, its restartable init
/// containers (sidecars) added, raised to what an init container needs while it runs.
fn pod_total<'a>(spec: &'a PodSpec, list: impl Fn(&'a Container) -> Option<&'a super::List>) -> Usage {
    let of = |c: &'a Container| -> Usage {
        list(c).into_iter().flatten().map(|(k, q)| (k.clone(), Amount::of(&q.0))).collect()
    };
    let containers = spec.containers.iter().fold(Usage::new(), |total, c| add(&total, &of(c)));
    let (mut sidecars, mut init) = (Usage::new(), Usage::new());
    for c in spec.init_containers.iter().flatten() {
        let needs = if c.restart_policy.as_deref() == Some("Always") {
            sidecars = add(&sidecars, &of(c));
            sidecars.clone()
        } else {
            add(&of(c), &sidecars)
        };
        init = max(&init, &needs);
    }
    max(&add(&containers, &sidecars), &init)
}

fn max(a: &Usage, b: &Usage) -> Usage {
    let mut out = a.clone();
    for (k, v) in b {
        if out.get(k).is_none_or(|o| v.milli > o.milli) {
            out.insert(k.clone(), *v);
        }
    }
    out
}

/// `podComputeUsageHelper`: the quota resources a set of requests and limits makes.
fn compute_usage(requests: &Usage, limits: &Usage) -> Usage {
    let mut u = Usage::from([("pods".to_string(), Amount::count(1))]);
    for name in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(r) = requests.get(name) {
            u.insert(name.into(), *r);
            u.insert(format!("requests.{name}"), *r);
        }
        if let Some(l) = limits.get(name) {
            u.insert(format!("limits.{name}"), *l);
        }
    }
    for (name, r) in requests {
        if name.starts_with("hugepages-") {
            u.insert(name.clone(), *r);
        }
        if name.starts_with("hugepages-") || !native(name) {
            u.insert(format!("requests.{name}"), *r);
        }
    }
    u
}

/// A Service's `services`, and its load balancer and node ports (a load balancer that allocates none
/// counts the ports that name one).
fn service_usage(service: &Service, u: &mut Usage) {
    u.insert("services".into(), Amount::count(1));
    let spec = service.spec.clone().unwrap_or_default();
    let ports = spec.ports.unwrap_or_default();
    match spec.type_.as_deref() {
        Some("NodePort") => {
            u.insert("services.nodeports".into(), Amount::count(ports.len()));
        }
        Some("LoadBalancer") => {
            let named = ports.iter().filter(|p| p.node_port.is_some()).count();
            let count = if spec.allocate_load_balancer_node_ports == Some(false) { named } else { ports.len() };
            u.insert("services.nodeports".into(), Amount::count(count));
            u.insert("services.loadbalancers".into(), Amount::count(1));
        }
        _ => {}
    }
}

/// A claim's `persistentvolumeclaims` and `requests.storage`, and the same per storage class.
fn claim_usage(claim: &PersistentVolumeClaim, u: &mut Usage) {
    u.insert("persistentvolumeclaims".into(), Amount::count(1));
    let spec = claim.spec.clone().unwrap_or_default();
    let annotations = claim.metadata.annotations.as_ref();
    let class = spec
        .storage_class_name
        .clone()
        .or_else(|| annotations.and_then(|a| a.get("volume.beta.kubernetes.io/storage-class")).cloned())
        .filter(|c| !c.is_empty());
    let storage = spec.resources.and_then(|r| r.requests).and_then(|r| r.get("storage").map(|q| Amount::of(&q.0)));
    if let Some(class) = &class {
        u.insert(format!("{class}.storageclass.storage.k8s.io/persistentvolumeclaims"), Amount::count(1));
    }
    if let Some(storage) = storage {
        u.insert("requests.storage".into(), storage);
        if let Some(class) = &class {
            u.insert(format!("{class}.storageclass.storage.k8s.io/requests.storage"), storage);
        }
    }
}

/// A quota's scopes and scope selector, as the requirements an object must meet (`getScopeSelectorsFromQuota`).
fn selectors(quota: &ResourceQuota) -> Vec<ScopedResourceSelectorRequirement> {
    let spec = quota.spec.clone().unwrap_or_default();
    let scopes = spec.scopes.unwrap_or_default().into_iter().map(|scope_name| ScopedResourceSelectorRequirement {
        scope_name,
        operator: "Exists".into(),
        values: None,
    });
    scopes.chain(spec.scope_selector.and_then(|s| s.match_expressions).unwrap_or_default()).collect()
}

/// Whether a pod meets one scope requirement (`podMatchesScopeFunc`); no other kind meets any.
fn in_scope(gr: &GroupResource, obj: &Value, selector: &ScopedResourceSelectorRequirement) -> bool {
    if !gr.group.is_empty() || gr.resource != "pods" {
        return false;
    }
    let Ok(pod) = Pod::deserialize(obj) else { return false };
    let spec = pod.spec.unwrap_or_default();
    let terminating = spec.active_deadline_seconds.is_some_and(|s| s >= 0);
    let best_effort = crate::pod_resources::qos_class(&spec) == "BestEffort";
    match selector.scope_name.as_str() {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        "PriorityClass" => {
            let class = spec.priority_class_name.filter(|c| !c.is_empty());
            let listed = |c: &String| selector.values.iter().flatten().any(|v| v == c);
            match selector.operator.as_str() {
                "Exists" => class.is_some(),
                "DoesNotExist" => class.is_none(),
                "In" => class.as_ref().is_some_and(listed),
                "NotIn" => !class.as_ref().is_some_and(listed),
                _ => false,
            }
        }
        "CrossNamespacePodAffinity" => cross_namespace_affinity(&spec),
        _ => false,
    }
}

/// Whether a pod's (anti-)affinity names other namespaces (`usesCrossNamespacePodAffinity`).
fn cross_namespace_affinity(spec: &PodSpec) -> bool {
    let affinity = spec.affinity.clone().unwrap_or_default();
    let cross = |t: &k8s_openapi::api::core::v1::PodAffinityTerm| {
        t.namespaces.as_ref().is_some_and(|n| !n.is_empty()) || t.namespace_selector.is_some()
    };
    let affinity_terms = affinity.pod_affinity.map(|a| {
        let weighted = a.preferred_during_scheduling_ignored_during_execution.unwrap_or_default();
        let required = a.required_during_scheduling_ignored_during_execution.unwrap_or_default();
        required.into_iter().chain(weighted.into_iter().map(|w| w.pod_affinity_term)).collect::<Vec<_>>()
    });
    let anti_terms = affinity.pod_anti_affinity.map(|a| {
        let weighted = a.preferred_during_scheduling_ignored_during_execution.unwrap_or_default();
        let required = a.required_during_scheduling_ignored_during_execution.unwrap_or_default();
        required.into_iter().chain(weighted.into_iter().map(|w| w.pod_affinity_term)).collect::<Vec<_>>()
    });
    affinity_terms.into_iter().chain(anti_terms).flatten().any(|t| cross(&t))
}

/// A quota's `spec.hard` as amounts.
pub(crate) fn hard_of(quota: &ResourceQuota) -> Usage {
    let hard = quota.spec.as_ref().and_then(|s| s.hard.as_ref());
    hard.into_iter().flatten().map(|(k, q)| (k.clone(), Amount::of(&q.0))).collect()
}

/// Whether an object falls under a quota (`generic.Matches`): the quota holds a resource of its type,
/// and the object meets every scope requirement.
pub(crate) fn matches(quota: &ResourceQuota, gr: &GroupResource, obj: &Value) -> bool {
    let holds = hard_of(quota).keys().any(|name| type_of(name).as_ref() == Some(gr));
    holds && selectors(quota).iter().all(|s| in_scope(gr, obj, s))
}

/// What a namespace's objects use of a quota: every resource it holds, from zero.
pub(crate) fn used<'a>(quota: &ResourceQuota, objects: impl Iterator<Item = (&'a GroupResource, &'a Value)>) -> Usage {
    let hard = hard_of(quota);
    let mut total: Usage = hard.keys().map(|k| (k.clone(), Amount::default())).collect();
    for (gr, obj) in objects.filter(|(gr, obj)| matches(quota, gr, obj)) {
        let usage = usage_of(gr, obj);
        let held: Usage = usage.into_iter().filter(|(k, _)| hard.contains_key(k)).collect();
        total = add(&total, &held);
    }
    total
}

/// The resources whose amount every container must give when a quota holds them (`validationSet`).
const SPECIFIED: &[&str] = &["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"];

/// The plugin's `Constraints` for a pod: of the CPU and memory resources the quota holds, those a
/// container leaves out, with the containers, as `requests.cpu for: a,b; limits.memory for: a`.
fn unspecified(spec: &PodSpec, hard: &Usage) -> Option<String> {
    let required: Vec<&str> = SPECIFIED.iter().copied().filter(|r| hard.contains_key(*r)).collect();
    let mut missing: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for c in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
        let lists = c.resources.as_ref();
        let of = |l: Option<&super::List>| -> Usage {
            l.into_iter().flatten().map(|(k, q)| (k.clone(), Amount::of(&q.0))).collect()
        };
        let has =
            compute_usage(&of(lists.and_then(|r| r.requests.as_ref())), &of(lists.and_then(|r| r.limits.as_ref())));
        for r in required.iter().filter(|r| !has.contains_key(**r)) {
            missing.entry(r).or_default().insert(&c.name);
        }
    }
    let said: Vec<String> = missing
        .iter()
        .map(|(r, names)| format!("{r} for: {}", names.iter().copied().collect::<Vec<_>>().join(",")))
        .collect();
    (!said.is_empty()).then(|| said.join("; "))
}

/// The admission plugin's check of an object of type `gr` made (`old` None) or changed, against each
/// quota of its namespace beside what the namespace uses of it now (a pod is checked when made only).
pub(crate) fn admit(
    quotas: &[(ResourceQuota, Usage)],
    gr: &GroupResource,
    new: &Value,
    old: Option<&Value>,
) -> Result<(), Refusal> {
    let pods = gr.group.is_empty() && gr.resource == "pods";
    if pods && old.is_some() {
        return Ok(());
    }
    for (quota, used) in quotas.iter().filter(|(q, _)| matches(q, gr, new)) {
        let name = quota.metadata.name.clone().unwrap_or_default();
        let hard = hard_of(quota);
        if pods && let Some(missing) = Pod::deserialize(new).ok().and_then(|p| unspecified(&p.spec?, &hard)) {
            return Err(Refusal::Unspecified { quota: name, missing });
        }
        let input = usage_of(gr, new);
        let delta = match old.filter(|o| matches(quota, gr, o)) {
            Some(o) => {
                let before = usage_of(gr, o);
                let less = |k: &String, a: &Amount| Amount {
                    milli: (a.milli - before.get(k).map_or(0, |b| b.milli)).max(0),
                    ..*a
                };
                input.iter().map(|(k, a)| (k.clone(), less(k, a))).collect()
            }
            None => input,
        };
        let requested: Usage = delta.into_iter().filter(|(k, a)| a.milli != 0 && hard.contains_key(k)).collect();
        let over: BTreeSet<&String> = requested
            .iter()
            .filter(|(k, a)| used.get(*k).copied().unwrap_or_default().plus(**a).milli > hard[*k].milli)
            .map(|(k, _)| k)
            .collect();
        if !over.is_empty() {
            let mask = |u: &Usage| -> Usage {
                u.iter().filter(|(k, _)| over.contains(k)).map(|(k, a)| (k.clone(), *a)).collect()
            };
            return Err(Refusal::Exceeded {
                quota: name,
                requested: pretty(&mask(&requested)),
                used: pretty(&mask(used)),
                limited: pretty(&mask(&hard)),
            });
        }
    }
    Ok(())
}

/// A quota's status: what it holds and what its namespace uses of it, as kube's controller writes them.
pub(crate) fn status_of(quota: &ResourceQuota, used: &Usage) -> Value {
    let shown = |u: &Usage| -> serde_json::Map<String, Value> {
        u.iter().map(|(k, a)| (k.clone(), Value::String(a.to_string()))).collect()
    };
    serde_json::json!({"hard": shown(&hard_of(quota)), "used": shown(used)})
}
