//! What a container's process sees of the API: its environment (`env` with `valueFrom` ConfigMap and
//! Secret keys, the downward API's fields and resources, `envFrom`) and the downward API's values, as
//! the kubelet computes them. Pure functions over the pod and the objects it names.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::Value;

/// The kinds a pod may take values from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A ConfigMap.
    ConfigMap,
    /// A Secret.
    Secret,
}

impl Kind {
    /// The lowercase name kube's messages use.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::ConfigMap => "configmap",
            Kind::Secret => "secret",
        }
    }
}

/// Why a container's configuration (its environment, its volumes' files and mounts) cannot be made:
/// the kubelet's CreateContainerConfigError and failed-mount messages, word for word.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("{} \"{name}\" not found", kind.noun())]
    NotFound { kind: Kind, name: String },
    #[error("couldn't find key {key} in {} {namespace}/{name}", kind.noun())]
    MissingKey { kind: Kind, key: String, namespace: String, name: String },
    #[error("configmap references non-existent config key: {key} ({} {namespace}/{name})", kind.noun())]
    MissingItem { kind: Kind, key: String, namespace: String, name: String },
    #[error("unsupported fieldRef fieldPath {0:?}")]
    FieldPath(String),
    #[error("unsupported resource {0:?}")]
    Resource(String),
    #[error("path {0:?} must be relative and may not contain '..'")]
    Path(String),
    #[error("volumeMounts[{index}].subPath: {sub_path:?} must be a relative path inside the volume")]
    SubPath { index: usize, sub_path: String },
    #[error("volume {0:?} is not written by the node")]
    NotWritten(String),
    #[error("no service account token is available")]
    NoToken,
}

/// The keys and values of a ConfigMap or Secret (Secret values decoded; ConfigMap `binaryData`
/// decoded too). None: the object does not exist.
pub type Data = Option<BTreeMap<String, Vec<u8>>>;

/// The data of an object as the kubelet reads it.
pub fn data_of(kind: Kind, obj: &Value) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let b64 = |v: &Value| v.as_str().and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok());
    match kind {
        Kind::ConfigMap => {
            for (k, v) in obj.get("data").and_then(Value::as_object).into_iter().flatten() {
                out.insert(k.clone(), v.as_str().unwrap_or_default().as_bytes().to_vec());
            }
            for (k, v) in obj.get("binaryData").and_then(Value::as_object).into_iter().flatten() {
                out.insert(k.clone(), b64(v).unwrap_or_default());
            }
        }
        Kind::Secret => {
            for (k, v) in obj.get("data").and_then(Value::as_object).into_iter().flatten() {
                out.insert(k.clone(), b64(v).unwrap_or_default());
            }
            for (k, v) in obj.get("stringData").and_then(Value::as_object).into_iter().flatten() {
                out.insert(k.clone(), v.as_str().unwrap_or_default().as_bytes().to_vec());
            }
        }
    }
    out
}

/// Where a container's values come from: the objects it names, already read.
pub trait Sources {
    /// The data of a ConfigMap or Secret in the pod's namespace (None: it does not exist).
    fn data(&self, kind: Kind, name: &str) -> Data;
}

impl Sources for BTreeMap<(Kind, String), BTreeMap<String, Vec<u8>>> {
    fn data(&self, kind: Kind, name: &str) -> Data {
        self.get(&(kind, name.to_string())).cloned()
    }
}

/// The ConfigMaps and Secrets a pod names (in env, envFrom and volumes), with whether each is
/// optional everywhere it is named.
pub fn referenced(pod: &Value) -> BTreeMap<(Kind, String), bool> {
    let mut out: BTreeMap<(Kind, String), bool> = BTreeMap::new();
    let mut add = |kind: Kind, name: Option<&str>, optional: Option<&Value>| {
        let Some(name) = name.filter(|n| !n.is_empty()) else { return };
        let optional = optional.and_then(Value::as_bool).unwrap_or(false);
        let e = out.entry((kind, name.to_string())).or_insert(true);
        *e &= optional;
    };
    for list in ["initContainers", "containers"] {
        for c in pod.pointer(&format!("/spec/{list}")).and_then(Value::as_array).into_iter().flatten() {
            for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
                if let Some(r) = e.pointer("/valueFrom/configMapKeyRef") {
                    add(Kind::ConfigMap, r.get("name").and_then(Value::as_str), r.get("optional"));
                }
                if let Some(r) = e.pointer("/valueFrom/secretKeyRef") {
                    add(Kind::Secret, r.get("name").and_then(Value::as_str), r.get("optional"));
                }
            }
            for e in c.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
                if let Some(r) = e.get("configMapRef") {
                    add(Kind::ConfigMap, r.get("name").and_then(Value::as_str), r.get("optional"));
                }
                if let Some(r) = e.get("secretRef") {
                    add(Kind::Secret, r.get("name").and_then(Value::as_str), r.get("optional"));
                }
            }
        }
    }
    for v in pod.pointer("/spec/volumes").and_then(Value::as_array).into_iter().flatten() {
        if let Some(r) = v.get("configMap") {
            add(Kind::ConfigMap, r.get("name").and_then(Value::as_str), r.get("optional"));
        }
        if let Some(r) = v.get("secret") {
            add(Kind::Secret, r.get("secretName").and_then(Value::as_str), r.get("optional"));
        }
        for s in v.pointer("/projected/sources").and_then(Value::as_array).into_iter().flatten() {
            if let Some(r) = s.get("configMap") {
                add(Kind::ConfigMap, r.get("name").and_then(Value::as_str), r.get("optional"));
            }
            if let Some(r) = s.get("secret") {
                add(Kind::Secret, r.get("name").and_then(Value::as_str), r.get("optional"));
            }
        }
    }
    out
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or_default()
}

/// `key="value"` lines of a map, sorted, as the downward API writes labels and annotations.
fn map_lines(m: Option<&Value>) -> String {
    let mut lines: Vec<String> = m
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", serde_json::to_string(v.as_str().unwrap_or_default()).unwrap_or_default()))
        .collect();
    lines.sort();
    lines.join("\n")
}

/// A downward API field of the pod (`metadata.name`, `metadata.labels['app']`, `status.podIP`, ...).
pub fn field(pod: &Value, path: &str, pod_ip: &str) -> Result<String, ConfigError> {
    let meta_key = |prefix: &str| -> Option<String> {
        let rest = path.strip_prefix(prefix)?.strip_prefix("['")?.strip_suffix("']")?;
        Some(rest.to_string())
    };
    if let Some(k) = meta_key("metadata.labels") {
        return Ok(pod
            .pointer("/metadata/labels")
            .and_then(|l| l.get(&k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into());
    }
    if let Some(k) = meta_key("metadata.annotations") {
        return Ok(pod
            .pointer("/metadata/annotations")
            .and_then(|l| l.get(&k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .into());
    }
    Ok(match path {
        "metadata.name" => s(pod, "/metadata/name").into(),
        "metadata.namespace" => s(pod, "/metadata/namespace").into(),
        "metadata.uid" => s(pod, "/metadata/uid").into(),
        "metadata.labels" => map_lines(pod.pointer("/metadata/labels")),
        "metadata.annotations" => map_lines(pod.pointer("/metadata/annotations")),
        "spec.nodeName" => s(pod, "/spec/nodeName").into(),
        "spec.serviceAccountName" => match s(pod, "/spec/serviceAccountName") {
            "" => "default".into(),
            n => n.into(),
        },
        "status.podIP" | "status.podIPs" => pod_ip.into(),
        "status.hostIP" | "status.hostIPs" => "127.0.0.1".into(),
        other => return Err(ConfigError::FieldPath(other.to_string())),
    })
}

/// Millicores or bytes of a quantity (`500m`, `2`, `64Mi`, `1G`), rounded up.
fn quantity(q: &str) -> Option<f64> {
    let q = q.trim();
    let suffixes: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("Ti", 1024f64.powi(4)),
        ("Pi", 1024f64.powi(5)),
        ("Ei", 1024f64.powi(6)),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    for (suf, mul) in suffixes {
        if let Some(n) = q.strip_suffix(suf) {
            return n.parse::<f64>().ok().map(|n| n * mul);
        }
    }
    q.parse().ok()
}

/// A downward API resource of a container (`limits.cpu`, `requests.memory`, ...), in units of
/// `divisor` (default 1), rounded up; a limit that is not set is the node's allocatable amount.
pub fn resource(container: &Value, reference: &Value) -> Result<String, ConfigError> {
    let name = s(reference, "/resource");
    let unsupported = || ConfigError::Resource(name.to_string());
    let (kind, res) = name.split_once('.').ok_or_else(unsupported)?;
    if !matches!(kind, "limits" | "requests") || !matches!(res, "cpu" | "memory" | "ephemeral-storage") {
        return Err(unsupported());
    }
    let set = container.pointer(&format!("/resources/{kind}/{res}")).and_then(|v| match v {
        Value::String(s) => quantity(s),
        Value::Number(n) => n.as_f64(),
        _ => None,
    });
    let node = match res {
        "cpu" => 2.0,
        _ => 24.0 * 1024f64.powi(3),
    };
    let value = match (kind, set) {
        (_, Some(v)) => v,
        ("limits", None) => node,
        _ => 0.0,
    };
    let divisor = match reference.get("divisor") {
        Some(Value::String(d)) => quantity(d).filter(|d| *d > 0.0).unwrap_or(1.0),
        Some(Value::Number(n)) => n.as_f64().filter(|d| *d > 0.0).unwrap_or(1.0),
        _ => 1.0,
    };
    Ok(format!("{}", (value / divisor - 1e-9).ceil().max(0.0) as u64))
}

/// Expands `$(VAR)` references as kube does in env values, command and args: a defined variable is
/// replaced, `$$` is a literal `$`, anything else stays as written.
pub fn expand(input: &str, env: &[(String, String)]) -> String {
    let lookup = |name: &str| env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(body) = after.strip_prefix('(')
            && let Some(end) = body.find(')')
            && let Some(v) = lookup(&body[..end])
        {
            out.push_str(v);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn missing(kind: Kind, name: &str) -> ConfigError {
    ConfigError::NotFound { kind, name: name.to_string() }
}

/// A container's environment: `base` (what every container gets), then `envFrom`, then `env`, each
/// value expanded against what comes before it. Fails like the kubelet's CreateContainerConfigError
/// when a non-optional ConfigMap, Secret or key is missing.
pub fn container_env(
    pod: &Value,
    container: &Value,
    pod_ip: &str,
    base: &[(String, String)],
    sources: &dyn Sources,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut env: Vec<(String, String)> = base.to_vec();
    for e in container.get("envFrom").and_then(Value::as_array).into_iter().flatten() {
        let prefix = s(e, "/prefix");
        let (kind, r) = match (e.get("configMapRef"), e.get("secretRef")) {
            (Some(r), _) => (Kind::ConfigMap, r),
            (None, Some(r)) => (Kind::Secret, r),
            _ => continue,
        };
        let name = s(r, "/name");
        match sources.data(kind, name) {
            Some(data) => {
                for (k, v) in data {
                    env.push((format!("{prefix}{k}"), String::from_utf8_lossy(&v).into_owned()));
                }
            }
            None if r.get("optional").and_then(Value::as_bool).unwrap_or(false) => {}
            None => return Err(missing(kind, name)),
        }
    }
    for e in container.get("env").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = e.get("name").and_then(Value::as_str) else { continue };
        let value = if let Some(v) = e.get("value").and_then(Value::as_str) {
            expand(v, &env)
        } else if let Some(path) = e.pointer("/valueFrom/fieldRef/fieldPath").and_then(Value::as_str) {
            field(pod, path, pod_ip)?
        } else if let Some(r) = e.pointer("/valueFrom/resourceFieldRef") {
            resource(container, r)?
        } else if let Some((kind, r)) = e
            .pointer("/valueFrom/configMapKeyRef")
            .map(|r| (Kind::ConfigMap, r))
            .or_else(|| e.pointer("/valueFrom/secretKeyRef").map(|r| (Kind::Secret, r)))
        {
            let (obj, key) = (s(r, "/name"), s(r, "/key"));
            let optional = r.get("optional").and_then(Value::as_bool).unwrap_or(false);
            match sources.data(kind, obj).map(|d| d.get(key).cloned()) {
                Some(Some(v)) => String::from_utf8_lossy(&v).into_owned(),
                _ if optional => continue,
                Some(None) => {
                    return Err(ConfigError::MissingKey {
                        kind,
                        key: key.to_string(),
                        namespace: s(pod, "/metadata/namespace").to_string(),
                        name: obj.to_string(),
                    });
                }
                None => return Err(missing(kind, obj)),
            }
        } else {
            String::new()
        };
        env.push((name.to_string(), value));
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sources() -> BTreeMap<(Kind, String), BTreeMap<String, Vec<u8>>> {
        let mut m = BTreeMap::new();
        m.insert(
            (Kind::ConfigMap, "cfg".into()),
            data_of(Kind::ConfigMap, &json!({"data": {"MODE": "fast", "URL": "x"}})),
        );
        m.insert((Kind::Secret, "pw".into()), data_of(Kind::Secret, &json!({"data": {"password": "czNjcjN0"}})));
        m
    }

    fn pod() -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"b": "2", "a": "1"}},
               "spec": {"nodeName": "uc-node"}})
    }

    #[test]
    fn env_from_objects_fields_and_resources() {
        let c = json!({
            "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
            "env": [
                {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "pw", "key": "password"}}},
                {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['a']"}}},
                {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                {"name": "GREETING", "value": "$(NAME) in $(CFG_MODE) mode, $$(NAME), $(UNSET)"},
                {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "none", "key": "k", "optional": true}}}
            ],
            "resources": {"limits": {"memory": "64Mi"}}
        });
        let env = container_env(&pod(), &c, "127.1.0.5", &[("BASE".into(), "b".into())], &sources()).unwrap();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("BASE"), Some("b"));
        assert_eq!(get("CFG_MODE"), Some("fast"));
        assert_eq!(get("PASSWORD"), Some("s3cr3t"));
        assert_eq!(get("NAME"), Some("p"));
        assert_eq!(get("APP"), Some("1"));
        assert_eq!(get("MEM"), Some("64"));
        assert_eq!(get("GREETING"), Some("p in fast mode, $(NAME), $(UNSET)"));
        assert_eq!(get("OPT"), None, "an optional missing key is left out");
    }

    #[test]
    fn missing_objects_and_keys_are_errors_like_the_kubelets() {
        let c = |r: Value| json!({"env": [{"name": "X", "valueFrom": r}]});
        let err =
            container_env(&pod(), &c(json!({"configMapKeyRef": {"name": "gone", "key": "k"}})), "", &[], &sources());
        assert_eq!(err.unwrap_err().to_string(), "configmap \"gone\" not found");
        let err =
            container_env(&pod(), &c(json!({"secretKeyRef": {"name": "pw", "key": "user"}})), "", &[], &sources());
        assert_eq!(err.unwrap_err().to_string(), "couldn't find key user in secret ns/pw");
        let err = container_env(&pod(), &json!({"envFrom": [{"secretRef": {"name": "nope"}}]}), "", &[], &sources());
        assert_eq!(err.unwrap_err().to_string(), "secret \"nope\" not found");
    }

    #[test]
    fn downward_api_fields() {
        let p = pod();
        assert_eq!(field(&p, "metadata.labels", "").unwrap(), "a=\"1\"\nb=\"2\"");
        assert_eq!(field(&p, "status.podIP", "127.1.0.5").unwrap(), "127.1.0.5");
        assert_eq!(field(&p, "spec.serviceAccountName", "").unwrap(), "default");
        assert_eq!(field(&p, "spec.bogus", ""), Err(ConfigError::FieldPath("spec.bogus".into())));
        assert_eq!(resource(&json!({}), &json!({"resource": "limits.cpu", "divisor": "1m"})).unwrap(), "2000");
        assert_eq!(
            resource(&json!({"resources": {"requests": {"cpu": "250m"}}}), &json!({"resource": "requests.cpu"}))
                .unwrap(),
            "1"
        );
    }

    #[test]
    fn references_are_collected_with_optionality() {
        let p = json!({"spec": {
            "containers": [{"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c1", "key": "k", "optional": true}}}],
                            "envFrom": [{"secretRef": {"name": "s1"}}]}],
            "volumes": [{"name": "v", "configMap": {"name": "c1"}},
                        {"name": "w", "projected": {"sources": [{"secret": {"name": "s2", "optional": true}}]}}]}});
        let r = referenced(&p);
        assert!(!r[&(Kind::ConfigMap, "c1".into())], "optional in one place, required in another");
        assert!(!r[&(Kind::Secret, "s1".into())]);
        assert!(r[&(Kind::Secret, "s2".into())]);
    }
}
