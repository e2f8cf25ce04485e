//! Server-side printing: `meta.k8s.io/v1 Table` responses for `kubectl get`, with the columns of the
//! built-in kinds as kube-apiserver's printers give them (`builtin.rs`) and the
//! `additionalPrinterColumns` of CRDs, and the JSONPath subset those use (`jsonpath.rs`).

use serde_json::{Value, json};
use uc_api::Pointer;

use crate::registry::{PrinterColumn, ResourceInfo};

mod age;
mod autoscaling;
mod builtin;
mod cells;
mod jsonpath;
mod networking;
mod pod;

use age::age_of;
use builtin::builtin_columns;
pub use jsonpath::eval_jsonpath;

/// What rows carry besides their cells (`?includeObject=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

/// Column definitions of a resource at a version.
pub fn column_definitions(info: &ResourceInfo, version: &str) -> Vec<Value> {
    let Some(custom) = custom_columns(info, version) else {
        let columns = builtin_columns(&info.resource).into_iter();
        return columns
            .map(|c| json!({"name": c.name, "type": c.ty, "format": c.format, "description": "", "priority": c.priority}))
            .collect();
    };
    let name =
        json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0});
    let columns = custom.iter().map(|c| {
        json!({"name": c.name, "type": c.ty, "format": c.format, "description": c.description, "priority": c.priority})
    });
    std::iter::once(name).chain(columns).collect()
}

/// ObjectMeta's description of `name`, as kube's column definitions give it.
const NAME_DESCRIPTION: &str = "Name must be unique within a namespace.";

fn custom_columns<'a>(info: &'a ResourceInfo, version: &str) -> Option<&'a [PrinterColumn]> {
    info.crd.as_ref()?;
    let cols = &info.version(version)?.printer_columns;
    if cols.is_empty() { None } else { Some(cols) }
}

/// One table row for an object.
pub fn row(info: &ResourceInfo, version: &str, obj: &Value, include: IncludeObject) -> Value {
    let cells: Vec<Value> = match custom_columns(info, version) {
        Some(custom) => {
            let name = obj.at("/metadata/name").cloned().unwrap_or(Value::Null);
            let columns = custom.iter().map(|c| render_cell(c, &eval_jsonpath(&c.json_path, obj)));
            std::iter::once(name).chain(columns).collect()
        }
        None => builtin_columns(&info.resource).into_iter().map(|c| (c.cell)(obj)).collect(),
    };
    let mut r = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            r["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata").cloned().unwrap_or(Value::Null)});
        }
        IncludeObject::Object => r["object"] = obj.clone(),
    }
    r
}

fn render_cell(c: &PrinterColumn, found: &[&Value]) -> Value {
    let Some(first) = found.first() else {
        return Value::Null;
    };
    if c.ty == "date" {
        return age_of(Some(first));
    }
    if found.len() > 1 {
        let parts: Vec<String> =
            found.iter().map(|v| v.as_str().map(String::from).unwrap_or_else(|| v.to_string())).collect();
        return Value::String(parts.join(","));
    }
    match (c.ty.as_str(), first) {
        ("string", Value::String(_)) => (*first).clone(),
        ("string", other) => Value::String(other.to_string()),
        _ => (*first).clone(),
    }
}
