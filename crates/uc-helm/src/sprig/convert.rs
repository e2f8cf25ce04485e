//! Conversions, defaults, math and types: `default`, `empty`, `coalesce`, `ternary`, `toString`,
//! `int`, `add`…, `typeOf`, `kindIs`, and the conversions they share with the other functions.

use crate::error::HelmError;
use crate::gotemplate::{Funcs, Function, Ty, Value};

/// Sprig's `strval`: a string as is, anything else as `fmt.Sprintf("%v")` prints it.
pub fn strval(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Invalid | Value::Nil => "<nil>".into(),
        other => other.print(),
    }
}

/// `cast.ToInt64` as Sprig calls it: numbers truncated, strings parsed (base prefixes too), bools 1/0,
/// anything else 0.
pub fn to_i64(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        Value::Float(f) => *f as i64,
        Value::Bool(b) => i64::from(*b),
        Value::Str(s) => parse_int(s).unwrap_or(0),
        _ => 0,
    }
}

/// `cast.ToFloat64`.
pub fn to_f64(v: &Value) -> f64 {
    match v {
        Value::Int(n) => *n as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Str(s) => s.parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// `strconv.ParseInt(s, 0, 0)` after cast's trimming of a zero decimal part (`"3.0"` is 3).
fn parse_int(s: &str) -> Option<i64> {
    let s = s.strip_suffix(".0").unwrap_or(s).trim_end_matches(".00");
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let n = if let Some(h) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = digits.strip_prefix("0b").or_else(|| digits.strip_prefix("0B")) {
        i64::from_str_radix(b, 2).ok()?
    } else if let Some(o) = digits.strip_prefix("0o").or_else(|| digits.strip_prefix("0O")) {
        i64::from_str_radix(o, 8).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    Some(if neg { -n } else { n })
}

/// Go's `%T`.
pub fn type_of(v: &Value) -> String {
    match v {
        Value::Invalid | Value::Nil => "<nil>".into(),
        other => other.type_name(),
    }
}

/// reflect's `Kind` name.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Invalid | Value::Nil => "invalid",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Float(_) => "float64",
        Value::Str(_) => "string",
        Value::List(_) => "slice",
        Value::Map(_) => "map",
        Value::Object(_) => "struct",
    }
}

fn int_result(n: i64) -> Result<Value, HelmError> {
    Ok(Value::Int(n))
}

#[expect(clippy::too_many_lines, reason = "data table: one entry per sprig function")]
pub(super) fn register(f: &mut Funcs) {
    use Ty::*;
    let mut add = |name: &str, func: Function| {
        f.insert(name.to_string(), func);
    };
    add(
        "default",
        Function::variadic(&[Any], Any, |a| {
            Ok(match a.get(1) {
                Some(given) if given.truth() => given.clone(),
                _ => a[0].clone(),
            })
        }),
    );
    add("empty", Function::new(&[Any], |a| Ok(Value::Bool(!a[0].truth()))));
    add("coalesce", Function::variadic(&[], Any, |a| Ok(a.iter().find(|v| v.truth()).cloned().unwrap_or(Value::Nil))));
    add("all", Function::variadic(&[], Any, |a| Ok(Value::Bool(a.iter().all(Value::truth)))));
    add("any", Function::variadic(&[], Any, |a| Ok(Value::Bool(a.iter().any(Value::truth)))));
    add("ternary", Function::new(&[Any, Any, Bool], |a| Ok(if a[2].truth() { a[0].clone() } else { a[1].clone() })));
    add("toString", Function::new(&[Any], |a| Ok(strval(&a[0]).into())));
    add(
        "toStrings",
        Function::new(&[Any], |a| {
            Ok(match &a[0] {
                Value::List(items) => Value::from(items.iter().map(|i| Value::from(strval(i))).collect::<Vec<_>>()),
                Value::Nil | Value::Invalid => Value::from(Vec::new()),
                other => Value::from(vec![Value::from(strval(other))]),
            })
        }),
    );
    add("int", Function::new(&[Any], |a| int_result(to_i64(&a[0]))));
    add("int64", Function::new(&[Any], |a| int_result(to_i64(&a[0]))));
    add("float64", Function::new(&[Any], |a| Ok(Value::Float(to_f64(&a[0])))));
    add("atoi", Function::new(&[Str], |a| int_result(a[0].as_str().and_then(|s| s.parse().ok()).unwrap_or(0))));
    add("add", Function::variadic(&[], Any, |a| int_result(a.iter().map(to_i64).fold(0i64, i64::wrapping_add))));
    add("add1", Function::new(&[Any], |a| int_result(to_i64(&a[0]).wrapping_add(1))));
    add("sub", Function::new(&[Any, Any], |a| int_result(to_i64(&a[0]).wrapping_sub(to_i64(&a[1])))));
    add("mul", Function::variadic(&[Any], Any, |a| int_result(a.iter().map(to_i64).fold(1i64, i64::wrapping_mul))));
    add(
        "div",
        Function::new(&[Any, Any], |a| match to_i64(&a[1]) {
            0 => Err(HelmError::from("runtime error: integer divide by zero")),
            d => int_result(to_i64(&a[0]) / d),
        }),
    );
    add(
        "mod",
        Function::new(&[Any, Any], |a| match to_i64(&a[1]) {
            0 => Err(HelmError::from("runtime error: integer divide by zero")),
            d => int_result(to_i64(&a[0]) % d),
        }),
    );
    add("max", Function::variadic(&[Any], Any, |a| int_result(a.iter().map(to_i64).max().unwrap_or(0))));
    add("min", Function::variadic(&[Any], Any, |a| int_result(a.iter().map(to_i64).min().unwrap_or(0))));
    add("biggest", Function::variadic(&[Any], Any, |a| int_result(a.iter().map(to_i64).max().unwrap_or(0))));
    add("floor", Function::new(&[Any], |a| Ok(Value::Float(to_f64(&a[0]).floor()))));
    add("ceil", Function::new(&[Any], |a| Ok(Value::Float(to_f64(&a[0]).ceil()))));
    add(
        "round",
        Function::variadic(&[Any, Int], Any, |a| {
            let p = 10f64.powi(to_i64(&a[1]) as i32);
            let half = a.get(2).map(to_f64).unwrap_or(0.5);
            let x = to_f64(&a[0]) * p;
            let r = if x.fract().abs() >= half { x.trunc() + x.signum() } else { x.trunc() };
            Ok(Value::Float(r / p))
        }),
    );
    add("addf", Function::variadic(&[], Any, |a| Ok(Value::Float(a.iter().map(to_f64).sum()))));
    add(
        "subf",
        Function::variadic(&[Any], Any, |a| {
            Ok(Value::Float(a[1..].iter().map(to_f64).fold(to_f64(&a[0]), |x, y| x - y)))
        }),
    );
    add("mulf", Function::variadic(&[Any], Any, |a| Ok(Value::Float(a.iter().map(to_f64).product()))));
    add(
        "divf",
        Function::variadic(&[Any], Any, |a| {
            Ok(Value::Float(a[1..].iter().map(to_f64).fold(to_f64(&a[0]), |x, y| x / y)))
        }),
    );
    add("typeOf", Function::new(&[Any], |a| Ok(type_of(&a[0]).into())));
    add("typeIs", Function::new(&[Str, Any], |a| Ok(Value::Bool(a[0].as_str() == Some(type_of(&a[1]).as_str())))));
    add(
        "typeIsLike",
        Function::new(&[Str, Any], |a| {
            let t = type_of(&a[1]);
            Ok(Value::Bool(a[0].as_str().is_some_and(|w| w == t || w == format!("*{t}"))))
        }),
    );
    add("kindOf", Function::new(&[Any], |a| Ok(kind_of(&a[0]).into())));
    add("kindIs", Function::new(&[Str, Any], |a| Ok(Value::Bool(a[0].as_str() == Some(kind_of(&a[1]))))));
    add("deepEqual", Function::new(&[Any, Any], |a| Ok(Value::Bool(a[0].to_json() == a[1].to_json()))));
    add("toDecimal", Function::new(&[Any], |a| int_result(i64::from_str_radix(&strval(&a[0]), 8).unwrap_or(0))));
    add("seq", Function::variadic(&[], Int, seq));
    add("until", Function::new(&[Int], |a| until_step(0, to_i64(&a[0]), if to_i64(&a[0]) < 0 { -1 } else { 1 })));
    add("untilStep", Function::new(&[Int, Int, Int], |a| until_step(to_i64(&a[0]), to_i64(&a[1]), to_i64(&a[2]))));
}

/// The longest list `until`, `untilStep` and `seq` make.
const MAX_LIST: i64 = 10_000_000;

fn until_step(start: i64, stop: i64, step: i64) -> Result<Value, HelmError> {
    let mut out = Vec::new();
    if step != 0 && (stop.saturating_sub(start) / step) > MAX_LIST {
        return Err(HelmError::from(format!("more than {MAX_LIST} numbers")));
    }
    if step == 0 || (step > 0 && start >= stop) || (step < 0 && start <= stop) {
        return Ok(Value::from(out));
    }
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        out.push(Value::Int(i));
        i += step;
    }
    Ok(Value::from(out))
}

/// `seq`: like the shell's: `seq last`, `seq first last`, `seq first step last`, joined by spaces.
fn seq(a: &[Value]) -> Result<Value, HelmError> {
    let n: Vec<i64> = a.iter().map(to_i64).collect();
    let (first, step, last) = match n.as_slice() {
        [] => return Ok(Value::from("")),
        [l] => (1, 1, *l),
        [f, l] => (*f, if f <= l { 1 } else { -1 }, *l),
        [f, s, l, ..] => (*f, *s, *l),
    };
    if step == 0 || (step > 0 && first > last) || (step < 0 && first < last) {
        return Ok(Value::from(""));
    }
    if last.saturating_sub(first) / step > MAX_LIST {
        return Err(HelmError::from(format!("more than {MAX_LIST} numbers")));
    }
    let mut out = Vec::new();
    let mut i = first;
    while (step > 0 && i <= last) || (step < 0 && i >= last) {
        out.push(i.to_string());
        i += step;
    }
    Ok(Value::from(out.join(" ")))
}
