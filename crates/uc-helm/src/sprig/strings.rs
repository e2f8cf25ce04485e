//! Sprig's string functions: trimming, case, quoting, indentation, splitting and joining, regular
//! expressions (Go's RE2, which Rust's `regex` reads alike), encodings and checksums.

use base64::Engine as _;

use super::convert::{strval, to_i64};
use crate::error::HelmError;
use crate::gotemplate::printf::quote;
use crate::gotemplate::{Funcs, Function, Ty, Value};

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn str_fn(params: &[Ty], f: impl Fn(&[Value]) -> String + 'static) -> Function {
    Function::new(params, move |a| Ok(Value::from(f(a))))
}

fn bool_fn(params: &[Ty], f: impl Fn(&[Value]) -> bool + 'static) -> Function {
    Function::new(params, move |a| Ok(Value::Bool(f(a))))
}

/// Go's `strings.Title`: the first letter of each word upper-cased.
fn title(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut prev_letter = false;
    for c in text.chars() {
        let letter = c.is_alphanumeric() || c == '_' || c == '\'';
        if letter && !prev_letter {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_letter = letter;
    }
    out
}

/// Sprig's `trunc`: the first `n` bytes, or with a negative `n` the last `-n`.
fn trunc(n: i64, text: &str) -> String {
    let len = text.len() as i64;
    let cut = if n < 0 && len + n > 0 {
        text.get((len + n) as usize..)
    } else if n >= 0 && len > n {
        text.get(..n as usize)
    } else {
        Some(text)
    };
    cut.unwrap_or(text).to_string()
}

/// Sprig's `indent`.
fn indent(n: i64, text: &str) -> String {
    let pad = " ".repeat(n.max(0) as usize);
    format!("{pad}{}", text.replace('\n', &format!("\n{pad}")))
}

/// Sprig's list of strings from a list or a single value (`strslice`).
fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(items) => items.iter().filter(|i| !matches!(i, Value::Nil | Value::Invalid)).map(strval).collect(),
        Value::Nil | Value::Invalid => Vec::new(),
        other => vec![strval(other)],
    }
}

fn regex(pattern: &str) -> Result<regex::Regex, HelmError> {
    regex::Regex::new(pattern).map_err(|e| HelmError::from(format!("error parsing regexp: {e}")))
}

/// Words of an identifier, for the case conversions.
fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        let boundary = c.is_uppercase()
            && !cur.is_empty()
            && (chars[i - 1].is_lowercase() || chars.get(i + 1).is_some_and(|n| n.is_lowercase()));
        if boundary {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[expect(clippy::too_many_lines, reason = "data table: one entry per sprig function")]
pub(super) fn register(f: &mut Funcs) {
    use Ty::*;
    let mut add = |name: &str, func: Function| {
        f.insert(name.to_string(), func);
    };
    add("upper", str_fn(&[Str], |a| s(&a[0]).to_uppercase()));
    add("lower", str_fn(&[Str], |a| s(&a[0]).to_lowercase()));
    add("title", str_fn(&[Str], |a| title(s(&a[0]))));
    add(
        "untitle",
        str_fn(&[Str], |a| {
            let mut prev = false;
            s(&a[0])
                .chars()
                .map(|c| {
                    let r = if !prev && c.is_alphabetic() { c.to_lowercase().next().unwrap_or(c) } else { c };
                    prev = c.is_alphanumeric();
                    r
                })
                .collect()
        }),
    );
    add("trim", str_fn(&[Str], |a| s(&a[0]).trim().to_string()));
    add("trimAll", str_fn(&[Str, Str], |a| s(&a[1]).trim_matches(|c| s(&a[0]).contains(c)).to_string()));
    add("trimPrefix", str_fn(&[Str, Str], |a| s(&a[1]).strip_prefix(s(&a[0])).unwrap_or(s(&a[1])).to_string()));
    add("trimSuffix", str_fn(&[Str, Str], |a| s(&a[1]).strip_suffix(s(&a[0])).unwrap_or(s(&a[1])).to_string()));
    add("nospace", str_fn(&[Str], |a| s(&a[0]).chars().filter(|c| !c.is_whitespace()).collect()));
    add(
        "repeat",
        Function::new(&[Int, Str], |a| {
            let (n, text) = (to_i64(&a[0]).max(0) as usize, s(&a[1]));
            if n.saturating_mul(text.len()) > crate::gotemplate::exec::MAX_OUTPUT {
                return Err(HelmError::from(format!(
                    "repeat: {n} copies exceed {} bytes",
                    crate::gotemplate::exec::MAX_OUTPUT
                )));
            }
            Ok(Value::from(text.repeat(n)))
        }),
    );
    add(
        "substr",
        str_fn(&[Int, Int, Str], |a| {
            let (start, end, text) = (to_i64(&a[0]), to_i64(&a[1]), s(&a[2]));
            let len = text.len() as i64;
            let start = if start < 0 { 0 } else { start.min(len) };
            let end = if end < 0 || end > len { len } else { end };
            text.get(start as usize..end.max(start) as usize).unwrap_or("").to_string()
        }),
    );
    add("trunc", str_fn(&[Int, Str], |a| trunc(to_i64(&a[0]), s(&a[1]))));
    add(
        "abbrev",
        str_fn(&[Int, Str], |a| {
            let (width, text) = (to_i64(&a[0]), s(&a[1]));
            if width < 4 || text.len() as i64 <= width {
                text.to_string()
            } else {
                format!("{}...", &text[..(width - 3) as usize])
            }
        }),
    );
    add("contains", bool_fn(&[Str, Str], |a| s(&a[1]).contains(s(&a[0]))));
    add("hasPrefix", bool_fn(&[Str, Str], |a| s(&a[1]).starts_with(s(&a[0]))));
    add("hasSuffix", bool_fn(&[Str, Str], |a| s(&a[1]).ends_with(s(&a[0]))));
    add(
        "quote",
        Function::variadic(&[], Any, |a| {
            let parts: Vec<String> =
                a.iter().filter(|v| !matches!(v, Value::Nil | Value::Invalid)).map(|v| quote(&strval(v))).collect();
            Ok(Value::from(parts.join(" ")))
        }),
    );
    add(
        "squote",
        Function::variadic(&[], Any, |a| {
            let parts: Vec<String> = a
                .iter()
                .filter(|v| !matches!(v, Value::Nil | Value::Invalid))
                .map(|v| format!("'{}'", strval(v)))
                .collect();
            Ok(Value::from(parts.join(" ")))
        }),
    );
    add(
        "cat",
        Function::variadic(&[], Any, |a| {
            let parts: Vec<String> =
                a.iter().filter(|v| !matches!(v, Value::Nil | Value::Invalid)).map(strval).collect();
            Ok(Value::from(parts.join(" ")))
        }),
    );
    add("indent", str_fn(&[Int, Str], |a| indent(to_i64(&a[0]), s(&a[1]))));
    add("nindent", str_fn(&[Int, Str], |a| format!("\n{}", indent(to_i64(&a[0]), s(&a[1])))));
    add("replace", str_fn(&[Str, Str, Str], |a| s(&a[2]).replace(s(&a[0]), s(&a[1]))));
    add("plural", str_fn(&[Str, Str, Int], |a| if to_i64(&a[2]) == 1 { s(&a[0]) } else { s(&a[1]) }.to_string()));
    add(
        "snakecase",
        str_fn(&[Str], |a| words(s(&a[0])).iter().map(|w| w.to_lowercase()).collect::<Vec<_>>().join("_")),
    );
    add(
        "kebabcase",
        str_fn(&[Str], |a| words(s(&a[0])).iter().map(|w| w.to_lowercase()).collect::<Vec<_>>().join("-")),
    );
    add("camelcase", str_fn(&[Str], |a| s(&a[0]).split('_').map(|w| title(&w.to_lowercase())).collect()));
    add(
        "swapcase",
        str_fn(&[Str], |a| {
            s(&a[0])
                .chars()
                .map(|c| {
                    if c.is_uppercase() {
                        c.to_lowercase().next().unwrap_or(c)
                    } else {
                        c.to_uppercase().next().unwrap_or(c)
                    }
                })
                .collect()
        }),
    );
    add("initials", str_fn(&[Str], |a| s(&a[0]).split_whitespace().filter_map(|w| w.chars().next()).collect()));
    add("wrap", str_fn(&[Int, Str], |a| wrap(s(&a[1]), to_i64(&a[0]).max(1) as usize, "\n")));
    add("wrapWith", str_fn(&[Int, Str, Str], |a| wrap(s(&a[2]), to_i64(&a[0]).max(1) as usize, s(&a[1]))));
    add("join", str_fn(&[Str, Any], |a| strslice(&a[1]).join(s(&a[0]))));
    add(
        "splitList",
        Function::new(&[Str, Str], |a| Ok(Value::from(s(&a[1]).split(s(&a[0])).map(Value::from).collect::<Vec<_>>()))),
    );
    add(
        "split",
        Function::new(&[Str, Str], |a| {
            Ok(Value::map(s(&a[1]).split(s(&a[0])).enumerate().map(|(i, p)| (format!("_{i}"), Value::from(p)))))
        }),
    );
    add(
        "splitn",
        Function::new(&[Str, Int, Str], |a| {
            let n = to_i64(&a[1]);
            let parts: Vec<&str> = if n < 0 {
                s(&a[2]).split(s(&a[0])).collect()
            } else {
                s(&a[2]).splitn(n as usize, s(&a[0])).collect()
            };
            Ok(Value::map(parts.into_iter().enumerate().map(|(i, p)| (format!("_{i}"), Value::from(p)))))
        }),
    );
    add(
        "sortAlpha",
        Function::new(&[Any], |a| {
            let mut items = strslice(&a[0]);
            items.sort();
            Ok(Value::from(items.into_iter().map(Value::from).collect::<Vec<_>>()))
        }),
    );
    add("regexMatch", Function::new(&[Str, Str], |a| Ok(Value::Bool(regex(s(&a[0]))?.is_match(s(&a[1]))))));
    add("mustRegexMatch", Function::new(&[Str, Str], |a| Ok(Value::Bool(regex(s(&a[0]))?.is_match(s(&a[1]))))));
    add(
        "regexFind",
        Function::new(&[Str, Str], |a| {
            Ok(Value::from(regex(s(&a[0]))?.find(s(&a[1])).map(|m| m.as_str()).unwrap_or("")))
        }),
    );
    add(
        "regexFindAll",
        Function::new(&[Str, Str, Int], |a| {
            let re = regex(s(&a[0]))?;
            let n = to_i64(&a[2]);
            let found = re.find_iter(s(&a[1])).map(|m| Value::from(m.as_str()));
            Ok(Value::from(if n < 0 { found.collect::<Vec<_>>() } else { found.take(n as usize).collect() }))
        }),
    );
    add(
        "regexReplaceAll",
        Function::new(&[Str, Str, Str], |a| {
            Ok(Value::from(regex(s(&a[0]))?.replace_all(s(&a[1]), s(&a[2])).into_owned()))
        }),
    );
    add(
        "regexReplaceAllLiteral",
        Function::new(&[Str, Str, Str], |a| {
            Ok(Value::from(regex(s(&a[0]))?.replace_all(s(&a[1]), regex::NoExpand(s(&a[2]))).into_owned()))
        }),
    );
    add(
        "regexSplit",
        Function::new(&[Str, Str, Int], |a| {
            let re = regex(s(&a[0]))?;
            let n = to_i64(&a[2]);
            let parts: Vec<Value> = if n < 0 {
                re.split(s(&a[1])).map(Value::from).collect()
            } else {
                re.splitn(s(&a[1]), n as usize).map(Value::from).collect()
            };
            Ok(Value::from(parts))
        }),
    );
    add("regexQuoteMeta", str_fn(&[Str], |a| regex::escape(s(&a[0]))));
    for (name, set) in [
        ("randAlphaNum", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
        ("randAlpha", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
        ("randNumeric", "0123456789"),
        (
            "randAscii",
            "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~",
        ),
    ] {
        add(name, str_fn(&[Int], move |a| random_string(set, to_i64(&a[0]).max(0) as usize)));
    }
    add("hello", str_fn(&[], |_| "Hello!".to_string()));
    add("shuffle", str_fn(&[Str], |a| shuffle(s(&a[0]))));
    add("b32enc", str_fn(&[Str], |a| base32_encode(s(&a[0]).as_bytes())));
    add(
        "b32dec",
        str_fn(&[Str], |a| match base32_decode(s(&a[0])) {
            Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            None => "illegal base32 data".to_string(),
        }),
    );
    add("b64enc", str_fn(&[Str], |a| base64::engine::general_purpose::STANDARD.encode(s(&a[0]))));
    add(
        "b64dec",
        str_fn(&[Str], |a| match base64::engine::general_purpose::STANDARD.decode(s(&a[0])) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => e.to_string(),
        }),
    );
    add(
        "sha256sum",
        str_fn(&[Str], |a| hex(ring::digest::digest(&ring::digest::SHA256, s(&a[0]).as_bytes()).as_ref())),
    );
    add(
        "sha1sum",
        str_fn(&[Str], |a| {
            hex(ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, s(&a[0]).as_bytes()).as_ref())
        }),
    );
    add(
        "sha512sum",
        str_fn(&[Str], |a| hex(ring::digest::digest(&ring::digest::SHA512, s(&a[0]).as_bytes()).as_ref())),
    );
    add("adler32sum", str_fn(&[Str], |a| adler32(s(&a[0]).as_bytes()).to_string()));
}

/// `n` characters drawn from `set` with the system's randomness.
/// The characters of `text` in a random order (Sprig's `shuffle`, from xstrings).
fn shuffle(text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for i in (1..chars.len()).rev() {
        let mut b = [0u8; 4];
        let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b);
        chars.swap(i, u32::from_le_bytes(b) as usize % (i + 1));
    }
    chars.into_iter().collect()
}

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 base32 with padding (Go's `base32.StdEncoding`).
fn base32_encode(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = buf.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                out.push(BASE32[((bits >> (35 - i * 5)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The bytes of padded base32 text; `None` for text that is not.
fn base32_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(8) {
        return None;
    }
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(8) {
        let data: Vec<u8> = chunk.iter().copied().take_while(|c| *c != b'=').collect();
        if chunk[data.len()..].iter().any(|c| *c != b'=') || matches!(data.len(), 1 | 3 | 6) {
            return None;
        }
        let mut bits = 0u64;
        for (i, c) in data.iter().enumerate() {
            let v = BASE32.iter().position(|b| b == c)? as u64;
            bits |= v << (35 - i * 5);
        }
        let bytes = data.len() * 5 / 8;
        out.extend((0..bytes).map(|i| (bits >> (32 - i * 8)) as u8));
    }
    Some(out)
}

fn random_string(set: &str, n: usize) -> String {
    let chars: Vec<char> = set.chars().collect();
    let mut bytes = vec![0u8; n];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes);
    bytes.iter().map(|b| chars[usize::from(*b) % chars.len()]).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

/// goutils' `WrapCustom` as Sprig calls it: lines broken at spaces to `width`, long words kept whole.
fn wrap(text: &str, width: usize, newline: &str) -> String {
    let mut lines = Vec::new();
    for line in text.split('\n') {
        let mut cur = String::new();
        for word in line.split(' ') {
            if !cur.is_empty() && cur.len() + 1 + word.len() > width {
                lines.push(std::mem::take(&mut cur));
            }
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(word);
        }
        lines.push(cur);
    }
    lines.join(newline)
}
