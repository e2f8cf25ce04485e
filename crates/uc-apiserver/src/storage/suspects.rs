//! What the garbage collector's full pass has to look at: the objects an owner of which is gone or being
//! deleted, and the objects being deleted. Every other dependent has all its owners in place, and the
//! pass would only read it to learn that — at a million parents, three B-tree lookups by key per
//! dependent made the pass take a core for seconds, and a walk of the owner index held the store's lock
//! for most of one (issue 58): the indexes keep those sets as objects change (`index.rs`).

use std::collections::HashSet;
use std::sync::Arc;

use super::{ObjRef, Place, State, Store};
use crate::kept::Kept;

/// What a full garbage-collection pass acts on.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Suspects {
    /// Objects with an owner uid that no object has, or whose object is being deleted; each once.
    pub dependents: Vec<ObjRef>,
    /// Objects with a deletionTimestamp.
    pub deleting: Vec<ObjRef>,
}

impl State {
    /// The objects being deleted, and the dependents of the owner uids no object has or whose object is
    /// being deleted: read from the sets the indexes keep (`index.rs`), a few entries however many
    /// objects the store holds.
    fn suspects(&self) -> Suspects {
        let deleting: Vec<(ObjRef, Arc<Kept>)> = self.deleting.iter().filter_map(|p| self.at(p)).collect();
        let going = deleting.iter().filter_map(|(_, kept)| kept.uid());
        let owners: HashSet<&str> = self.dangling.iter().map(|o| &**o).chain(going).collect();
        let mut seen: HashSet<&Place> = HashSet::new();
        let dependents = owners
            .into_iter()
            .filter_map(|owner| self.dependents.get(owner))
            .flatten()
            .filter(|p| seen.insert(p))
            .filter_map(|p| self.at(p))
            .map(|(reference, _)| reference)
            .collect();
        Suspects { dependents, deleting: deleting.into_iter().map(|(reference, _)| reference).collect() }
    }
}

impl Store {
    /// What a full garbage-collection pass acts on, as of now (under one read of the state).
    pub fn gc_suspects(&self) -> Suspects {
        self.state.read().suspects()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Op, StoreOptions};
    use super::*;
    use serde_json::{Value, json};
    use std::collections::HashMap;
    use std::sync::Arc;
    use uc_api::GroupResource;

    fn object(name: &str, owners: &[&str], deleting: bool) -> Value {
        let refs: Vec<Value> = owners.iter().map(|o| json!({"uid": o, "name": o, "kind": "Foo"})).collect();
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "uid": name, "ownerReferences": refs}});
        if deleting {
            o["metadata"]["deletionTimestamp"] = json!("2026-11-30T00:00:00Z");
            o["metadata"]["finalizers"] = json!(["f"]);
        }
        o
    }

    #[tokio::test]
    async fn suspects_are_the_dependents_of_gone_or_going_owners_and_the_objects_being_deleted() {
        let store = Store::open(None, StoreOptions::default()).unwrap();
        let gr = GroupResource::new("", "configmaps");
        let objects = [
            ("owner", &[][..], false),
            ("going", &[], true),
            ("held", &["owner"], false),
            ("orphan", &["gone"], false),
            ("twice-orphaned", &["gone", "gone-too"], false),
            ("half-held", &["owner", "gone"], false),
            ("under-a-going-owner", &["going"], false),
            ("going-itself", &["owner"], true),
        ];
        for (name, owners, deleting) in objects {
            let op = Op::Create { gr: gr.clone(), key: format!("ns/{name}"), object: object(name, owners, deleting) };
            store.write(op).await.unwrap();
        }
        let Suspects { dependents, deleting } = store.gc_suspects();
        let names = |refs: Vec<ObjRef>| {
            let mut names: Vec<String> = refs.into_iter().map(|(_, key)| key.replace("ns/", "")).collect();
            names.sort();
            names
        };
        assert_eq!(names(dependents), ["half-held", "orphan", "twice-orphaned", "under-a-going-owner"]);
        assert_eq!(names(deleting), ["going", "going-itself"]);
        // Once the gone owner exists, only the going owner's dependent is left.
        store.write(Op::Delete { gr: gr.clone(), key: "ns/going".into(), expect_rv: 0 }).await.unwrap();
        for name in ["gone", "gone-too", "going"] {
            store
                .write(Op::Create { gr: gr.clone(), key: format!("ns/{name}"), object: object(name, &[], false) })
                .await
                .unwrap();
        }
        let suspects = store.gc_suspects();
        assert_eq!((names(suspects.dependents), names(suspects.deleting)), (vec![], vec!["going-itself".to_string()]));
    }

    /// What the full pass has to look at, found by walking every object: what `suspects` must equal.
    fn walked(store: &Store) -> (Vec<String>, Vec<String>) {
        let state = store.state.read();
        let all: Vec<(&String, &Arc<crate::kept::Kept>)> = state.objects.values().flat_map(|m| m.iter()).collect();
        let uids: HashMap<&str, bool> = all.iter().filter_map(|(_, k)| Some((k.uid()?, k.deleting()))).collect();
        let mut dependents: Vec<String> = all
            .iter()
            .filter(|(_, k)| k.owners().any(|o| uids.get(o).is_none_or(|going| *going)))
            .map(|(key, _)| key.to_string())
            .collect();
        let mut deleting: Vec<String> =
            all.iter().filter(|(_, k)| k.deleting()).map(|(key, _)| key.to_string()).collect();
        dependents.sort();
        deleting.sort();
        (dependents, deleting)
    }

    #[tokio::test]
    async fn the_kept_sets_say_what_a_walk_of_every_object_finds_after_any_changes() {
        let store = Store::open(None, StoreOptions::default()).unwrap();
        let gr = GroupResource::new("", "configmaps");
        // A small universe, so that owners come and go under their dependents, objects own themselves,
        // start and stop being deleted, and are deleted and made again.
        let names = ["a", "b", "c", "d", "e"];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for step in 0..2_000 {
            let name = names[next(names.len())];
            let key = format!("ns/{name}");
            let owners: Vec<&str> = (0..next(3)).map(|_| names[next(names.len())]).collect();
            let deleting = next(4) == 0;
            let exists = store.get_kept(&gr, &key).is_some();
            let op = match (exists, next(3)) {
                (true, 0) => Op::Delete { gr: gr.clone(), key, expect_rv: 0 },
                (true, _) => Op::Update { gr: gr.clone(), key, object: object(name, &owners, deleting), expect_rv: 0 },
                (false, _) => Op::Create { gr: gr.clone(), key, object: object(name, &owners, deleting) },
            };
            store.write(op).await.unwrap();
            let Suspects { dependents, deleting } = store.gc_suspects();
            let sorted = |refs: Vec<ObjRef>| {
                let mut keys: Vec<String> = refs.into_iter().map(|(_, key)| key).collect();
                keys.sort();
                keys
            };
            assert_eq!((sorted(dependents), sorted(deleting)), walked(&store), "after step {step}");
        }
        // Nothing is left behind once every object is gone.
        for name in names {
            let _ = store.write(Op::Delete { gr: gr.clone(), key: format!("ns/{name}"), expect_rv: 0 }).await;
        }
        let state = store.state.read();
        assert!(state.dangling.is_empty() && state.deleting.is_empty() && state.dependents.is_empty());
    }
}
