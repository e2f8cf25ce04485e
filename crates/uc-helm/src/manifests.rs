//! Rendered files into a release's manifests as Helm 3 makes them (`releaseutil.SortManifests`): each
//! file split into YAML documents, hooks (`helm.sh/hook`) set apart, the rest in install order by kind —
//! and printed as `helm template` prints them.

use std::collections::BTreeMap;

use crate::error::HelmError;
use serde_json::Value as Json;

/// One document of a rendered file.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// The file it came from (`chart/templates/x.yaml`).
    pub source: String,
    pub content: String,
    pub kind: String,
    pub name: String,
    /// Its `helm.sh/hook` events (`pre-install`, `test`…), empty when it is no hook.
    pub hooks: Vec<String>,
    pub hook_weight: i64,
    /// Its `helm.sh/hook-delete-policy` values (a hook's; a release records them).
    pub hook_delete_policies: Vec<String>,
}

/// Kinds in the order Helm installs them; other kinds after, by name.
pub const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Why the manifests cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("YAML parse error on {source_file}: {message}")]
pub struct ManifestError {
    pub source_file: String,
    pub message: String,
}

/// Helm 3's `SplitManifests`: documents separated by `---` lines, each trimmed, empty ones dropped.
pub fn split(text: &str) -> Vec<String> {
    let mut docs = Vec::new();
    let mut cur = String::new();
    for line in text.trim().split_inclusive('\n') {
        if line.starts_with("---") && line[3..].trim().is_empty() {
            docs.push(std::mem::take(&mut cur));
        } else {
            cur.push_str(line);
        }
    }
    docs.push(cur);
    docs.into_iter().map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect()
}

fn order(kind: &str) -> Option<usize> {
    INSTALL_ORDER.iter().position(|k| *k == kind)
}

fn by_kind(a: &Manifest, b: &Manifest) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (order(&a.kind), order(&b.kind)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.kind.cmp(&b.kind),
    }
}

/// The rendered files (path → text, partials and notes already out) as manifests and hooks, each in
/// install order.
pub fn sort(files: &BTreeMap<String, String>) -> Result<(Vec<Manifest>, Vec<Manifest>), ManifestError> {
    let mut generic = Vec::new();
    let mut hooks = Vec::new();
    for (path, text) in files {
        if path.rsplit('/').next().is_some_and(|b| b.starts_with('_')) || text.trim().is_empty() {
            continue;
        }
        for doc in split(text) {
            let head: Json = serde_yaml_ng::from_str(&doc).map_err(|e| ManifestError {
                source_file: path.clone(),
                message: format!("error converting YAML to JSON: {}", crate::chart::go_yaml_error(&e.to_string())),
            })?;
            let s = |p: &str| head.pointer(p).and_then(Json::as_str).unwrap_or("").to_string();
            // A comma-separated annotation's values, trimmed and lower-cased (`operateAnnotationValues`).
            let listed = |p: &str| -> Vec<String> {
                let text = head.pointer(p).and_then(Json::as_str);
                text.map(|h| h.split(',').map(|e| e.trim().to_lowercase()).collect()).unwrap_or_default()
            };
            let hook_events = listed("/metadata/annotations/helm.sh~1hook");
            let m = Manifest {
                source: path.clone(),
                content: doc,
                kind: s("/kind"),
                name: s("/metadata/name"),
                hooks: hook_events,
                hook_weight: s("/metadata/annotations/helm.sh~1hook-weight").parse().unwrap_or(0),
                hook_delete_policies: listed("/metadata/annotations/helm.sh~1hook-delete-policy"),
            };
            if m.hooks.is_empty() { generic.push(m) } else { hooks.push(m) }
        }
    }
    generic.sort_by(by_kind);
    hooks.sort_by(by_kind);
    Ok((generic, hooks))
}

/// What `helm template` prints: the manifests, then the hooks (tests unless skipped), each as
/// `---\n# Source: <file>\n<document>\n`.
pub fn template_output(manifests: &[Manifest], hooks: &[Manifest], skip_tests: bool) -> String {
    let mut out = String::new();
    for m in manifests {
        out.push_str(&format!("---\n# Source: {}\n{}\n", m.source, m.content));
    }
    for h in hooks {
        if skip_tests && h.hooks.iter().any(|e| e == "test" || e == "test-success") {
            continue;
        }
        out.push_str(&format!("---\n# Source: {}\n{}\n", h.source, h.content));
    }
    out
}

/// Go's `filepath.Match` on `/`-separated paths: `*` any run of characters but `/`, `?` one of them,
/// `[…]` a class (`^` negates, `a-z` ranges), `\\` escapes.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    fn class(p: &[char], c: char) -> Option<(bool, usize)> {
        let (mut i, negate) = if p.first() == Some(&'^') { (1, true) } else { (0, false) };
        let mut hit = false;
        while i < p.len() && (p[i] != ']' || i == usize::from(negate)) {
            let lo = p[i];
            if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                hit |= lo <= c && c <= p[i + 2];
                i += 3;
            } else {
                hit |= lo == c;
                i += 1;
            }
        }
        (i < p.len()).then_some((hit != negate, i + 1))
    }
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).take_while(|&k| k == 0 || n[k - 1] != '/').any(|k| go(&p[1..], &n[k..])),
            Some('?') => n.first().is_some_and(|c| *c != '/') && go(&p[1..], &n[1..]),
            Some('[') => match (n.first(), n.first().and_then(|c| class(&p[1..], *c))) {
                (Some(c), Some((true, used))) if *c != '/' => go(&p[1 + used..], &n[1..]),
                _ => false,
            },
            Some('\\') if p.len() > 1 => n.first() == Some(&p[1]) && go(&p[2..], &n[1..]),
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    go(&pattern.chars().collect::<Vec<_>>(), &name.chars().collect::<Vec<_>>())
}

/// `helm template --show-only`: the documents of `output` whose template (its path in the chart,
/// `# Source: <chart>/<path>`) matches each pattern, in order; a pattern that matches none is an error.
pub fn show_only(output: &str, patterns: &[String]) -> Result<String, HelmError> {
    let sep = regex::Regex::new(r"(?:^|\s*\n)---\s*").expect("a valid pattern");
    let source = regex::Regex::new(r"# Source: [^/]+/(.+)").expect("a valid pattern");
    let whole = format!("\n{}", output.trim());
    let docs: Vec<&str> = sep.split(&whole).map(str::trim).filter(|d| !d.is_empty()).collect();
    let mut out = String::new();
    for pattern in patterns {
        let pattern = pattern.replace('\\', "/");
        let mut found = false;
        for d in &docs {
            if source.captures(d).is_some_and(|c| glob_match(&pattern, &c[1])) {
                out.push_str(&format!("---\n{d}\n"));
                found = true;
            }
        }
        if !found {
            return Err(HelmError::from(format!("could not find template {pattern} in chart")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_as_go_matches_them() {
        for (p, n, want) in [
            ("templates/subdir/role*", "templates/subdir/rolebinding.yaml", true),
            ("templates/*", "templates/subdir/role.yaml", false),
            ("templates/?.yaml", "templates/a.yaml", true),
            ("templates/[a-c].yaml", "templates/b.yaml", true),
            ("templates/[^a-c].yaml", "templates/b.yaml", false),
            ("templates/service.yaml", "templates/service.yaml", true),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} {n}");
        }
    }

    #[test]
    fn documents_split_sorted_by_kind_and_hooks_apart() {
        let mut files = BTreeMap::new();
        files.insert(
            "c/templates/a.yaml".to_string(),
            "kind: Deployment\nmetadata: {name: d}\n---\nkind: Service\nmetadata: {name: s}\n".to_string(),
        );
        files.insert(
            "c/templates/b.yaml".to_string(),
            "\n---\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n".to_string(),
        );
        files.insert("c/templates/c.yaml".to_string(), "kind: Foo\nmetadata: {name: f}".to_string());
        let (m, h) = sort(&files).unwrap();
        assert_eq!(m.iter().map(|x| x.kind.as_str()).collect::<Vec<_>>(), ["Service", "Deployment", "Foo"]);
        assert_eq!(h[0].hooks, ["test"]);
        let out = template_output(&m, &h, true);
        assert!(
            out.starts_with("---\n# Source: c/templates/a.yaml\nkind: Service\nmetadata: {name: s}\n---\n"),
            "{out}"
        );
        assert!(!out.contains("kind: Pod"));
    }
}
