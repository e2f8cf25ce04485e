//! Real processes for pods whose images are on the node's allowlist: the container's command, args,
//! env and working dir run as a process on this machine, its output captured for `kubectl logs`,
//! restarted per restartPolicy with back-off, Ready through readiness probes (httpGet, tcpSocket,
//! exec), stopped with SIGTERM and, after the grace period, SIGKILL.
//!
//! An image not on the allowlist never executes anything: such pods are simulated (see `simulate`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

/// One allowlisted image.
#[derive(Clone, Debug)]
pub struct AllowEntry {
    /// Image repositories (any tag), e.g. `quay.io/coreos/etcd`.
    pub images: Vec<String>,
    /// The program that runs.
    pub program: PathBuf,
    /// Arguments that always follow the program (they are part of what the image is).
    pub prefix_args: Vec<String>,
    /// Arguments put before the container's own when it names no command.
    pub default_args: Vec<String>,
    /// Command names (basenames) that mean this program, e.g. `etcd` for `/usr/local/bin/etcd`.
    pub commands: Vec<String>,
    /// The image's other programs by command name (basename), e.g. `etcdctl` in an etcd image: a
    /// container whose command names one runs it instead of `program`.
    pub tools: Vec<(String, PathBuf)>,
}

/// The images whose pods run as real processes.
#[derive(Clone, Debug, Default)]
pub struct Allowlist {
    /// Entries.
    pub entries: Vec<AllowEntry>,
}

/// The repository part of an image reference (no tag, no digest).
pub fn repository(image: &str) -> &str {
    let no_digest = image.split('@').next().unwrap_or(image);
    match no_digest.rfind(':') {
        Some(i) if !no_digest[i..].contains('/') => &no_digest[..i],
        _ => no_digest,
    }
}

impl Allowlist {
    /// The shipped allowlist: uc's own test HTTP server, etcd and ZooKeeper from the system packages.
    pub fn shipped(uc_exe: PathBuf) -> Self {
        Self {
            entries: vec![
                AllowEntry {
                    images: vec!["uc/http-server".into()],
                    program: uc_exe,
                    prefix_args: vec!["http-server".into()],
                    default_args: vec![],
                    commands: vec![],
                    tools: vec![],
                },
                AllowEntry {
                    images: vec!["etcd".into(), "quay.io/coreos/etcd".into(), "gcr.io/etcd-development/etcd".into()],
                    program: PathBuf::from("/usr/bin/etcd"),
                    prefix_args: vec![],
                    default_args: vec![],
                    commands: vec!["etcd".into()],
                    tools: vec![
                        ("etcdctl".into(), PathBuf::from("/usr/bin/etcdctl")),
                        ("etcdutl".into(), PathBuf::from("/usr/bin/etcdutl")),
                    ],
                },
                AllowEntry {
                    images: vec!["zookeeper".into(), "library/zookeeper".into()],
                    program: PathBuf::from("/usr/share/zookeeper/bin/zkServer.sh"),
                    prefix_args: vec![],
                    default_args: vec!["start-foreground".into()],
                    commands: vec!["zkServer.sh".into()],
                    tools: vec![],
                },
            ],
        }
    }

    /// Adds the entries of a node config file (JSON):
    /// `{"allowlist": [{"images": ["repo"], "program": "/path", "prefixArgs": [], "defaultArgs": [],
    /// "tools": {"name": "/path"}}]}`. An image may name a tag (`repo:tag`): such entries win over
    /// entries for the whole repository, so each version of an image can run its own program.
    /// Entries from the file come first, so they may also replace a shipped image's program.
    pub fn extend_from_file(&mut self, path: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not valid JSON: {e}", path.display()))?;
        let mut added = Vec::new();
        for (i, e) in v.get("allowlist").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let strs = |k: &str| -> Vec<String> {
                e.get(k)
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
                    .unwrap_or_default()
            };
            let program = e
                .get("program")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("{}: allowlist[{i}].program is required", path.display()))?;
            let images = strs("images");
            if images.is_empty() {
                return Err(format!("{}: allowlist[{i}].images is required", path.display()));
            }
            let mut tools = Vec::new();
            for (name, tool) in e.get("tools").and_then(Value::as_object).into_iter().flatten() {
                let tool = tool
                    .as_str()
                    .ok_or_else(|| format!("{}: allowlist[{i}].tools.{name} must be a path", path.display()))?;
                tools.push((name.clone(), PathBuf::from(tool)));
            }
            added.push(AllowEntry {
                images,
                program: PathBuf::from(program),
                prefix_args: strs("prefixArgs"),
                default_args: strs("defaultArgs"),
                commands: vec![],
                tools,
            });
        }
        added.append(&mut self.entries);
        self.entries = added;
        Ok(())
    }

    /// The entry of an image, if allowlisted: one naming the image's tag first, then one naming its
    /// repository.
    pub fn find(&self, image: &str) -> Option<&AllowEntry> {
        let tagged = image.split('@').next().unwrap_or(image);
        let repo = repository(image);
        (self.entries.iter().find(|e| e.images.iter().any(|i| i == tagged)))
            .or_else(|| self.entries.iter().find(|e| e.images.iter().any(|i| i == repo)))
    }
}

/// The argv a container runs: the program of its allowlist entry, never anything else.
pub fn argv(entry: &AllowEntry, container: &Value) -> Vec<String> {
    let strs = |p: &str| -> Vec<String> {
        container
            .get(p)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    let command = strs("command");
    let args = strs("args");
    let basename = |c: &String| c.rsplit('/').next().unwrap_or_default().to_string();
    if let Some((_, tool)) = command.first().and_then(|c| entry.tools.iter().find(|(n, _)| *n == basename(c))) {
        let mut out = vec![tool.display().to_string()];
        out.extend(command[1..].iter().cloned());
        out.extend(args);
        return out;
    }
    let mut out = vec![entry.program.display().to_string()];
    out.extend(entry.prefix_args.iter().cloned());
    match command.split_first() {
        // The command names the program (any path): keep its arguments.
        Some((_, rest)) => out.extend(rest.iter().cloned()),
        // Like an image's CMD, the default arguments give way to the container's args.
        None if args.is_empty() => out.extend(entry.default_args.iter().cloned()),
        None => {}
    }
    out.extend(args);
    out
}

/// What one container process is doing.
#[derive(Clone, Debug, Default)]
pub struct ContainerState {
    /// Running since.
    pub running_since: Option<DateTime<Utc>>,
    /// Last exit: code, started, finished.
    pub last_exit: Option<(i64, DateTime<Utc>, DateTime<Utc>)>,
    /// Restarts so far.
    pub restarts: u32,
    /// Finished for good (no restart).
    pub done: bool,
    /// Readiness probe result.
    pub ready: bool,
    /// Why it could not start.
    pub start_error: Option<String>,
    /// The image the process was started from (it differs from the spec's while an image change is
    /// being made).
    pub image: Option<String>,
}

/// The shared state of a pod's processes.
pub struct PodProcesses {
    /// Per container.
    pub states: Mutex<HashMap<String, ContainerState>>,
    /// Signals a change worth a status update.
    pub changed: Notify,
    stop: Notify,
    stopping: std::sync::atomic::AtomicBool,
    pids: Mutex<HashMap<String, u32>>,
    /// Containers to run again from a new image, by name.
    replacements: Mutex<HashMap<String, Prepared>>,
    replaced: Notify,
}

/// How long a container whose image changed gets to stop before SIGKILL.
const REPLACE_GRACE: Duration = Duration::from_secs(10);

/// Where a pod's logs go.
pub fn log_path(dir: &Path, uid: &str, container: &str, previous: bool) -> PathBuf {
    dir.join(uid).join(if previous { format!("{container}.previous.log") } else { format!("{container}.log") })
}

fn env_of(pod: &Value, container: &Value, ip: &str) -> Vec<(String, String)> {
    let meta = |p: &str| pod.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    let mut env = vec![
        ("POD_IP".to_string(), ip.to_string()),
        ("POD_NAME".to_string(), meta("/metadata/name")),
        ("POD_NAMESPACE".to_string(), meta("/metadata/namespace")),
        (
            "HOSTNAME".to_string(),
            pod.pointer("/spec/hostname")
                .and_then(Value::as_str)
                .map(String::from)
                .unwrap_or_else(|| meta("/metadata/name")),
        ),
    ];
    for e in container.get("env").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = e.get("name").and_then(Value::as_str) else { continue };
        let value = match (
            e.get("value").and_then(Value::as_str),
            e.pointer("/valueFrom/fieldRef/fieldPath").and_then(Value::as_str),
        ) {
            (Some(v), _) => v.to_string(),
            (None, Some("status.podIP")) => ip.to_string(),
            (None, Some("metadata.name")) => meta("/metadata/name"),
            (None, Some("metadata.namespace")) => meta("/metadata/namespace"),
            (None, Some("spec.nodeName")) => meta("/spec/nodeName"),
            _ => String::new(),
        };
        env.push((name.to_string(), value));
    }
    // $(VAR) references in later values and arguments use these, as kube expands them.
    env
}

/// A directory mounted into a container: `source` on the machine at `target` in the container.
#[derive(Clone, Debug, PartialEq)]
pub struct Mount {
    /// Directory on the machine.
    pub source: PathBuf,
    /// Path the process sees it at.
    pub target: String,
    /// Mounted read-only.
    pub read_only: bool,
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Runs `argv` in a private mount namespace whose /etc/hosts is the node's hosts file and whose volume
/// mounts are bind mounts of directories under the data dir, so the process resolves pod and Service
/// names and keeps its data where uc manages it, while the machine's own files stay untouched.
/// Without root or `unshare` the process runs as is.
pub fn isolate(argv: Vec<String>, hosts: Option<&Path>, mounts: &[Mount]) -> Vec<String> {
    if hosts.is_none() && mounts.is_empty() {
        return argv;
    }
    let root = std::fs::metadata("/proc/self").map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    });
    if !root.unwrap_or(false) || !Path::new("/usr/bin/unshare").exists() {
        return argv;
    }
    let mut script = String::new();
    if let Some(h) = hosts {
        script.push_str(&format!("mount --bind {} /etc/hosts && ", quote(&h.display().to_string())));
    }
    for m in mounts {
        // A missing mount point is created (an empty directory); the mount itself stays private.
        script.push_str(&format!(
            "mkdir -p {t} && mount --bind {s} {t} && ",
            t = quote(&m.target),
            s = quote(&m.source.display().to_string())
        ));
        if m.read_only {
            script.push_str(&format!("mount -o remount,bind,ro {} && ", quote(&m.target)));
        }
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

/// The directories of a pod's volumes: PersistentVolumeClaims under `<volumes>/<namespace>/<claim>`
/// (they outlive the pod), emptyDirs under `<logs>/<pod uid>/volumes/<name>` (they go with it),
/// hostPath volumes at their path on this machine.
pub fn volume_dirs(pod: &Value, volumes_dir: &Path, pod_dir: &Path) -> HashMap<String, PathBuf> {
    let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    let mut out = HashMap::new();
    for v in pod.pointer("/spec/volumes").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = v.get("name").and_then(Value::as_str) else { continue };
        if let Some(claim) = v.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str) {
            out.insert(name.to_string(), volumes_dir.join(ns).join(claim));
        } else if v.get("emptyDir").is_some() {
            out.insert(name.to_string(), pod_dir.join("volumes").join(name));
        } else if let Some(path) = v.pointer("/hostPath/path").and_then(Value::as_str) {
            out.insert(name.to_string(), PathBuf::from(path));
        }
    }
    out
}

/// The mounts of one container.
pub fn mounts_of(container: &Value, dirs: &HashMap<String, PathBuf>) -> Vec<Mount> {
    container
        .get("volumeMounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let source = dirs.get(m.get("name")?.as_str()?)?.clone();
            let read_only = m.get("readOnly").and_then(Value::as_bool).unwrap_or(false);
            Some(Mount { source, target: m.get("mountPath")?.as_str()?.to_string(), read_only })
        })
        .collect()
}

/// Expands `$(VAR)` references like kube does for command, args and env.
pub fn expand(s: &str, env: &[(String, String)]) -> String {
    let mut out = s.to_string();
    for (k, v) in env {
        out = out.replace(&format!("$({k})"), v);
    }
    out
}

/// What the containers of one pod are started with.
struct Launch {
    pod: Value,
    ip: String,
    allow: Allowlist,
    logs: PathBuf,
    hosts: Option<PathBuf>,
    dirs: HashMap<String, PathBuf>,
    policy: String,
}

/// One container, ready to run.
struct Prepared {
    name: String,
    image: String,
    argv: Vec<String>,
    env: Vec<(String, String)>,
    cwd: Option<PathBuf>,
    log: PathBuf,
    prev: PathBuf,
}

/// The node's directories: logs (and per-pod directories), the hosts file, claims' volumes.
pub type NodeDirs<'a> = (&'a Path, Option<&'a Path>, &'a Path);

impl Launch {
    fn new(pod: &Value, ip: &str, allow: &Allowlist, (logs, hosts, volumes): NodeDirs) -> Launch {
        let uid = pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
        Launch {
            pod: pod.clone(),
            ip: ip.to_string(),
            allow: allow.clone(),
            logs: logs.to_path_buf(),
            hosts: hosts.map(Path::to_path_buf),
            dirs: volume_dirs(pod, volumes, &logs.join(uid)),
            policy: pod.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("Always").to_string(),
        }
    }

    fn prepare(&self, c: &Value) -> Option<Prepared> {
        let name = c.get("name").and_then(Value::as_str).unwrap_or("main").to_string();
        let entry = c.get("image").and_then(Value::as_str).and_then(|i| self.allow.find(i))?;
        let uid = self.pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
        let env = env_of(&self.pod, c, &self.ip);
        let argv = isolate(
            argv(entry, c).iter().map(|a| expand(a, &env)).collect(),
            self.hosts.as_deref(),
            &mounts_of(c, &self.dirs),
        );
        Some(Prepared {
            log: log_path(&self.logs, uid, &name, false),
            prev: log_path(&self.logs, uid, &name, true),
            cwd: c.get("workingDir").and_then(Value::as_str).map(PathBuf::from),
            image: c.get("image").and_then(Value::as_str).unwrap_or_default().to_string(),
            name,
            argv,
            env,
        })
    }

    fn containers(&self, key: &str) -> Vec<Value> {
        self.pod.pointer(&format!("/spec/{key}")).and_then(Value::as_array).cloned().unwrap_or_default()
    }
}

impl PodProcesses {
    /// Starts the pod: its init containers one after another, each to success, then every container.
    pub fn start(
        pod: &Value,
        ip: &str,
        allow: &Allowlist,
        logs: &Path,
        hosts: Option<&Path>,
        volumes: &Path,
    ) -> Arc<PodProcesses> {
        let procs = Arc::new(PodProcesses {
            states: Mutex::new(HashMap::new()),
            changed: Notify::new(),
            stop: Notify::new(),
            stopping: Default::default(),
            pids: Mutex::new(HashMap::new()),
            replacements: Mutex::new(HashMap::new()),
            replaced: Notify::new(),
        });
        let launch = Launch::new(pod, ip, allow, (logs, hosts, volumes));
        // Claims and emptyDirs are uc's to create; a hostPath is the machine's and must exist.
        let pod_dir = logs.join(pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default());
        for d in launch.dirs.values().filter(|d| d.starts_with(volumes) || d.starts_with(&pod_dir)) {
            let _ = std::fs::create_dir_all(d);
        }
        let init = launch.containers("initContainers");
        if init.is_empty() {
            procs.start_containers(&launch);
        } else {
            for c in &init {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("init").to_string();
                procs.states.lock().insert(name, ContainerState::default());
            }
            let p = procs.clone();
            tokio::spawn(async move {
                // A failed init container is run again unless the pod never restarts, as the kubelet does.
                let policy = if launch.policy == "Never" { "Never" } else { "OnFailure" };
                for c in &init {
                    let Some(run) = launch.prepare(c) else {
                        let name = c.get("name").and_then(Value::as_str).unwrap_or("init");
                        p.set(name, |s| s.start_error = Some("image not on the node's allowlist".into()));
                        return;
                    };
                    let name = run.name.clone();
                    p.clone().supervise(run, policy.to_string()).await;
                    let ok = p.states.lock().get(&name).is_some_and(|s| s.last_exit.is_some_and(|(c, _, _)| c == 0));
                    if !ok || p.stopping.load(std::sync::atomic::Ordering::Acquire) {
                        return;
                    }
                }
                p.start_containers(&launch);
            });
        }
        procs
    }

    /// Runs the containers whose image changed in `pod` (the pod as updated) from their new image, as
    /// the kubelet does: the only change a running pod's spec may take. The pod's volumes are kept.
    pub fn update_images(&self, old: &Value, pod: &Value, allow: &Allowlist, dirs: NodeDirs, ip: &str) {
        let image = |p: &Value, name: &str| -> Option<String> {
            p.pointer("/spec/containers")?
                .as_array()?
                .iter()
                .find(|c| c.get("name").and_then(Value::as_str) == Some(name))?
                .get("image")?
                .as_str()
                .map(String::from)
        };
        let launch = Launch::new(pod, ip, allow, dirs);
        let mut any = false;
        for c in launch.containers("containers") {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("main").to_string();
            if image(old, &name) == image(pod, &name) {
                continue;
            }
            if let Some(run) = launch.prepare(&c) {
                tracing::info!(container = %name, image = ?image(pod, &name), "image changed; restarting the container");
                self.replacements.lock().insert(name, run);
                any = true;
            }
        }
        if any {
            self.replaced.notify_waiters();
        }
    }

    /// Starts the pod's (non-init) containers, each with its probes.
    fn start_containers(self: &Arc<Self>, launch: &Launch) {
        if self.stopping.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let procs = self;
        for c in launch.containers("containers") {
            let Some(run) = launch.prepare(&c) else { continue };
            let name = run.name.clone();
            let ip = launch.ip.clone();
            procs.states.lock().insert(name.clone(), ContainerState::default());
            let p = procs.clone();
            tokio::spawn(p.clone().supervise(run, launch.policy.clone()));
            if let Some(probe) = c.get("livenessProbe").cloned() {
                tokio::spawn(p.clone().liveness(name.clone(), probe, ip.clone(), c.clone()));
            }
            if let Some(probe) = c.get("readinessProbe").cloned() {
                tokio::spawn(p.probe(name, probe, ip, c.clone()));
            } else {
                let p = procs.clone();
                tokio::spawn(async move {
                    // Without a readiness probe a running container is Ready.
                    loop {
                        let changed = {
                            let mut s = p.states.lock();
                            let st = s.entry(name.clone()).or_default();
                            let ready = st.running_since.is_some();
                            let changed = st.ready != ready;
                            st.ready = ready;
                            changed
                        };
                        if changed {
                            p.changed.notify_waiters();
                        }
                        if p.stopping.load(std::sync::atomic::Ordering::Acquire) {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                });
            }
        }
        self.changed.notify_waiters();
    }

    async fn supervise(self: Arc<Self>, run: Prepared, policy: String) {
        let Prepared { name, mut image, mut argv, mut env, mut cwd, log, prev } = run;
        let mut restarts = 0u32;
        loop {
            if let Some(d) = log.parent() {
                let _ = std::fs::create_dir_all(d);
            }
            if log.exists() {
                let _ = std::fs::rename(&log, &prev);
            }
            let out = std::fs::OpenOptions::new().create(true).append(true).open(&log);
            let (Ok(out), Ok(err)) = (out.as_ref().map(|f| f.try_clone()), out.as_ref().map(|f| f.try_clone())) else {
                self.set(&name, |s| s.start_error = Some(format!("cannot open {}", log.display())));
                return;
            };
            let (Ok(out), Ok(err)) = (out, err) else { return };
            let mut cmd = tokio::process::Command::new(&argv[0]);
            cmd.args(&argv[1..])
                .envs(env.iter().cloned())
                .stdin(Stdio::null())
                .stdout(Stdio::from(out))
                .stderr(Stdio::from(err))
                .kill_on_drop(true);
            if let Some(d) = &cwd {
                cmd.current_dir(d);
            }
            let started = Utc::now();
            let mut child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) => {
                    self.set(&name, |s| s.start_error = Some(format!("{}: {e}", argv[0])));
                    return;
                }
            };
            if let Some(pid) = child.id() {
                self.pids.lock().insert(name.clone(), pid);
            }
            self.set(&name, |s| {
                s.running_since = Some(started);
                s.restarts = restarts;
                s.start_error = None;
                s.image = Some(image.clone());
            });
            let mut replaced = None;
            let status = loop {
                tokio::select! {
                    s = child.wait() => break s.ok(),
                    _ = self.stop.notified() => { let _ = child.wait().await; return; }
                    _ = self.replaced.notified() => {
                        let Some(next) = self.replacements.lock().remove(&name) else { continue };
                        // A new image: the container stops (SIGTERM, then SIGKILL after its grace) and
                        // starts again from the new image, keeping the pod and its volumes.
                        if let Some(pid) = child.id() {
                            let _ = tokio::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().await;
                        }
                        let waited = tokio::time::timeout(REPLACE_GRACE, child.wait()).await;
                        let s = match waited {
                            Ok(s) => s.ok(),
                            Err(_) => { let _ = child.kill().await; child.wait().await.ok() }
                        };
                        replaced = Some(next);
                        break s;
                    }
                }
            };
            let code = status.and_then(|s| s.code()).unwrap_or(137) as i64;
            let finished = Utc::now();
            if let Some(next) = replaced {
                self.set(&name, |s| {
                    s.running_since = None;
                    s.ready = false;
                    s.last_exit = Some((code, started, finished));
                });
                (image, argv, env, cwd) = (next.image, next.argv, next.env, next.cwd);
                restarts += 1;
                continue;
            }
            let restart = !self.stopping.load(std::sync::atomic::Ordering::Acquire)
                && (policy == "Always" || (policy == "OnFailure" && code != 0));
            self.set(&name, |s| {
                s.running_since = None;
                s.ready = false;
                s.last_exit = Some((code, started, finished));
                s.done = !restart;
            });
            if !restart {
                return;
            }
            restarts += 1;
            let backoff = Duration::from_secs(1 << restarts.saturating_sub(1).min(4));
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = self.stop.notified() => return,
            }
        }
    }

    fn set(&self, name: &str, f: impl FnOnce(&mut ContainerState)) {
        f(self.states.lock().entry(name.to_string()).or_default());
        self.changed.notify_waiters();
    }

    async fn probe(self: Arc<Self>, name: String, probe: Value, ip: String, container: Value) {
        let num = |k: &str, d: u64| probe.get(k).and_then(Value::as_u64).unwrap_or(d);
        let (delay, period, timeout) =
            (num("initialDelaySeconds", 0), num("periodSeconds", 10).max(1), num("timeoutSeconds", 1).max(1));
        let (success_needed, failure_needed) = (num("successThreshold", 1).max(1), num("failureThreshold", 3).max(1));
        tokio::time::sleep(Duration::from_secs(delay)).await;
        let (mut ok_run, mut fail_run) = (0u64, 0u64);
        while !self.stopping.load(std::sync::atomic::Ordering::Acquire) {
            let running = self.states.lock().get(&name).is_some_and(|s| s.running_since.is_some());
            let ok = running
                && tokio::time::timeout(Duration::from_secs(timeout), run_probe(&probe, &ip, &container))
                    .await
                    .unwrap_or(false);
            if ok {
                ok_run += 1;
                fail_run = 0;
            } else {
                fail_run += 1;
                ok_run = 0;
            }
            let current = self.states.lock().get(&name).is_some_and(|s| s.ready);
            if !current && ok_run >= success_needed {
                self.set(&name, |s| s.ready = true);
            } else if current && (fail_run >= failure_needed || !running) {
                self.set(&name, |s| s.ready = false);
            }
            tokio::time::sleep(Duration::from_secs(period)).await;
        }
    }

    /// Liveness: after `failureThreshold` failed probes in a row the process is killed; the
    /// restartPolicy then restarts it (bumping restartCount), as the kubelet does.
    async fn liveness(self: Arc<Self>, name: String, probe: Value, ip: String, container: Value) {
        let num = |k: &str, d: u64| probe.get(k).and_then(Value::as_u64).unwrap_or(d);
        let (delay, period, timeout) =
            (num("initialDelaySeconds", 0), num("periodSeconds", 10).max(1), num("timeoutSeconds", 1).max(1));
        let failure_needed = num("failureThreshold", 3).max(1);
        let mut since: Option<DateTime<Utc>> = None;
        let mut failures = 0u64;
        while !self.stopping.load(std::sync::atomic::Ordering::Acquire) {
            tokio::time::sleep(Duration::from_secs(period)).await;
            let running = self.states.lock().get(&name).and_then(|s| s.running_since);
            let Some(started) = running else {
                failures = 0;
                continue;
            };
            if since != Some(started) {
                // A new run: wait its initial delay, and count afresh.
                since = Some(started);
                failures = 0;
                tokio::time::sleep(Duration::from_secs(delay)).await;
            }
            let ok = tokio::time::timeout(Duration::from_secs(timeout), run_probe(&probe, &ip, &container))
                .await
                .unwrap_or(false);
            failures = if ok { 0 } else { failures + 1 };
            if failures >= failure_needed {
                let pid = self.pids.lock().get(&name).copied();
                if let Some(pid) = pid {
                    tracing::info!(container = %name, pid, "liveness probe failed; killing the container");
                    let _ = tokio::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().await;
                }
                failures = 0;
            }
        }
    }

    /// Stops every process: SIGTERM, then SIGKILL after `grace`.
    pub async fn stop(&self, grace: Duration) {
        self.stopping.store(true, std::sync::atomic::Ordering::Release);
        let pids: Vec<u32> = self.pids.lock().values().copied().collect();
        for pid in &pids {
            let _ = tokio::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().await;
        }
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let alive = self.states.lock().values().any(|s| s.running_since.is_some());
            if !alive || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for pid in &pids {
            let _ = tokio::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().await;
        }
        self.stop.notify_waiters();
    }
}

fn port_of(port: &Value, container: &Value) -> Option<u16> {
    match port {
        Value::Number(n) => n.as_u64().and_then(|p| u16::try_from(p).ok()),
        Value::String(name) => container
            .get("ports")?
            .as_array()?
            .iter()
            .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|p| p.get("containerPort").and_then(Value::as_u64))
            .and_then(|p| u16::try_from(p).ok()),
        _ => None,
    }
}

async fn run_probe(probe: &Value, ip: &str, container: &Value) -> bool {
    if let Some(h) = probe.get("httpGet") {
        let host = h.get("host").and_then(Value::as_str).unwrap_or(ip);
        let Some(port) = h.get("port").and_then(|p| port_of(p, container)) else { return false };
        let path = h.get("path").and_then(Value::as_str).unwrap_or("/");
        let Ok(mut s) = tokio::net::TcpStream::connect((host, port)).await else { return false };
        let req = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nUser-Agent: uc-probe\r\n\r\n");
        if s.write_all(req.as_bytes()).await.is_err() {
            return false;
        }
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).await.unwrap_or(0);
        let line = String::from_utf8_lossy(&buf[..n]);
        return line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse::<u16>().ok())
            .is_some_and(|c| (200..400).contains(&c));
    }
    if let Some(t) = probe.get("tcpSocket") {
        let host = t.get("host").and_then(Value::as_str).unwrap_or(ip);
        let Some(port) = t.get("port").and_then(|p| port_of(p, container)) else { return false };
        return tokio::net::TcpStream::connect((host, port)).await.is_ok();
    }
    if let Some(cmd) = probe.pointer("/exec/command").and_then(Value::as_array) {
        let argv: Vec<String> = cmd.iter().filter_map(|x| x.as_str().map(String::from)).collect();
        let Some((first, rest)) = argv.split_first() else { return false };
        return tokio::process::Command::new(first)
            .args(rest)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .is_ok_and(|s| s.success());
    }
    false
}

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The status of one container from its state; `initializing` while init containers still run.
fn container_status(c: &Value, st: &ContainerState, uid: &str, initializing: bool) -> Value {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("main");
    let terminated = |(code, s, f): (i64, DateTime<Utc>, DateTime<Utc>)| json!({"terminated": {"exitCode": code, "reason": if code == 0 { "Completed" } else { "Error" }, "startedAt": ts(s), "finishedAt": ts(f)}});
    let state = match (&st.running_since, &st.start_error, st.done, st.last_exit) {
        (Some(t), _, _, _) => json!({"running": {"startedAt": ts(*t)}}),
        (None, Some(e), _, _) => json!({"waiting": {"reason": "RunContainerError", "message": e}}),
        (None, None, true, Some(x)) => terminated(x),
        (None, None, false, Some(_)) => json!({"waiting": {"reason": "CrashLoopBackOff"}}),
        _ if initializing => json!({"waiting": {"reason": "PodInitializing"}}),
        _ => json!({"waiting": {"reason": "ContainerCreating"}}),
    };
    let last = match (st.done, st.last_exit) {
        (false, Some(x)) => terminated(x),
        _ => json!({}),
    };
    let image = st.image.as_deref().map(Value::from).or_else(|| c.get("image").cloned());
    json!({"name": name, "image": image, "imageID": "", "containerID": format!("uc-process://{uid}/{name}"),
           "ready": st.ready, "started": st.running_since.is_some(), "restartCount": st.restarts,
           "state": state, "lastState": last})
}

/// The pod status its processes give.
pub fn status(pod: &Value, procs: &PodProcesses, ip: &str) -> Value {
    let states = procs.states.lock().clone();
    let created = pod.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null);
    let uid = pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
    let list = |key: &str| pod.pointer(&format!("/spec/{key}")).and_then(Value::as_array).cloned().unwrap_or_default();
    let state_of =
        |c: &Value| states.get(c.get("name").and_then(Value::as_str).unwrap_or("main")).cloned().unwrap_or_default();
    let exit_of = |st: &ContainerState| st.last_exit.map(|(c, _, _)| c);
    // Init containers: each must have exited 0; one that failed for good fails the pod.
    let init = list("initContainers");
    let initialized = init.iter().all(|c| exit_of(&state_of(c)) == Some(0) && state_of(c).running_since.is_none());
    let init_failed = init.iter().any(|c| {
        let st = state_of(c);
        st.start_error.is_some() || (st.done && exit_of(&st).is_some_and(|code| code != 0))
    });
    let init_statuses: Vec<Value> = init.iter().map(|c| container_status(c, &state_of(c), uid, false)).collect();
    let mut all_ready = initialized;
    let mut all_done = true;
    let mut any_failed = false;
    let mut statuses = Vec::new();
    for c in list("containers") {
        let st = state_of(&c);
        all_ready &= st.ready;
        all_done &= st.done;
        any_failed |= st.done && exit_of(&st).is_some_and(|code| code != 0);
        statuses.push(container_status(&c, &st, uid, !initialized));
    }
    let phase = if init_failed {
        "Failed"
    } else if !initialized {
        "Pending"
    } else if all_done && !statuses.is_empty() {
        if any_failed { "Failed" } else { "Succeeded" }
    } else {
        "Running"
    };
    let cond = |t: &str, ok: bool| json!({"type": t, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": created});
    let mut status = json!({
        "phase": phase,
        "conditions": [cond("PodScheduled", true), cond("Initialized", initialized), cond("ContainersReady", all_ready), cond("Ready", all_ready)],
        "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}], "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": created, "qosClass": "BestEffort", "containerStatuses": statuses,
    });
    if !init_statuses.is_empty() {
        status["initContainerStatuses"] = json!(init_statuses);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlist_matches_repositories_not_lookalikes() {
        let a = Allowlist::shipped(PathBuf::from("/bin/uc"));
        assert!(a.find("quay.io/coreos/etcd:v3.4.23").is_some());
        assert!(a.find("etcd").is_some());
        assert!(a.find("uc/http-server:1").is_some());
        assert!(a.find("nginx:1.25").is_none());
        assert!(a.find("evil/etcd").is_none());
        assert_eq!(repository("localhost:5000/etcd:3"), "localhost:5000/etcd");
        assert_eq!(repository("etcd@sha256:abc"), "etcd");
    }

    #[test]
    fn argv_always_runs_the_allowlisted_program() {
        let a = Allowlist::shipped(PathBuf::from("/bin/uc"));
        let etcd = a.find("etcd").unwrap();
        let c = json!({"command": ["/usr/local/bin/etcd", "--name", "$(POD_NAME)"], "args": ["--x"]});
        assert_eq!(argv(etcd, &c), vec!["/usr/bin/etcd", "--name", "$(POD_NAME)", "--x"]);
        let sneaky = json!({"command": ["/bin/sh", "-c", "rm -rf /"]});
        assert_eq!(argv(etcd, &sneaky)[0], "/usr/bin/etcd", "a command never replaces the program");
        let zk = a.find("zookeeper:3.8").unwrap();
        assert_eq!(argv(zk, &json!({}))[1..], ["start-foreground"]);
        assert_eq!(
            argv(zk, &json!({"args": ["start-foreground", "/cfg"]}))[1..],
            ["start-foreground", "/cfg"],
            "args replace the defaults"
        );
        let http = a.find("uc/http-server").unwrap();
        assert_eq!(argv(http, &json!({"args": ["--port", "8080"]})), vec!["/bin/uc", "http-server", "--port", "8080"]);
        assert_eq!(
            argv(http, &json!({"command": ["serve", "--text", "x"]})),
            vec!["/bin/uc", "http-server", "--text", "x"]
        );
        assert_eq!(expand("--name=$(POD_NAME)", &[("POD_NAME".into(), "p".into())]), "--name=p");
    }

    /// A node.json with `text` in a directory of its own (removed by the test).
    fn node_config(name: &str, text: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("uc-node-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("node.json");
        std::fs::write(&file, text).unwrap();
        (dir, file)
    }

    #[test]
    fn tagged_entries_and_tools() {
        let (dir, file) = node_config(
            "tools",
            r#"{"allowlist": [{"images": ["quay.io/coreos/etcd:v3.5.1"], "program": "/opt/etcd35/etcd",
                "tools": {"etcdctl": "/opt/etcd35/etcdctl"}}]}"#,
        );
        let mut a = Allowlist::shipped(PathBuf::from("/bin/uc"));
        a.extend_from_file(&file).unwrap();
        let v35 = a.find("quay.io/coreos/etcd:v3.5.1").unwrap();
        let v34 = a.find("quay.io/coreos/etcd:v3.4.23").unwrap();
        assert_eq!(v35.program, PathBuf::from("/opt/etcd35/etcd"), "the tag's own program");
        assert_eq!(v34.program, PathBuf::from("/usr/bin/etcd"), "other tags: the repository's");
        let restore = json!({"command": ["/usr/local/bin/etcdctl", "snapshot", "restore"], "args": ["/b/s.db"]});
        assert_eq!(argv(v35, &restore), vec!["/opt/etcd35/etcdctl", "snapshot", "restore", "/b/s.db"]);
        assert_eq!(argv(v34, &restore)[0], "/usr/bin/etcdctl");
        assert_eq!(argv(v34, &json!({"command": ["etcd", "--x"]})), vec!["/usr/bin/etcd", "--x"]);
        std::fs::write(&file, r#"{"allowlist": [{"images": ["x"], "program": "/p", "tools": {"t": 1}}]}"#).unwrap();
        assert!(a.extend_from_file(&file).unwrap_err().contains("tools.t must be a path"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn init_containers_gate_the_pod() {
        let pod = json!({"metadata": {"uid": "u"}, "spec": {
            "initContainers": [{"name": "restore", "image": "etcd"}], "containers": [{"name": "etcd", "image": "etcd"}]}});
        let procs = PodProcesses {
            states: Mutex::new(HashMap::new()),
            changed: Notify::new(),
            stop: Notify::new(),
            stopping: Default::default(),
            pids: Mutex::new(HashMap::new()),
            replacements: Mutex::new(HashMap::new()),
            replaced: Notify::new(),
        };
        let phase = |p: &PodProcesses| {
            let st = status(&pod, p, "127.1.0.1");
            let initialized = st["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Initialized").unwrap()
                ["status"]
                .clone();
            (st["phase"].as_str().unwrap().to_string(), initialized, st["containerStatuses"][0]["state"].clone())
        };
        let (ph, init, state) = phase(&procs);
        assert_eq!((ph.as_str(), init), ("Pending", json!("False")));
        assert_eq!(state, json!({"waiting": {"reason": "PodInitializing"}}));
        let t = Utc::now();
        procs
            .states
            .lock()
            .insert("restore".into(), ContainerState { last_exit: Some((0, t, t)), done: true, ..Default::default() });
        procs
            .states
            .lock()
            .insert("etcd".into(), ContainerState { running_since: Some(t), ready: true, ..Default::default() });
        assert_eq!(phase(&procs).0, "Running");
        assert_eq!(phase(&procs).1, json!("True"));
        procs
            .states
            .lock()
            .insert("restore".into(), ContainerState { last_exit: Some((1, t, t)), done: true, ..Default::default() });
        procs.states.lock().remove("etcd");
        assert_eq!(phase(&procs).0, "Failed", "an init container that failed for good fails the pod");
        procs
            .states
            .lock()
            .insert("restore".into(), ContainerState { last_exit: Some((1, t, t)), done: false, ..Default::default() });
        assert_eq!(phase(&procs).0, "Pending", "one that is retried keeps it pending");
    }

    #[test]
    fn node_config_adds_entries() {
        let (dir, file) = node_config(
            "config",
            r#"{"allowlist": [{"images": ["my/server"], "program": "/opt/server", "defaultArgs": ["--serve"]}]}"#,
        );
        let mut a = Allowlist::shipped(PathBuf::from("/bin/uc"));
        a.extend_from_file(&file).unwrap();
        assert_eq!(argv(a.find("my/server:2").unwrap(), &json!({})), vec!["/opt/server", "--serve"]);
        assert!(a.find("etcd").is_some(), "shipped entries stay");
        std::fs::write(&file, r#"{"allowlist": [{"images": ["x"]}]}"#).unwrap();
        assert!(a.extend_from_file(&file).unwrap_err().contains("program is required"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn volumes_map_to_directories() {
        let pod = json!({"metadata": {"namespace": "ns"}, "spec": {"volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "www-web-0"}}, {"name": "tmp", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "x"}}]}});
        let dirs = volume_dirs(&pod, Path::new("/d/volumes"), Path::new("/d/pods/u"));
        assert_eq!(dirs["data"], PathBuf::from("/d/volumes/ns/www-web-0"));
        assert_eq!(dirs["tmp"], PathBuf::from("/d/pods/u/volumes/tmp"));
        assert!(!dirs.contains_key("cfg"));
        let c = json!({"volumeMounts": [{"name": "data", "mountPath": "/var/lib/x"}, {"name": "cfg", "mountPath": "/etc/x"}]});
        assert_eq!(
            mounts_of(&c, &dirs),
            vec![Mount {
                source: PathBuf::from("/d/volumes/ns/www-web-0"),
                target: "/var/lib/x".into(),
                read_only: false
            }]
        );
        let argv = isolate(vec!["/bin/prog".into()], None, &mounts_of(&c, &dirs));
        if argv.len() > 1 {
            assert!(argv.iter().any(|a| a.contains("mount --bind '/d/volumes/ns/www-web-0' '/var/lib/x'")), "{argv:?}");
            assert_eq!(argv.last().map(String::as_str), Some("/bin/prog"));
        }
        assert_eq!(quote("it's"), "'it'\\''s'");
    }
}
