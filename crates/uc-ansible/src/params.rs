//! The extra variables a run gets, as the SDK's runner makes them (`makeParameters`): the custom
//! resource's spec with keys in snake_case (the SDK's `paramconv`, quirks included), marked unsafe on
//! request, `ansible_operator_meta`, the whole object as `_<group>_<kind>` and its spec as
//! `_<group>_<kind>_spec`, then the watch's `vars` (and on a finalizer run the finalizer's).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::watches::Watch;

/// The words kept together when snake-casing, as `paramconv`'s word mapping has them.
const WORDS: [&str; 3] = ["HTTP", "URL", "IP"];

/// `paramconv.addWordBoundariesToNumbers`: `a12b3` becomes `a 12 b3`.
fn number_boundaries(s: &str) -> String {
    let re = regex::Regex::new(r"([a-zA-Z])(\d+)([a-zA-Z](\d+))").expect("a valid pattern");
    re.replace_all(s, "$1 $2 $3").into_owned()
}

/// `paramconv.preprocessWordMapping`: the first `HTTP`, `URL` and `IP` (and a plural `s` after one)
/// set apart by underscores.
fn separate_words(mut v: String) -> String {
    for word in WORDS {
        let Some(idx) = v.find(word) else { continue };
        let end = idx + word.len();
        v = if end == v.len() {
            format!("{}_{}", &v[..idx], &v[idx..])
        } else if v.as_bytes()[end] == b's' {
            if end == v.len() - 1 {
                format!("{}_{}S", &v[..idx], &v[idx..end])
            } else if idx == 0 {
                format!("{}S_{}", &v[..end], &v[end + 1..])
            } else {
                format!("{}_{}S_{}", &v[..idx], &v[idx..end], &v[end + 1..])
            }
        } else if idx == 0 {
            format!("{}_{}", &v[..end], &v[end..])
        } else {
            format!("{}_{}_{}", &v[..idx], &v[idx..end], &v[end..])
        };
    }
    v
}

/// `paramconv.ToSnake`: `sizeK8sBuckets` → `size_k8s_buckets`, `egressIPs` → `egress_ips`, a leading
/// capital → a leading underscore.
pub fn to_snake(s: &str) -> String {
    let s = number_boundaries(s);
    let s = s.trim_matches(' ');
    if s.is_empty() {
        return String::new();
    }
    let prefix = if s.as_bytes()[0].is_ascii_uppercase() { "_" } else { "" };
    let s = separate_words(s.to_string());
    let bytes = s.as_bytes();
    let (mut bits, mut n, mut i_real) = (Vec::new(), String::new(), -1i64);
    for (i, v) in s.char_indices() {
        i_real += 1;
        let changed = bytes.get(i + 1).is_some_and(|&next| {
            (v.is_ascii_uppercase() && next.is_ascii_lowercase())
                || (v.is_ascii_lowercase() && next.is_ascii_uppercase())
        });
        if i_real > 0 && !n.ends_with('_') && changed {
            if v.is_ascii_uppercase() {
                bits.push(n.to_lowercase());
                n = v.to_string();
                i_real = 0;
            } else {
                n.push(v);
                bits.push(n.to_lowercase());
                n.clear();
                i_real = -1;
            }
        } else if matches!(v, ' ' | '_' | '-') {
            bits.push(n.to_lowercase());
            n.clear();
            i_real = -1;
        } else {
            n.push(v);
        }
    }
    bits.push(n.to_lowercase());
    let joined = bits.join("_");
    if matches!(bits[0].as_str(), "http" | "url" | "ip") { joined } else { format!("{prefix}{joined}") }
}

/// Every key of every map, at any depth, snake-cased.
fn snake_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (to_snake(k), snake_keys(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(snake_keys).collect()),
        other => other.clone(),
    }
}

/// Every string wrapped as Ansible's unsafe text (`{"__ansible_unsafe": s}`): never templated.
pub fn mark_unsafe(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), mark_unsafe(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(mark_unsafe).collect()),
        Value::String(_) => serde_json::json!({"__ansible_unsafe": v}),
        other => other.clone(),
    }
}

/// `_<group>_<kind>` with dots and dashes as underscores: `_cache_example_com_memcached`.
pub fn object_key(group: &str, kind: &str) -> String {
    format!("_{group}_{}", kind.to_lowercase()).replace(['.', '-'], "_")
}

/// The extra variables of a run over `object`; `finalizing`: a finalizer run.
pub fn parameters(watch: &Watch, object: &Value, finalizing: bool) -> Map<String, Value> {
    let spec = object.get("spec").filter(|s| s.is_object()).cloned().unwrap_or_else(|| Value::Object(Map::new()));
    let mut out = match if watch.snake_case_parameters { snake_keys(&spec) } else { spec.clone() } {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if watch.mark_unsafe {
        for v in out.values_mut() {
            *v = mark_unsafe(v);
        }
    }
    let meta = |k: &str| object.pointer(&format!("/metadata/{k}")).and_then(Value::as_str).unwrap_or_default();
    out.insert(
        "ansible_operator_meta".into(),
        serde_json::json!({"namespace": meta("namespace"), "name": meta("name")}),
    );
    let key = object_key(&watch.group, &watch.kind);
    let (whole, spec) =
        if watch.mark_unsafe { (mark_unsafe(object), mark_unsafe(&spec)) } else { (object.clone(), spec) };
    out.insert(format!("{key}_spec"), spec);
    out.insert(key, whole);
    let extend = |out: &mut Map<String, Value>, vars: &BTreeMap<String, Value>| {
        out.extend(vars.iter().map(|(k, v)| (k.clone(), v.clone())));
    };
    extend(&mut out, &watch.vars);
    if finalizing && let Some(f) = &watch.finalizer {
        extend(&mut out, &f.vars);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::watches::{Paths, parse};

    /// `paramconv_test.go`'s ToSnake table.
    #[test]
    fn snake_case_as_the_sdk_converts() {
        let table = [
            ("var", "var"),
            ("888", "888"),
            ("k8s_var", "k8s_var"),
            ("_k8s_var", "_k8s_var"),
            ("k8s var", "k8s_var"),
            ("ThisShouldHaveUnderscores", "_this_should_have_underscores"),
            ("sizeK8sBuckets", "size_k8s_buckets"),
            ("_CanYou_Handle_mixedVars", "_can_you_handle_mixed_vars"),
            ("this_should_be_a_noop", "this_should_be_a_noop"),
            ("egressIPs", "egress_ips"),
            ("egressIPsEgress", "egress_ips_egress"),
            ("egressIPsegress", "egress_ips_egress"),
            ("IPsegress", "_ips_egress"),
            ("egressIP", "egress_ip"),
            ("egressIPEgress", "egress_ip_egress"),
            ("egressIPegress", "egress_ip_egress"),
            ("URLegressIPEgressHTTP", "url_egress_ip_egress_http"),
            ("URLsegressIPsEgressHTTPs", "_urls_egress_ips_egress_https"),
        ];
        for (input, want) in table {
            assert_eq!(to_snake(input), want, "{input}");
        }
    }

    fn watch(extra: &str) -> Watch {
        let all = |_: &Path| true;
        let paths = Paths { dir: Path::new("/op"), roles_path: vec![], home: None, exists: &all };
        let text = format!(
            "- {{group: cache.example.com, version: v1alpha1, kind: Memcached, role: m, vars: {{state: present}}{extra}}}"
        );
        parse(&text, &paths).unwrap().remove(0)
    }

    #[test]
    fn the_sdks_extra_vars() {
        let cr = json!({"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
            "metadata": {"name": "m", "namespace": "ns"}, "spec": {"size": 3, "podTemplate": {"nodeName": "x"}}});
        let p = parameters(&watch(", markUnsafe: false"), &cr, false);
        assert_eq!(p["size"], 3);
        assert_eq!(p["pod_template"], json!({"node_name": "x"}));
        assert_eq!(p["ansible_operator_meta"], json!({"namespace": "ns", "name": "m"}));
        assert_eq!(p["_cache_example_com_memcached"], cr);
        assert_eq!(p["_cache_example_com_memcached_spec"], cr["spec"]);
        assert_eq!(p["state"], "present");
        let kept = parameters(&watch(", snakeCaseParameters: false"), &cr, false);
        assert_eq!(kept["podTemplate"], json!({"nodeName": {"__ansible_unsafe": "x"}}));
        assert_eq!(kept["_cache_example_com_memcached"]["metadata"]["name"], json!({"__ansible_unsafe": "m"}));
        let fin = watch(", markUnsafe: false, finalizer: {name: f, vars: {state: absent}}");
        assert_eq!(parameters(&fin, &cr, true)["state"], "absent");
        assert_eq!(parameters(&fin, &cr, false)["state"], "present");
        let no_spec = parameters(&watch(", markUnsafe: false"), &json!({"metadata": {"name": "m"}}), false);
        assert_eq!(no_spec["_cache_example_com_memcached_spec"], json!({}));
    }
}
