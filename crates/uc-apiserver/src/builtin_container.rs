//! kube-apiserver's rules for one container of a pod spec, with its words: ports (numbers, IANA
//! names, protocols), probes (one handler, non-negative timings, a liveness or startup probe succeeds
//! once) and resources (container resource names, non-negative quantities, requests within limits).

use serde_json::Value;

use crate::error::{FieldError, FieldErrorKind};

/// Checks the container `c` at path `p` (`spec.containers[0]`).
pub fn check(c: &Value, p: &str, errs: &mut Vec<FieldError>) {
    check_ports(c, p, errs);
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(pr) = c.get(probe).filter(|v| !v.is_null()) {
            check_probe(pr, &format!("{p}.{probe}"), probe != "readinessProbe", errs);
        }
    }
    check_resources(c, &format!("{p}.resources"), errs);
}

/// apimachinery's `IsValidPortName`: an IANA service name.
pub fn port_name_errors(name: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters");
    }
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen");
    }
    errs
}

fn check_port_number(v: &Value, low: i64, field: String, errs: &mut Vec<FieldError>) {
    if !v.as_i64().is_some_and(|n| (low..=65535).contains(&n)) {
        errs.push(FieldError::invalid(field, v, format!("must be between {low} and 65535, inclusive")));
    }
}

fn check_ports(c: &Value, p: &str, errs: &mut Vec<FieldError>) {
    let mut names: Vec<&str> = Vec::new();
    for (j, port) in c.get("ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let pp = format!("{p}.ports[{j}]");
        if let Some(name) = port.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            let why = port_name_errors(name);
            if !why.is_empty() {
                errs.extend(why.into_iter().map(|w| FieldError::invalid(format!("{pp}.name"), &Value::from(name), w)));
            } else if names.contains(&name) {
                errs.push(FieldError::new(
                    FieldErrorKind::Duplicate,
                    format!("{pp}.name"),
                    Some(format!("{name:?}")),
                    "",
                ));
            } else {
                names.push(name);
            }
        }
        match port.get("containerPort").filter(|v| !v.is_null() && v.as_i64() != Some(0)) {
            None => errs.push(FieldError::required(format!("{pp}.containerPort"), "")),
            Some(n) => check_port_number(n, 1, format!("{pp}.containerPort"), errs),
        }
        if let Some(n) = port.get("hostPort").filter(|v| !v.is_null()) {
            check_port_number(n, 0, format!("{pp}.hostPort"), errs);
        }
        if let Some(proto) = port.get("protocol").and_then(Value::as_str)
            && !matches!(proto, "TCP" | "UDP" | "SCTP")
        {
            errs.push(FieldError::new(
                FieldErrorKind::NotSupported,
                format!("{pp}.protocol"),
                Some(format!("{proto:?}")),
                "supported values: \"SCTP\", \"TCP\", \"UDP\"",
            ));
        }
    }
}

/// A probe's port: a number, or the name of one of the container's ports.
fn check_named_port(v: Option<&Value>, field: String, errs: &mut Vec<FieldError>) {
    match v {
        None | Some(Value::Null) => errs.push(FieldError::required(field, "")),
        Some(Value::String(name)) => errs.extend(
            port_name_errors(name).into_iter().map(|w| FieldError::invalid(&field, &Value::from(name.as_str()), w)),
        ),
        Some(n) => check_port_number(n, 1, field, errs),
    }
}

fn check_probe(pr: &Value, p: &str, once: bool, errs: &mut Vec<FieldError>) {
    let mut handlers = 0;
    for h in ["exec", "httpGet", "tcpSocket", "grpc"] {
        let Some(action) = pr.get(h).filter(|v| !v.is_null()) else { continue };
        if handlers > 0 {
            errs.push(FieldError::forbidden(format!("{p}.{h}"), "may not specify more than 1 handler type"));
            continue;
        }
        handlers += 1;
        match h {
            "exec" if action.get("command").and_then(Value::as_array).is_none_or(Vec::is_empty) => {
                errs.push(FieldError::required(format!("{p}.exec.command"), ""))
            }
            "httpGet" => {
                check_named_port(action.get("port"), format!("{p}.httpGet.port"), errs);
                if let Some(scheme) = action.get("scheme").and_then(Value::as_str)
                    && !matches!(scheme, "HTTP" | "HTTPS")
                {
                    errs.push(FieldError::new(
                        FieldErrorKind::NotSupported,
                        format!("{p}.httpGet.scheme"),
                        Some(format!("{scheme:?}")),
                        "supported values: \"HTTP\", \"HTTPS\"",
                    ));
                }
            }
            "tcpSocket" => check_named_port(action.get("port"), format!("{p}.tcpSocket.port"), errs),
            "grpc" => check_port_number(action.get("port").unwrap_or(&Value::Null), 1, format!("{p}.grpc.port"), errs),
            _ => {}
        }
    }
    if handlers == 0 {
        errs.push(FieldError::required(p, "must specify a handler type"));
    }
    for f in ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"] {
        if let Some(v) = pr.get(f)
            && v.as_i64().is_some_and(|n| n < 0)
        {
            errs.push(FieldError::invalid(format!("{p}.{f}"), v, "must be greater than or equal to 0"));
        }
    }
    if once
        && let Some(v) = pr.get("successThreshold")
        && v.as_i64().is_some_and(|n| n != 1)
    {
        errs.push(FieldError::invalid(format!("{p}.successThreshold"), v, "must be 1"));
    }
}

/// A resource a container may ask for: `cpu`, `memory`, `ephemeral-storage`, `hugepages-<size>`, or an
/// extended resource (`example.com/gpu`).
pub(crate) fn resource_name_error(name: &str) -> Option<String> {
    if let Some(why) = uc_api::names::qualified_name_errors(name).into_iter().next() {
        return Some(why);
    }
    let standard = matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-");
    (!name.contains('/') && !standard).then(|| "must be a standard resource for containers".to_string())
}

fn check_resources(c: &Value, p: &str, errs: &mut Vec<FieldError>) {
    let quantities = |kind: &str| -> Vec<(String, String, Option<f64>)> {
        let map = c.get("resources").and_then(|r| r.get(kind)).and_then(Value::as_object);
        map.into_iter()
            .flatten()
            .map(|(name, v)| {
                let text = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
                let value = uc_api::quantity::parse(&text).ok();
                (name.clone(), text, value)
            })
            .collect()
    };
    let limits = quantities("limits");
    for (kind, list) in [("limits", &limits), ("requests", &quantities("requests"))] {
        for (name, text, value) in list {
            let field = format!("{p}.{kind}[{name}]");
            if let Some(why) = resource_name_error(name) {
                errs.push(FieldError::invalid(&field, &Value::from(name.as_str()), why));
            }
            if value.is_some_and(|v| v < 0.0) {
                errs.push(FieldError::invalid(
                    &field,
                    &Value::from(text.as_str()),
                    "must be greater than or equal to 0",
                ));
            }
            let limit = limits.iter().find(|(n, _, _)| n == name).filter(|_| kind == "requests");
            if let (Some((_, limit_text, Some(limit))), Some(v)) = (limit, value)
                && v > limit
            {
                let why = format!("must be less than or equal to {name} limit of {limit_text}");
                errs.push(FieldError::invalid(&field, &Value::from(text.as_str()), why));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors(c: Value) -> Vec<String> {
        let mut errs = Vec::new();
        check(&c, "spec.containers[0]", &mut errs);
        errs.iter().map(|e| format!("{}: {:?} {}", e.field, e.kind, e.detail)).collect()
    }

    #[test]
    fn ports_need_numbers_iana_names_once_and_known_protocols() {
        let c = json!({"ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 81, "name": "http"},
            {"name": "Web--", "protocol": "ICMP"}, {"containerPort": 70000, "name": "averyveryverylongname"}]});
        assert_eq!(
            errors(c),
            [
                "spec.containers[0].ports[1].name: Duplicate ",
                "spec.containers[0].ports[2].name: Invalid must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.containers[0].ports[2].name: Invalid must not contain consecutive hyphens",
                "spec.containers[0].ports[2].name: Invalid must not begin or end with a hyphen",
                "spec.containers[0].ports[2].containerPort: Required ",
                "spec.containers[0].ports[2].protocol: NotSupported supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.containers[0].ports[3].name: Invalid must be no more than 15 characters",
                "spec.containers[0].ports[3].containerPort: Invalid must be between 1 and 65535, inclusive",
            ]
        );
        assert!(port_name_errors("123")[0].contains("at least one letter"));
        assert!(port_name_errors("metrics-1").is_empty());
    }

    #[test]
    fn probes_have_one_handler_and_sane_timings() {
        let c = json!({"livenessProbe": {"periodSeconds": -1, "successThreshold": 2},
            "readinessProbe": {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}, "successThreshold": 3},
            "startupProbe": {"httpGet": {"port": "Http", "scheme": "FTP"}}});
        assert_eq!(
            errors(c),
            [
                "spec.containers[0].livenessProbe: Required must specify a handler type",
                "spec.containers[0].livenessProbe.periodSeconds: Invalid must be greater than or equal to 0",
                "spec.containers[0].livenessProbe.successThreshold: Invalid must be 1",
                "spec.containers[0].readinessProbe.tcpSocket: Forbidden may not specify more than 1 handler type",
                "spec.containers[0].startupProbe.httpGet.port: Invalid must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.containers[0].startupProbe.httpGet.scheme: NotSupported supported values: \"HTTP\", \"HTTPS\"",
            ]
        );
        let fine = json!({"livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "successThreshold": 1},
            "readinessProbe": {"grpc": {"port": 9000}}, "ports": [{"containerPort": 80, "name": "http"}]});
        assert_eq!(errors(fine), Vec::<String>::new());
    }

    #[test]
    fn resources_are_known_non_negative_and_requests_within_limits() {
        let c = json!({"resources": {"limits": {"cpu": "500m", "cpuu": "1", "example.com/gpu": "1"},
            "requests": {"cpu": "1", "memory": "-1Mi", "hugepages-2Mi": "2Mi"}}});
        assert_eq!(
            errors(c),
            [
                "spec.containers[0].resources.limits[cpuu]: Invalid must be a standard resource for containers",
                "spec.containers[0].resources.requests[cpu]: Invalid must be less than or equal to cpu limit of 500m",
                "spec.containers[0].resources.requests[memory]: Invalid must be greater than or equal to 0",
            ]
        );
    }
}
