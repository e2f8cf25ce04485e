//! Where a JavaScript hook's scripts run: never for long on the async runtime's workers, so a script that
//! spins until its deadline holds one thread and nothing else — the API server, the node and the other
//! controllers keep their workers.
//!
//! A call runs on its caller's thread when that thread may block (a multi-threaded runtime's): at first
//! on the worker itself — no thread hand-off, no wake-up, for the common call of a few microseconds —
//! and, once it has run [`LEAVE_AFTER`], it hands the worker's queue to another thread
//! ([`tokio::task::block_in_place`]) and goes on as a plain thread. The call notices the time itself:
//! [`leave_worker_if_due`], which the JavaScript runtime's interrupt handler calls while a script runs
//! and the request's conversion calls per object. Otherwise — on a current-thread runtime, or while all
//! the hook's states are busy — it waits in the hook's queue for a thread of the hook's own, without
//! blocking its caller's worker. Either way at most `max` calls run at once (the hook's concurrency
//! bound), each on a state `S` of its own (a script's runtime) that later calls reuse; threads start when
//! calls queue and end after `idle` without work, and a state unused for `idle` is dropped (its memory
//! freed) when a call or a thread next looks.

use std::cell::Cell;
use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::runtime::{Handle, RuntimeFlavor};

type Task<S> = Box<dyn FnOnce(&mut S) + Send>;

/// At most `max` calls at once, each on a state `S` made by `make` when none is spare.
pub(super) struct Threads<S: Send + 'static> {
    queue: Arc<Queue<S>>,
    name: String,
}

struct Queue<S> {
    state: Mutex<State<S>>,
    ready: Condvar,
    max: usize,
    idle: Duration,
    make: Box<dyn Fn() -> S + Send + Sync>,
}

struct State<S> {
    tasks: VecDeque<Task<S>>,
    /// States no call holds, each with when it was last used (the most recent last).
    spare: Vec<(S, Instant)>,
    /// Calls running, here or on the threads.
    busy: usize,
    live: usize,
    idle: usize,
    closed: bool,
}

/// The call panicked, or the threads are gone.
#[derive(Debug)]
pub(super) struct Lost;

impl<S: Send + 'static> Threads<S> {
    /// At most `max` calls at once; threads named `name` end, and states are dropped, after `idle`
    /// without use.
    pub(super) fn new(max: usize, idle: Duration, name: &str, make: impl Fn() -> S + Send + Sync + 'static) -> Self {
        let state = State { tasks: VecDeque::new(), spare: Vec::new(), busy: 0, live: 0, idle: 0, closed: false };
        let queue =
            Queue { state: Mutex::new(state), ready: Condvar::new(), max: max.max(1), idle, make: Box::new(make) };
        Threads { queue: Arc::new(queue), name: name.to_string() }
    }

    /// Runs `f` on a state: on this thread if it may block and a state is free, otherwise on one of
    /// the hook's threads, awaited without blocking the caller's thread.
    pub(super) async fn run<R: Send + 'static>(&self, f: impl FnOnce(&mut S) -> R + Send + 'static) -> Result<R, Lost> {
        if may_block_here()
            && let Some(state) = self.queue.claim()
        {
            let _inline = OnWorker::begin();
            return self.queue.run_claimed(state, f);
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(Box::new(move |s| {
            let _ = tx.send(f(s));
        }));
        rx.await.map_err(|_| Lost)
    }

    /// Runs `f` on one of the hook's threads and blocks until it is done (for callers outside async code).
    pub(super) fn run_blocking<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut S) -> R + Send + 'static,
    ) -> Result<R, Lost> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.submit(Box::new(move |s| {
            let _ = tx.send(f(s));
        }));
        rx.recv().map_err(|_| Lost)
    }

    /// How many threads run now.
    #[cfg(test)]
    pub(super) fn live(&self) -> usize {
        self.queue.state.lock().live
    }

    /// How many calls wait for a thread.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        self.queue.state.lock().tasks.len()
    }

    /// How many states are kept for later calls.
    #[cfg(test)]
    pub(super) fn spare(&self) -> usize {
        self.queue.state.lock().spare.len()
    }

    fn submit(&self, task: Task<S>) {
        let mut st = self.queue.state.lock();
        st.tasks.push_back(task);
        if st.idle < st.tasks.len() && st.live < self.queue.max {
            let queue = self.queue.clone();
            let started = std::thread::Builder::new().name(self.name.clone()).spawn(move || work(queue));
            if started.is_ok() {
                st.live += 1;
            }
        }
        drop(st);
        self.queue.ready.notify_one();
    }
}

impl<S: Send + 'static> Drop for Threads<S> {
    fn drop(&mut self) {
        self.queue.state.lock().closed = true;
        self.queue.ready.notify_all();
    }
}

/// How long a call runs on its caller's worker before it hands the worker's queue to another thread: far
/// above a hook's usual call (tens of microseconds), far below what the worker's other tasks would notice.
pub(super) const LEAVE_AFTER: Duration = Duration::from_millis(2);

/// How long a call that leaves its worker waits for another thread to take the worker's queue up (left
/// untaken, the queue would come back to it at once).
const HANDOFF_WAIT: Duration = Duration::from_millis(1);

thread_local! {
    /// The call running on this thread's worker, if any: when it started, and at what age it next
    /// hands the worker's queue on.
    static ON_WORKER: Cell<Option<(Instant, Duration)>> = const { Cell::new(None) };
}

/// Marks a call running on its caller's worker, until dropped.
struct OnWorker(Option<(Instant, Duration)>);

impl OnWorker {
    fn begin() -> Self {
        OnWorker(ON_WORKER.replace(Some((Instant::now(), LEAVE_AFTER))))
    }
}

impl Drop for OnWorker {
    fn drop(&mut self) {
        ON_WORKER.set(self.0);
    }
}

/// When the call under way on this thread has run on its caller's worker for [`LEAVE_AFTER`]: hands
/// the worker's queue to another thread, so that the rest of the call holds this thread alone. Tried
/// again at each doubling of the call's age (a hand-off no thread took up in time leaves the queue
/// here), which costs a call that has long left [`HANDOFF_WAIT`] per doubling. Anywhere else, nothing.
pub(super) fn leave_worker_if_due() {
    let Some((started, due)) = ON_WORKER.get() else { return };
    let age = started.elapsed();
    if age < due {
        return;
    }
    ON_WORKER.set(Some((started, age * 2)));
    tokio::task::block_in_place(|| std::thread::sleep(HANDOFF_WAIT));
}

/// Whether this thread may block under `block_in_place`: a multi-threaded runtime's (its worker's
/// queue then moves to another thread). A current-thread runtime has only its one thread, and
/// `block_in_place` refuses it.
fn may_block_here() -> bool {
    Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread)
}

impl<S> Queue<S> {
    /// A state for a call on the caller's thread, if one may run now and none waits before it.
    fn claim(&self) -> Option<Option<S>> {
        let mut st = self.state.lock();
        if st.busy >= self.max || !st.tasks.is_empty() {
            return None;
        }
        st.busy += 1;
        Some(st.spare.pop().map(|(s, _)| s))
    }

    /// Runs `f` on a claimed state (made now if there was none spare), then gives the state back.
    fn run_claimed<R>(&self, state: Option<S>, f: impl FnOnce(&mut S) -> R) -> Result<R, Lost> {
        let mut state = state.unwrap_or_else(|| (self.make)());
        let out = std::panic::catch_unwind(AssertUnwindSafe(|| f(&mut state)));
        // A state a panic left half-changed is dropped, not reused.
        self.give_back(out.is_ok().then_some(state));
        out.map_err(|_| Lost)
    }

    /// Ends a call: its state kept for the next one, states unused for `idle` dropped (outside the
    /// lock), and a queued call told that it may run.
    fn give_back(&self, state: Option<S>) {
        let mut st = self.state.lock();
        st.busy -= 1;
        if let Some(s) = state {
            st.spare.push((s, Instant::now()));
        }
        let dropped = st.stale(self.idle);
        let waiting = !st.tasks.is_empty();
        drop(st);
        drop(dropped);
        if waiting {
            self.ready.notify_one();
        }
    }
}

impl<S> State<S> {
    /// The spare states unused for `idle`, taken out to be dropped once the lock is released.
    fn stale(&mut self, idle: Duration) -> Vec<(S, Instant)> {
        let now = Instant::now();
        let n = self.spare.iter().take_while(|(_, used)| now.duration_since(*used) > idle).count();
        self.spare.drain(..n).collect()
    }
}

/// A thread's life: queued calls in turn, while fewer than `max` run, until the queue closes or no
/// call comes for `idle`.
fn work<S>(queue: Arc<Queue<S>>) {
    let mut st = queue.state.lock();
    loop {
        if st.busy < queue.max
            && let Some(task) = st.tasks.pop_front()
        {
            st.busy += 1;
            let state = st.spare.pop().map(|(s, _)| s);
            drop(st);
            let _ = queue.run_claimed(state, task);
            st = queue.state.lock();
            continue;
        }
        if st.closed {
            break;
        }
        st.idle += 1;
        let waited = queue.ready.wait_for(&mut st, queue.idle);
        st.idle -= 1;
        if waited.timed_out() && st.tasks.is_empty() {
            break;
        }
    }
    st.live -= 1;
    let dropped = st.stale(queue.idle);
    drop(st);
    drop(dropped);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// A gate calls wait at until it opens.
    #[derive(Clone, Default)]
    struct Gate(Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>);

    impl Gate {
        fn wait(&self) {
            let (lock, cv) = &*self.0;
            let _open = cv.wait_while(lock.lock().unwrap(), |open| !*open).unwrap();
        }
        /// Waits as a script does: looking now and then whether its call is due to leave the worker.
        fn wait_leaving(&self) {
            while !*self.0.0.lock().unwrap() {
                leave_worker_if_due();
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        fn open(&self) {
            *self.0.0.lock().unwrap() = true;
            self.0.1.notify_all();
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn on_a_current_thread_runtime_calls_run_on_threads_and_wait_while_every_one_is_busy() {
        let made = Arc::new(AtomicUsize::new(0));
        let m = made.clone();
        let threads = Threads::new(2, Duration::from_millis(200), "test-js", move || m.fetch_add(1, Ordering::SeqCst));
        let caller = std::thread::current().id();
        let ran_on = threads.run(|_| std::thread::current().id()).await.unwrap();
        assert_ne!(ran_on, caller, "not on the calling thread");
        // Three calls that each hold a thread until the gate opens: two run, the third waits for one.
        let (gate, running) = (Gate::default(), Arc::new(AtomicUsize::new(0)));
        let calls: Vec<_> = (0..3)
            .map(|_| {
                let (gate, running) = (gate.clone(), running.clone());
                threads.run(move |_| {
                    running.fetch_add(1, Ordering::SeqCst);
                    gate.wait();
                })
            })
            .collect();
        let all = futures::future::join_all(calls);
        tokio::pin!(all);
        // The caller's thread is free meanwhile: this task runs on it while the others block.
        let waited = tokio::time::timeout(Duration::from_millis(300), &mut all).await;
        assert!(waited.is_err(), "held by the gate");
        assert_eq!(running.load(Ordering::SeqCst), 2, "two calls at most");
        assert_eq!(threads.live(), 2);
        gate.open();
        assert!(all.await.iter().all(Result::is_ok));
        assert_eq!(running.load(Ordering::SeqCst), 3, "the third ran once a thread was free");
        assert_eq!(made.load(Ordering::SeqCst), 2, "two states, reused");
        // Idle threads end and unused states are dropped; the next call starts a thread again.
        for _ in 0..100 {
            if threads.live() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(threads.live(), 0, "idle threads ended");
        assert_eq!(threads.spare(), 0, "their states dropped");
        assert_eq!(threads.run_blocking(|n| *n).map(|_| ()).ok(), Some(()));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn on_a_multi_threaded_runtime_a_call_runs_on_its_caller_and_the_worker_keeps_serving() {
        let threads = Arc::new(Threads::new(2, Duration::from_secs(5), "test-js", || 0u32));
        let caller = std::thread::current().id();
        assert_eq!(threads.run(|_| std::thread::current().id()).await.unwrap(), caller, "no hand-off");
        // A call that waits until the gate opens, looking whether it is due to leave as a script's
        // interrupt handler does, on a task of the runtime's only worker: once it has left, the worker's
        // other tasks run meanwhile (one of them opens the gate).
        let gate = Gate::default();
        let (t, g) = (threads.clone(), gate.clone());
        let blocked = tokio::spawn(async move {
            t.run(move |n| {
                g.wait_leaving();
                *n += 1;
                *n
            })
            .await
        });
        let served = Arc::new(AtomicBool::new(false));
        let s = served.clone();
        let other = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            s.store(true, Ordering::SeqCst);
            gate.open();
        });
        other.await.unwrap();
        assert!(served.load(Ordering::SeqCst));
        assert_eq!(blocked.await.unwrap().unwrap(), 1, "the state reused across calls");
        assert_eq!(threads.live(), 0, "no thread of the hook's was needed");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_call_leaves_its_worker_once_it_has_run_a_while() {
        let threads = Arc::new(Threads::new(1, Duration::from_secs(5), "test-js", || ()));
        // On a task of the runtime's only worker (the test's body runs elsewhere), with another task
        // queued behind it on that worker.
        let calls = |spin: bool| {
            let t = threads.clone();
            tokio::spawn(async move {
                let other_ran = Arc::new(AtomicBool::new(false));
                let r = other_ran.clone();
                let other = tokio::spawn(async move { r.store(true, Ordering::SeqCst) });
                let seen = other_ran.clone();
                let (during, took) = t
                    .run(move |_| {
                        let started = Instant::now();
                        if !spin {
                            // As a short script's interrupt handler would, a hundred times over.
                            (0..100).for_each(|_| leave_worker_if_due());
                        }
                        while spin && !seen.load(Ordering::SeqCst) && started.elapsed() < Duration::from_secs(20) {
                            leave_worker_if_due();
                            std::thread::sleep(Duration::from_micros(50));
                        }
                        (seen.load(Ordering::SeqCst), started.elapsed())
                    })
                    .await
                    .unwrap();
                assert!(ON_WORKER.get().is_none(), "the mark ends with the call");
                other.await.unwrap();
                (during, took)
            })
        };
        // A short call keeps its worker: the task behind it waits (unless the machine stalled the call
        // past the time a call may take there).
        let (during, took) = calls(false).await.unwrap();
        if took < LEAVE_AFTER {
            assert!(!during, "the queued task ran during a call of {took:?}");
        }
        // A call that goes on hands the worker on: the task behind it runs while it does.
        let (during, took) = calls(true).await.unwrap();
        assert!(during, "the queued task never ran during the call ({took:?})");
        assert!(took >= LEAVE_AFTER, "not before its time ({took:?})");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_beyond_the_bound_wait_in_the_queue_and_run_when_one_ends() {
        let threads = Arc::new(Threads::new(2, Duration::from_secs(5), "test-js", || ()));
        let (gate, running, peak) = (Gate::default(), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let calls: Vec<_> = (0..3)
            .map(|_| {
                let (t, gate, running, peak) = (threads.clone(), gate.clone(), running.clone(), peak.clone());
                tokio::spawn(async move {
                    t.run(move |_| {
                        peak.fetch_max(running.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        gate.wait_leaving();
                        running.fetch_sub(1, Ordering::SeqCst);
                    })
                    .await
                })
            })
            .collect();
        // Two run (here or on a thread) and the third is queued behind them.
        let observed = async {
            while running.load(Ordering::SeqCst) < 2 || threads.queued() < 1 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), observed).await.expect("two running, one queued");
        gate.open();
        for call in calls {
            call.await.unwrap().unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 2, "two calls at most at once");
        assert_eq!(threads.queued(), 0, "the third ran once one ended");
    }

    #[test]
    fn a_panicking_call_is_lost_alone_and_its_state_is_made_anew() {
        let threads = Threads::new(1, Duration::from_secs(5), "test-js", || vec![1]);
        threads.run_blocking(|v| v.push(2)).unwrap();
        assert_eq!(threads.run_blocking(|v| v.clone()).unwrap(), vec![1, 2], "the state kept");
        assert!(threads.run_blocking(|_: &mut Vec<i32>| -> () { panic!("boom") }).is_err());
        assert_eq!(threads.run_blocking(|v| v.clone()).unwrap(), vec![1], "fresh state after the panic");
    }
}
