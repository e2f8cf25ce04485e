//! Helm's `toToml` and `fromToml`: a value written as BurntSushi/toml's encoder writes it (keys sorted,
//! plain keys before tables, a table's contents indented two spaces per level, a blank line before
//! each top-level table and each entry of an array of tables), and TOML read into maps.

use std::collections::BTreeMap;

use crate::error::HelmError;
use crate::gotemplate::Value;

fn is_table(v: &Value) -> bool {
    matches!(v, Value::Map(_))
}

fn is_table_array(v: &Value) -> bool {
    matches!(v, Value::List(l) if !l.is_empty() && l.iter().all(is_table))
}

/// A key as TOML writes it: bare when it can be.
fn key(k: &str) -> String {
    if !k.is_empty() && k.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-') {
        k.to_string()
    } else {
        quote(k)
    }
}

/// Go's TOML basic string.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn scalar(v: &Value) -> Result<String, HelmError> {
    Ok(match v {
        Value::Bool(b) => b.to_string(),
        Value::Int(n) => n.to_string(),
        Value::Float(f) if f.is_nan() => "nan".into(),
        Value::Float(f) if f.is_infinite() => if *f > 0.0 { "inf" } else { "-inf" }.into(),
        Value::Float(f) => {
            let s = format!("{f}");
            if s.contains(['.', 'e']) { s } else { format!("{s}.0") }
        }
        Value::Str(s) => quote(s),
        Value::List(l) => {
            let items: Result<Vec<String>, HelmError> =
                l.iter().filter(|x| !matches!(x, Value::Nil)).map(scalar).collect();
            format!("[{}]", items?.join(", "))
        }
        Value::Map(m) => {
            let items: Result<Vec<String>, HelmError> = m
                .borrow()
                .iter()
                .filter(|(_, x)| !matches!(x, Value::Nil))
                .map(|(k, x)| Ok(format!("{} = {}", key(k), scalar(x)?)))
                .collect();
            format!("{{{}}}", items?.join(", "))
        }
        other => return Err(HelmError::from(format!("toml: unsupported type: {}", other.type_name()))),
    })
}

struct Writer {
    out: String,
}

impl Writer {
    fn newline(&mut self) {
        if !self.out.is_empty() {
            self.out.push('\n');
        }
    }

    fn table(&mut self, path: &[String], m: &BTreeMap<String, Value>) -> Result<(), HelmError> {
        let inner = "  ".repeat(path.len());
        let plain: Vec<_> =
            m.iter().filter(|(_, v)| !is_table(v) && !is_table_array(v) && !matches!(v, Value::Nil)).collect();
        for (k, v) in plain {
            self.out.push_str(&format!("{inner}{} = {}\n", key(k), scalar(v)?));
        }
        for (k, v) in m.iter().filter(|(_, v)| is_table(v) || is_table_array(v)) {
            let mut sub = path.to_vec();
            sub.push(key(k));
            let header_indent = "  ".repeat(sub.len() - 1);
            match v {
                Value::Map(inner) => {
                    if sub.len() == 1 {
                        self.newline();
                    }
                    self.out.push_str(&format!("{header_indent}[{}]\n", sub.join(".")));
                    self.table(&sub, &inner.borrow())?;
                }
                Value::List(items) => {
                    for item in items.iter() {
                        if let Value::Map(inner) = item {
                            self.newline();
                            self.out.push_str(&format!("{header_indent}[[{}]]\n", sub.join(".")));
                            self.table(&sub, &inner.borrow())?;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// `toToml`: the TOML of a map, or the encoder's error as the text.
pub fn to_toml(v: &Value) -> String {
    let Value::Map(m) = v else { return "toml: top-level values must be Go maps or structs".into() };
    let mut w = Writer { out: String::new() };
    match w.table(&[], &m.borrow()) {
        Ok(()) => w.out,
        Err(e) => e.0,
    }
}

fn from_toml_value(v: &::toml::Value) -> Value {
    match v {
        ::toml::Value::String(s) => Value::from(s.as_str()),
        ::toml::Value::Integer(n) => Value::Int(*n),
        ::toml::Value::Float(f) => Value::Float(*f),
        ::toml::Value::Boolean(b) => Value::Bool(*b),
        ::toml::Value::Datetime(d) => Value::from(d.to_string()),
        ::toml::Value::Array(a) => Value::from(a.iter().map(from_toml_value).collect::<Vec<_>>()),
        ::toml::Value::Table(t) => {
            Value::from(t.iter().map(|(k, v)| (k.clone(), from_toml_value(v))).collect::<BTreeMap<_, _>>())
        }
    }
}

/// `fromToml`: the map of a TOML text, or `{"Error": …}`.
pub fn from_toml(text: &str) -> Value {
    match text.parse::<::toml::Table>() {
        Ok(t) => from_toml_value(&::toml::Value::Table(t)),
        Err(e) => Value::map([("Error", Value::from(format!("toml: {}", e.message())))]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burntsushis_layout() {
        let v = Value::from_json(
            &serde_json::json!({"a": 1, "s": "str", "f": 1.5, "b": true, "l": [1, 2, 3], "ls": ["x", "y"],
                "t": {"c": "d", "n": {"e": 2}}, "z": [{"k": 1}, {"k": 2}], "none": null, "q k": "v\n"}),
            true,
        );
        let want = "a = 1\nb = true\nf = 1.5\nl = [1, 2, 3]\nls = [\"x\", \"y\"]\n\"q k\" = \"v\\n\"\ns = \"str\"\n\n[t]\n  c = \"d\"\n  [t.n]\n    e = 2\n\n[[z]]\n  k = 1\n\n[[z]]\n  k = 2\n";
        assert_eq!(to_toml(&v), want);
        assert_eq!(to_toml(&Value::from_json(&serde_json::json!({"x": 3.0}), false)), "x = 3.0\n");
        let read = from_toml("a = 1\n[b]\nc = 'd'\n");
        assert_eq!(read.to_json(), serde_json::json!({"a": 1, "b": {"c": "d"}}));
        assert!(from_toml("a = ").to_json()["Error"].as_str().unwrap().starts_with("toml: "));
    }
}
