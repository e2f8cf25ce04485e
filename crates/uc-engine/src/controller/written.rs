//! What uc last wrote to each object, so a write the server normalizes is not repeated forever.
//!
//! When the server normalizes a write (prunes unknown fields, applies defaults) the next plan differs
//! from the stored object again; remembering, per uid, a digest of the body sent and the
//! resourceVersion the server answered breaks that loop: the same body against the same
//! resourceVersion is not sent twice.

use std::hash::Hasher;

use foldhash::HashMap;
use parking_lot::Mutex;
use serde_json::Value;
use uc_api::meta::meta_str;

/// Most objects remembered before the memo starts over.
const CAPACITY: usize = 100_000;

/// Per object uid: the digest of the last body written and the resourceVersion it produced.
#[derive(Default)]
pub(super) struct WriteMemo(Mutex<HashMap<String, (u64, String)>>);

impl WriteMemo {
    /// Whether a body with digest `sent` was written to `current` before and the server answered with
    /// its present state.
    pub fn already_written(&self, current: &Value, sent: u64) -> bool {
        let w = self.0.lock();
        w.get(meta_str(current, "uid")).is_some_and(|(d, rv)| *d == sent && rv == meta_str(current, "resourceVersion"))
    }

    /// Forgets a deleted object.
    pub fn forget(&self, uid: &str) {
        self.0.lock().remove(uid);
    }

    /// How many objects are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().len()
    }

    /// Records a write of a body with digest `sent` that the server stored at `rv`.
    pub fn remember(&self, uid: &str, sent: u64, rv: String) {
        let mut w = self.0.lock();
        if w.len() > CAPACITY {
            w.clear();
        }
        w.insert(uid.to_string(), (sent, rv));
    }
}

/// A digest of what a write sends, leaving out the resourceVersion it is made against: its JSON, hashed
/// as it is written (a status, without metadata, is not copied first).
pub(super) fn digest(v: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match v.get("metadata").and_then(|m| m.get("resourceVersion")) {
        None => hash_json(v, &mut h),
        Some(_) => {
            let mut body = v.clone();
            if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            hash_json(&body, &mut h);
        }
    }
    h.finish()
}

fn hash_json(v: &Value, h: &mut impl Hasher) {
    struct Writer<'a, H>(&'a mut H);
    impl<H: Hasher> std::io::Write for Writer<'_, H> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.write(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // Writing JSON to a hasher cannot fail.
    let _ = serde_json::to_writer(Writer(h), v);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_same_body_against_the_same_version_is_not_sent_again() {
        let memo = WriteMemo::default();
        let body = json!({"metadata": {"uid": "u", "resourceVersion": "5"}, "data": {"a": "1"}});
        let stored = json!({"metadata": {"uid": "u", "resourceVersion": "6"}, "data": {"a": "1"}});
        assert!(!memo.already_written(&stored, digest(&body)), "nothing remembered yet");
        memo.remember("u", digest(&body), "6".into());
        assert!(memo.already_written(&stored, digest(&body)), "same body, server still at what it answered");
        let moved = json!({"metadata": {"uid": "u", "resourceVersion": "7"}, "data": {"a": "1"}});
        assert!(!memo.already_written(&moved, digest(&body)), "someone else wrote since");
        let other = json!({"metadata": {"uid": "u", "resourceVersion": "6"}, "data": {"a": "2"}});
        assert!(!memo.already_written(&stored, digest(&other)), "a different body is sent");
        memo.forget("u");
        assert!(!memo.already_written(&stored, digest(&body)) && memo.len() == 0, "nothing of a deleted object stays");
    }

    #[test]
    fn the_digest_ignores_the_resource_version() {
        let a = json!({"metadata": {"resourceVersion": "1"}, "x": 1});
        let b = json!({"metadata": {"resourceVersion": "2"}, "x": 1});
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(digest(&a), digest(&json!({"metadata": {}, "x": 2})));
        // The body without a resourceVersion is hashed as it is; one with it, copied without it: the same.
        let with = json!({"metadata": {"name": "n", "resourceVersion": "9"}, "x": 1});
        assert_eq!(digest(&with), digest(&json!({"metadata": {"name": "n"}, "x": 1})));
        assert_ne!(digest(&with), digest(&json!({"metadata": {"name": "m", "resourceVersion": "9"}, "x": 1})));
        assert_ne!(digest(&json!({"x": 1})), digest(&json!({"x": 2})));
    }
}
