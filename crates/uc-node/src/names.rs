//! Names for pod processes, without touching the machine's configuration: the node keeps one hosts
//! file per namespace (`<dir>/<namespace>`) with every Service's and pod's cluster names (see
//! [`uc_api::dns`]: fully qualified, and the short forms a pod of that namespace would reach through
//! its DNS search path), and each pod process sees its namespace's file as `/etc/hosts` through a
//! private mount namespace. glibc and Go read /etc/hosts on every lookup, and the files are rewritten
//! in place (same inode, so the bind mounts keep seeing them), so names follow pods as they come and go.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use parking_lot::Mutex;
use uc_api::dns::{DOMAIN, Names, key_of};

/// An address and its names.
type Entry = (String, Vec<String>);

/// The names of a pod: `<hostname>.<subdomain>.<ns>.svc.cluster.local` (and its short forms) when it
/// has both, and its dashed-IP name.
pub fn pod_names(pod: &Pod) -> Option<(String, String, Vec<String>)> {
    let ip = crate::pod_api::pod_ip(pod)?;
    if crate::pod_api::is_deleting(pod) {
        return None;
    }
    let ns = crate::pod_api::namespace(pod);
    let mut names = Vec::new();
    let spec = crate::pod_api::spec(pod);
    let (host, sub) = (spec.hostname.as_deref().unwrap_or_default(), spec.subdomain.as_deref().unwrap_or_default());
    if !host.is_empty() && !sub.is_empty() {
        names.push(format!("{host}.{sub}.{ns}.svc.{DOMAIN}"));
        names.push(format!("{host}.{sub}.{ns}.svc"));
        names.push(format!("{host}.{sub}.{ns}"));
    }
    names.push(format!("{}.{ns}.pod.{DOMAIN}", ip.replace('.', "-")));
    Some((ip.to_string(), ns.to_string(), names))
}

#[derive(Default)]
struct Tables {
    pods: BTreeMap<String, (String, String, Vec<String>)>,
    services: BTreeMap<String, Service>,
    endpoints: BTreeMap<String, Endpoints>,
    /// EndpointSlices imported from other clusters (multi-cluster services).
    slices: BTreeMap<String, EndpointSlice>,
    namespaces: BTreeSet<String>,
}

/// The node's hosts files, and the same names for its DNS server.
pub struct HostsFiles {
    dir: PathBuf,
    tables: Mutex<Tables>,
    /// Every fully qualified name and its IPv4 addresses, as of the last change.
    records: parking_lot::RwLock<std::collections::HashMap<String, Vec<std::net::Ipv4Addr>>>,
    /// The node's DNS server and the machine's resolv.conf, when the node serves DNS.
    dns: Mutex<Option<(std::net::Ipv4Addr, String)>>,
}

impl HostsFiles {
    /// Hosts files under `dir`.
    pub fn new(dir: PathBuf) -> std::io::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        Ok(Self { dir, tables: Mutex::new(Tables::default()), records: Default::default(), dns: Mutex::new(None) })
    }

    /// From now on pods also get a resolv.conf naming `server` (the node's DNS server) before the
    /// machine's nameservers (`machine`: its resolv.conf).
    pub fn serve_dns(&self, server: std::net::Ipv4Addr, machine: String) {
        *self.dns.lock() = Some((server, machine));
    }

    /// The resolv.conf a pod of `namespace` sees, written now; None when the node serves no DNS.
    pub fn resolv_path(&self, namespace: &str) -> Option<PathBuf> {
        let (server, machine) = self.dns.lock().clone()?;
        let ns = namespace_or_default(namespace);
        let path = self.dir.join(format!("{ns}.resolv"));
        let text = crate::dns::resolv_conf(server, &ns, &machine);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).ok()?;
        }
        Some(path)
    }

    /// What the cluster knows of a (lower-case) name, for the DNS server.
    pub fn lookup(&self, name: &str) -> crate::dns::Lookup {
        use crate::dns::Lookup;
        match self.records.read().get(name) {
            Some(ips) => Lookup::Found(ips.clone()),
            None if crate::dns::in_zone(name) => Lookup::NoSuchName,
            None => Lookup::NotOurs,
        }
    }

    /// The file a pod of `namespace` sees as /etc/hosts (written now if it is new).
    pub fn path(&self, namespace: &str) -> PathBuf {
        let ns = namespace_or_default(namespace);
        let new = self.tables.lock().namespaces.insert(ns.clone());
        if new {
            let _ = self.flush_one(&ns);
        }
        self.dir.join(ns)
    }

    /// Records a pod (or forgets it when it has no address).
    pub fn set_pod(&self, uid: &str, pod: Option<&Pod>) {
        let entry = pod.and_then(pod_names);
        let changed = {
            let mut t = self.tables.lock();
            let before = t.pods.get(uid).cloned();
            match &entry {
                Some(e) => t.pods.insert(uid.to_string(), e.clone()),
                None => t.pods.remove(uid),
            };
            before != entry
        };
        if changed {
            self.flush();
        }
    }

    /// Records a Service (or forgets it).
    pub fn set_service(&self, svc: &Service, gone: bool) {
        let key = key_of(&svc.metadata);
        let changed = {
            let mut t = self.tables.lock();
            let before = t.services.get(&key).cloned();
            if gone {
                t.services.remove(&key);
            } else {
                t.services.insert(key.clone(), svc.clone());
            }
            before.as_ref() != t.services.get(&key)
        };
        if changed {
            self.flush();
        }
    }

    /// Records a Service's Endpoints (or forgets them).
    pub fn set_endpoints(&self, endpoints: &Endpoints, gone: bool) {
        let key = key_of(&endpoints.metadata);
        let changed = {
            let mut t = self.tables.lock();
            let before = t.endpoints.get(&key).and_then(|e| e.subsets.clone());
            if gone {
                t.endpoints.remove(&key);
            } else {
                t.endpoints.insert(key.clone(), endpoints.clone());
            }
            before.as_ref() != t.endpoints.get(&key).and_then(|e| e.subsets.as_ref())
        };
        if changed {
            self.flush();
        }
    }

    /// Records an EndpointSlice (or forgets it); only slices imported from other clusters name
    /// anything (their clusterset names).
    pub fn set_endpoint_slice(&self, slice: &EndpointSlice, gone: bool) {
        let key = key_of(&slice.metadata);
        let imported = !uc_api::dns::clusterset_records(slice).is_empty();
        let changed = {
            let mut t = self.tables.lock();
            let before = t.slices.get(&key).cloned();
            if gone || !imported {
                t.slices.remove(&key);
            } else {
                t.slices.insert(key.clone(), slice.clone());
            }
            before.map(|b| b.endpoints) != t.slices.get(&key).map(|e| e.endpoints.clone())
        };
        if changed {
            self.flush();
        }
    }

    /// The file's content for `namespace`.
    pub fn render(&self, namespace: &str) -> String {
        let t = self.tables.lock();
        render(&t, namespace)
    }

    fn flush(&self) {
        *self.records.write() = records(&self.tables.lock());
        let namespaces: Vec<String> = self.tables.lock().namespaces.iter().cloned().collect();
        for ns in namespaces {
            let _ = self.flush_one(&ns);
        }
    }

    fn flush_one(&self, ns: &str) -> std::io::Result<()> {
        // In place, one write: bind mounts of the file must keep seeing the same inode.
        let text = self.render(ns);
        let path: &Path = &self.dir.join(ns);
        let mut f = std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(path)?;
        f.write_all(text.as_bytes())
    }
}

/// A namespace as a file name (anything that could leave the directory is `default`).
fn namespace_or_default(namespace: &str) -> String {
    if namespace.is_empty() || namespace.contains('/') || namespace.starts_with('.') {
        "default".to_string()
    } else {
        namespace.to_string()
    }
}

/// Every fully qualified name of the tables (pods' and Services') with its IPv4 addresses.
fn records(t: &Tables) -> std::collections::HashMap<String, Vec<std::net::Ipv4Addr>> {
    let mut out: std::collections::HashMap<String, Vec<std::net::Ipv4Addr>> = Default::default();
    let v4 = |ip: &std::net::IpAddr| match ip {
        std::net::IpAddr::V4(a) => Some(*a),
        std::net::IpAddr::V6(_) => None,
    };
    for (ip, _, names) in t.pods.values() {
        let Ok(ip) = ip.parse::<std::net::Ipv4Addr>() else { continue };
        for n in names.iter().filter(|n| crate::dns::in_zone(n)) {
            out.entry(n.to_ascii_lowercase()).or_default().push(ip);
        }
    }
    let names = Names::build(t.services.values(), &t.endpoints, t.slices.values());
    for (name, ips) in names.records() {
        out.entry(name.to_ascii_lowercase()).or_default().extend(ips.iter().filter_map(v4));
    }
    for ips in out.values_mut() {
        ips.sort();
        ips.dedup();
    }
    out
}

fn render(t: &Tables, namespace: &str) -> String {
    let mut out = String::from("# written by the uc node agent\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n");
    let mut lines: Vec<Entry> = Vec::new();
    for (ip, ns, names) in t.pods.values() {
        let mut names = names.clone();
        // A pod's `<hostname>.<subdomain>`, as its own namespace's search path reaches it.
        if ns == namespace
            && let Some(first) = names.first()
            && let Some(short) = first.strip_suffix(&format!(".{ns}.svc.{DOMAIN}"))
        {
            names.push(short.to_string());
        }
        lines.push((ip.clone(), names));
    }
    let names = Names::build(t.services.values(), &t.endpoints, t.slices.values());
    for (ip, n) in names.hosts_lines(namespace) {
        lines.push((ip.to_string(), n));
    }
    // A name listed once per address (a pod's name comes from the pod and from its Service's
    // endpoints both); resolvers would return the address twice otherwise.
    let mut listed: BTreeSet<(String, String)> = BTreeSet::new();
    for (ip, names) in lines {
        let fresh: Vec<String> = names.into_iter().filter(|n| listed.insert((ip.clone(), n.clone()))).collect();
        if !fresh.is_empty() {
            out.push_str(&format!("{ip}\t{}\n", fresh.join(" ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_dns_server_answers_the_names_of_the_hosts_files_as_they_change() {
        use crate::dns::Lookup;
        let dir = std::env::temp_dir().join(format!("uc-dns-test-{}", std::process::id()));
        let h = HostsFiles::new(dir.clone()).unwrap();
        let name = "web-0.web.team.svc.cluster.local";
        assert_eq!(h.lookup(name), Lookup::NoSuchName, "before the pod has an address");
        let pod: Pod = typed(json!({"metadata": {"namespace": "team"},
            "spec": {"hostname": "web-0", "subdomain": "web", "containers": []}, "status": {"podIP": "127.1.0.9"}}));
        h.set_pod("u1", Some(&pod));
        assert_eq!(h.lookup(name), Lookup::Found(vec![std::net::Ipv4Addr::new(127, 1, 0, 9)]));
        assert_eq!(
            h.lookup("127-1-0-9.team.pod.cluster.local"),
            Lookup::Found(vec![std::net::Ipv4Addr::new(127, 1, 0, 9)])
        );
        assert_eq!(h.lookup("web-0.web"), Lookup::NotOurs, "short forms are the resolver's search path's to expand");
        h.set_service(
            &typed(json!({"metadata": {"name": "api", "namespace": "team"}, "spec": {"clusterIP": "127.1.240.3"}})),
            false,
        );
        assert_eq!(
            h.lookup("api.team.svc.cluster.local"),
            Lookup::Found(vec![std::net::Ipv4Addr::new(127, 1, 240, 3)])
        );
        h.set_pod("u1", None);
        assert_eq!(h.lookup(name), Lookup::NoSuchName, "gone with the pod");
        // resolv.conf files only once the node serves DNS, one per namespace beside its hosts file.
        assert_eq!(h.resolv_path("team"), None);
        h.serve_dns(std::net::Ipv4Addr::new(127, 1, 239, 255), "nameserver 10.0.0.2\n".into());
        let path = h.resolv_path("team").unwrap();
        assert_eq!(path, dir.join("team.resolv"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("nameserver 127.1.239.255\nnameserver 10.0.0.2\nsearch team.svc.cluster.local "),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn pods_and_services_get_their_names() {
        let dir = std::env::temp_dir().join(format!("uc-hosts-test-{}", std::process::id()));
        let h = HostsFiles::new(dir.clone()).unwrap();
        let path = h.path("default");
        let pod: Pod = typed(json!({"metadata": {"namespace": "default"},
            "spec": {"hostname": "web-2", "subdomain": "web", "containers": []}, "status": {"podIP": "127.1.0.4"}}));
        h.set_pod("u2", Some(&pod));
        h.set_service(
            &typed(json!({"metadata": {"name": "web", "namespace": "default"}, "spec": {"clusterIP": "None"}})),
            false,
        );
        h.set_service(
            &typed(json!({"metadata": {"name": "api", "namespace": "default"}, "spec": {"clusterIP": "127.1.240.2"}})),
            false,
        );
        let ep: Endpoints = typed(
            json!({"metadata": {"name": "web", "namespace": "default"}, "subsets": [{"addresses": [{"ip": "127.1.0.4"}, {"ip": "127.1.0.5"}]}]}),
        );
        h.set_endpoints(&ep, false);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("127.1.0.4\tweb-2.web.default.svc.cluster.local web-2.web.default.svc web-2.web.default 127-1-0-4.default.pod.cluster.local web-2.web\n"), "{text}");
        assert!(text.contains("127.1.0.5\tweb.default.svc.cluster.local web.default.svc web.default web\n"), "{text}");
        assert!(
            text.contains("127.1.240.2\tapi.default.svc.cluster.local api.default.svc api.default api\n"),
            "a ClusterIP Service is its cluster IP: {text}"
        );
        let other = std::fs::read_to_string(h.path("other")).unwrap();
        assert!(
            other.contains(" api.default\n") && !other.contains(" api\n"),
            "no short names of another namespace: {other}"
        );
        h.set_pod("u2", None);
        assert!(!std::fs::read_to_string(&path).unwrap().contains("web-2.web"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
