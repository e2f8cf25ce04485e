//! `/openapi/v2` in protobuf (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`), the
//! encoding kubectl asks for when it validates objects on the client (for a `kind: List`, always):
//! the gnostic `openapi.v2.Document` message, written from the JSON document. Only what a schema
//! holds is written (`info`, `definitions`); field numbers are gnostic's `OpenAPIv2.proto`.

use serde_json::Value;
use uc_api::Pointer;

/// The media type the protobuf document is answered with (clients ask with `…v2@v1.0+protobuf`,
/// which is not a valid media type to parse, so kube answers with a `.` where the `@` was).
pub const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Whether an Accept header asks for the protobuf document first.
pub fn wanted(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.trim().starts_with("application/com.github.proto-openapi.spec.v2"))
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    if !s.is_empty() {
        bytes(out, field, s.as_bytes());
    }
}

fn boolean(out: &mut Vec<u8>, field: u32, b: bool) {
    if b {
        key(out, field, 0);
        varint(out, 1);
    }
}

fn int(out: &mut Vec<u8>, field: u32, i: i64) {
    key(out, field, 0);
    varint(out, i as u64);
}

fn double(out: &mut Vec<u8>, field: u32, d: f64) {
    key(out, field, 1);
    out.extend_from_slice(&d.to_le_bytes());
}

/// `Any{yaml}`: the value as YAML (JSON is YAML).
fn any(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 2, &value.to_string());
    out
}

fn named(name: &str, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 1, name);
    bytes(&mut out, 2, value);
    out
}

/// `openapi.v2.SchemaOrBoolean` of `additionalProperties` (nothing for other JSON).
fn additional_properties(v: &Value) -> Option<Vec<u8>> {
    let mut item = Vec::new();
    match v {
        Value::Bool(b) => {
            key(&mut item, 2, 0);
            varint(&mut item, u64::from(*b));
        }
        s @ Value::Object(_) => bytes(&mut item, 1, &schema(s)),
        _ => return None,
    }
    Some(item)
}

/// `openapi.v2.StringOrStringArray` of `type`.
fn type_of(t: &Value) -> Vec<u8> {
    let mut item = Vec::new();
    match t {
        Value::String(t) => string(&mut item, 1, t),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).for_each(|t| string(&mut item, 1, t)),
        _ => {}
    }
    item
}

/// `openapi.v2.Schema`.
pub fn schema(s: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let Some(m) = s.as_object() else { return out };
    let str_of = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default();
    string(&mut out, 1, str_of("$ref"));
    string(&mut out, 2, str_of("format"));
    string(&mut out, 3, str_of("title"));
    string(&mut out, 4, str_of("description"));
    if let Some(d) = m.get("default") {
        bytes(&mut out, 5, &any(d));
    }
    for (k, field) in [("multipleOf", 6), ("maximum", 7), ("minimum", 9)] {
        if let Some(d) = m.get(k).and_then(Value::as_f64) {
            double(&mut out, field, d);
        }
    }
    boolean(&mut out, 8, m.get("exclusiveMaximum").and_then(Value::as_bool).unwrap_or(false));
    boolean(&mut out, 10, m.get("exclusiveMinimum").and_then(Value::as_bool).unwrap_or(false));
    for (k, field) in [
        ("maxLength", 11),
        ("minLength", 12),
        ("maxItems", 14),
        ("minItems", 15),
        ("maxProperties", 17),
        ("minProperties", 18),
    ] {
        if let Some(i) = m.get(k).and_then(Value::as_i64) {
            int(&mut out, field, i);
        }
    }
    string(&mut out, 13, str_of("pattern"));
    boolean(&mut out, 16, m.get("uniqueItems").and_then(Value::as_bool).unwrap_or(false));
    for r in m.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        string(&mut out, 19, r);
    }
    for e in m.get("enum").and_then(Value::as_array).into_iter().flatten() {
        bytes(&mut out, 20, &any(e));
    }
    if let Some(a) = m.get("additionalProperties").and_then(additional_properties) {
        bytes(&mut out, 21, &a);
    }
    if let Some(t) = m.get("type") {
        bytes(&mut out, 22, &type_of(t));
    }
    if let Some(items) = m.get("items") {
        let mut item = Vec::new();
        match items {
            Value::Array(a) => a.iter().for_each(|s| bytes(&mut item, 1, &schema(s))),
            s => bytes(&mut item, 1, &schema(s)),
        }
        bytes(&mut out, 23, &item);
    }
    for s in m.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        bytes(&mut out, 24, &schema(s));
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        let mut item = Vec::new();
        for (name, s) in props {
            bytes(&mut item, 1, &named(name, &schema(s)));
        }
        bytes(&mut out, 25, &item);
    }
    boolean(&mut out, 27, m.get("readOnly").and_then(Value::as_bool).unwrap_or(false));
    if let Some(e) = m.get("example") {
        bytes(&mut out, 30, &any(e));
    }
    for (k, v) in m.iter().filter(|(k, _)| k.starts_with("x-")) {
        bytes(&mut out, 31, &named(k, &any(v)));
    }
    out
}

/// `openapi.v2.Document` of a JSON OpenAPI v2 document.
pub fn document(doc: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 1, doc.get("swagger").and_then(Value::as_str).unwrap_or("2.0"));
    let mut info = Vec::new();
    string(&mut info, 1, doc.at("/info/title").and_then(Value::as_str).unwrap_or_default());
    string(&mut info, 2, doc.at("/info/version").and_then(Value::as_str).unwrap_or_default());
    bytes(&mut out, 2, &info);
    bytes(&mut out, 8, &[]);
    let mut definitions = Vec::new();
    for (name, s) in doc.get("definitions").and_then(Value::as_object).into_iter().flatten() {
        bytes(&mut definitions, 1, &named(name, &schema(s)));
    }
    bytes(&mut out, 9, &definitions);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Reads the fields of one message: (field, wire type, payload bytes or the varint).
    fn fields(mut b: &[u8]) -> Vec<(u64, u64, Vec<u8>)> {
        fn read_varint(b: &mut &[u8]) -> u64 {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let byte = b[0];
                *b = &b[1..];
                v |= u64::from(byte & 0x7f) << shift;
                if byte < 0x80 {
                    return v;
                }
                shift += 7;
            }
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let k = read_varint(&mut b);
            match k & 7 {
                0 => {
                    let v = read_varint(&mut b);
                    out.push((k >> 3, 0, v.to_le_bytes().to_vec()));
                }
                1 => {
                    out.push((k >> 3, 1, b[..8].to_vec()));
                    b = &b[8..];
                }
                _ => {
                    let n = read_varint(&mut b) as usize;
                    out.push((k >> 3, 2, b[..n].to_vec()));
                    b = &b[n..];
                }
            }
        }
        out
    }

    #[test]
    fn a_schema_is_written_with_gnostics_field_numbers() {
        let s = json!({"description": "d", "type": "object", "required": ["a"],
                       "properties": {"a": {"type": "integer", "minimum": 1}},
                       "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Pod"}]});
        let f = fields(&schema(&s));
        let numbers: Vec<u64> = f.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(numbers, [4, 19, 22, 25, 31]);
        assert_eq!(f[0].2, b"d");
        assert_eq!(fields(&f[2].2), [(1, 2, b"object".to_vec())], "TypeItem.value");
        let named_a = fields(&fields(&f[3].2)[0].2);
        assert_eq!(named_a[0].2, b"a");
        let a = fields(&named_a[1].2);
        assert_eq!((a[0].0, a[0].1), (9, 1), "minimum is a double");
        assert_eq!(f64::from_le_bytes(a[0].2.clone().try_into().unwrap()), 1.0);
        let ext = fields(&f[4].2);
        assert_eq!(ext[0].2, b"x-kubernetes-group-version-kind");
        let yaml = fields(&ext[1].2);
        assert_eq!(yaml[0].0, 2, "Any.yaml");
        assert!(String::from_utf8(yaml[0].2.clone()).unwrap().contains("\"Pod\""));
    }

    #[test]
    fn the_document_holds_info_and_definitions() {
        let doc = json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1"},
                         "definitions": {"io.k8s.api.core.v1.Pod": {"type": "object"}}});
        let f = fields(&document(&doc));
        let numbers: Vec<u64> = f.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(numbers, [1, 2, 8, 9]);
        let defs = fields(&f[3].2);
        assert_eq!(fields(&defs[0].2)[0].2, b"io.k8s.api.core.v1.Pod");
        assert!(wanted("application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json"));
        assert!(!wanted("application/json"));
    }
}
