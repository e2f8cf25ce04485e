//! The keys one entry of an informer's index names (an owner's children, a label value's objects, a
//! namespace's objects): a short list while they are few, a hash set beyond.
//!
//! Most entries name one object — a parent owns one child, a generated selector's label value marks one
//! parent's children — and a hash set of one costs ~110 bytes where a list of one costs 40: at 200,000
//! objects cached, the owner and label indexes were ~300 bytes of each object's ~2.3 KB (issue 58).

use std::sync::Arc;

/// A key as the indexes share it (one allocation per object).
type Key<K> = Arc<K>;

/// Up to this many keys are a list (a lookup scans it); more are a hash set.
const FEW: usize = 16;

/// A set of keys.
#[derive(Debug)]
pub(crate) enum KeySet<K: Eq + std::hash::Hash> {
    /// At most [`FEW`] keys, in no order.
    Few(Vec<Key<K>>),
    /// More.
    Many(foldhash::HashSet<Key<K>>),
}

impl<K: Eq + std::hash::Hash> Default for KeySet<K> {
    fn default() -> Self {
        KeySet::Few(Vec::new())
    }
}

impl<K: Eq + std::hash::Hash> KeySet<K> {
    /// Adds `key` (once).
    pub(crate) fn insert(&mut self, key: Key<K>) {
        match self {
            KeySet::Few(v) if v.contains(&key) => {}
            KeySet::Few(v) if v.len() < FEW => {
                v.reserve_exact(1);
                v.push(key);
            }
            KeySet::Few(v) => {
                let mut set: foldhash::HashSet<Key<K>> = v.drain(..).collect();
                set.insert(key);
                *self = KeySet::Many(set);
            }
            KeySet::Many(s) => {
                s.insert(key);
            }
        }
    }

    /// Removes `key`, if it is there.
    pub(crate) fn remove(&mut self, key: &K) {
        match self {
            KeySet::Few(v) => {
                if let Some(i) = v.iter().position(|k| **k == *key) {
                    v.swap_remove(i);
                    v.shrink_to_fit();
                }
            }
            KeySet::Many(s) => {
                s.remove(key);
            }
        }
    }

    /// Whether `key` is there.
    pub(crate) fn contains(&self, key: &K) -> bool {
        match self {
            KeySet::Few(v) => v.iter().any(|k| **k == *key),
            KeySet::Many(s) => s.contains(key),
        }
    }

    /// How many keys.
    pub(crate) fn len(&self) -> usize {
        match self {
            KeySet::Few(v) => v.len(),
            KeySet::Many(s) => s.len(),
        }
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys, in no order.
    pub(crate) fn iter(&self) -> Box<dyn Iterator<Item = &Key<K>> + '_> {
        match self {
            KeySet::Few(v) => Box::new(v.iter()),
            KeySet::Many(s) => Box::new(s.iter()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(s: &KeySet<String>) -> Vec<String> {
        let mut v: Vec<String> = s.iter().map(|k| (**k).clone()).collect();
        v.sort();
        v
    }

    #[test]
    fn a_few_keys_are_a_list_and_many_a_set_with_the_same_answers() {
        let mut s: KeySet<String> = KeySet::default();
        let keys: Vec<Arc<String>> = (0..40).map(|i| Arc::new(format!("k{i:02}"))).collect();
        for k in keys.iter().take(FEW) {
            s.insert(k.clone());
            s.insert(Arc::new((**k).clone()));
        }
        assert!(matches!(s, KeySet::Few(_)), "{FEW} keys stay a list");
        assert_eq!(s.len(), FEW, "a key inserted twice (even as another allocation) is there once");
        s.remove(&"k03".to_string());
        s.remove(&"absent".to_string());
        assert_eq!(s.len(), FEW - 1);
        assert!(!sorted(&s).contains(&"k03".to_string()));
        for k in &keys {
            s.insert(k.clone());
        }
        assert!(matches!(s, KeySet::Many(_)), "past {FEW} a set");
        assert_eq!(sorted(&s), keys.iter().map(|k| (**k).clone()).collect::<Vec<_>>());
        for k in &keys {
            s.remove(k);
        }
        assert!(s.is_empty() && s.iter().next().is_none());
    }
}
