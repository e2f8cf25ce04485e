//! The columns of the built-in kinds, as kube-apiserver's printers define them
//! (`pkg/printers/internalversion/printers.go`): names, types, which are wide (priority 1), and what
//! each shows. The server sends every column; `kubectl get` shows the wide ones with `-o wide`.

use chrono::Utc;
use serde_json::Value;
use uc_api::Pointer;
use uc_api::meta::is_deleting;

use super::age::{age_of, human_duration};
use super::cells::{
    access_modes, age, condition, condition_true, containers, controller_of, count, endpoints, external_ip, i_at,
    int_or_string, label_selector, labels, s_at, service_ports, slice_endpoints, slice_ports, storage_class, str_or,
    subjects_of,
};
use super::{autoscaling, networking, pod};

type CellFn = fn(&Value) -> Value;

/// One column: its definition and what it shows of an object.
#[derive(Clone, Copy)]
pub(super) struct Column {
    pub name: &'static str,
    pub ty: &'static str,
    pub format: &'static str,
    pub priority: i64,
    pub cell: CellFn,
}

const fn c(name: &'static str, ty: &'static str, priority: i64, cell: CellFn) -> Column {
    Column { name, ty, format: "", priority, cell }
}

/// The object's name: the first column of every kind but events, whose is the last and wide.
const fn name(priority: i64) -> Column {
    Column {
        name: "Name",
        ty: "string",
        format: "name",
        priority,
        cell: |v| v.at("/metadata/name").cloned().unwrap_or(Value::Null),
    }
}

const AGE: Column = c("Age", "string", 0, age);

/// The columns of a built-in resource, the name's among them.
pub(super) fn builtin_columns(resource: &str) -> Vec<Column> {
    let mut columns = columns_after_name(resource);
    match resource {
        "events" => {}
        // kubectl's printer marks the default class after its name.
        "storageclasses" => columns.insert(0, Column { cell: storage_class_name, ..name(0) }),
        _ => columns.insert(0, name(0)),
    }
    columns
}

/// A StorageClass's name, with ` (default)` when it is the default class (either annotation).
fn storage_class_name(v: &Value) -> Value {
    let name = v.at("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let annotations = crate::builtin_storage::DEFAULT_ANNOTATIONS;
    let default =
        annotations.iter().any(|a| v.at(&format!("/metadata/annotations/{a}")).and_then(Value::as_str) == Some("true"));
    Value::String(if default { format!("{name} (default)") } else { name.to_string() })
}

/// A template's containers and images, and a selector: the wide columns of the workload kinds.
fn template_columns(template: &'static str, selector: Option<CellFn>) -> Vec<Column> {
    // `template` is one of a fixed few pointers; the cells read it through a match, not a capture.
    let (names, images): (CellFn, CellFn) = match template {
        "/spec/jobTemplate/spec/template/spec" => (
            |v| containers(v.at("/spec/jobTemplate/spec/template/spec")).0,
            |v| containers(v.at("/spec/jobTemplate/spec/template/spec")).1,
        ),
        _ => (|v| containers(v.at("/spec/template/spec")).0, |v| containers(v.at("/spec/template/spec")).1),
    };
    let mut columns = vec![c("Containers", "string", 1, names), c("Images", "string", 1, images)];
    columns.extend(selector.map(|cell| c("Selector", "string", 1, cell)));
    columns
}

const POD_TEMPLATE: &str = "/spec/template/spec";

#[expect(clippy::too_many_lines, reason = "data table: kubectl's columns per built-in resource")]
fn columns_after_name(resource: &str) -> Vec<Column> {
    let selector: CellFn = |v| label_selector(v.at("/spec/selector"));
    match resource {
        "pods" => vec![
            c("Ready", "string", 0, |v| Value::String(pod::summary(v, Utc::now()).ready)),
            c("Status", "string", 0, |v| Value::String(pod::summary(v, Utc::now()).reason)),
            c("Restarts", "string", 0, |v| Value::String(pod::summary(v, Utc::now()).restarts)),
            AGE,
            c("IP", "string", 1, |v| str_or(v, "/status/podIPs/0/ip", "<none>")),
            c("Node", "string", 1, |v| str_or(v, "/spec/nodeName", "<none>")),
            c("Nominated Node", "string", 1, |v| str_or(v, "/status/nominatedNodeName", "<none>")),
            c("Readiness Gates", "string", 1, pod::readiness_gates),
        ],
        "deployments" => [
            vec![
                c("Ready", "string", 0, |v| {
                    Value::String(format!("{}/{}", i_at(v, "/status/readyReplicas"), i_at(v, "/spec/replicas")))
                }),
                c("Up-to-date", "string", 0, |v| Value::from(i_at(v, "/status/updatedReplicas"))),
                c("Available", "string", 0, |v| Value::from(i_at(v, "/status/availableReplicas"))),
                AGE,
            ],
            template_columns(
                POD_TEMPLATE,
                Some(|v| {
                    let written = label_selector(v.at("/spec/selector"));
                    // A Deployment's selector is written as `selector.String()`: empty, not `<none>`.
                    if written == "<none>" { Value::String(String::new()) } else { written }
                }),
            ),
        ]
        .concat(),
        "replicasets" | "replicationcontrollers" => [
            vec![
                c("Desired", "integer", 0, |v| Value::from(i_at(v, "/spec/replicas"))),
                c("Current", "integer", 0, |v| Value::from(i_at(v, "/status/replicas"))),
                c("Ready", "integer", 0, |v| Value::from(i_at(v, "/status/readyReplicas"))),
                AGE,
            ],
            if resource == "replicasets" {
                template_columns(POD_TEMPLATE, Some(selector))
            } else {
                template_columns(POD_TEMPLATE, Some(|v| labels(v.at("/spec/selector"))))
            },
        ]
        .concat(),
        "daemonsets" => [
            vec![
                c("Desired", "integer", 0, |v| Value::from(i_at(v, "/status/desiredNumberScheduled"))),
                c("Current", "integer", 0, |v| Value::from(i_at(v, "/status/currentNumberScheduled"))),
                c("Ready", "integer", 0, |v| Value::from(i_at(v, "/status/numberReady"))),
                c("Up-to-date", "integer", 0, |v| Value::from(i_at(v, "/status/updatedNumberScheduled"))),
                c("Available", "integer", 0, |v| Value::from(i_at(v, "/status/numberAvailable"))),
                c("Node Selector", "string", 0, |v| labels(v.at("/spec/template/spec/nodeSelector"))),
                AGE,
            ],
            template_columns(POD_TEMPLATE, Some(selector)),
        ]
        .concat(),
        "statefulsets" => [
            vec![
                c("Ready", "string", 0, |v| {
                    Value::String(format!("{}/{}", i_at(v, "/status/readyReplicas"), i_at(v, "/spec/replicas")))
                }),
                AGE,
            ],
            template_columns(POD_TEMPLATE, None),
        ]
        .concat(),
        "jobs" => [
            vec![
                c("Status", "string", 0, job_status),
                c("Completions", "string", 0, job_completions),
                c("Duration", "string", 0, job_duration),
                AGE,
            ],
            template_columns(POD_TEMPLATE, Some(selector)),
        ]
        .concat(),
        "cronjobs" => [
            vec![
                c("Schedule", "string", 0, |v| s_at(v, "/spec/schedule")),
                c("Timezone", "string", 0, |v| str_or(v, "/spec/timeZone", "<none>")),
                c("Suspend", "boolean", 0, |v| {
                    Value::Bool(v.at("/spec/suspend").and_then(Value::as_bool).unwrap_or(false))
                }),
                c("Active", "integer", 0, |v| Value::from(count(v, "/status/active"))),
                c("Last Schedule", "string", 0, |v| match v.at("/status/lastScheduleTime") {
                    Some(t) if !t.is_null() => age_of(Some(t)),
                    _ => Value::String("<none>".into()),
                }),
                AGE,
            ],
            template_columns(
                "/spec/jobTemplate/spec/template/spec",
                Some(|v| label_selector(v.at("/spec/jobTemplate/spec/selector"))),
            ),
        ]
        .concat(),
        "services" => vec![
            c("Type", "string", 0, |v| s_at(v, "/spec/type")),
            c("Cluster-IP", "string", 0, |v| str_or(v, "/spec/clusterIPs/0", "<none>")),
            c("External-IP", "string", 0, external_ip),
            c("Port(s)", "string", 0, service_ports),
            AGE,
            c("Selector", "string", 1, |v| labels(v.at("/spec/selector"))),
        ],
        "endpoints" => vec![c("Endpoints", "string", 0, endpoints), AGE],
        "endpointslices" => vec![
            c("AddressType", "string", 0, |v| s_at(v, "/addressType")),
            c("Ports", "string", 0, slice_ports),
            c("Endpoints", "string", 0, slice_endpoints),
            AGE,
        ],
        "nodes" => vec![
            c("Status", "string", 0, node_status),
            c("Roles", "string", 0, node_roles),
            AGE,
            c("Version", "string", 0, |v| s_at(v, "/status/nodeInfo/kubeletVersion")),
            c("Internal-IP", "string", 1, |v| node_address(v, "InternalIP")),
            c("External-IP", "string", 1, |v| node_address(v, "ExternalIP")),
            c("OS-Image", "string", 1, |v| str_or(v, "/status/nodeInfo/osImage", "<unknown>")),
            c("Kernel-Version", "string", 1, |v| str_or(v, "/status/nodeInfo/kernelVersion", "<unknown>")),
            c("Container-Runtime", "string", 1, |v| str_or(v, "/status/nodeInfo/containerRuntimeVersion", "<unknown>")),
        ],
        "events" => vec![
            c("Last Seen", "string", 0, event_last_seen),
            c("Type", "string", 0, |v| s_at(v, "/type")),
            c("Reason", "string", 0, |v| s_at(v, "/reason")),
            c("Object", "string", 0, event_object),
            c("Subobject", "string", 1, |v| str_or(v, "/involvedObject/fieldPath", "")),
            c("Source", "string", 1, event_source),
            c("Message", "string", 0, |v| {
                Value::String(v.get("message").and_then(Value::as_str).unwrap_or_default().trim().to_string())
            }),
            c("First Seen", "string", 1, event_first_seen),
            c("Count", "string", 1, |v| Value::from(event_count(v))),
            name(1),
        ],
        "namespaces" => vec![c("Status", "string", 0, |v| s_at(v, "/status/phase")), AGE],
        "configmaps" => vec![c("Data", "string", 0, |v| Value::from(count(v, "/data") + count(v, "/binaryData"))), AGE],
        "secrets" => vec![
            c("Type", "string", 0, |v| s_at(v, "/type")),
            c("Data", "string", 0, |v| Value::from(count(v, "/data"))),
            AGE,
        ],
        "serviceaccounts" => vec![c("Secrets", "string", 0, |v| Value::from(count(v, "/secrets"))), AGE],
        "persistentvolumes" => vec![
            c("Capacity", "string", 0, |v| str_or(v, "/spec/capacity/storage", "")),
            c("Access Modes", "string", 0, |v| Value::String(access_modes(v.at("/spec/accessModes")))),
            c("Reclaim Policy", "string", 0, |v| str_or(v, "/spec/persistentVolumeReclaimPolicy", "")),
            c("Status", "string", 0, |v| terminating_or(v, "/status/phase")),
            c("Claim", "string", 0, |v| match v.at("/spec/claimRef") {
                Some(r) if r.is_object() => Value::String(format!("{}/{}", str_of(r, "namespace"), str_of(r, "name"))),
                _ => Value::String(String::new()),
            }),
            c("StorageClass", "string", 0, storage_class),
            c("VolumeAttributesClass", "string", 0, |v| str_or(v, "/spec/volumeAttributesClassName", "<unset>")),
            c("Reason", "string", 0, |v| str_or(v, "/status/reason", "")),
            AGE,
            c("VolumeMode", "string", 1, |v| str_or(v, "/spec/volumeMode", "<unset>")),
        ],
        "persistentvolumeclaims" => vec![
            c("Status", "string", 0, |v| terminating_or(v, "/status/phase")),
            c("Volume", "string", 0, |v| str_or(v, "/spec/volumeName", "")),
            c("Capacity", "string", 0, |v| bound_or_empty(v, |v| str_or(v, "/status/capacity/storage", ""))),
            c("Access Modes", "string", 0, |v| {
                bound_or_empty(v, |v| Value::String(access_modes(v.at("/status/accessModes"))))
            }),
            c("StorageClass", "string", 0, storage_class),
            c("VolumeAttributesClass", "string", 0, |v| str_or(v, "/spec/volumeAttributesClassName", "<unset>")),
            AGE,
            c("VolumeMode", "string", 1, |v| str_or(v, "/spec/volumeMode", "<unset>")),
        ],
        "componentstatuses" => vec![
            c("Status", "string", 0, |v| component_condition(v).0),
            c("Message", "string", 0, |v| component_condition(v).1),
            c("Error", "string", 0, |v| component_condition(v).2),
        ],
        "mutatingwebhookconfigurations" | "validatingwebhookconfigurations" => {
            vec![c("Webhooks", "integer", 0, |v| Value::from(count(v, "/webhooks"))), AGE]
        }
        "ingresses" => vec![
            c("Class", "string", 0, |v| str_or(v, "/spec/ingressClassName", "<none>")),
            c("Hosts", "string", 0, networking::hosts),
            c("Address", "string", 0, networking::addresses),
            c("Ports", "string", 0, networking::ports),
            AGE,
        ],
        "ingressclasses" => vec![
            c("Controller", "string", 0, |v| str_or(v, "/spec/controller", "")),
            c("Parameters", "string", 0, networking::class_parameters),
            AGE,
        ],
        "networkpolicies" => vec![c("Pod-Selector", "string", 0, |v| label_selector(v.at("/spec/podSelector"))), AGE],
        "storageclasses" => vec![
            c("Provisioner", "string", 0, |v| s_at(v, "/provisioner")),
            c("ReclaimPolicy", "string", 0, |v| str_or(v, "/reclaimPolicy", "Delete")),
            c("VolumeBindingMode", "string", 0, |v| str_or(v, "/volumeBindingMode", "Immediate")),
            c("AllowVolumeExpansion", "string", 0, |v| {
                Value::Bool(v.at("/allowVolumeExpansion") == Some(&Value::Bool(true)))
            }),
            AGE,
        ],
        "priorityclasses" => vec![
            c("Value", "integer", 0, |v| Value::from(i_at(v, "/value"))),
            c("Global-Default", "boolean", 0, |v| Value::Bool(v.at("/globalDefault") == Some(&Value::Bool(true)))),
            AGE,
            c("PreemptionPolicy", "string", 0, |v| str_or(v, "/preemptionPolicy", "")),
        ],
        "horizontalpodautoscalers" => vec![
            c("Reference", "string", 0, autoscaling::reference),
            c("Targets", "string", 0, autoscaling::targets),
            c("MinPods", "string", 0, autoscaling::min_pods),
            c("MaxPods", "integer", 0, |v| Value::from(i_at(v, "/spec/maxReplicas"))),
            c("Replicas", "integer", 0, |v| Value::from(i_at(v, "/status/currentReplicas"))),
            AGE,
        ],
        "leases" => vec![c("Holder", "string", 0, |v| str_or(v, "/spec/holderIdentity", "")), AGE],
        "poddisruptionbudgets" => vec![
            c("Min Available", "string", 0, |v| int_or_string(v.at("/spec/minAvailable"))),
            c("Max Unavailable", "string", 0, |v| int_or_string(v.at("/spec/maxUnavailable"))),
            c("Allowed Disruptions", "integer", 0, |v| Value::from(i_at(v, "/status/disruptionsAllowed"))),
            AGE,
        ],
        "controllerrevisions" => vec![
            c("Controller", "string", 0, controller_of),
            c("Revision", "string", 0, |v| Value::from(i_at(v, "/revision"))),
            AGE,
        ],
        "podtemplates" => vec![
            c("Containers", "string", 0, |v| containers(v.at("/template/spec")).0),
            c("Images", "string", 0, |v| containers(v.at("/template/spec")).1),
            c("Pod Labels", "string", 0, |v| labels(v.at("/template/metadata/labels"))),
        ],
        "resourcequotas" => vec![
            AGE,
            c("Request", "string", 0, |v| quota_column(v, false)),
            c("Limit", "string", 0, |v| quota_column(v, true)),
        ],
        "customresourcedefinitions" | "roles" | "clusterroles" | "limitranges" => {
            vec![c("Created At", "string", 0, |v| s_at(v, "/metadata/creationTimestamp"))]
        }
        "apiservices" => {
            vec![c("Service", "string", 0, apiservice_service), c("Available", "string", 0, apiservice_available), AGE]
        }
        "certificatesigningrequests" => vec![
            AGE,
            c("SignerName", "string", 0, |v| str_or(v, "/spec/signerName", "<none>")),
            c("Requestor", "string", 0, |v| str_or(v, "/spec/username", "")),
            c("RequestedDuration", "string", 0, |v| match v.at("/spec/expirationSeconds").and_then(Value::as_i64) {
                Some(s) => Value::String(human_duration(chrono::Duration::seconds(s))),
                None => Value::String("<none>".into()),
            }),
            c("Condition", "string", 0, csr_condition),
        ],
        "rolebindings" | "clusterrolebindings" => vec![
            c("Role", "string", 0, |v| {
                Value::String(format!("{}/{}", str_of(&v["roleRef"], "kind"), str_of(&v["roleRef"], "name")))
            }),
            AGE,
            c("Users", "string", 1, |v| subjects_of(v, "User")),
            c("Groups", "string", 1, |v| subjects_of(v, "Group")),
            c("ServiceAccounts", "string", 1, |v| subjects_of(v, "ServiceAccount")),
        ],
        _ => vec![AGE],
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A phase, or `Terminating` while the object is being deleted.
fn terminating_or(v: &Value, phase: &str) -> Value {
    if is_deleting(v) {
        return Value::String("Terminating".into());
    }
    str_or(v, phase, "")
}

/// What a claim shows only once bound to a volume.
fn bound_or_empty(v: &Value, cell: CellFn) -> Value {
    if v.at("/spec/volumeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty()) {
        cell(v)
    } else {
        Value::String(String::new())
    }
}

/// `printJob`'s status: the first of its conditions that holds, else Running.
fn job_status(v: &Value) -> Value {
    let deleting = is_deleting(v);
    let status = match () {
        () if condition_true(v, "Complete") => "Complete",
        () if condition_true(v, "Failed") => "Failed",
        () if deleting => "Terminating",
        () if condition_true(v, "Suspended") => "Suspended",
        () if condition_true(v, "FailureTarget") => "FailureTarget",
        () => "Running",
    };
    Value::String(status.into())
}

fn job_completions(v: &Value) -> Value {
    let succeeded = i_at(v, "/status/succeeded");
    let written = match (v.at("/spec/completions").and_then(Value::as_i64), i_at(v, "/spec/parallelism")) {
        (Some(n), _) => format!("{succeeded}/{n}"),
        (None, p) if p > 1 => format!("{succeeded}/1 of {p}"),
        (None, _) => format!("{succeeded}/1"),
    };
    Value::String(written)
}

fn job_duration(v: &Value) -> Value {
    let time = |p: &str| v.at(p).and_then(Value::as_str).and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    let written = match (time("/status/startTime"), time("/status/completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(Utc::now() - start.with_timezone(&Utc)),
        (Some(start), Some(end)) => human_duration(end - start),
    };
    Value::String(written)
}

/// `printNode`'s status: Ready or NotReady (Unknown without the condition), and SchedulingDisabled.
fn node_status(v: &Value) -> Value {
    let mut status = vec![match condition(v, "Ready").and_then(|c| c.get("status")).and_then(Value::as_str) {
        Some("True") => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if v.at("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    Value::String(status.join(","))
}

/// The roles of a node: its `node-role.kubernetes.io/<role>` labels and its `kubernetes.io/role`.
fn node_roles(v: &Value) -> Value {
    let labels = v.at("/metadata/labels").and_then(Value::as_object).into_iter().flatten();
    let mut roles: Vec<&str> = labels
        .filter_map(|(k, val)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role),
            Some(_) => None,
            None => (k == "kubernetes.io/role").then(|| val.as_str().filter(|r| !r.is_empty())).flatten(),
        })
        .collect();
    roles.sort_unstable();
    roles.dedup();
    Value::String(if roles.is_empty() { "<none>".into() } else { roles.join(",") })
}

fn node_address(v: &Value, kind: &str) -> Value {
    let addresses = v.at("/status/addresses").and_then(Value::as_array).into_iter().flatten();
    let found = addresses.into_iter().find(|a| a.get("type").and_then(Value::as_str) == Some(kind));
    Value::String(found.map_or("<none>", |a| str_of(a, "address")).to_string())
}

fn event_first_seen(v: &Value) -> Value {
    match v.get("firstTimestamp") {
        Some(t) if t.is_string() => age_of(Some(t)),
        _ => age_of(v.get("eventTime").filter(|t| t.is_string())),
    }
}

fn event_last_seen(v: &Value) -> Value {
    match (v.at("/series/lastObservedTime"), v.get("lastTimestamp")) {
        (Some(t), _) if t.is_string() => age_of(Some(t)),
        (_, Some(t)) if t.is_string() => age_of(Some(t)),
        _ => event_first_seen(v),
    }
}

fn event_count(v: &Value) -> i64 {
    match (v.at("/series/count").and_then(Value::as_i64), i_at(v, "/count")) {
        (Some(n), _) => n,
        (None, 0) => 1,
        (None, n) => n,
    }
}

fn event_object(v: &Value) -> Value {
    let kind = str_of(&v["involvedObject"], "kind").to_lowercase();
    match str_of(&v["involvedObject"], "name") {
        "" => Value::String(kind),
        name => Value::String(format!("{kind}/{name}")),
    }
}

/// `formatEventSource`: the component (or reporting controller), with the host (or instance).
fn event_source(v: &Value) -> Value {
    let first = |a: &str, b: &str| {
        let a = v.at(a).and_then(Value::as_str).filter(|s| !s.is_empty());
        a.or_else(|| v.at(b).and_then(Value::as_str)).unwrap_or_default().to_string()
    };
    let (component, host) =
        (first("/source/component", "/reportingComponent"), first("/source/host", "/reportingInstance"));
    Value::String(if host.is_empty() { component } else { format!("{component}, {host}") })
}

fn component_condition(v: &Value) -> (Value, Value, Value) {
    let conditions = v.get("conditions").and_then(Value::as_array).into_iter().flatten();
    let healthy = conditions.into_iter().find(|c| c.get("type").and_then(Value::as_str) == Some("Healthy"));
    let Some(h) = healthy else {
        return (Value::String("Unknown".into()), Value::String(String::new()), Value::String(String::new()));
    };
    let status = if str_of(h, "status") == "True" { "Healthy" } else { "Unhealthy" };
    (Value::String(status.into()), Value::String(str_of(h, "message").into()), Value::String(str_of(h, "error").into()))
}

/// A ResourceQuota's `Request` or `Limit` column (`printResourceQuota`): `name: used/hard` for each
/// resource of `status.hard` in name order, those named `limits.…` in the second.
fn quota_column(v: &Value, limits: bool) -> Value {
    let hard = v.at("/status/hard").and_then(Value::as_object);
    let used = |name: &str| v.at("/status/used").and_then(|u| u.get(name)).and_then(Value::as_str).unwrap_or("0");
    let cells: Vec<String> = hard
        .into_iter()
        .flatten()
        .filter(|(name, _)| name.split_once('.').is_some_and(|(first, _)| first == "limits") == limits)
        .map(|(name, h)| format!("{name}: {}/{}", used(name), h.as_str().unwrap_or_default()))
        .collect();
    Value::String(cells.join(", "))
}

fn apiservice_service(v: &Value) -> Value {
    match v.at("/spec/service") {
        Some(s) if s.is_object() => Value::String(format!("{}/{}", str_of(s, "namespace"), str_of(s, "name"))),
        _ => Value::String("Local".into()),
    }
}

fn apiservice_available(v: &Value) -> Value {
    match condition(v, "Available") {
        Some(c) if str_of(c, "status") == "True" => Value::String("True".into()),
        Some(c) => Value::String(format!("False ({})", str_of(c, "reason"))),
        None => Value::String("Unknown".into()),
    }
}

/// `extractCSRStatus`: Denied, else Approved, else Pending; then `,Failed` and `,Issued`.
fn csr_condition(v: &Value) -> Value {
    let kinds: Vec<&str> = v
        .at("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("type").and_then(Value::as_str))
        .collect();
    let mut status = match () {
        () if kinds.contains(&"Denied") => "Denied",
        () if kinds.contains(&"Approved") => "Approved",
        () => "Pending",
    }
    .to_string();
    if kinds.contains(&"Failed") {
        status.push_str(",Failed");
    }
    if v.at("/status/certificate").and_then(Value::as_str).is_some_and(|c| !c.is_empty()) {
        status.push_str(",Issued");
    }
    Value::String(status)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cells(resource: &str, v: &Value) -> Vec<(&'static str, Value)> {
        builtin_columns(resource).into_iter().map(|c| (c.name, (c.cell)(v))).collect()
    }

    fn cell(resource: &str, column: &str, v: &Value) -> Value {
        cells(resource, v).into_iter().find(|(n, _)| *n == column).map(|(_, v)| v).unwrap_or_default()
    }

    #[test]
    fn every_kind_leads_with_its_name_but_events_which_end_with_it() {
        let names = |r: &str| builtin_columns(r).iter().map(|c| c.name).collect::<Vec<_>>();
        assert_eq!(names("services"), ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]);
        assert_eq!(
            names("events"),
            ["Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"]
        );
        let wide = |r: &str| builtin_columns(r).iter().filter(|c| c.priority == 1).map(|c| c.name).collect::<Vec<_>>();
        assert_eq!(wide("deployments"), ["Containers", "Images", "Selector"]);
        assert_eq!(wide("pods"), ["IP", "Node", "Nominated Node", "Readiness Gates"]);
        assert_eq!(names("jobs")[..5], ["Name", "Status", "Completions", "Duration", "Age"]);
    }

    #[test]
    fn a_cordoned_node_shows_scheduling_disabled() {
        let mut node = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]},
            "metadata": {"labels": {"node-role.kubernetes.io/uc": "", "kubernetes.io/role": "worker"}}});
        assert_eq!(cell("nodes", "Status", &node), json!("Ready"));
        node["spec"] = json!({"unschedulable": true});
        assert_eq!(cell("nodes", "Status", &node), json!("Ready,SchedulingDisabled"));
        assert_eq!(cell("nodes", "Roles", &node), json!("uc,worker"));
        assert_eq!(cell("nodes", "Status", &json!({})), json!("Unknown"));
    }

    #[test]
    fn jobs_show_status_completions_and_duration() {
        let job = json!({"spec": {"parallelism": 3}, "status": {"succeeded": 1, "startTime": "2026-01-01T00:00:00Z",
            "completionTime": "2026-01-01T00:02:05Z", "conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(cell("jobs", "Status", &job), json!("Complete"));
        assert_eq!(cell("jobs", "Completions", &job), json!("1/1 of 3"));
        assert_eq!(cell("jobs", "Duration", &job), json!("2m5s"));
        let suspended =
            json!({"spec": {"completions": 4}, "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
        assert_eq!(
            (cell("jobs", "Status", &suspended), cell("jobs", "Completions", &suspended)),
            (json!("Suspended"), json!("0/4"))
        );
    }

    #[test]
    fn events_name_their_object_source_and_count() {
        let ev = json!({"involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{a}"},
            "source": {"component": "kubelet", "host": "uc-node"}, "message": " Started \n", "count": 0});
        assert_eq!(cell("events", "Object", &ev), json!("pod/web-1"));
        assert_eq!(cell("events", "Source", &ev), json!("kubelet, uc-node"));
        assert_eq!(cell("events", "Message", &ev), json!("Started"));
        assert_eq!(cell("events", "Count", &ev), json!(1), "a singleton event counts once");
        let series = json!({"reportingComponent": "ctl", "series": {"count": 7}});
        assert_eq!((cell("events", "Source", &series), cell("events", "Count", &series)), (json!("ctl"), json!(7)));
    }

    #[test]
    fn claims_show_capacity_and_modes_once_bound_and_csrs_their_decision() {
        let pending = json!({"spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"]}, "status": {"phase": "Pending"}});
        assert_eq!(cell("persistentvolumeclaims", "Access Modes", &pending), json!(""));
        assert_eq!(cell("persistentvolumeclaims", "StorageClass", &pending), json!("fast"));
        let bound = json!({"spec": {"volumeName": "pv-1"}, "status": {"phase": "Bound", "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"]}});
        assert_eq!(cell("persistentvolumeclaims", "Capacity", &bound), json!("1Gi"));
        assert_eq!(cell("persistentvolumeclaims", "Access Modes", &bound), json!("RWO"));
        let csr =
            json!({"status": {"conditions": [{"type": "Approved"}, {"type": "Failed"}], "certificate": "Y2VydA=="}});
        assert_eq!(cell("certificatesigningrequests", "Condition", &csr), json!("Approved,Failed,Issued"));
        let denied = json!({"status": {"conditions": [{"type": "Approved"}, {"type": "Denied"}]}});
        assert_eq!(cell("certificatesigningrequests", "Condition", &denied), json!("Denied"));
    }
}
