//! What the operators read from hook requests and pods, and how they name and label what they make.

use serde_json::{Map, Value, json};

/// Children of one type from a sync request.
pub(crate) fn obj_map<'a>(request: &'a Value, type_key: &str) -> &'a Map<String, Value> {
    // Borrowed, not copied: a ReplicaSet's request holds every one of its pods.
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    request.pointer(&format!("/children/{}", type_key.replace('/', "~1"))).and_then(Value::as_object).unwrap_or(&EMPTY)
}

/// A pod that counts as running (not finished, not being deleted).
pub(crate) fn active(pod: &Value) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str).unwrap_or("Pending");
    pod.pointer("/metadata/deletionTimestamp").is_none() && phase != "Succeeded" && phase != "Failed"
}

/// A pod whose Ready condition is True.
pub(crate) fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// FNV-1a: a stable hash (std's hasher may change between releases; names must not).
pub(crate) fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A five-letter name suffix derived from `seed` (kube's alphabet: no vowels, no look-alikes), so a
/// name asked for twice is the same name.
pub(crate) fn name_suffix(seed: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h = hash_str(seed);
    (0..5)
        .map(|_| {
            let c = ALPHABET[(h % ALPHABET.len() as u64) as usize] as char;
            h /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// Sets `metadata.labels[key]` (of an object or a pod template).
pub(crate) fn set_label(obj: &mut Value, key: &str, value: &str) {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    if !obj["metadata"].get("labels").is_some_and(Value::is_object) {
        obj["metadata"]["labels"] = json!({});
    }
    obj["metadata"]["labels"][key] = json!(value);
}
