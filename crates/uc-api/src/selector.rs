//! Label and field selectors: the string forms of `?labelSelector=` / `?fieldSelector=` and the
//! structured `LabelSelector` of workload specs, parsed once and matched against objects.

use std::collections::BTreeMap;

use serde_json::Value;

/// Why a selector could not be parsed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SelectorError {
    /// The selector string is malformed.
    #[error("unable to parse requirement {requirement:?}: {reason}")]
    Parse {
        /// The offending requirement.
        requirement: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A structured selector has an unknown operator or missing values.
    #[error("{field}: {reason}")]
    Invalid {
        /// Field path of the bad part.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq)]
pub enum Requirement {
    /// `key=value` (or `==`).
    Equals(String, String),
    /// `key!=value`: matches objects without the key too.
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)`: matches objects without the key too.
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
    /// `key>n`.
    GreaterThan(String, i64),
    /// `key<n`.
    LessThan(String, i64),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<&str, &str>) -> bool {
        match self {
            Requirement::Equals(k, v) => labels.get(k.as_str()) == Some(&v.as_str()),
            Requirement::NotEquals(k, v) => labels.get(k.as_str()) != Some(&v.as_str()),
            Requirement::In(k, vs) => labels.get(k.as_str()).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => !labels.get(k.as_str()).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::Exists(k) => labels.contains_key(k.as_str()),
            Requirement::DoesNotExist(k) => !labels.contains_key(k.as_str()),
            Requirement::GreaterThan(k, n) => {
                labels.get(k.as_str()).and_then(|l| l.parse::<i64>().ok()).is_some_and(|l| l > *n)
            }
            Requirement::LessThan(k, n) => {
                labels.get(k.as_str()).and_then(|l| l.parse::<i64>().ok()).is_some_and(|l| l < *n)
            }
        }
    }
}

/// A requirement as apimachinery's `Requirement.String()` writes it: `key=value`, `key in (a,b)` (the
/// values sorted), `!key`, ...
impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |vs: &[String]| {
            let mut vs = vs.to_vec();
            vs.sort();
            vs.join(",")
        };
        match self {
            Requirement::Equals(k, v) => write!(f, "{k}={v}"),
            Requirement::NotEquals(k, v) => write!(f, "{k}!={v}"),
            Requirement::In(k, vs) => write!(f, "{k} in ({})", set(vs)),
            Requirement::NotIn(k, vs) => write!(f, "{k} notin ({})", set(vs)),
            Requirement::Exists(k) => write!(f, "{k}"),
            Requirement::DoesNotExist(k) => write!(f, "!{k}"),
            Requirement::GreaterThan(k, n) => write!(f, "{k}>{n}"),
            Requirement::LessThan(k, n) => write!(f, "{k}<{n}"),
        }
    }
}

impl Requirement {
    fn key(&self) -> &str {
        match self {
            Requirement::Equals(k, _)
            | Requirement::NotEquals(k, _)
            | Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Exists(k)
            | Requirement::DoesNotExist(k)
            | Requirement::GreaterThan(k, _)
            | Requirement::LessThan(k, _) => k,
        }
    }
}

/// A selector as apimachinery's `Selector.String()` writes it: its requirements sorted by key, joined
/// by commas (`""` for none).
impl std::fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut requirements: Vec<&Requirement> = self.requirements.iter().collect();
        requirements.sort_by_key(|r| r.key());
        let written: Vec<String> = requirements.iter().map(ToString::to_string).collect();
        f.write_str(&written.join(","))
    }
}

/// A parsed label selector: all requirements must hold. An empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelSelector {
    /// The requirements, all of which must match.
    pub requirements: Vec<Requirement>,
    /// True for a structured selector that can never match (`null` selector semantics are the caller's).
    pub matches_nothing: bool,
}

impl LabelSelector {
    /// Parses the string form, e.g. `app=web,tier in (a,b),!canary`.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        if s.trim().is_empty() {
            return Ok(Self::default());
        }
        for part in split_top_level(s) {
            let part = part.trim();
            if part.is_empty() {
                // `a,,b` or a trailing comma: kube's parser wants a key after each comma.
                return Err(SelectorError::Parse {
                    requirement: s.to_string(),
                    reason: "found ',', expected: identifier".into(),
                });
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(Self { requirements, matches_nothing: false })
    }

    /// Builds a selector from a structured `metav1.LabelSelector` (`matchLabels`, `matchExpressions`).
    pub fn from_value(v: &Value) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        if let Some(ml) = v.get("matchLabels").and_then(Value::as_object) {
            for (k, val) in ml {
                let val = val.as_str().ok_or_else(|| SelectorError::Invalid {
                    field: format!("matchLabels.{k}"),
                    reason: "must be a string".into(),
                })?;
                requirements.push(Requirement::Equals(k.clone(), val.to_string()));
            }
        }
        if let Some(exprs) = v.get("matchExpressions").and_then(Value::as_array) {
            for (i, e) in exprs.iter().enumerate() {
                let field = format!("matchExpressions[{i}]");
                let key = e.get("key").and_then(Value::as_str).unwrap_or_default().to_string();
                let values: Vec<String> = e
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
                    .unwrap_or_default();
                let op = e.get("operator").and_then(Value::as_str).unwrap_or_default();
                let need_values = |values: Vec<String>| {
                    if values.is_empty() {
                        Err(SelectorError::Invalid {
                            field: format!("{field}.values"),
                            reason: format!("must be specified when `operator` is {op:?}"),
                        })
                    } else {
                        Ok(values)
                    }
                };
                requirements.push(match op {
                    "In" => Requirement::In(key, need_values(values)?),
                    "NotIn" => Requirement::NotIn(key, need_values(values)?),
                    "Exists" => Requirement::Exists(key),
                    "DoesNotExist" => Requirement::DoesNotExist(key),
                    other => {
                        return Err(SelectorError::Invalid {
                            field: format!("{field}.operator"),
                            reason: format!("{other:?} is not a valid selector operator"),
                        });
                    }
                });
            }
        }
        Ok(Self { requirements, matches_nothing: false })
    }

    /// Builds a selector from k8s-openapi's typed `LabelSelector`.
    pub fn from_typed(
        s: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    ) -> Result<Self, SelectorError> {
        Self::from_value(&serde_json::to_value(s).unwrap_or_default())
    }

    /// True when the selector has no requirements.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty() && !self.matches_nothing
    }

    /// Matches a `metadata.labels` map (or `null`).
    pub fn matches_value(&self, labels: Option<&Value>) -> bool {
        let mut map = BTreeMap::new();
        if let Some(obj) = labels.and_then(Value::as_object) {
            for (k, v) in obj {
                if let Some(s) = v.as_str() {
                    map.insert(k.as_str(), s);
                }
            }
        }
        self.matches(&map)
    }

    /// Matches a label map.
    pub fn matches(&self, labels: &BTreeMap<&str, &str>) -> bool {
        !self.matches_nothing && self.requirements.iter().all(|r| r.matches(labels))
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// A label value: empty, or at most 63 alphanumerics, '-', '_', '.', starting and ending alphanumeric
/// (Kubernetes' rule, for objects' labels and for the values selectors compare them with).
pub fn is_label_value(s: &str) -> bool {
    let edge_ok = |c: Option<char>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    s.len() <= 63
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && edge_ok(s.chars().next())
        && edge_ok(s.chars().last())
}

fn parse_requirement(part: &str) -> Result<Requirement, SelectorError> {
    let err = |reason: &str| SelectorError::Parse { requirement: part.to_string(), reason: reason.to_string() };
    let check_key = |k: &str| -> Result<String, SelectorError> {
        let k = k.trim();
        match crate::names::qualified_name_errors(k).first() {
            Some(why) => Err(err(&format!("key: Invalid value: {k:?}: {why}"))),
            None => Ok(k.to_string()),
        }
    };
    let check_value = |v: &str| -> Result<String, SelectorError> {
        let v = v.trim();
        if !is_label_value(v) {
            return Err(err("invalid label value"));
        }
        Ok(v.to_string())
    };
    if let Some(k) = part.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(check_key(k)?));
    }
    if let Some((k, v)) = part.split_once("!=") {
        return Ok(Requirement::NotEquals(check_key(k)?, check_value(v)?));
    }
    if let Some((k, v)) = part.split_once("==") {
        return Ok(Requirement::Equals(check_key(k)?, check_value(v)?));
    }
    if let Some((k, v)) = part.split_once('=') {
        return Ok(Requirement::Equals(check_key(k)?, check_value(v)?));
    }
    if let Some((k, v)) = part.split_once('>') {
        let n = v.trim().parse().map_err(|_| err("value after '>' must be an integer"))?;
        return Ok(Requirement::GreaterThan(check_key(k)?, n));
    }
    if let Some((k, v)) = part.split_once('<') {
        let n = v.trim().parse().map_err(|_| err("value after '<' must be an integer"))?;
        return Ok(Requirement::LessThan(check_key(k)?, n));
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let rest = words[1].trim();
        let (op, set) = if let Some(r) = rest.strip_prefix("notin") {
            ("notin", r)
        } else if let Some(r) = rest.strip_prefix("in") {
            ("in", r)
        } else {
            return Err(err("expected one of =, ==, !=, in, notin"));
        };
        let set = set.trim();
        let inner =
            set.strip_prefix('(').and_then(|s| s.strip_suffix(')')).ok_or_else(|| err("set must be in parentheses"))?;
        if inner.trim().is_empty() {
            return Err(err("values: Invalid value: \"\": for 'in', 'notin' operators, values set can't be empty"));
        }
        let values = inner.split(',').map(check_value).collect::<Result<Vec<_>, _>>()?;
        let key = check_key(words[0])?;
        return Ok(if op == "in" { Requirement::In(key, values) } else { Requirement::NotIn(key, values) });
    }
    Ok(Requirement::Exists(check_key(part)?))
}

/// A parsed field selector: `field=value` / `field!=value` terms, all of which must hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldSelector {
    /// `(field path, value, equal?)` terms.
    pub terms: Vec<(String, String, bool)>,
}

impl FieldSelector {
    /// Parses `metadata.name=foo,status.phase!=Running`.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut terms = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (field, value, eq) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, v, true)
            } else {
                return Err(SelectorError::Parse {
                    requirement: part.into(),
                    reason: "field selectors need = , == or !=".into(),
                });
            };
            terms.push((field.trim().to_string(), value.trim().to_string(), eq));
        }
        Ok(Self { terms })
    }

    /// The value required for `field` by an equality term, if any (lets callers narrow a scan).
    pub fn required_value(&self, field: &str) -> Option<&str> {
        self.terms.iter().find(|(f, _, eq)| f == field && *eq).map(|(_, v, _)| v.as_str())
    }

    /// Matches an object; `lookup` yields the value of a field path or `None` when the field is unset.
    pub fn matches(&self, lookup: impl Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|(f, v, eq)| {
            let actual = lookup(f).unwrap_or_default();
            (actual == *v) == *eq
        })
    }
}

/// What one requirement allows of its key's value.
enum Allows<'a> {
    /// One of these values.
    Only(Vec<&'a str>),
    /// Anything but these values, or no value.
    Except(Vec<&'a str>),
    /// Some value.
    Present,
    /// No value.
    Absent,
}

fn allows(r: &Requirement) -> (&str, Allows<'_>) {
    match r {
        Requirement::Equals(k, v) => (k, Allows::Only(vec![v])),
        Requirement::In(k, vs) => (k, Allows::Only(vs.iter().map(String::as_str).collect())),
        Requirement::NotEquals(k, v) => (k, Allows::Except(vec![v])),
        Requirement::NotIn(k, vs) => (k, Allows::Except(vs.iter().map(String::as_str).collect())),
        Requirement::DoesNotExist(k) => (k, Allows::Absent),
        Requirement::Exists(k) | Requirement::GreaterThan(k, _) | Requirement::LessThan(k, _) => (k, Allows::Present),
    }
}

fn exclusive(a: &Allows, b: &Allows) -> bool {
    match (a, b) {
        (Allows::Only(x), Allows::Only(y)) => !x.iter().any(|v| y.contains(v)),
        (Allows::Only(x), Allows::Except(e)) | (Allows::Except(e), Allows::Only(x)) => x.iter().all(|v| e.contains(v)),
        (Allows::Only(_) | Allows::Present, Allows::Absent) | (Allows::Absent, Allows::Only(_) | Allows::Present) => {
            true
        }
        _ => false,
    }
}

impl LabelSelector {
    /// A Metacontroller annotation selector (`matchAnnotations`, `matchExpressions`), to match against
    /// annotations.
    pub fn from_annotation_selector(v: &Value) -> Result<Self, SelectorError> {
        let mut as_labels = serde_json::Map::new();
        if let Some(m) = v.get("matchAnnotations") {
            as_labels.insert("matchLabels".into(), m.clone());
        }
        if let Some(e) = v.get("matchExpressions") {
            as_labels.insert("matchExpressions".into(), e.clone());
        }
        Self::from_value(&Value::Object(as_labels))
    }

    /// Whether no set of labels can match both selectors: some key on which their requirements
    /// exclude each other. `false` means they may overlap (the check is conservative).
    pub fn disjoint(&self, other: &LabelSelector) -> bool {
        if self.matches_nothing || other.matches_nothing {
            return true;
        }
        self.requirements.iter().any(|a| {
            let (ka, aa) = allows(a);
            other.requirements.iter().any(|b| {
                let (kb, ab) = allows(b);
                ka == kb && exclusive(&aa, &ab)
            })
        })
    }
}

#[cfg(test)]
mod disjoint_tests {
    use super::*;

    #[test]
    fn selectors_that_exclude_each_other() {
        let s = |x: &str| LabelSelector::parse(x).unwrap();
        assert!(s("tier=a").disjoint(&s("tier=b")));
        assert!(!s("tier=a").disjoint(&s("tier=a,x=y")));
        assert!(!s("tier=a").disjoint(&s("other=b")), "different keys may overlap");
        assert!(s("tier in (a,b)").disjoint(&s("tier in (c)")));
        assert!(!s("tier in (a,b)").disjoint(&s("tier in (b,c)")));
        assert!(s("tier=a").disjoint(&s("tier notin (a)")));
        assert!(s("tier notin (a)").disjoint(&s("tier in (a)")), "symmetric");
        assert!(!s("tier!=a").disjoint(&s("tier!=b")));
        assert!(s("tier").disjoint(&s("!tier")));
        assert!(s("tier=a").disjoint(&s("!tier")));
        assert!(!s("").disjoint(&s("tier=a")), "an empty selector selects everything");
    }

    #[test]
    fn annotation_selectors() {
        let sel = LabelSelector::from_annotation_selector(&serde_json::json!({
            "matchAnnotations": {"a": "b"},
            "matchExpressions": [{"key": "c", "operator": "Exists"}]
        }))
        .unwrap();
        assert!(sel.matches_value(Some(&serde_json::json!({"a": "b", "c": "any value: with spaces"}))));
        assert!(!sel.matches_value(Some(&serde_json::json!({"a": "b"}))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels<'a>(pairs: &[(&'a str, &'a str)]) -> BTreeMap<&'a str, &'a str> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn parses_and_matches_every_operator() {
        let s = LabelSelector::parse("app=web, tier in (a, b),!canary,env!=prod,track").unwrap();
        assert_eq!(s.requirements.len(), 5);
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "b"), ("track", "x")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "c"), ("track", "x")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "a"), ("track", "x"), ("canary", "1")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "a"), ("track", "x"), ("env", "prod")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "a")])));
        let n = LabelSelector::parse("x notin (1,2),n>3").unwrap();
        assert!(n.matches(&labels(&[("n", "4")])));
        assert!(!n.matches(&labels(&[("n", "4"), ("x", "1")])));
        assert!(!n.matches(&labels(&[("n", "2")])));
    }

    #[test]
    fn rejects_malformed_selectors() {
        assert!(LabelSelector::parse("a in b").is_err());
        assert!(LabelSelector::parse("a=b=c d").is_err());
        assert!(LabelSelector::parse("a b").is_err());
        assert!(FieldSelector::parse("metadata.name").is_err());
        assert!(LabelSelector::parse("a=-b").is_err(), "values start alphanumeric");
        assert!(LabelSelector::parse(&format!("a={}", "x".repeat(64))).is_err(), "at most 63 characters");
        assert!(LabelSelector::parse("a=").is_ok(), "an empty value is a value");
    }

    #[test]
    fn label_values() {
        for ok in ["", "a", "a-b_c.d", "A1"] {
            assert!(is_label_value(ok), "{ok:?}");
        }
        for bad in ["-a", "a-", "a b", "a/b", &"x".repeat(64)] {
            assert!(!is_label_value(bad), "{bad:?}");
        }
    }

    #[test]
    fn structured_selector() {
        let s = LabelSelector::from_value(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]
        }))
        .unwrap();
        assert!(s.matches_value(Some(&json!({"app": "web", "tier": "a"}))));
        assert!(!s.matches_value(Some(&json!({"app": "web"}))));
        let bad = LabelSelector::from_value(&json!({"matchExpressions": [{"key": "k", "operator": "Near"}]}));
        assert!(matches!(bad, Err(SelectorError::Invalid { .. })));
    }

    #[test]
    fn field_selector_terms() {
        let f = FieldSelector::parse("metadata.name=a,status.phase!=Running").unwrap();
        assert_eq!(f.required_value("metadata.name"), Some("a"));
        let obj = |name: &str, phase: &str| {
            let (n, p) = (name.to_string(), phase.to_string());
            move |f: &str| match f {
                "metadata.name" => Some(n.clone()),
                "status.phase" => Some(p.clone()),
                _ => None,
            }
        };
        assert!(f.matches(obj("a", "Pending")));
        assert!(!f.matches(obj("a", "Running")));
        assert!(!f.matches(obj("b", "Pending")));
    }

    #[test]
    fn malformed_selectors_are_refused_as_kube_refuses_them() {
        assert!(LabelSelector::parse("").unwrap().is_empty());
        assert!(LabelSelector::parse(" ").unwrap().is_empty());
        for bad in [",,,", "a=b,", "a=b,,c=d"] {
            let e = LabelSelector::parse(bad).unwrap_err().to_string();
            assert!(e.contains("found ',', expected: identifier"), "{bad}: {e}");
        }
        let e = LabelSelector::parse("a in ()").unwrap_err().to_string();
        assert!(e.contains("for 'in', 'notin' operators, values set can't be empty"), "{e}");
        let e = LabelSelector::parse("a/b/c=x").unwrap_err().to_string();
        assert!(e.contains(r#"key: Invalid value: "a/b/c": a qualified name must consist of"#), "{e}");
        assert!(LabelSelector::parse("example.com/app in (a,b),!canary").is_ok());
    }

    #[test]
    fn a_selector_is_written_as_apimachinery_writes_it() {
        let structured = serde_json::json!({"matchLabels": {"tier": "web", "app": "a"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                 {"key": "canary", "operator": "DoesNotExist"}]});
        let s = LabelSelector::from_value(&structured).unwrap();
        assert_eq!(s.to_string(), "app=a,!canary,env in (dev,prod),tier=web", "sorted by key");
        assert_eq!(LabelSelector::parse("b notin (y,x),a").unwrap().to_string(), "a,b notin (x,y)");
        assert_eq!(LabelSelector::default().to_string(), "");
    }
}
