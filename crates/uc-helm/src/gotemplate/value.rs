//! What Go templates compute with, as Helm hands them data: the values of `map[string]interface{}`
//! trees (from YAML and JSON), the scalars of template constants, and Helm's objects with methods
//! (`.Files`, `.Capabilities.APIVersions`).
//!
//! Go tells apart *no value* (an invalid `reflect.Value`: printed `<no value>`, a field of it is
//! silently nothing) and a *nil interface* (a key a map lacks under `missingkey=zero`, a YAML `null`:
//! a field of it fails with `nil pointer evaluating interface {}.x`). Both are kept.

use crate::error::HelmError;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::rc::Rc;

/// A Go map: shared, and changed in place by `set`, `unset` and `merge` wherever it is referenced.
pub type Dict = Rc<RefCell<BTreeMap<String, Value>>>;

/// A method of an [`Object`]: its arguments, evaluated, to a value or an error (in Go's words).
pub type Method = Rc<dyn Fn(&[Value]) -> Result<Value, HelmError>>;

/// A Go value with fields and methods that templates reach as `.Name`.
pub trait Object {
    /// Go's name of its type, for error messages (`chart.Files`).
    fn type_name(&self) -> &str;
    /// A field or a method by name.
    fn member(&self, name: &str) -> Option<Member>;
    /// How `fmt.Print` shows it (its `String()` method, or its fields).
    fn print(&self) -> String;

    /// What `range` and `len` see when the Go type is a map or a slice (keys or indexes, and values).
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        None
    }
}

/// What a name on an [`Object`] is.
pub enum Member {
    /// A field: a value.
    Field(Value),
    /// A method: called with the command's arguments (none in the middle of a chain).
    Method(Method),
}

/// A value.
#[derive(Clone, Default)]
pub enum Value {
    /// No value (Go's invalid `reflect.Value`).
    #[default]
    Invalid,
    /// A nil interface.
    Nil,
    Bool(bool),
    /// An integer (Go's `int`/`int64`).
    Int(i64),
    /// A float (Go's `float64`: every number of a YAML values file, as Helm reads them).
    Float(f64),
    Str(Rc<str>),
    List(Rc<Vec<Value>>),
    /// A `map[string]interface{}`: ranged and printed in key order, as Go does.
    Map(Dict),
    /// An object with methods.
    Object(Rc<dyn Object>),
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Invalid => f.write_str("Invalid"),
            Value::Nil => f.write_str("Nil"),
            Value::Str(s) => write!(f, "{s:?}"),
            other => write!(f, "{}:{}", other.type_name(), other.print()),
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Invalid, Value::Invalid) | (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => Rc::ptr_eq(a, b) || *a.borrow() == *b.borrow(),
            (Value::Object(a), Value::Object(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(s.into())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(s.into())
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Self {
        Value::List(Rc::new(items))
    }
}

impl From<BTreeMap<String, Value>> for Value {
    fn from(map: BTreeMap<String, Value>) -> Self {
        Value::Map(Rc::new(RefCell::new(map)))
    }
}

impl Value {
    /// A map of these entries.
    pub fn map<K: Into<String>>(entries: impl IntoIterator<Item = (K, Value)>) -> Value {
        Value::from(entries.into_iter().map(|(k, v)| (k.into(), v)).collect::<BTreeMap<String, Value>>())
    }

    /// A JSON document as Go decodes it into `interface{}` with `UseNumber` off for floats: integers
    /// stay integers when `ints` (a Kubernetes object's JSON), else every number is a float64 (a values
    /// file, read through sigs.k8s.io/yaml).
    pub fn from_json(v: &serde_json::Value, ints: bool) -> Value {
        match v {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) if ints => Value::Int(i),
                _ => Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            serde_json::Value::String(s) => Value::Str(s.as_str().into()),
            serde_json::Value::Array(a) => Value::List(Rc::new(a.iter().map(|x| Value::from_json(x, ints)).collect())),
            serde_json::Value::Object(o) => {
                Value::from(o.iter().map(|(k, x)| (k.clone(), Value::from_json(x, ints))).collect::<BTreeMap<_, _>>())
            }
        }
    }

    /// The value as JSON (objects as their printed form); `None` for no value.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Invalid | Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(n) => serde_json::Value::from(*n),
            Value::Float(f) => serde_json::Number::from_f64(*f).map(serde_json::Value::Number).unwrap_or_default(),
            Value::Str(s) => serde_json::Value::String(s.to_string()),
            Value::List(items) => serde_json::Value::Array(items.iter().map(Value::to_json).collect()),
            Value::Map(m) => {
                serde_json::Value::Object(m.borrow().iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
            Value::Object(o) => serde_json::Value::String(o.print()),
        }
    }

    /// Go's name of the value's type, as errors print it.
    pub fn type_name(&self) -> String {
        match self {
            Value::Invalid => "invalid".into(),
            Value::Nil => "interface {}".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Float(_) => "float64".into(),
            Value::Str(_) => "string".into(),
            Value::List(_) => "[]interface {}".into(),
            Value::Map(_) => "map[string]interface {}".into(),
            Value::Object(o) => o.type_name().into(),
        }
    }

    /// Whether `if` takes the value as true (Go's `template.IsTrue`).
    pub fn truth(&self) -> bool {
        match self {
            Value::Invalid | Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(n) => *n != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(items) => !items.is_empty(),
            Value::Map(m) => !m.borrow().is_empty(),
            Value::Object(_) => true,
        }
    }

    /// The string inside, if a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// How `fmt.Print` writes the value (`{{ . }}` in a template).
    pub fn print(&self) -> String {
        let mut out = String::new();
        self.print_into(&mut out, true);
        out
    }

    fn print_into(&self, out: &mut String, top: bool) {
        match self {
            // Only a template's own output says `<no value>`; inside a map or list a nil is `<nil>`.
            Value::Invalid if top => out.push_str("<no value>"),
            Value::Invalid | Value::Nil => out.push_str("<nil>"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Value::Float(f) => out.push_str(&format_float_v(*f)),
            Value::Str(s) => out.push_str(s),
            Value::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    item.print_into(out, false);
                }
                out.push(']');
            }
            Value::Map(m) => {
                out.push_str("map[");
                for (i, (k, v)) in m.borrow().iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(k);
                    out.push(':');
                    v.print_into(out, false);
                }
                out.push(']');
            }
            Value::Object(o) => out.push_str(&o.print()),
        }
    }
}

/// A float64 as Go's `%v` writes it: the shortest digits that read back, in `%e` form when the
/// exponent is below -4 or at least 21 — no: at least the precision, 6 for the shortest form, or the
/// number of digits when the number is an integer with more (strconv.FormatFloat(f, 'g', -1, 64)).
pub fn format_float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits = mantissa.trim_start_matches('-').replace('.', "").len() as i32;
    let point = exp + 1;
    let mut eprec = 6;
    if eprec > digits && digits >= point {
        eprec = digits;
    }
    if exp < -4 || exp >= eprec {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_gos_v_verb() {
        for (f, want) in [
            (1.0, "1"),
            (0.5, "0.5"),
            (100000.0, "100000"),
            (1000000.0, "1e+06"),
            (123456789.0, "1.23456789e+08"),
            (1234567.5, "1.2345675e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (1.23456, "1.23456"),
            (1e21, "1e+21"),
        ] {
            assert_eq!(format_float_v(f), want, "{f}");
        }
    }

    #[test]
    fn values_print_as_fmt_print_does() {
        let v = Value::map([
            ("b", Value::from(vec![Value::Int(1), Value::Nil, Value::from("x")])),
            ("a", Value::Float(2.0)),
        ]);
        assert_eq!(v.print(), "map[a:2 b:[1 <nil> x]]");
        assert_eq!(Value::Invalid.print(), "<no value>");
        assert_eq!(Value::Nil.print(), "<nil>");
    }

    #[test]
    fn json_numbers_are_floats_unless_integers_are_asked_for() {
        let doc = serde_json::json!({"n": 3, "f": 1.5, "s": null});
        let Value::Map(m) = Value::from_json(&doc, false) else { panic!() };
        assert_eq!(m.borrow()["n"], Value::Float(3.0));
        assert_eq!(m.borrow()["s"], Value::Nil);
        let Value::Map(m) = Value::from_json(&doc, true) else { panic!() };
        assert_eq!(m.borrow()["n"], Value::Int(3));
        assert_eq!(m.borrow()["f"], Value::Float(1.5));
    }
}
