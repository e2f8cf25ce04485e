//! Object metadata read from and written to objects held as JSON: the one home of the small helpers
//! every layer needs (names, deletion state, finalizers, controller ownerReferences).

use serde_json::{Value, json};

use crate::Pointer;

/// A string field of `metadata` (`name`, `namespace`, `uid`, `resourceVersion`, ...), or "".
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or_default()
}

/// A string field of `metadata`, if it is there.
pub fn meta_field<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str)
}

/// The string at a JSON pointer, or "".
pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.at(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// Whether the object is being deleted (`metadata.deletionTimestamp` is set).
pub fn is_deleting(obj: &Value) -> bool {
    obj.at("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null())
}

/// `metadata.finalizers`.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.at("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|f| f.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// Sets `metadata.finalizers` (removed when empty, as the API server stores no empty list).
pub fn set_finalizers(obj: &mut Value, f: Vec<String>) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if f.is_empty() {
            meta.remove("finalizers");
        } else {
            meta.insert("finalizers".into(), json!(f));
        }
    }
}

/// The ownerReference marked `controller: true`, if any.
pub fn controller_ref(obj: &Value) -> Option<&Value> {
    obj.at("/metadata/ownerReferences")?.as_array()?.iter().find(|r| r.get("controller") == Some(&Value::Bool(true)))
}

/// The uid of the object's controller, if it has one.
pub fn controller_uid(obj: &Value) -> Option<&str> {
    controller_ref(obj)?.get("uid")?.as_str()
}

/// The value of a label of an object.
pub fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.at("/metadata/labels")?.get(key)?.as_str()
}

/// The ownerReference a controller puts on what it owns: `controller` and `blockOwnerDeletion` set.
pub fn controller_owner_reference(owner: &Value) -> Value {
    json!({
        "apiVersion": owner.get("apiVersion"), "kind": owner.get("kind"),
        "name": meta_str(owner, "name"), "uid": meta_str(owner, "uid"),
        "controller": true, "blockOwnerDeletion": true,
    })
}

/// A typed object as the JSON the dynamic paths (hook answers, the dynamic client) carry. Kubernetes
/// objects always encode; `Null` stands for one that would not.
pub fn json_of<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_metadata() {
        let o = json!({"metadata": {"name": "a", "finalizers": ["x", "y"], "deletionTimestamp": null,
            "ownerReferences": [{"uid": "1"}, {"uid": "2", "controller": true}]}});
        assert_eq!(meta_str(&o, "name"), "a");
        assert_eq!(meta_str(&o, "namespace"), "");
        assert_eq!((str_at(&o, "/metadata/finalizers/1"), str_at(&o, "/nope")), ("y", ""));
        assert!(!is_deleting(&o), "a null deletionTimestamp is not a deletion");
        assert!(is_deleting(&json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})));
        assert_eq!(finalizers(&o), ["x", "y"]);
        assert_eq!(controller_uid(&o), Some("2"));
        assert_eq!(controller_uid(&json!({"metadata": {"ownerReferences": [{"uid": "1"}]}})), None);
    }

    #[test]
    fn owner_reference_of_a_controller() {
        let p = json!({"apiVersion": "v1", "kind": "Foo", "metadata": {"name": "p", "uid": "u"}});
        let r = controller_owner_reference(&p);
        assert_eq!(
            r,
            json!({"apiVersion": "v1", "kind": "Foo", "name": "p", "uid": "u", "controller": true, "blockOwnerDeletion": true})
        );
    }
}
