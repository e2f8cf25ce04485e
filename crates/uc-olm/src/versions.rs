//! Versions and version ranges as OLM reads them: semantic versions (`0.9.4`, `1.0.0-rc.1`) and the
//! ranges of `skipRange` and `olm.package.required` in blang/semver's syntax — comparisons joined by
//! spaces (all must hold) and alternatives by `||`: `>=0.2.0-0 <0.3.1-0`, `<0.2.0`, `>1.0.0 <2.0.0 ||
//! >=3.0.0`, `!=1.2.3`, `=1.0.0` (or a bare version). A leading `v` is accepted, as OLM does.

use std::fmt;

pub use semver::Version;

/// A version string that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a semantic version: {reason}")]
pub struct VersionError {
    /// What was given.
    pub input: String,
    /// What is wrong.
    pub reason: String,
}

/// Parses a version (a leading `v` allowed).
pub fn parse_version(s: &str) -> Result<Version, VersionError> {
    let t = s.trim();
    let t = t.strip_prefix('v').unwrap_or(t);
    Version::parse(t).map_err(|e| VersionError { input: s.to_string(), reason: e.to_string() })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

/// A version range: any of its alternatives, each a set of comparisons that must all hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    any: Vec<Vec<(Op, Version)>>,
    text: String,
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A range that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a version range: {reason}")]
pub struct RangeError {
    /// What was given.
    pub input: String,
    /// What is wrong.
    pub reason: String,
}

impl Range {
    /// Parses a range in blang/semver's syntax.
    pub fn parse(s: &str) -> Result<Range, RangeError> {
        let err = |reason: String| RangeError { input: s.to_string(), reason };
        let mut any = Vec::new();
        for alternative in s.split("||") {
            let mut all = Vec::new();
            let mut tokens = alternative.split_whitespace().peekable();
            while let Some(tok) = tokens.next() {
                // An operator written apart from its version (`>= 1.0.0`).
                let tok = if matches!(tok, ">" | ">=" | "<" | "<=" | "=" | "==" | "!=") {
                    let v = tokens.next().ok_or_else(|| err(format!("{tok:?} has no version after it")))?;
                    format!("{tok}{v}")
                } else {
                    tok.to_string()
                };
                let (op, rest) = split_op(&tok);
                let v = parse_version(rest).map_err(|e| err(e.to_string()))?;
                all.push((op, v));
            }
            if all.is_empty() {
                return Err(err("an empty alternative".into()));
            }
            any.push(all);
        }
        Ok(Range { any, text: s.trim().to_string() })
    }

    /// Whether `v` is in the range. Pre-releases compare by semver precedence (`0.3.1-0` is the
    /// lowest version of 0.3.1, which is why OLM writes upper bounds that way).
    pub fn contains(&self, v: &Version) -> bool {
        self.any.iter().any(|all| {
            all.iter().all(|(op, bound)| match op {
                Op::Eq => v == bound,
                Op::Ne => v != bound,
                Op::Gt => v > bound,
                Op::Ge => v >= bound,
                Op::Lt => v < bound,
                Op::Le => v <= bound,
            })
        })
    }
}

fn split_op(tok: &str) -> (Op, &str) {
    for (prefix, op) in
        [(">=", Op::Ge), ("<=", Op::Le), ("==", Op::Eq), ("!=", Op::Ne), (">", Op::Gt), ("<", Op::Lt), ("=", Op::Eq)]
    {
        if let Some(rest) = tok.strip_prefix(prefix) {
            return (op, rest);
        }
    }
    (Op::Eq, tok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        parse_version(s).unwrap()
    }

    #[test]
    fn versions() {
        assert_eq!(v("v0.9.4"), v("0.9.4"));
        assert!(v("0.3.1-0") < v("0.3.1"));
        assert!(v("1.0.0-rc.1") < v("1.0.0"));
        assert!(parse_version("0.9").is_err());
    }

    #[test]
    fn ranges_as_olm_writes_them() {
        let r = Range::parse(">=0.2.0-0 <0.3.1-0").unwrap();
        assert!(r.contains(&v("0.2.0")) && r.contains(&v("0.3.0")) && r.contains(&v("0.2.0-rc.1")));
        assert!(!r.contains(&v("0.3.1")) && !r.contains(&v("0.1.9")));
        let below = Range::parse("<0.2.0").unwrap();
        assert!(below.contains(&v("0.1.0")) && !below.contains(&v("0.2.0")));
        let either = Range::parse(">1.0.0 <2.0.0 || >=3.0.0").unwrap();
        assert!(either.contains(&v("1.5.0")) && either.contains(&v("3.1.0")) && !either.contains(&v("2.5.0")));
        assert!(Range::parse("1.0.0").unwrap().contains(&v("1.0.0")));
        assert!(!Range::parse("!=1.0.0").unwrap().contains(&v("1.0.0")));
        assert!(Range::parse(">= 1.0.0").unwrap().contains(&v("1.0.0")), "an operator apart from its version");
        assert_eq!(Range::parse("<0.2.0").unwrap().to_string(), "<0.2.0");
        for bad in ["", "<", ">=x", "1.0 || "] {
            assert!(Range::parse(bad).is_err(), "{bad:?}");
        }
    }
}
