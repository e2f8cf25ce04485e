//! The store's indexes, kept as each object changes: the uid of every object, the dependents of every
//! owner uid, and what the garbage collector's full pass starts from — the owner uids no object has
//! (`dangling`) and the objects being deleted — so that the pass reads those, not every index entry.

use uc_api::GroupResource;

use super::{Place, State};
use crate::kept::Kept;

impl State {
    /// The place of `key` of type `gr`, numbering the type if it is new.
    pub(super) fn place(&mut self, gr: &GroupResource, key: &str) -> Place {
        let n = match self.type_numbers.get(gr) {
            Some(n) => *n,
            None => {
                let n = u32::try_from(self.types.len()).unwrap_or(u32::MAX);
                self.types.push(gr.clone());
                self.type_numbers.insert(gr.clone(), n);
                n
            }
        };
        (n, key.into())
    }

    /// Moves `key` of type `gr` in the indexes from what `old` says of it to what `new` says.
    pub(super) fn index(&mut self, gr: &GroupResource, key: &str, old: Option<&Kept>, new: Option<&Kept>) {
        // Most updates keep the uid, the owners and whether the object is being deleted: the indexes
        // already say what they would be rebuilt to.
        if let (Some(old), Some(new)) = (old, new)
            && old.uid() == new.uid()
            && old.owners().eq(new.owners())
            && old.deleting() == new.deleting()
        {
            return;
        }
        let place = self.place(gr, key);
        if let Some(old) = old {
            self.unindex(&place, old);
        }
        if let Some(new) = new {
            // The uid first: an object that names itself an owner does not dangle.
            if let Some(uid) = new.uid() {
                self.uids.insert(uid.into(), place.clone());
                self.dangling.remove(uid);
            }
            for owner in new.owners() {
                let set = self.dependents.entry(owner.into()).or_insert_with(|| Vec::with_capacity(1));
                if !set.contains(&place) {
                    set.push(place.clone());
                }
                if !self.uids.contains_key(owner) {
                    self.dangling.insert(owner.into());
                }
            }
            if new.deleting() {
                self.deleting.insert(place);
            }
        }
    }

    fn unindex(&mut self, place: &Place, old: &Kept) {
        if let Some(uid) = old.uid() {
            self.uids.remove(uid);
            if self.dependents.contains_key(uid) {
                self.dangling.insert(uid.into());
            }
        }
        for owner in old.owners() {
            if let Some(set) = self.dependents.get_mut(owner) {
                set.retain(|p| p != place);
                if set.is_empty() {
                    self.dependents.remove(owner);
                    self.dangling.remove(owner);
                }
            }
        }
        self.deleting.remove(place);
    }
}
