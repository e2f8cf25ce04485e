//! The networking.k8s.io kinds as kube-apiserver keeps them (`pkg/apis/networking`): NetworkPolicies,
//! Ingresses and IngressClasses, stored with kube's defaults (a policy's `policyTypes`, its ports'
//! protocol, a class's parameters' scope) and refused in kube's words (`ValidateNetworkPolicy`,
//! `ValidateIngressCreate`, `ValidateIngressClass`), and a new Ingress given the default class as kube's
//! DefaultIngressClass admission plugin gives it. Nothing on uc's node enforces a policy or serves
//! an Ingress, as nothing does in a kube cluster without a network plugin or an ingress controller
//! (docs/apiserver.md).

use std::net::IpAddr;

use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, IPBlock, Ingress, IngressBackend, IngressClass, IngressClassParametersReference, IngressTLS,
    NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;
use uc_api::Pointer;
use uc_api::names::NameRule;

use crate::builtin_container::port_name_errors;
use crate::error::{FieldError, FieldErrorKind, FieldErrors};

/// Applies kube's defaults of a networking kind (`SetDefaults_NetworkPolicy`, `…Port`, `…IngressClass`).
pub(crate) fn apply_defaults(resource: &str, obj: &mut Value) {
    match resource {
        "networkpolicies" => default_network_policy(obj),
        "ingressclasses" => {
            if let Some(parameters) = obj.at_mut("/spec/parameters").and_then(Value::as_object_mut)
                && parameters.get("scope").is_none_or(Value::is_null)
            {
                parameters.insert("scope".into(), "Cluster".into());
            }
        }
        _ => {}
    }
}

fn default_network_policy(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    for direction in ["ingress", "egress"] {
        let rules = spec.get_mut(direction).and_then(Value::as_array_mut).into_iter().flatten();
        for port in rules.filter_map(|r| r.get_mut("ports").and_then(Value::as_array_mut)).flatten() {
            if let Some(port) = port.as_object_mut().filter(|p| p.get("protocol").is_none_or(Value::is_null)) {
                port.insert("protocol".into(), "TCP".into());
            }
        }
    }
    if spec.get("policyTypes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        let egress = spec.get("egress").and_then(Value::as_array).is_some_and(|e| !e.is_empty());
        let types: &[&str] = if egress { &["Ingress", "Egress"] } else { &["Ingress"] };
        spec.insert("policyTypes".into(), types.into());
    }
}

/// kube's DefaultIngressClass admission plugin: the class a new Ingress gets when it names none (by
/// `spec.ingressClassName` or the older `kubernetes.io/ingress.class` annotation): of the classes
/// annotated `ingressclass.kubernetes.io/is-default-class: "true"`, the newest (by name when two are as
/// new). `classes` are the stored IngressClasses.
pub(crate) fn default_class<'a>(ingress: &Value, classes: impl IntoIterator<Item = &'a Value>) -> Option<String> {
    let annotated = ingress.at("/metadata/annotations").and_then(Value::as_object);
    if annotated.is_some_and(|a| a.contains_key("kubernetes.io/ingress.class"))
        || ingress.at("/spec/ingressClassName").is_some_and(|c| !c.is_null())
    {
        return None;
    }
    crate::default_class::newest_default(classes, &["ingressclass.kubernetes.io~1is-default-class"])
}

/// What is wrong with an object of a networking kind; nothing for a body that does not read as its
/// type (the typed read before this said so, with its path).
pub(crate) fn validate(resource: &str, obj: &Value) -> Vec<FieldError> {
    let mut errs = FieldErrors::new();
    match resource {
        "networkpolicies" => {
            if let Ok(policy) = serde_json::from_value::<NetworkPolicy>(obj.clone()) {
                errs.network_policy(&policy);
            }
        }
        "ingresses" => {
            if let Ok(ingress) = serde_json::from_value::<Ingress>(obj.clone()) {
                errs.ingress(&ingress);
            }
        }
        "ingressclasses" => {
            if let Ok(class) = serde_json::from_value::<IngressClass>(obj.clone()) {
                errs.ingress_class(&class);
            }
        }
        _ => {}
    }
    errs.0
}

/// What kube refuses in an update of an IngressClass beyond what a create is checked for: its controller.
pub(crate) fn class_update_errors(old: &Value, new: &Value) -> Vec<FieldError> {
    let controller = |v: &Value| v.at("/spec/controller").cloned().unwrap_or(Value::Null);
    if controller(old) != controller(new) {
        return vec![FieldError::invalid("spec.controller", &controller(new), "field is immutable")];
    }
    Vec::new()
}

const WILDCARD_MSG: &str = r"a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const CIDR_MSG: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

impl FieldErrors {
    /// A host: a DNS subdomain, or a wildcard one (`*.example.com`).
    fn host(&mut self, field: String, host: &str) {
        if !host.contains('*') {
            return self.name(field, host, NameRule::Dns1123Subdomain);
        }
        let rest = host.strip_prefix("*.");
        if host.len() > 253 {
            self.invalid(field.clone(), host, "must be no more than 253 characters");
        }
        if !rest.is_some_and(uc_api::names::is_dns_subdomain) {
            self.invalid(field, host, WILDCARD_MSG);
        }
    }

    fn selector(&mut self, field: String, selector: &LabelSelector) {
        let value = serde_json::to_value(selector).unwrap_or(Value::Null);
        if let Err(e) = uc_api::LabelSelector::from_value(&value) {
            self.invalid(field, value, e.to_string());
        }
    }

    fn port_number(&mut self, field: String, n: i32) {
        if !(1..=65535).contains(&n) {
            self.invalid(field, n, "must be between 1 and 65535, inclusive");
        }
    }

    fn network_policy(&mut self, policy: &NetworkPolicy) {
        let Some(spec) = &policy.spec else { return };
        if let Some(selector) = &spec.pod_selector {
            self.selector("spec.podSelector".into(), selector);
        }
        for (i, rule) in spec.ingress.iter().flatten().enumerate() {
            self.policy_rule(&format!("spec.ingress[{i}]"), rule.ports.as_deref(), "from", rule.from.as_deref());
        }
        for (i, rule) in spec.egress.iter().flatten().enumerate() {
            self.policy_rule(&format!("spec.egress[{i}]"), rule.ports.as_deref(), "to", rule.to.as_deref());
        }
        let types = spec.policy_types.as_deref().unwrap_or_default();
        if types.len() > 2 {
            return self.invalid("spec.policyTypes", types.to_vec(), "may not specify more than two policyTypes");
        }
        for (i, t) in types.iter().enumerate().filter(|(_, t)| !matches!(t.as_str(), "Ingress" | "Egress")) {
            self.not_supported(format!("spec.policyTypes[{i}]"), t, &["Egress", "Ingress"]);
        }
    }

    /// A policy's ingress or egress rule: its ports, and its peers (`from` or `to`).
    fn policy_rule(
        &mut self,
        path: &str,
        ports: Option<&[NetworkPolicyPort]>,
        peers_field: &str,
        peers: Option<&[NetworkPolicyPeer]>,
    ) {
        for (j, port) in ports.unwrap_or_default().iter().enumerate() {
            self.policy_port(&format!("{path}.ports[{j}]"), port);
        }
        for (j, peer) in peers.unwrap_or_default().iter().enumerate() {
            self.peer(&format!("{path}.{peers_field}[{j}]"), peer);
        }
    }

    /// kube's `ValidateNetworkPolicyPort`.
    fn policy_port(&mut self, path: &str, port: &NetworkPolicyPort) {
        if let Some(protocol) = port.protocol.as_deref().filter(|p| !matches!(*p, "TCP" | "UDP" | "SCTP")) {
            self.not_supported(format!("{path}.protocol"), protocol, &["TCP", "UDP", "SCTP"]);
        }
        match (&port.port, port.end_port) {
            (Some(IntOrString::Int(n)), end) => {
                self.port_number(format!("{path}.port"), *n);
                if let Some(end) = end {
                    if end < *n {
                        self.invalid(format!("{path}.endPort"), *n, "must be greater than or equal to `port`");
                    }
                    self.port_number(format!("{path}.endPort"), end);
                }
            }
            (Some(IntOrString::String(name)), end) => {
                if let Some(end) = end {
                    self.invalid(format!("{path}.endPort"), end, "may not be specified when `port` is non-numeric");
                }
                for why in port_name_errors(name) {
                    self.invalid(format!("{path}.port"), name.as_str(), why);
                }
            }
            (None, Some(end)) => {
                self.invalid(format!("{path}.endPort"), end, "may not be specified when `port` is not specified")
            }
            (None, None) => {}
        }
    }

    /// kube's `ValidateNetworkPolicyPeer`: pods, namespaces (or both), or an IP block alone.
    fn peer(&mut self, path: &str, peer: &NetworkPolicyPeer) {
        if let Some(s) = &peer.pod_selector {
            self.selector(format!("{path}.podSelector"), s);
        }
        if let Some(s) = &peer.namespace_selector {
            self.selector(format!("{path}.namespaceSelector"), s);
        }
        if let Some(block) = &peer.ip_block {
            self.ip_block(&format!("{path}.ipBlock"), block);
        }
        let peers = [peer.pod_selector.is_some(), peer.namespace_selector.is_some(), peer.ip_block.is_some()];
        match peers.iter().filter(|p| **p).count() {
            0 => self.required(path, "must specify a peer"),
            1 => {}
            _ if peer.ip_block.is_some() => {
                self.0.push(FieldError::forbidden(path, "may not specify both ipBlock and another peer"))
            }
            _ => {}
        }
    }

    fn ip_block(&mut self, path: &str, block: &IPBlock) {
        if block.cidr.is_empty() {
            return self.required(format!("{path}.cidr"), "");
        }
        let Some(cidr) = Cidr::parse(&block.cidr) else {
            return self.invalid(format!("{path}.cidr"), block.cidr.as_str(), CIDR_MSG);
        };
        for (i, except) in block.except.iter().flatten().enumerate() {
            let field = format!("{path}.except[{i}]");
            match Cidr::parse(except) {
                None => self.invalid(field, except.as_str(), CIDR_MSG),
                Some(e) if !cidr.strictly_holds(&e) => {
                    self.invalid(field, except.as_str(), "must be a strict subset of `cidr`")
                }
                Some(_) => {}
            }
        }
    }

    fn ingress(&mut self, ingress: &Ingress) {
        let Some(spec) = &ingress.spec else { return };
        let rules = spec.rules.as_deref().unwrap_or_default();
        if rules.is_empty() && spec.default_backend.is_none() {
            self.invalid("spec", Value::Null, "either `defaultBackend` or `rules` must be specified");
        }
        if let Some(backend) = &spec.default_backend {
            self.backend("spec.defaultBackend", backend);
        }
        for (i, rule) in rules.iter().enumerate() {
            let path = format!("spec.rules[{i}]");
            if let Some(host) = rule.host.as_deref().filter(|h| !h.is_empty()) {
                if host.parse::<IpAddr>().is_ok() {
                    self.invalid(format!("{path}.host"), host, "must be a DNS name, not an IP address");
                }
                self.host(format!("{path}.host"), host);
            }
            if let Some(http) = &rule.http {
                if http.paths.is_empty() {
                    self.required(format!("{path}.http.paths"), "");
                }
                for (j, p) in http.paths.iter().enumerate() {
                    self.http_path(&format!("{path}.http.paths[{j}]"), p);
                }
            }
        }
        spec.tls.iter().flatten().enumerate().for_each(|(i, tls)| self.tls(&format!("spec.tls[{i}]"), tls));
        if let Some(class) = &spec.ingress_class_name {
            self.name("spec.ingressClassName".into(), class, NameRule::Dns1123Subdomain);
        }
    }

    /// kube's `validateHTTPIngressPath`: a type, an absolute path (clean, for Exact and Prefix), a backend.
    fn http_path(&mut self, path: &str, p: &HTTPIngressPath) {
        let value = p.path.as_deref().unwrap_or_default();
        let field = format!("{path}.path");
        match p.path_type.as_str() {
            "" => return self.required(format!("{path}.pathType"), "pathType must be specified"),
            "Exact" | "Prefix" => {
                if !value.starts_with('/') {
                    self.invalid(field.clone(), value, "must be an absolute path");
                }
                for seq in ["//", "/./", "/../", "%2f", "%2F"].iter().filter(|s| value.contains(**s)) {
                    self.invalid(field.clone(), value, format!("must not contain '{seq}'"));
                }
                for end in ["/..", "/."].iter().filter(|s| value.ends_with(**s)) {
                    self.invalid(field.clone(), value, format!("cannot end with '{end}'"));
                }
            }
            "ImplementationSpecific" => {
                if !value.is_empty() && !value.starts_with('/') {
                    self.invalid(field, value, "must be an absolute path");
                }
            }
            other => {
                self.not_supported(format!("{path}.pathType"), other, &["Exact", "ImplementationSpecific", "Prefix"])
            }
        }
        self.backend(&format!("{path}.backend"), &p.backend);
    }

    /// kube's `validateIngressBackend`: a Service (by name, with a port's name or number) or a resource.
    fn backend(&mut self, path: &str, backend: &IngressBackend) {
        match (&backend.service, &backend.resource) {
            (Some(_), Some(_)) => self.invalid(path, "", "cannot set both resource and service backends"),
            (None, Some(r)) => {
                if let Some(group) = &r.api_group {
                    self.name(format!("{path}.resource.apiGroup"), group, NameRule::Dns1123Subdomain);
                }
                for (field, value) in [("kind", &r.kind), ("name", &r.name)] {
                    if value.is_empty() {
                        self.required(format!("{path}.resource.{field}"), &format!("{field} is required"));
                    } else {
                        self.name(format!("{path}.resource.{field}"), value, NameRule::PathSegment);
                    }
                }
            }
            (Some(service), None) => {
                if service.name.is_empty() {
                    self.required(format!("{path}.service.name"), "");
                } else {
                    self.name(format!("{path}.service.name"), &service.name, NameRule::Dns1035Label);
                }
                let port = service.port.as_ref();
                let name = port.and_then(|p| p.name.as_deref()).filter(|n| !n.is_empty());
                let number = port.and_then(|p| p.number).filter(|n| *n != 0);
                match (name, number) {
                    (Some(_), Some(_)) => self.invalid(path, "", "cannot set both port name & port number"),
                    (Some(name), None) => {
                        for why in port_name_errors(name) {
                            self.invalid(format!("{path}.service.port.name"), name, why);
                        }
                    }
                    (None, Some(n)) => self.port_number(format!("{path}.service.port.number"), n),
                    (None, None) => self.required(path, "port name or number is required"),
                }
            }
            (None, None) => self.invalid(path, "", "resource or service backend is required"),
        }
    }

    fn tls(&mut self, path: &str, tls: &IngressTLS) {
        for (i, host) in tls.hosts.iter().flatten().enumerate() {
            self.host(format!("{path}.hosts[{i}]"), host);
        }
        if let Some(secret) = tls.secret_name.as_deref().filter(|s| !s.is_empty()) {
            self.name(format!("{path}.secretName"), secret, NameRule::Dns1123Subdomain);
        }
    }

    fn ingress_class(&mut self, class: &IngressClass) {
        let Some(spec) = &class.spec else { return };
        let controller = spec.controller.as_deref().unwrap_or_default();
        if controller.len() > 250 {
            let why = "may not be more than 250 bytes".to_string();
            self.0.push(FieldError::new(FieldErrorKind::TooLong, "spec.controller", None, why));
        }
        self.domain_prefixed_path("spec.controller", controller);
        if let Some(parameters) = &spec.parameters {
            self.class_parameters("spec.parameters", parameters);
        }
    }

    /// apimachinery's `IsDomainPrefixedPath` (`example.com/ingress-controller`).
    fn domain_prefixed_path(&mut self, field: &str, value: &str) {
        if value.is_empty() {
            return self.required(field, "");
        }
        let Some((host, path)) = value.split_once('/').filter(|(h, p)| !h.is_empty() && !p.is_empty()) else {
            return self.invalid(field, value, "must be a domain-prefixed path (such as \"acme.io/foo\")");
        };
        self.name(field.into(), host, NameRule::Dns1123Subdomain);
        let path_char = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
        if !path.chars().all(path_char) {
            let why = "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')";
            self.invalid(field, path, why);
        }
    }

    /// kube's `validateIngressClassParametersReference`.
    fn class_parameters(&mut self, path: &str, p: &IngressClassParametersReference) {
        if let Some(group) = &p.api_group {
            self.name(format!("{path}.apiGroup"), group, NameRule::Dns1123Subdomain);
        }
        for (field, value) in [("kind", &p.kind), ("name", &p.name)] {
            if value.is_empty() {
                self.required(format!("{path}.{field}"), "");
            } else {
                self.name(format!("{path}.{field}"), value, NameRule::PathSegment);
            }
        }
        match (p.scope.as_deref(), &p.namespace) {
            (None, _) => self.required(format!("{path}.scope"), ""),
            (Some("Namespace"), None) => {
                self.required(format!("{path}.namespace"), "`parameters.scope` is set to 'Namespace'")
            }
            (Some("Namespace"), Some(ns)) => self.name(format!("{path}.namespace"), ns, NameRule::Dns1123Label),
            (Some("Cluster"), Some(_)) => self
                .0
                .push(FieldError::forbidden(format!("{path}.namespace"), "`parameters.scope` is set to 'Cluster'")),
            (Some("Cluster"), None) => {}
            (Some(other), _) => self.not_supported(format!("{path}.scope"), other, &["Cluster", "Namespace"]),
        }
    }
}

/// An address block (`10.0.0.0/8`, `2001:db8::/64`).
struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    fn parse(text: &str) -> Option<Cidr> {
        let (addr, prefix) = text.split_once('/')?;
        let addr: IpAddr = addr.parse().ok()?;
        if prefix.starts_with('+') {
            return None;
        }
        let prefix: u8 = prefix.parse().ok()?;
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        (prefix <= bits).then_some(Cidr { addr, prefix })
    }

    /// The address's bits as one number, left-aligned in 128 bits.
    fn bits(addr: IpAddr) -> u128 {
        match addr {
            IpAddr::V4(a) => u128::from(u32::from(a)) << 96,
            IpAddr::V6(a) => u128::from(a),
        }
    }

    /// Whether `inner` is a smaller block inside this one (kube: contains its address, longer prefix).
    fn strictly_holds(&self, inner: &Cidr) -> bool {
        if self.addr.is_ipv4() != inner.addr.is_ipv4() || inner.prefix <= self.prefix {
            return false;
        }
        let mask = if self.prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(self.prefix)) };
        let shift = |c: &Cidr| Cidr::bits(c.addr) & mask;
        shift(self) == shift(inner)
    }
}

#[cfg(test)]
mod tests;
