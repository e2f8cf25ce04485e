//! A work queue like client-go's: de-duplicated keys, one worker per key at a time (a key added while
//! it is processed runs again afterwards), delayed adds, and per-key exponential backoff. Keys carry a
//! priority, as controller-runtime's priority queue does: a key added at [`Priority::Low`] waits until
//! no [`Priority::Normal`] key does; within a priority, keys come out in the order they were added. A
//! key waiting (or running) at low priority that is added again at normal is raised.

use std::collections::BTreeMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

// foldhash rather than SipHash: every event and every reconcile passes through these maps.
use foldhash::HashMap;
use parking_lot::Mutex;
use tokio::sync::Notify;

/// How urgent a key is. `Normal` comes out first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    Normal,
    Low,
}

struct Inner<K> {
    /// Waiting keys by (priority, order of adding).
    queue: BTreeMap<(Priority, u64), K>,
    /// Where each waiting key stands in `queue`.
    queued: HashMap<K, (Priority, u64)>,
    /// Keys being processed; with a priority once added meanwhile (to run again afterwards).
    processing: HashMap<K, Option<Priority>>,
    failures: HashMap<K, u32>,
    next: u64,
    shut: bool,
}

impl<K: Clone + Eq + Hash> Inner<K> {
    /// Queues `key` at `priority`, or raises it to `priority`; whether it was not waiting before.
    fn enqueue(&mut self, key: K, priority: Priority) -> bool {
        match self.queued.get_mut(&key) {
            Some(at) if at.0 <= priority => false,
            Some(at) => {
                let old = *at;
                *at = (priority, old.1);
                if let Some(k) = self.queue.remove(&old) {
                    self.queue.insert((priority, old.1), k);
                }
                false
            }
            None => {
                let at = (priority, self.next);
                self.next += 1;
                self.queued.insert(key.clone(), at);
                self.queue.insert(at, key);
                true
            }
        }
    }
}

/// The queue. Cheap to clone.
pub struct WorkQueue<K> {
    inner: Arc<Mutex<Inner<K>>>,
    notify: Arc<Notify>,
    base_delay: Duration,
    max_delay: Duration,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            notify: self.notify.clone(),
            base_delay: self.base_delay,
            max_delay: self.max_delay,
        }
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> Default for WorkQueue<K> {
    fn default() -> Self {
        Self::new(Duration::from_millis(50), Duration::from_secs(300))
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    /// A queue whose retries back off from `base_delay` doubling up to `max_delay`.
    pub fn new(base_delay: Duration, max_delay: Duration) -> Self {
        let inner = Inner {
            queue: BTreeMap::new(),
            queued: HashMap::default(),
            processing: HashMap::default(),
            failures: HashMap::default(),
            next: 0,
            shut: false,
        };
        Self { inner: Arc::new(Mutex::new(inner)), notify: Arc::new(Notify::new()), base_delay, max_delay }
    }

    /// Adds a key now at normal priority (no-op if it is already waiting at it).
    pub fn add(&self, key: K) {
        self.add_at(key, Priority::Normal);
    }

    /// Adds a key now at `priority` (raising it if it waits at a lower one).
    pub fn add_at(&self, key: K, priority: Priority) {
        let mut q = self.inner.lock();
        if q.shut {
            return;
        }
        if let Some(again) = q.processing.get_mut(&key) {
            *again = Some(again.map_or(priority, |p| p.min(priority)));
            return;
        }
        if q.enqueue(key, priority) {
            drop(q);
            self.notify.notify_one();
        }
    }

    /// Adds a key after a delay.
    pub fn add_after(&self, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            me.add(key);
        });
    }

    /// Adds a key after its backoff delay, which doubles with each consecutive failure.
    pub fn add_rate_limited(&self, key: K) -> Duration {
        let n = {
            let mut q = self.inner.lock();
            let n = q.failures.entry(key.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let factor = 2u32.saturating_pow(n.saturating_sub(1).min(20));
        let delay = self.base_delay.saturating_mul(factor).min(self.max_delay);
        self.add_after(key, delay);
        delay
    }

    /// A key's consecutive failures so far.
    pub fn failures(&self, key: &K) -> u32 {
        self.inner.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// Clears a key's failure count (after a success).
    pub fn forget(&self, key: &K) {
        self.inner.lock().failures.remove(key);
    }

    /// Waits for the next key and the priority it waited at; `None` once shut down.
    pub async fn get(&self) -> Option<(K, Priority)> {
        loop {
            let notified = self.notify.notified();
            {
                let mut q = self.inner.lock();
                if q.shut {
                    return None;
                }
                if let Some(((priority, _), k)) = q.queue.pop_first() {
                    q.queued.remove(&k);
                    q.processing.insert(k.clone(), None);
                    if !q.queue.is_empty() {
                        self.notify.notify_one();
                    }
                    return Some((k, priority));
                }
            }
            notified.await;
        }
    }

    /// Marks a key processed; re-queues it if it was added meanwhile.
    pub fn done(&self, key: &K) {
        let mut q = self.inner.lock();
        if let Some(Some(priority)) = q.processing.remove(key)
            && q.enqueue(key.clone(), priority)
        {
            drop(q);
            self.notify.notify_one();
        }
    }

    /// Keys waiting.
    pub fn len(&self) -> usize {
        self.inner.lock().queue.len()
    }

    /// Calls `report` with how many keys wait, unless the queue is shut down — under the queue's lock, so
    /// that nothing is reported after [`WorkQueue::shutdown`] returns.
    pub fn report_len(&self, report: impl FnOnce(usize)) {
        let q = self.inner.lock();
        if !q.shut {
            report(q.queue.len());
        }
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops the queue: `get` returns `None` from now on.
    pub fn shutdown(&self) {
        self.inner.lock().shut = true;
        self.notify.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shut_queue_reports_no_depth() {
        let q: WorkQueue<&str> = WorkQueue::default();
        q.add("a");
        let mut seen = None;
        q.report_len(|n| seen = Some(n));
        assert_eq!(seen, Some(1));
        q.shutdown();
        q.report_len(|_| panic!("reported after shutdown"));
    }

    #[tokio::test]
    async fn dedups_and_serializes_per_key() {
        let q: WorkQueue<&str> = WorkQueue::default();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        let (k, _) = q.get().await.unwrap();
        assert_eq!(k, "a");
        q.add("a"); // while processing: runs again after done
        assert_eq!(q.get().await.unwrap().0, "b");
        assert_eq!(q.len(), 0);
        q.done(&"a");
        assert_eq!(q.get().await.unwrap().0, "a");
    }

    #[tokio::test]
    async fn normal_keys_come_out_before_low_ones_each_in_the_order_added() {
        let q: WorkQueue<&str> = WorkQueue::default();
        q.add_at("a", Priority::Low);
        q.add_at("b", Priority::Low);
        q.add("c");
        q.add_at("d", Priority::Normal);
        let mut order = Vec::new();
        while !q.is_empty() {
            order.push(q.get().await.unwrap());
        }
        use Priority::*;
        assert_eq!(order, [("c", Normal), ("d", Normal), ("a", Low), ("b", Low)]);
    }

    #[tokio::test]
    async fn a_key_is_raised_by_a_normal_add_and_never_lowered() {
        let q: WorkQueue<&str> = WorkQueue::default();
        q.add_at("a", Priority::Low);
        q.add_at("b", Priority::Low);
        q.add("a");
        assert_eq!(q.len(), 2, "raised, not queued twice");
        assert_eq!(q.get().await.unwrap(), ("a", Priority::Normal));
        q.add("c");
        q.add_at("c", Priority::Low);
        assert_eq!(q.get().await.unwrap(), ("c", Priority::Normal), "a low add does not lower a waiting key");
        assert_eq!(q.get().await.unwrap(), ("b", Priority::Low));
    }

    #[tokio::test]
    async fn a_key_added_while_it_runs_comes_back_at_the_highest_priority_asked() {
        let q: WorkQueue<&str> = WorkQueue::default();
        q.add_at("a", Priority::Low);
        assert_eq!(q.get().await.unwrap(), ("a", Priority::Low));
        q.add_at("a", Priority::Low);
        q.add("a");
        q.add_at("a", Priority::Low);
        q.add_at("b", Priority::Low);
        assert_eq!(q.len(), 1, "a waits for its run to end");
        q.done(&"a");
        assert_eq!(q.get().await.unwrap(), ("a", Priority::Normal));
        q.done(&"a");
        assert_eq!(q.get().await.unwrap(), ("b", Priority::Low));
        q.done(&"b");
        assert!(q.is_empty(), "nothing was added while b ran");
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_doubles_and_forget_resets() {
        let q: WorkQueue<u32> = WorkQueue::new(Duration::from_millis(10), Duration::from_millis(50));
        assert_eq!(q.add_rate_limited(1), Duration::from_millis(10));
        assert_eq!(q.add_rate_limited(1), Duration::from_millis(20));
        assert_eq!(q.add_rate_limited(1), Duration::from_millis(40));
        assert_eq!(q.add_rate_limited(1), Duration::from_millis(50));
        q.forget(&1);
        assert_eq!(q.add_rate_limited(1), Duration::from_millis(10));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(q.get().await, Some((1, Priority::Normal)));
        q.shutdown();
        assert_eq!(q.get().await, None);
    }
}
