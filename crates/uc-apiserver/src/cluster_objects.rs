//! Objects every Kubernetes cluster has and clients look for: the `kubernetes` Service in `default` with
//! Endpoints pointing at the API server, and in every namespace the `kube-root-ca.crt` ConfigMap (the
//! CA that signs the API server's certificate, for in-cluster clients) and the `default` ServiceAccount. The builders are pure; `ensure`
//! writes what is missing or stale.

use std::net::Ipv4Addr;

use serde_json::{Value, json};
use uc_api::{GroupResource, Pointer};

use crate::app::App;
use crate::handlers::meta::{is_deleting, stamp_new};
use crate::storage::{Op, StoreError, object_key, rv_of};

/// The name of the CA ConfigMap in every namespace.
pub const ROOT_CA: &str = "kube-root-ca.crt";

/// The `kubernetes` Service: port 443 (https) to the API server's port, at the first address of the
/// service range when there is one.
pub fn kubernetes_service(cluster_ip: Option<Ipv4Addr>, port: u16) -> Value {
    let mut svc = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "sessionAffinity": "None",
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
        "status": {"loadBalancer": {}}
    });
    if let Some(ip) = cluster_ip {
        svc["spec"]["clusterIP"] = json!(ip.to_string());
        svc["spec"]["clusterIPs"] = json!([ip.to_string()]);
    }
    svc
}

/// The `kubernetes` Endpoints: the API server on loopback.
pub fn kubernetes_endpoints(port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]
    })
}

/// The CA ConfigMap of a namespace.
pub fn root_ca(namespace: &str, ca_pem: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA, "namespace": namespace,
                     "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
        "data": {"ca.crt": ca_pem}
    })
}

/// The `default` ServiceAccount every namespace has.
pub fn default_service_account(namespace: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}})
}

/// Creates `object` unless it exists; with `refresh`, replaces the part `refresh` names (`spec`,
/// `subsets`, `data`) when it differs (the API server's port can change between runs).
async fn ensure_one(app: &App, gr: GroupResource, mut object: Value, refresh: Option<&str>) -> Result<(), StoreError> {
    let ns = object["metadata"]["namespace"].as_str().unwrap_or_default().to_string();
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let key = object_key(&ns, &name);
    match app.store.get(&gr, &key) {
        None => {
            stamp_new(&mut object);
            match app.store.write(Op::Create { gr, key, object }).await {
                Ok(_) | Err(StoreError::AlreadyExists) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Some(old) => {
            let Some(field) = refresh.filter(|f| old.get(*f) != object.get(*f)) else { return Ok(()) };
            let mut new = (*old).clone();
            new[field] = object[field].clone();
            match app.store.write(Op::Update { gr, key, object: new, expect_rv: rv_of(&old) }).await {
                Ok(_) | Err(StoreError::Conflict { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        }
    }
}

/// What every namespace has, if it is missing: the CA ConfigMap and the `default` ServiceAccount.
pub async fn ensure_namespace_objects(app: &App, namespace: &str) -> Result<(), StoreError> {
    ensure_one(app, GroupResource::new("", "configmaps"), root_ca(namespace, &app.ca_pem), Some("data")).await?;
    ensure_one(app, GroupResource::new("", "serviceaccounts"), default_service_account(namespace), None).await
}

/// Everything above, for an API server listening on `port`.
pub async fn ensure(app: &App, port: u16) -> Result<(), StoreError> {
    let services = GroupResource::new("", "services");
    let ip = match &app.service_range {
        Some(range) => {
            let (all, _) = app.store.list(&services, None, None)?;
            let mine = all.iter().find(|(k, _)| k == "default/kubernetes").map(|(_, o)| o.clone());
            let used = crate::service_ips::in_use(
                all.iter().filter(|(k, _)| k != "default/kubernetes").map(|(_, o)| o.as_ref()),
            );
            let kept = mine
                .as_ref()
                .and_then(|s| s.at("/spec/clusterIP"))
                .and_then(Value::as_str)
                .and_then(|s| s.parse().ok())
                // An address of another range (the pod network changed) is given up for this one's.
                .filter(|ip| range.contains(*ip));
            kept.or_else(|| Some(range.first()).filter(|f| !used.contains(f))).or_else(|| range.allocate(&used, 0))
        }
        None => None,
    };
    let mut svc = kubernetes_service(ip, port);
    if let Some(existing) = app.store.get(&services, "default/kubernetes").filter(|_| ip.is_none()) {
        // Without a range, keep what was allocated; only the target port follows the API server.
        for k in ["clusterIP", "clusterIPs"] {
            if let Some(v) = existing.at(&format!("/spec/{k}")) {
                svc["spec"][k] = v.clone();
            }
        }
    }
    ensure_one(app, services, svc, Some("spec")).await?;
    ensure_one(app, GroupResource::new("", "endpoints"), kubernetes_endpoints(port), Some("subsets")).await?;
    let (namespaces, _) = app.store.list(&GroupResource::new("", "namespaces"), None, None)?;
    for (_, ns) in namespaces {
        let name = ns.at("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        if !is_deleting(&ns) {
            ensure_namespace_objects(app, name).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_objects_clients_look_for() {
        let svc = kubernetes_service(Some(Ipv4Addr::new(10, 96, 0, 1)), 6443);
        assert_eq!(
            svc["spec"]["ports"][0],
            json!({"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443})
        );
        assert_eq!(svc["spec"]["clusterIP"], json!("10.96.0.1"));
        assert!(kubernetes_service(None, 1).at("/spec/clusterIP").is_none());
        let ep = kubernetes_endpoints(6443);
        assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], json!("127.0.0.1"));
        assert_eq!(ep["subsets"][0]["ports"][0]["port"], json!(6443));
        assert_eq!(root_ca("team-a", "PEM")["data"]["ca.crt"], json!("PEM"));
        assert_eq!(root_ca("team-a", "PEM")["metadata"]["namespace"], json!("team-a"));
        assert_eq!(default_service_account("team-a")["metadata"], json!({"name": "default", "namespace": "team-a"}));
    }
}
