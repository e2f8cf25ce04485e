//! Object metadata as the handlers read and stamp it: timestamps, uids, finalizers, deletion state.

use chrono::{SecondsFormat, Utc};
use serde_json::{Value, json};
use uc_api::Pointer;

use crate::registry::ResourceInfo;

/// The finalizer that makes the GC delete dependents before their owner.
pub const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer that makes the GC orphan dependents.
pub const ORPHAN: &str = "orphan";
/// The finalizer apiextensions puts on CRDs so their objects are deleted first.
pub const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Current time as Kubernetes writes it.
pub fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A new object's uid: a random (version 4) UUID, as kube-apiserver's. The bits come from the thread's
/// CSPRNG (seeded from the OS) rather than from a `getrandom` system call per object.
fn new_uid() -> String {
    uuid::Builder::from_random_bytes(rand::random()).into_uuid().to_string()
}

pub(crate) fn stamp_new(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("uid".into(), Value::String(new_uid()));
        meta.insert("creationTimestamp".into(), Value::String(now()));
        meta.remove("resourceVersion");
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
    }
}

pub(crate) fn init_namespace(obj: &mut Value) {
    obj["spec"] = json!({"finalizers": ["kubernetes"]});
    obj["status"] = json!({"phase": "Active"});
    if let Some(labels) = obj.at_mut("/metadata").and_then(Value::as_object_mut) {
        let name = labels.get("name").cloned().unwrap_or(Value::Null);
        let l = labels.entry("labels").or_insert_with(|| json!({}));
        if let Some(l) = l.as_object_mut() {
            l.insert("kubernetes.io/metadata.name".into(), name);
        }
    }
}

// The metadata helpers are uc-api's (one home: a `deletionTimestamp: null` is not a deletion there and
// here alike); the API server reads a metadata field as an Option.
pub(crate) use uc_api::meta::{finalizers, is_deleting, meta_field as meta_str, set_finalizers};

/// Why preconditions on a uid and a resourceVersion (a delete's, a binding's) fail against the stored
/// object, in kube's words (`storage.Preconditions.Check`).
pub(crate) fn precondition_failure(uid: Option<&str>, resource_version: Option<&str>, cur: &Value) -> Option<String> {
    let have = meta_str(cur, "uid").unwrap_or_default();
    if let Some(want) = uid.filter(|want| *want != have) {
        return Some(format!("Precondition failed: UID in precondition: {want}, UID in object meta: {have}"));
    }
    let have = crate::storage::rv_of(cur).to_string();
    resource_version.filter(|want| *want != have).map(|want| {
        format!("Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {have}")
    })
}

/// True once nothing holds a deleting object back: no finalizers (and for namespaces, no spec finalizers).
pub(crate) fn ready_to_vanish(info: &ResourceInfo, obj: &Value) -> bool {
    // A pod in graceful deletion waits for its kubelet's delete with grace 0, whatever else changes.
    let graceful = obj.at("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).is_some_and(|g| g > 0);
    is_deleting(obj)
        && !graceful
        && finalizers(obj).is_empty()
        && !(info.resource == "namespaces"
            && obj.at("/spec/finalizers").and_then(Value::as_array).is_some_and(|a| !a.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_objects_get_distinct_version_4_uids() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let mut obj = json!({"metadata": {"name": "a", "resourceVersion": "7"}});
            stamp_new(&mut obj);
            let uid = obj["metadata"]["uid"].as_str().unwrap().to_string();
            let parsed = uuid::Uuid::parse_str(&uid).unwrap();
            assert_eq!(parsed.get_version(), Some(uuid::Version::Random), "{uid}");
            assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122, "{uid}");
            assert!(obj["metadata"].get("resourceVersion").is_none());
            assert!(seen.insert(uid));
        }
    }

    #[test]
    fn preconditions_name_what_differs() {
        let cur = json!({"metadata": {"uid": "u1", "resourceVersion": "7"}});
        assert_eq!(precondition_failure(None, None, &cur), None);
        assert_eq!(precondition_failure(Some("u1"), Some("7"), &cur), None);
        assert_eq!(
            precondition_failure(Some("u2"), None, &cur).as_deref(),
            Some("Precondition failed: UID in precondition: u2, UID in object meta: u1")
        );
        assert_eq!(
            precondition_failure(None, Some("6"), &cur).as_deref(),
            Some("Precondition failed: ResourceVersion in precondition: 6, ResourceVersion in object meta: 7")
        );
    }
}
