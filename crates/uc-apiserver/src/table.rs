//! Server-side printing: `meta.k8s.io/v1 Table` responses for `kubectl get`, with the columns of the
//! built-in kinds and the `additionalPrinterColumns` of CRDs, and the JSONPath subset those use.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uc_api::Pointer;

use crate::registry::{PrinterColumn, ResourceInfo};

/// Evaluates a printer-column JSONPath (`.spec.x`, `.a[0]`, `.a[*].b`, `.a[?(@.type=="Ready")].status`).
pub fn eval_jsonpath<'a>(path: &str, root: &'a Value) -> Vec<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut current = vec![root];
    let mut rest = path;
    while !rest.is_empty() {
        let mut next = Vec::new();
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = &r[..end];
            rest = &r[end..];
            if name.is_empty() {
                continue;
            }
            for v in current {
                if name == "*" {
                    match v {
                        Value::Object(m) => next.extend(m.values()),
                        Value::Array(a) => next.extend(a.iter()),
                        _ => {}
                    }
                } else if let Some(c) = v.get(name) {
                    next.push(c);
                }
            }
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = find_bracket_end(r) else {
                return Vec::new();
            };
            let inner = &r[..end];
            rest = &r[end + 1..];
            for v in current {
                select(inner, v, &mut next);
            }
        } else {
            return Vec::new();
        }
        current = next;
    }
    current
}

fn find_bracket_end(s: &str) -> Option<usize> {
    let mut depth = 0;
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (c, quote) {
            ('"' | '\'', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            ('[', None) => depth += 1,
            (']', None) if depth == 0 => return Some(i),
            (']', None) => depth -= 1,
            _ => {}
        }
    }
    None
}

fn select<'a>(inner: &str, v: &'a Value, out: &mut Vec<&'a Value>) {
    let inner = inner.trim();
    if inner == "*" {
        match v {
            Value::Array(a) => out.extend(a.iter()),
            Value::Object(m) => out.extend(m.values()),
            _ => {}
        }
    } else if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        let Some(items) = v.as_array() else { return };
        for item in items {
            if filter_matches(filter, item) {
                out.push(item);
            }
        }
    } else if let Some((from, to)) = inner.split_once(':') {
        // A slice, `[start:end]`, either end optional and negative from the back.
        let Some(a) = v.as_array() else { return };
        let len = a.len() as i64;
        let bound = |s: &str, default: i64| match s.trim() {
            "" => Some(default),
            t => t.parse::<i64>().ok().map(|i| if i < 0 { (len + i).max(0) } else { i.min(len) }),
        };
        if let (Some(from), Some(to)) = (bound(from, 0), bound(to, len))
            && from < to
        {
            out.extend(&a[from as usize..to as usize]);
        }
    } else if let Ok(i) = inner.parse::<i64>() {
        if let Some(a) = v.as_array() {
            let idx = if i < 0 { a.len() as i64 + i } else { i };
            if let Some(x) = usize::try_from(idx).ok().and_then(|i| a.get(i)) {
                out.push(x);
            }
        }
    } else {
        let key = inner.trim_matches(|c| c == '\'' || c == '"');
        if let Some(x) = v.get(key) {
            out.push(x);
        }
    }
}

fn filter_matches(filter: &str, item: &Value) -> bool {
    let (lhs, op, rhs) = if let Some((l, r)) = filter.split_once("==") {
        (l, "==", Some(r))
    } else if let Some((l, r)) = filter.split_once("!=") {
        (l, "!=", Some(r))
    } else {
        (filter, "exists", None)
    };
    let Some(sub) = lhs.trim().strip_prefix('@') else {
        return false;
    };
    let found = eval_jsonpath(sub, item);
    match rhs {
        None => !found.is_empty(),
        Some(r) => {
            let r = r.trim();
            let expected: Value = if r.starts_with(['"', '\'']) {
                Value::String(r.trim_matches(|c| c == '"' || c == '\'').to_string())
            } else {
                serde_json::from_str(r).unwrap_or(Value::String(r.to_string()))
            };
            let eq = found.first().is_some_and(|f| **f == expected);
            if op == "==" { eq } else { !eq }
        }
    }
}

/// Kubernetes' short human duration (`5s`, `3m20s`, `2d4h`, ...).
pub fn human_duration(d: chrono::Duration) -> String {
    let secs = d.num_seconds();
    if secs < -1 {
        return "<invalid>".into();
    }
    let secs = secs.max(0);
    let (m, h, day, y) = (secs / 60, secs / 3600, secs / 86400, secs / (86400 * 365));
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        let s = secs % 60;
        if s == 0 { format!("{m}m") } else { format!("{m}m{s}s") }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        let mm = m % 60;
        if mm == 0 { format!("{h}h") } else { format!("{h}h{mm}m") }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        let hh = h % 24;
        if hh == 0 { format!("{day}d") } else { format!("{day}d{hh}h") }
    } else if y < 2 {
        format!("{day}d")
    } else if y < 8 {
        let dd = day % 365;
        if dd == 0 { format!("{y}y") } else { format!("{y}y{dd}d") }
    } else {
        format!("{y}y")
    }
}

fn age_of(v: Option<&Value>) -> Value {
    let Some(ts) = v.and_then(Value::as_str) else {
        return Value::String("<unknown>".into());
    };
    match DateTime::parse_from_rfc3339(ts) {
        Ok(t) => Value::String(human_duration(Utc::now() - t.with_timezone(&Utc))),
        Err(_) => Value::String("<invalid>".into()),
    }
}

type CellFn = fn(&Value) -> Value;

struct Column {
    name: &'static str,
    ty: &'static str,
    priority: i64,
    cell: CellFn,
}

fn s_at(v: &Value, p: &str) -> Value {
    v.at(p).cloned().unwrap_or(Value::String("<none>".into()))
}

fn i_at(v: &Value, p: &str) -> i64 {
    v.at(p).and_then(Value::as_i64).unwrap_or(0)
}

fn count(v: &Value, p: &str) -> Value {
    Value::from(
        v.at(p).map(|x| x.as_object().map(|m| m.len()).or(x.as_array().map(|a| a.len())).unwrap_or(0)).unwrap_or(0),
    )
}

/// A binding's subjects of one kind, as `kubectl get rolebinding -o wide` lists them.
fn subjects_of(v: &Value, kind: &str) -> Value {
    let names: Vec<String> = v
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|s| s.get("kind").and_then(Value::as_str) == Some(kind))
        .map(|s| {
            let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
            match s.get("namespace").and_then(Value::as_str) {
                Some(ns) if kind == "ServiceAccount" => format!("{ns}/{name}"),
                _ => name.to_string(),
            }
        })
        .collect();
    Value::String(names.join(", "))
}

#[expect(clippy::too_many_lines, reason = "data table: kubectl's columns per built-in resource")]
fn builtin_columns(resource: &str) -> Vec<Column> {
    let c = |name, ty, priority, cell| Column { name, ty, priority, cell };
    match resource {
        "pods" => vec![
            c("Ready", "string", 0, |v| {
                let total = v.at("/spec/containers").and_then(Value::as_array).map(|a| a.len()).unwrap_or(0);
                let ready = v
                    .at("/status/containerStatuses")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter(|c| c.get("ready") == Some(&Value::Bool(true))).count())
                    .unwrap_or(0);
                Value::String(format!("{ready}/{total}"))
            }),
            c("Status", "string", 0, |v| {
                if v.at("/metadata/deletionTimestamp").is_some() {
                    return Value::String("Terminating".into());
                }
                let waiting = v.at("/status/containerStatuses").and_then(Value::as_array).and_then(|a| {
                    a.iter().find_map(|c| {
                        c.at("/state/waiting/reason")
                            .or_else(|| c.at("/state/terminated/reason"))
                            .and_then(Value::as_str)
                            .map(String::from)
                    })
                });
                let phase = v.at("/status/phase").and_then(Value::as_str).unwrap_or("Pending");
                Value::String(waiting.unwrap_or_else(|| phase.to_string()))
            }),
            c("Restarts", "integer", 0, |v| {
                let n: i64 = v
                    .at("/status/containerStatuses")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(|c| c.get("restartCount").and_then(Value::as_i64).unwrap_or(0)).sum())
                    .unwrap_or(0);
                Value::from(n)
            }),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
            c("IP", "string", 1, |v| s_at(v, "/status/podIP")),
            c("Node", "string", 1, |v| s_at(v, "/spec/nodeName")),
        ],
        "deployments" => vec![
            c("Ready", "string", 0, |v| {
                Value::String(format!("{}/{}", i_at(v, "/status/readyReplicas"), i_at(v, "/spec/replicas")))
            }),
            c("Up-to-date", "integer", 0, |v| Value::from(i_at(v, "/status/updatedReplicas"))),
            c("Available", "integer", 0, |v| Value::from(i_at(v, "/status/availableReplicas"))),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "replicasets" => vec![
            c("Desired", "integer", 0, |v| Value::from(i_at(v, "/spec/replicas"))),
            c("Current", "integer", 0, |v| Value::from(i_at(v, "/status/replicas"))),
            c("Ready", "integer", 0, |v| Value::from(i_at(v, "/status/readyReplicas"))),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "replicationcontrollers" => vec![
            c("Desired", "integer", 0, |v| Value::from(i_at(v, "/spec/replicas"))),
            c("Current", "integer", 0, |v| Value::from(i_at(v, "/status/replicas"))),
            c("Ready", "integer", 0, |v| Value::from(i_at(v, "/status/readyReplicas"))),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "daemonsets" => vec![
            c("Desired", "integer", 0, |v| Value::from(i_at(v, "/status/desiredNumberScheduled"))),
            c("Current", "integer", 0, |v| Value::from(i_at(v, "/status/currentNumberScheduled"))),
            c("Ready", "integer", 0, |v| Value::from(i_at(v, "/status/numberReady"))),
            c("Up-to-date", "integer", 0, |v| Value::from(i_at(v, "/status/updatedNumberScheduled"))),
            c("Available", "integer", 0, |v| Value::from(i_at(v, "/status/numberAvailable"))),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "statefulsets" => vec![
            c("Ready", "string", 0, |v| {
                Value::String(format!("{}/{}", i_at(v, "/status/readyReplicas"), i_at(v, "/spec/replicas")))
            }),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "jobs" => vec![
            c("Completions", "string", 0, |v| {
                let want = v.at("/spec/completions").and_then(Value::as_i64).unwrap_or(1);
                Value::String(format!("{}/{}", i_at(v, "/status/succeeded"), want))
            }),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "services" => vec![
            c("Type", "string", 0, |v| s_at(v, "/spec/type")),
            c("Cluster-IP", "string", 0, |v| s_at(v, "/spec/clusterIP")),
            c("Port(s)", "string", 0, |v| {
                let ports: Vec<String> = v
                    .at("/spec/ports")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .map(|p| {
                                format!(
                                    "{}/{}",
                                    p.get("port").and_then(Value::as_i64).unwrap_or(0),
                                    p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Value::String(if ports.is_empty() { "<none>".into() } else { ports.join(",") })
            }),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "nodes" => vec![
            c("Status", "string", 0, |v| {
                let ready = v
                    .at("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|cs| cs.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Ready")))
                    .and_then(|c| c.get("status").and_then(Value::as_str))
                    == Some("True");
                let status = if ready { "Ready" } else { "NotReady" };
                // kubectl's words for a cordoned node.
                let cordoned = v.at("/spec/unschedulable") == Some(&Value::Bool(true));
                Value::String(if cordoned { format!("{status},SchedulingDisabled") } else { status.into() })
            }),
            c("Roles", "string", 0, |v| {
                let roles: Vec<String> = v
                    .at("/metadata/labels")
                    .and_then(Value::as_object)
                    .map(|l| {
                        l.keys().filter_map(|k| k.strip_prefix("node-role.kubernetes.io/").map(String::from)).collect()
                    })
                    .unwrap_or_default();
                Value::String(if roles.is_empty() { "<none>".into() } else { roles.join(",") })
            }),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
            c("Version", "string", 0, |v| s_at(v, "/status/nodeInfo/kubeletVersion")),
            c("Internal-IP", "string", 1, |v| {
                let ip = v.at("/status/addresses").and_then(Value::as_array).and_then(|a| {
                    a.iter()
                        .find(|x| x.get("type").and_then(Value::as_str) == Some("InternalIP"))
                        .and_then(|x| x.get("address").cloned())
                });
                ip.unwrap_or(Value::String("<none>".into()))
            }),
        ],
        "namespaces" => vec![
            c("Status", "string", 0, |v| s_at(v, "/status/phase")),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "configmaps" => vec![
            c("Data", "integer", 0, |v| count(v, "/data")),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "secrets" => vec![
            c("Type", "string", 0, |v| s_at(v, "/type")),
            c("Data", "integer", 0, |v| count(v, "/data")),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "persistentvolumeclaims" => vec![
            c("Status", "string", 0, |v| s_at(v, "/status/phase")),
            c("Volume", "string", 0, |v| s_at(v, "/spec/volumeName")),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "events" => vec![
            c("Type", "string", 0, |v| s_at(v, "/type")),
            c("Reason", "string", 0, |v| s_at(v, "/reason")),
            c("Object", "string", 0, |v| {
                let kind = v.at("/involvedObject/kind").and_then(Value::as_str).unwrap_or_default().to_lowercase();
                let name = v.at("/involvedObject/name").and_then(Value::as_str).unwrap_or_default();
                Value::String(format!("{kind}/{name}"))
            }),
            c("Message", "string", 0, |v| s_at(v, "/message")),
        ],
        "customresourcedefinitions" | "roles" | "clusterroles" => {
            vec![c("Created At", "string", 0, |v| s_at(v, "/metadata/creationTimestamp"))]
        }
        "apiservices" => vec![
            c("Service", "string", 0, |v| match v.at("/spec/service") {
                Some(s) if s.is_object() => Value::String(format!(
                    "{}/{}",
                    s.get("namespace").and_then(Value::as_str).unwrap_or_default(),
                    s.get("name").and_then(Value::as_str).unwrap_or_default()
                )),
                _ => Value::String("Local".into()),
            }),
            c("Available", "string", 0, |v| {
                let available = v
                    .at("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|c| c.iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Available")));
                match available {
                    Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => Value::String("True".into()),
                    Some(c) => Value::String(format!(
                        "False ({})",
                        c.get("reason").and_then(Value::as_str).unwrap_or_default()
                    )),
                    None => Value::String("Unknown".into()),
                }
            }),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
        ],
        "certificatesigningrequests" => vec![
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
            c("SignerName", "string", 0, |v| s_at(v, "/spec/signerName")),
            c("Requestor", "string", 0, |v| s_at(v, "/spec/username")),
            c("RequestedDuration", "string", 0, |v| match v.at("/spec/expirationSeconds").and_then(Value::as_i64) {
                Some(s) => Value::String(human_duration(chrono::Duration::seconds(s))),
                None => Value::String("<none>".into()),
            }),
            c("Condition", "string", 0, |v| {
                let mut parts: Vec<String> = v
                    .at("/status/conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|c| c.get("status").and_then(Value::as_str) != Some("False"))
                    .filter_map(|c| c.get("type").and_then(Value::as_str).map(str::to_string))
                    .collect();
                if v.at("/status/certificate").is_some() {
                    parts.push("Issued".into());
                }
                Value::String(if parts.is_empty() { "Pending".into() } else { parts.join(",") })
            }),
        ],
        "rolebindings" | "clusterrolebindings" => vec![
            c("Role", "string", 0, |v| {
                let kind = v.at("/roleRef/kind").and_then(Value::as_str).unwrap_or_default();
                let name = v.at("/roleRef/name").and_then(Value::as_str).unwrap_or_default();
                Value::String(format!("{kind}/{name}"))
            }),
            c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp"))),
            c("Users", "string", 1, |v| subjects_of(v, "User")),
            c("Groups", "string", 1, |v| subjects_of(v, "Group")),
            c("ServiceAccounts", "string", 1, |v| subjects_of(v, "ServiceAccount")),
        ],
        _ => vec![c("Age", "string", 0, |v| age_of(v.at("/metadata/creationTimestamp")))],
    }
}

/// What rows carry besides their cells (`?includeObject=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

/// Column definitions of a resource at a version.
pub fn column_definitions(info: &ResourceInfo, version: &str) -> Vec<Value> {
    let mut cols = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
    ];
    match custom_columns(info, version) {
        Some(custom) => {
            for c in custom {
                cols.push(json!({"name": c.name, "type": c.ty, "format": c.format, "description": c.description, "priority": c.priority}));
            }
        }
        None => {
            for c in builtin_columns(&info.resource) {
                cols.push(
                    json!({"name": c.name, "type": c.ty, "format": "", "description": "", "priority": c.priority}),
                );
            }
        }
    }
    cols
}

fn custom_columns<'a>(info: &'a ResourceInfo, version: &str) -> Option<&'a [PrinterColumn]> {
    info.crd.as_ref()?;
    let cols = &info.version(version)?.printer_columns;
    if cols.is_empty() { None } else { Some(cols) }
}

/// One table row for an object.
pub fn row(info: &ResourceInfo, version: &str, obj: &Value, include: IncludeObject) -> Value {
    let name = obj.at("/metadata/name").cloned().unwrap_or(Value::Null);
    let mut cells = vec![name];
    match custom_columns(info, version) {
        Some(custom) => {
            for c in custom {
                let found = eval_jsonpath(&c.json_path, obj);
                cells.push(render_cell(c, &found));
            }
        }
        None => {
            for c in builtin_columns(&info.resource) {
                let v = (c.cell)(obj);
                cells.push(if c.ty == "date" { age_of(Some(&v)) } else { v });
            }
        }
    }
    let mut r = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            r["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata").cloned().unwrap_or(Value::Null)});
        }
        IncludeObject::Object => r["object"] = obj.clone(),
    }
    r
}

fn render_cell(c: &PrinterColumn, found: &[&Value]) -> Value {
    let Some(first) = found.first() else {
        return Value::Null;
    };
    if c.ty == "date" {
        return age_of(Some(first));
    }
    if found.len() > 1 {
        let parts: Vec<String> =
            found.iter().map(|v| v.as_str().map(String::from).unwrap_or_else(|| v.to_string())).collect();
        return Value::String(parts.join(","));
    }
    match (c.ty.as_str(), first) {
        ("string", Value::String(_)) => (*first).clone(),
        ("string", other) => Value::String(other.to_string()),
        _ => (*first).clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cordoned_node_shows_scheduling_disabled() {
        let status = builtin_columns("nodes").into_iter().find(|c| c.name == "Status").unwrap().cell;
        let mut node = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(status(&node), json!("Ready"));
        node["spec"] = json!({"unschedulable": true});
        assert_eq!(status(&node), json!("Ready,SchedulingDisabled"));
    }

    #[test]
    fn jsonpath_subset() {
        let v = json!({"spec": {"replicas": 3, "list": [{"name": "a", "v": 1}, {"name": "b", "v": 2}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X", "status": "False"}]}});
        assert_eq!(eval_jsonpath(".spec.replicas", &v), vec![&json!(3)]);
        assert_eq!(eval_jsonpath(".spec.list[1].name", &v), vec![&json!("b")]);
        assert_eq!(eval_jsonpath(".spec.list[*].v", &v), vec![&json!(1), &json!(2)]);
        assert_eq!(eval_jsonpath(".status.conditions[?(@.type==\"Ready\")].status", &v), vec![&json!("True")]);
        assert_eq!(eval_jsonpath("{.spec.list[-1].name}", &v), vec![&json!("b")]);
        assert_eq!(eval_jsonpath(".status.conditions[-1:].type", &v), vec![&json!("X")]);
        assert_eq!(eval_jsonpath(".spec.list[0:1].name", &v), vec![&json!("a")]);
        assert_eq!(eval_jsonpath(".spec.list[:].v", &v), vec![&json!(1), &json!(2)]);
        assert!(eval_jsonpath(".spec.list[5:].v", &v).is_empty());
        assert!(eval_jsonpath(".spec.missing", &v).is_empty());
    }

    #[test]
    fn human_durations() {
        let d = chrono::Duration::seconds;
        assert_eq!(human_duration(d(5)), "5s");
        assert_eq!(human_duration(d(200)), "3m20s");
        assert_eq!(human_duration(d(3600 * 5 + 60 * 7)), "5h7m");
        assert_eq!(human_duration(d(86400 * 3 + 3600)), "3d1h");
    }
}
