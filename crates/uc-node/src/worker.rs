//! The worker of a pod that runs as processes: it prepares the pod, starts its containers (or takes in
//! those a restarted node left running), keeps its status, and stops it when it goes.
//!
//! A worker that panics runs again ([`keep_running`]). A kubelet whose pod worker panics crashes
//! (client-go's `HandleCrash` panics again), is started again by its supervisor and takes the running
//! containers in; uc's node is one process with the control plane, so only that pod's worker starts
//! again, with the processes it had started. A pod whose worker ended with a panic would go unmanaged —
//! its status frozen and its deletion never finished.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use tokio::sync::watch;
use uc_api::panics::{Panicked, unwound};

use crate::context::Ctx;
use crate::held_pod::HeldPod;
use crate::pod::PodProcesses;
use crate::pod_api::{
    self, finish_deletion, has_status, is_deleting, key_of, name, namespace, patch_status, pod_ip, spec, uid,
};
use crate::prepare::{self, ephemeral_names, prepare_ephemeral, prepare_pod, refresh_volumes, update_images};
use crate::{container, events, host_ports, network, status};

/// The longest wait before a worker that panicked runs again.
const MOST_BACKOFF: Duration = Duration::from_secs(30);

/// Runs a pod's worker until the pod is done with; a run that panics is logged, recorded as a
/// `FailedSync` Event on the pod, and followed by another after a back-off (1 s doubling to 30 s).
pub(crate) async fn keep_running(ctx: Arc<Ctx>, rx: watch::Receiver<Arc<HeldPod>>) {
    until_it_returns(
        &mut Done::default(),
        |done| Box::pin(run(ctx.clone(), rx.clone(), done)),
        |panicked, panics| {
            let (ctx, pod) = (ctx.clone(), rx.borrow().pod());
            Box::pin(async move {
                tracing::error!(pod = %events::pod_words(&pod), "the pod's worker panicked: {panicked}; it runs again");
                ctx.events.record(&pod, &events::Happened::failed_sync(&panicked)).await;
                tokio::time::sleep(backoff(panics)).await;
            })
        },
    )
    .await;
}

/// Runs `once` until a run returns; a run that panics is followed by `after_panic` (with how many
/// panicked before it) and another run. The runs share `state`.
async fn until_it_returns<S>(
    state: &mut S,
    mut once: impl FnMut(&mut S) -> BoxFuture<'_, ()>,
    mut after_panic: impl FnMut(Panicked, u32) -> BoxFuture<'static, ()>,
) {
    let mut panics = 0u32;
    while let Err(panicked) = unwound(once(state)).await {
        after_panic(panicked, panics).await;
        panics = panics.saturating_add(1);
    }
}

/// The wait before the run that follows the `panics`-th panic (counted from 0).
fn backoff(panics: u32) -> Duration {
    Duration::from_secs(1 << panics.min(5)).min(MOST_BACKOFF)
}

/// What a pod's worker did to its processes, kept across its runs: a run after a panic goes on from
/// there (no container restarted, no ephemeral container started twice).
#[derive(Default)]
struct Done {
    /// The pod as its processes run it: its containers' images.
    running: Option<Arc<Pod>>,
    /// The ephemeral containers started.
    ephemeral: Vec<String>,
}

/// Prepares a pod's containers (volumes, environment, network), reporting why it waits in
/// ContainerCreating and trying again on a change or every 2 s; `None` when the pod goes first.
async fn prepare_until_ready(
    ctx: &Ctx,
    rx: &mut watch::Receiver<Arc<HeldPod>>,
    uid: &str,
    ip: &str,
    pod_dir: &std::path::Path,
) -> Option<prepare::PreparedPod> {
    loop {
        let pod = rx.borrow_and_update().pod();
        if is_deleting(&pod) && !container_dirs_exist(pod_dir) {
            finish_deletion(&ctx.client, &pod).await;
            release(ctx, uid, pod_dir).await;
            return None;
        }
        let prepared = match prepare_pod(ctx, &pod, ip, pod_dir).await {
            Ok(p) => wire(ctx, &pod, ip).await.map(|()| p),
            Err(e) => Err(e),
        };
        match prepared {
            Ok(p) => return Some(p),
            Err((reason, message)) => {
                let status = status::waiting_status(&pod, ip, &reason, &message);
                if !has_status(&pod, &status) {
                    let _ = patch_status(&ctx.client, (namespace(&pod), name(&pod)), &status).await;
                }
                tokio::select! {
                    changed = rx.changed() => if changed.is_err() { return None },
                    _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                }
            }
        }
    }
}

/// One run of a pod's worker.
async fn run(ctx: Arc<Ctx>, mut rx: watch::Receiver<Arc<HeldPod>>, done: &mut Done) {
    let first = rx.borrow().pod();
    let uid = uid(&first).to_string();
    let key = key_of(&first);
    let ip = ctx.ips.lock().get(&uid, pod_ip(&first));
    let pod_dir = ctx.options.pods_dir.join(&uid);
    // Until its volumes and environment can be made, the pod waits in ContainerCreating.
    let Some((init, containers)) = prepare_until_ready(&ctx, &mut rx, &uid, &ip, &pod_dir).await else { return };
    let policy = spec(&first).restart_policy.clone().unwrap_or_else(|| "Always".into());
    let ready_before: HashSet<String> = status::ready_containers(&first).into_iter().collect();
    let words = events::pod_words(&first);
    let start = || {
        PodProcesses::start(pod_dir.clone(), ctx.options.shim.clone(), policy, (init, containers), ready_before, words)
    };
    // The node is going: nothing new starts. A run after a panic finds the processes started.
    let Some(procs) = ctx.started.lock().start(&rx, &uid, start) else { return };
    let fresh = done.running.is_none();
    // Closed when the worker ends with its pod.
    let _host_ports = (ctx.options.network.bridged() && !pod_api::host_network(&first))
        .then(|| ip.parse().ok().map(|addr| host_ports::serve(&first, addr)));
    if let Some(e) = ctx.pods.lock().get_mut(&key).filter(|e| e.pod.uid() == uid) {
        e.procs = Some(procs.clone());
        e.ip = ip.clone();
    }
    if fresh {
        tokio::spawn(refresh_volumes(ctx.clone(), rx.clone(), ip.clone(), pod_dir.clone()));
    }
    let running = done.running.get_or_insert_with(|| first.clone());
    loop {
        let pod = rx.borrow_and_update().pod();
        if spec(&pod).containers != spec(running).containers {
            update_images(&ctx, &procs, running, &pod, &ip, &pod_dir).await;
            *running = pod.clone();
        }
        if !is_deleting(&pod) {
            for c in prepare_ephemeral(&ctx, &pod, &ip, &pod_dir, &done.ephemeral, &procs).await {
                procs.add_ephemeral(c);
            }
            done.ephemeral = ephemeral_names(&pod);
        }
        if is_deleting(&pod) {
            // `Killing` is recorded as the containers are told to stop, not once they have.
            for container in procs.running() {
                ctx.events.record(&pod, &events::Happened::killing(&container)).await;
            }
            procs.stop(Duration::from_secs(grace_of(&pod)), false).await;
            finish_deletion(&ctx.client, &pod).await;
            release(&ctx, &uid, &pod_dir).await;
            return;
        }
        for happened in procs.take_events() {
            ctx.events.record(&pod, &happened).await;
        }
        let states = procs.states.lock().clone();
        let status = status::pod_status(&pod, &states, &ip);
        if !has_status(&pod, &status)
            && let Err(e) = patch_status(&ctx.client, (namespace(&pod), name(&pod)), &status).await
        {
            if matches!(&e, kube::Error::Api(s) if s.code == 404) {
                if !ctx.shutting_down.load(Ordering::Acquire) {
                    procs.stop(Duration::ZERO, false).await;
                    release(&ctx, &uid, &pod_dir).await;
                }
                return;
            }
            tracing::debug!(error = %crate::pod_api::said(&e), "status update failed; retrying");
        }
        tokio::select! {
            changed = rx.changed() => if changed.is_err() {
                // The pod is gone (deleted without grace, or while the node was away) — unless the
                // node is shutting down, which stops the pod its own way.
                if !ctx.shutting_down.load(Ordering::Acquire) {
                    procs.stop(Duration::ZERO, false).await;
                    release(&ctx, &uid, &pod_dir).await;
                }
                return;
            },
            _ = procs.changed.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// Gives a pod of the bridged network its namespace on the bridge (a pod on the host's network, and
/// every pod of the loopback network, has the machine's).
async fn wire(ctx: &Ctx, pod: &Pod, ip: &str) -> Result<(), (String, String)> {
    let network::Network::Bridged(cidr) = ctx.options.network else { return Ok(()) };
    if pod_api::host_network(pod) {
        return Ok(());
    }
    let failed = |m: String| ("FailedCreatePodSandBox".to_string(), format!("setting up the pod's network: {m}"));
    let addr = ip.parse().map_err(|_| failed(format!("{ip:?} is not an IPv4 address")))?;
    let open = ctx.wiring.read().await;
    if !*open {
        return Err(failed("the node is stopping".into()));
    }
    network::host::attach(&cidr, uid(pod), addr).await.map_err(|e| failed(e.0))
}

/// What a pod this node ran leaves behind goes: its directory, its network namespace, its address.
async fn release(ctx: &Ctx, uid: &str, pod_dir: &Path) {
    ctx.started.lock().remove(uid);
    kill_containers(pod_dir, "killing a container left running by a pod that is done").await;
    let _ = std::fs::remove_dir_all(pod_dir);
    if let network::Network::Bridged(cidr) = ctx.options.network {
        network::host::detach(&cidr, uid).await;
    }
    ctx.ips.lock().forget(uid);
}

/// How long a pod's containers get to stop: its deletion's grace period, else its spec's, else 30 s.
pub(crate) fn grace_of(pod: &Pod) -> u64 {
    let seconds = pod.metadata.deletion_grace_period_seconds.or(spec(pod).termination_grace_period_seconds);
    seconds.and_then(|s| u64::try_from(s).ok()).unwrap_or(30)
}

/// Kills the containers of a pod directory whose shims still run (saying `why`): their records are
/// about to go, and a process nobody has a record of would run on unseen.
pub(crate) async fn kill_containers(pod_dir: &Path, why: &str) {
    for c in std::fs::read_dir(pod_dir).into_iter().flatten().flatten() {
        let dir = container::ContainerDir::new(pod_dir, &c.file_name().to_string_lossy());
        if !dir.locked() {
            continue;
        }
        if let Some(record) = dir.state().and_then(|s| dir.pid(s.run)) {
            tracing::info!(container = %dir.path().display(), pid = record.pid, "{why}");
            container::kill_leftovers(&record).await;
        }
    }
}

/// Whether any container of the pod has left records (it ran, and may run still).
fn container_dirs_exist(pod_dir: &Path) -> bool {
    std::fs::read_dir(pod_dir).into_iter().flatten().flatten().any(|e| e.path().join("state.json").exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_that_panics_is_followed_by_another_that_goes_on_from_what_it_did() {
        let mut started: Vec<u32> = Vec::new();
        let reported = Arc::new(parking_lot::Mutex::new(Vec::new()));
        until_it_returns(
            &mut started,
            |started| {
                Box::pin(async move {
                    started.push(started.len() as u32);
                    if started.len() < 3 {
                        panic!("run {} failed", started.len());
                    }
                })
            },
            |p, panics| {
                let reported = reported.clone();
                Box::pin(async move { reported.lock().push((p.0, panics)) })
            },
        )
        .await;
        assert_eq!(started, [0, 1, 2], "three runs, each seeing what the ones before did");
        assert_eq!(*reported.lock(), [("run 1 failed".to_string(), 0), ("run 2 failed".to_string(), 1)]);
    }

    #[test]
    fn the_wait_after_a_panic_doubles_to_thirty_seconds() {
        let waits: Vec<u64> = (0..8).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(backoff(u32::MAX), MOST_BACKOFF);
    }

    #[tokio::test]
    async fn a_pods_records_go_only_after_its_containers() {
        let pod_dir = std::env::temp_dir().join(format!("uc-release-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&pod_dir);
        let (_shim, record) = container::stand_in::running(&pod_dir, "c");
        kill_containers(&pod_dir, "test").await;
        assert!(!container::still_running(&record), "a container whose shim still ran is killed");
        let _ = std::fs::remove_dir_all(&pod_dir);
    }
}
