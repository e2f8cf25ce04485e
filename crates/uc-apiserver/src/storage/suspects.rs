//! What the garbage collector's full pass has to look at, found in one walk of the store's indexes: the
//! objects an owner of which is gone or being deleted, and the objects being deleted. Every other
//! dependent has all its owners in place, and the pass would only read it to learn that — at a million
//! parents, three B-tree lookups by key per dependent made the pass take a core for seconds (issue 58).

use std::collections::HashSet;

use super::{ObjRef, Place, State, Store};

/// What a full garbage-collection pass acts on.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Suspects {
    /// Objects with an owner uid that no object has, or whose object is being deleted; each once.
    pub dependents: Vec<ObjRef>,
    /// Objects with a deletionTimestamp.
    pub deleting: Vec<ObjRef>,
}

impl State {
    /// Walks the objects once for those being deleted, then the owner index, checking each owner uid
    /// against the uid index (a hash lookup, no object read).
    fn suspects(&self) -> Suspects {
        let mut going: HashSet<&str> = HashSet::new();
        let mut deleting = Vec::new();
        for (gr, objects) in &self.objects {
            for (key, kept) in objects.iter().filter(|(_, kept)| kept.deleting()) {
                deleting.push((gr.clone(), key.clone()));
                going.extend(kept.uid());
            }
        }
        let mut seen: HashSet<&Place> = HashSet::new();
        let mut dependents = Vec::new();
        for (owner, places) in &self.dependents {
            if self.uids.contains_key(owner) && !going.contains(&**owner) {
                continue;
            }
            for place in places.iter().filter(|p| seen.insert(p)) {
                if let Some(gr) = self.types.get(place.0 as usize) {
                    dependents.push((gr.clone(), place.1.to_string()));
                }
            }
        }
        Suspects { dependents, deleting }
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
}
