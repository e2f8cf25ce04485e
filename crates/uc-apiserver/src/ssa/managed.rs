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
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        m.insert("manager".into(), json!(self.manager));
        m.insert("operation".into(), json!(self.operation.as_str()));
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), json!(s));
        }
        m.insert("time".into(), json!(self.time));
        Value::Object(m)
    }
}

/// The entries of an object; a malformed `managedFields` is an error with the path at fault (kube
/// rejects such writes too).
pub fn read(obj: &Value) -> Result<Vec<Entry>, String> {
    let Some(list) = obj.get("metadata").and_then(|m| m.get("managedFields")) else { return Ok(Vec::new()) };
    let Value::Array(items) = list else {
        return Err("metadata.managedFields: must be a list".into());
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, e) in items.iter().enumerate() {
        let at = |f: &str| format!("metadata.managedFields[{i}].{f}");
        let text = |f: &str| e.get(f).and_then(Value::as_str);
        let operation = match text("operation") {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            other => return Err(format!("{}: must be Apply or Update, not {other:?}", at("operation"))),
        };
        let fields = match e.get("fieldsV1") {
            Some(f) => FieldSet::from_fields_v1(f).map_err(|m| format!("{}: {m}", at("fieldsV1")))?,
            None => FieldSet::new(),
        };
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(out, obj);
        let bad = json!({"metadata": {"managedFields": [{"operation": "Merge"}]}});
        assert!(read(&bad).unwrap_err().starts_with("metadata.managedFields[0].operation"));
        let mut empty = Entry { fields: FieldSet::new(), ..entries[0].clone() };
        empty.manager = "gone".into();
        write(&mut out, &[empty]);
        assert_eq!(out, json!({"metadata": {}}), "an entry that owns nothing is dropped");
    }
}
