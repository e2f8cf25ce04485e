//! Objects as the store keeps them, and as they go out.
//!
//! Server-side apply's `metadata.managedFields[*].fieldsV1` is a tree of small maps — one per field an
//! object has — and as a `serde_json::Value` each non-empty map costs a B-tree node of ~600 bytes: the
//! managed fields were half of the API server's heap (docs/benchmarks.md, issue 58). kube-apiserver
//! keeps them as raw JSON bytes; so does uc: the store keeps each `fieldsV1` as its JSON text, a string
//! ([`compact`], on every object it commits or reads back from its log). Nothing a client sees changes:
//! [`Wire`] writes a value — an object, a list, a watch event, an AdmissionReview, a Table — with that
//! text back in place as the JSON object it is. [`expand`] turns the text back into a tree where an
//! object is edited as JSON by someone who sees the wire form (a JSON or merge patch, a webhook's patch);
//! server-side apply reads both forms (`ssa::managed::read`).
//!
//! Text is written raw only where it is a `fieldsV1` (under some `metadata.managedFields[*]`: objects are
//! nested in lists, watch events, reviews and tables) and only if it is a JSON object: a string a client
//! sent there in place of the object (which kube's schema does not allow) goes out as the string it is.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A value written as JSON with every object's `fieldsV1` text in place as JSON.
pub struct Wire<'a>(pub &'a Value);

/// One member of an object: `metadata` is where managed fields are.
pub struct Member<'a>(pub &'a str, pub &'a Value);

struct Metadata<'a>(&'a Value);
struct Entries<'a>(&'a [Value]);
struct Entry<'a>(&'a Value);

impl Serialize for Wire<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(members) => {
                let mut map = s.serialize_map(Some(members.len()))?;
                for (key, value) in members {
                    map.serialize_entry(key, &Member(key, value))?;
                }
                map.end()
            }
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Wire(item))?;
                }
                seq.end()
            }
            scalar => scalar.serialize(s),
        }
    }
}

impl Serialize for Member<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Member("metadata", metadata) => Metadata(metadata).serialize(s),
            Member(_, value) => Wire(value).serialize(s),
        }
    }
}

impl Serialize for Metadata<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(members) = self.0 else { return Wire(self.0).serialize(s) };
        let mut map = s.serialize_map(Some(members.len()))?;
        for (key, value) in members {
            match value {
                Value::Array(entries) if key == "managedFields" => map.serialize_entry(key, &Entries(entries))?,
                _ => map.serialize_entry(key, &Wire(value))?,
            }
        }
        map.end()
    }
}

impl Serialize for Entries<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for entry in self.0 {
            seq.serialize_element(&Entry(entry))?;
        }
        seq.end()
    }
}

impl Serialize for Entry<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(members) = self.0 else { return Wire(self.0).serialize(s) };
        let mut map = s.serialize_map(Some(members.len()))?;
        for (key, value) in members {
            match (key.as_str(), value) {
                ("fieldsV1", Value::String(text)) if let Some(raw) = object_text(text) => {
                    map.serialize_entry(key, raw)?
                }
                _ => map.serialize_entry(key, &Wire(value))?,
            }
        }
        map.end()
    }
}

/// `text` as raw JSON if it is a JSON object.
fn object_text(text: &str) -> Option<&RawValue> {
    let raw: &RawValue = serde_json::from_str(text).ok()?;
    raw.get().starts_with('{').then_some(raw)
}

/// `v` as JSON bytes, `fieldsV1` text in place.
pub fn to_vec(v: &Value) -> Vec<u8> {
    // Writing a Value to a vector fails for nothing serde_json can hold.
    serde_json::to_vec(&Wire(v)).unwrap_or_default()
}

/// The `fieldsV1` members of an object's managed field entries.
fn fields_v1_of(obj: &mut Value) -> impl Iterator<Item = &mut Value> {
    obj.get_mut("metadata")
        .and_then(|m| m.get_mut("managedFields"))
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get_mut("fieldsV1"))
}

/// The object as the store keeps it: each `fieldsV1` tree replaced by its JSON text.
pub fn compact(obj: &mut Value) {
    for fields in fields_v1_of(obj) {
        if fields.is_object() {
            *fields = Value::String(fields.to_string());
        }
    }
}

/// The object as a client sees it: each `fieldsV1` text that is a JSON object replaced by that object.
pub fn expand(obj: &mut Value) {
    for fields in fields_v1_of(obj) {
        if let Value::String(text) = fields
            && let Some(tree) = object_text(text).and_then(|raw| serde_json::from_str(raw.get()).ok())
        {
            *fields = tree;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "labels": {"a": "b"}, "managedFields": [
                   {"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {"f:a": {}}}}},
                   {"manager": "ctl", "operation": "Update", "subresource": "status", "fieldsV1": {"f:status": {}}}]},
               "data": {"k": "v"}, "spec": {"metadata": {"managedFields": [{"fieldsV1": {"f:x": {}}}]}}})
    }

    #[test]
    fn a_compact_object_goes_out_as_the_object_it_was() {
        let tree = object();
        let mut kept = tree.clone();
        compact(&mut kept);
        let entries = &kept["metadata"]["managedFields"];
        assert_eq!(
            entries[0]["fieldsV1"],
            json!(r#"{"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{"f:a":{}}}}"#)
        );
        assert_eq!(entries[1]["fieldsV1"], json!(r#"{"f:status":{}}"#));
        assert_eq!(kept["spec"], tree["spec"], "only the object's own metadata is compacted");
        assert_eq!(to_vec(&kept), serde_json::to_vec(&tree).unwrap(), "the same bytes as the tree");
        let mut again = kept.clone();
        compact(&mut again);
        assert_eq!(again, kept, "compacting twice changes nothing");
        expand(&mut kept);
        assert_eq!(kept, tree);
    }

    #[test]
    fn text_goes_out_raw_only_where_it_is_a_fields_v1_object() {
        let cases = [
            // A client's string where an object belongs is sent as the string it is.
            (json!({"metadata": {"managedFields": [{"fieldsV1": "not json"}]}}), r#""not json""#),
            (json!({"metadata": {"managedFields": [{"fieldsV1": "[1]"}]}}), r#""[1]""#),
            (json!({"metadata": {"managedFields": [{"fieldsV1": "{\"a\":1}]"}]}}), r#""{\"a\":1}]""#),
            // Elsewhere a string is a string, whatever it holds.
            (json!({"metadata": {"annotations": {"fieldsV1": "{}"}}}), r#""{}""#),
            (json!({"data": {"fieldsV1": "{}"}}), r#""{}""#),
            // Nested objects (a list's items, a review's object, a table's rows) are objects too.
            (json!({"items": [{"metadata": {"managedFields": [{"fieldsV1": "{\"f:a\":{}}"}]}}]}), r#"{"f:a":{}}"#),
        ];
        for (value, fields) in cases {
            let text = String::from_utf8(to_vec(&value)).unwrap();
            assert!(text.contains(&format!(r#""fieldsV1":{fields}"#)), "{value} went out as {text}");
            serde_json::from_str::<Value>(&text).unwrap();
        }
        let mut odd = json!({"metadata": {"managedFields": [{"fieldsV1": "[1]"}, {"fieldsV1": 7}]}});
        let before = odd.clone();
        expand(&mut odd);
        assert_eq!(odd, before, "text that is no object stays as it is");
    }
}
