//! Sprig's lists and dicts. Dicts are Go maps: `set`, `unset` and `merge` change them in place, seen
//! through every reference, as charts rely on (`$_ := set $d "k" "v"`).

use std::collections::BTreeMap;

use super::convert::{strval, to_i64};
use crate::error::HelmError;
use crate::gotemplate::{Funcs, Function, Ty, Value};

fn list_of(v: &Value, func: &str) -> Result<Vec<Value>, HelmError> {
    match v {
        Value::List(items) => Ok(items.to_vec()),
        Value::Nil | Value::Invalid => Ok(Vec::new()),
        other => Err(HelmError::from(format!("Cannot {func} on type {}", go_kind(other)))),
    }
}

fn go_kind(v: &Value) -> &'static str {
    match v {
        Value::Str(_) => "string",
        Value::Int(_) => "int",
        Value::Float(_) => "float64",
        Value::Bool(_) => "bool",
        Value::Map(_) => "map",
        _ => "invalid",
    }
}

fn dict_of(v: &Value) -> Option<crate::gotemplate::Dict> {
    match v {
        Value::Map(m) => Some(m.clone()),
        _ => None,
    }
}

/// A copy of a value with fresh maps all the way down.
pub fn deep_copy(v: &Value) -> Value {
    match v {
        Value::Map(m) => {
            Value::from(m.borrow().iter().map(|(k, x)| (k.clone(), deep_copy(x))).collect::<BTreeMap<_, _>>())
        }
        Value::List(items) => Value::from(items.iter().map(deep_copy).collect::<Vec<_>>()),
        other => other.clone(),
    }
}

/// mergo's `Merge` as Sprig calls it: keys of `src` missing (or empty) in `dst` are set; maps on both
/// sides merged recursively; with `overwrite`, `src`'s non-empty values win.
fn merge_into(dst: &crate::gotemplate::Dict, src: &crate::gotemplate::Dict, overwrite: bool) {
    if std::rc::Rc::ptr_eq(dst, src) {
        return;
    }
    let src = src.borrow().clone();
    for (k, v) in src {
        let existing = dst.borrow().get(&k).cloned();
        match (existing, &v) {
            (Some(Value::Map(d)), Value::Map(s)) => merge_into(&d, s, overwrite),
            (Some(cur), _) if cur.truth() && !(overwrite && v.truth()) => {}
            (Some(_), _) if overwrite && !v.truth() => {}
            _ => {
                dst.borrow_mut().insert(k, deep_copy(&v));
            }
        }
    }
}

#[expect(clippy::too_many_lines, reason = "data table: one entry per sprig function")]
pub(super) fn register(f: &mut Funcs) {
    use Ty::*;
    let mut add = |name: &str, func: Function| {
        f.insert(name.to_string(), func);
    };
    add("list", Function::variadic(&[], Any, |a| Ok(Value::from(a.to_vec()))));
    for name in ["slice", "mustSlice"] {
        add(
            name,
            Function::variadic(&[Any], Any, |a| {
                let list = list_of(&a[0], "slice")?;
                if list.is_empty() {
                    return Ok(Value::Nil);
                }
                let start = a.get(1).map_or(0, to_i64);
                let end = a.get(2).map_or(list.len() as i64, to_i64);
                if start < 0 || end < start || end > list.len() as i64 {
                    return Err(HelmError::from(format!(
                        "reflect: slice index out of range [{start}:{end}] with length {}",
                        list.len()
                    )));
                }
                Ok(Value::from(list[start as usize..end as usize].to_vec()))
            }),
        );
    }
    add("first", Function::new(&[Any], |a| Ok(list_of(&a[0], "find first")?.first().cloned().unwrap_or(Value::Nil))));
    add("last", Function::new(&[Any], |a| Ok(list_of(&a[0], "find last")?.last().cloned().unwrap_or(Value::Nil))));
    add(
        "rest",
        Function::new(&[Any], |a| {
            Ok(Value::from(list_of(&a[0], "find rest")?.into_iter().skip(1).collect::<Vec<_>>()))
        }),
    );
    add(
        "initial",
        Function::new(&[Any], |a| {
            let mut l = list_of(&a[0], "find initial")?;
            l.pop();
            Ok(Value::from(l))
        }),
    );
    for name in ["append", "push", "mustAppend", "mustPush"] {
        add(
            name,
            Function::new(&[Any, Any], |a| {
                let mut l = list_of(&a[0], "push")?;
                l.push(a[1].clone());
                Ok(Value::from(l))
            }),
        );
    }
    add(
        "prepend",
        Function::new(&[Any, Any], |a| {
            let mut l = vec![a[1].clone()];
            l.extend(list_of(&a[0], "prepend")?);
            Ok(Value::from(l))
        }),
    );
    add(
        "concat",
        Function::variadic(&[], Any, |a| {
            let mut out = Vec::new();
            for l in a {
                out.extend(list_of(l, "concat")?);
            }
            Ok(Value::from(out))
        }),
    );
    add(
        "reverse",
        Function::new(&[Any], |a| {
            Ok(Value::from(list_of(&a[0], "find reverse")?.into_iter().rev().collect::<Vec<_>>()))
        }),
    );
    add(
        "uniq",
        Function::new(&[Any], |a| {
            let mut out: Vec<Value> = Vec::new();
            for v in list_of(&a[0], "find uniq")? {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
            Ok(Value::from(out))
        }),
    );
    add(
        "without",
        Function::variadic(&[Any], Any, |a| {
            Ok(Value::from(
                list_of(&a[0], "find without")?.into_iter().filter(|v| !a[1..].contains(v)).collect::<Vec<_>>(),
            ))
        }),
    );
    add("has", Function::new(&[Any, Any], |a| Ok(Value::Bool(list_of(&a[1], "find has")?.contains(&a[0])))));
    add(
        "compact",
        Function::new(&[Any], |a| {
            Ok(Value::from(list_of(&a[0], "compact")?.into_iter().filter(Value::truth).collect::<Vec<_>>()))
        }),
    );
    add(
        "chunk",
        Function::new(&[Int, Any], |a| {
            let size = to_i64(&a[0]).max(1) as usize;
            let l = list_of(&a[1], "chunk")?;
            Ok(Value::from(l.chunks(size).map(|c| Value::from(c.to_vec())).collect::<Vec<_>>()))
        }),
    );
    add(
        "dict",
        Function::variadic(&[], Any, |a| {
            let mut m = BTreeMap::new();
            for pair in a.chunks(2) {
                m.insert(strval(&pair[0]), pair.get(1).cloned().unwrap_or_else(|| Value::from("")));
            }
            Ok(Value::from(m))
        }),
    );
    add(
        "get",
        Function::new(&[Map, Str], |a| {
            Ok(dict_of(&a[0])
                .and_then(|m| m.borrow().get(a[1].as_str().unwrap_or("")).cloned())
                .unwrap_or_else(|| Value::from("")))
        }),
    );
    add(
        "set",
        Function::new(&[Map, Str, Any], |a| {
            if let Some(m) = dict_of(&a[0]) {
                m.borrow_mut().insert(a[1].as_str().unwrap_or("").to_string(), a[2].clone());
            }
            Ok(a[0].clone())
        }),
    );
    add(
        "unset",
        Function::new(&[Map, Str], |a| {
            if let Some(m) = dict_of(&a[0]) {
                m.borrow_mut().remove(a[1].as_str().unwrap_or(""));
            }
            Ok(a[0].clone())
        }),
    );
    add(
        "hasKey",
        Function::new(&[Map, Str], |a| {
            Ok(Value::Bool(dict_of(&a[0]).is_some_and(|m| m.borrow().contains_key(a[1].as_str().unwrap_or("")))))
        }),
    );
    add(
        "keys",
        Function::variadic(&[], Map, |a| {
            let mut keys = Vec::new();
            for d in a.iter().filter_map(dict_of) {
                keys.extend(d.borrow().keys().map(|k| Value::from(k.as_str())));
            }
            Ok(Value::from(keys))
        }),
    );
    add(
        "values",
        Function::new(&[Map], |a| {
            Ok(Value::from(
                dict_of(&a[0]).map(|m| m.borrow().values().cloned().collect::<Vec<Value>>()).unwrap_or_default(),
            ))
        }),
    );
    add(
        "pick",
        Function::variadic(&[Map], Str, |a| {
            let m = dict_of(&a[0]).map(|m| m.borrow().clone()).unwrap_or_default();
            Ok(Value::from(
                m.into_iter().filter(|(k, _)| a[1..].iter().any(|x| x.as_str() == Some(k))).collect::<BTreeMap<_, _>>(),
            ))
        }),
    );
    add(
        "omit",
        Function::variadic(&[Map], Str, |a| {
            let m = dict_of(&a[0]).map(|m| m.borrow().clone()).unwrap_or_default();
            Ok(Value::from(
                m.into_iter()
                    .filter(|(k, _)| !a[1..].iter().any(|x| x.as_str() == Some(k)))
                    .collect::<BTreeMap<_, _>>(),
            ))
        }),
    );
    add(
        "pluck",
        Function::variadic(&[Str], Map, |a| {
            let key = a[0].as_str().unwrap_or("");
            Ok(Value::from(
                a[1..].iter().filter_map(dict_of).filter_map(|m| m.borrow().get(key).cloned()).collect::<Vec<_>>(),
            ))
        }),
    );
    for (name, overwrite) in
        [("merge", false), ("mustMerge", false), ("mergeOverwrite", true), ("mustMergeOverwrite", true)]
    {
        add(
            name,
            Function::variadic(&[Map], Map, move |a| {
                if let Some(dst) = dict_of(&a[0]) {
                    for src in a[1..].iter().filter_map(dict_of) {
                        merge_into(&dst, &src, overwrite);
                    }
                }
                Ok(a[0].clone())
            }),
        );
    }
    add("deepCopy", Function::new(&[Any], |a| Ok(deep_copy(&a[0]))));
    add(
        "dig",
        Function::variadic(&[Any], Any, |a| {
            let (dict, rest) = a.split_last().ok_or("dig needs a dict")?;
            let (default, keys) = rest.split_last().ok_or("dig needs a default")?;
            let mut cur = dict.clone();
            for k in keys {
                let next = dict_of(&cur).and_then(|m| m.borrow().get(&strval(k)).cloned());
                match next {
                    Some(v) => cur = v,
                    None => return Ok(default.clone()),
                }
            }
            Ok(cur)
        }),
    );
}
