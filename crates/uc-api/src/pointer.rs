//! JSON pointers (RFC 6901) read without allocating. `serde_json::Value::pointer` unescapes every
//! token into a new `String` (two `str::replace` calls each); the API server and the engine follow
//! pointers such as `/metadata/name` on every object they touch, and those allocations were 5 % of
//! both processes' time under load. Here a token is borrowed unless it holds an escape (`~0`, `~1`).

use std::borrow::Cow;

use serde_json::Value;

/// `at` and `at_mut`: `Value::pointer` and `Value::pointer_mut` with the same answers.
pub trait Pointer {
    /// The value at `pointer`, as `Value::pointer` finds it.
    fn at(&self, pointer: &str) -> Option<&Value>;
    /// The value at `pointer`, mutably, as `Value::pointer_mut` finds it.
    fn at_mut(&mut self, pointer: &str) -> Option<&mut Value>;
}

/// The tokens of `pointer` (None: not a pointer, i.e. not empty and not starting with `/`).
fn tokens(pointer: &str) -> Option<impl Iterator<Item = Cow<'_, str>>> {
    let rest = match pointer.strip_prefix('/') {
        Some(rest) => Some(rest),
        None if pointer.is_empty() => None,
        None => return None,
    };
    Some(rest.into_iter().flat_map(|r| r.split('/')).map(unescape))
}

fn unescape(token: &str) -> Cow<'_, str> {
    if token.contains('~') { Cow::Owned(token.replace("~1", "/").replace("~0", "~")) } else { Cow::Borrowed(token) }
}

/// An array index as RFC 6901 writes it: digits, no leading zero, no sign.
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
        return None;
    }
    token.parse().ok()
}

impl Pointer for Value {
    fn at(&self, pointer: &str) -> Option<&Value> {
        tokens(pointer)?.try_fold(self, |target, token| match target {
            Value::Object(map) => map.get(token.as_ref()),
            Value::Array(list) => index(&token).and_then(|i| list.get(i)),
            _ => None,
        })
    }

    fn at_mut(&mut self, pointer: &str) -> Option<&mut Value> {
        tokens(pointer)?.try_fold(self, |target, token| match target {
            Value::Object(map) => map.get_mut(token.as_ref()),
            Value::Array(list) => index(&token).and_then(move |i| list.get_mut(i)),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_as_serde_json_does() {
        let mut v = json!({
            "metadata": {"name": "n", "labels": {"a/b": "slash", "m~n": "tilde", "": "empty"}},
            "list": [1, {"x": 2}], "": {"": 3}, "0": "zero"
        });
        let pointers = [
            "",
            "/",
            "//",
            "/metadata",
            "/metadata/name",
            "/metadata/missing",
            "/metadata/labels/a~1b",
            "/metadata/labels/m~0n",
            "/metadata/labels/",
            "/list/0",
            "/list/1/x",
            "/list/2",
            "/list/01",
            "/list/+1",
            "/list/-1",
            "/list/x",
            "/0",
            "metadata",
            "/metadata/name/deeper",
            "/list/1/x/0",
        ];
        for p in pointers {
            assert_eq!(v.at(p), v.pointer(p), "{p}");
            let expected = v.clone().pointer_mut(p).map(|x| x.clone());
            assert_eq!(v.at_mut(p).map(|x| x.clone()), expected, "{p}");
        }
        *v.at_mut("/list/1/x").unwrap() = json!(9);
        assert_eq!(v["list"][1]["x"], 9);
    }
}
