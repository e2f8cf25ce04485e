//! Masterminds/semver v3 as Sprig's `semver` and `semverCompare` use it: versions with an optional `v`,
//! missing minor/patch read as 0, pre-releases ordered by the SemVer rules; constraints joined by `,` or
//! spaces (and) and `||` (or), with `=`, `!=`, `>`, `>=`, `<`, `<=`, `~`, `^`, wildcards (`1.2.x`, `*`)
//! and hyphen ranges (`1.2 - 1.4`). A constraint without a pre-release does not match a pre-release.

use crate::error::HelmError;
use std::cmp::Ordering;

/// A version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: String,
    pub metadata: String,
    pub original: String,
}

/// Masterminds' `NewVersion` (coercing): `v1.2`, `1.2.3-rc.1+build`.
pub fn parse(text: &str) -> Result<Version, HelmError> {
    let invalid = || "Invalid Semantic Version".to_string();
    let s = text.trim().strip_prefix(['v', 'V']).unwrap_or(text.trim());
    let (s, metadata) = s.split_once('+').map(|(a, b)| (a, b.to_string())).unwrap_or((s, String::new()));
    let (core, pre) = s.split_once('-').map(|(a, b)| (a, b.to_string())).unwrap_or((s, String::new()));
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty()
        || parts.len() > 3
        || parts.iter().any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(invalid().into());
    }
    let n = |i: usize| parts.get(i).map(|p| p.parse::<u64>().map_err(|_| invalid())).unwrap_or(Ok(0));
    let valid_ids = |s: &str| {
        s.is_empty()
            || s.split('.').all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    };
    if !valid_ids(&pre) || !valid_ids(&metadata) {
        return Err(invalid().into());
    }
    Ok(Version { major: n(0)?, minor: n(1)?, patch: n(2)?, pre, metadata, original: text.to_string() })
}

fn compare_pre(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let (mut ai, mut bi) = (a.split('.'), b.split('.'));
    loop {
        match (ai.next(), bi.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let o = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(p), Ok(q)) => p.cmp(&q),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    _ => x.cmp(y),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
    }
}

/// SemVer precedence (metadata ignored).
pub fn compare(a: &Version, b: &Version) -> Ordering {
    (a.major, a.minor, a.patch).cmp(&(b.major, b.minor, b.patch)).then_with(|| compare_pre(&a.pre, &b.pre))
}

/// One comparison of a constraint.
#[derive(Clone, Debug)]
struct Term {
    op: String,
    version: Version,
    /// How many leading parts were given (a wildcard stops them): `1.2.x` is 2.
    given: usize,
}

fn term(text: &str) -> Result<Term, HelmError> {
    let improper = || format!("improper constraint: {text}");
    let t = text.trim();
    let op_len = t.find(|c: char| c.is_ascii_alphanumeric() || c == '*').unwrap_or(t.len());
    let (op, rest) = t.split_at(op_len);
    let op = op.trim();
    if !matches!(op, "" | "=" | "!=" | ">" | "<" | ">=" | "=>" | "<=" | "=<" | "~" | "~>" | "^") {
        return Err(improper().into());
    }
    let rest = rest.trim().strip_prefix(['v', 'V']).unwrap_or(rest.trim());
    let core = rest.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    let given = parts.iter().take_while(|p| !matches!(**p, "x" | "X" | "*")).count();
    let concrete: Vec<&str> = parts[..given].to_vec();
    let suffix = &rest[core.len()..];
    let text = if concrete.is_empty() { "0".to_string() } else { format!("{}{suffix}", concrete.join(".")) };
    let version = parse(&text).map_err(|_| improper())?;
    let given = if given == parts.len() && parts.len() < 3 && !rest.contains(['-', '+']) { parts.len() } else { given };
    let op = match op {
        "=>" => ">=",
        "=<" => "<=",
        "~>" => "~",
        "" => "=",
        o => o,
    };
    Ok(Term { op: op.to_string(), version, given })
}

fn bump(v: &Version, part: usize) -> Version {
    let mut n = Version { pre: String::new(), metadata: String::new(), ..v.clone() };
    match part {
        0 => (n.major, n.minor, n.patch) = (v.major + 1, 0, 0),
        1 => (n.minor, n.patch) = (v.minor + 1, 0),
        _ => n.patch = v.patch + 1,
    }
    n
}

fn holds(t: &Term, v: &Version) -> bool {
    // A pre-release matches only a constraint that names one.
    if !v.pre.is_empty() && t.version.pre.is_empty() {
        return false;
    }
    let c = compare(v, &t.version);
    let lower = c != Ordering::Less;
    let wild = t.given < 3;
    match t.op.as_str() {
        "=" if wild => t.given == 0 || (lower && compare(v, &bump(&t.version, t.given - 1)) == Ordering::Less),
        "=" => c == Ordering::Equal,
        "!=" if wild => !(t.given == 0 || (lower && compare(v, &bump(&t.version, t.given - 1)) == Ordering::Less)),
        "!=" => c != Ordering::Equal,
        ">" if wild && t.given > 0 => compare(v, &bump(&t.version, t.given - 1)) != Ordering::Less,
        ">" => c == Ordering::Greater,
        ">=" => lower,
        "<" => c == Ordering::Less,
        "<=" if wild && t.given > 0 => compare(v, &bump(&t.version, t.given - 1)) == Ordering::Less,
        "<=" => c != Ordering::Greater,
        "~" => lower && compare(v, &bump(&t.version, if t.given <= 1 { 0 } else { 1 })) == Ordering::Less,
        "^" => {
            let part = if t.version.major > 0 || t.given == 1 {
                0
            } else if t.version.minor > 0 || t.given == 2 {
                1
            } else {
                2
            };
            lower && compare(v, &bump(&t.version, part)) == Ordering::Less
        }
        _ => false,
    }
}

/// Whether `version` satisfies `constraint`.
pub fn check(constraint: &str, version: &Version) -> Result<bool, HelmError> {
    let mut any = false;
    for alternative in constraint.split("||") {
        let alternative = alternative.trim();
        let mut terms = Vec::new();
        // `1.2 - 1.4.5`: a hyphen range.
        let normalized = alternative.replace(" - ", " HYPHEN ");
        let words: Vec<&str> = normalized.split([',', ' ']).filter(|w| !w.is_empty()).collect();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            if words.get(i + 1) == Some(&"HYPHEN") && i + 2 < words.len() {
                terms.push(term(&format!(">={w}"))?);
                terms.push(term(&format!("<={}", words[i + 2]))?);
                i += 3;
                continue;
            }
            // An operator written apart from its version (`>= 1.2`).
            if w.chars().all(|c| "<>=!~^".contains(c)) && i + 1 < words.len() {
                terms.push(term(&format!("{w}{}", words[i + 1]))?);
                i += 2;
                continue;
            }
            terms.push(term(w)?);
            i += 1;
        }
        if terms.is_empty() {
            return Err(HelmError::from(format!("improper constraint: {constraint}")));
        }
        any |= terms.iter().all(|t| holds(t, version));
    }
    Ok(any)
}

/// `semver` and `semverCompare`.
pub(super) fn register(f: &mut crate::gotemplate::Funcs) {
    use crate::gotemplate::{Function, Ty, Value};
    f.insert(
        "semverCompare".into(),
        Function::new(&[Ty::Str, Ty::Str], |a| {
            let v = parse(a[1].as_str().unwrap_or(""))?;
            check(a[0].as_str().unwrap_or(""), &v).map(Value::Bool)
        }),
    );
    f.insert(
        "semver".into(),
        Function::new(&[Ty::Str], |a| {
            let v = parse(a[0].as_str().unwrap_or(""))?;
            let fields = crate::objects::Fields {
                type_name: "*semver.Version",
                fields: vec![
                    ("Major", Value::Int(v.major as i64)),
                    ("Minor", Value::Int(v.minor as i64)),
                    ("Patch", Value::Int(v.patch as i64)),
                    ("Prerelease", Value::from(v.pre.as_str())),
                    ("Metadata", Value::from(v.metadata.as_str())),
                    ("Original", Value::from(v.original.as_str())),
                ],
                string: Some(format!(
                    "{}.{}.{}{}{}",
                    v.major,
                    v.minor,
                    v.patch,
                    if v.pre.is_empty() { String::new() } else { format!("-{}", v.pre) },
                    if v.metadata.is_empty() { String::new() } else { format!("+{}", v.metadata) }
                )),
            };
            Ok(Value::Object(std::rc::Rc::new(fields)))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(c: &str, v: &str) -> bool {
        check(c, &parse(v).unwrap()).unwrap()
    }

    #[test]
    fn constraints_as_masterminds_reads_them() {
        assert!(ok(">=1.19-0", "v1.32.0"));
        assert!(ok(">=1.19-0", "1.19.0-rc.1"), "a -0 floor admits pre-releases");
        assert!(!ok(">=1.19", "1.19.0-rc.1"), "without one they are out");
        assert!(ok("^1.2.3", "1.9.0") && !ok("^1.2.3", "2.0.0") && !ok("^0.2.3", "0.3.0"));
        assert!(ok("~1.2.3", "1.2.9") && !ok("~1.2.3", "1.3.0") && ok("~1", "1.9.9"));
        assert!(ok("1.2.x", "1.2.7") && !ok("1.2.x", "1.3.0") && ok("*", "3.0.0"));
        assert!(ok(">= 1.2, < 1.4", "1.3.1") && !ok(">=1.2 <1.4", "1.4.0"));
        assert!(ok("<1.0 || >=2.0", "2.1.0") && !ok("<1.0 || >=2.0", "1.5.0"));
        assert!(ok("1.2 - 1.4.5", "1.4.5") && !ok("1.2 - 1.4.5", "1.4.6"));
        assert!(ok("!=1.2.3", "1.2.4") && !ok("=1.2.3", "1.2.4"));
        assert!(ok("<=1.2", "1.2.9") && !ok(">1.2", "1.2.9") && ok(">1.2", "1.3.0"));
    }

    #[test]
    fn versions_and_errors() {
        let v = parse("v1.2").unwrap();
        assert_eq!((v.major, v.minor, v.patch), (1, 2, 0));
        assert_eq!(compare(&parse("1.0.0-alpha.2").unwrap(), &parse("1.0.0-alpha.10").unwrap()), Ordering::Less);
        assert_eq!(compare(&parse("1.0.0-rc.1").unwrap(), &parse("1.0.0").unwrap()), Ordering::Less);
        assert_eq!(parse("1.2.3.4").unwrap_err().0, "Invalid Semantic Version");
        assert!(check("?1.2", &v).unwrap_err().0.starts_with("improper constraint"));
    }
}
