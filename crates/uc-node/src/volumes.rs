//! A pod's volumes as directories on this machine, and how a container's process sees them.
//!
//! - `persistentVolumeClaim`: `<volumes>/<namespace>/<claim>` (outlives the pod);
//! - `emptyDir`: `<pod dir>/volumes/<name>` (goes with the pod);
//! - `hostPath`: the path itself;
//! - `configMap`, `secret`, `downwardAPI`, `projected`: files the node writes into
//!   `<pod dir>/volumes/<name>` and rewrites when their sources change, the kubelet's way: the files
//!   live in a timestamped directory that a `..data` symlink points at, each top-level name is a
//!   symlink through `..data`, and an update swaps `..data` in one rename, so a reader never sees half
//!   of an update.
//!
//! Processes see their mounts through a private mount namespace ([`isolate`]): bind mounts of those
//! directories (or, with `subPath`, of a path inside one), plus the node's hosts file and the pod's
//! resolv.conf.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, DownwardAPIVolumeFile, KeyToPath, Pod, Volume};

use crate::env::{self, ConfigError, Kind, Sources};
use crate::pod_api::{namespace, spec};

/// A directory (or file) mounted into a container: `source` on the machine at `target` in the
/// container.
#[derive(Clone, Debug, PartialEq)]
pub struct Mount {
    /// Path on the machine.
    pub source: PathBuf,
    /// Path the process sees it at.
    pub target: String,
    /// Mounted read-only.
    pub read_only: bool,
}

/// Whether a volume's content is written by the node from API objects.
pub fn is_projected(volume: &Volume) -> bool {
    volume.config_map.is_some()
        || volume.secret.is_some()
        || volume.downward_api.is_some()
        || volume.projected.is_some()
}

/// The directories of a pod's volumes by name.
pub fn volume_dirs(pod: &Pod, volumes_dir: &Path, pod_dir: &Path) -> HashMap<String, PathBuf> {
    let ns = Some(namespace(pod)).filter(|n| !n.is_empty()).unwrap_or("default");
    let mut out = HashMap::new();
    for v in spec(pod).volumes.iter().flatten() {
        let name = v.name.as_str();
        // The API server refuses names that are not DNS labels; a directory is made of each name, so
        // one that could leave the pod's directory is never taken here either.
        if name.contains('/') || name == "." || name == ".." || name.is_empty() {
            continue;
        }
        if let Some(claim) = &v.persistent_volume_claim {
            out.insert(name.to_string(), volumes_dir.join(ns).join(&claim.claim_name));
        } else if v.empty_dir.is_some() || is_projected(v) {
            out.insert(name.to_string(), pod_dir.join("volumes").join(name));
        } else if let Some(host) = &v.host_path {
            out.insert(name.to_string(), PathBuf::from(&host.path));
        }
    }
    out
}

/// A relative path that stays inside its directory (no `..`, not absolute, not empty).
pub fn safe_relative(p: &str) -> bool {
    let path = Path::new(p);
    !p.is_empty() && path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// The mounts of one container; a `subPath` that does not exist yet is created as a directory, as the
/// kubelet does. Fails for a `subPath` that leaves its volume.
pub fn mounts_of(container: &Container, dirs: &HashMap<String, PathBuf>) -> Result<Vec<Mount>, ConfigError> {
    let mut out = Vec::new();
    for (i, m) in container.volume_mounts.iter().flatten().enumerate() {
        let Some(dir) = dirs.get(&m.name) else { continue };
        let target = m.mount_path.as_str();
        let read_only = m.read_only.unwrap_or(false);
        let source = match m.sub_path.as_deref().filter(|s| !s.is_empty()) {
            None => dir.clone(),
            Some(sub) if !safe_relative(sub) => {
                return Err(ConfigError::SubPath { index: i, sub_path: sub.to_string() });
            }
            Some(sub) => {
                let p = dir.join(sub);
                if std::fs::symlink_metadata(&p).is_err() {
                    let _ = std::fs::create_dir_all(&p);
                }
                p
            }
        };
        out.push(Mount { source, target: target.to_string(), read_only });
    }
    Ok(out)
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Files the process sees in place of the machine's: `/etc/hosts` (the node's names for the pod's
/// namespace) and `/etc/resolv.conf` (the node's DNS server first, with the namespace's search path).
#[derive(Clone, Debug, Default)]
pub struct NameFiles {
    /// Shown as /etc/hosts.
    pub hosts: Option<PathBuf>,
    /// Shown as /etc/resolv.conf.
    pub resolv: Option<PathBuf>,
}

/// Whether this process may make mount namespaces (root, with `unshare` present).
pub fn can_isolate() -> bool {
    let root = std::fs::metadata("/proc/self").map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    });
    root.unwrap_or(false) && Path::new("/usr/bin/unshare").exists()
}

/// Runs `argv` in a private mount namespace in which the name files and the volume mounts are bind
/// mounts, then changes to `cwd` (a path as the container sees it), so the process resolves pod and
/// Service names and keeps its data where uc manages it while the machine's own files stay untouched.
/// Without root or `unshare` the process runs as is (and `cwd` is taken on the machine).
pub fn isolate(argv: Vec<String>, names: &NameFiles, mounts: &[Mount], cwd: Option<&str>) -> Vec<String> {
    if (names.hosts.is_none() && names.resolv.is_none() && mounts.is_empty() && cwd.is_none()) || !can_isolate() {
        return argv;
    }
    let mut script = String::new();
    if let Some(f) = &names.hosts {
        script.push_str(&format!("mount --bind {} /etc/hosts && ", quote(&f.display().to_string())));
    }
    if let Some(f) = &names.resolv {
        script.push_str(&format!("mount --bind {} /etc/resolv.conf && ", quote(&f.display().to_string())));
    }
    for m in mounts {
        let (t, s) = (quote(&m.target), quote(&m.source.display().to_string()));
        // A missing mount point is created (a directory, or an empty file for a file); the mount
        // itself stays private.
        if m.source.is_dir() {
            script.push_str(&format!("mkdir -p {t} && "));
        } else {
            script.push_str(&format!("mkdir -p \"$(dirname {t})\" && {{ [ -e {t} ] || : > {t}; }} && "));
        }
        script.push_str(&format!("mount --bind {s} {t} && "));
        if m.read_only {
            script.push_str(&format!("mount -o remount,bind,ro {t} && "));
        }
    }
    if let Some(d) = cwd {
        script.push_str(&format!("cd {} && ", quote(d)));
    }
    script.push_str("exec \"$@\"");
    let mut out: Vec<String> = ["/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    out.push(script);
    out.push("uc-container".into());
    out.extend(argv);
    out
}

/// One file of a projected volume.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    /// Content.
    pub data: Vec<u8>,
    /// Permission bits.
    pub mode: u32,
}

/// The files of a volume written by the node (configMap, secret, downwardAPI, projected), by relative
/// path. `token` is the service account token for `serviceAccountToken` sources.
pub fn render(
    volume: &Volume,
    pod: &Pod,
    pod_ip: &str,
    sources: &dyn Sources,
    token: Option<&str>,
) -> Result<BTreeMap<String, File>, ConfigError> {
    let mut out = BTreeMap::new();
    let mode = |m: Option<i32>| m.map(|m| m as u32).unwrap_or(0o644);
    if let Some(src) = &volume.config_map {
        let from =
            Named { kind: Kind::ConfigMap, name: &src.name, optional: src.optional, items: src.items.as_deref() };
        object_files(&from, pod, sources, mode(src.default_mode), &mut out)?;
    } else if let Some(src) = &volume.secret {
        let name = src.secret_name.as_deref().unwrap_or_default();
        let from = Named { kind: Kind::Secret, name, optional: src.optional, items: src.items.as_deref() };
        object_files(&from, pod, sources, mode(src.default_mode), &mut out)?;
    } else if let Some(src) = &volume.downward_api {
        downward_files(src.items.as_deref(), pod, pod_ip, mode(src.default_mode), &mut out)?;
    } else if let Some(p) = &volume.projected {
        let mode = mode(p.default_mode);
        for s in p.sources.iter().flatten() {
            if let Some(src) = &s.config_map {
                let from = Named {
                    kind: Kind::ConfigMap,
                    name: &src.name,
                    optional: src.optional,
                    items: src.items.as_deref(),
                };
                object_files(&from, pod, sources, mode, &mut out)?;
            } else if let Some(src) = &s.secret {
                let from =
                    Named { kind: Kind::Secret, name: &src.name, optional: src.optional, items: src.items.as_deref() };
                object_files(&from, pod, sources, mode, &mut out)?;
            } else if let Some(src) = &s.downward_api {
                downward_files(src.items.as_deref(), pod, pod_ip, mode, &mut out)?;
            } else if let Some(src) = &s.service_account_token {
                let path = src.path.as_str();
                let token = token.ok_or(ConfigError::NoToken)?;
                add(&mut out, path, token.as_bytes().to_vec(), mode)?;
            }
        }
    } else {
        return Err(ConfigError::NotWritten(volume.name.clone()));
    }
    Ok(out)
}

fn add(out: &mut BTreeMap<String, File>, path: &str, data: Vec<u8>, mode: u32) -> Result<(), ConfigError> {
    if !safe_relative(path) || path.starts_with("..") {
        return Err(ConfigError::Path(path.to_string()));
    }
    out.insert(path.trim_start_matches("./").to_string(), File { data, mode });
    Ok(())
}

/// A ConfigMap or Secret a volume takes files from.
struct Named<'a> {
    kind: Kind,
    name: &'a str,
    optional: Option<bool>,
    /// The keys it takes and where they go (all keys, at their names, when None).
    items: Option<&'a [KeyToPath]>,
}

fn object_files(
    from: &Named<'_>,
    pod: &Pod,
    sources: &dyn Sources,
    mode: u32,
    out: &mut BTreeMap<String, File>,
) -> Result<(), ConfigError> {
    let Named { kind, name, items, .. } = *from;
    let optional = from.optional.unwrap_or(false);
    let Some(data) = sources.data(kind, name) else {
        return if optional { Ok(()) } else { Err(ConfigError::NotFound { kind, name: name.to_string() }) };
    };
    let Some(items) = items else {
        for (k, v) in data {
            add(out, &k, v, mode)?;
        }
        return Ok(());
    };
    for item in items {
        let item_mode = item.mode.map(|m| m as u32).unwrap_or(mode);
        match data.get(&item.key) {
            Some(v) => add(out, &item.path, v.clone(), item_mode)?,
            None if optional => {}
            None => {
                return Err(ConfigError::MissingItem {
                    kind,
                    key: item.key.clone(),
                    namespace: namespace(pod).to_string(),
                    name: name.to_string(),
                });
            }
        }
    }
    Ok(())
}

fn downward_files(
    items: Option<&[DownwardAPIVolumeFile]>,
    pod: &Pod,
    pod_ip: &str,
    default_mode: u32,
    out: &mut BTreeMap<String, File>,
) -> Result<(), ConfigError> {
    for item in items.into_iter().flatten() {
        let mode = item.mode.map(|m| m as u32).unwrap_or(default_mode);
        let value = if let Some(f) = &item.field_ref {
            env::field(pod, &f.field_path, pod_ip)?
        } else if let Some(r) = &item.resource_field_ref {
            let wanted = r.container_name.as_deref().filter(|w| !w.is_empty());
            let c = spec(pod).containers.iter().find(|c| wanted.is_none_or(|w| c.name == w));
            env::resource(c, r)?
        } else {
            continue;
        };
        add(out, &item.path, value.into_bytes(), mode)?;
    }
    Ok(())
}

fn read_payload(dir: &Path, base: &Path, out: &mut BTreeMap<String, File>) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            read_payload(&p, base, out);
        } else if let (Ok(data), Ok(meta), Ok(rel)) = (std::fs::read(&p), std::fs::metadata(&p), p.strip_prefix(base)) {
            out.insert(rel.display().to_string(), File { data, mode: meta.permissions().mode() & 0o7777 });
        }
    }
}

/// Writes `files` into `dir` as the kubelet's atomic writer does; returns whether anything changed.
pub fn write_volume(dir: &Path, files: &BTreeMap<String, File>) -> std::io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    let data_link = dir.join("..data");
    let mut current = BTreeMap::new();
    if let Ok(target) = std::fs::read_link(&data_link) {
        let ts = dir.join(&target);
        read_payload(&ts, &ts, &mut current);
        if &current == files {
            return Ok(false);
        }
    }
    let old = std::fs::read_link(&data_link).ok();
    let name = format!("..{}", chrono::Utc::now().format("%Y_%m_%d_%H_%M_%S.%f"));
    let ts_dir = dir.join(&name);
    std::fs::create_dir_all(&ts_dir)?;
    for (rel, f) in files {
        let p = ts_dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, &f.data)?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(f.mode))?;
    }
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&name, &tmp)?;
    std::fs::rename(&tmp, &data_link)?;
    let top: std::collections::BTreeSet<String> =
        files.keys().filter_map(|k| k.split('/').next().map(String::from)).collect();
    for t in &top {
        let link = dir.join(t);
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(Path::new("..data").join(t), &link)?;
        }
    }
    // Names no longer in the volume go; so does the previous version.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if !n.starts_with("..") && !top.contains(&n) && e.file_type().is_ok_and(|t| t.is_symlink()) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    if let Some(old) = old.filter(|o| o != Path::new(&name)) {
        let _ = std::fs::remove_dir_all(dir.join(old));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    fn sources() -> BTreeMap<(Kind, String), BTreeMap<String, Vec<u8>>> {
        let mut m = BTreeMap::new();
        m.insert(
            (Kind::ConfigMap, "hook".into()),
            env::config_map_data(&typed(json!({"data": {"server.py": "print(1)", "other": "x"}}))),
        );
        m.insert((Kind::Secret, "pw".into()), env::secret_data(&typed(json!({"data": {"password": "czNjcjN0"}}))));
        m
    }

    fn container(mut c: Value) -> Container {
        c["name"] = json!("c");
        typed(c)
    }

    fn pod() -> Pod {
        typed(
            json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"app": "a"}}, "spec": {"containers": [{"name": "c"}]}}),
        )
    }

    #[test]
    fn volumes_map_to_directories() {
        let pod: Pod = typed(json!({"metadata": {"namespace": "ns"}, "spec": {"containers": [], "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "www-web-0"}}, {"name": "tmp", "emptyDir": {}},
            {"name": "cfg", "configMap": {"name": "x"}}, {"name": "nfs", "nfs": {"server": "s", "path": "/"}}]}}));
        let dirs = volume_dirs(&pod, Path::new("/d/volumes"), Path::new("/d/pods/u"));
        assert_eq!(dirs["data"], PathBuf::from("/d/volumes/ns/www-web-0"));
        assert_eq!(dirs["tmp"], PathBuf::from("/d/pods/u/volumes/tmp"));
        assert_eq!(dirs["cfg"], PathBuf::from("/d/pods/u/volumes/cfg"));
        assert!(!dirs.contains_key("nfs"));
        let c = container(
            json!({"volumeMounts": [{"name": "data", "mountPath": "/var/lib/x"}, {"name": "nfs", "mountPath": "/n"}]}),
        );
        assert_eq!(
            mounts_of(&c, &dirs).unwrap(),
            vec![Mount {
                source: PathBuf::from("/d/volumes/ns/www-web-0"),
                target: "/var/lib/x".into(),
                read_only: false
            }]
        );
        let bad = container(json!({"volumeMounts": [{"name": "tmp", "mountPath": "/x", "subPath": "../../etc"}]}));
        assert!(matches!(mounts_of(&bad, &dirs), Err(ConfigError::SubPath { index: 0, .. })));
        assert_eq!(quote("it's"), "'it'\\''s'");
    }

    #[test]
    fn projected_volumes_render_their_sources() {
        let files = |v: Value| render(&typed(v), &pod(), "127.1.0.9", &sources(), Some("tok"));
        let cm = files(json!({"name": "v", "configMap": {"name": "hook", "items": [{"key": "server.py", "path": "app/server.py", "mode": 0o755}]}})).unwrap();
        assert_eq!(cm.keys().collect::<Vec<_>>(), vec!["app/server.py"]);
        assert_eq!(cm["app/server.py"], File { data: b"print(1)".to_vec(), mode: 0o755 });
        let all = files(json!({"name": "v", "secret": {"secretName": "pw", "defaultMode": 0o400}})).unwrap();
        assert_eq!(all["password"], File { data: b"s3cr3t".to_vec(), mode: 0o400 });
        let projected = files(json!({"name": "v", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token"}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}},
                                       {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"configMap": {"name": "missing", "optional": true}}]}}))
        .unwrap();
        assert_eq!(projected["token"].data, b"tok");
        assert_eq!(projected["namespace"].data, b"ns");
        assert_eq!(projected["labels"].data, b"app=\"a\"");
        assert_eq!(
            files(json!({"name": "v", "configMap": {"name": "gone"}})).unwrap_err().to_string(),
            "configmap \"gone\" not found"
        );
        let escape =
            files(json!({"name": "v", "configMap": {"name": "hook", "items": [{"key": "other", "path": "../x"}]}}));
        assert!(escape.unwrap_err().to_string().contains("may not contain '..'"));
    }

    #[test]
    fn the_atomic_writer_swaps_whole_versions() {
        let dir = std::env::temp_dir().join(format!("uc-volume-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let one: BTreeMap<String, File> = [
            ("a".to_string(), File { data: b"1".to_vec(), mode: 0o644 }),
            ("sub/b".to_string(), File { data: b"2".to_vec(), mode: 0o600 }),
        ]
        .into_iter()
        .collect();
        assert!(write_volume(&dir, &one).unwrap());
        assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"1");
        assert_eq!(std::fs::read(dir.join("sub/b")).unwrap(), b"2");
        assert!(!write_volume(&dir, &one).unwrap(), "the same content writes nothing");
        let first = std::fs::read_link(dir.join("..data")).unwrap();
        let two: BTreeMap<String, File> =
            [("a".to_string(), File { data: b"changed".to_vec(), mode: 0o644 })].into_iter().collect();
        assert!(write_volume(&dir, &two).unwrap());
        assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"changed");
        assert!(std::fs::symlink_metadata(dir.join("sub")).is_err(), "a name that left the volume goes");
        assert!(!dir.join(first).exists(), "the old version is removed");
        let _ = std::fs::remove_dir_all(dir);
    }
}
