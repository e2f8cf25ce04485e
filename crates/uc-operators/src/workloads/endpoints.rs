//! Service → Endpoints and EndpointSlices: the addresses of the pods a Service selects (ready ones,
//! unless `publishNotReadyAddresses`), with the Service's ports resolved to the pods' target ports, and
//! the same pods as EndpointSlices (`endpoint_slices.rs`). The pods are related resources named by the
//! customize hook (the Service's selector), not children.
//!
//! Written against the typed hook protocol (`uc_engine::hooks::native::typed`) with k8s-openapi's
//! Service, Pod and Endpoints: the shape a native hook of one's own takes.

use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints, Pod, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};
use uc_api::hook::{CustomizeRequest, CustomizeResponse, RelatedResourceRule, SyncRequest, SyncResponse};
use uc_engine::hooks::HookError;

use super::endpoint_slices::{self, is_ready, pod_reference};
use crate::objects::json_of;

/// The Service's selector, if it selects anything.
fn selector(svc: &Service) -> Option<&std::collections::BTreeMap<String, String>> {
    svc.spec.as_ref()?.selector.as_ref().filter(|s| !s.is_empty())
}

fn decode<T: serde::de::DeserializeOwned>(what: &str, v: &Value) -> Result<T, HookError> {
    T::deserialize(v).map_err(|e| HookError::InvalidRequest(format!("{what}: {e}")))
}

/// The customize hook: the pods the Service selects.
pub fn customize(request: CustomizeRequest) -> Result<CustomizeResponse, HookError> {
    let svc: Service = decode("parent", &request.parent)?;
    let related_resources = selector(&svc)
        .map(|sel| RelatedResourceRule {
            api_version: "v1".into(),
            resource: "pods".into(),
            label_selector: Some(json!({"matchLabels": sel})),
            ..Default::default()
        })
        .into_iter()
        .collect();
    Ok(CustomizeResponse { related_resources })
}

/// The container port a Service port reaches on `pod`: its `targetPort` (a number, or a named port of
/// one of the pod's containers), else its `port`.
fn target_port(port: &ServicePort, pod: &Pod) -> Option<i32> {
    match port.target_port.as_ref() {
        None => Some(port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => pod
            .spec
            .as_ref()?
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten())
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .map(|p| p.container_port),
    }
}

fn pod_ip(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.pod_ip.as_deref()).unwrap_or_default()
}

fn address(pod: &Pod) -> EndpointAddress {
    EndpointAddress {
        ip: pod_ip(pod).to_string(),
        node_name: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
        hostname: pod.spec.as_ref().and_then(|s| s.hostname.clone()),
        target_ref: Some(pod_reference(pod)),
    }
}

/// The sync hook: the Service's Endpoints.
pub fn sync(request: SyncRequest) -> Result<SyncResponse, HookError> {
    let svc: Service = decode("parent", &request.parent)?;
    if selector(&svc).is_none() {
        return Ok(SyncResponse::default());
    }
    let spec = svc.spec.clone().unwrap_or_default();
    let publish_all = spec.publish_not_ready_addresses.unwrap_or(false);
    let mut selected = Vec::new();
    for (name, p) in request.related.into_iter().filter(|(k, _)| k == "Pod.v1").flat_map(|(_, m)| m) {
        selected.push(decode::<Pod>(&format!("related pod {name}"), &p)?);
    }
    let mut pods: Vec<&Pod> =
        selected.iter().filter(|p| !pod_ip(p).is_empty() && p.metadata.deletion_timestamp.is_none()).collect();
    pods.sort_by(|a, b| pod_ip(a).cmp(pod_ip(b)));
    let (ready, not_ready): (Vec<&Pod>, Vec<&Pod>) = pods.iter().partition(|p| is_ready(p) || publish_all);
    let mut subsets = Vec::new();
    if let Some(sample) = ready.first().or(not_ready.first()) {
        let ports = spec
            .ports
            .iter()
            .flatten()
            .map(|port| EndpointPort {
                name: port.name.clone(),
                port: target_port(port, sample).unwrap_or(port.port),
                protocol: Some(port.protocol.clone().unwrap_or_else(|| "TCP".into())),
                ..Default::default()
            })
            .collect();
        let addresses = |pods: &[&Pod]| (!pods.is_empty()).then(|| pods.iter().map(|p| address(p)).collect());
        subsets.push(EndpointSubset {
            ports: Some(ports),
            addresses: addresses(&ready),
            not_ready_addresses: addresses(&not_ready),
        });
    }
    let mut endpoints = Endpoints { subsets: Some(subsets), ..Default::default() };
    endpoints.metadata.name = svc.metadata.name.clone();
    endpoints.metadata.namespace = svc.metadata.namespace.clone();
    endpoints.metadata.labels = Some(svc.metadata.labels.clone().unwrap_or_default());
    let mut children = vec![json_of(&endpoints)];
    // And the same pods as EndpointSlices (terminating ones too), which newer clients read instead.
    children.extend(endpoint_slices::slices(&svc, &selected).iter().map(json_of));
    Ok(SyncResponse { children, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn pod(name: &str, ip: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
               "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    fn request(svc: &Value, pods: Vec<Value>) -> SyncRequest {
        let pods = pods.into_iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p.into())).collect();
        SyncRequest {
            parent: svc.clone().into(),
            related: BTreeMap::from([("Pod.v1".to_string(), pods)]),
            ..Default::default()
        }
    }

    #[test]
    fn ready_pods_become_addresses_with_resolved_ports() {
        let svc = json!({"metadata": {"name": "web", "namespace": "ns"},
                         "spec": {"selector": {"app": "web"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}});
        let rules =
            customize(CustomizeRequest { controller: json!({}), parent: svc.clone() }).unwrap().related_resources;
        assert_eq!(rules[0].label_selector, Some(json!({"matchLabels": {"app": "web"}})));
        let pods = vec![pod("a", "127.1.0.2", true), pod("b", "127.1.0.3", false)];
        let out = sync(request(&svc, pods.clone())).unwrap();
        let ep = &out.children[0];
        assert_eq!(
            (&ep["apiVersion"], &ep["kind"], &ep["metadata"]["name"]),
            (&json!("v1"), &json!("Endpoints"), &json!("web"))
        );
        assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], json!("127.1.0.2"));
        assert_eq!(ep["subsets"][0]["addresses"][0]["targetRef"]["uid"], json!("a"));
        assert_eq!(ep["subsets"][0]["notReadyAddresses"][0]["ip"], json!("127.1.0.3"));
        assert_eq!(ep["subsets"][0]["ports"][0], json!({"name": "web", "port": 8080, "protocol": "TCP"}));
        let mut publish = svc.clone();
        publish["spec"]["publishNotReadyAddresses"] = json!(true);
        let out = sync(request(&publish, pods)).unwrap();
        assert_eq!(out.children[0]["subsets"][0]["addresses"].as_array().unwrap().len(), 2);
        let no_pods = sync(request(&svc, vec![])).unwrap();
        assert_eq!(no_pods.children[0]["subsets"], json!([]));
        assert!(sync(request(&json!({"spec": {}}), vec![])).unwrap().children.is_empty(), "no selector, no Endpoints");
        assert!(
            customize(CustomizeRequest { controller: json!({}), parent: json!({"spec": {}}) })
                .unwrap()
                .related_resources
                .is_empty()
        );
        let bad = sync(request(&svc, vec![json!({"metadata": {"name": "x"}, "spec": {"containers": 3}})])).unwrap_err();
        assert!(matches!(bad, HookError::InvalidRequest(ref m) if m.starts_with("related pod x")), "{bad}");
    }
}
