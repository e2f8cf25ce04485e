//! Where a field is, as the checks of a built-in body name it: a path of members and items, written
//! as kube names an unknown field (`spec.containers[0].comand`) or as a JSON pointer
//! (`/status/numberReady`); and which scalars are the zero values Go writes.

use serde_json::Value;

/// One step of the path to a field: a member or an item.
#[derive(Clone, Copy)]
pub(super) enum Step<'a> {
    Member(&'a str),
    Item(usize),
}

/// `spec.containers[0].comand`, as unknown fields are named.
pub(super) fn dotted(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Member(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Item(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// `/status/numberReady`, a JSON pointer.
pub(super) fn json_pointer(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        out.push('/');
        match step {
            Step::Member(key) => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Step::Item(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

/// Whether `v` is the zero value of its scalar type (`false`, `0`, `""`).
pub(super) fn is_zero(v: &Value) -> bool {
    match v {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}
