//! NodePorts of Services, as kube-apiserver allocates them from its node port range (30000-32767):
//! every port of a `NodePort` or `LoadBalancer` Service gets one, or keeps the one it names if that is
//! in the range and free. An update that leaves a port's node port out keeps the old one (matched by
//! port and protocol); a Service whose type no longer has node ports loses those it had, and may not
//! name new ones.

use std::collections::HashSet;
use std::ops::RangeInclusive;

use serde_json::{Value, json};
use uc_api::Pointer;

use crate::error::FieldError;

/// kube-apiserver's default `--service-node-port-range`.
pub const RANGE: RangeInclusive<u16> = 30000..=32767;

/// Whether a Service has node ports (type `NodePort` or `LoadBalancer`).
pub fn wants(svc: &Value) -> bool {
    matches!(svc.at("/spec/type").and_then(Value::as_str), Some("NodePort" | "LoadBalancer"))
}

/// The node ports of `services` but the one keyed `except`.
pub fn in_use<'a>(services: impl IntoIterator<Item = (&'a str, &'a Value)>, except: &str) -> HashSet<u16> {
    services
        .into_iter()
        .filter(|(k, _)| *k != except)
        .flat_map(|(_, s)| ports(s).into_iter().filter_map(|p| node_port(&p)))
        .collect()
}

fn ports(svc: &Value) -> Vec<Value> {
    svc.at("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default()
}

fn node_port(port: &Value) -> Option<u16> {
    port.get("nodePort").and_then(Value::as_u64).and_then(|n| u16::try_from(n).ok()).filter(|n| *n > 0)
}

/// Which port of another list is the same Service port: the same number and protocol.
fn same_port(a: &Value, b: &Value) -> bool {
    let protocol = |p: &Value| p.get("protocol").and_then(Value::as_str).unwrap_or("TCP").to_string();
    a.get("port") == b.get("port") && protocol(a) == protocol(b)
}

/// Gives a Service's ports their node ports (`old` is the stored Service on update).
pub fn assign(svc: &mut Value, old: Option<&Value>, in_use: &HashSet<u16>, seed: u64) -> Result<(), FieldError> {
    let old_ports = old.map(ports).unwrap_or_default();
    let wanted = wants(svc);
    let ty = svc.at("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP").to_string();
    let Some(list) = svc.pointer_mut("/spec/ports").and_then(Value::as_array_mut) else { return Ok(()) };
    let mut taken: HashSet<u16> = in_use.clone();
    let span = u32::from(RANGE.end() - RANGE.start()) + 1;
    // Where the search for a free port starts (offset in the range); it goes on from the last found.
    let mut start = (seed % u64::from(span)) as u32;
    for (i, port) in list.iter_mut().enumerate() {
        let field = format!("spec.ports[{i}].nodePort");
        let previous = old_ports.iter().find(|o| same_port(o, port)).and_then(node_port);
        let Some(fields) = port.as_object_mut() else { continue };
        let asked = fields.get("nodePort").and_then(Value::as_u64).filter(|n| *n > 0);
        if !wanted {
            match asked {
                // The type changed: what the Service had goes with it.
                Some(n) if previous.map(u64::from) == Some(n) => {
                    fields.remove("nodePort");
                }
                Some(_) => return Err(FieldError::forbidden(field, format!("may not be used when `type` is '{ty}'"))),
                None => {}
            }
            continue;
        }
        let chosen = match asked {
            Some(n) => {
                let n = u16::try_from(n).ok().filter(|n| RANGE.contains(n)).ok_or_else(|| {
                    let range = format!("{}-{}", RANGE.start(), RANGE.end());
                    let detail =
                        format!("provided port is not in the valid range. The range of valid ports is {range}");
                    FieldError::invalid(&field, &json!(n), detail)
                })?;
                if taken.contains(&n) && previous != Some(n) {
                    return Err(FieldError::invalid(field, &json!(n), "provided port is already allocated"));
                }
                n
            }
            None => match previous {
                Some(n) => n,
                None => {
                    let at = |k: u32| RANGE.start() + ((start + k) % span) as u16;
                    let n = (0..span).map(at).find(|n| !taken.contains(n)).ok_or_else(|| {
                        FieldError::invalid(&field, &json!(0), "failed to allocate a node port: the range is full")
                    })?;
                    start = u32::from(n - RANGE.start());
                    n
                }
            },
        };
        taken.insert(chosen);
        fields.insert("nodePort".into(), json!(chosen));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(ty: &str, ports: Value) -> Value {
        json!({"metadata": {"name": "s"}, "spec": {"type": ty, "ports": ports}})
    }

    #[test]
    fn node_port_services_get_free_ports_of_the_range() {
        let mut s = svc("NodePort", json!([{"port": 80}, {"port": 443}]));
        let used = HashSet::from([30005]);
        assign(&mut s, None, &used, 5).unwrap();
        assert_eq!(s["spec"]["ports"][0]["nodePort"], 30006, "the seed's place, past one in use");
        assert_eq!(s["spec"]["ports"][1]["nodePort"], 30007, "not the one its other port took");
        let mut clusterip = svc("ClusterIP", json!([{"port": 80}]));
        assign(&mut clusterip, None, &used, 0).unwrap();
        assert!(clusterip["spec"]["ports"][0].get("nodePort").is_none());
        let mut wrapped = svc("LoadBalancer", json!([{"port": 80}]));
        assign(&mut wrapped, None, &HashSet::from([32767]), 2767).unwrap();
        assert_eq!(wrapped["spec"]["ports"][0]["nodePort"], 30000, "the search wraps around");
    }

    #[test]
    fn asked_ports_are_checked_as_kube_checks_them() {
        let used = HashSet::from([30080]);
        let mut taken = svc("NodePort", json!([{"port": 80, "nodePort": 30080}]));
        let e = assign(&mut taken, None, &used, 0).unwrap_err();
        assert_eq!(e.to_string(), "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated");
        let mut out = svc("NodePort", json!([{"port": 80, "nodePort": 8080}]));
        let e = assign(&mut out, None, &used, 0).unwrap_err();
        assert!(e.body().contains("The range of valid ports is 30000-32767"), "{}", e.body());
        let mut on_clusterip = svc("ClusterIP", json!([{"port": 80, "nodePort": 30001}]));
        let e = assign(&mut on_clusterip, None, &used, 0).unwrap_err();
        assert!(e.body().contains("may not be used when `type` is 'ClusterIP'"), "{}", e.body());
    }

    #[test]
    fn an_update_keeps_the_ports_it_leaves_out_and_a_type_change_drops_them() {
        let old = svc("NodePort", json!([{"port": 80, "nodePort": 31000}]));
        let mut new = svc("NodePort", json!([{"port": 80}, {"port": 81}]));
        // Its own port is not someone else's.
        assign(&mut new, Some(&old), &HashSet::new(), 0).unwrap();
        assert_eq!(new["spec"]["ports"][0]["nodePort"], 31000);
        assert_eq!(new["spec"]["ports"][1]["nodePort"], 30000);
        let mut again = svc("NodePort", json!([{"port": 80, "nodePort": 31000}]));
        assign(&mut again, Some(&old), &HashSet::new(), 0).unwrap();
        let mut clusterip = svc("ClusterIP", json!([{"port": 80, "nodePort": 31000}]));
        assign(&mut clusterip, Some(&old), &HashSet::new(), 0).unwrap();
        assert!(clusterip["spec"]["ports"][0].get("nodePort").is_none(), "what a kubectl apply carried over goes");
        let stored = [("ns/a", &old)];
        assert_eq!(in_use(stored, "ns/b"), HashSet::from([31000]));
        assert!(in_use(stored, "ns/a").is_empty());
    }
}
