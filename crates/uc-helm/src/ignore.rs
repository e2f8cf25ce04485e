//! `.helmignore` as Helm's loader applies it (helm/pkg/ignore): one Go `filepath.Match` pattern per
//! line (`#` comments), `/…` anchored at the chart's root, a pattern with a `/` matched against the whole
//! path, one without against the base name, a trailing `/` for directories only, `!` negation as Helm
//! implements it, and Helm's default `templates/.?*` (hidden files among the templates).

use crate::error::HelmError;

/// One rule.
#[derive(Clone, Debug)]
struct Rule {
    pattern: String,
    negate: bool,
    dir_only: bool,
    /// Matched against the whole path (else the base name).
    whole: bool,
}

/// A `.helmignore`'s rules.
#[derive(Clone, Debug, Default)]
pub struct Rules(Vec<Rule>);

impl Rules {
    /// The rules of a `.helmignore`'s text, then Helm's defaults. `**` is refused, as Helm refuses it.
    pub fn parse(text: &str) -> Result<Rules, HelmError> {
        let mut rules = Vec::new();
        for line in text.trim_start_matches('\u{feff}').lines().chain(std::iter::once("templates/.?*")) {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line.contains("**") {
                return Err(HelmError::from("double-star (**) syntax is not supported"));
            }
            let (negate, rest) = match line.strip_prefix('!') {
                Some(r) => (true, r),
                None => (false, line),
            };
            let (dir_only, rest) = match rest.strip_suffix('/') {
                Some(r) => (true, r),
                None => (false, rest),
            };
            let (whole, pattern) = match rest.strip_prefix('/') {
                Some(r) => (true, r),
                None => (rest.contains('/'), rest),
            };
            rules.push(Rule { pattern: pattern.to_string(), negate, dir_only, whole });
        }
        Ok(Rules(rules))
    }

    /// Whether `path` (relative, `/`-separated) is ignored; `is_dir` for directories (whose contents
    /// then all are).
    pub fn ignores(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." {
            return false;
        }
        let base = path.rsplit('/').next().unwrap_or(path);
        for r in &self.0 {
            let subject = if r.whole { path } else { base };
            if r.negate {
                // Helm's negation: a path the pattern does not match is ignored.
                if (r.dir_only && !is_dir) || !go_match(&r.pattern, subject) {
                    return true;
                }
                continue;
            }
            if r.dir_only && !is_dir {
                continue;
            }
            if go_match(&r.pattern, subject) {
                return true;
            }
        }
        false
    }
}

/// Go's `filepath.Match` (on `/`): `*` any run of non-separators, `?` one, `[…]` (`^` negates, ranges),
/// `\` escapes.
pub fn go_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    matches(&p, &n)
}

fn matches(p: &[char], n: &[char]) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some('*') => (0..=n.len()).take_while(|&i| i == 0 || n[i - 1] != '/').any(|i| matches(&p[1..], &n[i..])),
        Some('?') => n.first().is_some_and(|c| *c != '/') && matches(&p[1..], &n[1..]),
        Some('[') => {
            let Some(c) = n.first().copied().filter(|c| *c != '/') else { return false };
            match class(&p[1..], c) {
                Some((hit, used)) => hit && matches(&p[1 + used..], &n[1..]),
                None => false,
            }
        }
        Some('\\') if p.len() > 1 => n.first() == Some(&p[1]) && matches(&p[2..], &n[1..]),
        Some(c) => n.first() == Some(c) && matches(&p[1..], &n[1..]),
    }
}

/// A character class after its `[`: whether `c` is in it, and how many pattern characters it took
/// (its `]` included); `None` when it does not close.
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let (negated, mut i) = if p.first() == Some(&'^') { (true, 1) } else { (false, 0) };
    let mut hit = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((hit != negated, i + 1));
        }
        first = false;
        let lo = if p[i] == '\\' {
            i += 1;
            *p.get(i)?
        } else {
            p[i]
        };
        i += 1;
        let hi = if p.get(i) == Some(&'-') && p.get(i + 1).is_some_and(|x| *x != ']') {
            let h = if p[i + 1] == '\\' {
                i += 1;
                *p.get(i + 1)?
            } else {
                p[i + 1]
            };
            i += 2;
            h
        } else {
            lo
        };
        if lo <= c && c <= hi {
            hit = true;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helmignore_rules_as_helm_applies_them() {
        let r = Rules::parse("# comment\n*.md\nsecret/\n/docs/*.txt\nci/*.yaml\n*.sw[a-p]\n").unwrap();
        assert!(r.ignores("README.md", false) && r.ignores("sub/NOTES.md", false));
        assert!(r.ignores("secret", true) && !r.ignores("secret", false));
        assert!(r.ignores("docs/a.txt", false) && !r.ignores("x/docs/a.txt", false));
        assert!(r.ignores("ci/x.yaml", false) && !r.ignores("ci/sub/x.yaml", false));
        assert!(r.ignores("a.swp", false) && !r.ignores("a.swx", false));
        assert!(r.ignores("templates/.hidden", false), "Helm's default rule");
        assert!(!r.ignores("templates/deployment.yaml", false) && !r.ignores("values.yaml", false));
        assert_eq!(Rules::parse("a/**/b").unwrap_err().0, "double-star (**) syntax is not supported");
    }
}
