//! A Subscription's `spec.config`, applied to its operator's Deployments as OLM applies it
//! (operator-lifecycle-manager's `overrides`): `env` (by name, over the container's), `envFrom`,
//! `volumes` and `volumeMounts` (by name), `tolerations` (added), `resources` (replacing the
//! containers'), `nodeSelector` and `affinity` (replacing the pod's), `annotations` (merged into the
//! Deployment's and its pods'). Seed 001 §4.2 sets a proxy this way (`HTTP_PROXY` in `env`).

use serde_json::{Map, Value, json};

/// Applies `config` (a Subscription's `spec.config`) to one of the operator's Deployments.
pub fn apply(deployment: &mut Value, config: &Value) {
    let Some(config) = config.as_object().filter(|c| !c.is_empty()) else { return };
    if let Some(Value::Object(annotations)) = config.get("annotations") {
        for path in ["/metadata", "/spec/template/metadata"] {
            if let Some(meta) = deployment.pointer_mut(path).and_then(Value::as_object_mut) {
                let into = meta.entry("annotations").or_insert_with(|| json!({}));
                if let Value::Object(into) = into {
                    into.extend(annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
            }
        }
    }
    let Some(pod) = deployment.pointer_mut("/spec/template/spec").and_then(Value::as_object_mut) else { return };
    for key in ["nodeSelector", "affinity"] {
        if let Some(v) = config.get(key).filter(|v| !v.is_null()) {
            pod.insert(key.into(), v.clone());
        }
    }
    if let Some(Value::Array(tolerations)) = config.get("tolerations") {
        let list = pod.entry("tolerations").or_insert_with(|| json!([]));
        if let Value::Array(list) = list {
            for t in tolerations {
                if !list.contains(t) {
                    list.push(t.clone());
                }
            }
        }
    }
    if let Some(Value::Array(volumes)) = config.get("volumes") {
        merge_by_name(pod.entry("volumes").or_insert_with(|| json!([])), volumes);
    }
    for list in ["containers", "initContainers"] {
        let Some(Value::Array(containers)) = pod.get_mut(list) else { continue };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            apply_to_container(c, config, list == "containers");
        }
    }
}

/// `env`, `envFrom`, `volumeMounts` and (for the operator's containers) `resources`, onto one container.
fn apply_to_container(c: &mut Map<String, Value>, config: &Map<String, Value>, main: bool) {
    if let Some(Value::Array(env)) = config.get("env") {
        merge_by_name(c.entry("env").or_insert_with(|| json!([])), env);
    }
    if let Some(Value::Array(from)) = config.get("envFrom")
        && let Value::Array(list) = c.entry("envFrom").or_insert_with(|| json!([]))
    {
        list.extend(from.iter().filter(|f| !list.contains(f)).cloned().collect::<Vec<_>>());
    }
    if let Some(Value::Array(mounts)) = config.get("volumeMounts") {
        merge_by_name(c.entry("volumeMounts").or_insert_with(|| json!([])), mounts);
    }
    if main && let Some(resources) = config.get("resources").filter(|r| !r.is_null()) {
        c.insert("resources".into(), resources.clone());
    }
}

/// Items of `over` replace those of `list` with the same `name`; the others are appended.
fn merge_by_name(list: &mut Value, over: &[Value]) {
    let Value::Array(list) = list else { return };
    for item in over {
        let name = item.get("name");
        match list.iter_mut().find(|x| x.get("name") == name) {
            Some(existing) => *existing = item.clone(),
            None => list.push(item.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriptions_config_reaches_the_operators_pods_as_olm_puts_it() {
        let mut d = json!({"metadata": {"name": "etcd-operator"}, "spec": {"template": {"metadata": {}, "spec": {
            "containers": [{"name": "op", "env": [{"name": "HTTP_PROXY", "value": "old"}, {"name": "KEEP", "value": "1"}],
                            "resources": {"limits": {"cpu": "1"}}}],
            "tolerations": [{"key": "a", "operator": "Exists"}]}}}});
        let config = json!({
            "env": [{"name": "HTTP_PROXY", "value": "http://proxy:3128"}, {"name": "NO_PROXY", "value": ".svc"}],
            "resources": {"requests": {"memory": "64Mi"}},
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}],
            "volumes": [{"name": "certs", "secret": {"secretName": "ca"}}],
            "volumeMounts": [{"name": "certs", "mountPath": "/certs"}],
            "annotations": {"team": "storage"},
        });
        apply(&mut d, &config);
        let pod = &d["spec"]["template"]["spec"];
        let env = &pod["containers"][0]["env"];
        assert_eq!(
            env,
            &json!([{"name": "HTTP_PROXY", "value": "http://proxy:3128"}, {"name": "KEEP", "value": "1"},
                                {"name": "NO_PROXY", "value": ".svc"}]),
            "by name, over the container's"
        );
        assert_eq!(pod["containers"][0]["resources"], json!({"requests": {"memory": "64Mi"}}), "replaced");
        assert_eq!(pod["nodeSelector"], json!({"disk": "ssd"}));
        assert_eq!(pod["tolerations"].as_array().unwrap().len(), 2, "added, not repeated");
        assert_eq!(pod["volumes"][0]["name"], "certs");
        assert_eq!(pod["containers"][0]["volumeMounts"][0]["mountPath"], "/certs");
        assert_eq!(d["metadata"]["annotations"]["team"], "storage");
        assert_eq!(d["spec"]["template"]["metadata"]["annotations"]["team"], "storage");
        let before = d.clone();
        apply(&mut d, &json!({}));
        assert_eq!(d, before, "an empty config changes nothing");
    }
}
