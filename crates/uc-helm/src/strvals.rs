//! Helm's `--set` (pkg/strvals): `a.b=c,list[0]=x,names={a,b}` into a values tree, values typed as
//! Helm types them (booleans, `null`, integers without a leading zero, else strings); `\,` and `\.`
//! escape the separators. The Operator SDK's `overrideValues` are typed the same way.

use crate::error::HelmError;
use serde_json::Value as Json;

/// A `--set` value typed as `strvals` types it.
pub fn typed(raw: &str) -> Json {
    match raw {
        "true" => Json::Bool(true),
        "false" => Json::Bool(false),
        "null" => Json::Null,
        s if !(s.len() > 1 && s.starts_with('0')) && s.parse::<i64>().is_ok() => {
            Json::from(s.parse::<i64>().unwrap_or(0))
        }
        s => Json::String(s.to_string()),
    }
}

/// Splits on `sep` outside `{…}` and not escaped; escapes are kept for the next step.
fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let (mut out, mut cur, mut depth, mut escaped) = (Vec::new(), String::new(), 0i32, false);
    for c in s.chars() {
        if escaped {
            cur.push('\\');
            cur.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' => {
                depth -= 1;
                cur.push(c);
            }
            c if c == sep && depth == 0 => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One step of a key path: a map key, or a key and a list index (`name[2]`).
enum Step {
    Key(String),
    Index(String, usize),
}

fn steps(key: &str) -> Result<Vec<Step>, HelmError> {
    split_unescaped(key, '.')
        .iter()
        .map(|part| match part.strip_suffix(']').and_then(|p| p.rsplit_once('[')) {
            Some((name, i)) => {
                let i: usize = i.parse().map_err(|_| format!("failed to parse index {i:?} of key {key:?}"))?;
                if i > 65536 {
                    return Err(HelmError::from(format!(
                        "index of {i} is greater than maximum supported index of 65536"
                    )));
                }
                Ok(Step::Index(unescape(name), i))
            }
            None if part.is_empty() => Err(HelmError::from(format!("key {key:?} has no value"))),
            None => Ok(Step::Key(unescape(part))),
        })
        .collect()
}

fn value(raw: &str) -> Json {
    match raw.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        Some("") => Json::Array(Vec::new()),
        Some(inner) => Json::Array(split_unescaped(inner, ',').iter().map(|v| typed(&unescape(v))).collect()),
        None => typed(&unescape(raw)),
    }
}

fn child<'a>(cur: &'a mut Json, step: &Step) -> &'a mut Json {
    if !cur.is_object() {
        *cur = Json::Object(Default::default());
    }
    let map = cur.as_object_mut().expect("an object");
    match step {
        Step::Key(k) => map.entry(k.clone()).or_insert(Json::Null),
        Step::Index(k, i) => {
            let list = map.entry(k.clone()).or_insert_with(|| Json::Array(Vec::new()));
            if !list.is_array() {
                *list = Json::Array(Vec::new());
            }
            let items = list.as_array_mut().expect("an array");
            if items.len() <= *i {
                items.resize(*i + 1, Json::Null);
            }
            &mut items[*i]
        }
    }
}

/// `strvals.ParseInto`: every `key=value` of `expr` set into `into`.
pub fn parse_into(expr: &str, into: &mut Json) -> Result<(), HelmError> {
    for pair in split_unescaped(expr, ',').iter().filter(|p| !p.is_empty()) {
        let (key, raw) = match pair.split_once('=') {
            Some(kv) => kv,
            None => return Err(HelmError::from(format!("key {:?} has no value", unescape(pair)))),
        };
        let steps = steps(key)?;
        let mut cur = &mut *into;
        for s in &steps[..steps.len() - 1] {
            cur = child(cur, s);
            if !cur.is_object() {
                *cur = Json::Object(Default::default());
            }
        }
        *child(cur, &steps[steps.len() - 1]) = value(raw);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parsed(expr: &str) -> Json {
        let mut v = json!({});
        parse_into(expr, &mut v).unwrap();
        v
    }

    /// Cases from Helm's `pkg/strvals/parser_test.go`.
    #[test]
    fn sets_as_helm_parses_them() {
        assert_eq!(parsed("name=value"), json!({"name": "value"}));
        assert_eq!(parsed("long_int_string=1234567890"), json!({"long_int_string": 1234567890}));
        assert_eq!(parsed("boolean=true"), json!({"boolean": true}));
        assert_eq!(parsed("leading_zeros=00009"), json!({"leading_zeros": "00009"}));
        assert_eq!(parsed("zero_int=0"), json!({"zero_int": 0}));
        assert_eq!(parsed("name=value,foo=bar"), json!({"name": "value", "foo": "bar"}));
        assert_eq!(parsed("outer.inner=value"), json!({"outer": {"inner": "value"}}));
        assert_eq!(parsed("outer.middle.inner=value"), json!({"outer": {"middle": {"inner": "value"}}}));
        assert_eq!(
            parsed("name1=value1,name2=value2,name3={a,b}"),
            json!({"name1": "value1", "name2": "value2", "name3": ["a", "b"]})
        );
        assert_eq!(parsed("list[0]=foo,list[2]=bar"), json!({"list": ["foo", null, "bar"]}));
        assert_eq!(parsed("list[0].foo=bar"), json!({"list": [{"foo": "bar"}]}));
        assert_eq!(parsed(r"name=one\,two,three=four"), json!({"name": "one,two", "three": "four"}));
        assert_eq!(parsed(r"outer\.inner=value"), json!({"outer.inner": "value"}));
        assert_eq!(parsed("name=null"), json!({"name": null}));
        assert_eq!(parsed("name="), json!({"name": ""}));
        let mut v = json!({});
        assert!(parse_into("name", &mut v).unwrap_err().0.contains("has no value"));
        assert!(parse_into("list[65537]=x", &mut v).unwrap_err().0.contains("maximum supported index"));
    }
}
