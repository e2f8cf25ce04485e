//! Kubernetes' name rules, with apimachinery's messages: objects' names per kind (`NameIsDNSSubdomain`,
//! `NameIsDNSLabel`, `NameIsDNS1035Label`, RBAC's path segments) and the keys of labels, annotations
//! and selectors (`IsQualifiedName`).

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_FMT: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// What the names of a kind's objects must be (kube's `ValidateNameFunc` of the kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// An RFC 1123 subdomain (most kinds, and every custom resource).
    Dns1123Subdomain,
    /// An RFC 1123 label (Namespaces).
    Dns1123Label,
    /// An RFC 1035 label: a letter first (Services).
    Dns1035Label,
    /// A path segment: anything but `.`, `..`, `/` and `%` (RBAC's roles and bindings).
    PathSegment,
}

impl NameRule {
    /// The rule kube-apiserver applies to the names of `resource` in `group`.
    pub fn of(group: &str, resource: &str) -> NameRule {
        match (group, resource) {
            ("", "namespaces") => NameRule::Dns1123Label,
            ("", "services") => NameRule::Dns1035Label,
            ("rbac.authorization.k8s.io", "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings") => {
                NameRule::PathSegment
            }
            _ => NameRule::Dns1123Subdomain,
        }
    }

    /// What is wrong with `name` under this rule, in kube's words; empty when nothing. A `prefix` (a
    /// `generateName`) may end in '-', as the random suffix follows.
    pub fn errors(self, name: &str, prefix: bool) -> Vec<String> {
        if self == NameRule::PathSegment {
            return path_segment_errors(name, prefix);
        }
        // apimachinery's maskTrailingDash.
        let masked;
        let name = if prefix && name.len() > 1 && name.ends_with('-') {
            masked = format!("{}a", &name[..name.len() - 1]);
            masked.as_str()
        } else {
            name
        };
        let (max, ok, msg) = match self {
            NameRule::Dns1123Subdomain => (253, name.split('.').all(label_shape), SUBDOMAIN_MSG),
            NameRule::Dns1123Label => (63, label_shape(name), LABEL_MSG),
            _ => (63, label_shape(name) && name.starts_with(|c: char| c.is_ascii_lowercase()), DNS1035_MSG),
        };
        let mut errs = Vec::new();
        if name.len() > max {
            errs.push(format!("must be no more than {max} characters"));
        }
        if !ok {
            errs.push(msg.to_string());
        }
        errs
    }
}

/// Lowercase alphanumerics or '-', alphanumeric at both ends (a label of any length).
fn label_shape(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn path_segment_errors(name: &str, prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if !prefix && (name == "." || name == "..") {
        errs.push(format!("may not be '{name}'"));
    }
    for c in ["/", "%"] {
        if name.contains(c) {
            errs.push(format!("may not contain '{c}'"));
        }
    }
    errs
}

/// An RFC 1123 label: at most 63 lowercase alphanumerics or '-', alphanumeric at both ends.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// An RFC 1123 subdomain: dot-separated labels, at most 253 characters.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

fn is_name_part(s: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && edge(s.chars().next())
        && edge(s.chars().last())
}

/// What is wrong with `key` as a qualified name (`[prefix/]name`), in kube's words; empty when nothing.
pub fn qualified_name_errors(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return vec![format!(
                "a qualified name {QUALIFIED_NAME_MSG} (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    let mut errs = Vec::new();
    match prefix {
        Some("") => errs.push("prefix part must be non-empty".to_string()),
        Some(p) if !is_dns_subdomain(p) => errs.push(format!(
            "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '{SUBDOMAIN_FMT}')"
        )),
        _ => {}
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".into());
    }
    if !name.is_empty() && !is_name_part(name) {
        errs.push(format!(
            "name part {QUALIFIED_NAME_MSG} (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}')"
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_by_their_kinds_rule() {
        let rule = NameRule::of;
        assert!(rule("", "configmaps").errors("a.b-c", false).is_empty());
        assert_eq!(rule("", "configmaps").errors("A_b", false), vec![SUBDOMAIN_MSG.to_string()]);
        assert_eq!(
            rule("apps", "deployments").errors(&"a".repeat(254), false),
            vec!["must be no more than 253 characters"]
        );
        assert!(rule("", "namespaces").errors("a.b", false)[0].starts_with("a lowercase RFC 1123 label"));
        assert!(rule("", "services").errors("1abc", false)[0].starts_with("a DNS-1035 label"));
        assert!(rule("", "services").errors("abc-1", false).is_empty());
        assert_eq!(
            rule("rbac.authorization.k8s.io", "roles").errors("system:a/b%", false),
            vec!["may not contain '/'", "may not contain '%'"]
        );
        assert_eq!(rule("rbac.authorization.k8s.io", "clusterroles").errors("..", false), vec!["may not be '..'"]);
        assert!(rule("rbac.authorization.k8s.io", "clusterroles").errors("system:controller:x", false).is_empty());
        // A generateName may end in '-'; a name may not.
        assert!(rule("", "pods").errors("web-", true).is_empty());
        assert_eq!(rule("", "pods").errors("web-", false).len(), 1);
        assert_eq!(rule("", "pods").errors("-", true).len(), 1);
        assert!(rule("", "services").errors("1web-", true)[0].starts_with("a DNS-1035"));
    }

    #[test]
    fn qualified_names_are_checked_as_kube_checks_them() {
        for ok in ["app", "example.com/app", "a.b-c_d", "k8s.io/x", "A9"] {
            assert!(qualified_name_errors(ok).is_empty(), "{ok}");
        }
        assert!(qualified_name_errors("a/b/c")[0].starts_with("a qualified name must consist of"));
        assert_eq!(qualified_name_errors("/x"), ["prefix part must be non-empty"]);
        assert!(qualified_name_errors("Example.com/x")[0].starts_with("prefix part a lowercase RFC 1123 subdomain"));
        assert_eq!(qualified_name_errors("x/"), ["name part must be non-empty"]);
        assert_eq!(qualified_name_errors(&"a".repeat(64)), ["name part must be no more than 63 characters"]);
        assert!(qualified_name_errors("-a")[0].starts_with("name part must consist of"));
    }
}
