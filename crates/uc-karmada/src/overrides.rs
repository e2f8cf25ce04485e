//! OverridePolicy and ClusterOverridePolicy: which rules apply to a resource in a cluster, and what each
//! overrider does to the manifest — Karmada's semantics, as pure functions.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use uc_api::meta::str_at;

use crate::schedule::{affinity_matches, selects};
use crate::types::{
    CommandArgsOverrider, ImageOverrider, LabelAnnotationOverrider, MemberCluster, OverrideSpec, Overriders,
    ResourceSelector,
};

/// Whether a resource selector takes `obj` (apiVersion, kind, and when set namespace, name, labels).
pub fn selector_matches(selector: &ResourceSelector, obj: &Value) -> bool {
    if str_at(obj, "/apiVersion") != selector.api_version || str_at(obj, "/kind") != selector.kind {
        return false;
    }
    if selector.namespace.as_deref().is_some_and(|ns| !ns.is_empty() && ns != str_at(obj, "/metadata/namespace")) {
        return false;
    }
    if selector.name.as_deref().is_some_and(|n| !n.is_empty() && n != str_at(obj, "/metadata/name")) {
        return false;
    }
    selector.label_selector.as_ref().is_none_or(|s| {
        let labels: BTreeMap<String, String> =
            serde_json::from_value(obj.pointer("/metadata/labels").cloned().unwrap_or(json!({}))).unwrap_or_default();
        selects(s, &labels)
    })
}

/// The overriders of `spec` that apply to `obj` in `cluster`, in the policy's order.
pub fn rules_for<'a>(spec: &'a OverrideSpec, obj: &Value, cluster: &MemberCluster) -> Vec<&'a Overriders> {
    let selected =
        spec.resource_selectors.is_empty() || spec.resource_selectors.iter().any(|s| selector_matches(s, obj));
    if !selected {
        return Vec::new();
    }
    let mut out: Vec<&Overriders> = spec
        .override_rules
        .iter()
        .filter(|r| affinity_matches(r.target_cluster.as_ref(), cluster))
        .map(|r| &r.overriders)
        .collect();
    if spec.override_rules.is_empty()
        && let Some(o) = &spec.overriders
        && affinity_matches(spec.target_cluster.as_ref(), cluster)
    {
        out.push(o);
    }
    out
}

/// Why an override policy's overriders could not be applied to an object.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OverrideError {
    /// A plaintext overrider is not a JSON patch that applies.
    #[error("plaintext overrider: {0}")]
    Plaintext(String),
    /// An image overrider on a kind without pods needs a predicate path.
    #[error("imageOverrider on a {kind} needs a predicate path")]
    NoPredicate { kind: String },
    /// The predicate path holds no image.
    #[error("imageOverrider: no image at {path}")]
    NoImage { path: String },
    /// An overrider's operator is not one Karmada knows.
    #[error("{overrider}Overrider: unknown operator {operator:?}")]
    UnknownOperator { overrider: String, operator: String },
    /// An image overrider's component is not Registry, Repository or Tag.
    #[error("imageOverrider: unknown component {0:?}")]
    UnknownComponent(String),
    /// A command or args overrider on a kind without containers.
    #[error("{overrider}Overrider does not apply to a {kind}")]
    NotApplicable { overrider: String, kind: String },
}

/// Applies one rule's overriders to a manifest, in Karmada's order: images, commands, args, labels,
/// annotations, then plaintext patches.
pub fn apply(obj: &mut Value, o: &Overriders) -> Result<(), OverrideError> {
    for i in &o.image_overrider {
        image(obj, i)?;
    }
    for c in &o.command_overrider {
        command_args(obj, c, "command")?;
    }
    for a in &o.args_overrider {
        command_args(obj, a, "args")?;
    }
    for l in &o.labels_overrider {
        labels_annotations(obj, l, "labels")?;
    }
    for a in &o.annotations_overrider {
        labels_annotations(obj, a, "annotations")?;
    }
    let ops: Vec<Value> = o
        .plaintext
        .iter()
        .map(|p| {
            let mut op = json!({"op": p.operator, "path": p.path});
            if p.operator != "remove" {
                op["value"] = p.value.clone().unwrap_or(Value::Null);
            }
            op
        })
        .collect();
    if !ops.is_empty() {
        let patch: json_patch::Patch =
            serde_json::from_value(Value::Array(ops)).map_err(|e| OverrideError::Plaintext(e.to_string()))?;
        json_patch::patch(obj, &patch).map_err(|e| OverrideError::Plaintext(e.to_string()))?;
    }
    Ok(())
}

/// The pod spec of a workload kind Karmada knows (Pod, and the template of the rest).
fn pod_spec_path(kind: &str) -> Option<&'static str> {
    match kind {
        "Pod" => Some("/spec"),
        "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet" | "Job" | "ReplicationController" => {
            Some("/spec/template/spec")
        }
        "CronJob" => Some("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}

fn image(obj: &mut Value, o: &ImageOverrider) -> Result<(), OverrideError> {
    let paths: Vec<String> = match &o.predicate {
        Some(p) if !p.path.is_empty() => vec![p.path.clone()],
        _ => {
            let Some(spec) = pod_spec_path(str_at(obj, "/kind")) else {
                return Err(OverrideError::NoPredicate { kind: str_at(obj, "/kind").to_string() });
            };
            let mut paths = Vec::new();
            for list in ["initContainers", "containers"] {
                let n = obj.pointer(&format!("{spec}/{list}")).and_then(Value::as_array).map_or(0, Vec::len);
                paths.extend((0..n).map(|i| format!("{spec}/{list}/{i}/image")));
            }
            paths
        }
    };
    for path in paths {
        let Some(Value::String(current)) = obj.pointer_mut(&path) else {
            return Err(OverrideError::NoImage { path });
        };
        *current = override_image(current, &o.component, &o.operator, &o.value)?;
    }
    Ok(())
}

/// An image reference with one component (Registry, Repository, Tag) added to, replaced or removed.
pub fn override_image(image: &str, component: &str, operator: &str, value: &str) -> Result<String, OverrideError> {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    let (name, mut tag) = match rest.rfind(':') {
        Some(i) if !rest[i..].contains('/') => (&rest[..i], Some(rest[i + 1..].to_string())),
        _ => (rest, None),
    };
    let (mut registry, mut repository) = match name.split_once('/') {
        Some((first, r)) if first.contains('.') || first.contains(':') || first == "localhost" => {
            (first.to_string(), r.to_string())
        }
        _ => (String::new(), name.to_string()),
    };
    let set = |field: &mut String| -> Result<(), OverrideError> {
        match operator {
            "add" => field.push_str(value),
            "replace" => *field = value.to_string(),
            "remove" => field.clear(),
            other => return Err(OverrideError::UnknownOperator { overrider: "image".into(), operator: other.into() }),
        }
        Ok(())
    };
    match component {
        "Registry" => set(&mut registry)?,
        "Repository" => set(&mut repository)?,
        "Tag" => match operator {
            "add" | "replace" => tag = Some(value.to_string()),
            "remove" => tag = None,
            other => return Err(OverrideError::UnknownOperator { overrider: "image".into(), operator: other.into() }),
        },
        other => return Err(OverrideError::UnknownComponent(other.into())),
    }
    let mut out = if registry.is_empty() { repository } else { format!("{registry}/{repository}") };
    if let Some(t) = tag {
        out = format!("{out}:{t}");
    }
    if let Some(d) = digest {
        out = format!("{out}@{d}");
    }
    Ok(out)
}

fn command_args(obj: &mut Value, o: &CommandArgsOverrider, field: &str) -> Result<(), OverrideError> {
    let kind = str_at(obj, "/kind").to_string();
    let Some(spec) = pod_spec_path(&kind) else {
        return Err(OverrideError::NotApplicable { overrider: field.into(), kind: kind.to_string() });
    };
    let Some(Value::Array(containers)) = obj.pointer_mut(&format!("{spec}/containers")) else { return Ok(()) };
    for c in containers.iter_mut().filter(|c| c.get("name").and_then(Value::as_str) == Some(&o.container_name)) {
        let mut list: Vec<String> =
            c.get(field).and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default();
        match o.operator.as_str() {
            "add" => list.extend(o.value.iter().cloned()),
            "remove" => list.retain(|a| !o.value.contains(a)),
            other => return Err(OverrideError::UnknownOperator { overrider: field.into(), operator: other.into() }),
        }
        c[field] = json!(list);
    }
    Ok(())
}

fn labels_annotations(obj: &mut Value, o: &LabelAnnotationOverrider, field: &str) -> Result<(), OverrideError> {
    if obj.pointer(&format!("/metadata/{field}")).is_none_or(|v| !v.is_object()) {
        obj["metadata"][field] = json!({});
    }
    let map = obj["metadata"][field].as_object_mut().expect("an object");
    for (k, v) in &o.value {
        match o.operator.as_str() {
            "add" => {
                map.insert(k.clone(), json!(v));
            }
            "replace" => {
                if map.contains_key(k) {
                    map.insert(k.clone(), json!(v));
                }
            }
            "remove" => {
                map.remove(k);
            }
            other => return Err(OverrideError::UnknownOperator { overrider: field.into(), operator: other.into() }),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx:1.25", "args": ["-g"]}
            ]}}}
        })
    }

    fn spec(v: Value) -> OverrideSpec {
        serde_json::from_value(v).unwrap()
    }

    fn member(name: &str) -> MemberCluster {
        MemberCluster { name: name.into(), ready: true, ..Default::default() }
    }

    #[test]
    fn karmadas_nginx_sample_overrides_per_cluster() {
        // samples/nginx/overridepolicy.yaml, as Karmada ships it.
        let policy: Value = serde_yaml_ng::from_str(include_str!("../testdata/nginx_overridepolicy.yaml")).unwrap();
        let s = spec(policy["spec"].clone());
        let mut obj = deployment();
        obj["metadata"]["annotations"] = json!({"bom": "x", "emma": "olivia"});
        for o in rules_for(&s, &obj, &member("member1")) {
            apply(&mut obj, o).unwrap();
        }
        assert_eq!(obj["metadata"]["annotations"], json!({"env": "skoala-stage", "emma": "sophia"}));
        assert_eq!(obj["metadata"]["labels"], json!({"app": "nginx"}));
        let mut obj = deployment();
        for o in rules_for(&s, &obj, &member("member2")) {
            apply(&mut obj, o).unwrap();
        }
        // `replace` changes only a label that is there.
        assert_eq!(obj["metadata"]["labels"], json!({"app": "nginx", "env": "skoala-dev", "env-stat": "skoala-stage"}));
        assert!(rules_for(&s, &deployment(), &member("member9")).is_empty());
    }

    #[test]
    fn plaintext_args_labels_and_annotations() {
        let s = spec(json!({
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
            "overrideRules": [{
                "targetCluster": {"clusterNames": ["m1"]},
                "overriders": {
                    "plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": 5}],
                    "argsOverrider": [{"containerName": "nginx", "operator": "add", "value": ["daemon off;"]}],
                    "labelsOverrider": [{"operator": "add", "value": {"cluster": "m1"}}],
                    "annotationsOverrider": [{"operator": "remove", "value": {"gone": ""}}],
                },
            }],
        }));
        let mut obj = deployment();
        obj["metadata"]["annotations"] = json!({"gone": "x", "kept": "y"});
        let rules = rules_for(&s, &obj, &member("m1"));
        assert_eq!(rules.len(), 1);
        apply(&mut obj, rules[0]).unwrap();
        assert_eq!(obj["spec"]["replicas"], 5);
        assert_eq!(obj.pointer("/spec/template/spec/containers/0/args").unwrap(), &json!(["-g", "daemon off;"]));
        assert_eq!(obj["metadata"]["labels"], json!({"app": "nginx", "cluster": "m1"}));
        assert_eq!(obj["metadata"]["annotations"], json!({"kept": "y"}));
        // Another Deployment is not selected.
        let mut other = deployment();
        other["metadata"]["name"] = json!("other");
        assert!(rules_for(&s, &other, &member("m1")).is_empty());
    }

    #[test]
    fn a_bad_plaintext_path_is_an_error_not_a_panic() {
        let s = spec(json!({"overrideRules": [{"overriders": {
            "plaintext": [{"path": "/spec/nothing/here", "operator": "replace", "value": 1}]}}]}));
        let mut obj = deployment();
        let err = apply(&mut obj, rules_for(&s, &deployment(), &member("x"))[0]).unwrap_err();
        assert!(matches!(err, OverrideError::Plaintext(_)), "{err}");
    }

    #[test]
    fn image_components() {
        assert_eq!(override_image("nginx:1.25", "Registry", "replace", "r.io").unwrap(), "r.io/nginx:1.25");
        assert_eq!(override_image("r.io/lib/nginx:1", "Registry", "add", ".cn").unwrap(), "r.io.cn/lib/nginx:1");
        assert_eq!(override_image("r.io/lib/nginx:1", "Repository", "replace", "x").unwrap(), "r.io/x:1");
        assert_eq!(override_image("localhost:5000/nginx", "Tag", "add", "2").unwrap(), "localhost:5000/nginx:2");
        assert_eq!(override_image("nginx:1@sha256:ab", "Tag", "remove", "").unwrap(), "nginx@sha256:ab");
        assert!(override_image("nginx", "Digest", "add", "x").is_err());
    }
}
