//! A chart's `values.schema.json` checked as Helm checks it (xeipuuv/gojsonschema, JSON Schema draft 7),
//! every failure in gojsonschema's words (`Chart::values_failures` walks the chart and its subcharts).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::Value as Json;

/// A JSON Schema: `true` (anything), `false` (nothing) or keywords.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Schema {
    Bool(bool),
    Keywords(Box<Keywords>),
}

/// The keywords of a JSON Schema that the checks read. A keyword of another type than draft 7 gives it
/// (`"minimum": "3"`, `items` as a list of schemas) is not checked; the rest of the schema still is.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Keywords {
    #[serde(rename = "type", default, deserialize_with = "uc_api::lenient::or_default")]
    types: Option<Types>,
    #[serde(rename = "enum", default, deserialize_with = "uc_api::lenient::or_default")]
    one_of_values: Option<Vec<Json>>,
    /// `const`, present even when it is `null`.
    #[serde(rename = "const", default, deserialize_with = "present")]
    constant: Option<Json>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    minimum: Option<f64>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    maximum: Option<f64>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    exclusive_minimum: Option<f64>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    exclusive_maximum: Option<f64>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    multiple_of: Option<f64>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    min_length: Option<u64>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    max_length: Option<u64>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    pattern: Option<String>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    min_items: Option<u64>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    max_items: Option<u64>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    items: Option<Box<Schema>>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    required: Option<Vec<String>>,
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    properties: Option<BTreeMap<String, Schema>>,
    /// Only `false` is checked (a schema for the other properties is not).
    #[serde(default, deserialize_with = "uc_api::lenient::or_default")]
    additional_properties: Option<bool>,
}

/// `type`: one name or a list of them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
enum Types {
    One(String),
    Many(Vec<String>),
}

/// A keyword whose `null` is a value, not an absence.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Json>, D::Error> {
    Json::deserialize(d).map(Some)
}

/// The failures of `values` against `schema`, each `<field>: <description>` in gojsonschema's words.
pub fn failures(schema: &Schema, values: &Json) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, values, "(root)", &mut errors);
    errors
}

/// gojsonschema's name of a JSON value's type (a number without a fraction is an integer).
fn type_of(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

fn type_matches(want: &str, v: &Json) -> bool {
    let got = type_of(v);
    want == got || (want == "number" && got == "integer")
}

/// A field's context as gojsonschema writes it: `(root)`, `a`, `a.b`, `a.0`.
fn child(path: &str, key: &str) -> String {
    if path == "(root)" { key.to_string() } else { format!("{path}.{key}") }
}

/// A number as Go's `%v` prints it in gojsonschema's messages.
fn num(x: f64) -> String {
    crate::gotemplate::value::format_float_v(x)
}

fn check(schema: &Schema, v: &Json, path: &str, errors: &mut Vec<String>) {
    let s = match schema {
        Schema::Bool(true) => return,
        Schema::Bool(false) => return errors.push(format!("{path}: False always fails validation")),
        Schema::Keywords(k) => k,
    };
    let mut fail = |m: String| errors.push(format!("{path}: {m}"));
    let types: Vec<&str> = match &s.types {
        Some(Types::One(one)) => vec![one.as_str()],
        Some(Types::Many(many)) => many.iter().map(String::as_str).collect(),
        None => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| type_matches(t, v)) {
        fail(format!("Invalid type. Expected: {}, given: {}", types.join(", "), type_of(v)));
        return;
    }
    if let Some(allowed) = &s.one_of_values
        && !allowed.contains(v)
    {
        let list: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
        fail(format!("{} must be one of the following: {}", path, list.join(", ")));
    }
    if let Some(c) = &s.constant
        && c != v
    {
        fail(format!("{path} does not match: {c}"));
    }
    match v {
        Json::Number(n) => numbers(s, n.as_f64().unwrap_or(0.0), &mut fail),
        Json::String(text) => strings(s, text, &mut fail),
        Json::Array(items) => arrays(s, items, path, errors),
        Json::Object(map) => object(s, map, path, errors),
        _ => {}
    }
}

fn numbers(s: &Keywords, x: f64, fail: &mut dyn FnMut(String)) {
    if let Some(min) = s.minimum
        && x < min
    {
        fail(format!("Must be greater than or equal to {}", num(min)));
    }
    if let Some(max) = s.maximum
        && x > max
    {
        fail(format!("Must be less than or equal to {}", num(max)));
    }
    if let Some(min) = s.exclusive_minimum
        && x <= min
    {
        fail(format!("Must be greater than {}", num(min)));
    }
    if let Some(max) = s.exclusive_maximum
        && x >= max
    {
        fail(format!("Must be less than {}", num(max)));
    }
    if let Some(m) = s.multiple_of
        && m != 0.0
        && (x / m).fract() != 0.0
    {
        fail(format!("Must be a multiple of {}", num(m)));
    }
}

fn strings(s: &Keywords, text: &str, fail: &mut dyn FnMut(String)) {
    let len = text.chars().count() as u64;
    if let Some(min) = s.min_length
        && len < min
    {
        fail(format!("String length must be greater than or equal to {min}"));
    }
    if let Some(max) = s.max_length
        && len > max
    {
        fail(format!("String length must be less than or equal to {max}"));
    }
    if let Some(p) = &s.pattern
        && regex::Regex::new(p).is_ok_and(|re| !re.is_match(text))
    {
        fail(format!("Does not match pattern '{p}'"));
    }
}

fn arrays(s: &Keywords, items: &[Json], path: &str, errors: &mut Vec<String>) {
    if let Some(min) = s.min_items
        && (items.len() as u64) < min
    {
        errors.push(format!("{path}: Array must have at least {min} items"));
    }
    if let Some(max) = s.max_items
        && (items.len() as u64) > max
    {
        errors.push(format!("{path}: Array must have at most {max} items"));
    }
    if let Some(item_schema) = &s.items {
        for (i, item) in items.iter().enumerate() {
            check(item_schema, item, &child(path, &i.to_string()), errors);
        }
    }
}

fn object(s: &Keywords, map: &serde_json::Map<String, Json>, path: &str, errors: &mut Vec<String>) {
    for r in s.required.iter().flatten() {
        if !map.contains_key(r) {
            errors.push(format!("{path}: {r} is required"));
        }
    }
    if let Some(props) = &s.properties {
        for (k, sub) in props {
            if let Some(v) = map.get(k) {
                check(sub, v, &child(path, k), errors);
            }
        }
    }
    if s.additional_properties == Some(false) {
        let listed = |k: &str| s.properties.as_ref().is_some_and(|p| p.contains_key(k));
        for k in map.keys().filter(|k| !listed(k)) {
            errors.push(format!("{path}: Additional property {k} is not allowed"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(schema: Json, v: Json) -> Vec<String> {
        let mut out = Vec::new();
        check(&serde_json::from_value(schema).unwrap(), &v, "(root)", &mut out);
        out
    }

    #[test]
    fn gojsonschemas_words() {
        let schema = serde_json::json!({"type": "object", "required": ["a", "b"], "additionalProperties": false, "properties": {
            "a": {"type": "integer", "minimum": 0}, "s": {"type": "string", "pattern": "^x", "maxLength": 2},
            "l": {"type": "array", "items": {"type": "string"}}, "e": {"enum": ["x", "y"]}}});
        let got = errors(schema, serde_json::json!({"a": -5, "s": "abc", "l": ["ok", 3], "e": "z", "zz": 1}));
        assert_eq!(
            got,
            [
                "(root): b is required",
                "a: Must be greater than or equal to 0",
                "e: e must be one of the following: \"x\", \"y\"",
                "l.1: Invalid type. Expected: string, given: integer",
                "s: String length must be less than or equal to 2",
                "s: Does not match pattern '^x'",
                "(root): Additional property zz is not allowed",
            ]
        );
        assert!(
            errors(serde_json::json!({"type": "number"}), serde_json::json!(3)).is_empty(),
            "an integer is a number"
        );
    }

    #[test]
    fn boolean_schemas_and_keywords_of_another_type() {
        let schema = serde_json::json!({"properties": {"any": true, "none": false,
            "n": {"minimum": "3", "maximum": 5, "items": [{"type": "string"}], "const": null}}});
        assert_eq!(
            errors(schema, serde_json::json!({"any": 1, "none": 1, "n": 7})),
            ["n: n does not match: null", "n: Must be less than or equal to 5", "none: False always fails validation"],
            "a minimum that is no number and items as a list are not checked; the other keywords are"
        );
        assert!(
            serde_json::from_str::<Schema>("\"a string\"").is_err(),
            "a chart whose schema is no schema fails to load"
        );
    }
}
