//! Names for pod processes, without touching the machine's configuration: the node agent keeps a hosts
//! file with every pod's `<hostname>.<subdomain>.<namespace>.svc.cluster.local` and every Service's
//! `<service>.<namespace>.svc.cluster.local` (its ready endpoint addresses), and each pod process sees
//! that file as its `/etc/hosts` through a private mount namespace (see `process.rs`). glibc reads
//! /etc/hosts on every lookup, and the file is rewritten in place (same inode, so the bind mounts keep
//! seeing it), so names follow pods as they come and go.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde_json::Value;

/// The cluster domain.
pub const DOMAIN: &str = "cluster.local";

/// An address and its names.
type Entry = (String, Vec<String>);

/// The shared hosts file.
pub struct HostsFile {
    path: PathBuf,
    pods: Mutex<BTreeMap<String, Entry>>,
    services: Mutex<BTreeMap<String, Vec<Entry>>>,
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or_default()
}

/// The names of a pod: FQDN under its subdomain, and its dashed-IP name.
pub fn pod_names(pod: &Value) -> Option<(String, Vec<String>)> {
    let ip = s(pod, "/status/podIP");
    if ip.is_empty() || pod.pointer("/metadata/deletionTimestamp").is_some() {
        return None;
    }
    let ns = s(pod, "/metadata/namespace");
    let mut names = vec![format!("{}.{ns}.pod.{DOMAIN}", ip.replace('.', "-"))];
    let (host, sub) = (s(pod, "/spec/hostname"), s(pod, "/spec/subdomain"));
    if !host.is_empty() && !sub.is_empty() {
        names.insert(0, format!("{host}.{sub}.{ns}.svc.{DOMAIN}"));
        names.insert(1, format!("{host}.{sub}.{ns}.svc"));
    }
    Some((ip.to_string(), names))
}

/// The names of a Service, per ready address of its Endpoints.
pub fn service_names(endpoints: &Value) -> Vec<(String, Vec<String>)> {
    let (name, ns) = (s(endpoints, "/metadata/name"), s(endpoints, "/metadata/namespace"));
    let names = vec![format!("{name}.{ns}.svc.{DOMAIN}"), format!("{name}.{ns}.svc")];
    endpoints
        .get("subsets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|sub| sub.get("addresses").and_then(Value::as_array).cloned().unwrap_or_default())
        .filter_map(|a| a.get("ip").and_then(Value::as_str).map(|ip| (ip.to_string(), names.clone())))
        .collect()
}

impl HostsFile {
    /// A hosts file at `path` (written now, then on every change).
    pub fn new(path: PathBuf) -> std::io::Result<Self> {
        let h = Self { path, pods: Mutex::new(BTreeMap::new()), services: Mutex::new(BTreeMap::new()) };
        if let Some(d) = h.path.parent() {
            std::fs::create_dir_all(d)?;
        }
        h.flush()?;
        Ok(h)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records a pod (or forgets it when it has no address).
    pub fn set_pod(&self, uid: &str, pod: Option<&Value>) {
        let entry = pod.and_then(pod_names);
        let changed = {
            let mut pods = self.pods.lock();
            let before = pods.get(uid).cloned();
            match &entry {
                Some(e) => {
                    pods.insert(uid.to_string(), e.clone());
                }
                None => {
                    pods.remove(uid);
                }
            }
            before != entry
        };
        if changed {
            let _ = self.flush();
        }
    }

    /// Records a Service's Endpoints (or forgets them).
    pub fn set_endpoints(&self, key: &str, endpoints: Option<&Value>) {
        let entries = endpoints.map(service_names).unwrap_or_default();
        let changed = {
            let mut svcs = self.services.lock();
            let before = svcs.get(key).cloned().unwrap_or_default();
            if entries.is_empty() {
                svcs.remove(key);
            } else {
                svcs.insert(key.to_string(), entries.clone());
            }
            before != entries
        };
        if changed {
            let _ = self.flush();
        }
    }

    /// The file's content.
    pub fn render(&self) -> String {
        let mut out =
            String::from("# written by the uc node agent\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n");
        for (ip, names) in self.pods.lock().values() {
            out.push_str(&format!("{ip}\t{}\n", names.join(" ")));
        }
        for entries in self.services.lock().values() {
            for (ip, names) in entries {
                out.push_str(&format!("{ip}\t{}\n", names.join(" ")));
            }
        }
        out
    }

    fn flush(&self) -> std::io::Result<()> {
        // In place, one write: bind mounts of this file must keep seeing the same inode.
        let text = self.render();
        let mut f = std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(&self.path)?;
        f.write_all(text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_and_services_get_their_names() {
        let dir = std::env::temp_dir().join(format!("uc-hosts-test-{}", std::process::id()));
        let h = HostsFile::new(dir.join("hosts")).unwrap();
        let pod = json!({"metadata": {"namespace": "default"}, "spec": {"hostname": "web-2", "subdomain": "web"}, "status": {"podIP": "127.1.0.4"}});
        h.set_pod("u2", Some(&pod));
        let ep = json!({"metadata": {"name": "web", "namespace": "default"}, "subsets": [{"addresses": [{"ip": "127.1.0.4"}, {"ip": "127.1.0.5"}]}]});
        h.set_endpoints("default/web", Some(&ep));
        let text = std::fs::read_to_string(h.path()).unwrap();
        assert!(text.contains(
            "127.1.0.4\tweb-2.web.default.svc.cluster.local web-2.web.default.svc 127-1-0-4.default.pod.cluster.local"
        ));
        assert!(text.contains("127.1.0.5\tweb.default.svc.cluster.local web.default.svc"));
        h.set_pod("u2", None);
        assert!(!std::fs::read_to_string(h.path()).unwrap().contains("web-2.web"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
