//! Template functions: how a function is declared (its parameters' Go types, which the executor
//! checks as Go's reflection does), and `text/template`'s own builtins.

use std::collections::HashMap;
use std::rc::Rc;

use super::printf;
use super::value::{Method, Value};
use crate::error::HelmError;

/// A parameter's Go type, as far as argument checks go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// `interface{}`: anything; no value arrives as nil.
    Any,
    Str,
    Int,
    Float,
    Bool,
    /// `[]interface{}`.
    List,
    /// `map[string]interface{}`.
    Map,
}

impl Ty {
    /// Whether no value may be passed (as nil).
    pub fn can_be_nil(self) -> bool {
        matches!(self, Ty::Any | Ty::List | Ty::Map)
    }

    /// Go's name of the type.
    pub fn go_name(self) -> &'static str {
        match self {
            Ty::Any => "interface {}",
            Ty::Str => "string",
            Ty::Int => "int",
            Ty::Float => "float64",
            Ty::Bool => "bool",
            Ty::List => "[]interface {}",
            Ty::Map => "map[string]interface {}",
        }
    }

    /// Whether a computed value can be passed as is.
    pub fn accepts(self, v: &Value) -> bool {
        matches!(
            (self, v),
            (Ty::Any, _)
                | (Ty::Str, Value::Str(_))
                | (Ty::Int, Value::Int(_))
                | (Ty::Float, Value::Float(_))
                | (Ty::Bool, Value::Bool(_))
                | (Ty::List, Value::List(_) | Value::Nil)
                | (Ty::Map, Value::Map(_) | Value::Nil)
        )
    }
}

/// What a function may ask of the execution calling it: to run templates of its set (Helm's `include`
/// and `tpl`).
pub trait Call {
    /// The template `name` executed with `dot`, its text.
    fn include(&mut self, name: &str, dot: &Value) -> Result<String, HelmError>;
    /// `text` parsed beside the set's templates and executed with `dot`.
    fn tpl(&mut self, text: &str, dot: &Value) -> Result<String, HelmError>;
}

/// The body of a function: the execution (for functions that run templates) and the arguments.
pub type Body = Rc<dyn Fn(&mut dyn Call, &[Value]) -> Result<Value, HelmError>>;

/// A template function.
#[derive(Clone)]
pub struct Function {
    pub params: Vec<Ty>,
    /// The type of further arguments, for a variadic function.
    pub variadic: Option<Ty>,
    pub call: Body,
}

impl Function {
    /// A function of fixed parameters.
    pub fn new(params: &[Ty], f: impl Fn(&[Value]) -> Result<Value, HelmError> + 'static) -> Self {
        Function { params: params.to_vec(), variadic: None, call: Rc::new(move |_, a| f(a)) }
    }

    /// A function taking `params` then any number of `rest`.
    pub fn variadic(params: &[Ty], rest: Ty, f: impl Fn(&[Value]) -> Result<Value, HelmError> + 'static) -> Self {
        Function { params: params.to_vec(), variadic: Some(rest), call: Rc::new(move |_, a| f(a)) }
    }

    /// A function that runs templates (Helm's `include`, `tpl`).
    pub fn with_state(
        params: &[Ty],
        f: impl Fn(&mut dyn Call, &[Value]) -> Result<Value, HelmError> + 'static,
    ) -> Self {
        Function { params: params.to_vec(), variadic: None, call: Rc::new(f) }
    }

    /// An object's method, which checks its own arguments.
    pub fn method(m: Method) -> Self {
        Function { params: Vec::new(), variadic: Some(Ty::Any), call: Rc::new(move |_, a| m(a)) }
    }
}

/// Functions by name.
pub type Funcs = HashMap<String, Function>;

/// `text/template`'s builtins.
pub fn builtins() -> Funcs {
    use Ty::*;
    let mut f = Funcs::new();
    let mut add = |name: &str, func: Function| {
        f.insert(name.to_string(), func);
    };
    // `and` and `or` are evaluated lazily by the executor; these entries declare them.
    add("and", Function::variadic(&[Any], Any, |a| Ok(a[0].clone())));
    add("or", Function::variadic(&[Any], Any, |a| Ok(a[0].clone())));
    add("not", Function::new(&[Any], |a| Ok(Value::Bool(!a[0].truth()))));
    add("len", Function::new(&[Any], |a| length(&a[0])));
    add("index", Function::variadic(&[Any], Any, |a| index(&a[0], &a[1..])));
    add("slice", Function::variadic(&[Any], Any, |a| slice(&a[0], &a[1..])));
    add("print", Function::variadic(&[], Any, |a| Ok(printf::sprint(a).into())));
    add("println", Function::variadic(&[], Any, |a| Ok(printf::sprintln(a).into())));
    add(
        "printf",
        Function::variadic(&[Str], Any, |a| Ok(printf::sprintf(a[0].as_str().unwrap_or(""), &a[1..]).into())),
    );
    add("eq", Function::variadic(&[Any], Any, |a| eq(&a[0], &a[1..]).map(Value::Bool)));
    add("ne", Function::new(&[Any, Any], |a| eq(&a[0], &a[1..2]).map(|b| Value::Bool(!b))));
    add("lt", Function::new(&[Any, Any], |a| less(&a[0], &a[1]).map(Value::Bool)));
    add("le", Function::new(&[Any, Any], |a| Ok(Value::Bool(less(&a[0], &a[1])? || eq(&a[0], &a[1..2])?))));
    add("gt", Function::new(&[Any, Any], |a| Ok(Value::Bool(!less(&a[0], &a[1])? && !eq(&a[0], &a[1..2])?))));
    add("ge", Function::new(&[Any, Any], |a| less(&a[0], &a[1]).map(|b| Value::Bool(!b))));
    add("html", Function::variadic(&[], Any, |a| Ok(html_escape(&printf::sprint(a)).into())));
    add("js", Function::variadic(&[], Any, |a| Ok(js_escape(&printf::sprint(a)).into())));
    add("urlquery", Function::variadic(&[], Any, |a| Ok(query_escape(&printf::sprint(a)).into())));
    add(
        "call",
        Function::variadic(&[Any], Any, |a| {
            Err(HelmError::from(format!("non-function {} of type {}", a[0].print(), a[0].type_name())))
        }),
    );
    f
}

fn length(v: &Value) -> Result<Value, HelmError> {
    let n = match v {
        Value::Str(s) => s.len(),
        Value::List(l) => l.len(),
        Value::Map(m) => m.borrow().len(),
        Value::Object(o) if o.entries().is_some() => o.entries().map(|e| e.len()).unwrap_or(0),
        Value::Nil | Value::Invalid => return Err(HelmError::from("len of nil pointer")),
        other => return Err(HelmError::from(format!("len of type {}", other.type_name()))),
    };
    Ok(Value::Int(n as i64))
}

fn int_index(v: &Value, len: usize, what: &str) -> Result<usize, HelmError> {
    let i = match v {
        Value::Int(n) => *n,
        Value::Nil | Value::Invalid => return Err(HelmError::from("cannot index slice/array with nil")),
        other => return Err(HelmError::from(format!("cannot index slice/array with type {}", other.type_name()))),
    };
    if i < 0 || i as usize > len {
        return Err(HelmError::from(format!("{what} out of range: {i}")));
    }
    Ok(i as usize)
}

fn index(item: &Value, keys: &[Value]) -> Result<Value, HelmError> {
    let mut v = item.clone();
    for key in keys {
        v = match &v {
            Value::List(l) => {
                let i = int_index(key, l.len(), "index")?;
                l.get(i).cloned().ok_or_else(|| HelmError::from(format!("index out of range: {i}")))?
            }
            Value::Str(s) => {
                let i = int_index(key, s.len(), "index")?;
                s.as_bytes()
                    .get(i)
                    .map(|b| Value::Int(i64::from(*b)))
                    .ok_or_else(|| HelmError::from(format!("index out of range: {i}")))?
            }
            Value::Map(m) => match key {
                Value::Str(k) => m.borrow().get(&**k).cloned().unwrap_or(Value::Nil),
                Value::Nil | Value::Invalid => return Err(HelmError::from("value is nil; should be of type string")),
                other => {
                    return Err(HelmError::from(format!("value has type {}; should be string", other.type_name())));
                }
            },
            Value::Nil | Value::Invalid => return Err(HelmError::from("index of untyped nil")),
            other => return Err(HelmError::from(format!("can't index item of type {}", other.type_name()))),
        };
    }
    Ok(v)
}

fn slice(item: &Value, bounds: &[Value]) -> Result<Value, HelmError> {
    if bounds.len() > 3 {
        return Err(HelmError::from(format!("too many slice indexes: {}", bounds.len())));
    }
    let len = match item {
        Value::Str(s) => s.len(),
        Value::List(l) => l.len(),
        Value::Nil | Value::Invalid => return Err(HelmError::from("slice of untyped nil")),
        other => return Err(HelmError::from(format!("can't slice item of type {}", other.type_name()))),
    };
    let from = bounds.first().map(|b| int_index(b, len, "index")).transpose()?.unwrap_or(0);
    let to = bounds.get(1).map(|b| int_index(b, len, "index")).transpose()?.unwrap_or(len);
    if from > to {
        return Err(HelmError::from(format!("invalid slice index: {from} > {to}")));
    }
    Ok(match item {
        Value::Str(s) => {
            if bounds.len() == 3 {
                return Err(HelmError::from("cannot 3-index slice a string"));
            }
            Value::from(s.get(from..to).ok_or("slice of a string between characters")?)
        }
        Value::List(l) => Value::from(l[from..to].to_vec()),
        _ => Value::Invalid,
    })
}

/// Go's `eq`: true when `a` equals any of `others`; comparing different basic kinds fails, and
/// anything compared with nothing is false.
pub fn eq(a: &Value, others: &[Value]) -> Result<bool, HelmError> {
    if others.is_empty() {
        return Err(HelmError::from("missing argument for comparison"));
    }
    for b in others {
        let equal = match (a, b) {
            (Value::Invalid | Value::Nil, Value::Invalid | Value::Nil) => true,
            (Value::Invalid | Value::Nil, _) | (_, Value::Invalid | Value::Nil) => false,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::Int(x), Value::Int(y)) => x == y,
            (Value::Float(x), Value::Float(y)) => x == y,
            (Value::Str(x), Value::Str(y)) => x == y,
            (Value::List(_) | Value::Map(_), _) | (_, Value::List(_) | Value::Map(_)) if kind(a) == kind(b) => {
                return Err(HelmError::from(format!("non-comparable type {}: {}", b.print(), b.type_name())));
            }
            _ => return Err(HelmError::from("incompatible types for comparison")),
        };
        if equal {
            return Ok(true);
        }
    }
    Ok(false)
}

fn kind(v: &Value) -> u8 {
    match v {
        Value::Invalid | Value::Nil => 0,
        Value::Bool(_) => 1,
        Value::Int(_) => 2,
        Value::Float(_) => 3,
        Value::Str(_) => 4,
        Value::List(_) => 5,
        Value::Map(_) => 6,
        Value::Object(_) => 7,
    }
}

/// Go's `lt`.
pub fn less(a: &Value, b: &Value) -> Result<bool, HelmError> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x < y),
        (Value::Float(x), Value::Float(y)) => Ok(x < y),
        (Value::Str(x), Value::Str(y)) => Ok(x < y),
        _ if kind(a) != kind(b) => Err(HelmError::from("incompatible types for comparison")),
        _ => Err(HelmError::from("invalid type for comparison")),
    }
}

/// `html`: `template.HTMLEscapeString`.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            '\0' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `js`: `template.JSEscapeString`.
pub fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// `urlquery`: `url.QueryEscape`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_as_go_makes_them() {
        assert_eq!(eq(&Value::Int(1), &[Value::Int(2), Value::Int(1)]), Ok(true));
        assert_eq!(eq(&Value::Nil, &[Value::from("a")]), Ok(false), "nothing equals a value");
        assert_eq!(eq(&Value::Float(1.0), &[Value::Int(1)]), Err("incompatible types for comparison".into()));
        assert_eq!(less(&Value::from("a"), &Value::from("b")), Ok(true));
        assert_eq!(less(&Value::Bool(true), &Value::Bool(false)), Err("invalid type for comparison".into()));
    }

    #[test]
    fn index_len_and_slice() {
        let m = Value::map([("a", Value::from(vec![Value::Int(1), Value::Int(2)]))]);
        assert_eq!(index(&m, &[Value::from("a"), Value::Int(1)]), Ok(Value::Int(2)));
        assert_eq!(index(&m, &[Value::from("zz")]), Ok(Value::Nil));
        assert_eq!(length(&Value::from("héllo")), Ok(Value::Int(6)), "bytes, as Go counts them");
        assert_eq!(slice(&Value::from("hello"), &[Value::Int(1), Value::Int(3)]), Ok(Value::from("el")));
        assert_eq!(query_escape("a b&c"), "a+b%26c");
        assert_eq!(html_escape("<a href='x'>"), "&lt;a href=&#39;x&#39;&gt;");
    }
}
