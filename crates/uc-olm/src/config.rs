//! A Subscription's `spec.config`, applied to its operator's Deployments as OLM applies it
//! (operator-lifecycle-manager's `overrides`): `env` (by name, over the container's), `envFrom`,
//! `volumes` and `volumeMounts` (by name), `tolerations` (added), `resources` (replacing the
//! containers'), `nodeSelector` and `affinity` (replacing the pod's), `annotations` (merged into the
//! Deployment's and its pods'). Seed 001 §4.2 sets a proxy this way (`HTTP_PROXY` in `env`).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    Affinity, Container, EnvFromSource, EnvVar, ResourceRequirements, Toleration, Volume, VolumeMount,
};
use serde::Deserialize;
use serde_json::Value;

/// A Subscription's `spec.config` (operator-framework/api's `SubscriptionConfig`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SubscriptionConfig {
    pub env: Vec<EnvVar>,
    pub env_from: Vec<EnvFromSource>,
    pub volumes: Vec<Volume>,
    pub volume_mounts: Vec<VolumeMount>,
    pub tolerations: Vec<Toleration>,
    pub resources: Option<ResourceRequirements>,
    pub node_selector: Option<BTreeMap<String, String>>,
    pub affinity: Option<Affinity>,
    pub annotations: BTreeMap<String, String>,
}

/// A Subscription's `spec.config` that does not read as one.
#[derive(Debug, thiserror::Error)]
#[error("spec.config{at}: {message}")]
pub struct ConfigError {
    at: String,
    message: String,
}

impl SubscriptionConfig {
    /// Reads `spec.config`; an error names the field that does not read.
    pub fn from_value(config: &Value) -> Result<SubscriptionConfig, ConfigError> {
        serde_path_to_error::deserialize(config).map_err(|e| {
            let at = e.path().to_string();
            let at = if at == "." { String::new() } else { format!(".{at}") };
            ConfigError { at, message: e.inner().to_string() }
        })
    }
}

/// Applies `config` (a Subscription's `spec.config`) to one of the operator's Deployments.
pub fn apply(deployment: &mut Deployment, config: &SubscriptionConfig) {
    if !config.annotations.is_empty() {
        let add = |into: &mut Option<BTreeMap<String, String>>| {
            into.get_or_insert_with(Default::default).extend(config.annotations.clone());
        };
        add(&mut deployment.metadata.annotations);
        if let Some(spec) = deployment.spec.as_mut() {
            add(&mut spec.template.metadata.get_or_insert_with(Default::default).annotations);
        }
    }
    let Some(pod) = deployment.spec.as_mut().and_then(|s| s.template.spec.as_mut()) else { return };
    if let Some(v) = &config.node_selector {
        pod.node_selector = Some(v.clone());
    }
    if let Some(v) = &config.affinity {
        pod.affinity = Some(v.clone());
    }
    if !config.tolerations.is_empty() {
        add_missing(pod.tolerations.get_or_insert_with(Vec::new), &config.tolerations);
    }
    if !config.volumes.is_empty() {
        merge_by_name(pod.volumes.get_or_insert_with(Vec::new), &config.volumes, |v| &v.name);
    }
    for c in pod.containers.iter_mut() {
        apply_to_container(c, config, true);
    }
    for c in pod.init_containers.iter_mut().flatten() {
        apply_to_container(c, config, false);
    }
}

/// `env`, `envFrom`, `volumeMounts` and (for the operator's containers) `resources`, onto one container.
fn apply_to_container(c: &mut Container, config: &SubscriptionConfig, main: bool) {
    if !config.env.is_empty() {
        merge_by_name(c.env.get_or_insert_with(Vec::new), &config.env, |e| &e.name);
    }
    if !config.env_from.is_empty() {
        add_missing(c.env_from.get_or_insert_with(Vec::new), &config.env_from);
    }
    if !config.volume_mounts.is_empty() {
        merge_by_name(c.volume_mounts.get_or_insert_with(Vec::new), &config.volume_mounts, |m| &m.name);
    }
    if main && let Some(resources) = &config.resources {
        c.resources = Some(resources.clone());
    }
}

/// The items of `more` that `list` does not hold yet, appended.
fn add_missing<T: Clone + PartialEq>(list: &mut Vec<T>, more: &[T]) {
    for item in more {
        if !list.contains(item) {
            list.push(item.clone());
        }
    }
}

/// Items of `over` replace those of `list` with the same name; the others are appended.
fn merge_by_name<T: Clone>(list: &mut Vec<T>, over: &[T], name: impl Fn(&T) -> &String) {
    for item in over {
        match list.iter_mut().find(|x| name(x) == name(item)) {
            Some(existing) => *existing = item.clone(),
            None => list.push(item.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_subscriptions_config_reaches_the_operators_pods_as_olm_puts_it() {
        let mut d: Deployment = serde_json::from_value(json!({"metadata": {"name": "etcd-operator"}, "spec": {"template": {"metadata": {}, "spec": {
            "containers": [{"name": "op", "env": [{"name": "HTTP_PROXY", "value": "old"}, {"name": "KEEP", "value": "1"}],
                            "resources": {"limits": {"cpu": "1"}}}],
            "tolerations": [{"key": "a", "operator": "Exists"}]}}}}))
        .unwrap();
        let config = SubscriptionConfig::from_value(&json!({
            "env": [{"name": "HTTP_PROXY", "value": "http://proxy:3128"}, {"name": "NO_PROXY", "value": ".svc"}],
            "resources": {"requests": {"memory": "64Mi"}},
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}],
            "volumes": [{"name": "certs", "secret": {"secretName": "ca"}}],
            "volumeMounts": [{"name": "certs", "mountPath": "/certs"}],
            "annotations": {"team": "storage"},
        }))
        .unwrap();
        apply(&mut d, &config);
        let d = serde_json::to_value(d).unwrap();
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
        let mut again: Deployment = serde_json::from_value(d.clone()).unwrap();
        apply(&mut again, &SubscriptionConfig::default());
        assert_eq!(serde_json::to_value(again).unwrap(), d, "an empty config changes nothing");
        let bad = SubscriptionConfig::from_value(&json!({"env": [{"name": "A", "value": 3}]})).unwrap_err();
        assert!(bad.to_string().starts_with("spec.config.env[0].value: invalid type"), "{bad}");
    }
}
