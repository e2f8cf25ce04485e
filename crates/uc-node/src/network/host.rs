//! The machine's side of the pod network: the bridge, its routes and rules (`ip`), each pod's network
//! namespace and its interfaces (`ip netns`, the CNI plugins), and connections made from inside a
//! pod's namespace (port-forward reaches the pod's own loopback, as a kubelet's runtime does).

use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::AsFd;
use std::path::Path;
use std::time::Duration;

use super::cni::NetConf;
use super::{CNI_PATH, PodCidr, TABLE, bridge_config, collisions, loopback_config, namespace_of, namespace_path};

/// Why the pod network (the bridge, a pod's namespace and its wiring) could not be set up, as the tools said it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NetworkError(pub String);

impl From<String> for NetworkError {
    fn from(message: String) -> Self {
        NetworkError(message)
    }
}

impl From<&str> for NetworkError {
    fn from(message: &str) -> Self {
        NetworkError(message.to_string())
    }
}

impl From<NetworkError> for String {
    fn from(e: NetworkError) -> String {
        e.0
    }
}

/// Why the pod network cannot be had here, if it cannot (then pods share the machine's network).
pub fn unavailable() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("it needs root".into());
    }
    if !["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].iter().any(|p| Path::new(p).exists()) {
        return Some("it needs `ip` (iproute2)".into());
    }
    let missing: Vec<&str> =
        ["bridge", "loopback", "static"].into_iter().filter(|p| !Path::new(CNI_PATH).join(p).exists()).collect();
    (!missing.is_empty()).then(|| {
        format!("it needs the CNI plugins {} in {CNI_PATH} (Debian: containernetworking-plugins)", missing.join(", "))
    })
}

/// Runs a program; its standard output, or what it said on failure.
async fn run(program: &str, args: &[&str], env: &[(&str, &str)], input: Option<&str>) -> Result<String, NetworkError> {
    use tokio::io::AsyncWriteExt;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .envs(env.iter().copied())
        .stdin(if input.is_some() { std::process::Stdio::piped() } else { std::process::Stdio::null() })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("{program}: {e}"))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        let _ = stdin.write_all(text.as_bytes()).await;
    }
    let out = child.wait_with_output().await.map_err(|e| format!("{program}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        let said = format!("{}{}", String::from_utf8_lossy(&out.stderr).trim(), stdout.trim());
        Err(NetworkError::from(format!("{program} {}: {said}", args.join(" "))))
    }
}

async fn ip(args: &[&str]) -> Result<String, NetworkError> {
    run("ip", args, &[], None).await
}

/// Whether the range collides with a route or address the machine has (uc's own left out).
pub async fn collides(cidr: &PodCidr) -> Result<Vec<String>, NetworkError> {
    let routes = ip(&["-j", "-4", "route", "show", "table", "all"]).await?;
    let addresses = ip(&["-j", "-4", "addr"]).await?;
    Ok(collisions(cidr, &super::parse_taken(&routes, &addresses)))
}

/// The cluster's bridge with its routes and rules; held while the node runs, taken down at its clean
/// stop.
pub struct Bridge {
    cidr: PodCidr,
    _lock: std::fs::File,
}

impl Bridge {
    /// Sets the machine up for the range (see [`set_up`]), holding the range's lock.
    pub async fn up(cidr: PodCidr) -> Result<Bridge, NetworkError> {
        let lock = lock(&cidr)?;
        match set_up(&cidr).await {
            Ok(()) => Ok(Bridge { cidr, _lock: lock }),
            Err(e) => {
                // What was made stays for the next start (it is uc's own); the lock file goes.
                let _ = std::fs::remove_file(lock_path(&cidr));
                Err(e)
            }
        }
    }

    /// The range.
    pub fn cidr(&self) -> PodCidr {
        self.cidr
    }

    /// Takes everything [`Bridge::up`] made down again (the lock file too, while it is held).
    pub async fn down(self) {
        let _ = std::fs::remove_file(lock_path(&self.cidr));
        let name = self.cidr.bridge();
        remove_rules(&name).await;
        let _ = ip(&["route", "del", "local", &self.cidr.services(), "dev", "lo", "table", "local"]).await;
        let _ = ip(&["link", "del", &name]).await;
        let _ = ip(&["route", "del", "unreachable", &self.cidr.to_string(), "metric", "4096"]).await;
    }
}

/// The machine's side of the range, unless it collides with what the machine has: `unreachable` for
/// the whole range first (nothing for it may take the default route), then the bridge with the
/// gateway's address, the Services' `local` route, and forwarding from the bridge to other uc bridges
/// only.
async fn set_up(cidr: &PodCidr) -> Result<(), NetworkError> {
    let clash = collides(cidr).await?;
    if !clash.is_empty() {
        return Err(NetworkError::from(format!(
            "the pod range {cidr} overlaps what this machine already has: {}; choose another with --pod-cidr",
            clash.join(", ")
        )));
    }
    let (range, name, gw) = (cidr.to_string(), cidr.bridge(), format!("{}/16", cidr.gateway()));
    ip(&["route", "replace", "unreachable", &range, "metric", "4096"]).await?;
    if ip(&["link", "show", "dev", &name]).await.is_err() {
        ip(&["link", "add", &name, "type", "bridge"]).await?;
    }
    ip(&["addr", "replace", &gw, "dev", &name]).await?;
    ip(&["link", "set", &name, "up"]).await?;
    ip(&["route", "replace", "local", &cidr.services(), "dev", "lo", "table", "local"]).await?;
    let forwarding = format!("/proc/sys/net/ipv4/conf/{name}/forwarding");
    std::fs::write(&forwarding, "1").map_err(|e| format!("{forwarding}: {e}"))?;
    let table = TABLE.to_string();
    ip(&["route", "replace", &range, "dev", &name, "table", &table]).await?;
    remove_rules(&name).await;
    let (pref, unreach) = (TABLE.to_string(), (TABLE + 1).to_string());
    ip(&["rule", "add", "iif", &name, "lookup", &table, "pref", &pref]).await?;
    ip(&["rule", "add", "iif", &name, "unreachable", "pref", &unreach]).await?;
    Ok(())
}

async fn remove_rules(bridge: &str) {
    for pref in [TABLE, TABLE + 1] {
        let pref = pref.to_string();
        // Several, when a uc was killed while adding them.
        for _ in 0..8 {
            if ip(&["rule", "del", "iif", bridge, "pref", &pref]).await.is_err() {
                break;
            }
        }
    }
}

fn lock_path(cidr: &PodCidr) -> std::path::PathBuf {
    Path::new("/run/uc").join(format!("{}.lock", cidr.bridge()))
}

/// One uc per range on a machine: a lock in /run (gone at reboot, with the bridge).
fn lock(cidr: &PodCidr) -> Result<std::fs::File, NetworkError> {
    let path = lock_path(cidr);
    let dir = path.parent().unwrap_or(Path::new("/run"));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(NetworkError::from(format!(
            "another uc on this machine uses the pod range {cidr} (it holds {})",
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(NetworkError::from(format!("{}: {e}", path.display()))),
    }
}

/// Calls a CNI plugin for a pod's namespace.
async fn cni(command: &str, plugin: &str, uid: &str, ifname: &str, config: &NetConf) -> Result<(), NetworkError> {
    let netns = namespace_path(uid);
    let env = [
        ("CNI_COMMAND", command),
        ("CNI_CONTAINERID", uid),
        ("CNI_NETNS", &netns.to_string_lossy()),
        ("CNI_IFNAME", ifname),
        ("CNI_PATH", CNI_PATH),
    ];
    let program = Path::new(CNI_PATH).join(plugin);
    run(&program.to_string_lossy(), &[], &env, Some(&config.to_json())).await.map(|_| ())
}

/// Whether the pod's namespace exists with its address on `eth0` (it is wired; a node that was killed
/// finds its pods' namespaces so).
async fn wired(uid: &str, ip_addr: Ipv4Addr) -> bool {
    if !namespace_path(uid).exists() {
        return false;
    }
    let ns = namespace_of(uid);
    match ip(&["-n", &ns, "-j", "-4", "addr", "show", "dev", "eth0"]).await {
        Ok(out) => out.contains(&format!("\"local\":\"{ip_addr}\"")),
        Err(_) => false,
    }
}

/// Gives a pod its network namespace with loopback and `eth0` on the bridge at `ip_addr`; nothing to
/// do when it has it already.
pub async fn attach(cidr: &PodCidr, uid: &str, ip_addr: Ipv4Addr) -> Result<(), NetworkError> {
    if wired(uid, ip_addr).await {
        return Ok(());
    }
    detach(cidr, uid).await;
    let ns = namespace_of(uid);
    ip(&["netns", "add", &ns]).await?;
    let wire = async {
        cni("ADD", "loopback", uid, "lo", &loopback_config()).await?;
        cni("ADD", "bridge", uid, "eth0", &bridge_config(cidr, ip_addr)).await
    };
    if let Err(e) = wire.await {
        detach(cidr, uid).await;
        return Err(e);
    }
    Ok(())
}

/// Removes a pod's network namespace and its end of the bridge (once its processes are gone).
pub async fn detach(cidr: &PodCidr, uid: &str) {
    if !namespace_path(uid).exists() {
        return;
    }
    let ip_addr = cidr.gateway();
    let _ = cni("DEL", "bridge", uid, "eth0", &bridge_config(cidr, ip_addr)).await;
    let _ = ip(&["netns", "del", &namespace_of(uid)]).await;
}

/// The pods whose network namespaces exist (uids).
pub fn namespaces() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("uc-").map(str::to_string))
        .collect()
}

/// A TCP connection made from inside a pod's network namespace to the first of `addrs` that accepts
/// (a thread of its own enters the namespace, connects and ends; the socket stays the namespace's).
/// Fails with the first address's error.
pub async fn connect_inside(uid: &str, addrs: Vec<SocketAddr>) -> std::io::Result<tokio::net::TcpStream> {
    let path = namespace_path(uid);
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new().name("uc-netns".into()).spawn(move || {
        let connect = || -> std::io::Result<std::net::TcpStream> {
            let ns = std::fs::File::open(&path)?;
            rustix::thread::move_into_link_name_space(ns.as_fd(), Some(rustix::thread::LinkNameSpaceType::Network))?;
            let mut first = None;
            for a in &addrs {
                match std::net::TcpStream::connect_timeout(a, Duration::from_secs(5)) {
                    Ok(s) => return Ok(s),
                    Err(e) => first = first.or(Some(e)),
                }
            }
            Err(first.unwrap_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no address")))
        };
        let _ = tx.send(connect());
    })?;
    let stream = rx.await.map_err(|_| std::io::Error::other("the namespace's thread ended"))??;
    stream.set_nonblocking(true)?;
    tokio::net::TcpStream::from_std(stream)
}
