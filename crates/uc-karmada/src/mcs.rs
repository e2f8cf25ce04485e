//! Multi-cluster services (the MCS API, as Karmada implements it): a Service exported by a
//! `ServiceExport` in some members is imported, where a `ServiceImport` of the same name exists, as a
//! `derived-<service>` Service with one EndpointSlice per exporting cluster (`imported-<cluster>-<service>`)
//! holding that cluster's endpoints, hostnames included. Pods reach the imported endpoints by their
//! clusterset names (`<hostname>.<cluster>.<service>.<namespace>.svc.clusterset.local`, see
//! `uc_api::dns`): members' pods share the host's loopback network, so the addresses are reachable.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Endpoints, Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::Api;
use serde_json::Value;
use uc_api::meta::str_at;

use crate::error::PlaneError;
use crate::objects::{self, holds};
use crate::plane::{MCS_API, Plane};

/// The label EndpointSlices carry for their Service.
pub const SERVICE_NAME: &str = "kubernetes.io/service-name";
/// Who manages an imported slice (Karmada's dispatch controller's name).
pub const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
pub const DISPATCHER: &str = "endpointslice-dispatch-controller.karmada.io";
/// The MCS API's labels on an imported slice.
pub use uc_api::dns::{MCS_SERVICE_NAME, SOURCE_CLUSTER};

/// One exporting cluster's part of a service.
#[derive(Clone, Debug, PartialEq)]
pub struct Exported {
    pub cluster: String,
    pub service: Service,
    pub endpoints: Option<Endpoints>,
}

/// `derived-<service>`.
pub fn derived_name(service: &str) -> String {
    format!("derived-{service}")
}

fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

/// The ports of an exported Service (its `spec.ports`).
fn ports_of(service: &Service) -> &[ServicePort] {
    service.spec.as_ref().and_then(|s| s.ports.as_deref()).unwrap_or_default()
}

/// The derived Service in an importing cluster: the exported Service's ports, headless when the
/// exported one is, no selector (its endpoints are the imported slices).
pub fn derived_service(namespace: &str, name: &str, exports: &[Exported]) -> Service {
    let first = exports.first().map(|e| &e.service);
    let ports = first.map(ports_of).unwrap_or_default().iter().map(|p| ServicePort {
        name: Some(p.name.clone().unwrap_or_default()),
        port: p.port,
        protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".into())),
        ..Default::default()
    });
    let headless = first.and_then(|s| s.spec.as_ref()).and_then(|s| s.cluster_ip.as_deref()) == Some("None");
    Service {
        metadata: ObjectMeta {
            name: Some(derived_name(name)),
            namespace: Some(namespace.into()),
            labels: labels(&[(MCS_SERVICE_NAME, name)]),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            ports: Some(ports.collect()),
            type_: Some("ClusterIP".into()),
            cluster_ip: headless.then(|| "None".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The slice of one exporting cluster, as an importing cluster holds it.
pub fn imported_slice(namespace: &str, name: &str, e: &Exported) -> EndpointSlice {
    let mut endpoints = Vec::new();
    for subset in e.endpoints.iter().flat_map(|ep| ep.subsets.iter().flatten()) {
        for (list, ready) in [(&subset.addresses, true), (&subset.not_ready_addresses, false)] {
            for a in list.iter().flatten() {
                endpoints.push(Endpoint {
                    addresses: vec![a.ip.clone()],
                    conditions: Some(EndpointConditions { ready: Some(ready), ..Default::default() }),
                    hostname: a.hostname.clone().filter(|h| !h.is_empty()),
                    ..Default::default()
                });
            }
        }
    }
    let ports = ports_of(&e.service).iter().map(|p| EndpointPort {
        name: Some(p.name.clone().unwrap_or_default()),
        port: Some(match p.target_port {
            Some(IntOrString::Int(n)) => n,
            _ => p.port,
        }),
        protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".into())),
        ..Default::default()
    });
    let derived = derived_name(name);
    let label_pairs = [
        (SERVICE_NAME, derived.as_str()),
        (MANAGED_BY, DISPATCHER),
        (SOURCE_CLUSTER, &e.cluster),
        (MCS_SERVICE_NAME, name),
    ];
    EndpointSlice {
        metadata: ObjectMeta {
            name: Some(format!("imported-{}-{name}", e.cluster)),
            namespace: Some(namespace.into()),
            labels: labels(&label_pairs),
            ..Default::default()
        },
        address_type: "IPv4".into(),
        endpoints,
        ports: Some(ports.collect()),
    }
}

/// Imports every exported service into every member that asks for it.
pub async fn sync(plane: &Plane) -> Result<(), PlaneError> {
    let mut exports: BTreeMap<(String, String), Vec<Exported>> = BTreeMap::new();
    let mut imports: Vec<(String, String, String)> = Vec::new();
    let mut members: Vec<_> = plane.members.by_name.values().filter(|m| m.ready).collect();
    members.sort_by(|a, b| a.name.cmp(&b.name));
    for m in &members {
        let Ok(list) = objects::list(&m.client, &m.kinds, MCS_API, "ServiceExport", "").await else { continue };
        for se in list {
            let (ns, name) =
                (str_at(&se, "/metadata/namespace").to_string(), str_at(&se, "/metadata/name").to_string());
            let Ok(Some(service)) = Api::<Service>::namespaced(m.client.clone(), &ns).get_opt(&name).await else {
                continue;
            };
            let endpoints = Api::<Endpoints>::namespaced(m.client.clone(), &ns).get_opt(&name).await.ok().flatten();
            exports.entry((ns, name)).or_default().push(Exported { cluster: m.name.clone(), service, endpoints });
        }
        let Ok(list) = objects::list(&m.client, &m.kinds, MCS_API, "ServiceImport", "").await else { continue };
        for si in list {
            imports.push((
                m.name.clone(),
                str_at(&si, "/metadata/namespace").to_string(),
                str_at(&si, "/metadata/name").to_string(),
            ));
        }
    }
    for m in &members {
        let wanted: Vec<&(String, String, String)> = imports.iter().filter(|(c, _, _)| *c == m.name).collect();
        let mut keep: Vec<(String, String)> = Vec::new();
        for (_, ns, name) in wanted {
            let Some(parts) = exports.get(&(ns.clone(), name.clone())) else { continue };
            put(m, &objects::json_of(&derived_service(ns, name, parts))).await;
            for e in parts {
                let slice = imported_slice(ns, name, e);
                keep.push((ns.clone(), slice.metadata.name.clone().unwrap_or_default()));
                put(m, &objects::json_of(&slice)).await;
            }
        }
        // Slices of clusters that stopped exporting, or of imports that went.
        let Ok(slices) = objects::list(&m.client, &m.kinds, "discovery.k8s.io/v1", "EndpointSlice", "").await else {
            continue;
        };
        for s in slices {
            let managed = uc_api::meta::label(&s, MANAGED_BY) == Some(DISPATCHER);
            let key = (str_at(&s, "/metadata/namespace").to_string(), str_at(&s, "/metadata/name").to_string());
            if managed && !keep.contains(&key) {
                let _ =
                    objects::delete(&m.client, &m.kinds, "discovery.k8s.io/v1", "EndpointSlice", &key.0, &key.1).await;
            }
        }
    }
    Ok(())
}

/// Writes `obj` into a member unless it already holds it.
async fn put(m: &crate::members::Member, obj: &Value) {
    let (av, kind) = (str_at(obj, "/apiVersion"), str_at(obj, "/kind"));
    let (ns, name) = (str_at(obj, "/metadata/namespace"), str_at(obj, "/metadata/name"));
    let current = objects::get(&m.client, &m.kinds, av, kind, ns, name).await;
    if let Ok(Some(c)) = &current
        && holds(c, obj)
        && c.get("endpoints") == obj.get("endpoints")
    {
        return;
    }
    if let Err(e) = objects::apply(&m.client, &m.kinds, obj).await {
        tracing::warn!(cluster = %m.name, error = %e, "service import not written");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exported(cluster: &str, ip: &str) -> Exported {
        Exported {
            cluster: cluster.into(),
            service: serde_json::from_value(
                json!({"spec": {"clusterIP": "None", "ports": [{"name": "client", "port": 2181}]}}),
            )
            .unwrap(),
            endpoints: Some(
                serde_json::from_value(json!({"subsets": [{"addresses": [{"ip": ip, "hostname": "zk-0"}],
                                                "notReadyAddresses": [{"ip": "127.9.0.9", "hostname": "zk-1"}]}]}))
                .unwrap(),
            ),
        }
    }

    #[test]
    fn an_export_becomes_a_derived_headless_service_and_a_slice_per_cluster() {
        let parts = [exported("m1", "127.1.0.2"), exported("m2", "127.2.0.2")];
        let svc = objects::json_of(&derived_service("default", "zk-headless", &parts));
        assert_eq!(svc["metadata"]["name"], "derived-zk-headless");
        assert_eq!(svc["spec"]["clusterIP"], "None");
        assert!(svc["spec"].get("selector").is_none());
        let slice = objects::json_of(&imported_slice("default", "zk-headless", &parts[1]));
        assert_eq!(slice["metadata"]["name"], "imported-m2-zk-headless");
        assert_eq!(slice["metadata"]["labels"][SOURCE_CLUSTER], "m2");
        assert_eq!(slice["metadata"]["labels"][SERVICE_NAME], "derived-zk-headless");
        assert_eq!(
            slice["endpoints"][0],
            json!({"addresses": ["127.2.0.2"], "conditions": {"ready": true}, "hostname": "zk-0"})
        );
        assert_eq!(slice["endpoints"][1]["conditions"]["ready"], false);
        assert_eq!(slice["ports"][0]["port"], 2181);
    }
}
