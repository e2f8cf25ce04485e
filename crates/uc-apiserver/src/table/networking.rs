//! The cells of the networking.k8s.io kinds' columns, as kube's printers write them (`printIngress`,
//! `printIngressClass`): an Ingress's hosts (three, then how many more), its load balancers' addresses
//! and its ports, and an IngressClass's parameters as `Kind.group/name`.

use serde_json::Value;
use uc_api::Pointer;

/// The hosts of an Ingress's rules: the first three named, `*` when none is, and how many rules more.
pub(super) fn hosts(v: &Value) -> Value {
    let rules = v.at("/spec/rules").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let named: Vec<&str> =
        rules.iter().take(3).filter_map(|r| r.get("host").and_then(Value::as_str).filter(|h| !h.is_empty())).collect();
    let written = match (named.is_empty(), rules.len() > 3) {
        (true, _) => "*".to_string(),
        (false, false) => named.join(","),
        (false, true) => format!("{} + {} more...", named.join(","), rules.len() - 3),
    };
    Value::String(written)
}

/// The addresses (an IP, else a host name) of an Ingress's load balancers, sorted and once each.
pub(super) fn addresses(v: &Value) -> Value {
    let ingress = v.at("/status/loadBalancer/ingress").and_then(Value::as_array).into_iter().flatten();
    let text = |i: &Value, k: &str| i.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let mut list: Vec<String> = ingress.filter_map(|i| text(i, "ip").or_else(|| text(i, "hostname"))).collect();
    list.sort();
    list.dedup();
    Value::String(list.join(","))
}

/// `80`, or `80, 443` for an Ingress with TLS.
pub(super) fn ports(v: &Value) -> Value {
    let tls = v.at("/spec/tls").and_then(Value::as_array).is_some_and(|t| !t.is_empty());
    Value::String(if tls { "80, 443" } else { "80" }.into())
}

/// An IngressClass's parameters as `Kind.group/name`, `<none>` without.
pub(super) fn class_parameters(v: &Value) -> Value {
    let Some(p) = v.at("/spec/parameters").filter(|p| p.is_object()) else { return Value::String("<none>".into()) };
    let field = |k: &str| p.get(k).and_then(Value::as_str);
    let kind = field("kind").unwrap_or_default();
    let kind = match field("apiGroup") {
        Some(group) => format!("{kind}.{group}"),
        None => kind.to_string(),
    };
    Value::String(format!("{kind}/{}", field("name").unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ingresses_print_as_kubes_printer_prints_them() {
        let rules =
            |hosts: &[&str]| json!({"spec": {"rules": hosts.iter().map(|h| json!({"host": h})).collect::<Vec<_>>()}});
        assert_eq!(hosts(&rules(&[])), "*");
        assert_eq!(hosts(&rules(&["", ""])), "*");
        assert_eq!(hosts(&rules(&["a.com", "", "b.com"])), "a.com,b.com");
        assert_eq!(hosts(&rules(&["a", "b", "c", "d", "e"])), "a,b,c + 2 more...");
        let lb = json!({"status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.2"}, {"hostname": "lb.example.com"}, {"ip": "10.0.0.2"}]}}});
        assert_eq!(addresses(&lb), "10.0.0.2,lb.example.com");
        assert_eq!(addresses(&json!({})), "");
        assert_eq!(ports(&json!({"spec": {"tls": [{}]}})), "80, 443");
        assert_eq!(ports(&json!({"spec": {}})), "80");
    }

    #[test]
    fn ingress_classes_print_their_parameters() {
        let p = json!({"spec": {"parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}});
        assert_eq!(class_parameters(&p), "IngressParameters.k8s.example.com/external-lb");
        assert_eq!(
            class_parameters(&json!({"spec": {"parameters": {"kind": "ConfigMap", "name": "c"}}})),
            "ConfigMap/c"
        );
        assert_eq!(class_parameters(&json!({"spec": {}})), "<none>");
    }
}
