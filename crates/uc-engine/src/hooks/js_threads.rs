//! The threads a JavaScript hook runs on: its own, never the async runtime's workers, so a script that
//! spins until its deadline holds one of them and nothing else — the API server, the node and the
//! other controllers keep their workers.
//!
//! Each hook has at most `max` threads (its concurrency bound): a call waits in the hook's queue while
//! all of them are busy, without blocking its caller's worker. Threads start when calls overlap and
//! end after a while without work, taking the state they own (a script's runtime) with them.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

type Task<S> = Box<dyn FnOnce(&mut S) + Send>;

/// A bounded set of threads, each owning a state `S` made by `make` when the thread starts.
pub(super) struct Threads<S: 'static> {
    queue: Arc<Queue<S>>,
    max: usize,
    idle: Duration,
    name: String,
    make: Arc<dyn Fn() -> S + Send + Sync>,
}

struct Queue<S> {
    state: Mutex<State<S>>,
    ready: Condvar,
}

struct State<S> {
    tasks: VecDeque<Task<S>>,
    live: usize,
    idle: usize,
    closed: bool,
}

/// The thread ran the task but it panicked, or the threads are gone.
#[derive(Debug)]
pub(super) struct Lost;

impl<S: 'static> Threads<S> {
    /// At most `max` threads named `name`, each ending after `idle` without a task.
    pub(super) fn new(max: usize, idle: Duration, name: &str, make: impl Fn() -> S + Send + Sync + 'static) -> Self {
        let state = State { tasks: VecDeque::new(), live: 0, idle: 0, closed: false };
        Threads {
            queue: Arc::new(Queue { state: Mutex::new(state), ready: Condvar::new() }),
            max: max.max(1),
            idle,
            name: name.to_string(),
            make: Arc::new(make),
        }
    }

    /// Runs `f` on one of the threads and waits for it without blocking the caller's thread.
    pub(super) async fn run<R: Send + 'static>(&self, f: impl FnOnce(&mut S) -> R + Send + 'static) -> Result<R, Lost> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(Box::new(move |s| {
            let _ = tx.send(f(s));
        }));
        rx.await.map_err(|_| Lost)
    }

    /// Runs `f` on one of the threads and blocks until it is done (for callers outside async code).
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

    fn submit(&self, task: Task<S>) {
        let mut st = self.queue.state.lock();
        st.tasks.push_back(task);
        if st.idle < st.tasks.len() && st.live < self.max {
            let (queue, make, idle) = (self.queue.clone(), self.make.clone(), self.idle);
            let started = std::thread::Builder::new().name(self.name.clone()).spawn(move || work(queue, make, idle));
            if started.is_ok() {
                st.live += 1;
            }
        }
        drop(st);
        self.queue.ready.notify_one();
    }
}

impl<S: 'static> Drop for Threads<S> {
    fn drop(&mut self) {
        self.queue.state.lock().closed = true;
        self.queue.ready.notify_all();
    }
}

/// A thread's life: tasks in turn until the queue closes or none comes for `idle`.
fn work<S>(queue: Arc<Queue<S>>, make: Arc<dyn Fn() -> S + Send + Sync>, idle: Duration) {
    let mut own = make();
    let mut st = queue.state.lock();
    loop {
        if let Some(task) = st.tasks.pop_front() {
            drop(st);
            if std::panic::catch_unwind(AssertUnwindSafe(|| task(&mut own))).is_err() {
                // The state may be half-changed: start afresh.
                own = make();
            }
            st = queue.state.lock();
            continue;
        }
        if st.closed {
            break;
        }
        st.idle += 1;
        let waited = queue.ready.wait_for(&mut st, idle);
        st.idle -= 1;
        if waited.timed_out() && st.tasks.is_empty() {
            break;
        }
    }
    st.live -= 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(flavor = "current_thread")]
    async fn tasks_run_off_the_caller_and_wait_while_every_thread_is_busy() {
        let made = Arc::new(AtomicUsize::new(0));
        let m = made.clone();
        let threads = Threads::new(2, Duration::from_millis(200), "test-js", move || m.fetch_add(1, Ordering::SeqCst));
        let caller = std::thread::current().id();
        let ran_on = threads.run(|_| std::thread::current().id()).await.unwrap();
        assert_ne!(ran_on, caller, "not on the calling thread");
        // Three tasks that each hold a thread until released: two run, the third waits for one.
        let gate = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let running = Arc::new(AtomicUsize::new(0));
        let calls: Vec<_> = (0..3)
            .map(|_| {
                let (gate, running) = (gate.clone(), running.clone());
                threads.run(move |_| {
                    running.fetch_add(1, Ordering::SeqCst);
                    let (lock, cv) = &*gate;
                    let _open = cv.wait_while(lock.lock().unwrap(), |open| !*open).unwrap();
                })
            })
            .collect();
        let all = futures::future::join_all(calls);
        tokio::pin!(all);
        // The caller's thread is free meanwhile: this task runs on it while the others block.
        let waited = tokio::time::timeout(Duration::from_millis(300), &mut all).await;
        assert!(waited.is_err(), "held by the gate");
        assert_eq!(running.load(Ordering::SeqCst), 2, "two threads at most");
        assert_eq!(threads.live(), 2);
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        assert!(all.await.iter().all(Result::is_ok));
        assert_eq!(running.load(Ordering::SeqCst), 3, "the third ran once a thread was free");
        // Idle threads end; the next task starts one again.
        for _ in 0..100 {
            if threads.live() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(threads.live(), 0, "idle threads ended");
        assert_eq!(threads.run_blocking(|n| *n).map(|_| ()).ok(), Some(()));
    }

    #[test]
    fn a_panicking_task_is_lost_alone_and_its_state_is_made_anew() {
        let threads = Threads::new(1, Duration::from_secs(5), "test-js", || vec![1]);
        threads.run_blocking(|v| v.push(2)).unwrap();
        assert!(threads.run_blocking(|_: &mut Vec<i32>| -> () { panic!("boom") }).is_err());
        assert_eq!(threads.run_blocking(|v| v.clone()).unwrap(), vec![1], "fresh state after the panic");
    }
}
