//! JSON as Go's `encoding/json` writes a template value (Helm's `toJson`): keys sorted, `<`, `>` and `&`
//! escaped, floats in Go's shortest form (`1` for 1.0, exponents past 1e21 and under 1e-6).

use crate::gotemplate::Value;

/// `json.Marshal(v)`.
pub fn to_json(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Invalid | Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n) => out.push_str(&n.to_string()),
        Value::Float(f) => out.push_str(&float(*f)),
        Value::Str(s) => string(s, out),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push('{');
            for (i, (k, item)) in m.borrow().iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(k, out);
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
        Value::Object(o) => string(&o.print(), out),
    }
}

/// A float as encoding/json writes it.
pub fn float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let abs = f.abs();
    if (1e-6..1e21).contains(&abs) {
        let s = format!("{f}");
        return s;
    }
    let s = format!("{f:e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    format!("{m}e{}{}", if e < 0 { '-' } else { '+' }, e.abs())
}

fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_go_marshals() {
        let v =
            Value::from_json(&serde_json::json!({"b": [1, 2.5, null], "a": "<x&y>", "f": 1e21, "g": 0.0000001}), false);
        assert_eq!(to_json(&v), r#"{"a":"\u003cx\u0026y\u003e","b":[1,2.5,null],"f":1e+21,"g":1e-7}"#);
    }
}
