//! Object metadata read from and written to objects held as JSON: the one home of the small helpers
//! every layer needs (names, deletion state, finalizers, controller ownerReferences).

use serde_json::{Map, Value, json};

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

/// A part of an object that must be a map to be written into holds something else (a manifest from
/// outside the API server: a bundle's, a Work's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: must be an object")]
pub struct NotAMap {
    /// `metadata`, `metadata.labels`, ... (empty: the object itself).
    pub path: String,
}

/// `v` as a map, made one when it is absent (`null`); anything else is refused.
fn map_at<'a>(v: &'a mut Value, path: &str) -> Result<&'a mut Map<String, Value>, NotAMap> {
    if v.is_null() {
        *v = Value::Object(Map::new());
    }
    v.as_object_mut().ok_or_else(|| NotAMap { path: path.to_string() })
}

/// `metadata.<field>` (`labels`, `annotations`) of an object to write into: made, with `metadata`,
/// when absent or null; an error naming the field when either holds something other than a map
/// (written over, it would lose what it holds).
pub fn meta_map_mut<'a>(obj: &'a mut Value, field: &str) -> Result<&'a mut Map<String, Value>, NotAMap> {
    let meta = map_at(map_at(obj, "")?.entry("metadata").or_insert(Value::Null), "metadata")?;
    map_at(meta.entry(field).or_insert(Value::Null), &format!("metadata.{field}"))
}

/// Sets `metadata.labels[key]` (see [`meta_map_mut`]).
pub fn set_label(obj: &mut Value, key: &str, value: &str) -> Result<(), NotAMap> {
    meta_map_mut(obj, "labels")?.insert(key.to_string(), Value::String(value.to_string()));
    Ok(())
}

/// Sets `metadata.annotations[key]` (see [`meta_map_mut`]).
pub fn set_annotation(obj: &mut Value, key: &str, value: &str) -> Result<(), NotAMap> {
    meta_map_mut(obj, "annotations")?.insert(key.to_string(), Value::String(value.to_string()));
    Ok(())
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
    fn labels_and_annotations_are_written_into_maps_only() {
        let mut o = json!({"kind": "ConfigMap"});
        set_label(&mut o, "a", "1").unwrap();
        set_annotation(&mut o, "b", "2").unwrap();
        assert_eq!(o["metadata"], json!({"labels": {"a": "1"}, "annotations": {"b": "2"}}));
        let mut nulls = json!({"metadata": {"labels": null}});
        set_label(&mut nulls, "a", "1").unwrap();
        assert_eq!(nulls["metadata"]["labels"], json!({"a": "1"}), "null is an absence");
        for (mut bad, path) in [
            (json!({"metadata": {"labels": "x"}}), "metadata.labels"),
            (json!({"metadata": []}), "metadata"),
            (json!("x"), ""),
        ] {
            let before = bad.clone();
            assert_eq!(set_label(&mut bad, "a", "1"), Err(NotAMap { path: path.into() }));
            assert_eq!(bad, before, "what it held is not written over");
        }
        assert_eq!(NotAMap { path: "metadata.labels".into() }.to_string(), "metadata.labels: must be an object");
    }

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
