//! Pod Security verdicts remembered: a workload's pod template is judged once, not at every write of
//! every copy of it (a thousand Deployments of one template are one judgement), and a namespace's policy
//! is read from its labels once per resourceVersion. Judgements are [`super::check`]'s, looked up by
//! the spec's exact JSON (hashed to find it, compared whole to take it), so a remembered verdict is the
//! verdict of that spec.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodSpec;
use serde::Deserialize;
use serde_json::Value;

use super::{Level, Policy, Violation, check, describe};

/// How many distinct pod specs are remembered before the memo starts again (a spec is ~1 KB).
const SPECS: usize = 256;

/// What one level found in a spec: the violations and how a message lists them.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    pub violations: Vec<Violation>,
    /// [`describe`] of the violations (empty when there are none).
    pub described: String,
}

impl Verdict {
    fn of(level: Level, spec: &PodSpec) -> Self {
        let violations = check(level, spec);
        let described = describe(&violations);
        Verdict { violations, described }
    }
}

/// A pod spec judged at the two levels that check anything.
#[derive(Debug, PartialEq)]
pub struct Judged {
    baseline: Verdict,
    restricted: Verdict,
}

impl Judged {
    fn of(spec: &PodSpec) -> Self {
        Judged { baseline: Verdict::of(Level::Baseline, spec), restricted: Verdict::of(Level::Restricted, spec) }
    }

    /// The verdict at `level` (privileged: nothing found).
    pub fn at(&self, level: Level) -> &Verdict {
        static NOTHING: Verdict = Verdict { violations: Vec::new(), described: String::new() };
        match level {
            Level::Privileged => &NOTHING,
            Level::Baseline => &self.baseline,
            Level::Restricted => &self.restricted,
        }
    }
}

/// One remembered spec: None when it does not read as a `PodSpec` (nothing to judge).
struct Entry {
    spec: Value,
    judged: Option<Arc<Judged>>,
}

/// The remembered judgements and namespace policies of one API server.
#[derive(Default)]
pub struct Memo {
    /// By the hash of their JSON; a bucket holds more than one spec only when two hash alike.
    specs: parking_lot::Mutex<HashMap<u64, Vec<Entry>>>,
    namespaces: parking_lot::Mutex<HashMap<String, (u64, Policy)>>,
}

impl Memo {
    /// `spec` judged at every level, or None if it does not read as a `PodSpec`.
    pub fn judge(&self, spec: &Value) -> Option<Arc<Judged>> {
        let hash = hash_of(spec);
        if let Some(entries) = self.specs.lock().get(&hash)
            && let Some(e) = entries.iter().find(|e| e.spec == *spec)
        {
            return e.judged.clone();
        }
        let judged = PodSpec::deserialize(spec).ok().map(|typed| Arc::new(Judged::of(&typed)));
        let mut specs = self.specs.lock();
        if specs.len() >= SPECS && !specs.contains_key(&hash) {
            specs.clear();
        }
        let bucket = specs.entry(hash).or_default();
        // Judged meanwhile by another request: one entry per spec.
        if let Some(e) = bucket.iter().find(|e| e.spec == *spec) {
            return e.judged.clone();
        }
        bucket.push(Entry { spec: spec.clone(), judged: judged.clone() });
        judged
    }

    /// The policy of the namespace at `rv` (0: no such namespace), read from its labels by `read` only
    /// when that version has not been read before (a namespace deleted and made again has a new one).
    pub fn policy(&self, namespace: &str, rv: u64, read: impl FnOnce() -> Policy) -> Policy {
        if let Some((at, policy)) = self.namespaces.lock().get(namespace)
            && *at == rv
        {
            return policy.clone();
        }
        let policy = read();
        self.namespaces.lock().insert(namespace.to_string(), (rv, policy.clone()));
        policy
    }
}

/// A hash of a JSON value's content (maps by key, in their order, which serde_json's map sorts).
fn hash_of(v: &Value) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    feed(v, &mut h);
    h.finish()
}

fn feed(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n.as_f64().map(f64::to_bits), n.as_i64()).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            items.iter().for_each(|i| feed(i, h));
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(h);
            for (k, v) in map {
                k.hash(h);
                feed(v, h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(privileged: bool) -> Value {
        json!({"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": privileged}}]})
    }

    #[test]
    fn a_remembered_verdict_is_the_verdict_of_that_spec() {
        let memo = Memo::default();
        for round in 0..2 {
            for privileged in [true, false] {
                let judged = memo.judge(&spec(privileged)).expect("a pod spec");
                let typed = PodSpec::deserialize(&spec(privileged)).unwrap();
                for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
                    assert_eq!(judged.at(level).violations, check(level, &typed), "round {round}, {level:?}");
                }
                assert_eq!(judged.at(Level::Baseline).violations.is_empty(), !privileged);
                assert!(!judged.at(Level::Restricted).described.is_empty());
            }
        }
        assert!(memo.judge(&json!({"containers": "not a list"})).is_none(), "not a PodSpec: nothing to judge");
        assert!(memo.judge(&json!({"containers": "not a list"})).is_none(), "and remembered so");
    }

    #[test]
    fn specs_that_hash_alike_are_told_apart_and_the_memo_stays_bounded() {
        let memo = Memo::default();
        // A spec whose bucket holds another spec's verdict (as when two hash alike) gets its own.
        let (a, b) = (spec(true), spec(false));
        let judged_b = memo.judge(&b).unwrap();
        assert!(judged_b.at(Level::Baseline).violations.is_empty());
        memo.specs.lock().insert(hash_of(&a), vec![Entry { spec: b.clone(), judged: Some(judged_b) }]);
        let judged_a = memo.judge(&a).unwrap();
        assert_eq!(judged_a.at(Level::Baseline).violations.len(), 1, "the entry's spec decides, not its hash");
        for i in 0..(SPECS * 2) {
            memo.judge(&json!({"containers": [{"name": format!("c{i}"), "image": "i"}]}));
        }
        let held: usize = memo.specs.lock().values().map(Vec::len).sum();
        assert!(held <= SPECS, "{held} specs held");
    }

    #[test]
    fn a_namespace_policy_is_read_again_when_its_version_changes() {
        let memo = Memo::default();
        let mut reads = 0;
        let mut read = |level| {
            reads += 1;
            Policy { enforce: super::super::Versioned::new(level), ..Policy::default() }
        };
        assert_eq!(memo.policy("a", 5, || read(Level::Restricted)).enforce.level, Level::Restricted);
        assert_eq!(memo.policy("a", 5, || read(Level::Baseline)).enforce.level, Level::Restricted);
        assert_eq!(memo.policy("a", 6, || read(Level::Baseline)).enforce.level, Level::Baseline);
        assert_eq!(memo.policy("a", 0, || read(Level::Privileged)).enforce.level, Level::Privileged, "deleted");
        assert_eq!(memo.policy("b", 6, || read(Level::Restricted)).enforce.level, Level::Restricted);
        assert_eq!(reads, 4);
    }
}
