//! Built-in kinds' bodies decoded as kube-apiserver decodes them — into their Go types, here
//! k8s-openapi's: a field of the wrong type is a 400 naming its path, and a field the kind does not
//! have is unknown (`fieldValidation`: refused when Strict, warned of and dropped otherwise).

use serde_json::{Map, Value};

/// Map fields whose values are quantities, and quantity fields: kube reads `cpu: 1` as `"1"`.
const QUANTITY_MAPS: &[&str] = &[
    "limits",
    "requests",
    "capacity",
    "allocatable",
    "hard",
    "used",
    "overhead",
    "max",
    "min",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
];
const QUANTITIES: &[&str] = &["sizeLimit"];
/// The served kinds whose fields of those names are quantities (elsewhere — a CRD's schema — they
/// are not); each has a type in `builtin_schemas`.
const QUANTITY_KINDS: &[&str] = &[
    "Pod",
    "ReplicationController",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Node",
];

/// What decoding a built-in object found: the paths of its unknown fields (`spec.replcas`,
/// `spec.template.spec.containers[0].comand`), or the path and words of a field that does not read.
/// None for a kind this server has no type for.
pub fn decode(group: &str, version: &str, kind: &str, obj: &Value) -> Option<Result<Vec<String>, String>> {
    let (probe, bad_quantity) = quantities_as_strings(obj.clone());
    if let Some(why) = bad_quantity.filter(|_| QUANTITY_KINDS.contains(&kind)) {
        return Some(Err(why));
    }
    let back = match crate::builtin_schemas::round_trip(group, version, kind, &probe)? {
        Ok(back) => back,
        Err((path, why)) if path.is_empty() || path == "." => return Some(Err(why)),
        Err((path, why)) => return Some(Err(format!("{path}: {why}"))),
    };
    let mut unknown = Vec::new();
    missing(&probe, &back, "", &mut unknown);
    Some(Ok(unknown))
}

/// Removes the fields at `paths` (as [`decode`] names them) from `obj`.
pub fn remove(obj: &mut Value, paths: &[String]) {
    for path in paths {
        let (parent, last) = match path.rsplit_once('.') {
            Some((p, l)) => (pointer(p), l.to_string()),
            None => (String::new(), path.clone()),
        };
        if let Some(map) = obj.pointer_mut(&parent).and_then(Value::as_object_mut) {
            map.remove(&last);
        }
    }
}

/// `spec.containers[0]` as the JSON pointer `/spec/containers/0`.
fn pointer(path: &str) -> String {
    path.split('.')
        .flat_map(|part| {
            let mut pieces = part.split('[').map(|p| p.trim_end_matches(']').replace('~', "~0").replace('/', "~1"));
            let first = pieces.next().unwrap_or_default();
            std::iter::once(first).chain(pieces).collect::<Vec<_>>()
        })
        .map(|p| format!("/{p}"))
        .collect()
}

/// The non-null fields of `sent` that `kept` lacks, by path.
fn missing(sent: &Value, kept: &Value, path: &str, out: &mut Vec<String>) {
    match (sent, kept) {
        (Value::Object(s), Value::Object(k)) => {
            for (key, v) in s {
                let here = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                match k.get(key) {
                    None if !v.is_null() => out.push(here),
                    Some(kv) => missing(v, kv, &here, out),
                    None => {}
                }
            }
        }
        (Value::Array(s), Value::Array(k)) => {
            for (i, (v, kv)) in s.iter().zip(k).enumerate() {
                missing(v, kv, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// `obj` with the numbers where kube reads quantities written as strings, and the first of those
/// strings that is not a quantity (its path and apimachinery's words).
fn quantities_as_strings(mut obj: Value) -> (Value, Option<String>) {
    let mut bad = None;
    let mut stack = vec![(String::new(), &mut obj)];
    while let Some((path, v)) = stack.pop() {
        match v {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    let here = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                    if QUANTITY_MAPS.contains(&key.as_str())
                        && let Value::Object(q) = value
                    {
                        numbers_as_strings(q);
                        for (name, v) in q.iter() {
                            bad = bad.or_else(|| not_a_quantity(&format!("{here}[{name}]"), v));
                        }
                    } else if QUANTITIES.contains(&key.as_str()) {
                        if value.is_number() {
                            *value = Value::String(value.to_string());
                        }
                        bad = bad.or_else(|| not_a_quantity(&here, value));
                    }
                    stack.push((here, value));
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut().enumerate().map(|(i, v)| (format!("{path}[{i}]"), v))),
            _ => {}
        }
    }
    (obj, bad)
}

fn not_a_quantity(path: &str, v: &Value) -> Option<String> {
    let e = uc_api::quantity::parse(v.as_str()?).err()?;
    Some(format!("{path}: {e}"))
}

fn numbers_as_strings(map: &mut Map<String, Value>) {
    for value in map.values_mut() {
        if value.is_number() {
            *value = Value::String(value.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unknown_fields_and_wrong_types_are_found_by_path() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "datas": {"k": "v"}});
        assert_eq!(decode("", "v1", "ConfigMap", &cm).unwrap().unwrap(), ["datas"]);
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replcas": 3, "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i", "comand": ["x"],
                                      "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}]}}}});
        assert_eq!(
            decode("apps", "v1", "Deployment", &deployment).unwrap().unwrap(),
            ["spec.replcas", "spec.template.spec.containers[0].comand"],
            "a number where kube reads a quantity is fine"
        );
        let array = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": ["x"]});
        let why = decode("", "v1", "ConfigMap", &array).unwrap().unwrap_err();
        assert!(why.starts_with("data: invalid type: sequence"), "{why}");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": "eighty"}]}]}});
        let why = decode("", "v1", "Pod", &pod).unwrap().unwrap_err();
        assert!(why.starts_with("spec.containers[0].ports[0].containerPort: invalid type: string"), "{why}");
        assert!(decode("example.com", "v1", "Foo", &pod).is_none());
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "lots"}}}]}});
        let why = decode("", "v1", "Pod", &pod).unwrap().unwrap_err();
        assert!(why.starts_with("spec.containers[0].resources.requests[cpu]: quantities must match"), "{why}");
        // In a CRD's schema, `limits` or `overhead` are properties, not quantities.
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"},
            "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"properties": {"overhead": {"description": "x"}}}}}]}});
        assert!(decode("apiextensions.k8s.io", "v1", "CustomResourceDefinition", &crd).unwrap().is_ok());
        let fine = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {}, "creationTimestamp": null},
            "spec": {"containers": [{"name": "c", "image": "i", "securityContext": {}}], "volumes": [{"name": "v", "emptyDir": {}}]}});
        assert_eq!(decode("", "v1", "Pod", &fine).unwrap().unwrap(), Vec::<String>::new());
    }

    #[test]
    fn unknown_fields_are_removed_by_path() {
        let mut d =
            json!({"spec": {"replcas": 3, "template": {"spec": {"containers": [{"name": "c", "comand": ["x"]}]}}}});
        remove(&mut d, &["spec.replcas".into(), "spec.template.spec.containers[0].comand".into()]);
        assert_eq!(d, json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}));
    }
}
