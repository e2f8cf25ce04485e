//! In-cluster names, as cluster DNS answers them: a Service is `<svc>.<ns>.svc.cluster.local` (its
//! cluster IP, or for a headless Service the addresses of its endpoints), a pod behind a headless
//! Service is `<hostname>.<svc>.<ns>.svc.cluster.local`, and a short name is looked up through the
//! search path of a pod's namespace (`<ns>.svc.cluster.local svc.cluster.local cluster.local`,
//! `ndots:5`). One table, used by the node's hosts files and by every client uc runs on the host.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The cluster domain.
pub const DOMAIN: &str = "cluster.local";
/// The domain of multi-cluster services (the MCS API's `clusterset.local`).
pub const CLUSTERSET_DOMAIN: &str = "clusterset.local";
/// Labels of an EndpointSlice imported from another cluster (the MCS API's).
pub const SOURCE_CLUSTER: &str = "multicluster.kubernetes.io/source-cluster";
pub const MCS_SERVICE_NAME: &str = "multicluster.kubernetes.io/service-name";

/// `<namespace>/<name>` of an object, as the name tables key Services and their Endpoints.
pub fn key_of(meta: &ObjectMeta) -> String {
    let s = |f: &Option<String>| f.as_deref().unwrap_or_default().to_string();
    format!("{}/{}", s(&meta.namespace), s(&meta.name))
}

/// The records of one Service: fully qualified name → addresses. `endpoints` is its Endpoints
/// object, if any.
pub fn service_records(service: &Service, endpoints: Option<&Endpoints>) -> Vec<(String, Vec<IpAddr>)> {
    let text = |f: &Option<String>| f.as_deref().unwrap_or_default().to_string();
    let (name, ns) = (text(&service.metadata.name), text(&service.metadata.namespace));
    if name.is_empty() || ns.is_empty() {
        return Vec::new();
    }
    let fqdn = format!("{name}.{ns}.svc.{DOMAIN}");
    let spec = service.spec.as_ref();
    let cluster_ip = spec.and_then(|s| s.cluster_ip.as_deref()).unwrap_or_default();
    if let Ok(ip) = cluster_ip.parse::<IpAddr>() {
        return vec![(fqdn, vec![ip])];
    }
    if cluster_ip != "None" && spec.and_then(|s| s.type_.as_deref()) == Some("ExternalName") {
        return Vec::new();
    }
    // Headless: the endpoints' addresses, and a name per address with a hostname.
    let mut all = Vec::new();
    let mut out = Vec::new();
    let subsets = endpoints.and_then(|e| e.subsets.as_ref()).into_iter().flatten();
    for a in subsets.flat_map(|s| s.addresses.iter().flatten()) {
        let Ok(ip) = a.ip.parse::<IpAddr>() else { continue };
        all.push(ip);
        if let Some(host) = a.hostname.as_deref().filter(|h| !h.is_empty()) {
            out.push((format!("{host}.{name}.{ns}.svc.{DOMAIN}"), vec![ip]));
        }
    }
    all.sort();
    all.dedup();
    if !all.is_empty() {
        out.insert(0, (fqdn, all));
    }
    out
}

/// The clusterset records of an EndpointSlice imported from another cluster (labelled with its
/// source cluster and service): `<hostname>.<cluster>.<svc>.<ns>.svc.clusterset.local` per endpoint
/// with a hostname, and every address under `<svc>.<ns>.svc.clusterset.local` (which the slices of
/// all clusters share). Endpoints count ready or not: a server joining an ensemble must be reachable
/// before it serves.
pub fn clusterset_records(slice: &EndpointSlice) -> Vec<(String, Vec<IpAddr>)> {
    let label = |k: &str| slice.metadata.labels.as_ref().and_then(|l| l.get(k));
    let (Some(cluster), Some(svc)) = (label(SOURCE_CLUSTER), label(MCS_SERVICE_NAME)) else { return Vec::new() };
    let ns = slice.metadata.namespace.as_deref().unwrap_or_default();
    let mut all = Vec::new();
    let mut out = Vec::new();
    for ep in &slice.endpoints {
        let ips: Vec<IpAddr> = ep.addresses.iter().filter_map(|a| a.parse().ok()).collect();
        all.extend(ips.iter().copied());
        if let Some(host) = ep.hostname.as_deref().filter(|h| !h.is_empty())
            && !ips.is_empty()
        {
            out.push((format!("{host}.{cluster}.{svc}.{ns}.svc.{CLUSTERSET_DOMAIN}"), ips));
        }
    }
    out.insert(0, (format!("{svc}.{ns}.svc.{CLUSTERSET_DOMAIN}"), all));
    out
}

/// A name as fully qualified candidates, in the order a pod in `namespace` tries them (`ndots:5`: a
/// name with fewer than five dots goes through the search path first).
pub fn candidates(name: &str, namespace: &str) -> Vec<String> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if name.matches('.').count() < 5 {
        for suffix in [format!("{namespace}.svc.{DOMAIN}"), format!("svc.{DOMAIN}"), DOMAIN.to_string()] {
            out.push(format!("{name}.{suffix}"));
        }
    }
    out.push(name);
    out
}

/// Every cluster name and its addresses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Names {
    records: BTreeMap<String, Vec<IpAddr>>,
}

impl Names {
    /// The table of `services` with their Endpoints (by `namespace/name`), and the clusterset names of
    /// EndpointSlices imported from other clusters (`slices`: any EndpointSlices; the others add
    /// nothing).
    pub fn build<'a>(
        services: impl IntoIterator<Item = &'a Service>,
        endpoints: &BTreeMap<String, Endpoints>,
        slices: impl IntoIterator<Item = &'a EndpointSlice>,
    ) -> Names {
        let mut records: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
        for svc in services {
            for (name, ips) in service_records(svc, endpoints.get(&key_of(&svc.metadata))) {
                records.insert(name, ips);
            }
        }
        for slice in slices {
            let mut recs = clusterset_records(slice).into_iter();
            // `<svc>.<ns>.svc.clusterset.local`: every cluster's endpoints.
            if let Some((service, ips)) = recs.next() {
                let all = records.entry(service).or_default();
                all.extend(ips);
                all.sort();
                all.dedup();
            }
            records.extend(recs);
        }
        Names { records }
    }

    /// The addresses of a name as a client in `namespace` resolves it (None: not a cluster name).
    pub fn resolve(&self, name: &str, namespace: &str) -> Option<&[IpAddr]> {
        candidates(name, namespace).iter().find_map(|c| self.records.get(c)).map(Vec::as_slice)
    }

    /// All records (fully qualified).
    pub fn records(&self) -> &BTreeMap<String, Vec<IpAddr>> {
        &self.records
    }

    /// Hosts-file lines for processes in `namespace`: each name fully qualified, as `<svc>.<ns>.svc`
    /// and `<svc>.<ns>`, and, for the namespace's own, as the short name (a hosts file has no search
    /// path, so the short forms are spelled out).
    pub fn hosts_lines(&self, namespace: &str) -> Vec<(IpAddr, Vec<String>)> {
        let mut out = Vec::new();
        let own = format!(".{namespace}.svc.{DOMAIN}");
        let suffix = format!(".svc.{DOMAIN}");
        for (name, ips) in &self.records {
            let mut names = vec![name.clone()];
            if let Some(short) = name.strip_suffix(&format!(".{DOMAIN}")) {
                names.push(short.to_string());
            }
            if let Some(rel) = name.strip_suffix(&suffix) {
                names.push(rel.to_string());
            }
            if let Some(rel) = name.strip_suffix(&own) {
                names.push(rel.to_string());
            }
            names.dedup();
            for ip in ips {
                out.push((*ip, names.clone()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    fn table() -> Names {
        let services: Vec<Service> = [
            json!({"metadata": {"name": "example-client", "namespace": "default"}, "spec": {"clusterIP": "127.5.240.3"}}),
            json!({"metadata": {"name": "example", "namespace": "default"}, "spec": {"clusterIP": "None"}}),
            json!({"metadata": {"name": "hook", "namespace": "hooks"}, "spec": {"clusterIP": "127.5.240.4"}}),
        ]
        .into_iter()
        .map(typed)
        .collect();
        let mut endpoints = BTreeMap::new();
        endpoints.insert(
            "default/example".to_string(),
            typed(json!({"subsets": [{"addresses": [{"ip": "127.5.0.2", "hostname": "example-0000"}, {"ip": "127.5.0.3", "hostname": "example-0001"}]}]})),
        );
        let slices: Vec<EndpointSlice> = [
            json!({"metadata": {"name": "imported-m2-zk-headless", "namespace": "default",
                                "labels": {SOURCE_CLUSTER: "m2", MCS_SERVICE_NAME: "zk-headless"}}, "addressType": "IPv4",
                   "endpoints": [{"addresses": ["127.8.0.2"], "hostname": "zk-0", "conditions": {"ready": false}},
                                 {"addresses": ["127.8.0.3"]}]}),
            json!({"metadata": {"name": "imported-m1-zk-headless", "namespace": "default",
                                "labels": {SOURCE_CLUSTER: "m1", MCS_SERVICE_NAME: "zk-headless"}}, "addressType": "IPv4",
                   "endpoints": [{"addresses": ["127.7.0.2"], "hostname": "zk-0"}]}),
            // A slice of this cluster's own: no clusterset names.
            json!({"metadata": {"name": "web-abc", "namespace": "default"}, "addressType": "IPv4", "endpoints": [{"addresses": ["127.5.0.9"], "hostname": "w"}]}),
        ]
        .into_iter()
        .map(typed)
        .collect();
        Names::build(services.iter(), &endpoints, slices.iter())
    }

    #[test]
    fn imported_slices_give_clusterset_names() {
        let t = table();
        let ip = |s: &str| vec![s.parse::<IpAddr>().unwrap()];
        assert_eq!(t.resolve("zk-0.m2.zk-headless.default.svc.clusterset.local", "x"), Some(&ip("127.8.0.2")[..]));
        assert_eq!(t.resolve("zk-0.m1.zk-headless.default.svc.clusterset.local", "x"), Some(&ip("127.7.0.2")[..]));
        let all = t.resolve("zk-headless.default.svc.clusterset.local", "x").unwrap();
        assert_eq!(all.len(), 3, "every cluster's endpoints: {all:?}");
        assert_eq!(t.records().keys().filter(|k| k.contains("clusterset")).count(), 3);
        let lines = t.hosts_lines("default");
        assert!(lines.iter().any(|(i, n)| i.to_string() == "127.8.0.2"
            && n == &vec!["zk-0.m2.zk-headless.default.svc.clusterset.local".to_string()]));
    }

    #[test]
    fn names_resolve_as_in_cluster_dns() {
        let t = table();
        let ip = |s: &str| vec![s.parse::<IpAddr>().unwrap()];
        assert_eq!(t.resolve("example-client", "default"), Some(&ip("127.5.240.3")[..]));
        assert_eq!(t.resolve("example-client", "other"), None, "short names are of the client's namespace");
        assert_eq!(t.resolve("hook.hooks", "default"), Some(&ip("127.5.240.4")[..]));
        assert_eq!(t.resolve("hook.hooks.svc", "x"), Some(&ip("127.5.240.4")[..]));
        assert_eq!(t.resolve("hook.hooks.svc.cluster.local.", "x"), Some(&ip("127.5.240.4")[..]));
        assert_eq!(t.resolve("example-0001.example.default.svc", "x"), Some(&ip("127.5.0.3")[..]));
        assert_eq!(t.resolve("example", "default").map(<[IpAddr]>::len), Some(2), "headless: every address");
        assert_eq!(t.resolve("example.com", "default"), None);
    }

    #[test]
    fn hosts_lines_spell_out_the_search_path() {
        let t = table();
        let lines = t.hosts_lines("default");
        let names_of = |ip: &str| -> Vec<String> {
            lines.iter().filter(|(i, _)| i.to_string() == ip).flat_map(|(_, n)| n.clone()).collect()
        };
        let client = names_of("127.5.240.3");
        for n in [
            "example-client.default.svc.cluster.local",
            "example-client.default.svc",
            "example-client.default",
            "example-client",
        ] {
            assert!(client.contains(&n.to_string()), "{n} in {client:?}");
        }
        let hook = names_of("127.5.240.4");
        assert!(hook.contains(&"hook.hooks".to_string()) && !hook.contains(&"hook".to_string()), "{hook:?}");
        assert!(names_of("127.5.0.2").contains(&"example-0000.example".to_string()));
    }
}
