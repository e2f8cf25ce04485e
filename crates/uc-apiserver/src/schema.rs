//! Structural OpenAPI v3 schemas of CustomResourceDefinitions: parsing (with the structural rules),
//! defaulting, pruning and validation, with field paths in every error, as apiextensions v1 does.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value};

use crate::error::{FieldError, FieldErrorKind};

/// What `additionalProperties` allows.
#[derive(Debug, Clone)]
pub enum Additional {
    /// `additionalProperties: true`: anything.
    Any,
    /// `additionalProperties: {schema}`.
    Schema(Box<Schema>),
}

/// One node of a structural schema.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// `type`: object, array, string, integer, number, boolean (None only where the structural rules allow).
    pub ty: Option<String>,
    /// `properties`, each boxed: a map's nodes hold eleven entries whatever their number, and a node
    /// is hundreds of bytes (the schemas of uc up's CRDs took 17 MB unboxed, most of it empty slots).
    pub properties: BTreeMap<String, Box<Schema>>,
    /// `additionalProperties`.
    pub additional: Option<Additional>,
    /// `items`.
    pub items: Option<Box<Schema>>,
    /// `required`.
    pub required: Vec<String>,
    /// `enum`.
    pub enumeration: Vec<Value>,
    /// `default`.
    pub default: Option<Value>,
    /// `nullable`.
    pub nullable: bool,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown: bool,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded_resource: bool,
    /// `minimum`, `exclusiveMinimum`.
    pub minimum: Option<(f64, bool)>,
    /// `maximum`, `exclusiveMaximum`.
    pub maximum: Option<(f64, bool)>,
    /// `minLength`.
    pub min_length: Option<u64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `pattern`, compiled.
    pub pattern: Option<(String, Regex)>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `uniqueItems`.
    pub unique_items: bool,
    /// `minProperties`.
    pub min_properties: Option<u64>,
    /// `maxProperties`.
    pub max_properties: Option<u64>,
    /// `format`.
    pub format: Option<String>,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `allOf`, `anyOf`, `oneOf`: validation only.
    pub all_of: Vec<Schema>,
    /// `anyOf`.
    pub any_of: Vec<Schema>,
    /// `oneOf`.
    pub one_of: Vec<Schema>,
    /// `not`.
    pub not: Option<Box<Schema>>,
    /// `x-kubernetes-map-type`.
    pub map_type: Option<String>,
}

const TYPES: &[&str] = &["object", "array", "string", "integer", "number", "boolean"];

impl Schema {
    /// Parses an `openAPIV3Schema`, checking the structural rules; errors carry paths under `base`.
    pub fn parse(v: &Value, base: &str) -> Result<Schema, Vec<FieldError>> {
        let mut errs = Vec::new();
        let s = parse_node(v, base, true, false, &mut errs);
        if errs.is_empty() { Ok(s) } else { Err(errs) }
    }

    /// Applies `default`s to absent fields, recursively. `root` skips apiVersion/kind/metadata.
    pub fn apply_defaults(&self, v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, prop) in &self.properties {
                    match map.get_mut(k) {
                        Some(Value::Null) if !prop.nullable && prop.default.is_some() => {
                            map.insert(k.clone(), prop.default.clone().unwrap_or(Value::Null));
                        }
                        Some(child) => prop.apply_defaults(child),
                        None => {
                            if let Some(d) = &prop.default {
                                let mut d = d.clone();
                                prop.apply_defaults(&mut d);
                                map.insert(k.clone(), d);
                            }
                        }
                    }
                }
                if let Some(Additional::Schema(ap)) = &self.additional {
                    for (_, child) in map.iter_mut() {
                        ap.apply_defaults(child);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = &self.items {
                    for item in items {
                        item_schema.apply_defaults(item);
                    }
                }
            }
            _ => {}
        }
    }

    /// Removes fields the schema does not specify; returns their paths (for strict field validation).
    pub fn prune(&self, v: &mut Value, path: &str, pruned: &mut Vec<String>) {
        self.prune_at(v, &mut path.to_string(), pruned);
    }

    /// `prune` with the path in one buffer, each level appending its segment and taking it off again:
    /// a path is written out only for what is pruned.
    fn prune_at(&self, v: &mut Value, path: &mut String, pruned: &mut Vec<String>) {
        if self.preserve_unknown && self.properties.is_empty() && self.additional.is_none() && self.items.is_none() {
            return;
        }
        match v {
            Value::Object(map) => {
                let mut unknown = Vec::new();
                for (k, child) in map.iter_mut() {
                    if let Some(schema) = self.member(k) {
                        let len = push_key(path, k);
                        schema.prune_at(child, path, pruned);
                        path.truncate(len);
                    } else if matches!(self.additional, Some(Additional::Any)) || self.preserve_unknown {
                        // kept as is
                    } else if self.embedded_resource && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                        // embedded objects always keep their type and metadata
                    } else {
                        pruned.push(join(path, k));
                        unknown.push(k.clone());
                    }
                }
                for k in unknown {
                    map.remove(&k);
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = &self.items {
                    for (i, item) in items.iter_mut().enumerate() {
                        let len = push_index(path, i);
                        item_schema.prune_at(item, path, pruned);
                        path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }

    /// Validates a value; appends errors with field paths.
    pub fn validate(&self, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
        self.validate_at(v, &mut path.to_string(), errs);
    }

    /// `validate` with the path in one buffer (see `prune_at`): a valid object costs no path strings.
    fn validate_at(&self, v: &Value, path: &mut String, errs: &mut Vec<FieldError>) {
        if v.is_null() {
            if !self.nullable && self.ty.is_some() {
                errs.push(type_error(path, v, self.ty.as_deref().unwrap_or("object")));
            }
            return;
        }
        if self.int_or_string {
            if !(v.is_string() || v.is_i64() || v.is_u64()) {
                errs.push(FieldError::invalid(
                    path.as_str(),
                    v,
                    format!("{path} in body must be of type integer-or-string"),
                ));
                return;
            }
        } else if let Some(ty) = &self.ty
            && !type_matches(ty, v)
        {
            errs.push(type_error(path, v, ty));
            return;
        }
        if !self.enumeration.is_empty() && !self.enumeration.contains(v) {
            let supported: Vec<String> = self.enumeration.iter().map(|e| e.to_string()).collect();
            errs.push(FieldError::new(
                FieldErrorKind::NotSupported,
                path.as_str(),
                Some(v.to_string()),
                format!("supported values: {}", supported.join(", ")),
            ));
        }
        match v {
            Value::Object(map) => self.validate_object(map, path, errs),
            Value::Array(items) => self.validate_array(items, path, errs),
            Value::String(s) => self.validate_string(s, v, path, errs),
            Value::Number(n) => {
                let x = n.as_f64().unwrap_or(0.0);
                if let Some((min, excl)) = self.minimum
                    && (x < min || (excl && x == min))
                {
                    let op = if excl { "greater than" } else { "greater than or equal to" };
                    errs.push(FieldError::invalid(path.as_str(), v, format!("{path} in body should be {op} {min}")));
                }
                if let Some((max, excl)) = self.maximum
                    && (x > max || (excl && x == max))
                {
                    let op = if excl { "less than" } else { "less than or equal to" };
                    errs.push(FieldError::invalid(path.as_str(), v, format!("{path} in body should be {op} {max}")));
                }
                if self.format.as_deref() == Some("int32") && n.as_i64().is_some_and(|i| i32::try_from(i).is_err()) {
                    errs.push(FieldError::invalid(path.as_str(), v, format!("{path} in body must be of type int32")));
                }
            }
            _ => {}
        }
        for s in &self.all_of {
            s.validate_at(v, path, errs);
        }
        if !self.any_of.is_empty() && !self.any_of.iter().any(|s| passes(s, v, path)) {
            errs.push(FieldError::invalid(
                path.as_str(),
                v,
                format!("{path} in body must match at least one schema (anyOf)"),
            ));
        }
        if !self.one_of.is_empty() && self.one_of.iter().filter(|s| passes(s, v, path)).count() != 1 {
            errs.push(FieldError::invalid(
                path.as_str(),
                v,
                format!("{path} in body must match exactly one schema (oneOf)"),
            ));
        }
        if let Some(not) = &self.not
            && passes(not, v, path)
        {
            errs.push(FieldError::invalid(path.as_str(), v, format!("{path} in body must not match the schema (not)")));
        }
    }

    fn validate_object(&self, map: &Map<String, Value>, path: &mut String, errs: &mut Vec<FieldError>) {
        for r in &self.required {
            if !map.contains_key(r) {
                errs.push(FieldError::required(join(path, r), ""));
            }
        }
        for (k, child) in map {
            let Some(schema) = self.member(k) else { continue };
            let len = push_key(path, k);
            schema.validate_at(child, path, errs);
            path.truncate(len);
        }
        let n = map.len() as u64;
        if let Some(min) = self.min_properties
            && n < min
        {
            errs.push(FieldError::invalid(
                path.as_str(),
                &Value::from(n),
                format!("{path} in body should have at least {min} properties"),
            ));
        }
        if let Some(max) = self.max_properties
            && n > max
        {
            errs.push(FieldError::new(
                FieldErrorKind::TooLong,
                path.as_str(),
                None,
                format!("must have at most {max} properties"),
            ));
        }
    }

    fn validate_array(&self, items: &[Value], path: &mut String, errs: &mut Vec<FieldError>) {
        if let Some(item_schema) = &self.items {
            for (i, item) in items.iter().enumerate() {
                let len = push_index(path, i);
                item_schema.validate_at(item, path, errs);
                path.truncate(len);
            }
        }
        let n = items.len() as u64;
        if let Some(min) = self.min_items
            && n < min
        {
            errs.push(FieldError::invalid(
                path.as_str(),
                &Value::from(n),
                format!("{path} in body should have at least {min} items"),
            ));
        }
        if let Some(max) = self.max_items
            && n > max
        {
            errs.push(FieldError::new(
                FieldErrorKind::TooLong,
                path.as_str(),
                None,
                format!("must have at most {max} items"),
            ));
        }
        let set_like = self.unique_items || self.list_type.as_deref() == Some("set");
        // Items (and map keys) already seen, by their JSON: a long list is not scanned once per item.
        if set_like {
            let mut seen = std::collections::HashSet::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                if !seen.insert(item.to_string()) {
                    errs.push(FieldError::new(
                        FieldErrorKind::Duplicate,
                        format!("{path}[{i}]"),
                        Some(item.to_string()),
                        "",
                    ));
                }
            }
        }
        if self.list_type.as_deref() == Some("map") && !self.list_map_keys.is_empty() {
            let key_of = |item: &Value| -> Vec<Value> {
                self.list_map_keys.iter().map(|k| item.get(k).cloned().unwrap_or(Value::Null)).collect()
            };
            let mut seen = std::collections::HashSet::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let k = Value::Array(key_of(item)).to_string();
                if seen.contains(&k) {
                    errs.push(FieldError::new(FieldErrorKind::Duplicate, format!("{path}[{i}]"), Some(k), ""));
                } else {
                    seen.insert(k);
                }
            }
        }
    }

    fn validate_string(&self, s: &str, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
        let len = s.chars().count() as u64;
        if let Some(min) = self.min_length
            && len < min
        {
            errs.push(FieldError::invalid(path, v, format!("{path} in body should be at least {min} chars long")));
        }
        if let Some(max) = self.max_length
            && len > max
        {
            errs.push(FieldError::new(
                FieldErrorKind::TooLong,
                path,
                None,
                format!("may not be more than {max} bytes"),
            ));
        }
        if let Some((src, re)) = &self.pattern
            && !re.is_match(s)
        {
            errs.push(FieldError::invalid(path, v, format!("{path} in body should match '{src}'")));
        }
        if let Some(fmt) = &self.format {
            let ok = match fmt.as_str() {
                "date-time" => chrono::DateTime::parse_from_rfc3339(s).is_ok(),
                "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
                "byte" => {
                    use base64::Engine;
                    base64::engine::general_purpose::STANDARD.decode(s).is_ok()
                }
                _ => true,
            };
            if !ok {
                errs.push(FieldError::invalid(path, v, format!("{path} in body must be of type {fmt}: {s:?}")));
            }
        }
    }

    /// Looks up the schema of a sub-path (used by the scale subresource and printer columns).
    pub fn at(&self, segments: &[&str]) -> Option<&Schema> {
        let Some((first, rest)) = segments.split_first() else {
            return Some(self);
        };
        self.member(first)?.at(rest)
    }

    /// The schema of an object's member: its property's, else `additionalProperties`'.
    fn member(&self, key: &str) -> Option<&Schema> {
        match (self.properties.get(key), &self.additional) {
            (Some(prop), _) => Some(prop),
            (None, Some(Additional::Schema(ap))) => Some(ap),
            _ => None,
        }
    }
}

fn passes(s: &Schema, v: &Value, path: &mut String) -> bool {
    let mut e = Vec::new();
    s.validate_at(v, path, &mut e);
    e.is_empty()
}

fn join(path: &str, key: &str) -> String {
    let mut joined = path.to_string();
    push_key(&mut joined, key);
    joined
}

/// Appends `.key` to a path (`key` alone at the root); returns the length to truncate back to.
fn push_key(path: &mut String, key: &str) -> usize {
    let len = path.len();
    if len > 0 {
        path.push('.');
    }
    path.push_str(key);
    len
}

/// Appends `[i]` to a path; returns the length to truncate back to.
fn push_index(path: &mut String, i: usize) -> usize {
    use std::fmt::Write;
    let len = path.len();
    let _ = write!(path, "[{i}]");
    len
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        _ => true,
    }
}

fn type_error(path: &str, v: &Value, ty: &str) -> FieldError {
    FieldError::invalid(path, v, format!("{path} in body must be of type {ty}: {:?}", json_type(v)))
}

/// A schema's children: `properties`, `additionalProperties` (not beside properties), `items` (which
/// an array must have outside a junctor).
fn parse_children(s: &mut Schema, map: &Map<String, Value>, path: &str, in_junctor: bool, errs: &mut Vec<FieldError>) {
    if let Some(props) = map.get("properties").and_then(Value::as_object) {
        for (k, pv) in props {
            let child = parse_node(pv, &format!("{path}.properties[{k}]"), false, in_junctor, errs);
            s.properties.insert(k.clone(), Box::new(child));
        }
    }
    match map.get("additionalProperties") {
        Some(Value::Bool(true)) => s.additional = Some(Additional::Any),
        Some(Value::Bool(false)) | None => {}
        Some(ap) => {
            if !s.properties.is_empty() {
                errs.push(FieldError::forbidden(
                    join(path, "additionalProperties"),
                    "additionalProperties and properties are mutual exclusive",
                ));
            }
            s.additional = Some(Additional::Schema(Box::new(parse_node(
                ap,
                &join(path, "additionalProperties"),
                false,
                in_junctor,
                errs,
            ))));
        }
    }
    if let Some(items) = map.get("items") {
        s.items = Some(Box::new(parse_node(items, &join(path, "items"), false, in_junctor, errs)));
    } else if s.ty.as_deref() == Some("array") && !in_junctor {
        errs.push(FieldError::required(join(path, "items"), "must be specified"));
    }
}

/// A schema's value constraints: bounds, lengths, counts, format, list and map types, pattern.
fn parse_constraints(s: &mut Schema, map: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    let get_bool = |k: &str| map.get(k).and_then(Value::as_bool).unwrap_or(false);
    let get_u64 = |k: &str| map.get(k).and_then(Value::as_u64);
    let num = |k: &str| map.get(k).and_then(Value::as_f64);
    s.minimum = num("minimum").map(|m| (m, get_bool("exclusiveMinimum")));
    s.maximum = num("maximum").map(|m| (m, get_bool("exclusiveMaximum")));
    s.min_length = get_u64("minLength");
    s.max_length = get_u64("maxLength");
    s.min_items = get_u64("minItems");
    s.max_items = get_u64("maxItems");
    s.min_properties = get_u64("minProperties");
    s.max_properties = get_u64("maxProperties");
    s.format = map.get("format").and_then(Value::as_str).map(String::from);
    s.list_type = map.get("x-kubernetes-list-type").and_then(Value::as_str).map(String::from);
    s.map_type = map.get("x-kubernetes-map-type").and_then(Value::as_str).map(String::from);
    s.list_map_keys = map
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
        .unwrap_or_default();
    if let Some(p) = map.get("pattern").and_then(Value::as_str) {
        match Regex::new(p) {
            Ok(re) => s.pattern = Some((p.to_string(), re)),
            Err(e) => errs.push(FieldError::invalid(
                join(path, "pattern"),
                &Value::from(p),
                format!("must be a valid regular expression: {e}"),
            )),
        }
    }
}

fn parse_node(v: &Value, path: &str, root: bool, in_junctor: bool, errs: &mut Vec<FieldError>) -> Schema {
    let mut s = Schema::default();
    let Some(map) = v.as_object() else {
        errs.push(FieldError::invalid(path, v, "must be a schema object"));
        return s;
    };
    let get_bool = |k: &str| map.get(k).and_then(Value::as_bool).unwrap_or(false);
    s.ty = map.get("type").and_then(Value::as_str).map(String::from);
    if let Some(ty) = &s.ty
        && !TYPES.contains(&ty.as_str())
    {
        errs.push(FieldError::new(
            FieldErrorKind::NotSupported,
            join(path, "type"),
            Some(format!("{ty:?}")),
            "supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
        ));
    }
    s.nullable = get_bool("nullable");
    s.preserve_unknown = get_bool("x-kubernetes-preserve-unknown-fields");
    s.int_or_string = get_bool("x-kubernetes-int-or-string");
    s.embedded_resource = get_bool("x-kubernetes-embedded-resource");
    s.unique_items = get_bool("uniqueItems");
    if s.ty.is_none() && !s.preserve_unknown && !s.int_or_string && !in_junctor {
        errs.push(FieldError::required(join(path, "type"), "must not be empty for specified object fields"));
    }
    if root && s.ty.as_deref().is_some_and(|t| t != "object") {
        errs.push(FieldError::invalid(join(path, "type"), &Value::from(s.ty.clone()), "must be object at the root"));
    }
    parse_children(&mut s, map, path, in_junctor, errs);
    s.required = map
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
        .unwrap_or_default();
    s.enumeration = map.get("enum").and_then(Value::as_array).cloned().unwrap_or_default();
    s.default = map.get("default").cloned();
    if s.default.is_some() && root {
        errs.push(FieldError::forbidden(join(path, "default"), "must not be set at the root"));
    }
    parse_constraints(&mut s, map, path, errs);
    let list = |k: &str, errs: &mut Vec<FieldError>| -> Vec<Schema> {
        map.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .enumerate()
                    .map(|(i, x)| parse_node(x, &format!("{path}.{k}[{i}]"), false, true, errs))
                    .collect()
            })
            .unwrap_or_default()
    };
    s.all_of = list("allOf", errs);
    s.any_of = list("anyOf", errs);
    s.one_of = list("oneOf", errs);
    if let Some(n) = map.get("not") {
        s.not = Some(Box::new(parse_node(n, &join(path, "not"), false, true, errs)));
    }
    if let Some(d) = &s.default {
        let mut de = Vec::new();
        s.validate(d, &join(path, "default"), &mut de);
        errs.extend(de);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::parse(
            &json!({
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "required": ["image"],
                        "properties": {
                            "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                            "image": {"type": "string", "pattern": "^[a-z]+$"},
                            "mode": {"type": "string", "enum": ["a", "b"]},
                            "ports": {"type": "array", "items": {"type": "integer"}, "x-kubernetes-list-type": "set"},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                            "port": {"x-kubernetes-int-or-string": true}
                        }
                    }
                }
            }),
            "spec.validation.openAPIV3Schema",
        )
        .unwrap()
    }

    #[test]
    fn map_lists_reject_items_that_repeat_their_keys() {
        let s = Schema::parse(
            &json!({"type": "object", "properties": {"items": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "port"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}}}),
            "schema",
        )
        .unwrap();
        let obj = json!({"items": [{"name": "a", "port": 1}, {"name": "a", "port": 2}, {"name": "b", "port": 1},
                                   {"name": "a", "port": 1}, {"name": "b", "port": 1}]});
        let mut errs = vec![];
        s.validate(&obj, "", &mut errs);
        let found: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            found,
            vec![
                r#"items[3]: Duplicate value: ["a",1]"#.to_string(),
                r#"items[4]: Duplicate value: ["b",1]"#.to_string()
            ]
        );
    }

    #[test]
    fn defaults_prunes_and_validates_with_paths() {
        let s = schema();
        let mut obj = json!({"spec": {"image": "nginx", "extra": 1, "free": {"x": {"y": 1}}, "labels": {"a": "b"}}, "junk": true});
        s.apply_defaults(&mut obj);
        let mut pruned = vec![];
        s.prune(&mut obj, "", &mut pruned);
        assert_eq!(pruned, vec!["junk".to_string(), "spec.extra".to_string()]);
        assert_eq!(
            obj,
            json!({"spec": {"image": "nginx", "replicas": 1, "free": {"x": {"y": 1}}, "labels": {"a": "b"}}})
        );
        let mut errs = vec![];
        s.validate(&obj, "", &mut errs);
        assert!(errs.is_empty(), "{errs:?}");

        let bad = json!({"spec": {"replicas": "three", "image": "UP", "mode": "c", "ports": [1, 1], "labels": {"a": 1}, "port": true}});
        let mut errs = vec![];
        s.validate(&bad, "", &mut errs);
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            vec!["spec.image", "spec.labels.a", "spec.mode", "spec.port", "spec.ports[1]", "spec.replicas"]
        );
        assert!(errs.last().unwrap().to_string().contains("spec.replicas in body must be of type integer"));
        let mut errs = vec![];
        s.validate(&json!({"spec": {"replicas": 11}}), "", &mut errs);
        let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            msgs,
            vec![
                "spec.image: Required value".to_string(),
                "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
                    .to_string()
            ]
        );
    }

    #[test]
    fn rejects_non_structural_schemas() {
        let errs = Schema::parse(&json!({"type": "object", "properties": {"a": {"description": "no type"}, "b": {"type": "array"}, "c": {"type": "str"}}}), "s").unwrap_err();
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, vec!["s.properties[a].type", "s.properties[b].items", "s.properties[c].type"]);
    }
}
