//! Multi-cluster services (the MCS API, as Karmada implements it): a Service exported by a
//! `ServiceExport` in some members is imported, where a `ServiceImport` of the same name exists, as a
//! `derived-<service>` Service with one EndpointSlice per exporting cluster (`imported-<cluster>-<service>`)
//! holding that cluster's endpoints, hostnames included. Pods reach the imported endpoints by their
//! clusterset names (`<hostname>.<cluster>.<service>.<namespace>.svc.clusterset.local`, see
//! `uc_api::dns`): members' pods share the host's loopback network, so the addresses are reachable.

use std::collections::BTreeMap;

use serde_json::{Value, json};
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
    pub service: Value,
    pub endpoints: Option<Value>,
}

/// `derived-<service>`.
pub fn derived_name(service: &str) -> String {
    format!("derived-{service}")
}

/// The derived Service in an importing cluster: the exported Service's ports, headless when the
/// exported one is, no selector (its endpoints are the imported slices).
pub fn derived_service(namespace: &str, name: &str, exports: &[Exported]) -> Value {
    let first = exports.first().map(|e| &e.service);
    let ports: Vec<Value> = first
        .and_then(|s| s.pointer("/spec/ports"))
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .map(|p| json!({"name": p.get("name").cloned().unwrap_or(json!("")), "port": p["port"], "protocol": p.get("protocol").cloned().unwrap_or(json!("TCP"))}))
                .collect()
        })
        .unwrap_or_default();
    let headless = first.is_some_and(|s| str_at(s, "/spec/clusterIP") == "None");
    let mut spec = json!({"ports": ports, "type": "ClusterIP"});
    if headless {
        spec["clusterIP"] = json!("None");
    }
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": derived_name(name), "namespace": namespace,
                     "labels": {MCS_SERVICE_NAME: name}},
        "spec": spec,
    })
}

/// The slice of one exporting cluster, as an importing cluster holds it.
pub fn imported_slice(namespace: &str, name: &str, e: &Exported) -> Value {
    let mut endpoints = Vec::new();
    for subset in e.endpoints.as_ref().and_then(|ep| ep.get("subsets")).and_then(Value::as_array).into_iter().flatten()
    {
        for (list, ready) in [("addresses", true), ("notReadyAddresses", false)] {
            for a in subset.get(list).and_then(Value::as_array).into_iter().flatten() {
                let mut ep = json!({"addresses": [str_at(a, "/ip")], "conditions": {"ready": ready}});
                if !str_at(a, "/hostname").is_empty() {
                    ep["hostname"] = json!(str_at(a, "/hostname"));
                }
                endpoints.push(ep);
            }
        }
    }
    let ports: Vec<Value> = e
        .service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| json!({"name": p.get("name").cloned().unwrap_or(json!("")), "port": p.get("targetPort").filter(|t| t.is_number()).unwrap_or(&p["port"]), "protocol": p.get("protocol").cloned().unwrap_or(json!("TCP"))}))
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {
            "name": format!("imported-{}-{name}", e.cluster),
            "namespace": namespace,
            "labels": {SERVICE_NAME: derived_name(name), MANAGED_BY: DISPATCHER,
                       SOURCE_CLUSTER: e.cluster, MCS_SERVICE_NAME: name},
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": ports,
    })
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
            let Ok(Some(service)) = objects::get(&m.client, &m.kinds, "v1", "Service", &ns, &name).await else {
                continue;
            };
            let endpoints = objects::get(&m.client, &m.kinds, "v1", "Endpoints", &ns, &name).await.ok().flatten();
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
            let svc = derived_service(ns, name, parts);
            put(m, &svc).await;
            for e in parts {
                let slice = imported_slice(ns, name, e);
                keep.push((ns.clone(), str_at(&slice, "/metadata/name").to_string()));
                put(m, &slice).await;
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

    fn exported(cluster: &str, ip: &str) -> Exported {
        Exported {
            cluster: cluster.into(),
            service: json!({"spec": {"clusterIP": "None", "ports": [{"name": "client", "port": 2181}]}}),
            endpoints: Some(json!({"subsets": [{"addresses": [{"ip": ip, "hostname": "zk-0"}],
                                                "notReadyAddresses": [{"ip": "127.9.0.9", "hostname": "zk-1"}]}]})),
        }
    }

    #[test]
    fn an_export_becomes_a_derived_headless_service_and_a_slice_per_cluster() {
        let parts = [exported("m1", "127.1.0.2"), exported("m2", "127.2.0.2")];
        let svc = derived_service("default", "zk-headless", &parts);
        assert_eq!(svc["metadata"]["name"], "derived-zk-headless");
        assert_eq!(svc["spec"]["clusterIP"], "None");
        assert!(svc["spec"].get("selector").is_none());
        let slice = imported_slice("default", "zk-headless", &parts[1]);
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
