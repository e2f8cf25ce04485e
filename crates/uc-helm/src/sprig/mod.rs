//! Sprig's template functions (Masterminds/sprig v3, `TxtFuncMap`), as Helm registers them, with the
//! Go types of their parameters (the executor checks arguments against them) and Go's conversions of
//! what they are given (`strval`, `cast.ToInt64`, `cast.ToFloat64`). Every function of Sprig 3.3 (Helm
//! 3.17's) is here; keys and certificates are ECDSA or Ed25519 where Sprig makes RSA (`crypto.rs`).

mod collections;
mod convert;
mod crypto;
mod dates;
pub mod semver;
mod strings;
mod urls;

use crate::gotemplate::{Funcs, Value};

pub use collections::deep_copy;
pub use convert::{strval, to_f64, to_i64};

/// Every Sprig function uc provides, by name.
pub fn funcs() -> Funcs {
    let mut f = Funcs::new();
    strings::register(&mut f);
    collections::register(&mut f);
    convert::register(&mut f);
    semver::register(&mut f);
    dates::register(&mut f);
    urls::register(&mut f);
    crypto::register(&mut f);
    extras(&mut f);
    for (alias, of) in ALIASES {
        if let Some(func) = f.get(*of).cloned() {
            f.insert(alias.to_string(), func);
        }
    }
    f
}

/// Sprig's other names for the same function (the `must…` ones fail where the plain ones would
/// panic; both fail here, with the error).
const ALIASES: &[(&str, &str)] = &[
    ("mustFirst", "first"),
    ("mustLast", "last"),
    ("mustRest", "rest"),
    ("mustInitial", "initial"),
    ("mustReverse", "reverse"),
    ("mustUniq", "uniq"),
    ("mustWithout", "without"),
    ("mustHas", "has"),
    ("mustPrepend", "prepend"),
    ("mustCompact", "compact"),
    ("mustChunk", "chunk"),
    ("mustDeepCopy", "deepCopy"),
    ("mustRegexFind", "regexFind"),
    ("mustRegexFindAll", "regexFindAll"),
    ("mustRegexReplaceAll", "regexReplaceAll"),
    ("mustRegexReplaceAllLiteral", "regexReplaceAllLiteral"),
    ("mustRegexSplit", "regexSplit"),
    ("trimall", "trimAll"),
    ("tuple", "list"),
    ("osBase", "base"),
    ("osDir", "dir"),
    ("osExt", "ext"),
    ("osClean", "clean"),
    ("osIsAbs", "isAbs"),
];

/// Paths, base32, float extremes, UUIDs and the odd rest.
fn extras(f: &mut Funcs) {
    use crate::gotemplate::{Function, Ty};
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let mut add = |name: &str, func: Function| {
        f.insert(name.to_string(), func);
    };
    add("base", Function::new(&[Ty::Str], move |a| Ok(Value::from(path_base(&s(&a[0]))))));
    add("dir", Function::new(&[Ty::Str], move |a| Ok(Value::from(path_dir(&s(&a[0]))))));
    add(
        "ext",
        Function::new(&[Ty::Str], move |a| {
            let b = path_base(&s(&a[0]));
            Ok(Value::from(b.rfind('.').map(|i| b[i..].to_string()).unwrap_or_default()))
        }),
    );
    add("isAbs", Function::new(&[Ty::Str], move |a| Ok(Value::Bool(s(&a[0]).starts_with('/')))));
    add("clean", Function::new(&[Ty::Str], move |a| Ok(Value::from(path_clean(&s(&a[0]))))));
    add(
        "maxf",
        Function::variadic(&[Ty::Any], Ty::Any, |a| Ok(Value::Float(a.iter().map(to_f64).fold(f64::MIN, f64::max)))),
    );
    add(
        "minf",
        Function::variadic(&[Ty::Any], Ty::Any, |a| Ok(Value::Float(a.iter().map(to_f64).fold(f64::MAX, f64::min)))),
    );
    add("add1f", Function::new(&[Ty::Any], |a| Ok(Value::Float(to_f64(&a[0]) + 1.0))));
    add("uuidv4", Function::new(&[], |_| Ok(Value::from(uuid::Uuid::new_v4().to_string()))));
    add(
        "randInt",
        Function::new(&[Ty::Any, Ty::Any], |a| {
            let (min, max) = (to_i64(&a[0]), to_i64(&a[1]));
            if max <= min {
                return Err("invalid argument to Intn".into());
            }
            let mut b = [0u8; 8];
            let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b);
            Ok(Value::Int(min + (u64::from_le_bytes(b) % (max - min) as u64) as i64))
        }),
    );
    add(
        "abbrevboth",
        Function::new(&[Ty::Int, Ty::Int, Ty::Str], move |a| {
            let (left, right, text) = (to_i64(&a[0]).max(0) as usize, to_i64(&a[1]).max(0) as usize, s(&a[2]));
            let chars: Vec<char> = text.chars().collect();
            if chars.len() <= right || right < 4 {
                return Ok(Value::from(text));
            }
            let start = if left > 4 && left < chars.len() { left.min(chars.len() - (right - 3)) } else { 0 };
            let body: String = chars[start..].iter().collect();
            let body = if body.chars().count() > right - if start > 0 { 3 } else { 0 } {
                format!(
                    "{}...",
                    body.chars().take(right.saturating_sub(if start > 0 { 6 } else { 3 })).collect::<String>()
                )
            } else {
                body
            };
            Ok(Value::from(if start > 0 { format!("...{body}") } else { body }))
        }),
    );
}

/// Go's `path.Clean`.
fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." if out.last().is_some_and(|l| *l != "..") => {
                out.pop();
            }
            ".." if rooted => {}
            other => out.push(other),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// Go's `path.Base`.
fn path_base(p: &str) -> String {
    let t = p.trim_end_matches('/');
    if p.is_empty() {
        return ".".into();
    }
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

/// Go's `path.Dir`.
fn path_dir(p: &str) -> String {
    let dir = match p.rfind('/') {
        Some(i) => &p[..=i],
        None => "",
    };
    path_clean(dir)
}

/// Go's `empty`: nil, zero numbers, false, and empty strings, lists and maps.
pub fn empty(v: &Value) -> bool {
    !v.truth()
}

#[cfg(test)]
mod tests;
