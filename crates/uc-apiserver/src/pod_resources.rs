//! A pod's compute resources as kube-apiserver treats them when the pod is made: a container's
//! limits stand in for the requests it leaves out (`SetDefaults_Pod`, for pods and not their templates),
//! and the pod's quality-of-service class follows from them (`ComputePodQOS`), shown by `kubectl describe
//! pod` and kept by the node (docs/embedded-cluster.md).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use serde_json::Value;

/// The containers of a pod's spec, the init containers after the app ones, as JSON.
fn containers_mut(spec: &mut Value) -> impl Iterator<Item = &mut Value> {
    let lists = spec
        .as_object_mut()
        .into_iter()
        .flat_map(|s| s.iter_mut().filter(|(k, _)| *k == "containers" || *k == "initContainers").map(|(_, v)| v));
    lists.filter_map(Value::as_array_mut).flatten().filter(|c| c.is_object())
}

/// kube's `SetDefaults_Pod`: a container that limits a resource and does not request it requests the limit.
pub(crate) fn default_requests(spec: &mut Value) {
    for c in containers_mut(spec) {
        let Some(limits) = c.pointer("/resources/limits").and_then(Value::as_object).cloned() else { continue };
        if limits.is_empty() {
            continue;
        }
        let resources = &mut c["resources"];
        if !resources.get("requests").is_some_and(Value::is_object) {
            resources["requests"] = Value::Object(serde_json::Map::new());
        }
        let Some(requests) = resources["requests"].as_object_mut() else { continue };
        for (name, limit) in limits {
            requests.entry(name).or_insert(limit);
        }
    }
}

/// The resources that decide a QoS class (`isSupportedQoSComputeResource`).
const QOS_RESOURCES: &[&str] = &["cpu", "memory"];

/// Of a container's requests or limits, the QoS resources above zero, in thousandths.
fn positive(
    list: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> Vec<(&str, i128)> {
    let quantities = list.into_iter().flatten().filter(|(name, _)| QOS_RESOURCES.contains(&name.as_str()));
    quantities
        .filter_map(|(name, q)| Some((name.as_str(), uc_api::quantity::milli(&q.0).ok().filter(|m| *m > 0)?)))
        .collect()
}

/// kube's `ComputePodQOS`: `Guaranteed` when every container limits CPU and memory and the pod's requests
/// equal its limits, `BestEffort` when nothing is requested or limited, else `Burstable`.
pub(crate) fn qos_class(spec: &PodSpec) -> &'static str {
    let (mut requests, mut limits) = (BTreeMap::<&str, i128>::new(), BTreeMap::<&str, i128>::new());
    let mut guaranteed = true;
    let all: Vec<&Container> = spec.containers.iter().chain(spec.init_containers.iter().flatten()).collect();
    for c in all {
        let resources = c.resources.as_ref();
        for (name, m) in positive(resources.and_then(|r| r.requests.as_ref())) {
            *requests.entry(name).or_default() += m;
        }
        let limited = positive(resources.and_then(|r| r.limits.as_ref()));
        guaranteed &= QOS_RESOURCES.iter().all(|r| limited.iter().any(|(name, _)| name == r));
        for (name, m) in limited {
            *limits.entry(name).or_default() += m;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    guaranteed &= requests.iter().all(|(name, req)| limits.get(name) == Some(req));
    if guaranteed && requests.len() == limits.len() { "Guaranteed" } else { "Burstable" }
}

#[cfg(test)]
mod tests;
