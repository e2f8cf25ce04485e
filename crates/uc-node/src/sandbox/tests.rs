use super::*;
use std::collections::BTreeMap;

/// A made-up machine: directories with entries, and symlinks.
struct Fake {
    dirs: BTreeMap<&'static str, Vec<&'static str>>,
    links: BTreeMap<&'static str, &'static str>,
}

impl Machine for Fake {
    fn exists(&self, p: &Path) -> bool {
        let s = p.to_str().unwrap();
        self.dirs.contains_key(s) || self.links.contains_key(s) || self.dirs.values().flatten().any(|e| *e == s)
    }
    fn link(&self, p: &Path) -> Option<PathBuf> {
        self.links.get(p.to_str().unwrap()).map(PathBuf::from)
    }
    fn is_dir(&self, p: &Path) -> bool {
        self.dirs.contains_key(p.to_str().unwrap())
    }
    fn entries(&self, p: &Path) -> Vec<PathBuf> {
        self.dirs.get(p.to_str().unwrap()).into_iter().flatten().map(PathBuf::from).collect()
    }
}

fn machine() -> Fake {
    Fake {
        dirs: BTreeMap::from([
            ("/usr", vec!["/usr/bin", "/usr/share"]),
            ("/usr/bin", vec![]),
            ("/usr/share", vec!["/usr/share/zoneinfo"]),
            ("/usr/share/zoneinfo", vec![]),
            ("/etc", vec!["/etc/passwd", "/etc/shadow", "/etc/hosts", "/etc/ssh", "/etc/ssl"]),
            ("/etc/ssh", vec![]),
            ("/etc/ssl", vec!["/etc/ssl/certs", "/etc/ssl/private"]),
            ("/etc/ssl/certs", vec![]),
            ("/etc/ssl/private", vec![]),
        ]),
        links: BTreeMap::from([("/bin", "usr/bin"), ("/lib", "usr/lib")]),
    }
}

fn args(layout: &Layout<'_>, id: &Identity) -> String {
    bwrap_args(layout, id, &machine()).join(" ")
}

#[test]
fn the_system_is_shown_without_its_secrets_and_with_room_for_mounts() {
    let names = NameFiles { hosts: Some("/data/hosts/ns".into()), resolv: None };
    let mounts = vec![
        Mount { source: "/data/volumes/ns/web".into(), target: "/usr/share/nginx/html".into(), read_only: true },
        Mount { source: "/data/pods/u/volumes/cfg".into(), target: "/etc/settings".into(), read_only: false },
        Mount { source: "/data/pods/u/volumes/cache".into(), target: "/var/cache/app".into(), read_only: false },
    ];
    let layout =
        Layout { program: Path::new("/usr/bin/nginx"), names: &names, mounts: &mounts, cwd: Some("/app"), hidden: &[] };
    let text = args(&layout, &Identity::of(None, None));
    assert!(text.starts_with("--die-with-parent --new-session --unshare-pid --unshare-ipc --unshare-uts"), "{text}");
    assert!(text.contains("--symlink usr/bin /bin"), "{text}");
    // /usr holds a mount point: shown entry by entry, /usr/share too, the rest whole.
    assert!(text.contains("--perms 0755 --tmpfs /usr --ro-bind /usr/bin /usr/bin --perms 0755 --tmpfs /usr/share --ro-bind /usr/share/zoneinfo /usr/share/zoneinfo"), "{text}");
    // /etc without shadow and the host keys; /etc/ssl without its private keys.
    assert!(text.contains("--ro-bind /etc/passwd /etc/passwd"), "{text}");
    assert!(
        !text.contains("/etc/shadow") && !text.contains("/etc/ssh") && !text.contains("/etc/ssl/private"),
        "{text}"
    );
    assert!(text.contains("--ro-bind /etc/ssl/certs /etc/ssl/certs"), "{text}");
    assert!(text.contains("--perms 1777 --tmpfs /tmp") && text.contains("--perms 1777 --tmpfs /var"), "{text}");
    assert!(text.contains("--ro-bind /data/hosts/ns /etc/hosts"), "{text}");
    assert!(
        text.contains("--perms 0755 --dir /usr/share/nginx --ro-bind /data/volumes/ns/web /usr/share/nginx/html"),
        "{text}"
    );
    assert!(
        text.contains("--perms 0755 --dir /var/cache --bind /data/pods/u/volumes/cache /var/cache/app"),
        "the way is traversable: {text}"
    );
    assert!(text.contains("--bind /data/pods/u/volumes/cfg /etc/settings"), "{text}");
    assert!(text.contains("--perms 0755 --dir /app --chdir /app --"), "{text}");
    assert!(text.ends_with("--"), "{text}");
}

#[test]
fn a_program_outside_the_system_is_shown_with_its_installation_and_uc_stays_hidden() {
    let names = NameFiles::default();
    let hidden = [PathBuf::from("/opt/uc-data")];
    let layout = Layout {
        program: Path::new("/root/.pyenv/versions/3.11/bin/python3"),
        names: &names,
        mounts: &[],
        cwd: None,
        hidden: &hidden,
    };
    let text = args(&layout, &Identity::of(None, None));
    assert!(text.contains("--perms 0755 --dir /root --perms 0755 --dir /root/.pyenv --perms 0755 --dir /root/.pyenv/versions --ro-bind /root/.pyenv/versions/3.11 /root/.pyenv/versions/3.11"), "{text}");
    assert!(!text.contains("/opt/uc-data"), "{text}");
    assert!(text.ends_with("--chdir / --"), "{text}");
    let ro = Identity { read_only_root: true, ..Identity::of(None, None) };
    let text = args(&layout, &ro);
    assert!(!text.contains("--tmpfs /tmp") && text.contains("--remount-ro /"), "{text}");
}

#[test]
fn identities_follow_the_security_context() {
    let plain = Identity::of(None, None);
    assert_eq!((plain.uid, plain.gid), (DEFAULT_UID, DEFAULT_UID), "unprivileged unless asked");
    assert_eq!(plain.setpriv()[..4], ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]);
    assert!(plain.setpriv().iter().any(|a| a.starts_with("--bounding-set=-all,+audit_write,+chown")));
    assert!(
        plain.setpriv().contains(&"--ambient-caps=+net_bind_service".to_string()),
        "ports below 1024, as in a pod's netns"
    );
    let pod: PodSecurityContext = serde_json::from_value(serde_json::json!(
        {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000, "supplementalGroups": [4000]}))
    .unwrap();
    let c: SecurityContext = serde_json::from_value(serde_json::json!(
        {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}))
    .unwrap();
    let id = Identity::of(Some(&pod), Some(&c));
    assert_eq!((id.uid, id.gid, id.groups.clone()), (1000, 3000, vec![2000, 4000]));
    assert_eq!(
        id.setpriv(),
        vec![
            "setpriv",
            "--reuid=1000",
            "--regid=3000",
            "--groups=2000,4000",
            "--bounding-set=-all,+net_bind_service",
            "--inh-caps=-all,+net_bind_service",
            "--ambient-caps=+net_bind_service",
            "--no-new-privs",
            "--"
        ]
    );
    let root: SecurityContext =
        serde_json::from_value(serde_json::json!({"runAsUser": 0, "capabilities": {"drop": ["NET_RAW"]}})).unwrap();
    let id = Identity::of(None, Some(&root));
    assert_eq!((id.uid, id.gid), (0, 0));
    assert!(!id.capabilities.contains("NET_RAW") && id.capabilities.contains("CHOWN"));
    let privileged: SecurityContext = serde_json::from_value(serde_json::json!({"privileged": true})).unwrap();
    assert!(
        !Identity::of(None, Some(&privileged)).setpriv().iter().any(|a| a.starts_with("--bounding-set")),
        "all capabilities"
    );
}

#[test]
fn a_debug_container_joins_its_targets_pid_namespace_instead_of_making_one() {
    let line = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
    let in_pod_network =
        line("/usr/bin/nsenter --net=/run/netns/uc-x -- /usr/bin/bwrap --unshare-pid --unshare-ipc sh");
    assert_eq!(
        join_pid_namespace(in_pod_network, 42).join(" "),
        "/usr/bin/nsenter --pid=/proc/42/ns/pid --net=/run/netns/uc-x -- /usr/bin/bwrap --unshare-ipc sh"
    );
    assert_eq!(
        join_pid_namespace(line("/usr/bin/bwrap --unshare-pid sh --unshare-pid"), 7).join(" "),
        "/usr/bin/nsenter --pid=/proc/7/ns/pid -- /usr/bin/bwrap sh --unshare-pid",
        "the command's own arguments are its own"
    );
}

#[test]
fn the_images_user_applies_where_the_pod_names_none() {
    let image = Some((1000, Some(2000)));
    let plain = Identity::of(None, None).with_image_user(image, None, None);
    assert_eq!((plain.uid, plain.gid), (1000, 2000));
    let pod: PodSecurityContext = serde_json::from_value(serde_json::json!({"runAsUser": 7})).unwrap();
    let own = Identity::of(Some(&pod), None).with_image_user(image, Some(&pod), None);
    assert_eq!(own.uid, 7, "the pod's runAsUser wins");
    let group: SecurityContext = serde_json::from_value(serde_json::json!({"runAsGroup": 5})).unwrap();
    let mixed = Identity::of(None, Some(&group)).with_image_user(image, None, Some(&group));
    assert_eq!((mixed.uid, mixed.gid), (1000, 5), "the container's runAsGroup wins");
    assert_eq!(Identity::of(None, None).with_image_user(None, None, None), Identity::of(None, None));
}
