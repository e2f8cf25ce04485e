//! What a pod's containers need before they start, and keep current while they run: the ConfigMaps
//! and Secrets it names, its node-written volumes, each container's environment and launch spec, a
//! service account token; and the new launch spec of a container whose image changed.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Container, EphemeralContainer, Pod, ServiceAccountTokenProjection};
use kube::api::{Api, PostParams};
use tokio::sync::watch;

use crate::context::Ctx;
use crate::exec::ExecTarget;
use crate::held_pod::HeldPod;
use crate::pod::{PodProcesses, Prepared, Unprepared};
use crate::pod_api::{name, namespace, spec, uid};
use crate::{allowlist, container, env, sandbox, volumes};

/// The ConfigMaps and Secrets a pod names, read now (those that do not exist are absent).
pub(crate) async fn read_sources(ctx: &Ctx, pod: &Pod) -> BTreeMap<(env::Kind, String), BTreeMap<String, Vec<u8>>> {
    let ns = namespace(pod);
    let mut out = BTreeMap::new();
    for (kind, name) in env::referenced(pod).into_keys() {
        if let Some(data) = ctx.objects.get(kind, ns, &name).await {
            out.insert((kind, name), data);
        }
    }
    out
}

/// The first `serviceAccountToken` projection of a pod's volumes.
fn token_source(pod: &Pod) -> Option<&ServiceAccountTokenProjection> {
    let volumes = spec(pod).volumes.iter().flatten();
    let sources = volumes.filter_map(|v| v.projected.as_ref()).flat_map(|p| p.sources.iter().flatten());
    sources.into_iter().find_map(|s| s.service_account_token.as_ref())
}

/// The TokenRequest a pod's projected token comes from: its account, the projection's audience and
/// lifetime (kube's default: one hour), bound to the pod so that it stops working when the pod goes.
fn token_request(pod: &Pod, source: &ServiceAccountTokenProjection) -> TokenRequest {
    let audience = source.audience.clone().filter(|a| !a.is_empty());
    let bound = BoundObjectReference {
        kind: Some("Pod".into()),
        api_version: Some("v1".into()),
        name: Some(name(pod).into()),
        uid: Some(uid(pod).into()),
    };
    let spec = TokenRequestSpec {
        expiration_seconds: Some(source.expiration_seconds.unwrap_or(3600)),
        bound_object_ref: Some(bound),
        audiences: audience.into_iter().collect(),
    };
    TokenRequest { spec, ..Default::default() }
}

/// A token for a pod's projected service account token, from the TokenRequest API, with when to
/// renew it (at 80% of its lifetime, as the kubelet does). None when the pod projects no token or
/// the API server issues none (the volume then fails to mount, as it does on a kubelet).
pub(crate) async fn service_account_token(ctx: &Ctx, pod: &Pod) -> Option<(String, std::time::Duration)> {
    let source = token_source(pod)?;
    let sa = spec(pod).service_account_name.as_deref().filter(|s| !s.is_empty()).unwrap_or("default");
    let api: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(ctx.client.clone(), namespace(pod));
    let request = token_request(pod, source);
    match api.create_token_request(sa, &PostParams::default(), &request).await {
        Ok(t) => {
            let seconds = t.spec.expiration_seconds.unwrap_or(3600).max(60) as u64;
            t.status.map(|s| (s.token, std::time::Duration::from_secs(seconds * 4 / 5)))
        }
        Err(e) => {
            tracing::warn!(pod = %name(pod), account = sa, error = %e, "no service account token for the pod");
            None
        }
    }
}

/// A volume the node could not write (the kubelet's words).
#[derive(Debug, thiserror::Error)]
#[error("MountVolume.SetUp failed for volume {volume:?} : {cause}")]
pub(crate) struct MountError {
    volume: String,
    cause: MountCause,
}

#[derive(Debug, thiserror::Error)]
enum MountCause {
    #[error(transparent)]
    Config(#[from] env::ConfigError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Writes the pod's node-written volumes (configMap, secret, downwardAPI, projected); fails like a
/// kubelet's mount when a required source is missing.
pub(crate) fn write_volumes(
    pod: &Pod,
    ip: &str,
    pod_dir: &Path,
    sources: &dyn env::Sources,
    token: Option<&str>,
    owner: Option<(u32, u32)>,
) -> Result<(), MountError> {
    for v in spec(pod).volumes.iter().flatten() {
        if !volumes::is_projected(v) {
            continue;
        }
        let name = v.name.as_str();
        let failed = |cause: MountCause| MountError { volume: name.to_string(), cause };
        let files = volumes::render(v, pod, ip, sources, token).map_err(|e| failed(e.into()))?;
        let dir = pod_dir.join("volumes").join(name);
        volumes::write_volume(&dir, &files).map_err(|e| failed(e.into()))?;
        // In the sandbox the pod's user reads them, whatever their mode (a kubelet's container runs as
        // the image's user, root for most; here it is the pod's own).
        if let Some((uid, gid)) = owner {
            hand_over(&dir, uid, gid);
        }
    }
    Ok(())
}

/// A container's environment: `base`, then its image's (`ENV`, from the allowlist), then its own.
pub(crate) fn container_env(
    ctx: &Ctx,
    pod: &Pod,
    c: &Container,
    ip: &str,
    base: &[(String, String)],
    sources: &dyn env::Sources,
) -> Result<Vec<(String, String)>, env::ConfigError> {
    let image = c.image.as_deref().unwrap_or_default();
    match ctx.options.allowlist.find(image).filter(|e| !e.env.is_empty()) {
        Some(entry) => {
            let with_image: Vec<(String, String)> = base.iter().chain(&entry.env).cloned().collect();
            env::container_env(pod, c, ip, &with_image, sources)
        }
        None => env::container_env(pod, c, ip, base, sources),
    }
}

/// What every container's environment starts with.
pub(crate) fn base_env(ctx: &Ctx, pod: &Pod, ip: &str) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    let hostname = spec(pod).hostname.as_deref().unwrap_or(name(pod));
    env.extend([
        ("POD_IP".to_string(), ip.to_string()),
        ("POD_NAME".to_string(), name(pod).to_string()),
        ("POD_NAMESPACE".to_string(), namespace(pod).to_string()),
        ("HOSTNAME".to_string(), hostname.to_string()),
    ]);
    if let Some(api) = ctx.options.api_server {
        env.extend([
            ("KUBERNETES_SERVICE_HOST".to_string(), api.ip().to_string()),
            ("KUBERNETES_SERVICE_PORT".to_string(), api.port().to_string()),
            ("KUBERNETES_SERVICE_PORT_HTTPS".to_string(), api.port().to_string()),
            ("KUBERNETES_PORT".to_string(), format!("tcp://{api}")),
        ]);
    }
    env
}

/// A container asked to run as non-root would run as root, as the kubelet refuses it.
#[derive(Debug, thiserror::Error)]
#[error("container's runAsUser breaks non-root policy (pod: {pod:?}, container: {container})")]
pub(crate) struct NonRootViolation {
    pod: String,
    container: String,
}

/// The user and groups a sandboxed container runs as (its security context over the pod's, over the
/// image's user); an error when that is root and either asks to run as non-root.
fn identity(pod: &Pod, c: &Container, entry: &allowlist::AllowEntry) -> Result<sandbox::Identity, NonRootViolation> {
    let pod_sc = spec(pod).security_context.clone();
    let id = sandbox::Identity::of(pod_sc.as_ref(), c.security_context.as_ref()).with_image_user(
        entry.user,
        pod_sc.as_ref(),
        c.security_context.as_ref(),
    );
    let non_root = c
        .security_context
        .as_ref()
        .and_then(|s| s.run_as_non_root)
        .or(pod_sc.as_ref().and_then(|s| s.run_as_non_root))
        .unwrap_or(false);
    if non_root && id.uid == 0 {
        let pod = format!("{}_{}", name(pod), namespace(pod));
        return Err(NonRootViolation { pod, container: c.name.clone() });
    }
    Ok(id)
}

/// Prepares one container; an error is the container's (it does not start; the pod's others do).
pub(crate) fn prepare(
    ctx: &Ctx,
    pod: &Pod,
    c: &Container,
    ip: &str,
    env: Vec<(String, String)>,
    dirs: &HashMap<String, PathBuf>,
) -> Result<Prepared, Unprepared> {
    let name = c.name.clone();
    let fail = |reason: &str, message: String| (name.clone(), (reason.to_string(), message));
    let c = c.clone();
    let image = c.image.clone().unwrap_or_default();
    let entry = ctx
        .options
        .allowlist
        .find(&image)
        .cloned()
        .ok_or_else(|| fail("ErrImageNeverPull", format!("image {image:?} is not on the node's allowlist")))?;
    let argv = allowlist::argv(&entry, &c).map_err(|e| fail("RunContainerError", e.to_string()))?;
    let argv: Vec<String> = argv.iter().map(|a| env::expand(a, &env)).collect();
    let mut mounts = image_files(&entry).map_err(|e| fail("CreateContainerConfigError", e.0))?;
    mounts.extend(volumes::mounts_of(&c, dirs).map_err(|e| fail("CreateContainerConfigError", e.to_string()))?);
    if ctx.options.sandbox {
        // A subPath the node just made inside a volume is the pod's, like the volume.
        let (uid, gid) = volume_owner(pod);
        let ours =
            |p: &Path| p.is_dir() && (p.starts_with(&ctx.options.volumes_dir) || p.starts_with(&ctx.options.pods_dir));
        for m in mounts.iter().filter(|m| ours(&m.source)) {
            give(&m.source, uid, gid);
        }
    }
    let workdir = c.working_dir.clone().filter(|d| !d.is_empty()).or_else(|| entry.working_dir.clone());
    let ns = namespace(pod);
    // A resolv.conf only where the machine has one to cover (a bind mount needs its target).
    let resolv = ctx.hosts.as_ref().filter(|_| Path::new("/etc/resolv.conf").exists()).and_then(|h| h.resolv_path(ns));
    let names = volumes::NameFiles { hosts: ctx.hosts.as_ref().map(|h| h.path(ns)), resolv };
    let (argv, confine, isolated) = if ctx.options.sandbox {
        let id = identity(pod, &c, &entry).map_err(|e| fail("CreateContainerConfigError", e.to_string()))?;
        let program = PathBuf::from(argv.first().cloned().unwrap_or_default());
        let layout = sandbox::Layout {
            program: &program,
            names: &names,
            mounts: &mounts,
            cwd: workdir.as_deref(),
            hidden: &ctx.options.hidden,
        };
        // In the pod's network namespace when it has one: bubblewrap makes the rest.
        let mut line = net_prefix(ctx, pod);
        line.push("/usr/bin/bwrap".to_string());
        line.extend(sandbox::bwrap_args(&layout, &id, &sandbox::Host));
        line.extend(id.setpriv());
        line.extend(argv);
        (line, id.setpriv(), true)
    } else {
        (volumes::isolate(argv, &names, &mounts, workdir.as_deref()), Vec::new(), volumes::can_isolate())
    };
    Ok(Prepared {
        spec: container::Spec {
            argv,
            env: env.clone(),
            cwd: if isolated { None } else { workdir.as_ref().map(PathBuf::from) },
            stdin: c.stdin.unwrap_or(false),
        },
        exec: ExecTarget { pid: 0, ip: ip.to_string(), env, workdir, entry, confine },
        container: c,
        image,
        name,
    })
}

/// A machine's file an allowlisted image carries that is missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ImageFilesError(pub String);

/// The files an allowlisted image carries, as read-only mounts (before the container's volumes, which
/// cover them where they meet); a machine's file that is missing is the container's error.
fn image_files(entry: &allowlist::AllowEntry) -> Result<Vec<volumes::Mount>, ImageFilesError> {
    entry
        .files
        .iter()
        .map(|(at, machine)| {
            if !machine.is_file() {
                return Err(ImageFilesError(format!(
                    "the image's file {at} is {} on the node, which is missing",
                    machine.display()
                )));
            }
            Ok(volumes::Mount { source: machine.clone(), target: at.clone(), read_only: true })
        })
        .collect()
}

/// `nsenter --net=<the pod's namespace> --` for a pod of the bridged network off the host's network.
fn net_prefix(ctx: &Ctx, pod: &Pod) -> Vec<String> {
    if !ctx.options.network.bridged() || crate::pod_api::host_network(pod) {
        return Vec::new();
    }
    let path = crate::network::namespace_path(uid(pod));
    vec!["/usr/bin/nsenter".to_string(), format!("--net={}", path.display()), "--".to_string()]
}

/// Who a pod's writable volumes belong to: its first container's user, and its `fsGroup` (else that
/// user's group).
fn volume_owner(pod: &Pod) -> (u32, u32) {
    let spec = spec(pod);
    let pod_sc = spec.security_context.as_ref();
    let first = spec.init_containers.iter().flatten().chain(&spec.containers).next();
    let id = sandbox::Identity::of(pod_sc, first.and_then(|c| c.security_context.as_ref()));
    let gid = pod_sc.and_then(|p| p.fs_group).unwrap_or(id.gid);
    (id.uid as u32, gid as u32)
}

/// Hands a volume's directory (and what is in it, when it was someone else's) to `uid`:`gid`, group
/// writable.
fn give(dir: &Path, uid: u32, gid: u32) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(dir) else { return };
    if meta.uid() == uid && meta.gid() == gid {
        return;
    }
    hand_over(dir, uid, gid);
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o2775));
}

/// `lchown` of a directory and everything in it.
fn hand_over(dir: &Path, uid: u32, gid: u32) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        let _ = std::os::unix::fs::lchown(&p, Some(uid), Some(gid));
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
            stack.extend(std::fs::read_dir(&p).into_iter().flatten().flatten().map(|e| e.path()));
        }
    }
}

pub(crate) type PreparedPod = (Vec<Result<Prepared, Unprepared>>, Vec<Result<Prepared, Unprepared>>);

/// Everything a pod's containers need before they start: volumes written, environments computed.
/// Fails (`reason`, `message`) while a required ConfigMap or Secret is missing.
pub(crate) async fn prepare_pod(
    ctx: &Ctx,
    pod: &Pod,
    ip: &str,
    pod_dir: &Path,
) -> Result<PreparedPod, (String, String)> {
    let sources = read_sources(ctx, pod).await;
    let dirs = volumes::volume_dirs(pod, &ctx.options.volumes_dir, pod_dir);
    // Claims and emptyDirs are uc's to create; a hostPath is the machine's and must exist. In the
    // sandbox they belong to the pod's user (and its fsGroup), as a kubelet hands them over.
    let owner = ctx.options.sandbox.then(|| volume_owner(pod));
    for d in dirs.values().filter(|d| d.starts_with(&ctx.options.volumes_dir) || d.starts_with(pod_dir)) {
        let _ = std::fs::create_dir_all(d);
        if let Some((uid, gid)) = owner {
            give(d, uid, gid);
        }
    }
    let token = service_account_token(ctx, pod).await.map(|(t, _)| t);
    write_volumes(pod, ip, pod_dir, &sources, token.as_deref(), owner)
        .map_err(|m| ("ContainerCreating".to_string(), m.to_string()))?;
    let base = base_env(ctx, pod, ip);
    let prepare_all = |list: &[Container]| -> Result<Vec<_>, (String, String)> {
        let mut out = Vec::new();
        for c in list {
            let env = container_env(ctx, pod, c, ip, &base, &sources)
                .map_err(|m| ("CreateContainerConfigError".to_string(), m.to_string()))?;
            out.push(prepare(ctx, pod, c, ip, env, &dirs));
        }
        Ok(out)
    };
    let init = prepare_all(spec(pod).init_containers.as_deref().unwrap_or_default())?;
    let containers = prepare_all(&spec(pod).containers)?;
    Ok((init, containers))
}

/// The names of a pod's ephemeral containers.
pub(crate) fn ephemeral_names(pod: &Pod) -> Vec<String> {
    spec(pod).ephemeral_containers.iter().flatten().map(|c| c.name.clone()).collect()
}

/// The ephemeral containers of `pod` (`kubectl debug`) not among `started`, prepared to run in the
/// pod's volumes and environment.
pub(crate) async fn prepare_ephemeral(
    ctx: &Ctx,
    pod: &Pod,
    ip: &str,
    pod_dir: &Path,
    started: &[String],
    procs: &PodProcesses,
) -> Vec<Result<Prepared, Unprepared>> {
    let new: Vec<&EphemeralContainer> =
        spec(pod).ephemeral_containers.iter().flatten().filter(|c| !started.contains(&c.name)).collect();
    if new.is_empty() {
        return Vec::new();
    }
    let sources = read_sources(ctx, pod).await;
    let base = base_env(ctx, pod, ip);
    let dirs = volumes::volume_dirs(pod, &ctx.options.volumes_dir, pod_dir);
    new.into_iter()
        .map(|e| (e, as_container(e)))
        .map(|(e, c)| match container_env(ctx, pod, &c, ip, &base, &sources) {
            Ok(env) => prepare(ctx, pod, &c, ip, env, &dirs).map(|mut p| {
                // `kubectl debug --target`: in the target container's PID namespace, seeing its
                // processes, as a runtime shares it.
                let target = e.target_container_name.as_deref();
                if let Some(t) = target.filter(|_| ctx.options.sandbox).and_then(|t| procs.exec_target(t)) {
                    let pid = crate::container::command_process(t.pid);
                    p.spec.argv = sandbox::join_pid_namespace(std::mem::take(&mut p.spec.argv), pid);
                }
                p
            }),
            Err(m) => Err((c.name.clone(), ("CreateContainerConfigError".to_string(), m.to_string()))),
        })
        .collect()
}

/// An ephemeral container as the container it runs as (the fields they share).
fn as_container(e: &EphemeralContainer) -> Container {
    Container {
        name: e.name.clone(),
        image: e.image.clone(),
        command: e.command.clone(),
        args: e.args.clone(),
        env: e.env.clone(),
        env_from: e.env_from.clone(),
        working_dir: e.working_dir.clone(),
        volume_mounts: e.volume_mounts.clone(),
        security_context: e.security_context.clone(),
        stdin: e.stdin,
        stdin_once: e.stdin_once,
        tty: e.tty,
        resources: e.resources.clone(),
        image_pull_policy: e.image_pull_policy.clone(),
        termination_message_path: e.termination_message_path.clone(),
        termination_message_policy: e.termination_message_policy.clone(),
        ..Default::default()
    }
}

/// Keeps a pod's node-written volumes current: rewritten when a source or the pod changes.
pub(crate) async fn refresh_volumes(
    ctx: Arc<Ctx>,
    mut rx: watch::Receiver<Arc<HeldPod>>,
    ip: String,
    pod_dir: PathBuf,
) {
    let pod = rx.borrow().pod();
    if !spec(&pod).volumes.iter().flatten().any(volumes::is_projected) {
        return;
    }
    let ns = namespace(&pod).to_string();
    // One notification channel for every source: its forwarders end when this task does.
    let (notify_tx, mut notify) = tokio::sync::mpsc::channel::<()>(1);
    for (kind, name) in env::referenced(&pod).into_keys() {
        let mut source = ctx.objects.subscribe(kind, &ns, &name);
        let tx = notify_tx.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    changed = source.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        let _ = tx.try_send(());
                    }
                    _ = tx.closed() => return,
                }
            }
        });
    }
    drop(notify_tx);
    // A token is renewed when 80% of its lifetime has passed; one that could not be had is asked
    // for again a minute later.
    let retry = std::time::Duration::from_secs(60);
    let (mut token, mut renew_at) = match service_account_token(&ctx, &pod).await {
        Some((t, renew)) => (Some(t), tokio::time::Instant::now() + renew),
        None => (None, tokio::time::Instant::now() + retry),
    };
    loop {
        let mut renewing = false;
        tokio::select! {
            _ = notify.recv() => {}
            changed = rx.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep_until(renew_at), if token_source(&pod).is_some() => renewing = true,
        }
        let pod = rx.borrow().pod();
        if renewing {
            renew_at = tokio::time::Instant::now() + retry;
            if let Some((t, renew)) = service_account_token(&ctx, &pod).await {
                token = Some(t);
                renew_at = tokio::time::Instant::now() + renew;
            }
        }
        if crate::pod_api::is_deleting(&pod) {
            return;
        }
        let sources = read_sources(&ctx, &pod).await;
        let owner = ctx.options.sandbox.then(|| volume_owner(&pod));
        if let Err(e) = write_volumes(&pod, &ip, &pod_dir, &sources, token.as_deref(), owner) {
            tracing::debug!(pod = %name(&pod), error = %e, "a volume's source is gone; its files stay as they were");
        }
    }
}

/// The containers whose image changed run again from the new image.
pub(crate) async fn update_images(ctx: &Ctx, procs: &PodProcesses, old: &Pod, pod: &Pod, ip: &str, pod_dir: &Path) {
    let image_of =
        |p: &Pod, name: &str| spec(p).containers.iter().find(|c| c.name == name).and_then(|c| c.image.clone());
    let sources = read_sources(ctx, pod).await;
    let base = base_env(ctx, pod, ip);
    let dirs = volumes::volume_dirs(pod, &ctx.options.volumes_dir, pod_dir);
    let mut changed = Vec::new();
    for c in &spec(pod).containers {
        if image_of(old, &c.name) == image_of(pod, &c.name) {
            continue;
        }
        let Ok(env) = container_env(ctx, pod, c, ip, &base, &sources) else { continue };
        if let Ok(p) = prepare(ctx, pod, c, ip, env, &dirs) {
            changed.push(p);
        }
    }
    procs.update_images(changed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_projected_token_is_asked_for_the_pod_with_its_audience_and_lifetime() {
        let pod: Pod = typed(
            json!({"metadata": {"name": "p", "namespace": "n", "uid": "u1"}, "spec": {"containers": [], "volumes": [
                {"name": "c", "configMap": {"name": "x"}},
                {"name": "t", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token", "audience": "vault", "expirationSeconds": 7200}}]}}
            ]}}),
        );
        let source = token_source(&pod).expect("the projection is found");
        let req = serde_json::to_value(token_request(&pod, source)).unwrap();
        assert_eq!(req["spec"]["audiences"], json!(["vault"]));
        assert_eq!(req["spec"]["expirationSeconds"], json!(7200));
        assert_eq!(req["spec"]["boundObjectRef"], json!({"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "u1"}));
        let plain: Pod = typed(json!({"spec": {"containers": [], "volumes": [
            {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]}}));
        let req = serde_json::to_value(token_request(&plain, token_source(&plain).unwrap())).unwrap();
        assert_eq!(req["spec"]["expirationSeconds"], json!(3600));
        assert_eq!(req["spec"]["audiences"], json!([]), "the API server's own audience by default");
        assert!(token_source(&typed(json!({"spec": {"containers": []}}))).is_none());
    }

    #[test]
    fn an_images_files_are_read_only_mounts_and_a_missing_one_says_so() {
        let dir = std::env::temp_dir().join(format!("uc-node-image-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let server = dir.join("server.js");
        std::fs::write(&server, "// server").unwrap();
        let entry =
            allowlist::AllowEntry { files: vec![("/node/server.js".into(), server.clone())], ..Default::default() };
        let mounts = image_files(&entry).unwrap();
        assert_eq!(mounts.len(), 1);
        assert_eq!(
            (mounts[0].source.as_path(), mounts[0].target.as_str(), mounts[0].read_only),
            (server.as_path(), "/node/server.js", true)
        );
        let gone = allowlist::AllowEntry {
            files: vec![("/node/server.js".into(), dir.join("nowhere.js"))],
            ..Default::default()
        };
        let why = image_files(&gone).unwrap_err();
        assert!(
            why.0.contains("/node/server.js") && why.0.contains("nowhere.js") && why.0.contains("missing"),
            "{why}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
