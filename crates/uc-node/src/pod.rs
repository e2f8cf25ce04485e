//! The processes of one pod: init containers one after another, then every container, each restarted
//! by the pod's restartPolicy with back-off, probed, replaced when its image changes, and stopped
//! with SIGTERM then SIGKILL after the grace period. Each container runs through its shim
//! ([`crate::container`]), so it survives a restart of the node: the next node re-adopts it, and what
//! happened while the node was away (an exit) is taken in as if it had been watching.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use chrono::Utc;
use k8s_openapi::api::core::v1::{Container, Probe};
use parking_lot::Mutex;
use rustix::process::Signal;
use tokio::sync::{Notify, watch};

use crate::container::{self, ContainerDir, Run, State, signal_group, time_string};
use crate::events::Happened;
use crate::exec::ExecTarget;
use crate::probe;
pub use crate::status::ContainerState;

/// How long a container whose image changed gets to stop before SIGKILL.
const REPLACE_GRACE: Duration = Duration::from_secs(10);

/// One container, ready to run.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// Container name.
    pub name: String,
    /// Image.
    pub image: String,
    /// What the shim runs.
    pub spec: container::Spec,
    /// How `kubectl exec` and exec probes enter it.
    pub exec: ExecTarget,
    /// The container as the pod spec has it (probes).
    pub container: Container,
}

/// After a run ended with `code`: whether the restart policy runs it again.
pub fn should_restart(policy: &str, code: i64) -> bool {
    policy == "Always" || (policy == "OnFailure" && code != 0)
}

/// Restart back-off: 1 s doubling to 16 s (kube's is 10 s to 5 min; tests need it short).
pub fn backoff(restarts: u32) -> Duration {
    Duration::from_secs(1 << restarts.saturating_sub(1).min(4))
}

/// The shared state of a pod's processes.
pub struct PodProcesses {
    /// Per container.
    pub states: Mutex<HashMap<String, ContainerState>>,
    /// Signals a change worth a status update.
    pub changed: Notify,
    pod_dir: PathBuf,
    shim: PathBuf,
    stop: watch::Sender<bool>,
    by_node: AtomicBool,
    runs: Mutex<HashMap<String, (Run, ExecTarget)>>,
    replacements: Mutex<HashMap<String, Prepared>>,
    ready_before: HashSet<String>,
    live: AtomicUsize,
    ended: Notify,
    /// What happened since the pod's worker last recorded it as Events.
    events: Mutex<Vec<Happened>>,
    /// The pod as a kubelet names it in messages (`name_namespace(uid)`).
    words: String,
}

/// A container that cannot be prepared: its name, and why (`reason`, `message`).
pub type Unprepared = (String, (String, String));

/// A pod's containers as prepared: its init containers, then its containers.
pub type PodContainers = (Vec<Result<Prepared, Unprepared>>, Vec<Result<Prepared, Unprepared>>);

/// One task of the pod's that is under way (`stop` waits for all of them to end). Taken before the
/// task is spawned, so that no moment exists in which a task is about to run but not counted.
struct Live(Arc<PodProcesses>);

impl Live {
    fn new(p: &Arc<PodProcesses>) -> Live {
        p.live.fetch_add(1, Ordering::AcqRel);
        Live(p.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::AcqRel);
        self.0.ended.notify_waiters();
    }
}

impl PodProcesses {
    /// Starts (or re-adopts) the pod: its init containers one after another, each to success, then
    /// every container. `ready_before` are containers the pod's status showed Ready: a re-adopted one
    /// keeps being Ready until its probe says otherwise.
    pub fn start(
        pod_dir: PathBuf,
        shim: PathBuf,
        policy: String,
        (init, containers): PodContainers,
        ready_before: HashSet<String>,
        words: String,
    ) -> Arc<PodProcesses> {
        let procs = Arc::new(PodProcesses {
            states: Mutex::new(HashMap::new()),
            changed: Notify::new(),
            pod_dir,
            shim,
            stop: watch::channel(false).0,
            by_node: AtomicBool::new(false),
            runs: Mutex::new(HashMap::new()),
            replacements: Mutex::new(HashMap::new()),
            ready_before,
            live: AtomicUsize::new(0),
            ended: Notify::new(),
            events: Mutex::new(Vec::new()),
            words,
        });
        for c in init.iter().chain(&containers) {
            let name = match c {
                Ok(p) => p.name.clone(),
                Err((n, _)) => n.clone(),
            };
            procs.states.lock().insert(name, ContainerState::default());
        }
        let p = procs.clone();
        let live = Live::new(&p);
        tokio::spawn(async move {
            // A failed init container is run again unless the pod never restarts, as the kubelet does.
            let init_policy = if policy == "Never" { "Never" } else { "OnFailure" };
            for c in init {
                let c = match c {
                    Ok(c) => c,
                    Err((name, error)) => {
                        p.happened([Happened::failed(&name, &error.1)]);
                        p.set(&name, |s| s.start_error = Some(error));
                        return;
                    }
                };
                let name = c.name.clone();
                p.clone().supervise(c, init_policy.to_string(), Live::new(&p)).await;
                let ok = p.states.lock().get(&name).is_some_and(|s| s.last_exit.is_some_and(|(c, _, _)| c == 0));
                // Stopping, the containers are still taken in: one that runs (re-adopted after a
                // restart of the node) is stopped with the pod, and none starts.
                if !ok {
                    return;
                }
            }
            p.start_containers(containers, &policy);
            drop(live);
        });
        procs
    }

    fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// Notes what happened, for the pod's worker to record as Events.
    fn happened(&self, what: impl IntoIterator<Item = Happened>) {
        self.events.lock().extend(what);
        self.changed.notify_waiters();
    }

    /// The containers running now.
    pub fn running(&self) -> Vec<String> {
        self.runs.lock().keys().cloned().collect()
    }

    /// What happened since the last call.
    pub fn take_events(&self) -> Vec<Happened> {
        std::mem::take(&mut *self.events.lock())
    }

    /// The pid and entry of a running container, for exec.
    pub fn exec_target(&self, name: &str) -> Option<ExecTarget> {
        self.runs.lock().get(name).map(|(_, t)| t.clone())
    }

    /// The current run of a container (its log is that run's).
    pub fn current_run(&self, name: &str) -> Option<u32> {
        self.runs.lock().get(name).map(|(r, _)| r.n)
    }

    /// The directory of a container.
    pub fn container_dir(&self, name: &str) -> ContainerDir {
        ContainerDir::new(&self.pod_dir, name)
    }

    /// Supervises every container: a new run starts unless the pod is stopping; one still running
    /// from before a restart of the node is taken in (and stopped, when the pod is).
    fn start_containers(self: &Arc<Self>, containers: Vec<Result<Prepared, Unprepared>>, policy: &str) {
        for c in containers {
            let c = match c {
                Ok(c) => c,
                Err((name, error)) => {
                    self.set(&name, |s| s.start_error = Some(error));
                    continue;
                }
            };
            let name = c.name.clone();
            let container = Arc::new(c.container.clone());
            if let Some(p) = container.liveness_probe.clone() {
                tokio::spawn(self.clone().liveness(name.clone(), p, container.clone()));
            }
            if let Some(p) = container.readiness_probe.clone() {
                tokio::spawn(self.clone().readiness(name.clone(), p, container.clone()));
            }
            tokio::spawn(self.clone().supervise(c, policy.to_string(), Live::new(self)));
        }
        self.changed.notify_waiters();
    }

    /// Takes in what happened to a container while the node was away (no run to adopt): `true` when it
    /// is done for good (finished before, or its last run ended and is not restarted).
    async fn resume(&self, name: &str, dir: &ContainerDir, state: &mut State, policy: &str) -> bool {
        if state.done && !state.stopped_by_node {
            self.set(name, |s| {
                s.done = true;
                s.last_exit = state.last_exit();
                s.restarts = state.run;
                s.image = Some(state.image.clone());
            });
            return true;
        }
        if let Some(pid) = dir.pid(state.run) {
            // The run ended while the node was away: take it in as an exit.
            let (code, finished) = match dir.exit(state.run) {
                Some(e) => (e.exit_code, e.finished_at),
                None => {
                    container::kill_leftovers(&pid).await;
                    (137, time_string(Utc::now()))
                }
            };
            state.last_exit = Some((code, pid.started_at.clone(), finished));
            if !state.stopped_by_node && !should_restart(policy, code) {
                state.done = true;
                let _ = dir.write_state(state);
                self.set(name, |s| {
                    s.done = true;
                    s.last_exit = state.last_exit();
                    s.restarts = state.run;
                });
                return true;
            }
            state.run += 1;
        }
        false
    }

    /// Starts the container's next run, or `None` (the pod stopping, or the start failed: reported).
    async fn start_next(&self, c: &Prepared, dir: &ContainerDir, state: &mut State) -> Option<Run> {
        if self.stopping() {
            return None;
        }
        state.image = c.image.clone();
        state.done = false;
        state.stopped_by_node = false;
        let _ = dir.write_state(state);
        match start_run(&self.shim, dir, state.run, &c.spec).await {
            Ok(r) => {
                self.happened(Happened::started(&c.name, &c.image));
                Some(r)
            }
            Err(e) => {
                self.happened([Happened::failed(&c.name, &e.to_string())]);
                self.set(&c.name, |s| s.start_error = Some(("RunContainerError".into(), e.to_string())));
                None
            }
        }
    }

    /// Runs one container until it is done for good or the pod stops (`_live`: counted as under way
    /// from before it was spawned).
    async fn supervise(self: Arc<Self>, mut c: Prepared, policy: String, _live: Live) {
        let name = c.name.clone();
        let probed = c.container.readiness_probe.is_some();
        let dir = ContainerDir::new(&self.pod_dir, &name);
        let mut state = dir.state().unwrap_or_default();
        let mut next = if dir.locked() { container::adopt(&dir, state.run).await } else { None };
        let adopted = next.is_some();
        if next.is_none() && self.resume(&name, &dir, &mut state, &policy).await {
            return;
        }
        loop {
            let run = match next.take() {
                Some(r) => r,
                None => match self.start_next(&c, &dir, &mut state).await {
                    Some(r) => r,
                    None => return,
                },
            };
            dir.prune(run.n.saturating_sub(1));
            let target = ExecTarget { pid: run.pid.pid, ..c.exec.clone() };
            self.runs.lock().insert(name.clone(), (run.clone(), target));
            let ready = !probed || (adopted && run.n == state.run && self.ready_before.contains(&name));
            self.set(&name, |s| {
                s.running_since = Some(run.started);
                s.restarts = run.n;
                s.start_error = None;
                s.image = Some(state.image.clone());
                s.last_exit = state.last_exit();
                s.ready = ready;
            });
            if self.stopping() {
                self.terminate(&run.pid, Duration::from_secs(30));
            }
            let (code, finished) = container::wait(&dir, &run).await;
            self.runs.lock().remove(&name);
            state.last_exit = Some((code, run.pid.started_at.clone(), time_string(finished)));
            let replacement = if self.stopping() { None } else { self.replacements.lock().remove(&name) };
            let stopping = self.stopping();
            let restart = replacement.is_some() || (!stopping && should_restart(&policy, code));
            let by_node = stopping && self.by_node.load(Ordering::Acquire);
            state.done = !restart && !by_node;
            state.stopped_by_node = by_node;
            let _ = dir.write_state(&state);
            self.set(&name, |s| {
                s.running_since = None;
                s.ready = false;
                s.last_exit = state.last_exit();
                s.done = state.done;
            });
            if !restart {
                return;
            }
            match replacement {
                // A new image starts at once, keeping the pod and its volumes.
                Some(r) => c = r,
                None => {
                    self.happened([Happened::back_off(&name, &self.words)]);
                    let mut stop = self.stop.subscribe();
                    tokio::select! {
                        _ = tokio::time::sleep(backoff(run.n + 1)) => {}
                        _ = stop.wait_for(|s| *s) => {}
                    }
                    if self.stopping() {
                        return;
                    }
                }
            }
            state.run += 1;
        }
    }

    /// Starts an ephemeral container (`kubectl debug`): run once, never restarted, beside the pod's
    /// containers.
    pub fn add_ephemeral(self: &Arc<Self>, c: Result<Prepared, Unprepared>) {
        match c {
            Ok(c) => {
                self.states.lock().entry(c.name.clone()).or_default();
                if !self.stopping() {
                    tokio::spawn(self.clone().supervise(c, "Never".into(), Live::new(self)));
                }
            }
            Err((name, error)) => {
                self.states.lock().entry(name.clone()).or_default();
                self.set(&name, |s| s.start_error = Some(error));
            }
        }
        self.changed.notify_waiters();
    }

    /// SIGTERM to a container's process group now, SIGKILL after `grace` if that process still runs.
    fn terminate(&self, record: &container::PidRecord, grace: Duration) {
        signal_group(crate::container::stop_group(record.pid), Signal::TERM);
        let record = record.clone();
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            if container::still_running(&record) {
                signal_group(record.pid, Signal::KILL);
            }
        });
    }

    /// Runs the containers whose image changed from their new image, as the kubelet does: the only
    /// change a running pod's spec may take. The pod's volumes are kept.
    pub fn update_images(&self, changed: Vec<Prepared>) {
        for c in changed {
            tracing::info!(container = %c.name, image = %c.image, "image changed; restarting the container");
            let record = self.runs.lock().get(&c.name).map(|(r, _)| r.pid.clone());
            self.replacements.lock().insert(c.name.clone(), c.clone());
            if let Some(record) = record {
                self.happened([Happened::killing(&c.name)]);
                self.terminate(&record, REPLACE_GRACE);
            }
        }
    }

    fn set(&self, name: &str, f: impl FnOnce(&mut ContainerState)) {
        f(self.states.lock().entry(name.to_string()).or_default());
        self.changed.notify_waiters();
    }

    async fn readiness(self: Arc<Self>, name: String, spec: Probe, container: Arc<Container>) {
        let p = probe::Settings::of(&spec);
        tokio::time::sleep(p.initial_delay).await;
        let (mut ok_run, mut fail_run) = (0u32, 0u32);
        while !self.stopping() {
            let target = self.exec_target(&name);
            let ok = match &target {
                Some(t) => match probe::run(&spec, &container, t, p.timeout).await {
                    Ok(()) => true,
                    Err(why) => {
                        self.happened([Happened::unhealthy(&name, "Readiness", &why.0)]);
                        false
                    }
                },
                None => false,
            };
            if ok {
                ok_run += 1;
                fail_run = 0;
            } else {
                fail_run += 1;
                ok_run = 0;
            }
            let current = self.states.lock().get(&name).is_some_and(|s| s.ready);
            if !current && ok_run >= p.success_threshold {
                self.set(&name, |s| s.ready = s.running_since.is_some());
            } else if current && (fail_run >= p.failure_threshold || target.is_none()) {
                self.set(&name, |s| s.ready = false);
            }
            tokio::time::sleep(p.period).await;
        }
    }

    /// Liveness: after `failureThreshold` failed probes in a row the container is killed; the
    /// restartPolicy then restarts it (bumping restartCount), as the kubelet does.
    async fn liveness(self: Arc<Self>, name: String, spec: Probe, container: Arc<Container>) {
        let p = probe::Settings::of(&spec);
        let mut since = None;
        let mut failures = 0u32;
        while !self.stopping() {
            tokio::time::sleep(p.period).await;
            let Some(target) = self.exec_target(&name) else {
                failures = 0;
                continue;
            };
            let started = self.states.lock().get(&name).and_then(|s| s.running_since);
            if since != started {
                // A new run: wait its initial delay, and count afresh.
                since = started;
                failures = 0;
                tokio::time::sleep(p.initial_delay).await;
            }
            failures = match probe::run(&spec, &container, &target, p.timeout).await {
                Ok(()) => 0,
                Err(why) => {
                    self.happened([Happened::unhealthy(&name, "Liveness", &why.0)]);
                    failures + 1
                }
            };
            if failures >= p.failure_threshold {
                tracing::info!(container = %name, pid = target.pid, "liveness probe failed; killing the container");
                self.happened([Happened::killed_for_liveness(&name)]);
                signal_group(target.pid, Signal::KILL);
                failures = 0;
            }
        }
    }

    /// Stops every process: SIGTERM, then SIGKILL after `grace`; returns once all have ended. `by_node`:
    /// the node is shutting down (the containers run again when it is back).
    pub async fn stop(&self, grace: Duration, by_node: bool) {
        self.by_node.store(by_node, Ordering::Release);
        self.stop.send_replace(true);
        let pids: Vec<i32> = self.runs.lock().values().map(|(r, _)| r.pid.pid).collect();
        for pid in &pids {
            signal_group(crate::container::stop_group(*pid), Signal::TERM);
        }
        self.wait_ended(grace).await;
        let pids: Vec<i32> = self.runs.lock().values().map(|(r, _)| r.pid.pid).collect();
        for pid in pids {
            signal_group(pid, Signal::KILL);
        }
        self.wait_ended(Duration::from_secs(10)).await;
    }

    async fn wait_ended(&self, at_most: Duration) {
        let deadline = tokio::time::Instant::now() + at_most;
        while self.live.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < deadline {
            tokio::select! {
                _ = self.ended.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }
}

/// Starts a run; a shim of the previous run that is still letting go of the lock (a moment after its
/// process ended) is waited for.
async fn start_run(
    shim: &std::path::Path,
    dir: &ContainerDir,
    n: u32,
    spec: &container::Spec,
) -> Result<Run, container::StartError> {
    for _ in 0..50 {
        match container::start(shim, dir, n, spec).await {
            Err(container::StartError::Running) => tokio::time::sleep(Duration::from_millis(100)).await,
            done => return done,
        }
    }
    Err(container::StartError::Running)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_pod_stopped_before_its_tasks_ran_still_stops_the_container_it_takes_in() {
        let pod_dir = std::env::temp_dir().join(format!("uc-pod-stop-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&pod_dir);
        let (_shim, record) = container::stand_in::running(&pod_dir, "c");
        let prepared = Prepared {
            name: "c".into(),
            image: "sleep".into(),
            spec: container::Spec { argv: vec!["sleep".into()], env: vec![], cwd: None, stdin: false },
            exec: ExecTarget::default(),
            container: Container { name: "c".into(), ..Default::default() },
        };
        // The node re-adopts the pod and stops at once: on this single-threaded runtime no task of the
        // pod has run before `stop` (the moment a race left such a container running).
        let procs = PodProcesses::start(
            pod_dir.clone(),
            "no-shim".into(),
            "Always".into(),
            (vec![], vec![Ok(prepared)]),
            HashSet::new(),
            String::new(),
        );
        tokio::time::timeout(Duration::from_secs(20), procs.stop(Duration::from_secs(5), true))
            .await
            .expect("stop ends");
        assert!(!container::still_running(&record), "the container it took in stopped with the pod");
        let state = ContainerDir::new(&pod_dir, "c").state().unwrap();
        assert!(state.stopped_by_node && !state.done, "marked stopped by the node, to run again: {state:?}");
        let _ = std::fs::remove_dir_all(&pod_dir);
    }

    #[test]
    fn restart_policy_and_backoff() {
        assert!(should_restart("Always", 0));
        assert!(should_restart("OnFailure", 2));
        assert!(!should_restart("OnFailure", 0));
        assert!(!should_restart("Never", 1));
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(4));
        assert_eq!(backoff(40), Duration::from_secs(16));
    }
}
