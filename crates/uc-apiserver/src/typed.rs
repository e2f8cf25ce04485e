//! Built-in kinds' bodies decoded as kube-apiserver decodes them — into their Go types, here
//! k8s-openapi's: a field of the wrong type is a 400 naming its path, a field the kind does not
//! have is unknown (`fieldValidation`: refused when Strict, warned of and dropped otherwise), and a
//! scalar field the Go type always writes (no `omitempty`: a DaemonSet status's `numberReady`, a
//! ReplicationController status's `replicas`) is written with its zero value when absent, as kube
//! does, so typed clients that require it decode the object.

use serde_json::{Map, Value};

pub(crate) mod against;
mod path;

use path::{Step, dotted, is_zero, json_pointer};

/// What reading a body as its type gives: the zero scalars to fill in (the body has nothing the type
/// does not), or the type written back, to compare with the body ([`against`]).
enum Read {
    Zeros(Vec<(String, Value)>),
    Back(Value),
}

/// Reads the typed form against the body it came from.
struct Against<'a>(&'a Value);

impl crate::builtin_schemas::WithTyped for Against<'_> {
    type Out = Read;
    fn with<T: serde::Serialize>(self, typed: &T) -> Result<Read, (String, String)> {
        match against::zeros(typed, self.0) {
            Some(zeros) => Ok(Read::Zeros(zeros)),
            None => serde_json::to_value(typed).map(Read::Back).map_err(|e| (String::new(), e.to_string())),
        }
    }
}

/// Why an object does not read as its built-in kind (the field and what is wrong).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

impl From<String> for DecodeError {
    fn from(message: String) -> Self {
        DecodeError(message)
    }
}

impl From<&str> for DecodeError {
    fn from(message: &str) -> Self {
        DecodeError(message.to_string())
    }
}

impl From<DecodeError> for String {
    fn from(e: DecodeError) -> String {
        e.0
    }
}

/// Map fields whose values are quantities (kube reads `cpu: 1` as `"1"`): a `match`, as every key of
/// every built-in write is asked.
fn is_quantity_map(key: &str) -> bool {
    matches!(
        key,
        "limits"
            | "requests"
            | "capacity"
            | "allocatable"
            | "hard"
            | "used"
            | "overhead"
            | "max"
            | "min"
            | "default"
            | "defaultRequest"
            | "maxLimitRequestRatio"
    )
}

/// Fields that are quantities.
fn is_quantity(key: &str) -> bool {
    matches!(key, "sizeLimit" | "averageValue")
}
/// The served kinds whose fields of those names are quantities (elsewhere — a CRD's schema — they
/// are not); each has a type in `builtin_schemas`.
const QUANTITY_KINDS: &[&str] = &[
    "Pod",
    "HorizontalPodAutoscaler",
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

/// What decoding a built-in object found.
#[derive(Debug, Default, PartialEq)]
pub struct Decoded {
    /// The paths of its unknown fields (`spec.replcas`, `spec.template.spec.containers[0].comand`).
    pub unknown: Vec<String>,
    /// The scalar fields its type always writes that it lacks, as JSON pointers with their zero
    /// values (`/status/numberReady`, `0`).
    pub zeros: Vec<(String, Value)>,
}

/// What decoding a built-in object found ([`Decoded`]), or the path and words of a field that does not
/// read. None for a kind this server has no type for.
///
/// Every write of a built-in kind comes here (a tenth of the API server's work in the 100,000-parent run,
/// issue 58), so the object is read in place: copied only when a quantity must be rewritten, and a
/// path written out only for what is reported.
pub fn decode(group: &str, version: &str, kind: &str, obj: &Value) -> Option<Result<Decoded, DecodeError>> {
    let mut rewrite = false;
    if let Some(why) = check_quantities(obj, &mut Vec::new(), &mut rewrite) {
        if QUANTITY_KINDS.contains(&kind) {
            return Some(Err(why.into()));
        }
        // Not a quantity in this kind; the scan stopped there, so numbers after it are rewritten too.
        rewrite = true;
    }
    let rewritten;
    let probe = if rewrite {
        rewritten = quantities_as_strings(obj.clone());
        &rewritten
    } else {
        obj
    };
    let read = match crate::builtin_schemas::read_typed(group, version, kind, probe, Against(probe))? {
        Ok(read) => read,
        Err((path, why)) if path.is_empty() || path == "." => return Some(Err(why.into())),
        Err((path, why)) => return Some(Err(DecodeError::from(format!("{path}: {why}")))),
    };
    let mut decoded = Decoded::default();
    match read {
        Read::Zeros(zeros) => decoded.zeros = zeros,
        Read::Back(back) => compare(probe, &back, &mut Vec::new(), &mut decoded),
    }
    // Go's status is a struct, never absent: its always-written fields appear from the first write.
    if probe.get("status").is_none() {
        decoded.zeros.extend(fresh_zeros(group, version, kind).iter().cloned());
    }
    Some(Ok(decoded))
}

/// The status fields a built-in kind always writes, as [`Decoded::zeros`] of an empty status: worked
/// out once per kind.
fn fresh_zeros(group: &str, version: &str, kind: &str) -> std::sync::Arc<Vec<(String, Value)>> {
    type Known = std::collections::HashMap<(String, String, String), std::sync::Arc<Vec<(String, Value)>>>;
    static KNOWN: std::sync::LazyLock<parking_lot::Mutex<Known>> = std::sync::LazyLock::new(Default::default);
    let id = (group.to_string(), version.to_string(), kind.to_string());
    if let Some(zeros) = KNOWN.lock().get(&id) {
        return zeros.clone();
    }
    let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    let empty = serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": {}, "status": {}});
    let zeros = match decode(group, version, kind, &empty) {
        Some(Ok(decoded)) => decoded.zeros.into_iter().filter(|(p, _)| p.starts_with("/status/")).collect(),
        _ => Vec::new(),
    };
    KNOWN.lock().entry(id).or_insert_with(|| std::sync::Arc::new(zeros)).clone()
}

/// The status a new object of a built-in kind starts with: the fields its Go type always writes, at
/// their zero values (`{}` for most kinds).
pub fn fresh_status(group: &str, version: &str, kind: &str) -> Value {
    let mut fresh = serde_json::json!({"status": {}});
    fill(&mut fresh, &fresh_zeros(group, version, kind));
    fresh.get_mut("status").map(Value::take).unwrap_or_else(|| Value::Object(Map::new()))
}

/// What the typed round trip changed: the non-null fields of `sent` that `kept` lacks (unknown), and
/// the zero-valued scalars (`0`, `false`, `""`) `kept` has where `sent` has nothing — the fields the Go
/// type writes without `omitempty`. Objects and lists a type fills in (`{}`, `[]`) are not taken: kube
/// writes those as `null` or leaves them out.
fn compare<'a>(sent: &'a Value, kept: &'a Value, path: &mut Vec<Step<'a>>, out: &mut Decoded) {
    match (sent, kept) {
        (Value::Object(s), Value::Object(k)) => {
            // Both maps iterate in key order (serde_json's `Map` is sorted): walked side by side.
            let mut kept = k.iter().peekable();
            for (key, v) in s {
                while let Some((only_kept, kv)) = kept.next_if(|(kk, _)| kk.as_str() < key.as_str()) {
                    zero(only_kept, kv, path, out);
                }
                path.push(Step::Member(key));
                match kept.next_if(|(kk, _)| *kk == key) {
                    Some((_, kv)) => compare(v, kv, path, out),
                    None if !v.is_null() => out.unknown.push(dotted(path)),
                    None => {}
                }
                path.pop();
            }
            for (only_kept, kv) in kept {
                zero(only_kept, kv, path, out);
            }
        }
        (Value::Array(s), Value::Array(k)) => {
            for (i, (v, kv)) in s.iter().zip(k).enumerate() {
                path.push(Step::Item(i));
                compare(v, kv, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// A field the typed form has and the body lacks: one of [`Decoded::zeros`] if it is a zero scalar.
fn zero<'a>(key: &'a str, kept: &Value, path: &mut Vec<Step<'a>>, out: &mut Decoded) {
    if is_zero(kept) {
        path.push(Step::Member(key));
        out.zeros.push((json_pointer(path), kept.clone()));
        path.pop();
    }
}

/// Sets each of `zeros` ([`Decoded::zeros`]) in `obj` where its parent exists (a missing `status` is
/// made).
pub fn fill(obj: &mut Value, zeros: &[(String, Value)]) {
    for (path, zero) in zeros {
        let Some((parent, last)) = path.rsplit_once('/') else { continue };
        if parent == "/status"
            && let Some(o) = obj.as_object_mut()
        {
            o.entry("status").or_insert_with(|| Value::Object(Map::new()));
        }
        if let Some(map) = obj.pointer_mut(parent).and_then(Value::as_object_mut) {
            let key = last.replace("~1", "/").replace("~0", "~");
            map.entry(key).or_insert_with(|| zero.clone());
        }
    }
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

/// The first quantity of `obj` (a member of the maps [`is_quantity_map`] names, or a [`is_quantity`]
/// field) that is not one: its path and apimachinery's words. `rewrite` is set if one is a number (kube
/// reads `cpu: 1` as `"1"`).
fn check_quantities<'a>(obj: &'a Value, path: &mut Vec<Step<'a>>, rewrite: &mut bool) -> Option<String> {
    match obj {
        Value::Object(map) => {
            for (key, value) in map {
                path.push(Step::Member(key));
                let bad = if is_quantity_map(key)
                    && let Value::Object(q) = value
                {
                    q.iter().find_map(|(name, v)| {
                        *rewrite |= v.is_number();
                        not_a_quantity(v).map(|e| format!("{}[{name}]: {e}", dotted(path)))
                    })
                } else if is_quantity(key) {
                    *rewrite |= value.is_number();
                    not_a_quantity(value).map(|e| format!("{}: {e}", dotted(path)))
                } else {
                    None
                };
                let bad = bad.or_else(|| check_quantities(value, path, rewrite));
                path.pop();
                if bad.is_some() {
                    return bad;
                }
            }
            None
        }
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
            path.push(Step::Item(i));
            let bad = check_quantities(v, path, rewrite);
            path.pop();
            bad
        }),
        _ => None,
    }
}

/// `obj` with its quantities written as numbers rewritten as strings.
fn quantities_as_strings(mut obj: Value) -> Value {
    let mut stack = vec![&mut obj];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    if is_quantity_map(key)
                        && let Value::Object(q) = value
                    {
                        numbers_as_strings(q);
                    } else if is_quantity(key) && value.is_number() {
                        *value = Value::String(value.to_string());
                    }
                    stack.push(value);
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
    obj
}

/// What is wrong with a quantity written as a string (a number is one).
fn not_a_quantity(v: &Value) -> Option<String> {
    uc_api::quantity::parse(v.as_str()?).err().map(|e| e.to_string())
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
        assert_eq!(decode("", "v1", "ConfigMap", &cm).unwrap().unwrap().unknown, ["datas"]);
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replcas": 3, "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i", "comand": ["x"],
                                      "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}]}}}});
        assert_eq!(
            decode("apps", "v1", "Deployment", &deployment).unwrap().unwrap().unknown,
            ["spec.replcas", "spec.template.spec.containers[0].comand"],
            "a number where kube reads a quantity is fine"
        );
        let array = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": ["x"]});
        let why = decode("", "v1", "ConfigMap", &array).unwrap().unwrap_err();
        assert!(why.0.starts_with("data: invalid type: sequence"), "{why}");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": "eighty"}]}]}});
        let why = decode("", "v1", "Pod", &pod).unwrap().unwrap_err();
        assert!(why.0.starts_with("spec.containers[0].ports[0].containerPort: invalid type: string"), "{why}");
        assert!(decode("example.com", "v1", "Foo", &pod).is_none());
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "lots"}}}]}});
        let why = decode("", "v1", "Pod", &pod).unwrap().unwrap_err();
        assert!(why.0.starts_with("spec.containers[0].resources.requests[cpu]: quantities must match"), "{why}");
        // In a CRD's schema, `limits` or `overhead` are properties, not quantities.
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"},
            "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"properties": {"overhead": {"description": "x"}}}}}]}});
        assert!(decode("apiextensions.k8s.io", "v1", "CustomResourceDefinition", &crd).unwrap().is_ok());
        let fine = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {}, "creationTimestamp": null},
            "spec": {"containers": [{"name": "c", "image": "i", "securityContext": {}}], "volumes": [{"name": "v", "emptyDir": {}}]}});
        assert_eq!(decode("", "v1", "Pod", &fine).unwrap().unwrap(), Decoded::default());
    }

    #[test]
    fn fields_go_always_writes_get_their_zero_values() {
        let mut ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}}},
            "status": {"observedGeneration": 1}});
        let decoded = decode("apps", "v1", "DaemonSet", &ds).unwrap().unwrap();
        let paths: Vec<&str> = decoded.zeros.iter().map(|(p, _)| p.as_str()).collect();
        for p in [
            "/status/currentNumberScheduled",
            "/status/desiredNumberScheduled",
            "/status/numberMisscheduled",
            "/status/numberReady",
        ] {
            assert!(paths.contains(&p), "{p} in {paths:?}");
        }
        assert!(paths.iter().all(|p| p.starts_with("/status/")), "nothing in the spec is zero-filled: {paths:?}");
        fill(&mut ds, &decoded.zeros);
        assert_eq!(ds["status"]["numberReady"], 0);
        assert_eq!(ds["status"]["observedGeneration"], 1, "what was sent stays");
        let rc = json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "r"}, "status": {}});
        let decoded = decode("", "v1", "ReplicationController", &rc).unwrap().unwrap();
        assert_eq!(decoded.zeros, [("/status/replicas".to_string(), json!(0))]);
        // Created without a status, it has one with the fields Go always writes, as kube answers.
        let mut without_status =
            json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "r"}});
        let decoded = decode("", "v1", "ReplicationController", &without_status).unwrap().unwrap();
        assert_eq!(decoded, Decoded { unknown: vec![], zeros: vec![("/status/replicas".into(), json!(0))] });
        fill(&mut without_status, &decoded.zeros);
        assert_eq!(without_status["status"], json!({"replicas": 0}));
        assert_eq!(
            fresh_status("apps", "v1", "DaemonSet"),
            json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0})
        );
        assert_eq!(fresh_status("apps", "v1", "Deployment"), json!({}));
        assert_eq!(fresh_status("example.com", "v1", "Foo"), json!({}));
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(decode("", "v1", "ConfigMap", &cm).unwrap().unwrap(), Decoded::default(), "a kind without a status");
    }

    #[test]
    fn json_maps_iterate_in_key_order_as_compare_walks_them() {
        let m: Map<String, Value> = serde_json::from_str(r#"{"b": 1, "a": 2, "C": 3, "aa": 4}"#).unwrap();
        assert_eq!(m.keys().collect::<Vec<_>>(), ["C", "a", "aa", "b"], "serde_json's preserve_order is off");
        let mut out = Decoded::default();
        let sent = json!({"b": 1, "d": 2, "z": null});
        let kept = json!({"a": 0, "b": 1, "c": "", "e": false, "f": 1});
        compare(&sent, &kept, &mut Vec::new(), &mut out);
        assert_eq!(out.unknown, ["d"]);
        let zeros: Vec<&str> = out.zeros.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(zeros, ["/a", "/c", "/e"]);
    }

    #[test]
    fn unknown_fields_are_removed_by_path() {
        let mut d =
            json!({"spec": {"replcas": 3, "template": {"spec": {"containers": [{"name": "c", "comand": ["x"]}]}}}});
        remove(&mut d, &["spec.replcas".into(), "spec.template.spec.containers[0].comand".into()]);
        assert_eq!(d, json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}));
    }
}
