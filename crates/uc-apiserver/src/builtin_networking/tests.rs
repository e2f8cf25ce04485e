use serde_json::json;

use super::*;

fn errors(resource: &str, spec: Value) -> Vec<String> {
    validate(resource, &json!({"metadata": {"name": "x"}, "spec": spec})).iter().map(ToString::to_string).collect()
}

#[test]
fn network_policies_get_kubes_defaults() {
    let mut policy =
        json!({"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}, {"protocol": "UDP", "port": 53}]}]}});
    apply_defaults("networkpolicies", &mut policy);
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress"]));
    assert_eq!(
        policy["spec"]["ingress"][0]["ports"],
        json!([{"port": 80, "protocol": "TCP"}, {"protocol": "UDP", "port": 53}])
    );
    let mut egress = json!({"spec": {"podSelector": {}, "egress": [{}]}});
    apply_defaults("networkpolicies", &mut egress);
    assert_eq!(egress["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    let mut own = json!({"spec": {"podSelector": {}, "egress": [{}], "policyTypes": ["Egress"]}});
    apply_defaults("networkpolicies", &mut own);
    assert_eq!(own["spec"]["policyTypes"], json!(["Egress"]), "a policy's own types stay");
}

#[test]
fn a_good_network_policy_passes() {
    let spec = json!({
        "podSelector": {"matchLabels": {"app": "db"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [{"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}},
                              {"namespaceSelector": {"matchLabels": {"project": "p"}}, "podSelector": {}}],
                     "ports": [{"protocol": "TCP", "port": 6379}, {"port": "metrics"}]}],
        "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}], "ports": [{"port": 32000, "endPort": 32768}]}],
    });
    assert_eq!(errors("networkpolicies", spec), Vec::<String>::new());
    assert_eq!(errors("networkpolicies", json!({"podSelector": {}})), Vec::<String>::new());
}

#[test]
fn network_policies_are_refused_in_kube_apiservers_words() {
    let spec = json!({
        "podSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]},
        "policyTypes": ["Ingress", "Sideways"],
        "ingress": [{"from": [{}, {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}},
                              {"ipBlock": {"cidr": "10.0.0.0/33"}},
                              {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24", "10.0.0.0/16"]}}],
                     "ports": [{"protocol": "ICMP", "port": 0}, {"port": "http", "endPort": 90},
                               {"port": 90, "endPort": 80}, {"endPort": 80}]}],
    });
    assert_eq!(
        errors("networkpolicies", spec),
        [
            r#"spec.podSelector: Invalid value: {"matchExpressions":[{"key":"a","operator":"In"}]}: matchExpressions[0].values: must be specified when `operator` is "In""#,
            r#"spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP""#,
            "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "spec.ingress[0].ports[1].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
            "spec.ingress[0].ports[2].endPort: Invalid value: 90: must be greater than or equal to `port`",
            "spec.ingress[0].ports[3].endPort: Invalid value: 80: may not be specified when `port` is not specified",
            "spec.ingress[0].from[0]: Required value: must specify a peer",
            "spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer",
            r#"spec.ingress[0].from[2].ipBlock.cidr: Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"#,
            r#"spec.ingress[0].from[3].ipBlock.except[0]: Invalid value: "10.1.0.0/24": must be a strict subset of `cidr`"#,
            r#"spec.ingress[0].from[3].ipBlock.except[1]: Invalid value: "10.0.0.0/16": must be a strict subset of `cidr`"#,
            r#"spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Egress", "Ingress""#,
        ]
    );
    let three = errors("networkpolicies", json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress", "Ingress"]}));
    assert_eq!(
        three,
        [
            r#"spec.policyTypes: Invalid value: ["Ingress","Egress","Ingress"]: may not specify more than two policyTypes"#
        ]
    );
}

#[test]
fn address_blocks_hold_smaller_blocks_of_their_family() {
    let cidr = |s: &str| Cidr::parse(s).unwrap();
    assert!(cidr("10.0.0.0/8").strictly_holds(&cidr("10.200.0.0/16")));
    assert!(!cidr("10.0.0.0/8").strictly_holds(&cidr("11.0.0.0/16")));
    assert!(cidr("0.0.0.0/0").strictly_holds(&cidr("192.168.1.1/32")));
    assert!(cidr("2001:db8::/32").strictly_holds(&cidr("2001:db8:1::/48")));
    assert!(!cidr("::/0").strictly_holds(&cidr("10.0.0.0/8")), "another family");
    for bad in ["10.0.0.0", "10.0.0.0/", "10.0.0.0/+8", "::/129", "x/8"] {
        assert!(Cidr::parse(bad).is_none(), "{bad}");
    }
}

#[test]
fn a_good_ingress_passes() {
    let spec = json!({
        "ingressClassName": "nginx",
        "rules": [{"host": "*.example.com", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
            {"pathType": "ImplementationSpecific", "backend": {"service": {"name": "web", "port": {"name": "http"}}}},
            {"path": "/static", "pathType": "Exact",
             "backend": {"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "static"}}}]}},
                  {"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}],
        "tls": [{"hosts": ["www.example.com"], "secretName": "tls-web"}],
    });
    assert_eq!(errors("ingresses", spec), Vec::<String>::new());
    let default_only = json!({"defaultBackend": {"service": {"name": "web", "port": {"number": 8080}}}});
    assert_eq!(errors("ingresses", default_only), Vec::<String>::new());
}

#[test]
fn ingresses_are_refused_in_kube_apiservers_words() {
    assert_eq!(
        errors("ingresses", json!({})),
        ["spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"]
    );
    let svc = |name: &str, port: Value| json!({"service": {"name": name, "port": port}});
    let spec = json!({
        "ingressClassName": "Nginx",
        "defaultBackend": {},
        "rules": [{"host": "10.0.0.1", "http": {"paths": [
            {"path": "/a", "backend": svc("web", json!({"number": 80}))},
            {"path": "a//b/..", "pathType": "Prefix", "backend": svc("9web", json!({"number": 70000}))},
            {"path": "/", "pathType": "Regex", "backend": svc("web", json!({"name": "http", "number": 80}))},
            {"path": "/", "pathType": "Exact", "backend": svc("web", json!({}))},
            {"path": "/", "pathType": "Exact", "backend": {"service": {"name": "web", "port": {"number": 80}},
                                                           "resource": {"kind": "K", "name": "n"}}}]}},
                  {"host": "a.*.example.com", "http": {"paths": []}}],
        "tls": [{"hosts": ["Bad_Host"], "secretName": "Not/A/Name"}],
    });
    assert_eq!(
        errors("ingresses", spec),
        [
            r#"spec.defaultBackend: Invalid value: "": resource or service backend is required"#,
            r#"spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address"#,
            "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified",
            r#"spec.rules[0].http.paths[1].path: Invalid value: "a//b/..": must be an absolute path"#,
            r#"spec.rules[0].http.paths[1].path: Invalid value: "a//b/..": must not contain '//'"#,
            r#"spec.rules[0].http.paths[1].path: Invalid value: "a//b/..": cannot end with '/..'"#,
            r#"spec.rules[0].http.paths[1].backend.service.name: Invalid value: "9web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
            "spec.rules[0].http.paths[1].backend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive",
            r#"spec.rules[0].http.paths[2].pathType: Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix""#,
            r#"spec.rules[0].http.paths[2].backend: Invalid value: "": cannot set both port name & port number"#,
            "spec.rules[0].http.paths[3].backend: Required value: port name or number is required",
            r#"spec.rules[0].http.paths[4].backend: Invalid value: "": cannot set both resource and service backends"#,
            format!(r#"spec.rules[1].host: Invalid value: "a.*.example.com": {WILDCARD_MSG}"#).as_str(),
            "spec.rules[1].http.paths: Required value",
            r#"spec.tls[0].hosts[0]: Invalid value: "Bad_Host": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
            r#"spec.tls[0].secretName: Invalid value: "Not/A/Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
            r#"spec.ingressClassName: Invalid value: "Nginx": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
        ]
    );
}

#[test]
fn ingress_classes_are_defaulted_and_checked_as_kube_does() {
    let mut class =
        json!({"spec": {"controller": "example.com/ingress", "parameters": {"kind": "Params", "name": "p"}}});
    apply_defaults("ingressclasses", &mut class);
    assert_eq!(class["spec"]["parameters"]["scope"], "Cluster");
    assert_eq!(errors("ingressclasses", class["spec"].clone()), Vec::<String>::new());
    let spec = json!({"controller": "nginx", "parameters": {"kind": "", "name": "p", "scope": "Namespace"}});
    assert_eq!(
        errors("ingressclasses", spec),
        [
            r#"spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")"#,
            "spec.parameters.kind: Required value",
            "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'",
        ]
    );
    let spec =
        json!({"controller": "", "parameters": {"kind": "K", "name": "p", "scope": "Cluster", "namespace": "n"}});
    assert_eq!(
        errors("ingressclasses", spec),
        [
            "spec.controller: Required value",
            "spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"
        ]
    );
    let spec = json!({"controller": "example.com/a b"});
    assert_eq!(
        errors("ingressclasses", spec),
        [
            r#"spec.controller: Invalid value: "a b": Invalid path (regex used for validation is '[A-Za-z0-9/\-._~%!$&'()*+,;=:]+')"#
        ]
    );
    let old = json!({"spec": {"controller": "example.com/a"}});
    let new = json!({"spec": {"controller": "example.com/b"}});
    assert_eq!(
        class_update_errors(&old, &new).iter().map(ToString::to_string).collect::<Vec<_>>(),
        [r#"spec.controller: Invalid value: "example.com/b": field is immutable"#]
    );
    assert!(class_update_errors(&old, &old).is_empty());
}

#[test]
fn a_new_ingress_gets_the_newest_default_class() {
    let class = |name: &str, created: &str, default: Option<&str>| {
        let annotations = default.map(|d| json!({"ingressclass.kubernetes.io/is-default-class": d}));
        json!({"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations}})
    };
    let classes = [
        class("old", "2026-01-01T00:00:00Z", Some("true")),
        class("new-b", "2026-02-01T00:00:00Z", Some("true")),
        class("new-a", "2026-02-01T00:00:00Z", Some("true")),
        class("newest-not-default", "2026-03-01T00:00:00Z", Some("false")),
        class("plain", "2026-04-01T00:00:00Z", None),
    ];
    let ingress = json!({"metadata": {"name": "i"}, "spec": {"rules": []}});
    assert_eq!(default_class(&ingress, &classes).as_deref(), Some("new-a"), "the newest, by name between equals");
    assert_eq!(default_class(&ingress, &classes[..1]).as_deref(), Some("old"));
    assert_eq!(default_class(&ingress, &classes[3..]), None, "no default class");
    let named = json!({"spec": {"ingressClassName": "mine"}});
    assert_eq!(default_class(&named, &classes), None, "a class named stays");
    let annotated = json!({"metadata": {"annotations": {"kubernetes.io/ingress.class": "nginx"}}, "spec": {}});
    assert_eq!(default_class(&annotated, &classes), None, "so does the older annotation");
}
