//! What the store can keep and read back, enforced before anything is written: an object nests at most
//! [`MAX_DEPTH`] levels (the store's reader, serde_json, stops at 128) and takes at most
//! [`MAX_OBJECT_BYTES`] as JSON (kube-apiserver's request limit). Measured without recursion, so that
//! an object a patch made too deep is refused (and dropped) without exhausting the stack.

use serde_json::Value;

/// Most levels of objects and arrays an object may nest.
pub const MAX_DEPTH: usize = 100;
/// Most bytes an object may take as JSON (3 MiB, kube-apiserver's `--max-request-bytes` default).
pub const MAX_OBJECT_BYTES: usize = 3 * 1024 * 1024;
/// Most operations a JSON patch may have (kube-apiserver's).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// How deep an object nests and about how many bytes it takes as JSON (strings counted without
/// escapes), walked without recursion.
pub fn measure(v: &Value) -> (usize, usize) {
    let mut stack = vec![(v, 1usize)];
    let (mut depth, mut bytes) = (0, 0);
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(items) => {
                depth = depth.max(d);
                bytes += 2 + items.len();
                stack.extend(items.iter().map(|i| (i, d + 1)));
            }
            Value::Object(map) => {
                depth = depth.max(d);
                bytes += 2 + map.len();
                for (k, v) in map {
                    bytes += k.len() + 3;
                    stack.push((v, d + 1));
                }
            }
            Value::String(s) => bytes += s.len() + 2,
            Value::Number(n) => bytes += written_len(n),
            Value::Bool(_) | Value::Null => bytes += 5,
        }
    }
    (depth, bytes)
}

/// How many bytes a number takes as JSON, counted as it is written (no string made: every number of
/// every write is measured).
fn written_len(n: &serde_json::Number) -> usize {
    struct Count(usize);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail.
    let _ = std::fmt::Write::write_fmt(&mut count, format_args!("{n}"));
    count.0
}

/// Why an object cannot be kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exceeded {
    /// It nests this deep.
    Depth(usize),
    /// It takes about this many bytes.
    Size(usize),
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exceeded::Depth(d) => write!(f, "the object nests {d} levels deep; at most {MAX_DEPTH} can be stored"),
            Exceeded::Size(_) => write!(f, "Request entity too large: limit is {MAX_OBJECT_BYTES}"),
        }
    }
}

/// Ok when the store can keep `v` and read it back.
pub fn check(v: &Value) -> Result<(), Exceeded> {
    let (depth, bytes) = measure(v);
    if depth > MAX_DEPTH {
        return Err(Exceeded::Depth(depth));
    }
    if bytes > MAX_OBJECT_BYTES {
        return Err(Exceeded::Size(bytes));
    }
    Ok(())
}

/// Drops a value of any depth without recursion (serde_json's own drop recurses).
pub fn drop_deep(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn nested(levels: usize) -> Value {
        let mut v = json!("leaf");
        for _ in 0..levels {
            v = json!({ "a": v });
        }
        v
    }

    #[test]
    fn depth_and_size_are_measured_without_recursion() {
        assert_eq!(measure(&json!("x")).0, 0);
        assert_eq!(measure(&json!({"a": [1, {"b": 2}]})).0, 3);
        let (_, bytes) = measure(&json!({"data": {"k": "v".repeat(1000)}}));
        let exact = serde_json::to_vec(&json!({"data": {"k": "v".repeat(1000)}})).unwrap().len();
        assert!(bytes >= exact - 4 && bytes <= exact + 16, "{bytes} against {exact}");
        for n in [json!(0), json!(-12345), json!(u64::MAX), json!(1.5e-7), json!(0.25)] {
            let Value::Number(number) = &n else { unreachable!() };
            assert_eq!(written_len(number), n.to_string().len(), "{n}");
        }
        assert!(check(&nested(MAX_DEPTH)).is_ok());
        assert_eq!(check(&nested(MAX_DEPTH + 1)), Err(Exceeded::Depth(MAX_DEPTH + 1)));
        assert!(matches!(check(&json!({"k": "x".repeat(MAX_OBJECT_BYTES)})), Err(Exceeded::Size(_))));
        // A million levels: measured and dropped on a small stack.
        let deep = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let mut v = Value::Null;
                for _ in 0..1_000_000 {
                    let mut m = serde_json::Map::new();
                    m.insert("a".into(), v);
                    v = Value::Object(m);
                }
                let depth = measure(&v).0;
                drop_deep(v);
                depth
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(deep, 1_000_000);
    }

    #[test]
    fn whatever_the_writer_accepts_the_reader_reads_back() {
        // The deepest object the writer keeps, written as the store writes it, reads back.
        let deepest = nested(MAX_DEPTH);
        assert!(check(&deepest).is_ok());
        let bytes = serde_json::to_vec(&deepest).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), deepest);
        // serde_json's reader limit (128) is above the writer's.
        assert!(serde_json::from_slice::<Value>(&serde_json::to_vec(&nested(129)).unwrap()).is_err());
        const { assert!(MAX_DEPTH < 128) };
    }
}
