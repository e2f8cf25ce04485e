//! What a container's process sees of the API: its environment (`env` with `valueFrom` ConfigMap and
//! Secret keys, the downward API's fields and resources, `envFrom`) and the downward API's values, as
//! the kubelet computes them. Pure functions over the pod and the objects it names.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, ResourceFieldSelector, Secret};

use crate::pod_api::spec;

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

/// A ConfigMap's data as the kubelet reads it (`binaryData` too).
pub fn config_map_data(cm: &ConfigMap) -> BTreeMap<String, Vec<u8>> {
    let text = cm.data.iter().flatten().map(|(k, v)| (k.clone(), v.as_bytes().to_vec()));
    let binary = cm.binary_data.iter().flatten().map(|(k, v)| (k.clone(), v.0.clone()));
    text.chain(binary).collect()
}

/// A Secret's data as the kubelet reads it (decoded; `stringData` too).
pub fn secret_data(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    let data = secret.data.iter().flatten().map(|(k, v)| (k.clone(), v.0.clone()));
    let text = secret.string_data.iter().flatten().map(|(k, v)| (k.clone(), v.as_bytes().to_vec()));
    data.chain(text).collect()
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
pub fn referenced(pod: &Pod) -> BTreeMap<(Kind, String), bool> {
    let mut out: BTreeMap<(Kind, String), bool> = BTreeMap::new();
    let mut add = |kind: Kind, name: &str, optional: Option<bool>| {
        if name.is_empty() {
            return;
        }
        let e = out.entry((kind, name.to_string())).or_insert(true);
        *e &= optional.unwrap_or(false);
    };
    let spec = spec(pod);
    for c in spec.init_containers.iter().flatten().chain(&spec.containers) {
        for from in c.env.iter().flatten().filter_map(|e| e.value_from.as_ref()) {
            if let Some(r) = &from.config_map_key_ref {
                add(Kind::ConfigMap, &r.name, r.optional);
            }
            if let Some(r) = &from.secret_key_ref {
                add(Kind::Secret, &r.name, r.optional);
            }
        }
        for e in c.env_from.iter().flatten() {
            if let Some(r) = &e.config_map_ref {
                add(Kind::ConfigMap, &r.name, r.optional);
            }
            if let Some(r) = &e.secret_ref {
                add(Kind::Secret, &r.name, r.optional);
            }
        }
    }
    for v in spec.volumes.iter().flatten() {
        if let Some(r) = &v.config_map {
            add(Kind::ConfigMap, &r.name, r.optional);
        }
        if let Some(r) = &v.secret {
            add(Kind::Secret, r.secret_name.as_deref().unwrap_or_default(), r.optional);
        }
        for s in v.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
            if let Some(r) = &s.config_map {
                add(Kind::ConfigMap, &r.name, r.optional);
            }
            if let Some(r) = &s.secret {
                add(Kind::Secret, &r.name, r.optional);
            }
        }
    }
    out
}

/// `key="value"` lines of a map, sorted, as the downward API writes labels and annotations.
fn map_lines(m: Option<&BTreeMap<String, String>>) -> String {
    let lines = m.into_iter().flatten();
    let lines: Vec<String> =
        lines.map(|(k, v)| format!("{k}={}", serde_json::to_string(v).unwrap_or_default())).collect();
    lines.join("\n")
}

/// A downward API field of the pod (`metadata.name`, `metadata.labels['app']`, `status.podIP`, ...).
pub fn field(pod: &Pod, path: &str, pod_ip: &str) -> Result<String, ConfigError> {
    let meta_key = |prefix: &str| -> Option<String> {
        let rest = path.strip_prefix(prefix)?.strip_prefix("['")?.strip_suffix("']")?;
        Some(rest.to_string())
    };
    let m = &pod.metadata;
    let entry = |map: &Option<BTreeMap<String, String>>, k: &str| map.as_ref().and_then(|l| l.get(k)).cloned();
    if let Some(k) = meta_key("metadata.labels") {
        return Ok(entry(&m.labels, &k).unwrap_or_default());
    }
    if let Some(k) = meta_key("metadata.annotations") {
        return Ok(entry(&m.annotations, &k).unwrap_or_default());
    }
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    Ok(match path {
        "metadata.name" => text(&m.name),
        "metadata.namespace" => text(&m.namespace),
        "metadata.uid" => text(&m.uid),
        "metadata.labels" => map_lines(m.labels.as_ref()),
        "metadata.annotations" => map_lines(m.annotations.as_ref()),
        "spec.nodeName" => text(&spec(pod).node_name),
        "spec.serviceAccountName" => match spec(pod).service_account_name.as_deref() {
            None | Some("") => "default".into(),
            Some(n) => n.into(),
        },
        "status.podIP" | "status.podIPs" => pod_ip.into(),
        "status.hostIP" | "status.hostIPs" => "127.0.0.1".into(),
        other => return Err(ConfigError::FieldPath(other.to_string())),
    })
}

/// A downward API resource of a container (`limits.cpu`, `requests.memory`, ...), in units of
/// `divisor` (default 1), rounded up; a limit that is not set is the node's allocatable amount.
pub fn resource(container: Option<&Container>, reference: &ResourceFieldSelector) -> Result<String, ConfigError> {
    let name = reference.resource.as_str();
    let unsupported = || ConfigError::Resource(name.to_string());
    let (kind, res) = name.split_once('.').ok_or_else(unsupported)?;
    if !matches!(kind, "limits" | "requests") || !matches!(res, "cpu" | "memory" | "ephemeral-storage") {
        return Err(unsupported());
    }
    let resources = container.and_then(|c| c.resources.as_ref());
    let amounts = resources.and_then(|r| if kind == "limits" { r.limits.as_ref() } else { r.requests.as_ref() });
    let set = amounts.and_then(|a| a.get(res)).and_then(|q| uc_api::quantity::parse(&q.0).ok());
    let node = match res {
        "cpu" => f64::from(crate::machine::node().cpus),
        _ => crate::machine::node().allocatable_bytes(),
    };
    let value = match (kind, set) {
        (_, Some(v)) => v,
        ("limits", None) => node,
        _ => 0.0,
    };
    let divisor =
        reference.divisor.as_ref().and_then(|d| uc_api::quantity::parse(&d.0).ok()).filter(|d| *d > 0.0).unwrap_or(1.0);
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
    pod: &Pod,
    container: &Container,
    pod_ip: &str,
    base: &[(String, String)],
    sources: &dyn Sources,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut env: Vec<(String, String)> = base.to_vec();
    for e in container.env_from.iter().flatten() {
        let prefix = e.prefix.as_deref().unwrap_or_default();
        let (kind, name, optional) = match (&e.config_map_ref, &e.secret_ref) {
            (Some(r), _) => (Kind::ConfigMap, &r.name, r.optional),
            (None, Some(r)) => (Kind::Secret, &r.name, r.optional),
            _ => continue,
        };
        match sources.data(kind, name) {
            Some(data) => {
                for (k, v) in data {
                    env.push((format!("{prefix}{k}"), String::from_utf8_lossy(&v).into_owned()));
                }
            }
            None if optional.unwrap_or(false) => {}
            None => return Err(missing(kind, name)),
        }
    }
    for e in container.env.iter().flatten() {
        let value = match (&e.value, &e.value_from) {
            (Some(v), _) => expand(v, &env),
            (None, Some(from)) => match value_from(pod, container, pod_ip, from, sources)? {
                Some(v) => v,
                None => continue,
            },
            (None, None) => String::new(),
        };
        env.push((e.name.clone(), value));
    }
    Ok(env)
}

/// An `env` entry's `valueFrom`; None for an optional key that is missing (the variable is left out).
fn value_from(
    pod: &Pod,
    container: &Container,
    pod_ip: &str,
    from: &k8s_openapi::api::core::v1::EnvVarSource,
    sources: &dyn Sources,
) -> Result<Option<String>, ConfigError> {
    if let Some(f) = &from.field_ref {
        return field(pod, &f.field_path, pod_ip).map(Some);
    }
    if let Some(r) = &from.resource_field_ref {
        return resource(Some(container), r).map(Some);
    }
    let key_ref = match (&from.config_map_key_ref, &from.secret_key_ref) {
        (Some(r), _) => (Kind::ConfigMap, &r.name, &r.key, r.optional),
        (None, Some(r)) => (Kind::Secret, &r.name, &r.key, r.optional),
        _ => return Ok(Some(String::new())),
    };
    let (kind, obj, key, optional) = key_ref;
    match sources.data(kind, obj).map(|d| d.get(key).cloned()) {
        Some(Some(v)) => Ok(Some(String::from_utf8_lossy(&v).into_owned())),
        _ if optional.unwrap_or(false) => Ok(None),
        Some(None) => Err(ConfigError::MissingKey {
            kind,
            key: key.clone(),
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: obj.clone(),
        }),
        None => Err(missing(kind, obj)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    fn container(mut c: Value) -> Container {
        c["name"] = json!("c");
        typed(c)
    }

    fn sources() -> BTreeMap<(Kind, String), BTreeMap<String, Vec<u8>>> {
        let mut m = BTreeMap::new();
        m.insert(
            (Kind::ConfigMap, "cfg".into()),
            config_map_data(&typed(json!({"data": {"MODE": "fast", "URL": "x"}}))),
        );
        m.insert((Kind::Secret, "pw".into()), secret_data(&typed(json!({"data": {"password": "czNjcjN0"}}))));
        m
    }

    fn pod() -> Pod {
        typed(json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"b": "2", "a": "1"}},
               "spec": {"nodeName": "uc-node", "containers": []}}))
    }

    #[test]
    fn env_from_objects_fields_and_resources() {
        let c = container(json!({
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
        }));
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
        let c = |r: Value| container(json!({"env": [{"name": "X", "valueFrom": r}]}));
        let err =
            container_env(&pod(), &c(json!({"configMapKeyRef": {"name": "gone", "key": "k"}})), "", &[], &sources());
        assert_eq!(err.unwrap_err().to_string(), "configmap \"gone\" not found");
        let err =
            container_env(&pod(), &c(json!({"secretKeyRef": {"name": "pw", "key": "user"}})), "", &[], &sources());
        assert_eq!(err.unwrap_err().to_string(), "couldn't find key user in secret ns/pw");
        let err = container_env(
            &pod(),
            &container(json!({"envFrom": [{"secretRef": {"name": "nope"}}]})),
            "",
            &[],
            &sources(),
        );
        assert_eq!(err.unwrap_err().to_string(), "secret \"nope\" not found");
    }

    #[test]
    fn downward_api_fields() {
        let p = pod();
        assert_eq!(field(&p, "metadata.labels", "").unwrap(), "a=\"1\"\nb=\"2\"");
        assert_eq!(field(&p, "status.podIP", "127.1.0.5").unwrap(), "127.1.0.5");
        assert_eq!(field(&p, "spec.serviceAccountName", "").unwrap(), "default");
        assert_eq!(field(&p, "spec.bogus", ""), Err(ConfigError::FieldPath("spec.bogus".into())));
        assert_eq!(resource(None, &typed(json!({"resource": "limits.cpu", "divisor": "1m"}))).unwrap(), "2000");
        assert_eq!(
            resource(
                Some(&container(json!({"resources": {"requests": {"cpu": "250m"}}}))),
                &typed(json!({"resource": "requests.cpu"}))
            )
            .unwrap(),
            "1"
        );
    }

    #[test]
    fn references_are_collected_with_optionality() {
        let p: Pod = typed(json!({"spec": {
            "containers": [{"name": "c", "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c1", "key": "k", "optional": true}}}],
                            "envFrom": [{"secretRef": {"name": "s1"}}]}],
            "volumes": [{"name": "v", "configMap": {"name": "c1"}},
                        {"name": "w", "projected": {"sources": [{"secret": {"name": "s2", "optional": true}}]}}]}}));
        let r = referenced(&p);
        assert!(!r[&(Kind::ConfigMap, "c1".into())], "optional in one place, required in another");
        assert!(!r[&(Kind::Secret, "s1".into())]);
        assert!(r[&(Kind::Secret, "s2".into())]);
    }
}
