//! Parents one of whose children left the cache since they were last confirmed on the API server.
//!
//! The garbage collector deletes the children of a deleted parent, and a controller may see a child go
//! before it sees its parent go: a reconcile in between would make the child again. So a parent whose
//! child vanished is read from the API server before anything is made for it, and it stays marked until
//! it is confirmed there — every reconcile of a parent the server no longer has asks again, until the
//! parent's own delete event lets go of it.

use std::collections::HashSet;

use parking_lot::Mutex;

use crate::informer::ObjKey;

#[derive(Default)]
pub struct Vanished(Mutex<HashSet<ObjKey>>);

impl Vanished {
    /// Marks the parents of a child that left the cache.
    pub fn mark(&self, parents: impl IntoIterator<Item = ObjKey>) {
        self.0.lock().extend(parents);
    }

    /// Lets go of a parent that left the cache itself.
    pub fn forget(&self, key: &ObjKey) {
        self.0.lock().remove(key);
    }

    /// Takes the mark off `key` while its parent is read: a child vanishing during the read marks it again.
    /// False when it was not marked (nothing to confirm).
    pub fn take(&self, key: &ObjKey) -> bool {
        self.0.lock().remove(key)
    }

    /// The read's outcome: a parent not there keeps its mark, so that the next reconcile reads it again.
    pub fn confirmed(&self, key: &ObjKey, there: bool) -> bool {
        if !there {
            self.0.lock().insert(key.clone());
        }
        there
    }

    #[cfg(test)]
    fn contains(&self, key: &ObjKey) -> bool {
        self.0.lock().contains(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjKey {
        ("default".to_string(), name.to_string())
    }

    #[test]
    fn a_parent_confirmed_gone_is_read_again_by_its_next_reconcile() {
        let v = Vanished::default();
        v.mark([key("a")]);
        assert!(v.take(&key("a")));
        assert!(!v.confirmed(&key("a"), false));
        // The parent's delete event has not arrived: the next reconcile must read it again.
        assert!(v.take(&key("a")), "the mark was lost after the parent was found gone");
        assert!(v.confirmed(&key("a"), true));
        assert!(!v.take(&key("a")), "a parent confirmed there is not read again");
    }

    #[test]
    fn a_child_vanishing_while_its_parent_is_read_keeps_the_parent_marked() {
        let v = Vanished::default();
        v.mark([key("a")]);
        assert!(v.take(&key("a")));
        v.mark([key("a")]); // another child goes during the read
        assert!(v.confirmed(&key("a"), true));
        assert!(v.contains(&key("a")));
    }

    #[test]
    fn a_parent_that_left_the_cache_is_forgotten() {
        let v = Vanished::default();
        v.mark([key("a"), key("b")]);
        v.forget(&key("a"));
        assert!(!v.take(&key("a")));
        assert!(v.take(&key("b")));
    }
}
