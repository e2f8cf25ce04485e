//! Service → EndpointSlices, as kube-controller-manager's EndpointSlice controller makes them: the pods
//! the Service selects that have an address and have not finished, terminating ones included (ready
//! false, `terminating` true; `serving` their readiness), grouped by the ports they resolve the
//! Service's ports to, at most 100 to a slice; a slice with no endpoints when none is selected.
//! Labelled `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`, the Service's
//! own labels copied, `service.kubernetes.io/headless` on a headless Service's. Names are the Service's
//! and a suffix derived from its uid and the slice's place, so a sync updates the slices it made.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service, ServicePort};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::objects::name_suffix;

/// The label naming a slice's Service.
pub const SERVICE_NAME: &str = "kubernetes.io/service-name";
/// The label naming who manages a slice, and kube's controller's name for itself.
pub const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const CONTROLLER: &str = "endpointslice-controller.k8s.io";
/// kube's `--max-endpoints-per-slice` default.
const MAX_PER_SLICE: usize = 100;

/// The port a Service port reaches on a pod, as kube's `FindPort`: a number, or the container port of
/// that name and protocol; None when the pod has no such named port.
fn find_port(port: &ServicePort, pod: &Pod) -> Option<i32> {
    let protocol = port.protocol.as_deref().unwrap_or("TCP");
    match &port.target_port {
        None => Some(port.port),
        Some(IntOrString::Int(0)) => Some(port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => {
            pod.spec.as_ref()?.containers.iter().flat_map(|c| c.ports.iter().flatten()).find_map(|p| {
                (p.name.as_deref() == Some(name) && p.protocol.as_deref().unwrap_or("TCP") == protocol)
                    .then_some(p.container_port)
            })
        }
    }
}

/// The Service's ports as `pod` serves them (a port the pod does not have left out).
fn ports_of(svc: &Service, pod: &Pod) -> Vec<EndpointPort> {
    let ports = svc.spec.as_ref().and_then(|s| s.ports.as_ref());
    ports
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some(EndpointPort {
                name: Some(p.name.clone().unwrap_or_default()),
                port: Some(find_port(p, pod)?),
                protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".into())),
                app_protocol: p.app_protocol.clone(),
            })
        })
        .collect()
}

/// Whether a pod's Ready condition holds.
pub(crate) fn is_ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A pod as an endpoint of `svc` (kube's `podToEndpoint`).
fn endpoint(svc: &Service, pod: &Pod, ip: &str) -> Endpoint {
    let spec = pod.spec.as_ref();
    let serving = is_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let publish = svc.spec.as_ref().and_then(|s| s.publish_not_ready_addresses).unwrap_or(false);
    let named = spec.and_then(|s| s.hostname.clone()).filter(|h| {
        !h.is_empty()
            && spec.and_then(|s| s.subdomain.as_deref()) == svc.metadata.name.as_deref()
            && pod.metadata.namespace == svc.metadata.namespace
    });
    Endpoint {
        addresses: vec![ip.to_string()],
        conditions: Some(EndpointConditions {
            ready: Some(publish || (serving && !terminating)),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        hostname: named,
        node_name: spec.and_then(|s| s.node_name.clone()).filter(|n| !n.is_empty()),
        target_ref: Some(pod_reference(pod)),
        ..Default::default()
    }
}

/// An endpoint's `targetRef`: the pod.
pub(crate) fn pod_reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        ..Default::default()
    }
}

/// A slice of `svc` holding `endpoints` on `ports`, the `n`th of the Service's.
fn slice(svc: &Service, n: usize, ports: Option<Vec<EndpointPort>>, endpoints: Vec<Endpoint>) -> EndpointSlice {
    let name = svc.metadata.name.clone().unwrap_or_default();
    let uid = svc.metadata.uid.as_deref().unwrap_or_default();
    let mut labels: BTreeMap<String, String> = svc.metadata.labels.clone().unwrap_or_default();
    labels.retain(|k, _| k != SERVICE_NAME && k != MANAGED_BY);
    labels.insert(SERVICE_NAME.into(), name.clone());
    labels.insert(MANAGED_BY.into(), CONTROLLER.into());
    if svc.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None") {
        labels.insert("service.kubernetes.io/headless".into(), String::new());
    }
    EndpointSlice {
        metadata: ObjectMeta {
            name: Some(format!("{name}-{}", name_suffix(&format!("{uid}/slice/{n}")))),
            namespace: svc.metadata.namespace.clone(),
            labels: Some(labels),
            ..Default::default()
        },
        address_type: "IPv4".into(),
        endpoints,
        ports,
    }
}

/// The ports a group of pods serves, by name and number.
type PortKey = Vec<(Option<String>, Option<i32>)>;

/// The EndpointSlices of a Service with a selector, from the pods it selects.
pub fn slices(svc: &Service, pods: &[Pod]) -> Vec<EndpointSlice> {
    // Pods by the ports they serve (as kube groups them), then by address.
    let mut groups: BTreeMap<PortKey, (Vec<EndpointPort>, Vec<Endpoint>)> = BTreeMap::new();
    let mut chosen: Vec<(&str, &Pod)> = pods
        .iter()
        .filter(|p| !matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed")))
        .filter_map(|p| Some((p.status.as_ref()?.pod_ip.as_deref().filter(|ip| !ip.is_empty())?, p)))
        .collect();
    chosen.sort_by(|a, b| a.0.cmp(b.0).then(a.1.metadata.name.cmp(&b.1.metadata.name)));
    for (ip, pod) in chosen {
        let ports = ports_of(svc, pod);
        let key = ports.iter().map(|p| (p.name.clone(), p.port)).collect();
        groups.entry(key).or_insert_with(|| (ports, Vec::new())).1.push(endpoint(svc, pod, ip));
    }
    let mut out = Vec::new();
    for (ports, endpoints) in groups.into_values() {
        for chunk in endpoints.chunks(MAX_PER_SLICE) {
            out.push(slice(svc, out.len(), Some(ports.clone()), chunk.to_vec()));
        }
    }
    if out.is_empty() {
        out.push(slice(svc, 0, None, Vec::new()));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn service(spec: Value) -> Service {
        serde_json::from_value(json!({"metadata": {"name": "web", "namespace": "ns", "uid": "su", "labels": {"app": "web"}}, "spec": spec}))
            .unwrap()
    }

    fn pod(name: &str, ip: &str, ready: bool, extra: Value) -> Pod {
        let mut p = json!({"metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"podIP": ip, "phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}});
        if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                p[k].as_object_mut().unwrap().extend(v.as_object().unwrap().clone());
            }
        }
        serde_json::from_value(p).unwrap()
    }

    #[test]
    fn endpoints_with_kubes_conditions_ports_and_labels() {
        let svc = service(
            json!({"selector": {"app": "web"}, "ports": [{"name": "web", "port": 80, "targetPort": "http", "appProtocol": "http"}]}),
        );
        let pods = [
            pod("b", "10.0.0.3", false, json!({})),
            pod("a", "10.0.0.2", true, json!({})),
            pod("going", "10.0.0.4", true, json!({"metadata": {"deletionTimestamp": "2026-12-03T13:00:00Z"}})),
            pod("done", "10.0.0.5", false, json!({"status": {"phase": "Succeeded"}})),
            pod("pending", "", false, json!({})),
        ];
        let out = slices(&svc, &pods);
        assert_eq!(out.len(), 1);
        let s = &out[0];
        assert_eq!(s.address_type, "IPv4");
        let labels = s.metadata.labels.as_ref().unwrap();
        assert_eq!(
            (labels[SERVICE_NAME].as_str(), labels[MANAGED_BY].as_str(), labels["app"].as_str()),
            ("web", CONTROLLER, "web")
        );
        assert!(s.metadata.name.as_ref().unwrap().starts_with("web-"));
        let port = &s.ports.as_ref().unwrap()[0];
        assert_eq!(
            (port.name.as_deref(), port.port, port.app_protocol.as_deref()),
            (Some("web"), Some(8080), Some("http"))
        );
        let seen: Vec<(&str, bool, bool, bool)> = s
            .endpoints
            .iter()
            .map(|e| {
                let c = e.conditions.as_ref().unwrap();
                (e.addresses[0].as_str(), c.ready.unwrap(), c.serving.unwrap(), c.terminating.unwrap())
            })
            .collect();
        assert_eq!(
            seen,
            [("10.0.0.2", true, true, false), ("10.0.0.3", false, false, false), ("10.0.0.4", false, true, true)],
            "by address; a terminating pod is not ready but still serving; finished and addressless pods left out"
        );
        assert_eq!(s.endpoints[0].node_name.as_deref(), Some("n1"));
        assert_eq!(s.endpoints[0].target_ref.as_ref().unwrap().name.as_deref(), Some("a"));
        assert_eq!(slices(&svc, &pods)[0].metadata.name, s.metadata.name, "the same name every sync");
    }

    #[test]
    fn no_pods_make_an_empty_slice_and_many_make_several() {
        let svc = service(json!({"selector": {"app": "web"}, "clusterIP": "None", "ports": [{"port": 80}]}));
        let empty = slices(&svc, &[]);
        assert_eq!((empty.len(), empty[0].endpoints.len(), empty[0].ports.is_none()), (1, 0, true));
        assert_eq!(empty[0].metadata.labels.as_ref().unwrap()["service.kubernetes.io/headless"], "");
        let many: Vec<Pod> = (0..250)
            .map(|i| pod(&format!("p{i}"), &format!("10.0.{}.{}", i / 200, i % 200), true, json!({})))
            .collect();
        let out = slices(&svc, &many);
        assert_eq!(out.iter().map(|s| s.endpoints.len()).collect::<Vec<_>>(), [100, 100, 50]);
        let names: std::collections::BTreeSet<_> = out.iter().map(|s| s.metadata.name.clone()).collect();
        assert_eq!(names.len(), 3);
    }

    #[test]
    fn pods_serving_different_ports_go_to_different_slices_and_hostnames_follow_the_subdomain() {
        let svc =
            service(json!({"selector": {"app": "web"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}));
        let other = pod(
            "x",
            "10.0.0.9",
            true,
            json!({"spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 9090}]}],
                                                               "hostname": "x", "subdomain": "web"}}),
        );
        let out = slices(&svc, &[pod("a", "10.0.0.2", true, json!({"spec": {"hostname": "a"}})), other]);
        let ports: Vec<i32> = out.iter().map(|s| s.ports.as_ref().unwrap()[0].port.unwrap()).collect();
        assert_eq!(ports, [8080, 9090]);
        assert_eq!(out[0].endpoints[0].hostname, None, "no subdomain of the Service's name");
        assert_eq!(out[1].endpoints[0].hostname.as_deref(), Some("x"));
    }
}
