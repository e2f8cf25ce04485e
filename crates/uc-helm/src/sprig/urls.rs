//! Sprig's `urlParse` and `urlJoin`: a URL as a dict of its parts (`scheme`, `host`, `hostname`, `path`,
//! `query`, `opaque`, `fragment`, `userinfo`) and back, as Go's `net/url` parses and prints them.

use std::collections::BTreeMap;

use super::convert::strval;
use crate::error::HelmError;
use crate::gotemplate::{Funcs, Function, Ty, Value};

/// Go's `shouldEscape` for the parts written back.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Path,
    Fragment,
    UserPassword,
}

fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'~') {
        return false;
    }
    if matches!(c, b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@') {
        return match mode {
            Mode::Path => c == b'?',
            Mode::Fragment => false,
            Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
        };
    }
    !(mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*'))
}

fn escape(s: &str, mode: Mode) -> String {
    s.bytes().map(|c| if should_escape(c, mode) { format!("%{c:02X}") } else { (c as char).to_string() }).collect()
}

/// `%XX` decoded; `None` for a bad escape (Go's error).
fn unescape(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The parts of a URL as `url.Parse` finds them.
fn parse(raw: &str) -> Result<BTreeMap<&'static str, String>, HelmError> {
    let bad = |m: &str| format!("unable to parse url: parse {raw:?}: {m}");
    let (rest, fragment) = raw.split_once('#').map_or((raw, ""), |(r, f)| (r, f));
    let fragment = unescape(fragment).ok_or_else(|| bad("invalid URL escape"))?;
    let scheme_end = rest.find(':').filter(|&i| {
        i > 0
            && rest.as_bytes()[0].is_ascii_alphabetic()
            && rest[..i].bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
    });
    let (scheme, rest) = match scheme_end {
        Some(i) => (rest[..i].to_ascii_lowercase(), &rest[i + 1..]),
        None => (String::new(), rest),
    };
    let (rest, query) = rest.split_once('?').map_or((rest, ""), |(r, q)| (r, q));
    let mut parts = BTreeMap::from([
        ("scheme", scheme.clone()),
        ("query", query.to_string()),
        ("fragment", fragment),
        ("opaque", String::new()),
        ("host", String::new()),
        ("hostname", String::new()),
        ("userinfo", String::new()),
        ("path", String::new()),
    ]);
    if !scheme.is_empty() && !rest.starts_with('/') {
        parts.insert("opaque", rest.to_string());
        return Ok(parts);
    }
    let path = match rest.strip_prefix("//").filter(|_| !scheme.is_empty() || rest.starts_with("//")) {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            let (authority, path) = after.split_at(end);
            let (userinfo, host) = authority.rsplit_once('@').map_or(("", authority), |(u, h)| (u, h));
            parts.insert("userinfo", userinfo.to_string());
            parts.insert("host", host.to_string());
            let hostname = match host.strip_prefix('[') {
                Some(v6) => v6.split(']').next().unwrap_or("").to_string(),
                None => host
                    .rsplit_once(':')
                    .filter(|(_, p)| p.bytes().all(|c| c.is_ascii_digit()))
                    .map_or(host, |(h, _)| h)
                    .to_string(),
            };
            parts.insert("hostname", hostname);
            path
        }
        None => rest,
    };
    parts.insert("path", unescape(path).ok_or_else(|| bad("invalid URL escape"))?);
    Ok(parts)
}

/// `url.URL.String()` of the parts in `d`.
fn join(d: &BTreeMap<String, Value>) -> Result<String, HelmError> {
    let get = |k: &str| match d.get(k) {
        None => Ok(String::new()),
        Some(Value::Str(s)) => Ok(s.to_string()),
        Some(other) => Err(HelmError::from(format!(
            "unable to parse {k} key, must be of type string, but {} found",
            other.type_name()
        ))),
    };
    let (scheme, host, path, query, opaque, fragment) =
        (get("scheme")?, get("host")?, get("path")?, get("query")?, get("opaque")?, get("fragment")?);
    let userinfo = get("userinfo")?;
    let user = (!userinfo.is_empty()).then(|| {
        let (name, password) = userinfo.split_once(':').map_or((userinfo.as_str(), None), |(n, p)| (n, Some(p)));
        let decode = |s: &str| unescape(s).unwrap_or_else(|| s.to_string());
        let mut u = escape(&decode(name), Mode::UserPassword);
        if let Some(p) = password {
            u.push(':');
            u.push_str(&escape(&decode(p), Mode::UserPassword));
        }
        u
    });
    let mut out = String::new();
    if !scheme.is_empty() {
        out.push_str(&scheme);
        out.push(':');
    }
    if !opaque.is_empty() {
        out.push_str(&opaque);
    } else {
        if !scheme.is_empty() || !host.is_empty() || user.is_some() {
            if !host.is_empty() || !path.is_empty() || user.is_some() {
                out.push_str("//");
            }
            if let Some(u) = &user {
                out.push_str(u);
                out.push('@');
            }
            out.push_str(&host);
        }
        let escaped = escape(&path, Mode::Path);
        if !escaped.is_empty() && !escaped.starts_with('/') && !host.is_empty() {
            out.push('/');
        }
        if out.is_empty() && escaped.split('/').next().is_some_and(|seg| seg.contains(':')) {
            out.push_str("./");
        }
        out.push_str(&escaped);
    }
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query);
    }
    if !fragment.is_empty() {
        out.push('#');
        out.push_str(&escape(&fragment, Mode::Fragment));
    }
    Ok(out)
}

pub(super) fn register(f: &mut Funcs) {
    f.insert(
        "urlParse".into(),
        Function::new(&[Ty::Str], |a| {
            let parts = parse(&strval(&a[0]))?;
            Ok(Value::from(parts.into_iter().map(|(k, v)| (k.to_string(), Value::from(v))).collect::<BTreeMap<_, _>>()))
        }),
    );
    f.insert(
        "urlJoin".into(),
        Function::new(&[Ty::Any], |a| match &a[0] {
            Value::Map(m) => join(&m.borrow()).map(Value::from),
            other => Err(HelmError::from(format!(
                "wrong type for value; expected map[string]interface {{}}; got {}",
                other.type_name()
            ))),
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sprig's `url_test.go` cases.
    #[test]
    fn urls_as_sprig_parses_and_joins_them() {
        let cases = [
            (
                "proto://auth@host:80/path?query#fragment",
                ["fragment", "host:80", "host", "", "/path", "query", "proto", "auth"],
            ),
            ("proto://host:80/path", ["", "host:80", "host", "", "/path", "", "proto", ""]),
            ("something", ["", "", "", "", "something", "", "", ""]),
            (
                "proto://user:passwor%20d@host:80/path",
                ["", "host:80", "host", "", "/path", "", "proto", "user:passwor%20d"],
            ),
            (
                "proto://host:80/pa%20th?key=val%20ue",
                ["", "host:80", "host", "", "/pa th", "key=val%20ue", "proto", ""],
            ),
            ("mailto:someone@example.com", ["", "", "", "someone@example.com", "", "", "mailto", ""]),
        ];
        let keys = ["fragment", "host", "hostname", "opaque", "path", "query", "scheme", "userinfo"];
        for (url, want) in cases {
            let got = parse(url).unwrap();
            for (k, w) in keys.iter().zip(want) {
                assert_eq!(got[k], w, "{url} {k}");
            }
        }
        let dict = |pairs: &[(&str, &str)]| -> BTreeMap<String, Value> {
            pairs.iter().map(|(k, v)| (k.to_string(), Value::from(*v))).collect()
        };
        let joined = join(&dict(&[
            ("fragment", "fragment"),
            ("host", "host:80"),
            ("path", "/path"),
            ("query", "query"),
            ("scheme", "proto"),
        ]));
        assert_eq!(joined.unwrap(), "proto://host:80/path?query#fragment");
        let with_user = join(&dict(&[
            ("fragment", "fragment"),
            ("host", "host:80"),
            ("path", "/path"),
            ("scheme", "proto"),
            ("userinfo", "ASDJKJSD"),
        ]));
        assert_eq!(with_user.unwrap(), "proto://ASDJKJSD@host:80/path#fragment");
        assert_eq!(join(&dict(&[("scheme", "https"), ("host", "h"), ("path", "/a b")])).unwrap(), "https://h/a%20b");
        let mut bad = dict(&[]);
        bad.insert("host".into(), Value::Int(1));
        assert!(join(&bad).unwrap_err().0.contains("must be of type string"));
    }
}
