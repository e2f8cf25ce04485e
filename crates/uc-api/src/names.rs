//! Kubernetes' name rules that keys of labels and annotations, and selectors' keys, follow
//! (apimachinery's `IsQualifiedName`), with its messages.

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const SUBDOMAIN_FMT: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

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
