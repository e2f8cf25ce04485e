//! What the columns of built-in kinds show, read from the stored object the way kube-apiserver's
//! printers (`pkg/printers/internalversion`) read the typed one: its formats for labels, selectors,
//! containers, ports, addresses and access modes, and its `<none>`s.

use serde_json::Value;
use uc_api::Pointer;
use uc_api::selector::LabelSelector;

use super::age::age_of;

/// The condition of `kind` in the object's `status.conditions`.
pub(super) fn condition<'a>(v: &'a Value, kind: &str) -> Option<&'a Value> {
    let conditions = v.at("/status/conditions").and_then(Value::as_array)?;
    conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

/// Whether the condition of `kind` is True.
pub(super) fn condition_true(v: &Value, kind: &str) -> bool {
    condition(v, kind).and_then(|c| c.get("status")).and_then(Value::as_str) == Some("True")
}

/// The string at `p`, or `<none>`.
pub(super) fn s_at(v: &Value, p: &str) -> Value {
    v.at(p).cloned().unwrap_or(Value::String("<none>".into()))
}

/// The string at `p`, or `default` when it is missing or empty.
pub(super) fn str_or(v: &Value, p: &str, default: &str) -> Value {
    let s = v.at(p).and_then(Value::as_str).filter(|s| !s.is_empty()).unwrap_or(default);
    Value::String(s.to_string())
}

/// The integer at `p`, or 0.
pub(super) fn i_at(v: &Value, p: &str) -> i64 {
    v.at(p).and_then(Value::as_i64).unwrap_or(0)
}

/// How many entries the map or list at `p` has.
pub(super) fn count(v: &Value, p: &str) -> usize {
    v.at(p).map(|x| x.as_object().map(|m| m.len()).or(x.as_array().map(|a| a.len())).unwrap_or(0)).unwrap_or(0)
}

/// The age of the object.
pub(super) fn age(v: &Value) -> Value {
    age_of(v.at("/metadata/creationTimestamp"))
}

/// A binding's subjects of one kind, as `kubectl get rolebinding -o wide` lists them.
pub(super) fn subjects_of(v: &Value, kind: &str) -> Value {
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

/// A label map as apimachinery's `labels.FormatLabels` writes it: `k=v,...` sorted, `<none>` if empty.
pub(super) fn labels(map: Option<&Value>) -> Value {
    let pairs: Vec<String> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    Value::String(if pairs.is_empty() { "<none>".into() } else { pairs.join(",") })
}

/// A `LabelSelector` as `metav1.FormatLabelSelector` writes it (`<none>` when it selects by nothing,
/// `<error>` when it does not read).
pub(super) fn label_selector(sel: Option<&Value>) -> Value {
    let written = match sel.filter(|s| !s.is_null()).map(LabelSelector::from_value) {
        None => String::new(),
        Some(Ok(s)) => s.to_string(),
        Some(Err(_)) => "<error>".into(),
    };
    Value::String(if written.is_empty() { "<none>".into() } else { written })
}

/// The names and the images of a pod spec's containers, comma-separated (`layoutContainerCells`).
pub(super) fn containers(spec: Option<&Value>) -> (Value, Value) {
    let list = spec.and_then(|s| s.get("containers")).and_then(Value::as_array);
    let field = |k: &str| {
        let each: Vec<&str> =
            list.into_iter().flatten().map(|c| c.get(k).and_then(Value::as_str).unwrap_or_default()).collect();
        Value::String(each.join(","))
    };
    (field("name"), field("image"))
}

/// A Service's ports (`80/TCP`, `80:30080/TCP` with a node port), `<none>` without any.
pub(super) fn service_ports(v: &Value) -> Value {
    let pieces: Vec<String> = v
        .at("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let (port, protocol) = (i_at(p, "/port"), p.get("protocol").and_then(Value::as_str).unwrap_or("TCP"));
            match i_at(p, "/nodePort") {
                0 => format!("{port}/{protocol}"),
                node_port => format!("{port}:{node_port}/{protocol}"),
            }
        })
        .collect();
    Value::String(if pieces.is_empty() { "<none>".into() } else { pieces.join(",") })
}

/// A Service's external addresses by its type (`getServiceExternalIP`, as the server prints it: wide).
pub(super) fn external_ip(v: &Value) -> Value {
    let external: Vec<&str> = strings(v.at("/spec/externalIPs"));
    let ty = v.at("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
    let written = match ty {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".to_string(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let ingress = v.at("/status/loadBalancer/ingress").and_then(Value::as_array);
            let mut lb: Vec<&str> = ingress
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    let ip = i.get("ip").and_then(Value::as_str).filter(|s| !s.is_empty());
                    ip.or_else(|| i.get("hostname").and_then(Value::as_str).filter(|s| !s.is_empty()))
                })
                .collect();
            lb.sort_unstable();
            lb.dedup();
            lb.extend(external);
            if lb.is_empty() { "<pending>".to_string() } else { lb.join(",") }
        }
        "ExternalName" => v.at("/spec/externalName").and_then(Value::as_str).unwrap_or_default().to_string(),
        _ => "<unknown>".to_string(),
    };
    Value::String(written)
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect()
}

/// Up to three entries, then ` + N more...` (`listWithMoreString`); `<unset>` for none.
fn at_most_three(list: Vec<String>) -> Value {
    let written = match list.len() {
        0 => "<unset>".to_string(),
        n if n > 3 => format!("{} + {} more...", list[..3].join(","), n - 3),
        _ => list.join(","),
    };
    Value::String(written)
}

/// An Endpoints' addresses with their ports (`formatEndpoints`): at most three, then how many more.
pub(super) fn endpoints(v: &Value) -> Value {
    let subsets = v.get("subsets").and_then(Value::as_array).filter(|s| !s.is_empty());
    let Some(subsets) = subsets else { return Value::String("<none>".into()) };
    let mut list = Vec::new();
    for ss in subsets {
        let addresses: Vec<&str> = ss
            .get("addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| a.get("ip")?.as_str())
            .collect();
        let ports: Vec<i64> =
            ss.get("ports").and_then(Value::as_array).into_iter().flatten().map(|p| i_at(p, "/port")).collect();
        if ports.is_empty() {
            list.extend(addresses.iter().map(|a| a.to_string()));
        }
        for port in ports {
            list.extend(addresses.iter().map(|a| host_port(a, port)));
        }
    }
    if list.is_empty() {
        return Value::String(String::new());
    }
    at_most_three(list)
}

/// `net.JoinHostPort`: an IPv6 address in brackets.
fn host_port(host: &str, port: i64) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

/// An EndpointSlice's ports (`formatDiscoveryPorts`: the number, else the name, else `*`).
pub(super) fn slice_ports(v: &Value) -> Value {
    let ports = v.get("ports").and_then(Value::as_array).into_iter().flatten();
    at_most_three(
        ports
            .map(|p| match (p.get("port").and_then(Value::as_i64), p.get("name").and_then(Value::as_str)) {
                (Some(n), _) => n.to_string(),
                (None, Some(name)) => name.to_string(),
                (None, None) => "*".to_string(),
            })
            .collect(),
    )
}

/// An EndpointSlice's addresses (`formatDiscoveryEndpoints`).
pub(super) fn slice_endpoints(v: &Value) -> Value {
    let endpoints = v.get("endpoints").and_then(Value::as_array).into_iter().flatten();
    at_most_three(endpoints.flat_map(|e| strings(e.get("addresses"))).map(String::from).collect())
}

/// Access modes as `helper.GetAccessModesAsString` writes them: `RWO,ROX,RWX,RWOP`, in that order.
pub(super) fn access_modes(v: Option<&Value>) -> String {
    let modes = strings(v);
    let known =
        [("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP")];
    let short: Vec<&str> = known.iter().filter(|(m, _)| modes.contains(m)).map(|(_, s)| *s).collect();
    short.join(",")
}

/// A volume's or claim's class: the beta annotation, else `spec.storageClassName`.
pub(super) fn storage_class(v: &Value) -> Value {
    let beta = v.at("/metadata/annotations/volume.beta.kubernetes.io~1storage-class").and_then(Value::as_str);
    Value::String(
        beta.or_else(|| v.at("/spec/storageClassName").and_then(Value::as_str)).unwrap_or_default().to_string(),
    )
}

/// An `IntOrString` as written, `N/A` when unset (a PodDisruptionBudget's bounds).
pub(super) fn int_or_string(v: Option<&Value>) -> Value {
    Value::String(match v {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".into(),
    })
}

/// The controller of an object as `kubectl get controllerrevisions` names it (`kind.group/name`).
pub(super) fn controller_of(v: &Value) -> Value {
    let refs = v.at("/metadata/ownerReferences").and_then(Value::as_array).into_iter().flatten();
    let Some(owner) = refs.into_iter().find(|r| r.get("controller").and_then(Value::as_bool) == Some(true)) else {
        return Value::String("<none>".into());
    };
    let kind = owner.get("kind").and_then(Value::as_str).unwrap_or_default();
    let (group, _) =
        uc_api::resource::split_api_version(owner.get("apiVersion").and_then(Value::as_str).unwrap_or_default());
    let name = owner.get("name").and_then(Value::as_str).unwrap_or_default();
    let kind = if group.is_empty() { kind.to_lowercase() } else { format!("{kind}.{group}").to_lowercase() };
    Value::String(if kind.is_empty() { name.to_string() } else { format!("{kind}/{name}") })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn services_show_node_ports_and_external_addresses_by_type() {
        let svc = json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"},
                                                                {"port": 53, "protocol": "UDP"}]}});
        assert_eq!(service_ports(&svc), json!("80:30080/TCP,53/UDP"));
        assert_eq!(external_ip(&svc), json!("<none>"));
        assert_eq!(service_ports(&json!({"spec": {"clusterIP": "None"}})), json!("<none>"));
        let lb = json!({"spec": {"type": "LoadBalancer", "externalIPs": ["1.2.3.4"]},
                        "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example"}, {"ip": "5.6.7.8"}]}}});
        assert_eq!(external_ip(&lb), json!("5.6.7.8,lb.example,1.2.3.4"));
        assert_eq!(external_ip(&json!({"spec": {"type": "LoadBalancer"}})), json!("<pending>"));
        assert_eq!(
            external_ip(&json!({"spec": {"type": "ExternalName", "externalName": "db.example"}})),
            json!("db.example")
        );
    }

    #[test]
    fn endpoints_show_three_addresses_then_how_many_more() {
        let ep = json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}, {"port": 443}]}]});
        assert_eq!(endpoints(&ep), json!("10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more..."));
        assert_eq!(
            endpoints(&json!({"subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}]})),
            json!("[fd00::1]:80")
        );
        assert_eq!(endpoints(&json!({})), json!("<none>"));
        let slice =
            json!({"ports": [{"name": "http"}, {"port": 8080}, {}], "endpoints": [{"addresses": ["10.0.0.9"]}]});
        assert_eq!((slice_ports(&slice), slice_endpoints(&slice)), (json!("http,8080,*"), json!("10.0.0.9")));
        assert_eq!(slice_endpoints(&json!({})), json!("<unset>"));
    }

    #[test]
    fn labels_selectors_containers_and_modes_read_as_kubectl_writes_them() {
        assert_eq!(labels(Some(&json!({"b": "2", "a": "1"}))), json!("a=1,b=2"));
        assert_eq!(labels(None), json!("<none>"));
        let sel = json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]});
        assert_eq!(label_selector(Some(&sel)), json!("app=web,tier"));
        assert_eq!(label_selector(Some(&json!({}))), json!("<none>"));
        let bad = json!({"matchExpressions": [{"key": "k", "operator": "Near"}]});
        assert_eq!(label_selector(Some(&bad)), json!("<error>"));
        let spec = json!({"containers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "nginx:1"}]});
        assert_eq!(containers(Some(&spec)), (json!("a,b"), json!("busybox,nginx:1")));
        assert_eq!(access_modes(Some(&json!(["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"]))), "RWO,RWX");
        let owned = json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true}]}});
        assert_eq!(controller_of(&owned), json!("statefulset.apps/web"));
        assert_eq!(int_or_string(Some(&json!("50%"))), json!("50%"));
        assert_eq!(int_or_string(None), json!("N/A"));
    }
}
