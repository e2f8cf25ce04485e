//! `metadata.managedFields`: who owns which fields of an object, one entry per manager, operation
//! (`Apply` or `Update`) and subresource, each with its FieldsV1 set.

use serde_json::{Map, Value, json};

use super::fields::FieldSet;

/// The operation an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Server-side apply: the manager's declared intent.
    Apply,
    /// A create, update or patch: what the manager changed.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One entry of `managedFields`.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The field manager.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// The API version the fields were written in.
    pub api_version: String,
    /// When the entry last changed (RFC 3339).
    pub time: String,
    /// `status`, `scale`, ... or none for the main resource.
    pub subresource: Option<String>,
    /// The fields.
    pub fields: FieldSet,
}

impl Entry {
    /// Whether this entry is the one of (manager, operation, subresource).
    pub fn is(&self, manager: &str, operation: Operation, subresource: Option<&str>) -> bool {
        self.manager == manager && self.operation == operation && self.subresource.as_deref() == subresource
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("apiVersion".into(), json!(self.api_version));
        m.insert("fieldsType".into(), json!("FieldsV1"));
        // As text: what the store keeps (`crate::wire`), written out as JSON where the object is.
        m.insert("fieldsV1".into(), Value::String(self.fields.to_fields_v1_text()));
        m.insert("manager".into(), json!(self.manager));
        m.insert("operation".into(), json!(self.operation.as_str()));
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), json!(s));
        }
        m.insert("time".into(), json!(self.time));
        Value::Object(m)
    }
}

/// What is wrong with an object's managedFields (the path at fault and why).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ManagedFieldsError(pub String);

/// The entries of an object; a malformed `managedFields` is an error with the path at fault (kube
/// rejects such writes too).
pub fn read(obj: &Value) -> Result<Vec<Entry>, ManagedFieldsError> {
    let Some(list) = obj.get("metadata").and_then(|m| m.get("managedFields")) else { return Ok(Vec::new()) };
    let Value::Array(items) = list else {
        return Err(ManagedFieldsError("metadata.managedFields: must be a list".into()));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, e) in items.iter().enumerate() {
        let at = |f: &str| format!("metadata.managedFields[{i}].{f}");
        let text = |f: &str| e.get(f).and_then(Value::as_str);
        let operation = match text("operation") {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            other => {
                return Err(ManagedFieldsError(format!("{}: must be Apply or Update, not {other:?}", at("operation"))));
            }
        };
        let fields = match e.get("fieldsV1") {
            // The stored form (`crate::wire`): the JSON as text.
            Some(Value::String(text)) => FieldSet::from_fields_v1_text(text),
            Some(tree) => FieldSet::from_fields_v1(tree),
            None => Ok(FieldSet::new()),
        }
        .map_err(|m| ManagedFieldsError(format!("{}: {m}", at("fieldsV1"))))?;
        out.push(Entry {
            manager: text("manager").unwrap_or_default().to_string(),
            operation,
            api_version: text("apiVersion").unwrap_or_default().to_string(),
            time: text("time").unwrap_or_default().to_string(),
            subresource: text("subresource").map(String::from),
            fields,
        });
    }
    Ok(out)
}

/// Writes `entries` into the object (entries that own nothing are dropped, as kube drops them).
pub fn write(obj: &mut Value, entries: &[Entry]) {
    let list: Vec<Value> = entries.iter().filter(|e| !e.fields.is_empty()).map(Entry::to_value).collect();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// Whether `new` is `old` but for its resourceVersion and the times of its managed field entries: a
/// write that changes nothing else is no write at all (kube-apiserver keeps the old timestamps then,
/// and stores nothing, so the resourceVersion stays and watchers see no event).
pub fn same_but_times(old: &Value, new: &Value) -> bool {
    let (Value::Object(o), Value::Object(n)) = (old, new) else { return old == new };
    o.len() == n.len()
        && o.iter().all(|(k, ov)| match (k.as_str(), n.get(k)) {
            (_, None) => false,
            ("metadata", Some(nv)) => same_meta(ov, nv),
            (_, Some(nv)) => ov == nv,
        })
}

fn same_meta(old: &Value, new: &Value) -> bool {
    let (Value::Object(o), Value::Object(n)) = (old, new) else { return old == new };
    let skipped = |k: &str| k == "resourceVersion";
    let count = |m: &Map<String, Value>| m.keys().filter(|k| !skipped(k)).count();
    count(o) == count(n)
        && o.iter().filter(|(k, _)| !skipped(k)).all(|(k, ov)| match (k.as_str(), n.get(k)) {
            (_, None) => false,
            ("managedFields", Some(nv)) => same_entries(ov, nv),
            (_, Some(nv)) => ov == nv,
        })
}

fn same_entries(old: &Value, new: &Value) -> bool {
    let (Value::Array(o), Value::Array(n)) = (old, new) else { return old == new };
    let same_entry = |a: &Value, b: &Value| match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| k == "time" || b.get(k) == Some(v))
        }
        _ => a == b,
    };
    o.len() == n.len() && o.iter().zip(n).all(|(a, b)| same_entry(a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_that_changes_only_times_is_no_change() {
        let entry =
            |time: &str| json!({"manager": "m", "operation": "Update", "time": time, "fieldsV1": {"f:data": {}}});
        let old = json!({"metadata": {"name": "a", "resourceVersion": "5", "managedFields": [entry("t1")]}, "data": {"x": "1"}});
        let new = json!({"metadata": {"name": "a", "managedFields": [entry("t2")]}, "data": {"x": "1"}});
        assert!(same_but_times(&old, &new));
        let mut changed = new.clone();
        changed["data"]["x"] = json!("2");
        assert!(!same_but_times(&old, &changed), "data changed");
        let mut other_manager = new.clone();
        other_manager["metadata"]["managedFields"][0]["manager"] = json!("n");
        assert!(!same_but_times(&old, &other_manager), "ownership changed");
        let mut labelled = new.clone();
        labelled["metadata"]["labels"] = json!({"a": "b"});
        assert!(!same_but_times(&old, &labelled), "a label was added");
        let mut without = new.clone();
        without.as_object_mut().unwrap().remove("data");
        assert!(!same_but_times(&old, &without), "data was removed");
    }

    #[test]
    fn entries_round_trip_and_bad_ones_name_the_field() {
        let obj = json!({"metadata": {"managedFields": [
            {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}, "manager": "kubectl",
             "operation": "Apply", "time": "2026-01-01T00:00:00Z"},
            {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:x": {}}}, "manager": "ctl",
             "operation": "Update", "subresource": "status", "time": "2026-01-01T00:00:00Z"}]}});
        let entries = read(&obj).unwrap();
        assert!(entries[0].is("kubectl", Operation::Apply, None));
        assert!(entries[1].is("ctl", Operation::Update, Some("status")));
        let mut out = json!({"metadata": {}});
        write(&mut out, &entries);
        assert_eq!(out["metadata"]["managedFields"][0]["fieldsV1"], json!(r#"{"f:data":{"f:a":{}}}"#), "kept as text");
        assert_eq!(read(&out).unwrap(), entries, "and read back");
        crate::wire::expand(&mut out);
        assert_eq!(out, obj, "the same JSON");
        let bad = json!({"metadata": {"managedFields": [{"operation": "Merge"}]}});
        assert!(read(&bad).unwrap_err().0.starts_with("metadata.managedFields[0].operation"));
        let text = json!({"metadata": {"managedFields": [{"operation": "Apply", "fieldsV1": "{\"f:a\": 1}"}]}});
        assert!(read(&text).unwrap_err().0.starts_with("metadata.managedFields[0].fieldsV1: f:a: expected an object"));
        let mut empty = Entry { fields: FieldSet::new(), ..entries[0].clone() };
        empty.manager = "gone".into();
        write(&mut out, &[empty]);
        assert_eq!(out, json!({"metadata": {}}), "an entry that owns nothing is dropped");
    }
}
