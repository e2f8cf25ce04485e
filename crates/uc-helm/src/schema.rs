//! A chart's `values.schema.json` checked as Helm checks it (xeipuuv/gojsonschema, JSON Schema draft 7):
//! the coalesced values of the chart and of each subchart against its own schema, every failure listed
//! as `- <field>: <description>` in gojsonschema's words under the chart's name.

use serde_json::Value as Json;

use crate::chart::Chart;

/// Helm's `ValidateAgainstSchema`: the failures of `chart` and its subcharts, or `None`.
pub fn validate(chart: &Chart, values: &Json) -> Option<String> {
    let mut out = String::new();
    if let Some(schema) = &chart.schema {
        let mut errors = Vec::new();
        check(schema, values, "(root)", &mut errors);
        if !errors.is_empty() {
            out.push_str(&format!("{}:\n", chart.name()));
            for e in errors {
                out.push_str(&format!("- {e}\n"));
            }
        }
    }
    for sub in &chart.dependencies {
        let sub_values = values.get(sub.name()).cloned().unwrap_or(Json::Object(Default::default()));
        if let Some(e) = validate(sub, &sub_values) {
            out.push_str(&e);
        }
    }
    (!out.is_empty()).then_some(out)
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
fn num(v: &Json) -> String {
    v.as_f64().map(crate::gotemplate::value::format_float_v).unwrap_or_else(|| v.to_string())
}

fn check(schema: &Json, v: &Json, path: &str, errors: &mut Vec<String>) {
    let Some(s) = schema.as_object() else { return };
    let mut fail = |m: String| errors.push(format!("{path}: {m}"));
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Json::String(one) => vec![one.as_str()],
            Json::Array(many) => many.iter().filter_map(Json::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| type_matches(t, v)) {
            fail(format!("Invalid type. Expected: {}, given: {}", types.join(", "), type_of(v)));
            return;
        }
    }
    if let Some(allowed) = s.get("enum").and_then(Json::as_array)
        && !allowed.contains(v)
    {
        let list: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
        fail(format!("{} must be one of the following: {}", path, list.join(", ")));
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        fail(format!("{path} does not match: {c}"));
    }
    match v {
        Json::Number(_) => numbers(s, v, &mut fail),
        Json::String(text) => strings(s, text, &mut fail),
        Json::Array(items) => {
            if let Some(min) = s.get("minItems").and_then(Json::as_u64)
                && (items.len() as u64) < min
            {
                fail(format!("Array must have at least {min} items"));
            }
            if let Some(max) = s.get("maxItems").and_then(Json::as_u64)
                && (items.len() as u64) > max
            {
                fail(format!("Array must have at most {max} items"));
            }
            if let Some(item_schema) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item_schema, item, &child(path, &i.to_string()), errors);
                }
            }
        }
        Json::Object(map) => object(s, map, path, errors),
        _ => {}
    }
}

fn numbers(s: &serde_json::Map<String, Json>, v: &Json, fail: &mut dyn FnMut(String)) {
    let x = v.as_f64().unwrap_or(0.0);
    let bound = |k: &str| s.get(k).filter(|b| b.is_number());
    if let Some(min) = bound("minimum")
        && x < min.as_f64().unwrap_or(0.0)
    {
        fail(format!("Must be greater than or equal to {}", num(min)));
    }
    if let Some(max) = bound("maximum")
        && x > max.as_f64().unwrap_or(0.0)
    {
        fail(format!("Must be less than or equal to {}", num(max)));
    }
    if let Some(min) = bound("exclusiveMinimum")
        && x <= min.as_f64().unwrap_or(0.0)
    {
        fail(format!("Must be greater than {}", num(min)));
    }
    if let Some(max) = bound("exclusiveMaximum")
        && x >= max.as_f64().unwrap_or(0.0)
    {
        fail(format!("Must be less than {}", num(max)));
    }
    if let Some(m) = bound("multipleOf").and_then(Json::as_f64)
        && m != 0.0
        && (x / m).fract() != 0.0
    {
        fail(format!("Must be a multiple of {}", crate::gotemplate::value::format_float_v(m)));
    }
}

fn strings(s: &serde_json::Map<String, Json>, text: &str, fail: &mut dyn FnMut(String)) {
    let len = text.chars().count() as u64;
    if let Some(min) = s.get("minLength").and_then(Json::as_u64)
        && len < min
    {
        fail(format!("String length must be greater than or equal to {min}"));
    }
    if let Some(max) = s.get("maxLength").and_then(Json::as_u64)
        && len > max
    {
        fail(format!("String length must be less than or equal to {max}"));
    }
    if let Some(p) = s.get("pattern").and_then(Json::as_str)
        && regex::Regex::new(p).is_ok_and(|re| !re.is_match(text))
    {
        fail(format!("Does not match pattern '{p}'"));
    }
}

fn object(
    s: &serde_json::Map<String, Json>,
    map: &serde_json::Map<String, Json>,
    path: &str,
    errors: &mut Vec<String>,
) {
    for r in s.get("required").and_then(Json::as_array).into_iter().flatten().filter_map(Json::as_str) {
        if !map.contains_key(r) {
            errors.push(format!("{path}: {r} is required"));
        }
    }
    let props = s.get("properties").and_then(Json::as_object);
    if let Some(props) = props {
        for (k, sub) in props {
            if let Some(v) = map.get(k) {
                check(sub, v, &child(path, k), errors);
            }
        }
    }
    if s.get("additionalProperties") == Some(&Json::Bool(false)) {
        for k in map.keys().filter(|k| props.is_none_or(|p| !p.contains_key(*k))) {
            errors.push(format!("{path}: Additional property {k} is not allowed"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(schema: Json, v: Json) -> Vec<String> {
        let mut out = Vec::new();
        check(&schema, &v, "(root)", &mut out);
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
}
