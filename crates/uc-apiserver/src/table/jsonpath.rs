//! The JSONPath subset that printer columns use (`additionalPrinterColumns`' `jsonPath`).

use serde_json::Value;

/// Evaluates a printer-column JSONPath (`.spec.x`, `.a[0]`, `.a[*].b`, `.a[?(@.type=="Ready")].status`).
pub fn eval_jsonpath<'a>(path: &str, root: &'a Value) -> Vec<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut current = vec![root];
    let mut rest = path;
    while !rest.is_empty() {
        let mut next = Vec::new();
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = &r[..end];
            rest = &r[end..];
            if name.is_empty() {
                continue;
            }
            for v in current {
                if name == "*" {
                    match v {
                        Value::Object(m) => next.extend(m.values()),
                        Value::Array(a) => next.extend(a.iter()),
                        _ => {}
                    }
                } else if let Some(c) = v.get(name) {
                    next.push(c);
                }
            }
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = find_bracket_end(r) else {
                return Vec::new();
            };
            let inner = &r[..end];
            rest = &r[end + 1..];
            for v in current {
                select(inner, v, &mut next);
            }
        } else {
            return Vec::new();
        }
        current = next;
    }
    current
}

fn find_bracket_end(s: &str) -> Option<usize> {
    let mut depth = 0;
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (c, quote) {
            ('"' | '\'', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            ('[', None) => depth += 1,
            (']', None) if depth == 0 => return Some(i),
            (']', None) => depth -= 1,
            _ => {}
        }
    }
    None
}

fn select<'a>(inner: &str, v: &'a Value, out: &mut Vec<&'a Value>) {
    let inner = inner.trim();
    if inner == "*" {
        match v {
            Value::Array(a) => out.extend(a.iter()),
            Value::Object(m) => out.extend(m.values()),
            _ => {}
        }
    } else if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        let Some(items) = v.as_array() else { return };
        for item in items {
            if filter_matches(filter, item) {
                out.push(item);
            }
        }
    } else if let Some((from, to)) = inner.split_once(':') {
        // A slice, `[start:end]`, either end optional and negative from the back.
        let Some(a) = v.as_array() else { return };
        let len = a.len() as i64;
        let bound = |s: &str, default: i64| match s.trim() {
            "" => Some(default),
            t => t.parse::<i64>().ok().map(|i| if i < 0 { (len + i).max(0) } else { i.min(len) }),
        };
        if let (Some(from), Some(to)) = (bound(from, 0), bound(to, len))
            && from < to
        {
            out.extend(&a[from as usize..to as usize]);
        }
    } else if let Ok(i) = inner.parse::<i64>() {
        if let Some(a) = v.as_array() {
            let idx = if i < 0 { a.len() as i64 + i } else { i };
            if let Some(x) = usize::try_from(idx).ok().and_then(|i| a.get(i)) {
                out.push(x);
            }
        }
    } else {
        let key = inner.trim_matches(|c| c == '\'' || c == '"');
        if let Some(x) = v.get(key) {
            out.push(x);
        }
    }
}

fn filter_matches(filter: &str, item: &Value) -> bool {
    let (lhs, op, rhs) = if let Some((l, r)) = filter.split_once("==") {
        (l, "==", Some(r))
    } else if let Some((l, r)) = filter.split_once("!=") {
        (l, "!=", Some(r))
    } else {
        (filter, "exists", None)
    };
    let Some(sub) = lhs.trim().strip_prefix('@') else {
        return false;
    };
    let found = eval_jsonpath(sub, item);
    match rhs {
        None => !found.is_empty(),
        Some(r) => {
            let r = r.trim();
            let expected: Value = if r.starts_with(['"', '\'']) {
                Value::String(r.trim_matches(|c| c == '"' || c == '\'').to_string())
            } else {
                serde_json::from_str(r).unwrap_or(Value::String(r.to_string()))
            };
            let eq = found.first().is_some_and(|f| **f == expected);
            if op == "==" { eq } else { !eq }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn jsonpath_subset() {
        let v = json!({"spec": {"replicas": 3, "list": [{"name": "a", "v": 1}, {"name": "b", "v": 2}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X", "status": "False"}]}});
        assert_eq!(eval_jsonpath(".spec.replicas", &v), vec![&json!(3)]);
        assert_eq!(eval_jsonpath(".spec.list[1].name", &v), vec![&json!("b")]);
        assert_eq!(eval_jsonpath(".spec.list[*].v", &v), vec![&json!(1), &json!(2)]);
        assert_eq!(eval_jsonpath(".status.conditions[?(@.type==\"Ready\")].status", &v), vec![&json!("True")]);
        assert_eq!(eval_jsonpath("{.spec.list[-1].name}", &v), vec![&json!("b")]);
        assert_eq!(eval_jsonpath(".status.conditions[-1:].type", &v), vec![&json!("X")]);
        assert_eq!(eval_jsonpath(".spec.list[0:1].name", &v), vec![&json!("a")]);
        assert_eq!(eval_jsonpath(".spec.list[:].v", &v), vec![&json!(1), &json!(2)]);
        assert!(eval_jsonpath(".spec.list[5:].v", &v).is_empty());
        assert!(eval_jsonpath(".spec.missing", &v).is_empty());
    }
}
