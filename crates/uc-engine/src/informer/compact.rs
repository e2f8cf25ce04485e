//! A tree as the informer's cache keeps it at rest: written as compact bytes rather than JSON. Each value
//! is a tag byte, then what it holds — a length (LEB128) and the bytes of a string or key, a count and
//! the items of an array or object, eight bytes of a float — so writing copies strings instead of
//! scanning each byte for what JSON escapes, and numbers are not printed and parsed again. Writing
//! objects as JSON when they left the window of trees was 8 % of `uc run`'s samples in a convergence run
//! (docs/benchmarks.md, issue 58). Only this module reads what it writes; nothing else sees the bytes.

use serde_json::{Map, Number, Value};

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
/// A non-negative integer.
const UINT: u8 = 3;
/// A negative integer `i`, as the bits of `!i` (non-negative).
const NEG: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const ARRAY: u8 = 7;
const OBJECT: u8 = 8;

/// Deeper than any tree the JSON parser builds (it stops at 128): bytes nesting deeper are not ours.
const MAX_DEPTH: usize = 512;

/// Appends `v` to `out`.
pub(super) fn write(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(b) => out.push(if *b { TRUE } else { FALSE }),
        Value::Number(n) => number(n, out),
        Value::String(s) => {
            out.push(STRING);
            text(s, out);
        }
        Value::Array(items) => {
            out.push(ARRAY);
            length(items.len() as u64, out);
            items.iter().for_each(|item| write(item, out));
        }
        Value::Object(members) => {
            out.push(OBJECT);
            length(members.len() as u64, out);
            for (k, item) in members {
                text(k, out);
                write(item, out);
            }
        }
    }
}

fn number(n: &Number, out: &mut Vec<u8>) {
    if let Some(u) = n.as_u64() {
        out.push(UINT);
        length(u, out);
    } else if let Some(i) = n.as_i64() {
        out.push(NEG);
        length(!i as u64, out);
    } else {
        out.push(FLOAT);
        out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_le_bytes());
    }
}

fn text(s: &str, out: &mut Vec<u8>) {
    length(s.len() as u64, out);
    out.extend_from_slice(s.as_bytes());
}

/// LEB128: seven bits a byte, the high bit set on all but the last.
fn length(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The tree `bytes` hold, if they are one whole tree as [`write`] writes it.
pub(super) fn read(bytes: &[u8]) -> Option<Value> {
    let mut r = Reader { bytes, at: 0 };
    let v = r.value(0)?;
    (r.at == bytes.len()).then_some(v)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match self.byte()? {
            NULL => Value::Null,
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            UINT => Value::Number(self.length()?.into()),
            NEG => Value::Number((!self.length()? as i64).into()),
            FLOAT => Value::Number(Number::from_f64(f64::from_le_bytes(self.take(8)?.try_into().ok()?))?),
            STRING => Value::String(self.text()?),
            ARRAY => {
                let n = self.count()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                Value::Array(items)
            }
            OBJECT => {
                let n = self.count()?;
                let mut members = Vec::with_capacity(n);
                for _ in 0..n {
                    members.push((self.text()?, self.value(depth + 1)?));
                }
                Value::Object(members.into_iter().collect::<Map<String, Value>>())
            }
            _ => return None,
        })
    }

    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n)?;
        let slice = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(slice)
    }

    fn length(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(n);
            }
        }
        None
    }

    /// A count of items, each at least a byte: never more than the bytes left (a count read from bytes
    /// that are not ours reserves no more than they could hold).
    fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.length()?).ok()?;
        (n <= self.bytes.len() - self.at).then_some(n)
    }

    fn text(&mut self) -> Option<String> {
        let n = usize::try_from(self.length()?).ok()?;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(v: &Value) -> Option<Value> {
        let mut out = Vec::new();
        write(v, &mut out);
        read(&out)
    }

    #[test]
    fn a_tree_reads_back_as_it_was_written() {
        let v = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "ünïcode ✓", "quote\"and\\slash": "line\nbreak"}},
            "spec": {"replicas": 3, "paused": false, "minReadySeconds": null,
                     "template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}}},
            "numbers": [0, 1, 127, 128, 300, u64::MAX, -1, -128, i64::MIN, 1.5, -2.25, 1e300, 5e-324],
            "empty": {"a": [], "o": {}, "s": ""}
        });
        assert_eq!(round_trip(&v), Some(v.clone()));
        // Each number keeps its kind (an integer stays one; a float stays a float).
        let back = round_trip(&v).unwrap();
        assert!(back["numbers"][5].is_u64() && back["numbers"][8].is_i64() && back["numbers"][9].is_f64());
        for scalar in [json!(null), json!(true), json!("x"), json!(7)] {
            assert_eq!(round_trip(&scalar), Some(scalar));
        }
    }

    #[test]
    fn bytes_that_are_not_one_whole_tree_read_as_none() {
        let mut out = Vec::new();
        write(&json!({"a": [1, "two", {"b": 3.5}]}), &mut out);
        for cut in 0..out.len() {
            assert_eq!(read(&out[..cut]), None, "cut at {cut}");
        }
        let mut longer = out.clone();
        longer.push(NULL);
        assert_eq!(read(&longer), None, "a trailing byte");
        // A count far beyond the bytes, an unknown tag, a string that is not UTF-8, nesting too deep.
        assert_eq!(read(&[ARRAY, 0xff, 0xff, 0xff, 0xff, 0x0f]), None);
        assert_eq!(read(&[42]), None);
        assert_eq!(read(&[STRING, 2, 0xc3, 0x28]), None);
        let deep: Vec<u8> = std::iter::repeat_n([ARRAY, 1], MAX_DEPTH + 2).flatten().chain([NULL]).collect();
        assert_eq!(read(&deep), None);
    }
}
