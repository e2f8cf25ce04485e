//! A work queue like client-go's: de-duplicated keys, one worker per key at a time (a key added while
//! it is processed runs again afterwards), delayed adds, and per-key exponential backoff.

use std::collections::VecDeque;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

// foldhash rather than SipHash: every event and every reconcile passes through these sets.
use foldhash::{HashMap, HashSet};
use parking_lot::Mutex;
use tokio::sync::Notify;

struct Inner<K> {
    queue: VecDeque<K>,
    queued: HashSet<K>,
    processing: HashSet<K>,
    dirty: HashSet<K>,
    failures: HashMap<K, u32>,
    shut: bool,
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
            queue: VecDeque::new(),
            queued: HashSet::default(),
            processing: HashSet::default(),
            dirty: HashSet::default(),
            failures: HashMap::default(),
            shut: false,
        };
        Self { inner: Arc::new(Mutex::new(inner)), notify: Arc::new(Notify::new()), base_delay, max_delay }
    }

    /// Adds a key now (no-op if it is already waiting).
    pub fn add(&self, key: K) {
        let mut q = self.inner.lock();
        if q.shut {
            return;
        }
        if q.processing.contains(&key) {
            q.dirty.insert(key);
            return;
        }
        if q.queued.insert(key.clone()) {
            q.queue.push_back(key);
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

    /// Waits for the next key; `None` once shut down.
    pub async fn get(&self) -> Option<K> {
        loop {
            let notified = self.notify.notified();
            {
                let mut q = self.inner.lock();
                if q.shut {
                    return None;
                }
                if let Some(k) = q.queue.pop_front() {
                    q.queued.remove(&k);
                    q.processing.insert(k.clone());
                    if !q.queue.is_empty() {
                        self.notify.notify_one();
                    }
                    return Some(k);
                }
            }
            notified.await;
        }
    }

    /// Marks a key processed; re-queues it if it was added meanwhile.
    pub fn done(&self, key: &K) {
        let mut q = self.inner.lock();
        q.processing.remove(key);
        if q.dirty.remove(key) && q.queued.insert(key.clone()) {
            q.queue.push_back(key.clone());
            drop(q);
            self.notify.notify_one();
        }
    }

    /// Keys waiting.
    pub fn len(&self) -> usize {
        self.inner.lock().queue.len()
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

    #[tokio::test]
    async fn dedups_and_serializes_per_key() {
        let q: WorkQueue<&str> = WorkQueue::default();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        let k = q.get().await.unwrap();
        assert_eq!(k, "a");
        q.add("a"); // while processing: runs again after done
        assert_eq!(q.get().await.unwrap(), "b");
        assert_eq!(q.len(), 0);
        q.done(&"a");
        assert_eq!(q.get().await.unwrap(), "a");
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
        assert_eq!(q.get().await, Some(1));
        q.shutdown();
        assert_eq!(q.get().await, None);
    }
}
